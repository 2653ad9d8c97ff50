#!/usr/bin/env bash
# allox bench cluster at toy size (50 nodes, 500 queued jobs): the real alloxd, the fake API
# server and the kube-scheduler emulator end to end. Asserts what the run prints, not timing:
# every job bound exactly once, and every figure of the table present and sane.
set -u
allox=$1
root=$2
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
cd "$root" || exit 1
out=$("$allox" bench cluster --nodes 50 --pending 500 --speedup 200 --max-wall 120 \
        --saturation 5 --state "$state" 2>&1)
status=$?
echo "$out"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
[[ $status -eq 0 ]] || fail "exit status $status"
grep -q '^every job bound exactly once: yes$' <<<"$out" || fail "not every job bound exactly once"
grep -q 'stopped at --max-wall' <<<"$out" && fail "the run hit --max-wall"
# The run's row: run, bound/jobs, twice, unbound, pods/s, c2b p50, c2b p99, filters, nodes per
# filter, filter p50, p99, plan ms, queued, RSS MB, wall s.
row=$(grep -E '^ +1 +[0-9]+/' <<<"$out")
[[ -n $row ]] || fail "no row for run 1"
read -r run bound jobs twice unbound pps c2b50 c2b99 filters nodes f50 f99 plan queued rss wall \
  <<<"$(sed 's#/# #; s/ms//g' <<<"$row")"
check() {  # description, python boolean expression
  python3 -c "import sys; sys.exit(0 if ($2) else 1)" || fail "$1 (row: $row)"
}
check "500 jobs, all bound once" "$jobs == 500 and $bound == 500 and $twice == 0 and $unbound == 0"
check "a positive bind rate" "$pps > 0"
check "completion-to-bind p50 <= p99" "0 <= $c2b50 <= $c2b99"
check "at least one /filter per job" "$filters >= 500"
check "the filters named nodes, at most 50" "0 < $nodes <= 50"
check "filter p50 <= p99, both positive" "0 < $f50 <= $f99"
# The row rounds plan ms to whole ms (a toy queue plans in under 1 ms): the target row has it
# to 0.01 ms.
check "a plan measured at a queue of the backlog's size" "$plan >= 0 and 0 < $queued <= 500"
plan_ms=$(grep -E '^plan time at the largest queue' <<<"$out" | awk '{print $7}')
check "the plan time measured, positive" "${plan_ms:-0} > 0"
check "alloxd's peak RSS measured, under 1 GB" "0 < $rss < 1024"
# alloxd plans AlloX rounds over the whole run: its starvation bound is the run's horizon
# (--max-wall x --speedup simulated seconds), not alloxd's default of 3,600 s.
grep -qE '^starvation_bound: 24000(\.0+)?$' "$state/base.yaml" ||
  fail "alloxd's starvation_bound is not the horizon 120 x 200: $(grep starvation "$state/base.yaml")"
grep -q 'starvation bound 24000 s' <<<"$out" || fail "the header does not name the starvation bound"
# The target row's bind rate over every bind is the row's; the saturated rate counts only the
# moments with enough ungated pods waiting (--saturation 5 here: a toy queue has few at once).
every=$(grep -E '^pods bound per second \(every bind\)' <<<"$out" | awk '{print $7}')
check "the row's bind rate is the every-bind rate" "abs(${every:-0} - $pps) <= 1"
saturated=$(grep -E '^pods bound per second \(saturated\)' <<<"$out" | awk '{print $6}')
read -r sat_s sat_binds <<<"$(sed -nE 's/^saturated: ([0-9.]+) s of the last run with >= 5 pods ungated and unbound, ([0-9]+) binds in it$/\1 \2/p' <<<"$out")"
check "a saturated window was seen, with binds in it" "${sat_s:-0} > 0 and ${sat_binds:-0} > 0"
check "the saturated rate is its binds over its time" \
  "abs(${saturated:-0} - ${sat_binds:-0} / ${sat_s:-1}) <= 0.01 * ${saturated:-0} + 0.01"
# The harness ran with its allocator settings (bench/harness_allocator.h: the command started
# itself again with them), and says so.
grep -qE '^harness allocator: GLIBC_TUNABLES=glibc\.malloc\.top_pad=67108864:glibc\.malloc\.hugetlb=1 ' <<<"$out" ||
  fail "the harness did not run with its allocator settings: $(grep '^harness allocator' <<<"$out")"
# alloxd's requests to the API server, per bound job: one binding each (alloxd binds every pod
# through the API), at least one gate removal each, and its pod watch counted as a watch.
api=$(grep -E "^alloxd's API requests per bound job:" <<<"$out")
[[ -n $api ]] || fail "no line of alloxd's API requests"
grep -q 'POST pods/binding 1.00' <<<"$api" || fail "not one binding per bound job: $api"
gates=$(sed -nE 's/.*PATCH pods ([0-9.]+).*/\1/p' <<<"$api")
check "at least one gate removal per job" "${gates:-0} >= 1"
grep -q 'WATCH pods' <<<"$api" || fail "alloxd's pod watch not counted as a watch: $api"
# The plan's wall time and the planner thread's CPU in it, for the solve the target row took.
read -r plan_wall plan_cpu <<<"$(sed -nE 's/^plan measured at [0-9]+ queued jobs: ([0-9]+) ms wall, of which ([0-9]+) ms the planner thread.s CPU .*/\1 \2/p' <<<"$out")"
[[ -n ${plan_cpu:-} ]] || fail "no plan CPU line: $(grep '^plan measured' <<<"$out")"
check "the plan's CPU is at most its wall time (+1 ms of rounding)" "0 <= ${plan_cpu:--1} <= ${plan_wall:-0} + 1"
# alloxd's own /filter histogram against the round trips: every call the emulator made reached
# alloxd's histogram (a few more: a retried call counts there too), and both shares over 2 ms
# are read.
read -r trips inside calls p99_above p99_upto <<<"$(sed -nE 's/^\/filter over 2 ms: ([0-9.]+)% of the round trips; inside alloxd \(its histogram, from the request read to the answer rendered\) ([0-9.]+)% of ([0-9]+) calls, p99 in \(([0-9.e+-]+), ([0-9.e+-]+|inf)\] ms \(last run\)$/\1 \2 \3 \4 \5/p' <<<"$out")"
[[ -n ${calls:-} ]] || fail "no line of alloxd's own /filter time: $(grep '^/filter over 2 ms' <<<"$out")"
check "alloxd's histogram counted every /filter" "${calls:-0} >= $filters"
check "alloxd's p99 bucket bounds ordered" "0 <= ${p99_above:-0} < float('${p99_upto:-0}')"
check "the shares over 2 ms are percentages" "0 <= ${inside:--1} <= 100 and 0 <= ${trips:--1} <= 100"
# CPU by thread name (bench/proc_cpu.h): alloxd's rooms each named, the harness's scheduler and
# kubelets seen although they end with the replay, and no process's groups summing to more than
# its total (each group is rounded to 0.1 s).
alloxd_cpu=$(sed -nE 's/^plan measured at .*; alloxd CPU ([0-9.]+) s \(last run\)$/\1/p' <<<"$out")
harness_cpu=$(sed -nE 's/^harness CPU \(this process: API server, scheduler, kubelets\) ([0-9.]+) s over the replay.*/\1/p' <<<"$out")
by_thread() {  # the line's title, its process's total, the names it must list
  local title=$1 total=$2
  shift 2
  local line
  line=$(grep -F "$title" <<<"$out")
  [[ -n $line ]] || { fail "no line '$title'"; return; }
  for name in "$@"; do grep -qF " $name " <<<"$line" || fail "'$name' missing: $line"; done
  local groups sum
  groups=$(grep -oE ' [0-9]+\.[0-9] s \(' <<<"$line" | wc -l)
  sum=$(grep -oE ' [0-9]+\.[0-9] s \(' <<<"$line" | awk '{s += $1} END {print s + 0}')
  check "'$title' sums within its total" "$groups > 0 and $sum <= ${total:-0} + 0.05 * $groups + 0.05"
}
by_thread "alloxd CPU by thread (its life, live threads; last run): " "$alloxd_cpu" \
  "allox-http x4" "allox-blocking x16" allox-planner allox-control allox-informer
by_thread "harness CPU by thread (over the replay; last run): " "$harness_cpu" \
  emu-scheduler emu-kubelets
for row_name in 'pods bound per second' '/filter p99' 'plan time' 'alloxd peak RSS'; do
  grep -q "^$row_name" <<<"$out" || fail "no target row '$row_name'"
done
exit $((failures > 0))
