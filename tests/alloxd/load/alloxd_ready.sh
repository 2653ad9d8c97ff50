# Sourced by the load scripts here (and bench/filter_vs_nginx.sh through filter_setup.sh): waiting
# for alloxd, and free ports.
#   wait_alloxd_ready <log> <pid> [seconds]
# Returns once alloxd (process <pid>, stderr to <log>) has logged its one 'ready' line (the
# inventory read, a first plan: /readyz answers 200 from then on), instead of polling /readyz.
# `tail -F` follows the file through inotify and ends with alloxd (--pid); fails when alloxd
# exits or <seconds> (30) pass without the line.
wait_alloxd_ready() {
  local log=$1 pid=$2 seconds=${3:-30} line
  local ready='\] ready( |$)|"msg":"ready"'
  while IFS= read -r line; do
    [[ $line =~ $ready ]] && return 0
  done < <(timeout "$seconds" tail -n +1 -F --pid="$pid" "$log" 2>/dev/null)
  return 1
}

# A loopback TCP port that was free a moment ago.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
