#!/usr/bin/env bash
# Resident memory after mutated requests (docs/hardening.md): 100,000 mutated bodies on
# every extender verb and GETs of the reports, then alloxd's RSS against its live set (RSS after
# malloc_trim(0), called through gdb). Passes when no 5xx, no hang, and RSS <= 1.5 x live set.
#   tests/alloxd/load/mutated_rss.sh [build-dir] [requests]
# Needs python3 and gdb (ptrace of a child: the default yama scope allows it). Starts its own
# alloxd (free port, throw-away database); bounded to 10 minutes. ALLOXD_PRELOAD, when set, is
# put in LD_PRELOAD for alloxd (to compare allocators).
set -euo pipefail
build=${1:-build}
requests=${2:-100000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$here/alloxd_ready.sh"
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:$port
database: $work/alloxd.db
policy: allox
request_threads: normal
nodes:
  - {name: gpu-node-1, machines: {gpu: 4}}
  - {name: gpu-node-2, machines: {gpu: 4}}
  - {name: cpu-node-1, machines: {cpu: 2}}
YAML
LD_PRELOAD=${ALLOXD_PRELOAD:-} "$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
pid=$!
wait_alloxd_ready "$work/alloxd.log" "$pid"
status=0
timeout 600 python3 "$here/mutated_rss.py" "$pid" "$port" "$root/data/kube-extender" "$requests" || status=$?
kill -0 "$pid" 2>/dev/null || { echo "FAIL alloxd died:" >&2; tail -5 "$work/alloxd.log" >&2; exit 1; }
exit $status
