#!/usr/bin/env bash
# alloxd logs through core/log.h as its config asks: with `log: {format: json}` every stderr line
# is one JSON object (request threads, listening, ready, SIGTERM, stop); a bad log level is refused at start-up naming the
# field, in klog's text form, with exit status 2. Lines are read as they come (a FIFO), not polled.
set -u
alloxd=$1
work=$(mktemp -d)
pid=""
trap '[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cat >"$work/alloxd.yaml" <<YAML
listen: 127.0.0.1:0
database: ":memory:"
nodes: [{name: n1, machines: {gpu: 2}}]
log: {level: info, format: json}
YAML
mkfifo "$work/log"
"$alloxd" --config "$work/alloxd.yaml" 2>"$work/log" &
pid=$!
exec 3<"$work/log"
ts='"ts":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"'
# First the class of the threads that answer kube-scheduler (request_threads: normal by default),
# said before any thread starts, with the reason.
if ! read -r -t 30 -u 3 line; then
  fail "request threads line: none within 30 s"
elif ! [[ $line =~ ^\{$ts,\"level\":\"info\",\"logger\":\"alloxd\",\"msg\":\"request\ threads\",\"class\":\"normal\",\"reason\":\"request_threads:\ normal\"\}$ ]]; then
  fail "request threads line: $line"
fi
# Then two start-up lines, in either order: "ready" once the first plan is out (the planner thread),
# and "listening on" once the HTTP server is up (the main thread).
listening=0 ready=0
for _ in 1 2; do
  if ! read -r -t 30 -u 3 line; then
    fail "start-up lines: none within 30 s"
    break
  fi
  if [[ $line =~ ^\{$ts,\"level\":\"info\",\"logger\":\"alloxd\",\"msg\":\"listening\ on\ http://127\.0\.0\.1:[0-9]+\",\"policy\":\"allox\",\"nodes\":1,\"machines\":2,\"queued\":0,\"running\":0,\"database\":\":memory:\"\}$ ]]; then
    listening=$((listening + 1))
  elif [[ $line =~ ^\{$ts,\"level\":\"info\",\"logger\":\"alloxd\",\"msg\":\"ready\",\"nodes\":1,\"machines\":2,\"queued\":0,\"running\":0\}$ ]]; then
    ready=$((ready + 1))
  else
    fail "start-up line: $line"
  fi
done
[[ $listening -eq 1 && $ready -eq 1 ]] || fail "start-up: $listening listening and $ready ready lines, want one each"
kill -TERM "$pid"
rest=()
while read -r -t 30 -u 3 line; do rest+=("$line"); done
wait "$pid"
status=$?
pid=""
[[ $status -eq 0 ]] || fail "SIGTERM: exit $status"
[[ ${#rest[@]} -eq 2 ]] || fail "after SIGTERM: ${#rest[@]} lines, want 2: ${rest[*]}"
[[ ${rest[0]:-} =~ ^\{$ts,\"level\":\"info\",\"logger\":\"alloxd\",\"msg\":\"stopping\",\"signal\":\"SIGTERM\"\}$ ]] ||
  fail "stopping line: ${rest[0]:-}"
[[ ${rest[1]:-} =~ ^\{$ts,\"level\":\"info\",\"logger\":\"alloxd\",\"msg\":\"stopped\"\}$ ]] ||
  fail "stopped line: ${rest[1]:-}"
exec 3<&-

printf 'listen: 127.0.0.1:0\nlog: {level: loud}\n' >"$work/bad.yaml"
err=$("$alloxd" --config "$work/bad.yaml" 2>&1 >/dev/null)
status=$?
[[ $status -eq 2 ]] || fail "bad log level: exit $status, want 2"
[[ $err =~ ^E[0-9]{4}\ [0-9:.]{15}\ alloxd\]\ .*bad\.yaml:2:\ log:\ level\ must\ be\ one\ of\ debug,\ info,\ warn,\ error,\ got\ \"loud\"$ ]] ||
  fail "bad log level message: $err"

if ((failures)); then exit 1; fi
echo "alloxd logs JSON lines on request; a bad log level is refused naming the field"
