#!/usr/bin/env bash
# Checks that two runs of scripts/sim-tables.sh scheduled every job the same: each policy's
# jobs.csv in every <mode>-<N>/ run of the first directory must be byte-identical to the same
# file in the second. Meant for changes that must not move a schedule (a faster matcher, a
# cheaper decision): run sim-tables.sh with the old binary and with the new one, then
#   scripts/sim-same.sh out/sim-tables-old out/sim-tables
# Prints one line per differing or missing file and a count; exits 1 if any differs, 2 if the
# first directory holds no runs.
set -euo pipefail
old=${1:?usage: scripts/sim-same.sh OLD_OUT NEW_OUT}
new=${2:?usage: scripts/sim-same.sh OLD_OUT NEW_OUT}

same=0
differ=0
while IFS= read -r file; do
  rel=${file#"$old"/}
  if [[ ! -f $new/$rel ]]; then
    echo "missing: $new/$rel"
    differ=$((differ + 1))
  elif cmp -s "$file" "$new/$rel"; then
    same=$((same + 1))
  else
    echo "differs: $rel ($(diff "$file" "$new/$rel" | grep -c '^<' || true) lines)"
    differ=$((differ + 1))
  fi
done < <(find "$old" -name jobs.csv | sort)

if ((same + differ == 0)); then
  echo "no jobs.csv under $old" >&2
  exit 2
fi
echo "$same jobs.csv identical, $differ differing or missing"
((differ == 0))
