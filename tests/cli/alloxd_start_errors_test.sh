#!/usr/bin/env bash
# alloxd refuses to start on an unusable database path, a listener it cannot bind, or a config it
# cannot use: each case exits non-zero (never a crash: 139 is SIGSEGV, 134 SIGABRT) within a
# bound, with its cause on stderr. A config that names some other file never has that file's
# contents echoed.
set -u
alloxd=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME WANT_CODE CAUSE -- ARGS...: runs alloxd with ARGS under a 20 s bound; the exit code
# must be WANT_CODE and stderr must contain CAUSE (a fixed string).
expect() {
  local name=$1 want=$2 cause=$3
  shift 4
  timeout 20 "$alloxd" "$@" >"$work/out" 2>"$work/err" </dev/null
  local code=$?
  if [[ $code -eq 124 ]]; then
    fail "$name: still running after 20 s"
  elif [[ $code -ne $want ]]; then
    fail "$name: exit $code, want $want; stderr: $(head -c 2000 "$work/err")"
  elif ! grep -qF -- "$cause" "$work/err"; then
    fail "$name: stderr does not say '$cause': $(head -c 2000 "$work/err")"
  else
    echo "ok: $name: exit $code: $(grep -F -- "$cause" "$work/err" | head -1 | cut -c1-200)"
  fi
}

config() {  # config FILE DATABASE [EXTRA-LINES]
  printf 'listen: 127.0.0.1:0\ndatabase: "%s"\nnodes: [{name: n1, machines: {gpu: 1}}]\n%s' \
    "$2" "${3:-}" >"$1"
}

# The database path.
config "$work/missing-dir.yaml" "$work/no/such/dir/alloxd.db"
expect "database in a missing directory" 1 "$work/no/such/dir does not exist" -- \
  --config "$work/missing-dir.yaml"
mkdir "$work/a-directory"
config "$work/dir.yaml" "$work/a-directory"
expect "database is a directory" 1 "'$work/a-directory' as the database: it is a directory" -- \
  --config "$work/dir.yaml"
config "$work/devnull.yaml" /dev/null
expect "database is /dev/null" 1 "'/dev/null' as the database: it is not a regular file" -- \
  --config "$work/devnull.yaml"
head -c 4096 /dev/urandom >"$work/not-sqlite.db"
config "$work/not-sqlite.yaml" "$work/not-sqlite.db"
expect "database is not SQLite" 1 "'$work/not-sqlite.db' as the database: file is not a database" -- \
  --config "$work/not-sqlite.yaml"
# --database overrides the config's, and is checked the same way.
expect "--database names a directory" 1 "it is a directory" -- \
  --config "$work/not-sqlite.yaml" --database "$work/a-directory"

# Listeners: 192.0.2.1 (TEST-NET-1) is no address of this host.
config "$work/ok.yaml" ":memory:"
expect "listen cannot bind" 1 "listen: cannot listen on 192.0.2.1:8888" -- \
  --config "$work/ok.yaml" --listen 192.0.2.1:8888
config "$work/reports.yaml" ":memory:" "reports_listen: 192.0.2.1:9090"$'\n'
expect "reports_listen cannot bind" 1 "reports_listen: cannot listen on 192.0.2.1:9090" -- \
  --config "$work/reports.yaml"

# The config itself.
: >"$work/empty.yaml"
expect "empty config" 2 "$work/empty.yaml:1: the config is empty" -- --config "$work/empty.yaml"
mkfifo "$work/fifo.yaml"
expect "config is a FIFO" 2 "$work/fifo.yaml: is a FIFO, expected a regular file" -- \
  --config "$work/fifo.yaml"
config "$work/tick.yaml" ":memory:" "tick: 1e-300"$'\n'
expect "absurd tick" 2 "$work/tick.yaml:4: tick must be a number of seconds from 0.05 to 3600" -- \
  --config "$work/tick.yaml"
config "$work/twice.yaml" ":memory:" "database: other.db"$'\n'
expect "duplicate key" 2 "$work/twice.yaml:4: duplicate key \"database\" (first on line 2)" -- \
  --config "$work/twice.yaml"
# A config symlinked to a secret: refused, and not a byte of the secret shown.
printf 'SECRET-LINE-ONE-8d1f\nSECRET-LINE-TWO-77aa\n' >"$work/secret"
ln -s "$work/secret" "$work/linked.yaml"
expect "config is a secret file" 2 "$work/linked.yaml:1: not an alloxd config" -- \
  --config "$work/linked.yaml"
grep -q SECRET "$work/err" && fail "the secret file's contents were echoed: $(cat "$work/err")"
printf 'password: SECRET-VALUE-1c2d\n' >"$work/secret.yaml"
expect "config is a YAML secret" 2 "not an alloxd config" -- --config "$work/secret.yaml"
grep -q SECRET "$work/err" && fail "the YAML secret was echoed: $(cat "$work/err")"

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all start-up errors refused cleanly"
