# SPDX-License-Identifier: Apache-2.0
# Every GPU of a node at once (migbench run --device emu:H100-80GB:count=4): cells on different
# GPUs run at the same time (shown by the journal's event order: the jobs run until the test
# releases them, no timer), each GPU switches its own MIG mode, each GPU's state file holds only
# its own cells' instances, repetitions are spread over GPUs (or pinned), the report names the
# GPUs and matches a serial run's but for measured and wall-clock figures.
# Its migbench runs worker threads: MB_TEST_THREADS.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: node
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"], unit: images}
  b: {command: ["$FX/fx_steady", --rate, "10", --release-dir, "$TMP/release"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a]}
  - {name: ts, mode: timeslice, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [4g.40gb, 3g.40gb], jobs: [a, b]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, grace: 1s, progress_timeout: 60s, repetitions: 2}
YAML
mkdir -p "$TMP/release"

job_pids() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: e = json.loads(l)
    except ValueError: continue
    if e.get("event") == "job_started": print(int(e["pid"]))' "$1" 2>/dev/null || true
}
release() { for p in $(job_pids "$1"); do : >"$TMP/release/$p"; done; }
cleanup_jobs() { for p in $(job_pids "$1"); do kill -KILL -- "-$p" 2>/dev/null || true; done; }
releaser=
stop_releaser() {
    [ ! -s "$TMP/releaser.tail" ] || kill "$(cat "$TMP/releaser.tail")" 2>/dev/null || true
    [ -z "$releaser" ] || kill "$releaser" 2>/dev/null || true
}
trap 'stop_releaser; cleanup_jobs "$TMP/r4/journal.jsonl"; cleanup_jobs "$TMP/r1/journal.jsonl"; rm -rf "$TMP"' EXIT

J="$TMP/r4/journal.jsonl"
"$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:count=4,state=$TMP/node.json" \
    --results "$TMP/r4" --manage-mig-mode >"$TMP/out4" 2>"$TMP/err4" &
pid=$!

# Four cells started, on four GPUs, before any cell ended: they overlap.
wait_line "$J" '"cell_started"' 4
wait_line "$J" '"job_started"' 6 # alone: 1 job x 2, ts: 2 jobs x 2
grep -q '"cell_finished"' "$J" && fail "a cell finished before the jobs were released"
python3 - "$J" <<'PY' || fail "the first four cells are not on four GPUs"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
gpus = [e["gpu_uuid"] for e in ev if e["event"] == "cell_started"]
assert len(set(gpus)) == 4, gpus
PY
release "$J"
# The mig cells run after their GPU's switch; while they run, each GPU's state file holds only
# the instances of its own cell.
wait_line "$J" '"job_started"' 10
python3 - "$J" "$TMP" <<'PY' || fail "state files: instances on the wrong GPU"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
made = {}
for e in ev:
    if e["event"] == "mig_created" and "ci_id" not in e:
        made.setdefault(e["gpu_uuid"], set()).add(e["gi_id"])
mix_gpus = {e["gpu_uuid"] for e in ev if e["event"] == "cell_started" and e["run"] == "mix"}
assert len(mix_gpus) == 2, mix_gpus
for i in range(4):
    s = json.load(open(f"{sys.argv[2]}/node.{i}.json"))
    gis = {g["id"] for g in s["gpu_instances"]}
    if s["uuid"] in mix_gpus:
        assert s["mig_current"] == 1 and gis == made[s["uuid"]] and len(gis) == 2, (i, s, made)
    else:
        assert s["mig_current"] == 0 and gis == set(), (i, s)
PY
release "$J"
wait $pid || fail "4-GPU run exited $?"
grep -Eq '^alone +exclusive +2/2' "$TMP/out4" || fail "4-GPU run: alone not 2/2"
grep -Eq '^mix +mig +2/2' "$TMP/out4" || fail "4-GPU run: mix not 2/2"
[ "$(grep -c '"event":"mig_mode_original"' "$J")" = 2 ] || fail "expected two GPUs switched"
for i in 0 1 2 3; do
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert (s["mig_current"], s["mig_pending"], s["gpu_instances"]) == (0, 0, [])' \
        "$TMP/node.$i.json" || fail "GPU $i not left as found"
done
python3 - "$TMP/r4" <<'PY' || fail "repetitions not spread over GPUs, or cell.json without the GPU"
import json, sys
for run in ("alone", "ts", "mix"):
    u = [json.load(open(f"{sys.argv[1]}/{run}/{r}/cell.json"))["device"]["uuid"] for r in (0, 1)]
    assert u[0] != u[1] and all(x.startswith("GPU-") for x in u), (run, u)
PY

# The same cells on one GPU, one after another (the jobs released as they start; the journal
# exists before the run so that the releaser follows it from its first line, hence --resume).
J1="$TMP/r1/journal.jsonl"
mkdir -p "$TMP/r1"
: >"$J1"
(
    exec {fd}< <(exec tail -n +1 -F "$J1" 2>/dev/null)
    echo $! >"$TMP/releaser.tail"
    while IFS= read -r -u "$fd" line; do
        case $line in *'"job_started"'*) release "$J1" ;; esac
    done
) &
releaser=$!
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H100-80GB:state=$TMP/one.json" \
    --results "$TMP/r1" --manage-mig-mode --resume
stop_releaser

# The reports: the same runs, jobs, instances and cell counts; measured figures and times differ.
run 0 "$MIGBENCH" report --format json "$TMP/r4"
cp "$TMP/out" "$TMP/rep4.json"
run 0 "$MIGBENCH" report --format json "$TMP/r1"
python3 - "$TMP/rep4.json" "$TMP/out" <<'PY' || fail "4-GPU report differs from the serial one"
import json, sys
def shape(path):
    e = json.load(open(path))["experiments"][0]
    out = [e["experiment"], e["experiment_sha"], e["device"].get("model")]
    for r in e["runs"]:
        keep = [r[k] for k in ("name", "mode", "layout", "cells_ok", "cells_failed",
                               "has_baseline", "default_attribution")]
        jobs = [[j[k] for k in ("name", "workload", "unit", "instance", "compute_weight")]
                for j in r["jobs"]]
        cells = [(c["rep"], c["status"]) for c in r["cells"]]
        out.append((keep, jobs, cells))
    return out
a, b = shape(sys.argv[1]), shape(sys.argv[2])
assert a == b, (a, b)
PY
run 0 "$MIGBENCH" report "$TMP/r4"
expect_out 'cells ran on 4 GPUs'
expect_out 'board spread: alone a per-GPU throughput'

# --pin-repetitions keeps a run's repetitions on one GPU (fixed-length cells, no release needed).
sed -e 's/duration: completion/duration: 300ms/' -e 's/warmup: 2 steps/warmup: 100ms/' \
    -e 's/, --release-dir, "[^"]*"//' "$TMP/exp.yaml" >"$TMP/quick.yaml"
run 0 "$MIGBENCH" run "$TMP/quick.yaml" --device emu:H100-80GB:count=2 --results "$TMP/rp" --only alone,ts --pin-repetitions
python3 - "$TMP/rp" <<'PY' || fail "--pin-repetitions: repetitions on different GPUs"
import json, sys
for run in ("alone", "ts"):
    u = [json.load(open(f"{sys.argv[1]}/{run}/{r}/cell.json"))["device"]["uuid"] for r in (0, 1)]
    assert u[0] == u[1], (run, u)
PY

# --dry-run: the estimate for the GPUs given.
run 0 "$MIGBENCH" run "$TMP/quick.yaml" --device emu:H100-80GB:count=2 --dry-run
expect_out '^estimated duration on 2 GPUs: '
# GPUs of different models are not one run.
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
if [ -r "$FAKE" ]; then
    MIGBENCH_NVML_LIBRARY="$FAKE" MIGBENCH_FAKE_NVML_SPEC="H100-80GB;A100-40GB" \
        run 2 "$MIGBENCH" run "$TMP/quick.yaml" --device nvml:0,1 --results "$TMP/rx"
    expect_err 'one run compares GPUs of one model'
    [ ! -e "$TMP/rx" ] || fail "a refused run created its results directory"
fi
finish
