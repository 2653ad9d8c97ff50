#!/usr/bin/env bash
# allox validate end to end: the shipped examples pass, each bad fixture is rejected with exit
# status 1 and exactly the message written in its "# expect:" line, and a file given as a pipe
# (`<(cat f)`, /dev/stdin) gets the answer the file itself gets.
set -u
allox=$1
root=$2
failures=0
count=0

if ! out=$("$allox" validate "$root"/examples/*.yaml "$root"/examples/*.csv \
             "$root"/data/allox-google/experiment_large_23p.txt 2>&1); then
  echo "FAIL: examples rejected: $out"; failures=$((failures + 1))
fi
for kind in cluster "jobs:" "trace:" "alloxd config:"; do
  grep -q "($kind" <<<"$out" || { echo "FAIL: no $kind among the examples: $out"; failures=$((failures + 1)); }
done
if ! out=$("$allox" validate "$root"/examples/cluster.json "$root"/examples/jobs.json 2>&1); then
  echo "FAIL: JSON examples rejected: $out"; failures=$((failures + 1))
fi
if ! out=$("$allox" validate "$root"/examples/gpu/cluster.yaml "$root"/examples/gpu/jobs.yaml 2>&1); then
  echo "FAIL: multi-GPU examples rejected: $out"; failures=$((failures + 1))
fi

# Each file is read once: a pipe, `<(command)` or /dev/stdin gives its text only once, so the
# kind is told from that same text (by content where there is no extension) and the answer is
# the one the file itself gets.
for f in examples/cluster.yaml examples/jobs.yaml examples/trace.yaml examples/trace.csv \
         examples/alloxd.yaml examples/cluster.json examples/jobs.json \
         data/allox-google/experiment_large_23p.txt tests/cli/fixtures/bad-duplicate-job.yaml; do
  want=$("$allox" validate "$root/$f" 2>&1 | sed "s|$root/$f|FILE|")
  got=$("$allox" validate <(cat "$root/$f") 2>&1 | sed 's|/dev/fd/[0-9]*|FILE|')
  [[ "$got" == "$want" ]] || { echo "FAIL: <(cat $f): $got (want $want)"; failures=$((failures + 1)); }
  got=$(cat "$root/$f" | "$allox" validate /dev/stdin 2>&1 | sed 's|/dev/stdin|FILE|')
  [[ "$got" == "$want" ]] || { echo "FAIL: $f on stdin: $got (want $want)"; failures=$((failures + 1)); }
  count=$((count + 2))
done
got=$("$allox" validate --kind alloxd <(cat "$root/examples/alloxd.yaml") 2>&1)
grep -q '^ok: .*(alloxd config: ' <<<"$got" || { echo "FAIL: --kind alloxd of a pipe: $got"; failures=$((failures + 1)); }
count=$((count + 1))

cd "$root/tests/cli/fixtures" || exit 1
check() {  # file expected-message
  local got status
  got=$("$allox" validate "$1" 2>&1 >/dev/null)
  status=$?
  if [[ $status -ne 1 || "$got" != "$2" ]]; then
    echo "FAIL: $1: exit $status"; echo "  want: $2"; echo "  got:  $got"
    failures=$((failures + 1))
  fi
}
for f in bad-*.yaml bad-*.csv; do
  check "$f" "$(sed -n '1s/^# expect: //p' "$f")"
  count=$((count + 1))
done
check bad-weight.json 'bad-weight.json:1: user "a": weight must be a positive number of shares, got -1'
count=$((count + 1))
# A trace or jobs file without a job is refused, naming the file, whatever its format.
empty_dir=$(mktemp -d)
: >"$empty_dir/none.txt"
echo '[]' >"$empty_dir/none.json"
echo '{"jobs": []}' >"$empty_dir/jobs.json"
check "$empty_dir/none.txt" "$empty_dir/none.txt:1: the trace has no jobs: expected four lines per job, from '# <index>'"
check "$empty_dir/none.json" "$empty_dir/none.json:1: the file is an empty list: expected a cluster, a jobs file, a trace or an alloxd config"
check "$empty_dir/jobs.json" "$empty_dir/jobs.json:1: the jobs file has no jobs: list at least one under jobs"
# YAML whose top-level keys name no kind is refused with what each kind needs, never a crash.
printf 'a: 1\n' >"$empty_dir/other.yaml"
check "$empty_dir/other.yaml" "$empty_dir/other.yaml:1: cannot tell what this file is: expected a cluster (top-level machines or pools), a jobs file or trace (top-level jobs or users), or an alloxd config (listen, nodes); use --kind to say"
count=$((count + 4))
rm -rf "$empty_dir"
# A trace is checked against a cluster as a jobs file is: a job no machine can run (it stayed
# queued for ever in simulate: 0 of 1 completed, exit 0) is refused naming the job and devices.
cross_dir=$(mktemp -d)
printf 'job,user,arrival,time.fpga,time.tpu\nj1,u1,0,10,20\nj2,u1,0,10,\nj3,u1,5,,8\n' >"$cross_dir/t.csv"
printf 'pools:\n  - {device: gpu, count: 2}\n' >"$cross_dir/c.yaml"
got=$("$allox" validate "$cross_dir/t.csv" "$cross_dir/c.yaml" 2>&1 >/dev/null)
status=$?
want="$cross_dir/t.csv: trace: job 'j1' can run on no machine of the cluster: it runs only on fpga, tpu; the cluster has gpu; 2 more jobs cannot run either"
[[ $status -eq 1 && "$got" == "$want" ]] || { echo "FAIL: trace against a cluster: exit $status: $got (want $want)"; failures=$((failures + 1)); }
printf 'pools:\n  - {device: tpu, count: 1}\n  - {device: fpga, count: 1}\n' >"$cross_dir/c.yaml"
got=$("$allox" validate "$cross_dir/t.csv" "$cross_dir/c.yaml" 2>&1)
[[ $? -eq 0 ]] || { echo "FAIL: runnable trace refused: $got"; failures=$((failures + 1)); }
count=$((count + 2))
rm -rf "$cross_dir"
# A FIFO nobody writes to is refused at once, not waited on.
fifo_dir=$(mktemp -d)
mkfifo "$fifo_dir/cluster.yaml"
got=$(timeout 20 "$allox" validate "$fifo_dir/cluster.yaml" 2>&1 >/dev/null)
status=$?
count=$((count + 1))
if [[ $status -ne 1 || "$got" != "$fifo_dir/cluster.yaml: is a FIFO with no writer (or nothing written), expected a file" ]]; then
  echo "FAIL: FIFO: exit $status: $got"; failures=$((failures + 1))
fi
rm -rf "$fifo_dir"
echo "$((count - failures)) of $count checks passed (bad fixtures rejected with their exact message, pipes read once)"
exit $((failures > 0))
