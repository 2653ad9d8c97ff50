#!/usr/bin/env bash
# allox simulate --es-pick: which of a user's jobs a free machine of its part takes under es.
# A hand-worked trace, one user owning the whole cluster (1 GPU, 1 CPU node), two jobs arriving
# at 0, both faster on the GPU:
#
#   job  cpu  gpu
#   a     30   10
#   b     50   20
#
# shortest-there (the default, the paper's ES): the shortest (job, free device) pair first, a on
#   the GPU (10 s); then the free CPU node takes the user's job shortest there, b (50 s).
#   JCTs 10 and 50, avg 30.
# head: jobs by their time on their fastest type, a then b, each only on the GPU: a at 0, b
#   waits behind it and starts on the GPU at 10. JCTs 10 and 30, avg 20; no job on the CPU.
# A bad value is refused with a message naming the option.
set -u
allox=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
count=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

trace=$work/trace.csv
cat >"$trace" <<'EOF'
job,user,arrival,time.cpu,time.gpu
a,u,0,30,10
b,u,0,50,20
EOF

# run NAME ARGS...: simulate es on the trace into $work/NAME; prints nothing, fails loudly.
run() {
  local name=$1; shift
  if ! out=$("$allox" simulate --trace "$trace" --gpus 1 --cpus 1 --policy es --no-progress \
               --out "$work/$name" "$@" 2>&1); then
    fail "allox simulate --policy es $*: $out"
    return 1
  fi
}

# field JOBS_CSV JOB COLUMN: the named column of the job's row in jobs.csv (empty if none).
field() {
  awk -F, -v job="$2" -v col="$3" '
    NR == 1 { for (i = 1; i <= NF; ++i) if ($i == col) c = i; next }
    $1 == job && c { print $c }' "$1"
}

# expect NAME JOB DEVICE JCT: the job ran on DEVICE and completed JCT seconds after arriving.
expect() {
  local csv=$work/$1/jobs.csv
  count=$((count + 1))
  [[ -f $csv ]] || { fail "$1: no jobs.csv"; return; }
  local device jct
  device=$(field "$csv" "$2" device)
  jct=$(awk -v f="$(field "$csv" "$2" finish)" -v a="$(field "$csv" "$2" arrival)" \
          'BEGIN { if (f == "" || a == "") print ""; else print f - a }')
  [[ $device == "$3" ]] || fail "$1: job $2 ran on '$device', want $3"
  awk -v got="$jct" -v want="$4" 'BEGIN { exit !(got + 0 == want + 0) }' ||
    fail "$1: job $2 JCT '$jct', want $4"
}

if run default; then
  expect default a gpu 10
  expect default b cpu 50
fi
if run shortest --es-pick shortest-there; then
  expect shortest a gpu 10
  expect shortest b cpu 50
fi
if run head --es-pick head; then
  expect head a gpu 10
  expect head b gpu 30
  count=$((count + 1))
  grep -q 'es-pick head' <<<"$out" || fail "head: the run's header does not name es-pick head: $out"
fi

# A bad value: non-zero exit, the message names --es-pick and its values.
count=$((count + 1))
if err=$("$allox" simulate --trace "$trace" --gpus 1 --cpus 1 --policy es --no-progress \
           --es-pick tail 2>&1 >/dev/null); then
  fail "accepted: --es-pick tail"
elif ! grep -q -- '--es-pick' <<<"$err" || ! grep -q 'head' <<<"$err"; then
  fail "--es-pick tail: message does not name the option and its values: $err"
fi

echo "$((count - failures)) of $count checks passed"
exit $((failures > 0))
