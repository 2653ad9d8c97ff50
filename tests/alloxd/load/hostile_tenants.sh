#!/usr/bin/env bash
# Tenants against alloxd's memory (docs/hardening.md): pods whose allox.io/user is
# 100 KB, offered again and again, then 10,000 distinct users queued; prints RSS growth, the
# refusal, and the sizes of /metrics, /v1/fairness, /v1/queue and the status page.
#   tests/alloxd/load/hostile_tenants.sh [build-dir] [users]
# Needs python3. Starts its own alloxd (free port, throw-away database); about 10 minutes on 2
# busy cores (each new job's /filter waits for a plan), bounded to 15.
set -euo pipefail
build=${1:-build}
users=${2:-10000}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/alloxd_ready.sh"
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:$port
database: $work/alloxd.db
policy: fifo
tick: 0.5
tenancy: {user_annotation_namespaces: [lab]}
nodes:
  - {name: node-1, machines: {gpu: 1}}
  - {name: node-2, machines: {gpu: 1}}
YAML
"$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
pid=$!
wait_alloxd_ready "$work/alloxd.log" "$pid"
status=0
timeout 900 python3 "$here/hostile_tenants.py" "$pid" "$port" "$users" || status=$?
kill -0 "$pid" 2>/dev/null || { echo "FAIL alloxd died:" >&2; tail -5 "$work/alloxd.log" >&2; exit 1; }
exit $status
