# SPDX-License-Identifier: Apache-2.0
# Modes mps and mig through the real nvml backend: the fake libnvidia-ml.so.1 on an emulated H100,
# and a fake nvidia-cuda-mps-control on PATH that records the commands it gets.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
FX="$MB_BINARY_DIR/fixtures"
FAKE="$MB_BINARY_DIR/tests/fake-nvml/libnvidia-ml.so.1"
[ -x "$FX/fx_steady" ] || { echo "FAIL: fixtures not built in $FX" >&2; exit 1; }
[ -r "$FAKE" ] || { echo "FAIL: fake NVML not built at $FAKE" >&2; exit 1; }
export MIGBENCH_NVML_LIBRARY="$FAKE"
# MIG mode off: the whole-GPU modes run, mig runs are skipped (migbench never resets a GPU).
export MIGBENCH_FAKE_NVML_SPEC="H100-80GB,state=$TMP/nv0.json"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-cuda-mps-control" <<SH
#!/bin/sh
echo "argv:\$* pipe:\$CUDA_MPS_PIPE_DIRECTORY log:\$CUDA_MPS_LOG_DIRECTORY" >>"$TMP/mps.log"
[ "\$1" = -d ] && exit 0
while read -r cmd; do echo "stdin:\$cmd" >>"$TMP/mps.log"; done
SH
chmod +x "$TMP/bin/nvidia-cuda-mps-control"

cat >"$TMP/exp.yaml" <<YAML
version: 1
name: nvmltest
device: nvml:0
workloads:
  a: {command: ["$FX/fx_steady", --rate, "20", --duration, "60"]}
runs:
  - {name: mps-3, mode: mps, jobs: [a, a, a], match_layout: [4g.40gb, 2g.20gb, 1g.10gb]}
  - {name: mps-eq, mode: mps, jobs: [a, a]}
  - {name: mig-2, mode: mig, layout: [3g.40gb, 3g.40gb], jobs: [a, a]}
measure: {warmup: 200ms, duration: 1s, grace: 1s, progress_timeout: 10s, repetitions: 1}
YAML

# Without nvidia-cuda-mps-control on PATH: refused before anything runs.
PATH="/usr/bin:/bin" run 2 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/none"
expect_err "needs nvidia-cuda-mps-control on PATH"
[ ! -e "$TMP/none" ] || fail "refused run created results"

PATH="$TMP/bin:$PATH" run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res"
expect_out '^mps-3 +mps +1/1'
expect_err "run 'mig-2' skipped: MIG mode is disabled on the GPU"
# MIG mode on: the mig run goes through the nvml backend; whole-GPU runs are skipped.
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/nv1.json" PATH="$TMP/bin:$PATH" \
    run 0 "$MIGBENCH" run "$TMP/exp.yaml" --results "$TMP/res-mig"
expect_out '^mig-2 +mig +1/1'
expect_err "run 'mps-3' skipped: MIG mode is enabled on the GPU"
P3="$TMP/res/mps/mps-3-0"
grep -qx "argv:-d pipe:$P3/pipe log:$P3/log" "$TMP/mps.log" || fail "daemon not started with private dirs"
[ "$(grep -c '^stdin:quit$' "$TMP/mps.log")" = 2 ] || fail "daemons not told to quit"
[ "$(stat -c %a "$P3/pipe")" = 700 ] || fail "pipe dir mode $(stat -c %a "$P3/pipe")"
python3 - "$TMP/res" <<'PY' || fail "cell.json checks"
import json, sys
res = sys.argv[1]
bad = []
c = json.load(open(f"{res}/mps-3/0/cell.json"))
if c["device"]["backend"] != "nvml":
    bad.append(f"backend {c['device']['backend']}")
pct = [j["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] for j in c["jobs"]]
if pct != ["57", "29", "14"] or c["mps"]["thread_percentage"] != [57, 29, 14]:
    bad.append(f"percentages {pct} {c['mps']}")
e = json.load(open(f"{res}/mps-eq/0/cell.json"))
if [j["thread_percentage"] for j in e["jobs"]] != [50, 50]:
    bad.append("equal split")
m = json.load(open(f"{res}-mig/mig-2/0/cell.json"))
uu = [j["env"]["CUDA_VISIBLE_DEVICES"] for j in m["jobs"]]
if len(set(uu)) != 2 or not all(u.startswith("MIG-") for u in uu):
    bad.append(f"mig uuids {uu}")
ev = [json.loads(l)["event"] for l in open(f"{res}/journal.jsonl")]
ev += [json.loads(l)["event"] for l in open(f"{res}-mig/journal.jsonl")]
if ev.count("mps_started") != 2 or ev.count("mps_stopped") != 2:
    bad.append("mps journal")
if ev.count("mig_created") != ev.count("mig_destroyed"):
    bad.append("mig journal")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
MIGBENCH_FAKE_NVML_SPEC="H100-80GB:mig=on,state=$TMP/nv1.json" run 0 "$MIGBENCH" mig show --device nvml:0
expect_out 'no GPU instances'

finish
