# SPDX-License-Identifier: Apache-2.0
# scripts/quickstart.sh keeps apt's and the build's output in build/quickstart-setup.log and says
# so: the terminal gets the log's name, install-deps's own lines and the run, not the setup noise;
# a failed setup prints the log's tail and its name and exits 1 without running anything. The
# script runs from a scratch tree that holds it next to stand-ins for install-deps.sh, build.sh and
# build/migbench (the script finds all three relative to itself), so nothing is installed or built.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
R=$TMP/repo
mkdir -p "$R/scripts" "$R/examples"
cp "$MB_SOURCE_DIR/scripts/quickstart.sh" "$R/scripts/"
cat >"$R/scripts/install-deps.sh" <<'SH'
#!/usr/bin/env bash
echo "Reading package lists... APT-NOISE"
echo "install-deps: waiting for the apt lock (held by stand-in)" >&2
echo "dpkg: APT-STDERR-NOISE" >&2
[ -z "${QS_INSTALL_FAILS:-}" ] || { echo "E: Unable to locate package INSTALL-ERROR" >&2; exit 100; }
SH
cat >"$R/scripts/build.sh" <<'SH'
#!/usr/bin/env bash
echo "-- Configuring done CMAKE-NOISE ($*)"
[ -z "${QS_BUILD_FAILS:-}" ] || { echo "cc: error: BUILD-ERROR" >&2; exit 2; }
mkdir -p build
printf '#!/bin/sh\necho "migbench-stand-in $*"\n' >build/migbench
chmod +x build/migbench
SH
chmod +x "$R/scripts/"*.sh
LOG=$R/build/quickstart-setup.log

run 0 "$R/scripts/quickstart.sh" --device host
[ -s "$LOG" ] || fail "no $LOG"
expect_err 'output in build/quickstart-setup\.log'
expect_err '^install-deps: waiting for the apt lock'
expect_err 'results go to results/quickstart$'
expect_out '^migbench-stand-in run examples/quickstart\.yaml --results results/quickstart --device host$'
for noise in APT-NOISE APT-STDERR-NOISE CMAKE-NOISE; do
    grep -q "$noise" "$LOG" || fail "the log lacks $noise"
    ! grep -q "$noise" "$TMP/out" "$TMP/err" || fail "$noise reached the terminal"
done
grep -q 'CMAKE-NOISE (-DMB_BUILD_TESTS=OFF' "$LOG" || fail "build.sh's options are not in the log"

# A second run appends to the log and writes the next results directory.
mkdir -p "$R/results/quickstart"
run 0 "$R/scripts/quickstart.sh"
expect_out 'results/quickstart-2$'
[ "$(grep -c CMAKE-NOISE "$LOG")" = 2 ] || fail "the second run's setup is not appended to the log"

# A failed build: its tail and the log's name, exit 1, and no run.
rm -f "$R/build/migbench"
QS_BUILD_FAILS=1 run 1 "$R/scripts/quickstart.sh"
expect_err 'BUILD-ERROR'
expect_err 'failed; the whole output is in build/quickstart-setup\.log'
expect_no_out
# A failed install (apt's exit 100) stops the script before the build.
QS_INSTALL_FAILS=1 run 1 "$R/scripts/quickstart.sh"
expect_err 'INSTALL-ERROR'
expect_err 'failed; the whole output is in build/quickstart-setup\.log'
expect_no_out
[ ! -e "$R/build/migbench" ] || fail "the build ran after a failed install"
finish
