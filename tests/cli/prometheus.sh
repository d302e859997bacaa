# SPDX-License-Identifier: Apache-2.0
# Prometheus textfiles from monitor, run and measure: promtool check metrics (only dcgm-exporter's
# own naming findings accepted), no whole-GPU power or energy on MIG rows, per-job attributed
# energies summing to the GPU's energy over the same windows; and monitor showing a live run.
# Starts threads (MB_TEST_THREADS): run and measure sample the device on the meter thread while
# the exporter reads it from the main thread.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
command -v promtool >/dev/null || { echo "FAIL: promtool is needed (package prometheus)" >&2; exit 1; }
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
CHECK="$MB_SOURCE_DIR/tests/cli/prom_check.py"
export MIGBENCH_RUNTIME_DIR="$TMP/rt"
STATE="emu:H100-80GB:mig=on,state=$TMP/gpu.json"

# monitor --prometheus with MIG instances: DCGM names on the GPU row, MIG rows without power.
cat >"$TMP/mig.yaml" <<YAML
version: v1
mig-configs:
  mix:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1, "2g.20gb": 1}
YAML
run 0 "$MIGBENCH" mig apply "$TMP/mig.yaml" --device "$STATE"
run 0 "$MIGBENCH" monitor -d "$STATE" --count 2 --interval 100ms --prometheus "$TMP/mon.prom"
run 0 python3 "$CHECK" "$TMP/mon.prom"
grep -Eq '^DCGM_FI_DEV_POWER_USAGE\{gpu="0",UUID="GPU-[0-9a-f-]+",device="emu0",modelName="NVIDIA H100 80GB HBM3",Hostname="[^"]+",backend="emu"\} 70$' \
    "$TMP/mon.prom" || fail "DCGM_FI_DEV_POWER_USAGE row"
grep -Eq '^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{.*\} [0-9]+$' "$TMP/mon.prom" || fail "energy mJ"
grep -Eq '^DCGM_FI_DEV_FB_USED\{.*GPU_I_ID="[0-9]+",GPU_I_PROFILE="3g\.40gb"\} 0$' "$TMP/mon.prom" ||
    fail "MIG FB_USED row"
grep -q '^# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter$' "$TMP/mon.prom" || fail "counter"
for f in "$TMP"/mon.prom.tmp*; do
    [ -e "$f" ] && fail "temporary file left next to the textfile: $f"
done

# The checker itself catches what it is there for.
sed 's/^\(DCGM_FI_DEV_FB_USED{.*GPU_I_PROFILE="3g.40gb"}\) 0$/&\nDCGM_FI_DEV_POWER_USAGE{gpu="0",GPU_I_ID="1"} 5/' \
    "$TMP/mon.prom" >"$TMP/bad1.prom"
run 1 python3 "$CHECK" "$TMP/bad1.prom"
expect_err "whole-GPU DCGM_FI_DEV_POWER_USAGE on a MIG instance row"
sed '0,/^migbench_device_up{/s//migbench_device_up 1 1700000000000\n&/' "$TMP/mon.prom" >"$TMP/bad2.prom"
run 1 python3 "$CHECK" "$TMP/bad2.prom"
printf '# HELP x_total y\n# TYPE x_total counter\nx_total 1\n# HELP x_total y\n' >"$TMP/bad3.prom"
run 1 python3 "$CHECK" "$TMP/bad3.prom"
expect_err "second HELP"
printf '# HELP migbench_x_seconds_count y\n# TYPE migbench_x_seconds_count gauge\nmigbench_x_seconds_count 1\n' >"$TMP/bad4.prom"
run 1 python3 "$CHECK" "$TMP/bad4.prom"
expect_err "promtool"

# run --prometheus while monitor watches: the run's cell, jobs and throughput on its GPU.
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: promtest
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: mix, mode: mig, layout: [4g.40gb, 1g.10gb, 2g.20gb], jobs: [a, b, b]}
  - {name: ts, mode: timeslice, jobs: [a, b]}
measure: {warmup: 200ms, duration: 5200ms, sample_interval: 50ms, grace: 1s, progress_timeout: 10s, repetitions: 2}
YAML
run 0 "$MIGBENCH" mig clear --device "$STATE"
# A textfile that cannot be written stops the run before anything is made or run.
run 1 "$MIGBENCH" run "$TMP/exp.yaml" --device "$STATE" --results "$TMP/nores" \
    --prometheus "$TMP/no/such/dir/run.prom"
expect_err "--prometheus $TMP/no/such/dir/run.prom: .*No such file or directory"
[ ! -e "$TMP/nores" ] || fail "a failed --prometheus left a results directory"
run 125 "$MIGBENCH" measure --device emu:A100-40GB --prometheus "$TMP/no/such/dir/m.prom" -- \
    touch "$TMP/ran"
[ ! -e "$TMP/ran" ] || fail "measure ran its command although --prometheus failed"
"$MIGBENCH" run "$TMP/exp.yaml" --device "$STATE" --results "$TMP/res" --only mix,ts \
    --set measure.repetitions=1 --prometheus "$TMP/run.prom" >"$TMP/run.out" 2>"$TMP/run.err" &
RUN_PID=$!
# Synchronised on the event itself: the first sample showing the run in its window with a rate.
timeout 120 "$MIGBENCH" monitor -d "$STATE" --json --interval 100ms |
    grep -m1 '"phase":"window".*"rate":[0-9]' >"$TMP/live.json" || true
rc=0
wait $RUN_PID || rc=$?
[ "$rc" = 0 ] || { fail "run exited $rc"; cat "$TMP/run.err" >&2; }
python3 - "$TMP/live.json" <<'PY' || fail "monitor did not show the live run"
import json, sys
s = json.loads(open(sys.argv[1]).read())
runs = s["gpus"][0]["runs"]
assert len(runs) == 1, runs
r = runs[0]
assert r["experiment"] == "promtest" and r["run"] in ("mix", "ts") and r["phase"] == "window", r
assert r["cells"] == 2 and r["window_target_s"] == 5.2, r
assert any(j["rate"] and j["unit"] for j in r["jobs"]), r["jobs"]
PY
[ -z "$(ls -A "$TMP/rt")" ] || fail "the run left its live file behind"
run 0 python3 "$CHECK" "$TMP/run.prom" --results "$TMP/res"
expect_out "run mix: .* = sum over jobs for compute-share, equal"
expect_out "run ts: .* = sum over jobs for equal"

# measure --prometheus: the command's energy, labelled with its method and source.
run 0 "$MIGBENCH" measure --device emu:A100-40GB --prometheus "$TMP/measure.prom" -- \
    "$FX/fx_steady" --rate 20 --duration 1.2
run 0 python3 "$CHECK" "$TMP/measure.prom"
grep -Eq '^migbench_job_energy_joules_total\{job="[^"]*fx_steady",method="interval",source="counter",backend="emu",UUID="GPU-[0-9a-f-]+"\} [0-9.]+$' \
    "$TMP/measure.prom" || fail "measure's job energy row"
finish
