#!/usr/bin/env bash
# allox solve end to end: every backend gives the same objective on the shipped examples (YAML
# and JSON), the JSON has one assignment per job, the table lists every job, and bad input is
# rejected with exit status 1 and a message naming the problem.
set -u
allox=$1
root=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

objective() { sed -n 's/^  "objective": \(.*\),$/\1/p'; }

for ext in yaml json; do
  cluster="$root/examples/cluster.$ext"
  jobs="$root/examples/jobs.$ext"
  want=""
  for backend in lemon boost glpk transport assignment auto; do
    out=$("$allox" solve --cluster "$cluster" --jobs "$jobs" --backend "$backend") ||
      { fail "$backend on $ext examples exited $?"; continue; }
    got=$(echo "$out" | objective)
    [[ -n "$got" ]] || fail "$backend: no objective in: $out"
    [[ -z "$want" ]] && want=$got
    [[ "$got" == "$want" ]] || fail "$backend objective $got differs from lemon's $want ($ext)"
    [[ $(echo "$out" | grep -c '"job":') -eq $(grep -c '{id: \|"id":' "$jobs") ]] ||
      fail "$backend: assignment count differs from the job count ($ext)"
    # auto reports the exact backend it picked.
    reported=$backend
    [[ $backend == auto ]] && reported='\(transport\|assignment\)'
    echo "$out" | grep -q "\"backend\": \"$reported\"" || fail "$backend: backend not reported"
  done
  echo "ok: $ext examples, objective $want s with every backend"
done

table=$("$allox" solve --cluster "$root/examples/cluster.yaml" --jobs "$root/examples/jobs.yaml" \
  --format table --now 5) || fail "table format exited $?"
for id in $(sed -n 's/.*{id: \([^,]*\),.*/\1/p' "$root/examples/jobs.yaml"); do
  echo "$table" | grep -q " $id " || fail "table misses job $id"
done

err=$("$allox" solve --cluster "$root/examples/cluster.yaml" --jobs /nonexistent.yaml 2>&1)
[[ $? -eq 1 && "$err" == *"/nonexistent.yaml"* ]] || fail "missing jobs file: $err"
err=$("$allox" solve --cluster "$root/examples/cluster.yaml" --jobs "$root/examples/jobs.yaml" \
  --backend cplex 2>&1)
[[ $? -ne 0 && "$err" == *"cplex"* ]] || fail "unknown backend accepted: $err"

exit $((failures > 0))
