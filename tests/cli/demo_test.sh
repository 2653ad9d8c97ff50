#!/usr/bin/env bash
# The README's main command end to end, sped up: alloxd starts with its store, the replay plays
# kube-scheduler over all 40 jobs, every job is bound once and done, and the fairness report
# counts 10 done jobs for each of the 4 users.
set -u
build_dir=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
out="$work/out.txt"
ALLOX_DEMO_SPEEDUP=4000 ALLOX_DEMO_LISTEN=127.0.0.1:0 ALLOX_DEMO_STATE="$work" \
  timeout 300 scripts/demo.sh "$build_dir" </dev/null >"$out" 2>&1
status=$?
failures=0
expect() {
  if ! grep -qE "$1" "$out"; then echo "FAIL: output lacks /$1/"; failures=$((failures + 1)); fi
}
[[ $status -eq 0 ]] || { echo "FAIL: demo exited $status"; failures=$((failures + 1)); }
expect '^Replay complete: 40 of 40 jobs done'
expect '\(0 bind failures\)'
# Released through gates: every job's chosen variant ungated, the other deleted.
expect '^Released by alloxd: 40 gates removed, 40 unused variants deleted'
expect '^Jobs that ran more than once: 0; pods left pending: 0'
for user in queue0 queue1 queue2 queue3; do
  expect "^$user +[0-9.]+ +[0-9.]+ +0 +0 +10 "
done
expect '^Status page: +http://127\.0\.0\.1:[0-9]+/'
bound=$(grep -c '\] bound ' "$out")
[[ $bound -eq 40 ]] || { echo "FAIL: $bound binds, want 40"; failures=$((failures + 1)); }
if ((failures)); then
  echo "--- demo output"; cat "$out"
  echo "--- alloxd log"; cat "$work/alloxd.log" 2>/dev/null
  exit 1
fi
echo "demo: 40 of 40 jobs bound once and done; report complete"
