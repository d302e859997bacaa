# SPDX-License-Identifier: Apache-2.0
# A cell run inside a Slurm job records the job (from SLURM_* in its environment) in cell.json
# and in the journal's cell events, for `migbench slurm status`; outside Slurm there is no "slurm".
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
finish
