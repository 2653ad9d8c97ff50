#!/usr/bin/env bash
# Regenerates the tables of docs/results.md's Simulator section: every policy on the AlloX paper
# workload at 10, 15, 20 and 30 GPUs (as many CPU nodes), in three modes, one `allox simulate`
# per mode and size (the command is printed above each table, N = the row's size):
#   reference  the reference simulator's rules and the trace's estimates
#   trace      allox's rules, the trace's estimates
#   profiler   allox's rules, the profiler's estimates (allox as it would run)
# Runs land in $out/<mode>-<N>/ (summary.json, jobs.csv, comparison.csv); the tables print on
# stdout as Markdown. Long: on 2 cores, tens of minutes. Usage:
#   scripts/sim-tables.sh [build-dir] [out-dir]      (defaults: build, out/sim-tables)
#   ALLOX_SIM_SIZES="20" ALLOX_SIM_MODES="trace" scripts/sim-tables.sh   (a subset)
#   ALLOX_SIM_TABLES_ONLY=1 scripts/sim-tables.sh    (print the tables from earlier runs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/sim-tables}
sizes=${ALLOX_SIM_SIZES:-10 15 20 30}
modes=${ALLOX_SIM_MODES:-reference trace profiler}
trace=data/allox-google/jobs_input_10_Google.txt

mode_flags() {
  case $1 in
    reference) echo "--estimates trace --rules reference" ;;
    trace) echo "--estimates trace" ;;
    profiler) echo "--estimates profiler" ;;
    *) echo "unknown mode $1" >&2; exit 2 ;;
  esac
}

command_for() {  # mode N
  echo "$build/cli/allox simulate --trace $trace --gpus $2 --cpus $2 --policy all --alpha 0.1" \
       "--profiling $(mode_flags "$1") --threads 2 --no-progress --out $out/$1-$2"
}

if [[ -z ${ALLOX_SIM_TABLES_ONLY:-} ]]; then
  for mode in $modes; do
    for n in $sizes; do
      echo "+ $(command_for "$mode" "$n")" >&2
      $(command_for "$mode" "$n") >"$out-$mode-$n.log"
    done
  done
fi

# The reference simulator's avg JCT at 20 GPUs (data/allox-google/REFERENCE.md).
reference_avg() {
  case $1 in
    allox-a0.1) echo "139.09" ;; sjf) echo "135.00" ;; drf) echo "851.43" ;;
    drf-ext) echo "293.75" ;; drffifo) echo "2,967.71" ;; es) echo "1,148.79" ;;
    srpt) echo "96.61" ;; *) echo "–" ;;
  esac
}

# One Markdown table per mode: rows are policies, columns the sizes: avg JCT (s) and, in
# brackets, Jain's index of 1/ρ and max ρ.
for mode in $modes; do
  echo
  echo "#### $mode: \`$(command_for "$mode" N)\`"
  echo
  header="| policy |"; rule="|---|"
  for n in $sizes; do header+=" $n GPUs |"; rule+="---|"; done
  [[ $mode == reference ]] && { header+=" reference simulator, 20 GPUs |"; rule+="---|"; }
  echo "$header"; echo "$rule"
  policies=$(awk -F, 'NR > 1 { print $1 }' "$out/$mode-$(awk '{ print $1 }' <<<"$sizes")/comparison.csv")
  for p in $policies; do
    row="| $p |"
    for n in $sizes; do
      row+=$(awk -F, -v p="$p" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
        $1 == p { printf " %s (%.3f, %.2f) |", fmt($col["avg_jct"]), $col["jain"], $col["max_rho"] }
        function fmt(x,   s, r) { s = sprintf("%.1f", x); r = "";
          while (match(s, /[0-9][0-9][0-9][0-9](\.|,)/)) { s = substr(s, 1, RSTART) "," substr(s, RSTART + 1) }
          return s }' "$out/$mode-$n/comparison.csv")
    done
    [[ $mode == reference ]] && row+=" $(reference_avg "$p") |"
    echo "$row"
  done
done
