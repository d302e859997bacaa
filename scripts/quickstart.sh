#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main command: installs what is needed, builds, and runs the quickstart experiment
# (on the first NVIDIA GPU when NVML finds one, else on the host CPU), then prints its report.
# Extra arguments go to `migbench run` (e.g. --device host, --set measure.duration=60s).
#
# It builds into build/ and states every option it depends on, so that whatever configured
# build/ before (scripts/test.sh, a build by hand) cannot leave it in a state this script
# misreads, and this script cannot leave it in a state another misreads. Each invocation writes
# a new results directory (results/quickstart, then results/quickstart-2, ...): an earlier
# run's results are never replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
# apt's and the build's output goes to a log, not the terminal (the summary is what matters);
# install-deps's own lines (what it installs, a wait for a busy apt) still show, on the terminal's
# stderr (fd 3): a pipeline rather than a process substitution, so they arrive before the run
# starts and do not land in the log a second time.
mkdir -p build
log=build/quickstart-setup.log
echo "quickstart: installing what is needed and building; output in $log" >&2
exec 3>&2
setup() {
    ./scripts/install-deps.sh 2>&1 | tee -a "$log" |
        { grep --line-buffered '^install-deps:' >&3 || true; } &&
        BUILD_DIR=build ./scripts/build.sh -DMB_BUILD_TESTS=OFF -DMB_WERROR=OFF -DMB_SANITIZE= \
            >>"$log" 2>&1
}
if ! setup; then
    tail -n 25 "$log" >&2
    echo "quickstart: installing or building failed; the whole output is in $log" >&2
    exit 1
fi
exec 3>&-
res=results/quickstart
n=1
while [ -e "$res" ]; do
    n=$((n + 1))
    res=results/quickstart-$n
done
echo "quickstart: results go to $res" >&2
./build/migbench run examples/quickstart.yaml --results "$res" "$@"
