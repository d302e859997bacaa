# examples/quickstart.yaml on the host CPU with short windows: two real PyTorch training jobs
# (an image classifier and a GPT-2) under timeslice and partition, through `migbench run`.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
EX="$MB_SOURCE_DIR/examples/quickstart.yaml"
[ -r "$EX" ] || { echo "skip: no $EX"; exit 0; }

run 0 "$MIGBENCH" run "$EX" --device host --results "$TMP/res" --only shared,split \
    --set measure.warmup=5s --set measure.duration=8s --set measure.progress_timeout=90s
if grep -q "found no interpreter that can 'import torch'" "$TMP/err"; then
    echo "skip: no Python with torch"
    exit 0
fi
expect_out '^shared +timeslice +1/1 +resnet18 +[0-9.]+ .*images/s'
expect_out '^split +partition +1/1 +resnet18'
python3 - "$TMP/res" <<'PY' || fail "cell.json checks"
import json, sys
bad = []
for run in ("shared", "split"):
    c = json.load(open(f"{sys.argv[1]}/{run}/0/cell.json"))
    if c["status"] != "ok":
        bad.append(f"{run}: {c['failure']}")
    units = [j["throughput"]["unit_per_s"] for j in c["jobs"]]
    if units != ["images/s", "tokens/s"]:
        bad.append(f"{run}: units {units}")
    for j in c["jobs"]:
        if not (j["throughput"]["mean"] and j["throughput"]["mean"] > 0):
            bad.append(f"{run}/{j['name']}: no throughput")
        if "{python}" in j["argv"][0] or not j["argv"][1].endswith(".py"):
            bad.append(f"{run}/{j['name']}: argv {j['argv'][:2]}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
finish
