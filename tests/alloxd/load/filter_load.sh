#!/usr/bin/env bash
# Load test for alloxd's /filter: 100 nodes, 1,000 queued jobs, one
# filter request naming all 100 nodes, replayed by wrk on loopback.
#   tests/alloxd/load/filter_load.sh [build-dir] [policy] [wrk duration] [connections]
# Needs: wrk, curl, python3. Starts its own alloxd on a free port with a throw-away database.
# bench/filter_vs_nginx.sh runs the same request against nginx in the same run.
set -euo pipefail
build=${1:-build}
policy=${2:-allox}
duration=${3:-20s}
connections=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
alloxd_pid=
trap '[[ -n $alloxd_pid ]] && kill "$alloxd_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
source "$here/filter_setup.sh"
start_loaded_alloxd "$build" "$policy" "$work"
url=$alloxd_url
answer=$(curl -sf -XPOST "$url/filter" --data-binary @"$work/body.json")
echo "one answer: ${answer:0:160}..." >&2
wrk -t2 -c"$connections" -d"$duration" --latency -s "$work/filter.lua" "$url/filter"
curl -sf "$url/metrics" | grep -E "^allox_(solve_duration_seconds_(sum|count)|requests_total\{verb=\"filter\"|request_duration_seconds_(sum|count)\{verb=\"filter\")"
