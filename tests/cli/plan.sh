# SPDX-License-Identifier: Apache-2.0
# migbench plan: plans from a small CSV and jobs file, emitted files, --verify, bad input.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"

D="$MB_SOURCE_DIR/tests/cli/plan-data"
P="$D/profiles.csv"
J="$D/jobs.yaml"

run 0 "$MIGBENCH" plan --help
expect_out 'usage: migbench plan'

# The default plan: exact, energy objective, a layout with queues, baseline and gain.
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P"
expect_out '^plan: 6 jobs on 1 x H100-SXM5-80GB, objective energy \(exact optimum'
expect_out '^GPU 0: 4g\.40gb \+ 2g\.20gb \+ 1g\.10gb$'
expect_out 'xl-finetune \(1h 30m 55s\) -> resnet-a'
expect_out '^predicted: makespan 2h 43m 59s, energy 4\.935 MJ'
expect_out '^baseline .*: makespan 2h 43m 36s, energy 5\.108 MJ'
expect_out '^gain over baseline: 3\.4% less energy'
expect_out 'densenet .*PROXY'
expect_out 'MPS proxy rows'
expect_out 'profiles\.csv:17 \(example\)'

# JSON: the same numbers, and a job's energy per unit; nulls, never zeros, for unknowns.
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --json
cp "$TMP/out" "$TMP/plan.json"
/usr/bin/python3 - "$TMP/plan.json" <<'EOF' || fail "plan JSON check"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["method"] == "exact" and p["objective"] == "energy", p["method"]
assert abs(p["predicted"]["energy_j"] - 4935306.5) < 1e3, p["predicted"]
assert abs(p["baseline"]["energy_j"] - 5108216.3) < 1e3, p["baseline"]
assert p["predicted"]["unit"] is None and p["predicted"]["energy_per_unit_j"] is None
assert p["bound"]["gap_pct"] == 0 and p["bound"]["energy_j"] is None
jobs = {j["name"]: j for j in p["jobs"]}
assert jobs["densenet"]["proxy"] is True and jobs["densenet"]["partition"] == "1g.10gb"
# energy = idle x makespan + sum of dynamic energies, to the joule
dyn = sum(j["dynamic_j"] for j in p["jobs"])
assert abs(p["predicted"]["energy_j"] - (70 * p["predicted"]["makespan_s"] + dyn)) < 1e-3
inst = p["gpus"][0]["instances"]
assert [i["profile"] for i in inst] == ["4g.40gb", "2g.20gb", "1g.10gb"], inst
assert inst[2]["queue"] == ["resnet-c", "densenet"], inst[2]   # priority 1 runs first
EOF

# Objectives, caps, fleets, the front.
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --objective makespan
expect_out '^GPU 0: 4g\.40gb \+ 3g\.40gb$'
expect_out '^predicted: makespan 2h 22m 51s'
run 1 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --makespan-cap 3600
expect_err 'no plan meets the makespan cap of 3600 s'
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --count 3
expect_out 'heuristic, gap to lower bound'
expect_out '^lower bound: makespan'
expect_out '^GPU 2: '
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --pareto
expect_out '^energy vs makespan front: 4 plans on 1 x H100-SXM5-80GB \(exact\)'
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --no-full --gpu h100

# Continuous jobs: the throughput objective.
cat >"$TMP/cont.yaml" <<'EOF'
gpu: H100-80GB
jobs:
  - {name: a, workload: resnet50, work: continuous}
  - {name: b, workload: gpt2-small, work: continuous}
  - {name: c, workload: densenet121, work: continuous}
EOF
run 0 "$MIGBENCH" plan --jobs "$TMP/cont.yaml" --profiles "$P"
expect_out 'objective throughput \(exact optimum'
expect_out '^predicted: system throughput [0-9.]+'
run 2 "$MIGBENCH" plan --jobs "$TMP/cont.yaml" --profiles "$P" --objective energy
expect_err "continuous jobs need 'objective: throughput'"

# Emitted files: a mig-parted config and an experiment, both written whole.
run 0 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --emit-mig-parted "$TMP/mp.yaml" \
    --emit-experiment "$TMP/exp.yaml"
grep -q '^version: v1$' "$TMP/mp.yaml" || fail "mig-parted file lacks version: v1"
grep -q '"4g.40gb": 1' "$TMP/mp.yaml" || fail "mig-parted file lacks the 4g.40gb instance"
grep -q 'mig-enabled: true' "$TMP/mp.yaml" || fail "mig-parted file lacks mig-enabled"
grep -q '^  - {name: g0-r1, mode: mig, layout: \[4g.40gb, 2g.20gb, 1g.10gb\]' "$TMP/exp.yaml" ||
    fail "experiment lacks run g0-r1"
grep -q 'command: \["{python}", "{workloads}/gpt.py", "--size", "xl", "--finetune"\]' \
    "$TMP/exp.yaml" || fail "experiment lacks the jobs file's command"
[ ! -e "$TMP/mp.yaml.tmp" ] || fail "temporary file left behind"
# A whole-GPU plan turns MIG off in the config.
cat >"$TMP/one.yaml" <<'EOF'
jobs: [{name: big, workload: gpt2-xl-ft, work: 1e6, memory_mib: 81400}]
EOF
run 0 "$MIGBENCH" plan --jobs "$TMP/one.yaml" --profiles "$P" --gpu H100 --emit-mig-parted "$TMP/off.yaml"
expect_out '^GPU 0: MIG off \(whole GPU\)$'
grep -q 'mig-enabled: false' "$TMP/off.yaml" || fail "MIG-off plan should say mig-enabled: false"

# The emitted files pass the commands that consume them.
run 0 "$MIGBENCH" run --dry-run --device emu:H100-80GB "$TMP/exp.yaml"
expect_out 'g0-r2'
run 0 "$MIGBENCH" mig apply --device "emu:H100-80GB:mig=on:state=$TMP/gpu.json" \
    -c migbench-plan "$TMP/mp.yaml"

# --verify against a results directory shaped like the emitted experiment's.
mkcell() { # run rep mode mean_power job:profile:throughput...
    local dir="$TMP/res/$1/$2" run=$1 rep=$2 mode=$3 power=$4
    shift 4
    mkdir -p "$dir"
    {
        printf '{"schema":1,"experiment":"t","run":"%s","mode":"%s","rep":%s,"status":"ok",' "$run" "$mode" "$rep"
        printf '"device":{"backend":"emu","emulated":true,"model":"H100-SXM5-80GB","name":"emu"},'
        printf '"energy":{"mean_power_w":%s,"idle_power_w":70},"jobs":[' "$power"
        local first=1
        for j in "$@"; do
            IFS=: read -r name prof thr <<<"$j"
            [ $first = 1 ] || printf ','
            first=0
            printf '{"name":"%s","workload":"%s","unit":"images","instance":{"profile":"%s"},' \
                "$name" "$name" "$prof"
            printf '"throughput":{"mean":%s,"ci95":1}}' "$thr"
        done
        printf ']}\n'
    } >"$dir/cell.json"
}
mkcell g0-r1 0 mig 700 xl-finetune:4g.40gb:5500 resnet-b:2g.20gb:1000 resnet-c:1g.10gb:520
mkcell g0-r2 0 mig 600 resnet-a:4g.40gb:1900 gpt-small:2g.20gb:31000 densenet:1g.10gb:400
run 0 "$MIGBENCH" plan --verify "$TMP/res" --plan "$TMP/plan.json"
expect_out '^verify: plan .* \(2 successful cells; idle power 70\.0 W measured\)'
expect_out '^  xl-finetune +5500 +5500 +\+0\.0%'
expect_out '^makespan: predicted 2h 43m 59s, measured 2h 43m 59s \(prediction error \+0\.0%\)'
expect_out '^energy: predicted 4\.935 MJ, measured .* \(prediction error [+-][0-9.]+%\)'
run 0 "$MIGBENCH" plan --verify "$TMP/res" --plan "$TMP/plan.json" --json
grep -q '"makespan_error_pct":' "$TMP/out" || fail "verify JSON lacks makespan_error_pct"
rm "$TMP/res/g0-r2/0/cell.json"
run 0 "$MIGBENCH" plan --verify "$TMP/res" --plan "$TMP/plan.json"
expect_out '^  densenet .* n/a'
expect_out 'totals n/a'

# Profiles from results directories: single-job cells, an MPS proxy.
mkcell solo 0 exclusive 480 resnet50:full:2900
mkcell solo 1 exclusive 482 resnet50:full:2910
mkcell small 0 mig 140 resnet50:1g.10gb:520
mkdir -p "$TMP/res2"
mv "$TMP/res/solo" "$TMP/res/small" "$TMP/res2/"
cat >"$TMP/r.yaml" <<'EOF'
jobs: [{name: r, workload: resnet50, work: 1e6}, {name: s, workload: resnet50, work: 2e6}]
EOF
run 0 "$MIGBENCH" plan --jobs "$TMP/r.yaml" --results "$TMP/res2" --gpu H100
expect_out 'solo \(2 cells, EMULATED\)'
expect_out 'EMULATED device: modelled numbers'
expect_out 'idle power 70\.0 W'

# The report's fixed results directory (read through the analysis module): the exclusive run's
# jobs each get a "full" row from their own interval's energy; its 3-job MIG run gives none.
cat >"$TMP/g.yaml" <<'EOF'
gpu: H100
jobs:
  - {name: a, workload: resnet50, work: 1e6}
  - {name: b, workload: densenet121, work: 1e6}
EOF
run 0 "$MIGBENCH" plan --jobs "$TMP/g.yaml" --results "$MB_SOURCE_DIR/tests/golden/results-h100"
expect_out '^GPU 0: MIG off \(whole GPU\)$'
expect_out 'results-h100/exclusive \(3 cells, EMULATED\)'

# Bad input: exit 2 with the file, line and field named; nothing written.
run 2 "$MIGBENCH" plan --jobs "$J"
expect_err 'give --profiles FILE.csv or --results DIR'
run 2 "$MIGBENCH" plan --profiles "$P"
expect_err '--jobs JOBS.yaml is required'
run 2 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --bogus
expect_err "unknown option '--bogus'"
run 2 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --count 0
expect_err '--count'
run 2 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --objective fast
expect_err "--objective: 'fast'"
run 2 "$MIGBENCH" plan --jobs "$J" --profiles "$P" --gpu Z900
expect_err '--gpu'
printf 'workload,gpu,partition,throughput,power_w\nresnet50,H100,3g.40gb,many,300\n' >"$TMP/bad.csv"
run 2 "$MIGBENCH" plan --jobs "$J" --profiles "$TMP/bad.csv" --emit-mig-parted "$TMP/nope.yaml"
expect_err "bad\.csv:2: field 'throughput': 'many' is not a number"
[ ! -e "$TMP/nope.yaml" ] || fail "a bad input must not write files"
printf 'jobs:\n  - {workload: resnet50, work: -3}\n' >"$TMP/bad.yaml"
run 2 "$MIGBENCH" plan --jobs "$TMP/bad.yaml" --profiles "$P"
expect_err "bad\.yaml:2: field 'jobs\[0\]\.work': must be at least 0|must be > 0"
printf 'jobs:\n  - {workload: nosuch, work: 5}\n' >"$TMP/none.yaml"
run 2 "$MIGBENCH" plan --jobs "$TMP/none.yaml" --profiles "$P" --gpu H100
expect_err "none\.yaml:2: job 'nosuch': workload 'nosuch' has no profile on H100-SXM5-80GB"
printf 'jobs:\n  - {workload: resnet50, work: 5, memory_mib: 500000}\n' >"$TMP/huge.yaml"
# A job that fits no partition: the answer is no (exit 1), as for any infeasible plan.
run 1 "$MIGBENCH" plan --jobs "$TMP/huge.yaml" --profiles "$P" --gpu H100
expect_err "huge\.yaml:2: job 'resnet50' needs 500000 MiB of GPU memory: it fits no profiled partition"
run 2 "$MIGBENCH" plan --jobs "$TMP/missing.yaml" --profiles "$P"
expect_err 'missing\.yaml: cannot open'
run 2 "$MIGBENCH" plan --verify "$TMP/res"
expect_err 'needs --plan'
echo '{}' >"$TMP/notplan.json"
run 2 "$MIGBENCH" plan --verify "$TMP/res" --plan "$TMP/notplan.json"
expect_err "not a plan written by 'migbench plan --json'"
run 2 "$MIGBENCH" plan --jobs "$J" --results "$TMP/nowhere"
expect_err 'nowhere: No such file or directory'

finish
