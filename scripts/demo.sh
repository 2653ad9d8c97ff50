#!/usr/bin/env bash
# The main job (./dev run): what allox does, end to end, with what is built so far.
set -euo pipefail
build_dir=${1:-build}
allox="$build_dir/cli/allox"
echo "== allox validate: the example cluster and jobs"
"$allox" validate examples/cluster.yaml examples/jobs.yaml
