#!/usr/bin/env bash
# The main job (./dev run): a fake cluster on this machine, sped up. `kubesim replay` starts a fake
# Kubernetes API server holding the example nodes, launches alloxd (embedded SQLite store,
# examples/alloxd.yaml) against it, and plays kube-scheduler v1.28 with the shipped
# KubeSchedulerConfiguration (manifests/scheduler-config.yaml) over the paper's 40-job, 4-user
# cluster experiment: each job arrives as a GPU pod and a CPU pod, fake kubelets run bound pods.
#   ALLOX_DEMO_SPEEDUP  simulated seconds per second (default 100: about a minute)
#   ALLOX_DEMO_LISTEN   alloxd's address (default 127.0.0.1:8888; port 0 picks a free one)
#   ALLOX_DEMO_STATE    folder for the store and the log (default run/)
#   ALLOX_DEMO_GATES    1 (default): pods are created with the allox.io/queue scheduling gate and
#                       alloxd releases them (as the webhook does in a cluster); 0: ungated pods,
#                       released by nudges
#   ALLOX_DEMO_ARGS     more `kubesim replay` flags (--verbose, --no-report-done)
set -euo pipefail
build_dir=${1:-build}
speedup=${ALLOX_DEMO_SPEEDUP:-100}
listen=${ALLOX_DEMO_LISTEN:-127.0.0.1:8888}
state_dir=${ALLOX_DEMO_STATE:-run}
linger=()
gates=()
[[ ${ALLOX_DEMO_GATES:-1} == 1 ]] && gates=(--gates)
# Interactive: keep alloxd and the fake cluster up after the replay, for the status page.
if [[ -t 0 ]]; then
  linger=(--linger)
else
  echo "demo: no terminal on standard input, so alloxd and the fake cluster stop when the replay" \
    "ends: the addresses it prints close with it (run ./dev run from a terminal to keep them up" \
    "until Ctrl-C)" >&2
fi
# shellcheck disable=SC2086
exec "$build_dir/cli/kubesim" replay --config examples/alloxd.yaml \
  --scheduler-config manifests/scheduler-config.yaml --alloxd "$build_dir/cli/alloxd" \
  --listen "$listen" --state "$state_dir" --speedup "$speedup" "${gates[@]}" "${linger[@]}" ${ALLOX_DEMO_ARGS:-}
