#!/usr/bin/env bash
# Load test for alloxd's /filter (docs/results.md): 100 nodes, 1,000 queued jobs, one
# filter request naming all 100 nodes, replayed by wrk on loopback.
#   tests/extender/load/filter_load.sh [build-dir] [policy] [wrk duration]
# Needs: wrk, curl. Starts its own alloxd on a free port with a throw-away database.
set -euo pipefail
build=${1:-build}
policy=${2:-allox}
duration=${3:-20s}
connections=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
{
  echo "listen: 127.0.0.1:$port"
  echo "database: $work/alloxd.db"
  echo "policy: $policy"
  echo "tick: 2"
  echo "admin_token: load"
  echo "nodes:"
  for i in $(seq 1 100); do echo "  - {name: node-$i, machines: {gpu: 1, cpu: 1}}"; done
} > "$work/alloxd.yaml"
"$build/cli/alloxd" --config "$work/alloxd.yaml" 2> "$work/alloxd.log" &
pid=$!
for _ in $(seq 100); do curl -sf "$url/readyz" > /dev/null && break; sleep 0.1; done

nodes=$(for i in $(seq 1 100); do printf '"node-%d",' "$i"; done)
nodes="[${nodes%,}]"
pod() {  # name user resource index; time hints are a function of the index
  local requests='{"cpu":"32"}'
  [[ $3 == gpu ]] && requests='{"nvidia.com/gpu":"1"}'
  printf '{"metadata":{"name":"%s","namespace":"%s","uid":"uid-%s","annotations":{"allox.io/time.gpu":"%d","allox.io/time.cpu":"%d"}},"spec":{"containers":[{"name":"main","resources":{"requests":%s}}]}}' \
    "$1" "$2" "$1" $((100 + $4 * 37 % 900)) $((400 + $4 * 53 % 3600)) "$requests"
}

# Fill all 200 machines (one GPU and one CPU bundle per node), then queue 1,000 more jobs.
echo "filling 200 machines and queueing 1,000 jobs..." >&2
for i in $(seq 1 200); do
  dev=gpu; [[ $((i % 2)) == 0 ]] && dev=cpu
  node=node-$(( (i + 1) / 2 ))
  curl -sf -XPOST "$url/filter" -d "{\"Pod\":$(pod "run-$i" "team-$((i % 8))" $dev $i),\"NodeNames\":[\"$node\"]}" > /dev/null
  curl -sf -XPOST "$url/bind" -d "{\"PodName\":\"run-$i\",\"PodNamespace\":\"team-$((i % 8))\",\"Node\":\"$node\"}" > /dev/null
done
for i in $(seq 1 1000); do
  dev=gpu; [[ $((i % 3)) == 0 ]] && dev=cpu
  curl -sf -XPOST "$url/filter" -d "{\"Pod\":$(pod "queued-$i" "team-$((i % 8))" $dev $i),\"NodeNames\":$nodes}" > /dev/null
done
queued=$(curl -sf "$url/metrics" | awk '/^allox_queue_length/ {print $2}')
running=$(curl -sf "$url/metrics" | awk '/^allox_running_jobs/ {print $2}')
echo "queue length $queued, running $running" >&2

# The measured request: a queued job's pod against all 100 nodes.
printf '{"Pod":%s,"Nodes":null,"NodeNames":%s}' "$(pod queued-500 team-4 gpu 500)" "$nodes" > "$work/body.json"
cat > "$work/filter.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/body.json"); wrk.body = f:read("*a"); f:close()
done = function(summary, latency, requests)
  io.write(string.format("p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
LUA
answer=$(curl -sf -XPOST "$url/filter" --data-binary @"$work/body.json")
echo "one answer: ${answer:0:160}..." >&2
wrk -t2 -c"$connections" -d"$duration" --latency -s "$work/filter.lua" "$url/filter"
curl -sf "$url/metrics" | grep -E "^allox_(solve_duration_seconds_(sum|count)|requests_total\{verb=\"filter\"|request_duration_seconds_(sum|count)\{verb=\"filter\")"
