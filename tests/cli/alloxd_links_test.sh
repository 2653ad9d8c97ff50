#!/usr/bin/env bash
# Neither alloxd nor allox contains the emulator (kubesim/ is a test double with its own binary),
# and no file of alloxd/, cli/ or extender_api/ includes it. Fails, never skips: nm comes with
# binutils, which scripts/install-deps.sh installs with g++.
#   alloxd_links_test.sh ALLOXD ALLOX SOURCE_DIR
set -euo pipefail
alloxd=$1
allox=$2
src=$3
for binary in "$alloxd" "$allox"; do
  symbols=$(nm -C "$binary")
  [[ -n $symbols ]] || { echo "nm found no symbols in $binary" >&2; exit 1; }
  if grep -q 'allox::emulator::' <<<"$symbols"; then
    echo "$binary links the emulator:" >&2
    grep -m 5 'allox::emulator::' <<<"$symbols" >&2
    exit 1
  fi
done
grep -q 'allox::extender::ExtenderService' <<<"$(nm -C "$alloxd")" ||
  { echo "nm shows no allox::extender symbols: is $alloxd alloxd?" >&2; exit 1; }
if includes=$(grep -rln '#include "kubesim/' "$src/alloxd" "$src/cli" "$src/extender_api" \
  --include='*.h' --include='*.cc'); then
  echo "these include the emulator:" >&2
  echo "$includes" >&2
  exit 1
fi
echo "alloxd and allox: no emulator symbols; alloxd/, cli/ and extender_api/ do not include it"
