#!/usr/bin/env bash
# Kill -9 soak for alloxd's durable state: the durability test with many kills.
# The real alloxd serves a stream of filters, binds (through a fake API server), profiles and
# completions and is killed with SIGKILL KILLS times; after each restart every acknowledged
# change must be there, every pod the API server bound must be a started job on that node, and
# at the end the SQLite file must hold no orphan rows. Bounded: gives up after LIMIT seconds.
#   scripts/kill9.sh [KILLS=100] [LIMIT=900]
# Prints one line: kills, acknowledged changes, jobs, binds, lost changes, orphan rows.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-100}
limit=${2:-900}
build_dir=${ALLOX_BUILD_DIR:-build}
test_binary="$build_dir/tests/alloxd/alloxd_test"
[[ -x $test_binary ]] || { echo "kill9: build first (./dev build): no $test_binary" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ALLOX_KILLS=$kills timeout --kill-after=10 "$limit" "$test_binary" \
  --gtest_filter='DurabilityTest.*' >"$log" 2>&1 || status=$?
grep -E '^kills=' "$log" || true
if [[ $status -ne 0 ]]; then
  [[ $status -eq 124 ]] && echo "kill9: gave up after $limit s" >&2
  grep -E 'Failure|FAILED|Expected|Which is|life ' "$log" | head -40 >&2
fi
exit "$status"
