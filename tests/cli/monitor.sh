# SPDX-License-Identifier: Apache-2.0
# migbench monitor: plain lines when piped, JSON lines, MIG instance rows, the in-place refresh
# on a terminal (tmux, capture-pane), the real NVML path through the fake library, bad options.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
command -v tmux >/dev/null || { echo "FAIL: tmux is needed (install-deps.sh --test)" >&2; exit 1; }
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -r "$FAKE" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
export MIGBENCH_RUNTIME_DIR="$TMP/rt"
DEV="emu:H100-80GB:mig=on"

# Bad input: usage errors, exit status 2, nothing on stdout.
run 2 "$MIGBENCH" monitor --count 0 -d "$DEV"
expect_err "count '0'"
expect_no_out
run 2 "$MIGBENCH" monitor --plain --json -d "$DEV"
expect_err "do not go together"
run 2 "$MIGBENCH" monitor --interval 1ms -d "$DEV"
expect_err "interval '1ms'"
run 2 "$MIGBENCH" monitor -d emu:NO-SUCH-GPU
expect_err "NO-SUCH-GPU"
run 2 "$MIGBENCH" monitor --bogus
expect_err "unknown option '--bogus'"
run 2 "$MIGBENCH" monitor extra
run 0 "$MIGBENCH" monitor --help
expect_out "--prometheus FILE"

# Piped: one plain line per device per sample, no escape codes, unknown values as '-'.
run 0 "$MIGBENCH" monitor -d "$DEV" --count 3 --interval 100ms
[ "$(wc -l <"$TMP/out")" -eq 3 ] || fail "expected 3 plain lines, got $(wc -l <"$TMP/out")"
expect_out '^t=0\.000 gpu=0 device=emu:H100-80GB:mig=on backend=emu emulated=yes power=[0-9.]+W '
expect_out ' avg_window=1000ms energy=[0-9.]+J energy_source=counter util=- mem_util=- '
expect_out ' mig=on instances=0 procs=0$'
if grep -q $'\033' "$TMP/out"; then fail "plain output holds escape codes"; fi

# MIG instances made through the state file show up per instance.
STATE="emu:H100-80GB:mig=on,state=$TMP/gpu.json"
cat >"$TMP/mig.yaml" <<YAML
version: v1
mig-configs:
  mix:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
YAML
# Throttle reasons by name, not as a bit mask: a loaded emulated GPU capped at 300 W.
run 0 "$MIGBENCH" monitor -d emu:H100-80GB:load=1:limit_w=300 --count 1 --plain
expect_out ' throttle=sw_power_cap '
run 0 "$MIGBENCH" monitor -d emu:H100-80GB --count 1 --plain
expect_out ' throttle=none '
run 0 "$MIGBENCH" mig apply "$TMP/mig.yaml" --device "$STATE"
run 0 "$MIGBENCH" monitor -d "$STATE" --count 1 --plain
expect_out ' mig=on instances=3 gi[0-9]+=3g\.40gb,mem=0MiB,sm=[0-9]+%,procs=0 '
expect_out 'gi[0-9]+=1g\.10gb'

# JSON lines: one object per sample, unknown values null, energy since start grows.
run 0 "$MIGBENCH" monitor -d "$STATE" --count 2 --interval 200ms --json
python3 - "$TMP/out" <<'PY' || fail "JSON lines"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
s = [json.loads(l) for l in lines]
assert [x["seq"] for x in s] == [1, 2]
g0, g1 = s[0]["gpus"][0], s[1]["gpus"][0]
assert g0["emulated"] is True and g0["backend"] == "emu"
assert g0["util_gpu_pct"] is None, "NVML has no utilisation with MIG on: null, not 0"
assert g0["power_kind"] == "averaged" and g0["power_avg_window_ms"] == 1000
assert g0["energy_since_start_j"] == 0 and g1["energy_since_start_j"] > 0, (g0, g1)
assert g1["energy_source"] == "counter"
prof = sorted(i["profile"] for i in g1["instances"])
assert prof == ["1g.10gb", "2g.20gb", "3g.40gb"], prof
assert all(i["sm_util_pct"] is not None for i in g1["instances"])
assert g1["processes"] == [] and g1["runs"] == []
PY

# The real NVML path (dlopen) through the fake library: auto finds its GPU.
MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_FAKE_NVML_SPEC="A100-40GB" \
    run 0 "$MIGBENCH" monitor --count 1 --plain
expect_out '^t=0\.000 gpu=0 device=nvml:0 backend=nvml power=[0-9.]+W '

# On a terminal: the frame is redrawn in place. Wait (bounded) until a third sample is on
# screen, then the pane and its scroll-back hold exactly one header: frames are not appended.
SOCK="$TMP/tmux.sock"
tm() { tmux -S "$SOCK" "$@"; }
# The pane's output is copied to a file (pipe-pane) before monitor starts, and the test wakes on
# what is written there (wait_line follows it with inotify), not on a polling loop.
tm new-session -d -s mon -x 160 -y 50 \
    "read go; '$MIGBENCH' monitor -d '$DEV' -d '$STATE' --interval 200ms; echo MONITOR-EXITED \$?; read x"
tm pipe-pane -t mon -o "cat >>'$TMP/tty'"
tm send-keys -t mon Enter
wait_line "$TMP/tty" 'sample ([3-9]|[1-9][0-9]+) '
tm capture-pane -p -t mon >"$TMP/pane"
tm capture-pane -p -S - -t mon >"$TMP/all"
[ "$(grep -c '^migbench monitor ' "$TMP/all")" -eq 1 ] ||
    fail "expected one header in the pane and its history (in-place refresh)"
grep -q "^GPU 0  NVIDIA H100 80GB HBM3 (emulated: modelled numbers)  \[$DEV\]" "$TMP/pane" ||
    fail "no line for GPU 0"
grep -q '^GPU 1  NVIDIA H100 80GB HBM3 (emulated' "$TMP/pane" || fail "no line for GPU 1"
grep -q '^  MIG      on, 0 instances$' "$TMP/pane" || fail "GPU 0 has MIG on and no instances"
grep -Eq '^ +[0-9]+ +0 +3g\.40gb ' "$TMP/pane" || fail "no 3g.40gb instance row"
grep -q 'power .*(averaged, 1000 ms window)' "$TMP/pane" || fail "no power line with its window"
if grep -q '^t=' "$TMP/pane"; then fail "plain lines on a terminal"; fi
# Ctrl-C ends it with status 0 and the cursor shown again.
tm send-keys -t mon C-c
wait_line "$TMP/tty" 'MONITOR-EXITED [0-9]+'
tm capture-pane -p -t mon >"$TMP/pane"
grep -q "MONITOR-EXITED 0" "$TMP/pane" || fail "monitor did not exit 0 on Ctrl-C"
tm kill-server 2>/dev/null || true
finish
