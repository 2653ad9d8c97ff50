#!/usr/bin/env bash
# The main job (./dev run): alloxd with its embedded SQLite store and the example config on
# 127.0.0.1, and a replay that plays kube-scheduler (filter, prioritize, bind; completions as
# time passes) over the paper's 40-job, 4-user cluster experiment, sped up.
#   ALLOX_DEMO_SPEEDUP  simulated seconds per second (default 100: about a minute)
#   ALLOX_DEMO_LISTEN   alloxd's address (default 127.0.0.1:8888; port 0 picks a free one)
#   ALLOX_DEMO_STATE    folder for the store and the log (default run/)
set -euo pipefail
build_dir=${1:-build}
speedup=${ALLOX_DEMO_SPEEDUP:-100}
listen=${ALLOX_DEMO_LISTEN:-127.0.0.1:8888}
state_dir=${ALLOX_DEMO_STATE:-run}
mkdir -p "$state_dir"
# A fresh queue each time: the demo replays the whole experiment from t = 0.
rm -f "$state_dir"/demo.db "$state_dir"/demo.db-wal "$state_dir"/demo.db-shm

"$build_dir/cli/alloxd" --config examples/alloxd.yaml --listen "$listen" \
  --database "$state_dir/demo.db" --time-scale "$speedup" 2>"$state_dir/alloxd.log" &
alloxd_pid=$!
stop_alloxd() {
  kill -TERM "$alloxd_pid" 2>/dev/null || true
  wait "$alloxd_pid" 2>/dev/null || true
}
trap stop_alloxd EXIT
trap 'echo; echo "Ctrl-C: stopping alloxd"; exit 130' INT TERM

# Port 0 picks a free port: read the address alloxd announces.
url=""
for _ in $(seq 1 200); do
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$state_dir/alloxd.log" | head -1)
  [[ -n "$url" ]] && curl -fs "$url/readyz" >/dev/null 2>&1 && break
  if ! kill -0 "$alloxd_pid" 2>/dev/null; then
    echo "alloxd did not start:" >&2
    cat "$state_dir/alloxd.log" >&2
    exit 1
  fi
  sleep 0.1
done
listen=${url#http://}
echo "alloxd is up on http://$listen (store: $state_dir/demo.db, log: $state_dir/alloxd.log)"

"$build_dir/cli/allox" replay --config examples/alloxd.yaml --server "http://$listen" \
  --speedup "$speedup"

echo
echo "Status page:     http://$listen/"
echo "Fairness report: http://$listen/v1/fairness   Metrics: http://$listen/metrics"
if [[ -t 0 ]]; then
  echo "alloxd keeps serving the finished run; Ctrl-C stops it."
  wait "$alloxd_pid"
fi
