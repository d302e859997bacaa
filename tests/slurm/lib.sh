# SPDX-License-Identifier: Apache-2.0
# Sourced by the Slurm tests (tests/slurm/test_*.sh): the CLI test helpers, plus slurm_up, which
# starts a one-node Slurm in $TMP/slurm (slurm-up.sh) and stops every daemon by PID when the test
# exits, however it exits. A machine without Slurm (or without root) skips with status 77.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
SLURM_DIR="$TMP/slurm"
PY=/usr/bin/python3
trap '"$MB_SOURCE_DIR/tests/slurm/slurm-down.sh" "$SLURM_DIR"; rm -rf "$TMP"' EXIT

slurm_up() {
    local rc=0
    MIGBENCH="$MIGBENCH" "$MB_SOURCE_DIR/tests/slurm/slurm-up.sh" "$SLURM_DIR" || rc=$?
    if [ "$rc" = 77 ]; then
        echo "SKIP: no Slurm here (install slurmctld slurmd slurm-client munge, run as root)" >&2
        exit 77
    fi
    [ "$rc" = 0 ] || { echo "FAIL: slurm-up.sh exited $rc" >&2; exit 1; }
    . "$SLURM_DIR/env"
}

# uuids_of TYPE: the MIG UUIDs slurm-up gave the node for that GRES type, one per line.
uuids_of() {
    awk -v t="$1" '$1 == t { print $3 }' "$SLURM_DIR/log/gres.out"
}

# job_state JOBID: its state as Slurm tells it (PENDING, RUNNING, COMPLETED, CANCELLED, ...).
job_state() {
    scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1
}

# wait_job JOBID: blocks until the job has ended (bounded; each poll asks slurmctld, a daemon).
wait_job() {
    local deadline=$((SECONDS + ${2:-120})) st
    while :; do
        st=$(job_state "$1")
        case $st in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL | "") return 0 ;;
        esac
        [ "$SECONDS" -lt "$deadline" ] || { fail "job $1 still $st"; return 1; }
        sleep 0.2
    done
}
