#!/usr/bin/env bash
# Installs every Debian package allox needs to build, test and run. Idempotent: packages that
# are already present are skipped, and `apt-get update` runs at most once per machine boot.
set -euo pipefail

packages=(
  cmake g++ make pkg-config ccache
  liblemon-dev libglpk-dev libboost-graph-dev libcpprest-dev libyaml-cpp-dev
  nlohmann-json3-dev libcli11-dev libsqlite3-dev libspdlog-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  gnuplot-nox wrk curl
)
if [[ "${ALLOX_BROWSER_TESTS:-1}" == "1" ]]; then
  packages+=(chromium)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
stamp=/tmp/.allox-apt-updated
if [[ ! -f $stamp ]]; then
  $sudo apt-get update -qq
  touch "$stamp"
fi
echo "installing: ${missing[*]}" >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
