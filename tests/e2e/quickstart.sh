# SPDX-License-Identifier: Apache-2.0
# The README's main job, trimmed in time: examples/quickstart.yaml through `migbench run` on the
# host CPU with real PyTorch training, then `migbench report` over its results. Checks that every
# cell that applies to the host finished with measured throughput for every job, that the
# GPU-only runs were skipped (not failed), and that the report reads the results back.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

# The windows are measured in steps, not seconds: on a loaded machine a job still gets its
# steps (it only takes longer), so every job has a throughput however busy the machine is.
res="$TMP/results"
run 0 "$MIGBENCH" run "$MB_SOURCE_DIR/examples/quickstart.yaml" --device host --results "$res" \
    --set 'measure.warmup=3 steps' --set 'measure.duration=12 steps'
expect_err "run 'mps' skipped"
expect_err "run 'mig-4-3' skipped"
expect_err '3 cells ok, 0 failed'
expect_out '^alone +exclusive'
expect_out '^shared +timeslice'
expect_out '^split +partition'

python3 - "$res" <<'PY' || fail "results are incomplete"
import json, os, sys
res = sys.argv[1]
want = {"alone": "exclusive", "shared": "timeslice", "split": "partition"}
for run, mode in want.items():
    cell = json.load(open(os.path.join(res, run, "0", "cell.json")))
    assert cell["status"] == "ok", (run, cell["failure"])
    assert cell["mode"] == mode
    assert cell["device"]["backend"] == "host"
    names = sorted(j["name"] for j in cell["jobs"])
    assert names == ["gpt2", "resnet18"], names
    for j in cell["jobs"]:
        tp = j["throughput"]["mean"]
        if tp is None or tp <= 0:
            # Say why: the job's record and the tail of its log.
            log = os.path.join(res, run, "0", j.get("log") or "")
            tail = open(log, errors="replace").read()[-1500:] if os.path.isfile(log) else ""
            print(json.dumps(j, indent=1)[:3000], "\n--- log tail ---\n", tail, file=sys.stderr)
        assert tp is not None and tp > 0, (run, j["name"], tp)
        assert j["steps"] > 0 and j["units"] > 0
        log = os.path.join(res, run, "0", j["log"])
        assert os.path.getsize(log) > 0, log
    # Energy on a host without RAPL is refused with a reason, never 0 J.
    e = cell["energy"]
    assert (e["counter_j"] is None) == (e["integrated_j"] is None) or e["refused_reason"]
    if e["counter_j"] is None and e["integrated_j"] is None:
        assert e["refused_reason"], e
    assert os.path.getsize(os.path.join(res, run, "0", "telemetry.csv")) > 0
    if run == "split":
        cpus = [j["cpus"] for j in cell["jobs"]]
        assert all(cpus) and not set(cpus[0]) & set(cpus[1]), cpus
events = [json.loads(l) for l in open(os.path.join(res, "journal.jsonl"))]
kinds = [e.get("event") for e in events]
assert kinds.count("cell_finished") == 3, kinds
PY

run 0 "$MIGBENCH" report "$res" --format json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d' "$TMP/out" || fail "report JSON"
run 0 "$MIGBENCH" report "$res"
expect_out 'timeslice'
finish
