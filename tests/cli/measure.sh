# SPDX-License-Identifier: Apache-2.0
# migbench measure: exit-status passthrough, signals, JSON, CSV, progress, on emu: and host.
# MB_TEST_THREADS: the meter thread runs during every measurement, so CI repeats this under TSan.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
: "${MB_BINARY_DIR:?}"
FX="$MB_BINARY_DIR/fixtures"
# The devices to measure on; MB_MEASURE_DEVICES overrides (space-separated specs).
DEVICES=${MB_MEASURE_DEVICES:-"emu:H100-80GB:load=0.5 host"}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# json_get FILE EXPR: evaluates a Python expression over the parsed JSON (as j).
json_get() {
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
expect_json() {
    local got
    got=$(json_get "$TMP/out" "$1" 2>&1) || got="(error: $got)"
    [ "$got" = "$2" ] || fail "json: $1 = '$got', expected '$2'"
}

# Usage errors: exit 2, nothing on stdout, no command run.
run 0 "$MIGBENCH" measure --help
expect_out 'usage: migbench measure'
run 2 "$MIGBENCH" measure
expect_err 'no command given'
run 2 "$MIGBENCH" measure --interval 0.5ms -- true
expect_err "interval '0.5ms'"
run 2 "$MIGBENCH" measure --interval 11s -- true
run 2 "$MIGBENCH" measure --warmup tenseconds -- true
expect_err "warmup 'tenseconds'"
# The documented duration syntax: ns/us/ms/s/m or a bare number of seconds, at most a day; the
# warm-up also takes Nsteps. Options are read before --help answers, so each is checked alone.
for ok in "--interval 0.001" "--interval 1ms" "--idle 2" "--idle 1.5m" "--idle 24h" \
    "--warmup 20steps" "--warmup 0steps" "--warmup 3" "--min-window 500us"; do
    # shellcheck disable=SC2086 # the option and its value are two words
    run 0 "$MIGBENCH" measure $ok --help
done
for bad in "--idle 25h" "--idle -1s" "--idle 5x" "--idle nan" "--min-window 0"; do
    # shellcheck disable=SC2086
    run 2 "$MIGBENCH" measure $bad -- true
done
run 2 "$MIGBENCH" measure --samples-per-step 8 -- true
expect_err 'goes with --progress-regex'
run 2 "$MIGBENCH" measure --progress-regex 'iter ([0-9]+' -- true
expect_err 'bad progress regex'
run 2 "$MIGBENCH" measure --bogus -- true
expect_err "unknown option '--bogus'"
run 2 "$MIGBENCH" measure --csv
expect_err 'needs a value'
run 2 "$MIGBENCH" measure --device 'nosuchbackend:0' -- true
expect_no_out

for dev in $DEVICES; do
    M=("$MIGBENCH" measure --device "$dev" --interval 20ms --min-window 100ms)

    # The command's exit status, as timeout(1) passes it on.
    run 0 "${M[@]}" -- "$FX/fx_steady" --rate 50 --duration 0.3
    expect_err 'Measurement of'
    expect_err 'exit status   0'
    run 3 "${M[@]}" -- "$FX/fx_steady" --duration 0 --exit 3
    run 139 "${M[@]}" -- "$FX/fx_crash" 11
    run 127 "${M[@]}" -- no-such-command-for-migbench
    expect_err "cannot run 'no-such-command-for-migbench'"
    printf '#!/bin/sh\nexit 0\n' >"$TMP/noexec"
    chmod 644 "$TMP/noexec"
    run 126 "${M[@]}" -- "$TMP/noexec"
    run 126 "${M[@]}" -- /
    # The command's own options are not ours, with or without "--".
    run 4 "${M[@]}" sh -c 'exit 4' --json

    # SIGINT to migbench reaches the command: it dies of it and we say so (128+2). The signal is
    # sent once the command has written its first line (seen through migbench's copy of its
    # stdout), not after a sleep.
    # Each run writes its own files: a line left by an earlier run must not look like this one's.
    "${M[@]}" --progress-regex '^iter ([0-9]+)' -- "$FX/fx_steady" --stdout --duration 600 \
        >"$TMP/int.out" 2>"$TMP/int.err" &
    pid=$!
    wait_line "$TMP/int.out" '^iter 1 '
    kill -INT "$pid"
    got=0
    wait "$pid" || got=$?
    [ "$got" = 130 ] || fail "$dev: SIGINT: exit $got, expected 130"
    rm -f "$TMP/int.out" "$TMP/int.err"
    # SIGTERM: fx_steady stops cleanly on it, so the status is its own 0.
    "${M[@]}" --progress-regex '^iter ([0-9]+)' -- "$FX/fx_steady" --stdout --duration 600 \
        >"$TMP/term.out" 2>"$TMP/term.err" &
    pid=$!
    wait_line "$TMP/term.out" '^iter 1 '
    kill -TERM "$pid"
    got=0
    wait "$pid" || got=$?
    [ "$got" = 0 ] || fail "$dev: SIGTERM: exit $got, expected 0"
    rm -f "$TMP/term.out" "$TMP/term.err"

    # --json: valid JSON on stdout only; the command's stdout moved to stderr.
    run 0 "${M[@]}" --json --warmup 0.1s --csv "$TMP/t.csv" -- "$FX/fx_steady" --rate 40 --duration 1
    "$PY" -m json.tool "$TMP/out" >/dev/null || fail "$dev: --json output is not JSON"
    expect_json 'j["exit_code"]' 0
    expect_json 'j["progress"]["records"]' 40
    expect_json 'j["progress"]["unit"]' samples
    expect_json 'j["throughput"]["per_s"] > 2000 and j["throughput"]["per_s"] < 3200' True
    expect_json 'j["sampling"]["csv"] is not None' True
    expect_json 'j["device"]["spec"]' "$dev"
    # The steady window starts after the warm-up and ends with the job, never later.
    expect_json 'j["steady"] is None or j["steady"]["duration_s"] <= j["energy"]["duration_s"] - 0.09' True
    head -1 "$TMP/t.csv" | grep -q '^t_ns,t_s,read_ok,power_mw,' || fail "$dev: CSV header"
    rows=$(($(wc -l <"$TMP/t.csv") - 1))
    expect_json "j['sampling']['samples'] == $rows" True
    case $dev in
    emu:*)
        expect_json 'j["device"]["emulated"]' True
        expect_err 'EMULATED'
        expect_json 'j["energy"]["counter_j"] > 0' True
        expect_json 'j["energy"]["integral_j"] > 0' True
        expect_json 'j["energy"]["gap_rel"] is not None' True
        expect_json 'j["energy_per_unit_j"] > 0' True
        ;;
    *)
        # host: figures where RAPL is readable, null (never 0) where not.
        expect_json 'j["energy"]["counter_j"] is None or j["energy"]["counter_j"] > 0' True
        expect_json 'j["energy"]["integral_j"] is None or j["energy"]["integral_j"] > 0' True
        ;;
    esac

    # A window too short for the sensor: no energy figure, a reason, never 0 J.
    run 0 "$MIGBENCH" measure --device "$dev" --json -- true
    expect_json 'j["energy"]["counter_j"]' None
    expect_json 'j["energy"]["integral_j"]' None
    expect_json 'j["energy"]["mean_power_w"]' None
    expect_json 'j["energy"]["reason"] is not None' True
    expect_err 'energy        n/a counter, n/a integrated'
    case $dev in
    emu:*)
        expect_json 'j["energy"]["refused"]' True
        expect_json '"shorter than the sensor" in j["energy"]["reason"]' True
        ;;
    esac

    # Progress from stdout by regex; the output still reaches the user.
    run 0 "${M[@]}" --progress-regex '^iter ([0-9]+)' --samples-per-step 32 --unit images -- \
        "$FX/fx_steady" --stdout --rate 40 --duration 0.5
    expect_out '^iter 20 '
    expect_err 'work          20 steps, 640 images'
    expect_err 'images/s'

    # Garbage on the progress pipe is counted, never fatal.
    run 0 "${M[@]}" --json -- "$FX/fx_garbage"
    expect_json 'j["progress"]["records"]' 3
    expect_json 'j["progress"]["garbage"]' 2
    expect_json 'j["progress"]["overlong"]' 1
    expect_json 'j["progress"]["partial"]' 1
    expect_json 'j["progress"]["rejected"]' 1

    # Idle baseline: static + dynamic = the job's energy.
    run 0 "${M[@]}" --json --idle 0.3s -- "$FX/fx_steady" --rate 20 --duration 0.3
    case $dev in
    emu:*)
        expect_json 'j["idle"]["mean_power_w"] > 0' True
        expect_json 'abs(j["static_energy_j"] + j["dynamic_energy_j"] - (j["energy"]["counter_j"] if j["energy"]["counter_j"] is not None else j["energy"]["integral_j"])) < 1e-6' True
        ;;
    esac
done

# A device lost during the job: no energy figure, a reason, and the job's own exit status.
run 5 "$MIGBENCH" measure --device 'emu:H100-80GB:lost_after=10' --json -- \
    "$FX/fx_steady" --duration 2 --exit 5
expect_json 'j["energy"]["counter_j"]' None
expect_json 'j["energy"]["truncated"]' True
expect_json 'j["sampling"]["read_failures"] > 0' True
expect_json 'j["exit_code"]' 5

# The real NVML path (dlopen) against the fake libnvidia-ml.so.1 when it is built.
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
if [ -f "$FAKE" ]; then
    MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_FAKE_NVML_SPEC="H100-80GB:load=0.6" \
        run 3 "$MIGBENCH" measure --device nvml:0 --json -- "$FX/fx_steady" --duration 1.2 --exit 3
    expect_json 'j["device"]["backend"]' nvml
    expect_json 'j["energy"]["counter_j"] > 0 and j["energy"]["integral_j"] > 0' True
    expect_json 'j["energy"]["gap_flag"]' False
fi

finish
