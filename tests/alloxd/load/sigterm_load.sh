#!/usr/bin/env bash
# SIGTERM under load (docs/hardening.md): RUNS times, start alloxd, drive it with wrk
# (16 connections of new pods' /filter and /bind, plus reports), send SIGTERM at a random moment
# 0.3-1.5 s in, and check that alloxd exits by itself, without a signal, within 5 s.
#   tests/alloxd/load/sigterm_load.sh [build-dir] [runs]
# Needs wrk, curl, python3. Each run is bounded (about 3 s); prints one line per run and a
# summary; exits 1 if any run crashed or took 5 s or more.
set -euo pipefail
source "$(dirname "$0")/alloxd_ready.sh"
build=${1:-build}
runs=${2:-100}
work=$(mktemp -d)
pid=
wrk_pid=
trap '[[ -n $wrk_pid ]] && kill "$wrk_pid" 2>/dev/null; [[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

cat > "$work/load.lua" <<'LUA'
-- Each call: a new pod's /filter, the /bind of the previous one, or a report, in turn.
local n, id = 0, 0
request = function()
  n = n + 1
  local kind = n % 3
  if kind == 1 then id = math.random(1, 1000000000) end
  if kind == 1 then
    local pod = string.format('{"metadata":{"name":"p%d","namespace":"lab","uid":"u%d"},"spec":{"containers":[{"name":"m","resources":{"requests":{"nvidia.com/gpu":"1"}}}]}}', id, id)
    return wrk.format("POST", "/filter", {["Content-Type"] = "application/json"},
                      '{"Pod":' .. pod .. ',"NodeNames":["n1","n2","n3","n4"]}')
  elseif kind == 2 then
    return wrk.format("POST", "/bind", {["Content-Type"] = "application/json"},
                      string.format('{"PodName":"p%d","PodNamespace":"lab","Node":"n%d"}', id, id % 4 + 1))
  end
  return wrk.format("GET", "/v1/queue")
end
LUA

crashes=0 slow=0 worst=0
for run in $(seq 1 "$runs"); do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rm -f "$work"/alloxd.db*
  cat > "$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:$port
database: $work/alloxd.db
policy: allox
tick: 0.1
nodes:
  - {name: n1, machines: {gpu: 4, cpu: 1}}
  - {name: n2, machines: {gpu: 4, cpu: 1}}
  - {name: n3, machines: {gpu: 4}}
  - {name: n4, machines: {gpu: 4}}
YAML
  "$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
  pid=$!
  wait_alloxd_ready "$work/alloxd.log" "$pid"
  wrk -t2 -c16 -d5s -s "$work/load.lua" "http://127.0.0.1:$port" > "$work/wrk.log" 2>&1 &
  wrk_pid=$!
  # Real time on purpose: SIGTERM lands at a random moment of the load, not after an event.
  sleep "$(python3 -c 'import random; print(round(random.uniform(0.3, 1.5), 2))')"
  served=$(curl -sf -m 2 "http://127.0.0.1:$port/metrics" | awk '/^allox_requests_total/ {n += $2} END {print n + 0}' || echo "?")
  start=$(date +%s.%N)
  kill -TERM "$pid"
  # Wait for the exit itself; a watchdog kills alloxd after 6 s (a real timeout: the limit).
  (sleep 6; kill -0 "$pid" 2>/dev/null && touch "$work/hung" && kill -9 "$pid") 2>/dev/null &
  watchdog=$!
  code=0
  wait "$pid" || code=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  if [[ -e $work/hung ]]; then code=hung; rm -f "$work/hung"; fi
  took=$(python3 -c "print(round($(date +%s.%N) - $start, 3))")
  pid=
  kill "$wrk_pid" 2>/dev/null || true; wait "$wrk_pid" 2>/dev/null || true
  wrk_pid=
  verdict=ok
  if [[ $code == hung ]]; then verdict="HUNG (killed after 6 s)"; slow=$((slow + 1))
  elif (( code >= 128 )); then verdict="CRASHED (signal $((code - 128)))"; crashes=$((crashes + 1))
  elif python3 -c "import sys; sys.exit(0 if $took >= 5 else 1)"; then verdict="SLOW"; slow=$((slow + 1))
  fi
  worst=$(python3 -c "print(max($worst, $took))")
  echo "run $run: $served requests answered, SIGTERM, exit $code after ${took} s: $verdict"
  [[ $verdict == ok ]] || tail -3 "$work/alloxd.log"
done
echo "$runs runs: $crashes crashed, $slow took 5 s or more, slowest exit ${worst} s"
(( crashes == 0 && slow == 0 ))
