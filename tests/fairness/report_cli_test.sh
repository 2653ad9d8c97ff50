#!/usr/bin/env bash
# allox report end to end on the fixture run of report_test.cc's hand-worked case (two GPUs, two
# CPU nodes, t = 200, window 100): the table and the JSON carry its figures, a directory works
# like its jobs.csv, and bad input exits 1 with a message naming the file.
set -u
allox=$1
fixtures=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

args=(--cluster "$fixtures/cluster.yaml" --now 200 --window 100)
table=$("$allox" report "$fixtures/run/jobs.csv" "${args[@]}") || fail "table: exit $?"
for want in "alice    1.00    0.500     0.200       0        1       2        70.0       2.25" \
            "bob      1.00    0.000     0.300       1        0       1       150.0       1.00" \
            "Jain's index of windowed shares 0.962"; do
  [[ "$table" == *"$want"* ]] || fail "table lacks '$want'"$'\n'"$table"
done

from_dir=$("$allox" report "$fixtures/run" "${args[@]}") || fail "directory: exit $?"
[[ "$from_dir" == "$table" ]] || fail "a run directory reads differently from its jobs.csv"

json=$("$allox" report "$fixtures/run" "${args[@]}" --json) || fail "json: exit $?"
for want in '"worst_rho": 2.25' '"worst_rho_job": "a2"' '"queued": 1'; do
  [[ "$json" == *"$want"* ]] || fail "json lacks '$want'"
done

err=$("$allox" report "$fixtures/no-such-run.csv" 2>&1 >/dev/null)
status=$?
[[ $status -eq 1 && "$err" == *"no-such-run.csv: no such file"* ]] ||
  fail "missing file: exit $status, message '$err'"

exit $((failures > 0))
