# SPDX-License-Identifier: Apache-2.0
# Hostile input (issue 12): files and options another user could hand migbench are refused with
# exit 2 and a message naming them, at once, and nothing is changed.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
EX="$MB_SOURCE_DIR/examples/quickstart.yaml"
D="emu:H100-80GB:mig=on,state=$TMP/gpu.json"
# A guard only: a refusal takes milliseconds; without O_NONBLOCK the FIFO cases block forever.
T="timeout 60"

# --- a FIFO with no writer is refused, not waited on -----------------------------------------
mkfifo "$TMP/fifo"
run 2 $T "$M" run "$TMP/fifo" --dry-run
expect_err "fifo: cannot read: a FIFO, not a regular file"
run 2 $T "$M" mig apply "$TMP/fifo" --device "$D"
expect_err "a FIFO, not a regular file"
run 2 $T "$M" layouts --catalog "$TMP/fifo" --gpu H100
expect_err "a FIFO, not a regular file"
run 2 $T "$M" plan --jobs "$TMP/fifo" --profiles "$MB_SOURCE_DIR/tests/cli/plan-data/profiles.csv"
expect_err "a FIFO, not a regular file"
run 2 $T "$M" plan --jobs "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml" --profiles "$TMP/fifo"
expect_err "a FIFO, not a regular file"
run 2 $T "$M" run "$TMP" --dry-run
expect_err "a directory, not a regular file"

# --- deep nesting: ~1 MB, refused at the first level past the limit ---------------------------
python3 -c 'import sys; n = 500000; sys.stdout.write("[" * n + "]" * n + "\n")' >"$TMP/deep.yaml"
run 2 $T "$M" run "$TMP/deep.yaml" --dry-run
expect_err "deep.yaml:1: nesting deeper than 32 levels"
run 2 $T "$M" mig apply "$TMP/deep.yaml" --device "$D"
expect_err "deep.yaml:1:33: nesting deeper than 32 levels"
run 2 $T "$M" plan --jobs "$TMP/deep.yaml" --profiles "$MB_SOURCE_DIR/tests/cli/plan-data/profiles.csv"
expect_err "deep.yaml:1: nesting deeper than 32 levels"
run 2 $T "$M" run "$EX" --dry-run --set "measure.duration=$(python3 -c 'print("[" * 100 + "]" * 100)')"
expect_err "^migbench: run: --set measure.duration=.*nesting deeper than 32 levels"

# --- one YAML document per file and per --set ----------------------------------------------------
{ cat "$EX"; printf -- '---\nname: second\n'; } >"$TMP/two.yaml"
run 2 "$M" run "$TMP/two.yaml" --dry-run
expect_err "two.yaml:[0-9]+: a second YAML document"
run 2 "$M" run "$EX" --dry-run --set "$(printf 'measure.duration=20s\n---\n40s')"
expect_err "a second YAML document"

# --- numbers: decimal only; out of range is not "not a number" -----------------------------------
run 2 "$M" run "$EX" --dry-run --set measure.duration=0x10s
expect_err "'0x10s': unknown unit 'x10s'"
run 2 "$M" run "$EX" --dry-run --set measure.duration=0x1p4s
expect_err "'0x1p4s': unknown unit 'x1p4s'"
run 2 "$M" run "$EX" --dry-run --set measure.duration=1e-308s
expect_err "out of range"

# --- run: --only '' and --results naming a file -----------------------------------------------------
run 2 "$M" run "$EX" --dry-run --only ''
expect_err "--only: empty"
: >"$TMP/afile"
run 2 "$M" run "$EX" --device emu:H100-80GB --results "$TMP/afile"
expect_err "--results .*afile: exists and is not a directory"
[ ! -s "$TMP/afile" ] || fail "the file named by --results was written to"

# --- plan: huge work and priority, header-only profiles ---------------------------------------------
P="$MB_SOURCE_DIR/tests/cli/plan-data/profiles.csv"
sed 's/work: 3.0e7}/work: 1e308}/' "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml" >"$TMP/work.yaml"
run 2 "$M" plan --jobs "$TMP/work.yaml" --profiles "$P"
expect_err "work.yaml:6: field 'jobs\[0\].work': must be > 0 and at most 1e\+18"
sed 's/priority: 1}/priority: 1e100}/' "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml" >"$TMP/prio.yaml"
run 2 "$M" plan --jobs "$TMP/prio.yaml" --profiles "$P"
expect_err "prio.yaml:11: field 'jobs\[5\].priority': expected an integer between"
# Found by the fuzz campaign: a second 'workloads:' wrote past the first one's array.
{ cat "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml"; printf 'workloads:\n  a: {command: [x]}\n'; } >"$TMP/twice.yaml"
run 2 "$M" plan --jobs "$TMP/twice.yaml" --profiles "$P"
expect_err "twice.yaml:[0-9]+: duplicate key 'workloads' \(first on line [0-9]+\)"
head -n 2 "$P" | grep '^workload' >"$TMP/header.csv"
run 2 "$M" plan --jobs "$MB_SOURCE_DIR/tests/cli/plan-data/jobs.yaml" --profiles "$TMP/header.csv"
expect_err "header.csv: a header but no profile rows"

# --- catalog: a name holding \u0000 is refused, not cut short -------------------------------------
printf '{"H100\\u0000-evil": {}}\n' >"$TMP/nul.json"
run 2 "$M" layouts --catalog "$TMP/nul.json" --gpu H100
expect_err 'nul.json: byte [0-9]+: a string holds \\u0000'

# --- report: damaged cells ----------------------------------------------------------------------------
cell() {
    rm -rf "$TMP/res"
    mkdir -p "$TMP/res/r/0"
    : >"$TMP/res/journal.jsonl"
    printf '%s\n' "$1" >"$TMP/res/r/0/cell.json"
}
cell '{"run": "r", "mode": "mig", "status": "ok", "jobs": [{"name": "a", "throughput": {"mean": -3}}]}'
run 2 "$M" report "$TMP/res"
expect_err "cell.json: field 'jobs\[0\].throughput.mean': negative"
cell '{"run": "r", "mode": "quantum", "status": "ok", "jobs": [{"name": "a"}]}'
run 2 "$M" report "$TMP/res"
expect_err "field 'mode': 'quantum' is not a sharing mode"
cell "$(python3 -c 'print("[" * 1200 + "]" * 1200)')"
run 2 "$M" report "$TMP/res"
expect_err "cell.json: JSON nested deeper than 1000 levels"
cell '{"run": "r", "rep": 1e20, "mode": "exclusive", "status": "ok", "jobs": [{"name": "a"}]}'
run 0 "$M" report "$TMP/res"

cat >"$TMP/cfg.yaml" <<'YAML'
version: v1
mig-configs:
  one:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 1}
YAML

# --- mig: an ownership record for another GPU names that GPU (it was printed after being freed) ---
run 0 "$M" mig show --device "$D"
printf '{"version": 1, "device_uuid": "GPU-someone-else-0001", "gpu_instances": []}\n' \
    >"$TMP/gpu.json.owned.json"
cp "$TMP/gpu.json" "$TMP/gpu.before"
for verb in show clear; do
    run 1 "$M" mig "$verb" --device "$D"
    expect_err "the record is for GPU GPU-someone-else-0001, not GPU-"
done
run 1 "$M" mig apply "$TMP/cfg.yaml" -c one --device "$D"
expect_err "the record is for GPU GPU-someone-else-0001, not GPU-"
cmp -s "$TMP/gpu.json" "$TMP/gpu.before" || fail "the emulator state changed"
printf '{"version": 1, "device_uuid": "x", "gpu_instances": [{"gi_id": 1e300}]}\n' \
    >"$TMP/gpu.json.owned.json"
run 1 "$M" mig show --device "$D"
expect_err "not a migbench ownership record|record is for GPU|gpu_instances\[0\]"

# --- the emulator state is input too ---------------------------------------------------------------
rm -f "$TMP/gpu.json.owned.json"
python3 - "$TMP/gpu.json" <<'PY'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
s["gpu_instances"] = [{"id": 1, "profile_id": 19, "start": 0, "size": 1, "compute_instances": []},
                      {"id": 1, "profile_id": 19, "start": 1, "size": 1, "compute_instances": []}]
json.dump(s, open(p, "w"))
PY
cp "$TMP/gpu.json" "$TMP/gpu.before"
run 2 "$M" mig apply "$TMP/cfg.yaml" -c one --device "$D"
expect_err "gpu.json: field 'gpu_instances\[1\]\.id': GI id 1 appears twice"
cmp -s "$TMP/gpu.json" "$TMP/gpu.before" || fail "a refused state file was modified"

finish
