# SPDX-License-Identifier: Apache-2.0
# One experiment file for every GPU model: MIG layouts written as sizes (4g, 3g) resolve to each
# model's own profiles, cell.json keeps both spellings, and runs that will not run on the device
# are not held to its profile names.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: sizes
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"], unit: images, memory_mib: 9000}
  b: {command: ["$FX/fx_steady", --rate, "10", --duration, "60"], unit: tokens}
runs:
  - {name: alone, mode: exclusive, jobs: [a]}
  - {name: sizes, mode: mig, layout: [4g, 3G], jobs: [a, b]}
  - {name: h100, mode: mig, layout: [3g.40gb, 4g.40gb], jobs: [a, b]}
measure: {warmup: 200ms, duration: 1s, sample_interval: 50ms, grace: 1s, progress_timeout: 10s, repetitions: 1}
YAML

# MIG off on an H200: the mig runs are skipped for the MIG mode, so the H100 names in 'h100'
# do not stop the run.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:H200 --results "$TMP/off"
expect_err "run 'h100' skipped: MIG mode is disabled"
expect_out '^alone +exclusive +1/1 '
[ -e "$TMP/off/alone/0/cell.json" ] || fail "the exclusive cell was not written"

# MIG on: a run that will run is checked before anything starts, and the message lists both
# the model's profile names and the sizes.
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H200:mig=on:state=$TMP/gpu.json" --results "$TMP/bad"
expect_err "exp.yaml:[0-9]+: field 'runs\[2\]\.layout\[0\]': H200-141GB has no profile '3g\.40gb' \(its profiles: .*3g\.71gb.*; or a size: 1g, 1g\+me, 1g\.2m, 2g, 3g, 4g, 7g\)"
[ ! -e "$TMP/bad/journal.jsonl" ] || fail "a refused experiment wrote a journal"

# The sizes become 4g.71gb and 3g.71gb; cell.json has the exact names and the file's spelling.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device "emu:H200:mig=on:state=$TMP/gpu.json" --results "$TMP/on" --only sizes
expect_err "created 4g\.71gb at memory slices 0-3"
expect_out '^sizes +mig +1/1 '
python3 - "$TMP/on/sizes/0/cell.json" <<'PY' || fail "cell.json: profiles"
import json, sys
c = json.load(open(sys.argv[1]))
inst = c["device"]["mig"]["instances"]
got = [(i["profile"], i["requested"]) for i in inst]
bad = []
if got != [("4g.71gb", "4g"), ("3g.71gb", "3g")]:
    bad.append(f"instances {got}")
jobs = [(j["name"], j["instance"]["profile"], j["instance"]["requested"]) for j in c["jobs"]]
if jobs != [("a", "4g.71gb", "4g"), ("b", "3g.71gb", "3g")]:
    bad.append(f"jobs {jobs}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY

# An A30 has no 3g: the sizes run is skipped with the reason and the rest runs.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --device emu:A30:mig=on --results "$TMP/a30" --only alone,sizes
expect_err "run 'sizes' skipped: A30-24GB has no 3g \(its sizes: 1g, 1g\+me, 2g, 2g\+me, 4g;"
expect_out '^alone +exclusive +1/1 '
[ ! -e "$TMP/a30/sizes" ] || fail "A30: the sizes run ran"

# A size that is no size at all is a syntax error on every device, even the host.
sed 's/\[4g, 3G\]/[5g, 3g]/' "$TMP/exp.yaml" >"$TMP/five.yaml"
run 2 "$MIGBENCH" run "$TMP/five.yaml" --dry-run --device host
expect_err "five.yaml:[0-9]+: field 'runs\[1\]\.layout\[0\]': '5g' is neither a MIG size"
finish
