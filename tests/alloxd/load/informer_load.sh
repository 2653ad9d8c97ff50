#!/usr/bin/env bash
# alloxd's informer against a misbehaving API server (docs/hardening.md):
#   gone, end: every watch answered 410, or ended at once, for SECONDS (default 90): passes when
#     alloxd sends under 1 LIST and under 1 WATCH a second (both collections together) after
#     the first minute;
#   big-length, big-chunked: every LIST a 2 GB answer: passes when alloxd's RSS grows by under
#     50 MB over 20 s and it logs the refusal.
#   tests/alloxd/load/informer_load.sh [build-dir] [mode ...]
# Needs python3. Starts its own alloxd and fake API server on free loopback ports; each run is
# bounded (SECONDS + 30 s).
set -euo pipefail
build=${1:-build}
shift || true
modes=("$@")
(( ${#modes[@]} )) || modes=(gone end big-length big-chunked)
seconds=${SECONDS_PER_MODE:-90}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/alloxd_ready.sh"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
status=0
for mode in "${modes[@]}"; do
  api=$(free_port)
  port=$(free_port)
  span=$seconds
  [[ $mode == big-* ]] && span=20
  # The fake server writes a line to this FIFO once it listens; opened read-write so neither side
  # blocks on the open, and read with a bound in case the server never starts.
  mkfifo "$work/$mode.up"
  exec {up}<>"$work/$mode.up"
  python3 "$here/misbehaving_apiserver.py" "$api" "$mode" "$((span + 5))" "$work/$mode.requests" \
    "$work/$mode.up" &
  pids+=($!)
  cat > "$work/$mode.yaml" <<YAML
listen: 127.0.0.1:$port
database: $work/$mode.db
policy: fifo
request_threads: normal
apiserver: {url: "http://127.0.0.1:$api"}
YAML
  read -r -t 10 -u "$up" _ || { echo "FAIL $mode: the fake API server did not start" >&2; exit 1; }
  exec {up}<&-
  "$build/cli/alloxd" --config "$work/$mode.yaml" 2> "$work/$mode.log" &
  pid=$!
  pids+=($pid)
  sleep 1
  before=$(rss_kb "$pid")
  peak=$before
  for ((t = 0; t < span; ++t)); do
    sleep 1
    kill -0 "$pid" 2>/dev/null || { echo "FAIL $mode: alloxd died" >&2; tail -3 "$work/$mode.log" >&2; status=1; break; }
    now=$(rss_kb "$pid")
    (( now > peak )) && peak=$now
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  lists=$(grep -c ' LIST ' "$work/$mode.requests" || true)
  watches=$(grep -c ' WATCH ' "$work/$mode.requests" || true)
  if [[ $mode == big-* ]]; then
    growth=$(( (peak - before) / 1024 ))
    refused=$(grep -c 'the answer is larger than' "$work/$mode.log" || true)
    echo "$mode: $lists LISTs in ${span} s, RSS growth peak ${growth} MB, refusals logged $refused"
    (( growth < 50 && refused > 0 )) || { echo "FAIL $mode" >&2; status=1; }
  else
    late=$(awk '$1 >= 60 && $2 == "LIST"' "$work/$mode.requests" | wc -l)
    late_watches=$(awk '$1 >= 60 && $2 == "WATCH"' "$work/$mode.requests" | wc -l)
    rate=$(python3 -c "print(f'{$late / ($span - 60):.2f}')")
    echo "$mode: $lists LISTs and $watches WATCHes in ${span} s; after the first minute $late LISTs ($rate/s), $late_watches WATCHes"
    python3 -c "import sys; sys.exit(0 if max($late, $late_watches) / ($span - 60) < 1 else 1)" || { echo "FAIL $mode" >&2; status=1; }
  fi
done
exit $status
