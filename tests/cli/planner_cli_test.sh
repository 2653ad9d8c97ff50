#!/usr/bin/env bash
# allox simulate, plan and report at the edge: each bad numeric option is refused with exit
# status non-zero and a message naming the option; plan refuses a device no job can use; the
# comparison table lines up; CSV numbers carry no binary noise; the progress line says which run
# of how many and how long is left.
set -u
allox=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
count=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

trace=$root/examples/trace.csv
cluster=$root/examples/cluster.yaml
jobs=$root/examples/jobs.yaml

# refused OPTION ARGS...: the command exits non-zero and stderr names OPTION.
refused() {
  local option=$1; shift
  local err status
  err=$("$allox" "$@" 2>&1 >/dev/null)
  status=$?
  count=$((count + 1))
  if [[ $status -eq 0 ]]; then
    fail "accepted: allox $*"
  elif ! grep -q -- "$option" <<<"$err"; then
    fail "allox $*: message does not name $option: $err"
  fi
}

sim=(simulate --trace "$trace" --no-progress)
refused --gpus "${sim[@]}" --gpus -5 --cpus 2
refused --gpus "${sim[@]}" --gpus abc --cpus 2
refused --gpus "${sim[@]}" --gpus 2.5 --cpus 2
refused --cpus "${sim[@]}" --gpus 2 --cpus -1
refused --alpha "${sim[@]}" --gpus 2 --cpus 2 --alpha 0
refused --alpha "${sim[@]}" --gpus 2 --cpus 2 --alpha 1.5
refused --alpha "${sim[@]}" --gpus 2 --cpus 2 --alpha nan
refused --threads "${sim[@]}" --gpus 2 --cpus 2 --threads 0
refused --starvation-bound "${sim[@]}" --gpus 2 --cpus 2 --starvation-bound -3
refused --round-period "${sim[@]}" --gpus 2 --cpus 2 --round-period -1
refused --startup "${sim[@]}" --gpus 2 --cpus 2 --startup -1
refused --startup "${sim[@]}" --gpus 2 --cpus 2 --startup x
refused --profiling-min-run "${sim[@]}" --gpus 2 --cpus 2 --profiling-min-run -1
refused --sweep-gpus "${sim[@]}" --gpus 2 --cpus 2 --sweep-gpus 4,-2
refused --sweep-alpha "${sim[@]}" --gpus 2 --cpus 2 --sweep-alpha 0.5,0
refused --sweep-error "${sim[@]}" --gpus 2 --cpus 2 --sweep-error -0.1
refused --synthetic simulate --synthetic 0 --gpus 2 --cpus 2
refused --users simulate --synthetic 10 --users 0 --gpus 2 --cpus 2
refused --rate simulate --synthetic 10 --rate 0 --gpus 2 --cpus 2
refused --seed simulate --synthetic 10 --seed -1 --gpus 2 --cpus 2
refused --srpt-rank "${sim[@]}" --gpus 2 --cpus 2 --srpt-rank longest
refused --resume "${sim[@]}" --gpus 2 --cpus 2 --resume sometimes
refused --alpha plan --cluster "$cluster" --jobs "$jobs" --alpha -1
refused --window report "$work" --window 0
refused --now report "$work" --now -5
# Absurd values refused before any work: a period below a second (rounds without end), clusters
# past 100,000 devices, a planning time past the longest time an input may state.
refused --round-period "${sim[@]}" --gpus 2 --cpus 2 --round-period 1e-300
refused --gpus "${sim[@]}" --gpus 1000000000 --cpus 2
refused --sweep-gpus "${sim[@]}" --gpus 2 --cpus 2 --sweep-gpus 1000000000
refused --startup "${sim[@]}" --gpus 2 --cpus 2 --startup 1e308
refused --now solve --cluster "$cluster" --jobs "$jobs" --now 1e308
refused --now solve --cluster "$cluster" --jobs "$jobs" --now -1e308
refused --add plan --cluster "$cluster" --jobs "$jobs" --add gpu=100000
refused --gantt plan --cluster "$cluster" --jobs "$jobs" --gantt "$work/"
# refused_with STATUS LINE ARGS...: the command exits with STATUS and stderr's first line is LINE.
refused_with() {
  local want_status=$1 want=$2; shift 2
  local err status
  err=$("$allox" "$@" 2>&1 >/dev/null)
  status=$?
  count=$((count + 1))
  [[ $status -eq $want_status && "$(head -1 <<<"$err")" == "$want" ]] ||
    fail "allox $*: exit $status: $err (want exit $want_status: $want)"
}
# A billion synthetic jobs or users: bad_alloc or the OOM killer before.
refused_with 105 "--synthetic: must be a whole number in 1..1000000, got '1e9'" \
  simulate --synthetic 1e9 --gpus 2 --no-progress
refused_with 105 "--users: must be a whole number in 1..1000000, got '1000000000'" \
  simulate --synthetic 3 --users 1000000000 --gpus 2 --no-progress
# A synthetic trace is held to a trace file's limits (9e12 s), naming the option past them;
# profiling runs so long that the estimates fitted to them leave the matcher's range are refused
# before the run (it failed half-way: "decide() failed").
err=$("$allox" simulate --synthetic 3 --rate 1e-300 --gavel "$root/data/gavel/simulation_throughputs.json" \
        --machines v100=1 --no-progress 2>&1 >/dev/null)
status=$?
count=$((count + 1))
[[ $status -eq 1 && "$err" == "allox simulate: synthetic: job1 would arrive at "*" s, past the 9e+12 s a trace may state: --rate 1e-300 is too low for 3 jobs" ]] ||
  fail "simulate --rate 1e-300: $err"
refused --median-duration simulate --synthetic 3 --median-duration 8.9e12 \
  --gavel "$root/data/gavel/simulation_throughputs.json" --machines v100=1 --no-progress
printf '{"v100": {"(%sA%s, 1)": {"null": 3}}, "k80": {"(%sA%s, 1)": {"null": 1e-300}}}' \' \' \' \' >"$work/crawl.json"
refused "--gavel $work/crawl.json" simulate --synthetic 3 --gavel "$work/crawl.json" --machines v100=1 --no-progress
refused_with 105 "--profiling-min-run: must be a number in [0, 4.5e+10), got '1e12'" \
  "${sim[@]}" --gpus 2 --cpus 2 --profiling --profiling-min-run 1e12
# A report time or window past the times an input may state, as solve --now.
refused_with 105 "--now: must be a number in [0, 9e+12), got '1e308'" report "$work" --now 1e308
refused_with 105 "--window: must be a number in (0, 9e+12], got '1e308'" report "$work" --window 1e308
# A trace with a job no machine of the cluster can run: it stayed queued for ever (0 of N
# completed, exit 0).
printf 'job,user,arrival,time.fpga\nj1,u1,0,10\n' >"$work/fpga.csv"
refused_with 1 "allox simulate: trace: job 'j1' can run on no machine of the cluster: it runs only on fpga; the cluster has gpu" \
  simulate --trace "$work/fpga.csv" --gpus 2 --no-progress
# A device no job can use would change nothing: an error naming it.
refused fpga plan --cluster "$cluster" --jobs "$jobs" --add fpga=2
refused --add plan --cluster "$cluster" --jobs "$jobs" --add gpu=0

# The comparison table lines up: every row as long as the header, drf-ext-fastest included.
if out=$("$allox" simulate --trace "$trace" --gpus 2 --cpus 2 --no-progress \
           --policy sjf,drf-ext-fastest,allox --out "$work/run" 2>&1); then
  widths=$(sed -n '/^policy/,$p' <<<"$out" | awk '{ print length($0) }' | sort -u | wc -l)
  [[ $widths -eq 1 ]] || fail "comparison table rows differ in width:"$'\n'"$out"
  grep -q '^drf-ext-fastest ' <<<"$out" || fail "no drf-ext-fastest row: $out"
else
  fail "simulate failed: $out"
fi
count=$((count + 1))

# CSV numbers: no float noise such as 24.759999999999998 (12 significant digits at most).
if noisy=$(cat "$work"/run/*/jobs.csv "$work"/run/comparison.csv |
           grep -E '[0-9]\.[0-9]*(9999999|0000000)[0-9]'); then
  fail "CSV numbers with binary noise: $(head -3 <<<"$noisy")"
fi
count=$((count + 1))

# The progress line: which run of how many and the time left.
err=$("$allox" simulate --synthetic 3000 --users 4 --machines v100=2 --machines k80=2 \
        --gavel "$root/data/gavel/simulation_throughputs.json" --policy sjf,fifo,srpt \
        --progress 2>&1 >/dev/null)
if ! grep -Eq 'run [1-3] of 3 \((sjf|fifo|srpt)' <<<"$err" || ! grep -q 'left' <<<"$err"; then
  fail "progress line without run i of n and time left: $(tr '\r' '\n' <<<"$err" | tail -3)"
fi
count=$((count + 1))

# Multi-GPU nodes: jobs of several GPUs, what-ifs in node shapes, hostile shapes refused.
gpu_cluster=$root/examples/gpu/cluster.yaml
gpu_jobs=$root/examples/gpu/jobs.yaml
gavel=(--gavel "$root/data/gavel/simulation_throughputs.json")
refused --add plan --cluster "$gpu_cluster" --jobs "$gpu_jobs" --add v100=6
refused --add plan --cluster "$gpu_cluster" --jobs "$gpu_jobs" --add v100=2x0
refused --machines simulate --synthetic 20 --multi-device "${gavel[@]}" --machines v100=2x65
refused --machines simulate --synthetic 20 --multi-device "${gavel[@]}" --machines v100=1x4 \
  --machines v100=1x8
refused "needs 8 units on one node" simulate --synthetic 200 --multi-device "${gavel[@]}" --no-progress \
  --machines v100=2x4 --machines p100=2x4 --machines k80=2x4
if out=$("$allox" plan --cluster "$gpu_cluster" --jobs "$gpu_jobs" --add v100=8 --add p100=2x2 2>&1); then
  grep -q '+v100=8' <<<"$out" && grep -q '+p100=2x2' <<<"$out" ||
    fail "plan without its node-shaped alternatives: $out"
else
  fail "plan on multi-GPU nodes failed: $out"
fi
count=$((count + 1))
# Every baseline plans every job of the GPU models' example: drffifo runs a job on its fastest
# model the cluster can hold (resnet50-8 on the 8-GPU v100 node, never on the 4-GPU k80 node).
for policy in drffifo drf drf-ext es es-fastest fifo sjf; do
  count=$((count + 1))
  out=$("$allox" plan --cluster "$gpu_cluster" --jobs "$gpu_jobs" --policy "$policy" --out "$work/p-$policy" 2>&1) ||
    fail "plan --policy $policy failed: $out"
  if grep -q 'never' <<<"$out" || grep -q '"state"' "$work/p-$policy/plan.json"; then
    fail "plan --policy $policy leaves jobs unfinished: $out"
  fi
done
# Three users on two machines: es's parts are 1, 1 and 0; u2 runs once the others' jobs end.
printf 'pools:\n  - {device: v100, count: 2}\n' >"$work/two.yaml"
printf 'users: [{name: u0}, {name: u1}, {name: u2}]\njobs:\n' >"$work/three.yaml"
for u in 0 1 2; do printf '  - {id: j%s, user: u%s, time: {v100: 100}}\n' $u $u >>"$work/three.yaml"; done
for policy in es es-fastest; do
  count=$((count + 1))
  out=$("$allox" plan --cluster "$work/two.yaml" --jobs "$work/three.yaml" --policy $policy 2>&1)
  grep -q '^u2 *200.0$' <<<"$out" && ! grep -q never <<<"$out" ||
    fail "plan --policy $policy: u2 should finish at 200: $out"
done
# --gantt refuses a device or a missing folder with the exact reason, and writes its two images
# and nothing else: files of gnuplot's helper names beside it stay as they were.
refused_with() {
  local want=$1; shift
  local err
  count=$((count + 1))
  if err=$("$allox" "$@" 2>&1 >/dev/null); then
    fail "accepted: allox $*"
  elif [[ $err != "$want" ]]; then
    fail "allox $*: said '$err', want '$want'"
  fi
}
refused_with "allox plan: --gantt /dev/null: /dev/null is a device or special file, not a file to write a chart to" \
  plan --cluster "$work/two.yaml" --jobs "$work/three.yaml" --gantt /dev/null
refused_with "allox plan: --gantt $work/none/plan.svg: the folder $work/none does not exist" \
  plan --cluster "$work/two.yaml" --jobs "$work/three.yaml" --gantt "$work/none/plan.svg"
[[ -e /dev/null.svg || -e "$work/none" ]] && fail "--gantt refused but wrote /dev/null.svg or $work/none"
mkdir -p "$work/g"
echo mine >"$work/g/plan.dat"
echo mine >"$work/g/plan.gp"
count=$((count + 1))
"$allox" plan --cluster "$work/two.yaml" --jobs "$work/three.yaml" --gantt "$work/g/plan.svg" >/dev/null 2>&1 ||
  fail "plan --gantt failed"
[[ $(ls "$work/g" | tr '\n' ' ') == "plan.dat plan.gp plan.png plan.svg " ]] ||
  fail "plan --gantt wrote other files: $(ls "$work/g")"
[[ $(cat "$work/g/plan.dat" "$work/g/plan.gp") == $'mine\nmine' ]] || fail "plan --gantt overwrote plan.dat or plan.gp"
# Two scenarios whose names make the same file name each get their own chart.
printf 'jobs:\n  - {id: j0, user: u0, time: {v100: 100, v-100: 50}}\n' >"$work/dashed.yaml"
count=$((count + 1))
"$allox" plan --cluster "$work/two.yaml" --jobs "$work/dashed.yaml" --add v-100=1 --add v100=1 \
  --add v100=1 --out "$work/same" >/dev/null 2>&1 || fail "plan with colliding scenario names failed"
[[ $(cd "$work/same" && ls *.svg | tr '\n' ' ') == "gantt_as_is.svg gantt_v1001.svg gantt_v1001_2.svg gantt_v1001_3.svg " ]] ||
  fail "colliding scenario names share a chart: $(ls "$work/same")"
grep -q '"gantt": "gantt_v1001_3.svg"' "$work/same/plan.json" || fail "plan.json does not name each chart"
if out=$("$allox" solve --cluster "$gpu_cluster" --jobs "$gpu_jobs" --format table 2>&1); then
  grep -q 'lower bound' <<<"$out" && grep -q 'resnet50-8 *dgx-0 *v100 *8' <<<"$out" ||
    fail "solve of multi-GPU jobs without its bound or the 8-GPU job on the 8-GPU node: $out"
else
  fail "solve of multi-GPU jobs failed: $out"
fi
count=$((count + 1))
if out=$("$allox" simulate --synthetic 80 --multi-device "${gavel[@]}" --no-progress \
           --machines v100=1x8 --machines p100=1x8 --machines k80=1x8 --policy allox,las \
           --out "$work/gpus" 2>&1); then
  grep -q '^allox.*multi-unit plans' <<<"$out" || fail "no plan gap under the table: $out"
  head -1 "$work"/gpus/allox*/jobs.csv | grep -q ',units$' || fail "jobs.csv without units"
else
  fail "simulate on multi-GPU nodes failed: $out"
fi
count=$((count + 1))

# An input without a job is a mistake: every command refuses it in one line naming the file
# (and line and field), exit status 1, in each trace format. A file read only for its users'
# weights (report --jobs) may list none.
printf 'users: [{name: a}]\njobs: []\n' >"$work/none.yaml"
printf 'job,user,time.gpu\n' >"$work/none.csv"
: >"$work/none.txt"
no_jobs="the jobs file has no jobs: list at least one under jobs"
refused_in_one_line() {  # expected-line command...
  local want=$1; shift
  local err status
  err=$("$allox" "$@" 2>&1 >/dev/null)
  status=$?
  count=$((count + 1))
  [[ $status -eq 1 && "$err" == "$want" ]] || fail "allox $*: exit $status: $err (want: $want)"
}
refused_in_one_line "allox simulate: $work/none.yaml:2: the trace has no jobs: list at least one under jobs" \
  simulate --trace "$work/none.yaml" --gpus 1 --no-progress
refused_in_one_line "allox simulate: $work/none.csv:1: the trace has no jobs: add a row per job under the header" \
  simulate --trace "$work/none.csv" --gpus 1 --no-progress
refused_in_one_line "allox simulate: $work/none.txt:1: the trace has no jobs: expected four lines per job, from '# <index>'" \
  simulate --trace "$work/none.txt" --gpus 1 --no-progress
refused_in_one_line "allox solve: $work/none.yaml:2: $no_jobs" solve --cluster "$cluster" --jobs "$work/none.yaml"
refused_in_one_line "allox plan: $work/none.yaml:2: $no_jobs" \
  plan --cluster "$cluster" --jobs "$work/none.yaml" --add gpu=1
refused_in_one_line "$work/none.yaml:2: $no_jobs" validate "$work/none.yaml"
if ! out=$("$allox" report "$work/run/sjf" --jobs "$work/none.yaml" 2>&1); then
  fail "report --jobs with users alone refused: $out"
fi
count=$((count + 1))
# A file of users without a jobs key is the weights file report --jobs reads: validate accepts
# it and says which commands need jobs; report --jobs reads it.
printf 'users:
  - {name: a, weight: 2}
  - {name: b}
' >"$work/users.yaml"
out=$("$allox" validate "$work/users.yaml" 2>&1)
status=$?
count=$((count + 1))
want="ok: $work/users.yaml (users: 2 users and no jobs, for report --jobs; simulate, solve and plan need jobs)"
[[ $status -eq 0 && "$out" == "$want" ]] || fail "validate of users alone: exit $status: $out (want: $want)"
refused_in_one_line "allox solve: $work/users.yaml:1: $no_jobs" solve --cluster "$cluster" --jobs "$work/users.yaml"
if ! out=$("$allox" report "$work/run/sjf" --jobs "$work/users.yaml" 2>&1); then
  fail "report --jobs with a users file refused: $out"
fi
count=$((count + 1))

# Every input is read once, so a pipe (`<(cat f)`) gives each command what the file gives; the
# reports' timings aside.
same_from_pipe() {  # description, then the command's output from files and from pipes
  count=$((count + 1))
  [[ -n "$2" && "$2" == "$3" ]] || fail "$1 differs when its inputs are pipes:"$'\n'"$2"$'\n'"---"$'\n'"$3"
}
untimed() { grep -v -e solve_ms -e ' ms$' -e 'planned at' | sed 's/ *[0-9.]*$//'; }
same_from_pipe solve \
  "$("$allox" solve --cluster "$cluster" --jobs "$jobs" 2>&1 | untimed)" \
  "$("$allox" solve --cluster <(cat "$cluster") --jobs <(cat "$jobs") 2>&1 | untimed)"
same_from_pipe plan \
  "$("$allox" plan --cluster "$cluster" --jobs "$jobs" --add gpu=2 2>&1)" \
  "$("$allox" plan --cluster <(cat "$cluster") --jobs <(cat "$jobs") --add gpu=2 2>&1)"
same_from_pipe simulate \
  "$("$allox" simulate --trace "$trace" --cluster "$cluster" --no-progress 2>&1 | untimed)" \
  "$("$allox" simulate --trace <(cat "$trace") --format csv --cluster <(cat "$cluster") \
       --no-progress 2>&1 | untimed)"
# Without --format, a pipe's trace is told by its first lines: CSV, YAML and the AlloX format.
for piped in "$trace" "$root/examples/trace.yaml" "$root/data/allox-google/experiment_large_23p.txt"; do
  same_from_pipe "simulate ${piped##*/} without --format" \
    "$("$allox" simulate --trace "$piped" --gpus 2 --cpus 2 --no-progress 2>&1 | untimed)" \
    "$("$allox" simulate --trace <(cat "$piped") --gpus 2 --cpus 2 --no-progress 2>&1 | untimed)"
done
same_from_pipe report \
  "$("$allox" report "$work/run/sjf/jobs.csv" --config "$root/examples/alloxd.yaml" \
       --jobs "$jobs" 2>&1)" \
  "$("$allox" report <(cat "$work/run/sjf/jobs.csv") --config <(cat "$root/examples/alloxd.yaml") \
       --jobs <(cat "$jobs") 2>&1)"

echo "$((count - failures)) of $count checks passed"
exit $((failures > 0))
