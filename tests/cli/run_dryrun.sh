# SPDX-License-Identifier: Apache-2.0
# migbench run --dry-run and bad experiment files: nothing runs, errors name file, line, field.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

cat >"$TMP/exp.yaml" <<'YAML'
version: 1
name: dry
device: host
workloads:
  a:
    command: [/bin/true, --x]
    memory_mib: 12000
  b:
    command: [/bin/true]
runs:
  - {name: alone, mode: exclusive, jobs: [a, b]}
  - {name: split, mode: partition, jobs: [a, b]}
  - {name: mix, mode: mig, layout: [4g.40gb, 2g.20gb, 1g.20gb], jobs: [a, b, b]}
  - {name: mps-2, mode: mps, jobs: [a, b], match_layout: [4g.40gb, 3g.40gb]}
measure: {warmup: 10s, duration: 30s, idle: 5s, repetitions: 2}
YAML

run 0 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --device emu:H100-80GB --results "$TMP/res"
expect_out '^device: emu:H100-80GB -> H100-SXM5-80GB \(emulated\)'
expect_out "^note: run 'split' skipped: mode partition is for the host CPU"
expect_out '^cells: 6 \(3 runs x 2 repetitions\)'
expect_out '^mix +mig +a, b, b-2'
expect_out '^  a +4g\.40gb +memory slices 0-3 '
expect_out '^  b +2g\.20gb +memory slices 4-5 '
expect_out '^  b-2 +1g\.20gb +memory slices 6-7 '
expect_out 'a=57%, b=43%'
expect_out '^  a +/bin/true --x$'
# idle 5 + 2 x (10 + 30) + 0.5 = 85.5 (alone); 45.5 (mix, mps-2); x 2 repetitions
expect_out '^estimated duration: 5m53s$'
[ ! -e "$TMP/res" ] || fail "--dry-run created the results directory"

# The host: mig and mps skipped, partition kept; --only narrows.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run
expect_out '^device: host'
expect_out "^note: run 'mix' skipped: mode mig needs a GPU"
expect_out "^note: run 'mps-2' skipped: mode mps needs a GPU"
expect_out '^cells: 4 '
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --only split
expect_out '^cells: 2 '

run 2 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --only nosuch
expect_err "'nosuch' is not a run"

# A layout that does not fit the model, and a job too big for its instance.
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --device emu:A100-40GB
expect_err "exp.yaml:[0-9]+: field 'runs\[2\]\.layout\[0\]': A100-SXM4-40GB has no profile '4g\.40gb'"
sed 's/memory_mib: 12000/memory_mib: 30000/; s/\[4g.40gb, 2g.20gb, 1g.20gb\]/[1g.20gb, 2g.20gb, 4g.40gb]/' \
    "$TMP/exp.yaml" >"$TMP/big.yaml"
run 2 "$MIGBENCH" run "$TMP/big.yaml" --dry-run --device emu:H100-80GB
expect_err "big.yaml:13: field 'runs\[2\]\.layout\[0\]': job 'a' needs 30000 MiB"
sed 's/\[4g.40gb, 2g.20gb, 1g.20gb\]/[4g.40gb, 4g.40gb, 1g.10gb]/' "$TMP/exp.yaml" >"$TMP/nofit.yaml"
run 2 "$MIGBENCH" run "$TMP/nofit.yaml" --dry-run --device emu:H100-80GB
expect_err "nofit.yaml:13: field 'runs\[2\]\.layout': does not fit on H100-SXM5-80GB"

# Overrides, and errors in them.
run 0 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --set measure.duration=50\ steps --set measure.repetitions=1
expect_out 'window 50 steps'
expect_out '^estimated duration: at least '
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --dry-run --set measure.duration=3
expect_err "^migbench: run: --set measure.duration=3: field 'measure.duration': '3' needs a unit"
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --set nonsense
expect_err 'needs KEY=VALUE'

# Bad files: exit 2, file:line:field, nothing on stdout.
printf 'version: 1\nname: x\nworkloads:\n  a: {command: [a]}\nruns:\n  - {name: r, mode: timeslice, jobs: [a, c]}\n' >"$TMP/bad.yaml"
run 2 "$MIGBENCH" run "$TMP/bad.yaml" --dry-run
expect_err "bad.yaml:6: field 'runs\[0\]\.jobs\[1\]': unknown workload 'c'"
expect_no_out
run 2 "$MIGBENCH" run "$TMP/missing.yaml" --dry-run
expect_err 'missing.yaml: cannot open'

# Usage errors.
run 2 "$MIGBENCH" run
expect_err 'missing the experiment file'
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --frobnicate
expect_err "unknown option '--frobnicate'"
run 2 "$MIGBENCH" run "$TMP/exp.yaml" --device
expect_err "needs a value"
run 0 "$MIGBENCH" run --help
expect_out 'usage: migbench run EXP.yaml'

finish
