# SPDX-License-Identifier: Apache-2.0
# A cell run inside a Slurm job records the job (from SLURM_* in its environment) in cell.json
# and in the journal's cell events, for `migbench slurm status`; outside Slurm there is no "slurm".
# Array tasks that run at once into one directory each keep their own journal (--journal), and
# `run` on auto/nvml follows CUDA_VISIBLE_DEVICES to the GPU the scheduler gave the job.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
cat >"$TMP/exp.yaml" <<YAML
version: 1
name: slurmenv
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images}
runs:
  - {name: one, mode: exclusive, jobs: [a]}
measure: {warmup: 100ms, duration: 1s, sample_interval: 50ms, repetitions: 1}
YAML
SLURM_JOB_ID=77 SLURM_ARRAY_JOB_ID=70 SLURM_ARRAY_TASK_ID=3 SLURMD_NODENAME=n1 \
    run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/a"
unset SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURMD_NODENAME
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H100-80GB --results "$TMP/b"
python3 - "$TMP" <<'PY' || fail "slurm job in cell.json and journal"
import json, sys
t = sys.argv[1]
c = json.load(open(f"{t}/a/one/0/cell.json"))
assert c["slurm"] == {"job": "70_3", "job_id": "77", "array_job_id": "70",
                      "array_task_id": "3", "node": "n1"}, c.get("slurm")
ev = [json.loads(l) for l in open(f"{t}/a/journal.jsonl")]
started = [e for e in ev if e["event"] == "cell_started"]
assert started and started[0]["slurm"]["job"] == "70_3", started
c = json.load(open(f"{t}/b/one/0/cell.json"))
assert "slurm" not in c, c.get("slurm")
PY
# --journal: this invocation's own journal; two run at once into one directory.
cat >"$TMP/two.yaml" <<YAML
version: 1
name: two
workloads:
  hold: {command: ["$FX/fx_steady", --rate, "20", --release-dir, "$TMP/release"], unit: images}
runs:
  - {name: r, mode: exclusive, jobs: [hold]}
measure: {warmup: 2 steps, duration: completion, sample_interval: 50ms, repetitions: 2, progress_timeout: 60s}
YAML
mkdir -p "$TMP/release"
run 2 "$MIGBENCH" run "$TMP/two.yaml" --device emu:H100-80GB --results "$TMP/c" --cells 0 \
    --journal other.jsonl
expect_err "expected a NAME .* for journal-NAME.jsonl, or that file name"
run 2 "$MIGBENCH" run "$TMP/two.yaml" --device emu:H100-80GB --results "$TMP/c" --cells 0 \
    --journal ../t0
expect_err "expected a NAME"
# --journal NAME, as the help writes it, and the whole file name (what the Slurm script passes).
"$MIGBENCH" run "$TMP/two.yaml" --device emu:H100-80GB --results "$TMP/c" --cells 0 \
    --journal t0 >"$TMP/t0.out" 2>&1 &
t0=$!
wait_line "$TMP/c/journal-t0.jsonl" '"job_started"' || exit 1
"$MIGBENCH" run "$TMP/two.yaml" --device emu:H100-80GB --results "$TMP/c" --cells 1 \
    --journal journal-t1.jsonl >"$TMP/t1.out" 2>&1 &
t1=$!
wait_line "$TMP/c/journal-t1.jsonl" '"job_started"' || exit 1
for j in t0 t1; do
    pid=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "job_started": print(e["pid"])' "$TMP/c/journal-$j.jsonl")
    : >"$TMP/release/$pid"
done
wait "$t0" || fail "the first invocation failed: $(cat "$TMP/t0.out")"
wait "$t1" || fail "the second invocation, at the same time, failed: $(cat "$TMP/t1.out")"
[ -f "$TMP/c/r/0/cell.json" ] && [ -f "$TMP/c/r/1/cell.json" ] || fail "both cells recorded"
[ ! -e "$TMP/c/journal.jsonl" ] || fail "a journal.jsonl was written"
# Another experiment (other --set) does not join a directory whose journals are of this one.
run 2 "$MIGBENCH" run "$TMP/two.yaml" --device emu:H100-80GB --results "$TMP/c" --cells 1 \
    --journal journal-t2.jsonl --set measure.repetitions=3
expect_err 'different experiment file or --set options'

# On nvml (the fake, two GPUs), auto follows CUDA_VISIBLE_DEVICES to the job's GPU.
export MIGBENCH_NVML_LIBRARY="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
export MIGBENCH_FAKE_NVML_SPEC="A100-40GB;H100-80GB:index=1"
run 0 "$MIGBENCH" devices --json
U1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][1]["uuid"])' "$TMP/out")
CUDA_VISIBLE_DEVICES="$U1" run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device auto --results "$TMP/v"
expect_err "CUDA_VISIBLE_DEVICES=$U1: running on nvml:$U1"
python3 - "$TMP/v/one/0/cell.json" "$U1" <<'PY' || fail "the cell ran on the job's GPU"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["device"]["uuid"] == sys.argv[2], c["device"]
PY
finish
