#!/usr/bin/env bash
# Regenerates docs/results.md's multi-GPU table: a synthetic workload after Gavel (2,000 jobs,
# Poisson arrivals, models and scale factors 1/2/4/8 from Gavel's throughput table, 8 users) on
# 48 GPUs of three types, two 8-GPU nodes each of K80, P100 and V100, at arrival rates from light
# to overloaded; allox, fifo, sjf, las, maxmin and drf, one `allox simulate` per rate (printed on
# stderr). Decisions use the trace's estimates (±20% error). Runs land in $out/rate-<R>/; the
# table prints on stdout as Markdown: avg JCT (s), makespan (s), Jain's index of 1/ρ, worst ρ,
# and for allox the gap of its multi-unit plans (cost over lower bound, summed over its solves).
# Usage:
#   scripts/gavel-multi-gpu.sh [build-dir] [out-dir]   (defaults: build, out/gavel-multi-gpu)
#   ALLOX_GAVEL_RATES="0.002" scripts/gavel-multi-gpu.sh   (a subset)
#   ALLOX_GAVEL_TABLE_ONLY=1 scripts/gavel-multi-gpu.sh    (print the table from earlier runs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-out/gavel-multi-gpu}
rates=${ALLOX_GAVEL_RATES:-0.002 0.004 0.006 0.008 0.012}
policies=allox,fifo,sjf,las,maxmin,drf

command_for() {  # rate
  echo "$build/cli/allox simulate --synthetic 2000 --multi-device --users 8 --rate $1 --seed 1" \
       "--machines k80=2x8 --machines p100=2x8 --machines v100=2x8 --policy $policies" \
       "--alpha 0.1 --estimates trace --threads 2 --no-progress --out $out/rate-$1"
}

if [[ -z ${ALLOX_GAVEL_TABLE_ONLY:-} ]]; then
  mkdir -p "$out"
  for r in $rates; do
    echo "+ $(command_for "$r")" >&2
    $(command_for "$r") >"$out/rate-$r.log"
  done
fi

echo "| jobs/s | policy | avg JCT (s) | makespan (s) | Jain of 1/ρ | worst ρ | plan gap |"
echo "|---|---|---|---|---|---|---|"
for r in $rates; do
  dir=$out/rate-$r
  awk -F, -v rate="$r" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { printf "| %s | %s | %.0f | %.0f | %.3f | %.2f |", rate, $col["policy"], $col["avg_jct"],
      $col["makespan"], $col["jain"], $col["max_rho"]; print "" }' "$dir/comparison.csv" |
  while IFS= read -r row; do
    policy=$(awk -F'|' '{ gsub(/ /, "", $3); print $3 }' <<<"$row")
    gap="–"
    summary=$(ls -d "$dir"/"$policy"*/summary.json 2>/dev/null | head -1 || true)
    if [[ -n $summary ]] && jq -e '.plan' "$summary" >/dev/null; then
      gap=$(jq -r '.plan | "\(.gap * 100 | . * 10 | round / 10)% (worst \(.worst_gap * 100 | round)%)"' "$summary")
    fi
    echo "$row $gap |"
  done
done
