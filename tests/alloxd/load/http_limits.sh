#!/usr/bin/env bash
# HTTP limits at full size (docs/hardening.md): a 1 GB body (Content-Length and chunked)
# and a 1 GB header on both of alloxd's listeners, each refused with RSS growth under 20 MB; then
# 10,000 stalled connections closed by alloxd while /healthz keeps answering on both ports.
#   tests/alloxd/load/http_limits.sh [build-dir] [stalled connections]
# Needs python3. Starts its own alloxd (free ports, throw-away database); bounded to 5 minutes.
set -euo pipefail
build=${1:-build}
stalled=${2:-10000}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/alloxd_ready.sh"
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# Both ends of 10,000 connections live in this process tree: raise the descriptor limit.
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) > stalled + 200 )) || { echo "ulimit -n $(ulimit -n) too low for $stalled connections" >&2; exit 2; }

port=$(free_port)
reports=$(free_port)
cat > "$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:$port
reports_listen: 127.0.0.1:$reports
database: $work/alloxd.db
policy: fifo
nodes:
  - {name: node-1, machines: {gpu: 1}}
YAML
"$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
pid=$!
wait_alloxd_ready "$work/alloxd.log" "$pid"
echo "alloxd pid $pid, verbs port $port, reports port $reports, ulimit -n $(ulimit -n)" >&2
status=0
timeout 300 python3 "$here/http_limits.py" "$pid" "$port" "$reports" "$stalled" || status=$?
kill -0 "$pid" 2>/dev/null || { echo "FAIL alloxd died:" >&2; tail -5 "$work/alloxd.log" >&2; exit 1; }
exit $status
