# Sourced by filter_load.sh and bench/filter_vs_nginx.sh: starts an alloxd with 100 nodes (one
# GPU and one 32-core CPU bundle each), fills all 200 machines through /filter + /bind, queues
# 1,000 more jobs from 8 users, and writes the measured request: a queued GPU pod's /filter
# naming all 100 nodes.
#   start_loaded_alloxd <build-dir> <policy> <work-dir>
# Sets alloxd_pid, alloxd_url; writes <work-dir>/body.json and <work-dir>/filter.lua (wrk script
# that POSTs it and prints p50/p99/max). Needs curl, python3.
source "$(dirname "${BASH_SOURCE[0]}")/alloxd_ready.sh"

start_loaded_alloxd() {
  local build=$1 policy=$2 work=$3
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  alloxd_url=http://127.0.0.1:$port
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
  alloxd_pid=$!
  wait_alloxd_ready "$work/alloxd.log" "$alloxd_pid"

  local nodes
  nodes=$(for i in $(seq 1 100); do printf '"node-%d",' "$i"; done)
  nodes="[${nodes%,}]"
  pod() {  # name user resource index; time hints are a function of the index
    local requests='{"cpu":"32"}'
    [[ $3 == gpu ]] && requests='{"nvidia.com/gpu":"1"}'
    printf '{"metadata":{"name":"%s","namespace":"%s","uid":"uid-%s","annotations":{"allox.io/time.gpu":"%d","allox.io/time.cpu":"%d"}},"spec":{"containers":[{"name":"main","resources":{"requests":%s}}]}}' \
      "$1" "$2" "$1" $((100 + $4 * 37 % 900)) $((400 + $4 * 53 % 3600)) "$requests"
  }
  # New pods wait for the next plan (up to a second on a loaded machine), so they go 20 at a
  # time (waiting on those 20, not on alloxd); the counts are checked at the end.
  echo "filling 200 machines and queueing 1,000 jobs..." >&2
  local i dev node batch=()
  for i in $(seq 1 200); do
    dev=gpu; [[ $((i % 2)) == 0 ]] && dev=cpu
    node=node-$(( (i + 1) / 2 ))
    (curl -sf -XPOST "$alloxd_url/filter" -d "{\"Pod\":$(pod "run-$i" "team-$((i % 8))" $dev $i),\"NodeNames\":[\"$node\"]}" > /dev/null &&
      curl -sf -XPOST "$alloxd_url/bind" -d "{\"PodName\":\"run-$i\",\"PodNamespace\":\"team-$((i % 8))\",\"Node\":\"$node\"}" > /dev/null) &
    batch+=($!)
    if (( ${#batch[@]} == 20 )); then wait "${batch[@]}" || true; batch=(); fi
  done
  for i in $(seq 1 1000); do
    dev=gpu; [[ $((i % 3)) == 0 ]] && dev=cpu
    curl -sf -XPOST "$alloxd_url/filter" -d "{\"Pod\":$(pod "queued-$i" "team-$((i % 8))" $dev $i),\"NodeNames\":$nodes}" > /dev/null &
    batch+=($!)
    if (( ${#batch[@]} == 20 )); then wait "${batch[@]}" || true; batch=(); fi
  done
  local queued running
  queued=$(curl -sf "$alloxd_url/metrics" | awk '/^allox_queue_length/ {print $2}')
  running=$(curl -sf "$alloxd_url/metrics" | awk '/^allox_running_jobs/ {print $2}')
  echo "queue length $queued, running $running" >&2
  if [[ $queued != 1000 || $running != 200 ]]; then
    echo "set-up failed: expected 1000 queued and 200 running" >&2
    return 1
  fi
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
}
