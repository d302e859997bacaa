# SPDX-License-Identifier: Apache-2.0
# `migbench slurm` without a cluster: submit --emit writes the job array files (cells numbered as
# on the nodes' GPU with --gpu, each with its power limit), refuses values that would change an
# #SBATCH line, and gres describes an emulated GPU's MIG instances for Slurm.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"
EXP="$MB_SOURCE_DIR/examples/quickstart.yaml"

run 0 "$M" slurm submit "$EXP" --gpu H100-SXM5-80GB --emit "$TMP/e" --results "$TMP/res" \
    --partition gpu --account 'proj-1' --time 2:00:00 --max-concurrent 3 --sbatch-line=--qos=low
for f in array.sbatch report.sbatch cells.tsv submit.sh; do
    [ -s "$TMP/e/$f" ] || fail "no $f"
    expect_out "^$TMP/e/$f\$"
done
for f in array.sbatch report.sbatch submit.sh; do
    bash -n "$TMP/e/$f" || fail "$f is not valid bash"
done
[ ! -e "$TMP/res/slurm" ] || fail "--emit submitted (or prepared) something"
n=$(($(wc -l <"$TMP/e/cells.tsv") - 1))
grep -qx "#SBATCH --array=0-$((n - 1))%3" "$TMP/e/array.sbatch" || fail "array line for $n cells"
for l in '--gres=gpu:1' '--exclusive' '--partition=gpu' '--account=proj-1' '--time=2:00:00' \
    '--qos=low'; do
    grep -qx -- "#SBATCH $l" "$TMP/e/array.sbatch" || fail "array.sbatch lacks #SBATCH $l"
done
grep -q -- "--cells \"\$SLURM_ARRAY_TASK_ID\" --results $TMP/res" "$TMP/e/array.sbatch" ||
    fail "the task does not run its cell into the results directory"
# The emulated numbering pins the repetitions a real GPU would default to, for the tasks too.
grep -q -- '--set measure.repetitions=4' "$TMP/e/array.sbatch" || fail "repetitions not pinned"
[ "$(awk -F'\t' 'NR > 1 && $2 == "alone"' "$TMP/e/cells.tsv" | wc -l)" = 4 ] ||
    fail "4 repetitions of 'alone' expected in cells.tsv"

# Values that would change the lines sbatch reads are refused, naming the option.
run 2 "$M" slurm submit "$EXP" --gpu H100-SXM5-80GB --emit "$TMP/x" --partition 'gpu --qos=high'
expect_err "--partition 'gpu --qos=high'"
run 2 "$M" slurm submit "$EXP" --gpu H100-SXM5-80GB --emit "$TMP/x" --sbatch-line 'qos=high'
expect_err "an sbatch option such as --qos=high"
run 2 "$M" slurm submit "$EXP" --gpu H100-SXM5-80GB --emit "$TMP/x" --max-concurrent 0
run 2 "$M" slurm submit "$TMP/none.yaml" --emit "$TMP/x"
[ ! -e "$TMP/x" ] || fail "a refused submit wrote files"

# Without a GPU here and without --gpu, the cells cannot be numbered as the nodes will.
cat >"$TMP/auto.yaml" <<'YAML'
version: 1
name: auto
device: auto
workloads:
  w: {command: [/bin/true], unit: samples}
runs:
  - {name: one, mode: exclusive, jobs: [w], only: gpu}
YAML
MIGBENCH_NVML_LIBRARY=/nonexistent run 2 "$M" slurm submit "$TMP/auto.yaml" --emit "$TMP/x"
expect_err "give --gpu MODEL"

# The experiment's slurm: block gives the defaults; options on the command line win.
cat >"$TMP/blk.yaml" <<YAML
version: 1
name: blk
device: emu:H100-80GB
workloads:
  w: {command: [/bin/true], unit: samples}
runs:
  - {name: one, mode: exclusive, jobs: [w]}
slurm:
  partition: short
  account: lab
  time: "0:30:00"
  max_concurrent: 5
  sbatch: [--qos=low, --mail-type=END]
YAML
run 0 "$M" slurm submit "$TMP/blk.yaml" --emit "$TMP/b" --account other
for l in '--array=0%5' '--partition=short' '--account=other' '--time=0:30:00' '--qos=low' \
    '--mail-type=END'; do
    grep -qx -- "#SBATCH $l" "$TMP/b/array.sbatch" || fail "slurm: block: no #SBATCH $l"
done
grep -q -- '--account=lab' "$TMP/b/array.sbatch" && fail "--account did not win over the file"
sed 's/  partition: short/  partition: "short --x"/' "$TMP/blk.yaml" >"$TMP/bad.yaml"
run 2 "$M" slurm submit "$TMP/bad.yaml" --emit "$TMP/b2"
expect_err "bad.yaml:9: field 'slurm.partition'"
sed 's/  sbatch: \[--qos=low, --mail-type=END\]/  sbatch: [qos=low]/' "$TMP/blk.yaml" >"$TMP/bad2.yaml"
run 2 "$M" slurm submit "$TMP/bad2.yaml" --emit "$TMP/b3"
expect_err "field 'slurm.sbatch\[0\]'.*an sbatch option"

# The power-limit axis: each cell carries its limit in cells.tsv (what the task's run sets).
cat >"$TMP/pw.yaml" <<'YAML'
version: 1
name: pw
device: emu:H100-80GB
power_limits: [default, 250W]
workloads:
  w: {command: [/bin/true], unit: samples}
runs:
  - {name: one, mode: exclusive, jobs: [w]}
measure: {repetitions: 1}
YAML
run 0 "$M" slurm submit "$TMP/pw.yaml" --device "emu:H100-80GB:state=$TMP/pw.json" \
    --emit "$TMP/pw" --results "$TMP/pwres"
[ "$(awk -F'\t' 'NR > 1 { printf "%s=%s ", $2, $6 }' "$TMP/pw/cells.tsv")" = \
    "one.cap-default=default one.cap-250W=250W " ] || fail "cells.tsv: $(cat "$TMP/pw/cells.tsv")"
head -n 1 "$TMP/pw/cells.tsv" | grep -q $'\tpower_limit$' || fail "cells.tsv: no power_limit column"

# status without a submission.
run 2 "$M" slurm status "$TMP/res"
expect_err 'no cells.tsv'

# gres: an emulated GPU's MIG instances as Slurm GRES.
D="emu:H100-80GB:mig=on,state=$TMP/gpu.json"
cat >"$TMP/cfg.yaml" <<'YAML'
version: v1
mig-configs:
  c:
    - devices: all
      mig-enabled: true
      mig-devices:
        "2g.20gb": 2
        "3g.40gb": 1
YAML
run 0 "$M" mig apply "$TMP/cfg.yaml" --device "$D"
run 0 "$M" slurm gres --device "$D" --node n1 --fake --cpus 4 --out "$TMP/etc"
[ "$(grep -c $'^2g\\.20gb\tnvidia_h100_80gb_hbm3_2g\\.20gb\tMIG-' "$TMP/out")" = 2 ] ||
    fail "two 2g.20gb devices expected"
grep -qx 'NodeName=n1 Gres=gpu:3g.40gb:1,gpu:2g.20gb:2' "$TMP/etc/slurm-node.conf" ||
    grep -qx 'NodeName=n1 Gres=gpu:2g.20gb:2,gpu:3g.40gb:1' "$TMP/etc/slurm-node.conf" ||
    fail "slurm-node.conf: $(cat "$TMP/etc/slurm-node.conf")"
grep -qx 'AutoDetect=nvml' "$TMP/etc/gres.conf" || fail "gres.conf"
[ "$(grep -c '|4|0-3|-1|/dev/nvidia[0-9]|MIG-[0-9a-f-]*|nvidia_gpu_env$' "$TMP/etc/fake_gpus.conf")" = 3 ] ||
    fail "fake_gpus.conf: $(cat "$TMP/etc/fake_gpus.conf")"
run 2 "$M" slurm gres --device "$D" --out "$TMP/etc2" --node 'a b'
run 1 "$M" slurm gres --device host --out "$TMP/etc3"
expect_err 'no GPU'
finish
