#!/usr/bin/env bash
# Clients that never read (docs/hardening.md): 100 connections x 5 pipelined GET / on
# the reports listener with a large status page, then 10,000 stalled TLS handshakes on the
# webhook; each passes with alloxd's RSS growth under 100 MB and /healthz answering.
#   tests/alloxd/load/unread_replies.sh [build-dir] [jobs] [clients] [handshakes]
# UNREAD_REPLY_BYTES, when set, is alloxd's limits.unread_reply_bytes (a page smaller than the
# default 1 MiB cap waits in the kernel's buffers and alloxd's for the 10 s read timeout).
# Needs python3 and openssl. Starts its own alloxd (free loopback ports, throw-away database and
# certificate); bounded to 5 minutes.
set -euo pipefail
build=${1:-build}
jobs=${2:-3000}
clients=${3:-100}
handshakes=${4:-10000}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/alloxd_ready.sh"
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) > handshakes + 300 )) || { echo "ulimit -n $(ulimit -n) too low" >&2; exit 2; }
port=$(free_port)
reports=$(free_port)
webhook=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
limits=
[[ -n ${UNREAD_REPLY_BYTES:-} ]] && limits="limits: {unread_reply_bytes: $UNREAD_REPLY_BYTES}"
cat > "$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:$port
reports_listen: 127.0.0.1:$reports
database: $work/alloxd.db
policy: fifo
request_threads: normal
nodes:
  - {name: gpu-node-1, machines: {gpu: 1}}
$limits
webhook:
  listen: 127.0.0.1:$webhook
  tls_cert_file: $work/tls.crt
  tls_key_file: $work/tls.key
YAML
"$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
pid=$!
wait_alloxd_ready "$work/alloxd.log" "$pid"
status=0
timeout 300 python3 "$here/unread_replies.py" "$pid" "$port" "$reports" "$webhook" "$jobs" "$clients" "$handshakes" || status=$?
kill -0 "$pid" 2>/dev/null || { echo "FAIL alloxd died:" >&2; tail -5 "$work/alloxd.log" >&2; exit 1; }
exit $status
