#!/usr/bin/env bash
# Regenerates the simulator's tables: every policy on the AlloX paper workload at 10, 15, 20 and
# 30 GPUs (as many CPU nodes), in three modes, one `allox simulate` per mode and size:
#   reference  the reference simulator's rules and the trace's estimates
#   trace      allox's rules, the trace's estimates
#   profiler   allox's rules, the profiler's estimates (allox as it would run)
# Two outputs:
#   - docs/sim-tables.md (or $ALLOX_SIM_FULL): each mode's whole table with its command (each
#     cell: avg JCT in s, then Jain's index of 1/ρ and the worst user's ρ);
#   - stdout: the summary table of docs/results.md's Simulator section, avg JCT only: the
#     profiler mode at each size, the reference mode at 20 GPUs and the reference simulator's
#     own figure (data/allox-google/REFERENCE.md).
# Runs land in $out/<mode>-<N>/ (summary.json, jobs.csv, comparison.csv). Long: on 2 cores, tens
# of minutes. Usage:
#   scripts/sim-tables.sh [build-dir] [out-dir]      (defaults: build, out/sim-tables)
#   ALLOX_SIM_SIZES="20" ALLOX_SIM_MODES="trace" scripts/sim-tables.sh   (a subset)
#   ALLOX_SIM_TABLES_ONLY=1 scripts/sim-tables.sh    (the tables from earlier runs)
#   ALLOX_SIM_FULL=/dev/null scripts/sim-tables.sh build-old out/sim-tables-old
#                                                    (a comparison run: docs/ left alone)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/sim-tables}
sizes=${ALLOX_SIM_SIZES:-10 15 20 30}
modes=${ALLOX_SIM_MODES:-reference trace profiler}
full=${ALLOX_SIM_FULL:-docs/sim-tables.md}
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

# cell MODE N POLICY FORMAT: one run's figures for a policy; FORMAT full gives "avg (jain, ρ)",
# avg the avg JCT alone. Thousands separated by commas, one decimal.
cell() {
  awk -F, -v p="$3" -v format="$4" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
    $1 == p && format == "full" { printf "%s (%.3f, %.2f)", fmt($col["avg_jct"]), $col["jain"], $col["max_rho"] }
    $1 == p && format == "avg" { printf "%s", fmt($col["avg_jct"]) }
    function fmt(x,   s) { s = sprintf("%.1f", x)
      while (match(s, /[0-9][0-9][0-9][0-9](\.|,)/)) { s = substr(s, 1, RSTART) "," substr(s, RSTART + 1) }
      return s }' "$out/$1-$2/comparison.csv"
}

policies_of() {  # mode: the policies of its first size's run, in the run's order
  awk -F, 'NR > 1 { print $1 }' "$out/$1-$(awk '{ print $1 }' <<<"$sizes")/comparison.csv"
}

# The whole tables, one per mode: rows are policies, columns the sizes.
{
  echo "# Simulator tables"
  echo
  echo "Written by \`scripts/sim-tables.sh\` (do not edit by hand): every policy on the AlloX paper"
  echo "workload at N GPUs + N CPU nodes, α = 0.1, profiling on; each cell is the avg JCT in"
  echo "simulated s, then Jain's index of 1/ρ and the worst user's ρ (ρ_u = Σ JCT / Σ isolated time"
  echo "of user u's jobs). The modes and what they mean: [results.md](results.md), \"Simulator\"."
  for mode in $modes; do
    echo
    echo "## $mode"
    echo
    echo '```'
    # The command as results.md shows it: wrapped before --gpus and --threads.
    command_for "$mode" N | sed -e 's/ --gpus/ \\\n    --gpus/' -e 's/ --threads/ \\\n    --threads/'
    echo '```'
    echo
    header="| policy |"; rule="|---|"
    for n in $sizes; do header+=" $n GPUs |"; rule+="---|"; done
    [[ $mode == reference ]] && { header+=" reference simulator, 20 GPUs |"; rule+="---|"; }
    echo "$header"; echo "$rule"
    for p in $(policies_of "$mode"); do
      row="| $p |"
      for n in $sizes; do row+=" $(cell "$mode" "$n" "$p" full) |"; done
      [[ $mode == reference ]] && row+=" $(reference_avg "$p") |"
      echo "$row"
    done
  done
} >"$full"
echo "wrote $full" >&2

# results.md's summary: avg JCT, the profiler mode at each size, the reference mode at 20 GPUs.
has() { [[ " $1 " == *" $2 "* ]]; }
if has "$modes" profiler; then
  header="| policy |"; rule="|---|"
  for n in $sizes; do header+=" $n GPUs |"; rule+="---|"; done
  if has "$modes" reference && has "$sizes" 20; then
    header+=" 20 GPUs, \`--rules reference\` | reference simulator, 20 GPUs |"; rule+="---|---|"
  fi
  echo "$header"; echo "$rule"
  for p in $(policies_of profiler); do
    row="| $p |"
    for n in $sizes; do row+=" $(cell profiler "$n" "$p" avg) |"; done
    if has "$modes" reference && has "$sizes" 20; then
      row+=" $(cell reference 20 "$p" avg) | $(reference_avg "$p") |"
    fi
    echo "$row"
  done
fi
