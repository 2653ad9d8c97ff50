#!/usr/bin/env bash
# alloxd's /filter against nginx serving a static file of the same bytes, same wrk, same run.
# alloxd: 100 nodes, 1,000 queued jobs, a queued GPU pod's /filter naming all 100
# nodes (tests/alloxd/load/filter_setup.sh). nginx: its Debian package, worker_processes auto,
# serving alloxd's answer to that request as a file. Each run measures alloxd then nginx, both
# with `wrk -t2 -c<connections> -d<duration>`; prints every run, the medians and their ratio
# (target: alloxd >= 0.5 x nginx). Each run also prints the CPU time each server spent per request
# (its processes' user + system time over the run, from /proc, divided by wrk's request count),
# and the ratio of those: on a shared machine req/s follows whoever else holds the cores, CPU
# per request much less so.
#   bench/filter_vs_nginx.sh [build-dir] [runs] [duration] [connections]
# Needs wrk, curl, python3, nginx (installed here from Debian when missing). Bounded: about
# runs x 2 x duration plus a minute of set-up.
set -euo pipefail
build=${1:-build}
runs=${2:-3}
duration=${3:-10s}
connections=${4:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
alloxd_pid=
nginx_pid=
trap '[[ -n $alloxd_pid ]] && kill "$alloxd_pid" 2>/dev/null; [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [[ ! -x $nginx ]]; then
  echo "installing nginx (Debian package) for the comparison" >&2
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx >&2
fi

source "$root/tests/alloxd/load/filter_setup.sh"
start_loaded_alloxd "$build" allox "$work"

# The static file: alloxd's answer to the measured request, byte for byte.
mkdir -p "$work/www" "$work/nginx"
curl -sf -XPOST "$alloxd_url/filter" --data-binary @"$work/body.json" > "$work/www/filter.json"
chmod -R a+rX "$work"
bytes=$(wc -c < "$work/www/filter.json")
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<CONF
worker_processes auto;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$nport;
    root $work/www;
    default_type application/json;
  }
}
CONF
"$nginx" -p "$work/nginx" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$nport/filter.json" > /dev/null && break; sleep 0.1; done
cmp -s "$work/www/filter.json" <(curl -sf "http://127.0.0.1:$nport/filter.json") ||
  { echo "nginx does not serve the file" >&2; exit 1; }
echo "reply: $bytes bytes; alloxd pid $alloxd_pid ($(grep -c ^processor /proc/cpuinfo) cores, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2

rate() { awk '/^Requests\/sec:/ {print $2}'; }
requests() { awk '/ requests in / {print $1}'; }
# CPU seconds (user + system) used so far by the given processes.
cpu_seconds() {
  local ticks=0 pid
  for pid in "$@"; do
    # Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    ticks=$((ticks + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  python3 -c "print($ticks / $(getconf CLK_TCK))"
}
nginx_pids() { echo "$nginx_pid" $(ps -o pid= --ppid "$nginx_pid"); }
per_request_us() { python3 -c "print(f'{($2 - $1) / $3 * 1e6:.1f}')"; }
alloxd_rates=() nginx_rates=() alloxd_cpus=() nginx_cpus=()
for run in $(seq 1 "$runs"); do
  before=$(cpu_seconds "$alloxd_pid")
  a=$(wrk -t2 -c"$connections" -d"$duration" --latency -s "$work/filter.lua" "$alloxd_url/filter")
  ac=$(per_request_us "$before" "$(cpu_seconds "$alloxd_pid")" "$(requests <<< "$a")")
  before=$(cpu_seconds $(nginx_pids))
  n=$(wrk -t2 -c"$connections" -d"$duration" --latency "http://127.0.0.1:$nport/filter.json")
  nc=$(per_request_us "$before" "$(cpu_seconds $(nginx_pids))" "$(requests <<< "$n")")
  alloxd_cpus+=("$ac"); nginx_cpus+=("$nc")
  for out in "$a" "$n"; do
    if grep -q "Non-2xx\|Socket errors" <<< "$out"; then echo "errors in a run:" >&2; echo "$out" >&2; fi
  done
  ar=$(rate <<< "$a"); nr=$(rate <<< "$n")
  alloxd_rates+=("$ar"); nginx_rates+=("$nr")
  printf 'run %d: alloxd /filter %10.0f req/s (%s)   nginx %10.0f req/s   ratio %.3f   load %s\n' \
    "$run" "$ar" "$(tail -1 <<< "$a")" "$nr" "$(python3 -c "print($ar / $nr)")" "$(cut -d' ' -f1 /proc/loadavg)"
  printf '       CPU per request: alloxd %s us, nginx %s us, ratio %.3f\n' \
    "$ac" "$nc" "$(python3 -c "print($nc / $ac)")"
done
python3 - "${alloxd_rates[*]}" "${nginx_rates[*]}" "${alloxd_cpus[*]}" "${nginx_cpus[*]}" <<'PY'
import statistics, sys
a, n, ac, nc = ([float(x) for x in arg.split()] for arg in sys.argv[1:5])
ma, mn = statistics.median(a), statistics.median(n)
mac, mnc = statistics.median(ac), statistics.median(nc)
print(f"median of {len(a)} runs: alloxd {ma:,.0f} req/s, nginx {mn:,.0f} req/s, "
      f"ratio {ma / mn:.3f} (target >= 0.5)")
print(f"CPU per request, median: alloxd {mac:.1f} us, nginx {mnc:.1f} us, ratio {mnc / mac:.3f}")
PY
