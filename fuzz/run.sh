#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time (./dev fuzz [SECONDS] builds them and calls
# this). Each target starts from its seed corpus (seeds.sh) plus what earlier runs found (its
# corpus/ folder under the build tree, kept between runs). A crash, sanitizer report, timeout
# or 5xx leaves the input in <bin_dir>/work/<target>/artifacts/ and fails the run; copy it into
# fuzz/regressions/<target>/ with the fix so ctest replays it from then on.
#   fuzz/run.sh BIN_DIR [SECONDS] [TARGET ...]     FUZZ_RUNS=N caps the inputs per target too
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
seconds=${2:-60}
shift $(($# < 2 ? $# : 2))
root=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
((${#targets[@]} > 0)) || targets=(fuzz_wire fuzz_pod fuzz_node fuzz_config fuzz_routes fuzz_admission fuzz_workload fuzz_cluster
  fuzz_trace fuzz_validate)

failed=()
for target in "${targets[@]}"; do
  work=$bin_dir/work/$target
  rm -rf "$work/seeds"
  mkdir -p "$work/corpus" "$work/artifacts"
  "$root/fuzz/seeds.sh" "$target" "$work/seeds"
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
    -print_final_stats=1 -artifact_prefix="$work/artifacts/")
  [[ -n ${FUZZ_RUNS:-} ]] && options+=(-runs="$FUZZ_RUNS")
  case $target in
    fuzz_config) options+=(-dict="$root/fuzz/yaml.dict") ;;
    fuzz_workload | fuzz_cluster | fuzz_trace | fuzz_validate) options+=(-dict="$root/fuzz/planner.dict") ;;
    *) options+=(-dict="$root/fuzz/json.dict") ;;
  esac
  echo "== $target: ${seconds}s" >&2
  start=$(date +%s)
  if "$bin_dir/$target" "${options[@]}" "$work/corpus" "$work/seeds" >"$work/log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$target")
    grep -E "ERROR|SUMMARY|fuzz_[a-z]+:|Test unit written" "$work/log" | head -20 >&2 || true
  fi
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$work/log" | grep -oE '[0-9]+$' || echo "?")
  echo "$target: $status, $runs inputs in $(($(date +%s) - start))s, corpus $(find "$work/corpus" -type f | wc -l) files, log $work/log" >&2
done
if ((${#failed[@]} > 0)); then
  echo "fuzzing found problems in: ${failed[*]} (inputs in $bin_dir/work/<target>/artifacts/)" >&2
  exit 1
fi
