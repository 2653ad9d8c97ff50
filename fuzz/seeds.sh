#!/usr/bin/env bash
# Writes the seed corpus of one fuzz target into a folder: the real kube-scheduler v1.28 traffic
# and the upstream golden bodies in data/kube-extender/, the shipped alloxd configs, the
# planner's example files and the first jobs of the AlloX paper's trace, and every
# input saved under fuzz/regressions/<target>/ (crashes found before, kept so they stay fixed).
#   fuzz/seeds.sh fuzz_wire|fuzz_pod|fuzz_node|fuzz_routes|fuzz_config|fuzz_admission|
#                 fuzz_workload|fuzz_cluster|fuzz_trace|fuzz_validate OUT_DIR
set -euo pipefail
target=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/data/kube-extender
mkdir -p "$out"

# Every JSON body in data/kube-extender (not the recorded headers). Few forks: the machine this
# runs on is often loaded, and ctest replays these seeds in every test run.
mapfile -t bodies < <(find "$data" -name '*.json' ! -name '*.meta.json' | sort)

case $target in
  fuzz_wire | fuzz_pod)
    cp -r "$data" "$out/kube-extender"  # libFuzzer and replay_main read folders recursively
    i=0
    while IFS= read -r line; do
      i=$((i + 1))
      printf '%s' "$line" >"$out/upstream-golden-$i.json"
    done <"$data/upstream_golden_types_test.jsonl"
    if [[ $target == fuzz_pod ]]; then
      # Pods stating where they may go, as tenants write them: tolerations, a nodeSelector,
      # required node affinity with every operator and matchFields, and alloxd's own pin.
      pod() {
        printf '{"metadata":{"name":"%s","namespace":"team-a","annotations":{"allox.io/job":"train"}},"spec":{"schedulerName":"allox-scheduler","containers":[{"name":"m","resources":{"requests":{"nvidia.com/gpu":"1","cpu":"4"}}}],%s}}' "$1" "$2" >"$out/pod-$1.json"
      }
      pod tolerations '"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"operator":"Exists"}]'
      pod selector '"nodeSelector":{"kubernetes.io/os":"linux","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB"}'
      pod affinity '"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["us-east1-b","us-east1-c"]},{"key":"cloud.google.com/gke-spot","operator":"DoesNotExist"}]},{"matchExpressions":[{"key":"gpus","operator":"Gt","values":["3"]},{"key":"gen","operator":"Lt","values":["5"]},{"key":"pool","operator":"NotIn","values":["cpu"]},{"key":"team","operator":"Exists"}],"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["node-a"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}}]}},"tolerations":[{"key":"dedicated","operator":"Exists"}]'
      pod pinned '"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-1"]}]}]}}},"nodeSelector":{"pool":"gpu"}'
      pod named '"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-1","gpu-2"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["gpu-3"]}]}]}}}'
      printf '{"Pod":%s,"NodeNames":["gpu-1","node-a"]}' "$(<"$out/pod-affinity.json")" >"$out/filter-pod-affinity.json"
    fi
    ;;
  fuzz_node)
    # Nodes as the API server's watch holds them (data/kube-extender/real-v1.28's bodies of
    # nodeCacheCapable: false carry whole v1.Nodes too): a GPU node labelled by GPU feature
    # discovery and tainted for GPUs, a dedicated node, a cordoned one, one not ready, a cloud
    # node not yet initialised; a watch event and a NodeList.
    cp -r "$data" "$out/kube-extender"
    node() {
      printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":%s},"spec":%s,"status":{"allocatable":%s}}' "$@" >"$out/node-$1.json"
    }
    node gpu-1 '{"kubernetes.io/hostname":"gpu-1","kubernetes.io/os":"linux","nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB","nvidia.com/gpu.count":"8","topology.kubernetes.io/zone":"us-east1-b"}' \
      '{"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]}' '{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8","pods":"110"}'
    node team-a-1 '{"dedicated":"team-a","kubernetes.io/os":"linux"}' \
      '{"taints":[{"key":"dedicated","value":"team-a","effect":"NoSchedule"},{"key":"spot","effect":"PreferNoSchedule"}]}' '{"cpu":"64","nvidia.com/gpu":"4"}'
    node cordoned '{"kubernetes.io/os":"linux"}' \
      '{"unschedulable":true,"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule","timeAdded":"2024-05-01T10:00:00Z"}]}' '{"cpu":"32","nvidia.com/gpu":"2"}'
    node not-ready '{"kubernetes.io/os":"linux"}' \
      '{"taints":[{"key":"node.kubernetes.io/not-ready","effect":"NoExecute","timeAdded":"2024-05-01T10:00:00Z"},{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}' '{"cpu":"32"}'
    node gke-t4 '{"cloud.google.com/gke-accelerator":"nvidia-tesla-t4","cloud.google.com/gke-nodepool":"t4-pool"}' \
      '{"providerID":"gce://p/us-east1-b/gke-t4","taints":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"}]}' '{"cpu":"15890m","nvidia.com/gpu":"1","google.com/tpu":"0"}'
    printf '{"type":"MODIFIED","object":%s}' "$(<"$out/node-gpu-1.json")" >"$out/watch-modified.json"
    printf '{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[%s,%s]}' \
      "$(<"$out/node-team-a-1.json")" "$(<"$out/node-cordoned.json")" >"$out/node-list.json"
    ;;
  fuzz_routes)
    for file in "${bodies[@]}"; do
      name=${file##*/}
      case $name in
        *.reply.json | *_result*.json) continue ;;
        *-filter.json | filter_args*) verbs=(filter prioritize) ;;
        *-prioritize.json) verbs=(prioritize) ;;
        *-bind.json | bind_args*) verbs=(bind) ;;
        *-preempt.json | preempt_args*) verbs=(preempt) ;;
        *) continue ;;
      esac
      body=$(<"$file")
      rel=${file#"$data"/}
      for verb in "${verbs[@]}"; do
        printf 'POST /%s\n%s' "$verb" "$body" >"$out/$verb-${rel//\//_}"
      done
    done
    for request in "GET /healthz" "GET /readyz" "GET /metrics" "GET /" "GET /v1/queue" \
      "GET /v1/fairness" "GET /v1/jobs/default/g1" "POST /v1/jobs/default/g1/done"; do
      name=${request// /_}
      printf '%s\n' "$request" >"$out/${name//\//_}"
    done
    printf 'POST /v1/profiles\n%s' \
      '[{"job":"default/g1","device":"gpu","iterations":20,"seconds":13.5,"kind":"profile"}]' \
      >"$out/POST_v1_profiles"
    ;;
  fuzz_admission)
    # AdmissionReview v1 bodies as the API server sends them: a pod of allox's scheduler (with
    # and without gates), another scheduler's pod, an UPDATE, and another kind.
    pod='{"metadata":{"name":"bert-gpu","namespace":"lab"},"spec":{"schedulerName":"allox-scheduler","containers":[{"name":"m"}]}}'
    gated='{"metadata":{"name":"bert-cpu","namespace":"lab"},"spec":{"schedulerName":"allox-scheduler","schedulingGates":[{"name":"other.io/gate"}],"containers":[{"name":"m"}]}}'
    other='{"metadata":{"name":"web","namespace":"lab"},"spec":{"schedulerName":"default-scheduler","containers":[{"name":"m"}]}}'
    review() {
      printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"","version":"v1","kind":"%s"},"operation":"%s","object":%s}}' "$@"
    }
    review 705ab4f5-6393-11e8-b7cc-42010a800002 Pod CREATE "$pod" >"$out/create-allox-pod.json"
    review 705ab4f5-6393-11e8-b7cc-42010a800003 Pod CREATE "$gated" >"$out/create-gated-pod.json"
    review 705ab4f5-6393-11e8-b7cc-42010a800004 Pod CREATE "$other" >"$out/create-other-pod.json"
    review 705ab4f5-6393-11e8-b7cc-42010a800005 Pod UPDATE "$pod" >"$out/update-pod.json"
    review 705ab4f5-6393-11e8-b7cc-42010a800006 Service CREATE '{"metadata":{"name":"s"}}' >"$out/create-service.json"
    ;;
  fuzz_config)
    cp "$root/examples/alloxd.yaml" "$out/examples-alloxd.yaml"
    cp "$root/manifests/alloxd.yaml" "$out/manifests-alloxd.yaml"
    ;;
  fuzz_workload)
    for file in "$root"/examples/jobs.yaml "$root"/examples/jobs.json "$root"/examples/gpu/jobs.yaml; do
      rel=${file#"$root"/}
      cp "$file" "$out/${rel//\//_}"
    done
    ;;
  fuzz_cluster)
    for file in "$root"/examples/cluster.yaml "$root"/examples/cluster.json \
      "$root"/examples/gpu/cluster.yaml; do
      rel=${file#"$root"/}
      cp "$file" "$out/${rel//\//_}"
    done
    ;;
  fuzz_trace)
    # The first byte picks the reader (fuzz_trace.cc): y YAML, c CSV, a the AlloX paper's format.
    { printf y; cat "$root/examples/trace.yaml"; } >"$out/trace.yaml"
    { printf y; cat "$root/examples/jobs.json"; } >"$out/jobs.json"
    { printf c; cat "$root/examples/trace.csv"; } >"$out/trace.csv"
    { printf a; head -n 40 "$root/data/allox-google/jobs_input_10_Google.txt"; } >"$out/allox-google-10.txt"
    { printf a; head -n 40 "$root/data/allox-google/experiment_large_23p.txt"; } >"$out/allox-large-10.txt"
    ;;
  fuzz_validate)
    # Two bytes first (fuzz_validate.cc): the file's name (y .yaml, t .txt, c .csv, p none) and
    # --kind (C, J, T, A, - none). Every example under the name it has, and some without one.
    seed() { { printf '%s' "$1"; cat "$2"; } >"$out/$3"; }
    seed y- "$root/examples/cluster.yaml" cluster.yaml
    seed p- "$root/examples/jobs.json" jobs-pipe.json
    seed yJ "$root/examples/jobs.yaml" jobs-forced.yaml
    seed p- "$root/examples/trace.yaml" trace-pipe.yaml
    seed c- "$root/examples/trace.csv" trace.csv
    seed pT "$root/examples/trace.csv" trace-csv-pipe
    seed y- "$root/examples/alloxd.yaml" alloxd.yaml
    { printf 'p-'; head -n 40 "$root/data/allox-google/jobs_input_10_Google.txt"; } >"$out/allox-pipe.txt"
    printf 'y-users: [{name: a, weight: 2}]\n' >"$out/users.yaml"
    ;;
  *)
    echo "unknown fuzz target: $target" >&2
    exit 2
    ;;
esac
if [[ -d $root/fuzz/regressions/$target ]]; then
  for file in "$root/fuzz/regressions/$target"/*; do
    [[ -f $file ]] && cp "$file" "$out/regression-${file##*/}"
  done
fi
echo "$target: seeds in $out" >&2
