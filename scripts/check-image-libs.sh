#!/usr/bin/env bash
# Checks that the Dockerfile's runtime stage installs every shared library the given binaries
# link, so a new dependency (Boost, spdlog, OpenSSL ...) cannot leave an image whose alloxd
# fails to start. For each library a binary names (ELF NEEDED, resolved by `ldd`), the Debian
# package that owns it (`dpkg -S`) must be named by an `apt-get install` in the last stage, or
# be one debian:12-slim already has; libraries those need come with the packages' Depends.
#   scripts/check-image-libs.sh Dockerfile build/cli/alloxd build/cli/allox
set -euo pipefail
dockerfile=$1
shift

# In debian:12-slim: libc and the C++ runtime and compression libraries dpkg and apt depend on.
base=(libc6 libgcc-s1 libstdc++6 zlib1g libzstd1 liblzma5 libbz2-1.0 libmd0 libselinux1
  libpcre2-8-0 libsystemd0 libgnutls30 libseccomp2 libcap2 libgcrypt20 libgpg-error0
  liblz4-1 libudev1)

# Packages the runtime stage installs: the words after `apt-get install` (options dropped) up to
# the end of that command, with line continuations joined.
runtime_stage=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' "$dockerfile")
listed=$(printf '%s' "$runtime_stage" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
  grep -oE 'apt-get install[^&;]*' | sed 's/apt-get install//' | tr ' ' '\n' |
  grep -vE '^(-|$)' || true)
if [[ -z $listed ]]; then
  echo "FAIL: no 'apt-get install' in the last stage of $dockerfile" >&2
  exit 1
fi

failed=0
links=()  # "binary soname path" for each library a binary names itself (ELF NEEDED); the
          # libraries those need come with their packages' Depends
for binary in "$@"; do
  [[ -x $binary ]] || { echo "FAIL: $binary is not an executable" >&2; exit 1; }
  ldd_out=$(ldd "$binary")
  if grep -q 'not found' <<<"$ldd_out"; then
    echo "FAIL: $binary: unresolved libraries:" >&2
    grep 'not found' <<<"$ldd_out" >&2
    failed=1
  fi
  for lib in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v lib="$lib" '$1 == lib && $2 == "=>" {print $3}' <<<"$ldd_out")
    [[ -n $path ]] && links+=("${binary##*/} $lib $path")
  done
done
((${#links[@]} > 0)) || { echo "FAIL: the binaries name no shared libraries" >&2; exit 1; }

# Owners in one dpkg query (it is slow on a loaded machine); with merged /usr a file may be
# registered under /lib or /usr/lib, so both spellings are asked.
paths=()
for link in "${links[@]}"; do
  path=${link##* }
  paths+=("$path" "$(readlink -f "$path")")
  [[ $path == /usr/lib/* ]] && paths+=("${path#/usr}")
  [[ $path == /lib/* ]] && paths+=("/usr$path")
done
declare -A owner
while IFS= read -r line; do  # "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3"
  package=${line%%: /*}
  file=${line#*: }
  package=${package%%:*}
  owner[$file]=${package%%,*}
done < <(dpkg -S "${paths[@]}" 2>/dev/null || true)

declare -A installed  # (a set, not `printf | grep -q`: with pipefail, grep's early exit
for package in "${base[@]}" $listed; do installed[$package]=1; done  # fails the printf)
checked=0
for link in "${links[@]}"; do
  read -r binary lib path <<<"$link"
  package="?"
  for candidate in "$path" "$(readlink -f "$path")" "${path#/usr}" "/usr$path"; do
    [[ -n ${owner[$candidate]:-} ]] && { package=${owner[$candidate]}; break; }
  done
  checked=$((checked + 1))
  [[ -n ${installed[$package]:-} ]] && continue
  echo "FAIL: $binary links $lib ($path, Debian package '$package');" \
    "the runtime stage of $dockerfile does not install it" >&2
  failed=1
done

# The build stage has every library header package developers build with (install-deps.sh),
# since CI compiles on a machine that has them all and would not notice one missing there.
first_stage=$(awk '/^FROM /{n++} n == 1' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
deps_script=$(dirname "$0")/install-deps.sh
for package in $(awk '/^packages=\(/{on=1; next} on && /^\)/{exit} on' "$deps_script" |
  sed 's/#.*//' | tr ' ' '\n' | grep -E '^lib.*-dev$|^nlohmann-json3-dev$|^googletest$'); do
  if ! grep -qE "(^|[[:space:]])$package([[:space:]]|$)" <<<"$first_stage"; then
    echo "FAIL: scripts/install-deps.sh installs $package but the build stage of $dockerfile does not" >&2
    failed=1
  fi
done
((failed == 0)) && echo "ok: $checked linked libraries installed by the runtime stage or the base image; the build stage has every -dev package of install-deps.sh"
exit $failed
