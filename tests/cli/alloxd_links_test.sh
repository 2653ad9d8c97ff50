#!/usr/bin/env bash
# alloxd must not contain the emulator (extender/emulator/ is a test double), and no file of
# extender/ outside that folder may include it. Fails, never skips: nm comes with binutils,
# which scripts/install-deps.sh installs with g++.
#   alloxd_links_test.sh ALLOXD SOURCE_DIR
set -euo pipefail
alloxd=$1
src=$2
symbols=$(nm -C "$alloxd")
[[ -n $symbols ]] || { echo "nm found no symbols in $alloxd" >&2; exit 1; }
if grep -q 'allox::emulator::' <<<"$symbols"; then
  echo "alloxd links the emulator:" >&2
  grep -m 5 'allox::emulator::' <<<"$symbols" >&2
  exit 1
fi
grep -q 'allox::extender::ExtenderService' <<<"$symbols" ||
  { echo "nm shows no allox::extender symbols: is $alloxd alloxd?" >&2; exit 1; }
if includes=$(grep -rln '#include "extender/emulator/' "$src/extender" --include='*.h' \
  --include='*.cc' | grep -v "^$src/extender/emulator/"); then
  echo "extender/ includes the emulator:" >&2
  echo "$includes" >&2
  exit 1
fi
echo "alloxd: no emulator symbols; extender/ outside emulator/ does not include it"
