# SPDX-License-Identifier: Apache-2.0
"""The planner against an exact MILP (issue 29): random small fleets (2-4 H100s, 6-20 jobs, four
workloads shaped like the study's, one needing 30 GB), each solved by `migbench plan` and, from the
same inputs, by CBC (python3-pulp) over a formulation of the model written here independently of
the planner's code: how many GPUs take each configuration (a maximal layout of the usable sizes,
from `migbench layouts`, or MIG off; the GPUs are identical, so which GPU does not matter); the
fleet's instances of each size as numbered slots; every job on one existing slot of a size it may
use; each slot's queue finishes within the makespan M; energy G idle M + sum of dynamic energies.

CBC first looks for the optimum. When it cannot prove one within its limit, it is asked the
question the tolerance needs: is there a plan more than 3 % (makespan) or 1 % (energy) better than
the planner's? A proof that there is none counts the fleet as within the tolerance; a plan found is
a failure. Fails when, on a decided fleet, the planner's makespan is more than 3 % above CBC's
optimum under the makespan objective, its energy more than 1 % above under the energy objective,
or it calls a fleet infeasible that CBC solves; or when fewer than half the fleets were decided; or
when the planner's reported lower bound exceeds CBC's proven optimum (a bound that is not one).
Usage: plan_milp.py MIGBENCH TMPDIR [FLEETS] [--large] [--sparse] [--cbc-seconds S]
The CI test (plan_cbc.sh) runs 2-3 GPUs and 5-10 jobs; --large the issue's 2-4 GPUs, 6-20 jobs.
--cbc-seconds S gives CBC a time limit of S seconds per solve instead of its node limit (which
fleets are decided then depends on the machine; bench/plan_cbc.sh), and the check that half the
fleets were decided is dropped. CBC's node limit (the default) is deterministic, so which fleets
count does not depend on the machine's speed.
"""
import json
import random
import subprocess
import sys

import pulp

SIZES = [("1g.10gb", 1, 10240), ("2g.20gb", 2, 20480), ("3g.40gb", 3, 40960), ("4g.40gb", 4, 40960),
         ("7g.80gb", 7, 81920), ("full", 7, 81920)]
IDLE = 70.0
# Fleet sizes (GPUs, jobs): the 2-4 GPUs and up to 20 jobs with --large.
GPUS, JOBS = (2, 3), (5, 10)
# CBC's node limit: deterministic, unlike a time limit.
NODES = 3000
# CBC's time limit in seconds instead (--cbc-seconds), or None.
SECONDS = None
# --sparse: workloads profiled on few sizes, the full GPU and 7g included, so that no single layout
# may take every job (the plan must mix layouts over the GPUs) and some fleets have no plan at all.
SPARSE = False


def draw(seed, gpus, njobs, sparse=False):
    """Fleet `seed`'s rows {(workload, size): (throughput, power, memory)}, GPU count and jobs
    [(name, workload, work)]: gpus and njobs are (least, most). Shared with
    bench/plan_cbc_pergpu.py, which adds a power-limit axis to the same fleets."""
    r = random.Random(seed)
    rows = {}
    for w in range(4):
        base, a, dyn = r.uniform(100, 1000), r.uniform(0.3, 1.0), r.uniform(150, 450)
        mem = 30000 if w == 0 else 6000
        kept = 0
        for i, (name, cs, _) in enumerate(SIZES):
            if sparse:  # any size may be missing, the big ones included; one is kept
                if r.random() < 0.55 and (kept or i < len(SIZES) - 1):
                    continue
            elif name != "full" and name != "7g.80gb" and r.random() < 0.2:
                continue  # not profiled there
            rows[(f"w{w}", name)] = (base * (cs / 7) ** a, IDLE + dyn * (cs / 7) ** 0.6, mem)
            kept += 1
    count = r.randint(gpus[0], gpus[1])
    jobs = [(f"j{j}", f"w{r.randrange(4)}", round(r.uniform(2e4, 2e5))) for j in range(r.randint(njobs[0], njobs[1]))]
    return rows, count, jobs


def write_jobs(d, seed, count, jobs):
    with open(f"{d}/j{seed}.yaml", "w") as f:
        f.write(f"gpu: H100-80GB\ncount: {count}\njobs:\n")
        for n, w, work in jobs:
            f.write(f"  - {{name: {n}, workload: {w}, work: {work}}}\n")


def fleet(seed, d):
    """Writes the profiles and the jobs of fleet `seed`; returns (rows, jobs, count)."""
    rows, count, jobs = draw(seed, GPUS, JOBS, SPARSE)
    with open(f"{d}/p{seed}.csv", "w") as f:
        f.write("workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy\n")
        for (w, p), (thr, pw, mem) in rows.items():
            f.write(f"{w},H100-80GB,{p},{thr:.6f},u,{pw:.6f},{IDLE},{mem},t,false\n")
    write_jobs(d, seed, count, jobs)
    return rows, jobs, count


def configs(migbench, usable):
    """Maximal layouts of the usable MIG sizes (multisets), and MIG off."""
    mig = [s for s, _, _ in SIZES if s in usable and s != "full"]
    out = []
    if mig:
        lay = json.loads(subprocess.run([migbench, "layouts", "--gpu", "H100-80GB", "--profiles",
                                         ",".join(mig), "--json"], check=True,
                                        capture_output=True, text=True).stdout)
        for l in lay:
            c = {}
            for p in l["profiles"]:
                c[p] = c.get(p, 0) + 1
            if c not in out:
                out.append(c)
    if "full" in usable:
        out.append({"full": 1})
    return out


def greedy(allowed, jobs, count, cfgs):
    """An upper bound on the optimum, found independently of the planner: every GPU in one
    configuration, jobs longest first each onto the slot where it finishes first; the best
    (makespan, energy) over the configurations, or None when no configuration takes every job."""
    best = None
    order = sorted(range(len(jobs)), key=lambda j: -min(t for (jj, s), (t, _) in allowed.items() if jj == j))
    for c in cfgs:
        slots = [[s, 0.0] for s, k in c.items() for _ in range(k * count)]
        dyn = 0.0
        for j in order:
            fit = [sl for sl in slots if (j, sl[0]) in allowed]
            if not fit:
                break
            sl = min(fit, key=lambda sl: sl[1] + allowed[(j, sl[0])][0])
            sl[1] += allowed[(j, sl[0])][0]
            dyn += allowed[(j, sl[0])][1]
        else:
            span = max(sl[1] for sl in slots)
            if best is None or span < best[0]:
                best = (span, count * IDLE * span + dyn)
    return best


def milp(rows, jobs, count, cfgs, objective, below=None):
    """CBC's optimum: (value, proven) or (None, proven) when it proves no plan exists. With below,
    only plans whose objective is at most below count: (None, True) then proves that no plan
    reaches below (the optimum is above it), a value is a plan that does.

    The GPUs are identical and the model charges nothing per GPU, so the MILP chooses how many
    GPUs take each configuration (n_c) rather than which: the fleet then has N_s instances of size
    s, numbered slots q < N_s of size s exist, and each job goes on one existing slot of a size it
    may use. Slots of one size carry non-increasing loads (symmetry), and two valid cuts tighten
    the relaxation: a slot's load is at most an upper bound U on the optimum's makespan times its
    existence (U from `greedy` and, for energy, from the energy it reaches), and the compute-slice
    area of all jobs fits in 7 slices x GPUs x M, and every job's time in M."""
    mem = {s: m for s, _, m in SIZES}
    cs = {s: c for s, c, _ in SIZES}
    allowed = {}
    for j, (_, w, work) in enumerate(jobs):
        for s, _, _ in SIZES:
            if (w, s) in rows and rows[(w, s)][2] <= mem[s]:
                thr, pw, _ = rows[(w, s)]
                allowed[(j, s)] = (work / thr, (pw - IDLE) * work / thr)
    kmax = {s: count * max([c.get(s, 0) for c in cfgs] + [0]) for s, _, _ in SIZES}
    if any(all((j, s) not in allowed for s, _, _ in SIZES) for j in range(len(jobs))):
        return None, True  # a job fits no size it has a row for: no plan, proven by that job
    up = greedy(allowed, jobs, count, cfgs)
    if below is not None:
        up = (below, below)
    if up is not None and objective == "energy":
        least = sum(min(e for (jj, s), (_, e) in allowed.items() if jj == j) for j in range(len(jobs)))
        up = ((up[1] - least) / (count * IDLE), up[1])
    m = pulp.LpProblem("plan", pulp.LpMinimize)
    n = [pulp.LpVariable(f"n_{c}", lowBound=0, upBound=count, cat="Integer") for c in range(len(cfgs))]
    y = {(s, q): pulp.LpVariable(f"y_{s.replace('.', '_')}_{q}", cat="Binary")
         for s, _, _ in SIZES for q in range(kmax[s])}
    x = {(j, s, q): pulp.LpVariable(f"x_{j}_{s.replace('.', '_')}_{q}", cat="Binary")
         for (j, s) in allowed for q in range(kmax[s])}
    M = pulp.LpVariable("M", lowBound=0, upBound=None if up is None else up[0] * (1 + 1e-9))
    dyn = pulp.lpSum(allowed[(j, s)][1] * v for (j, s, q), v in x.items())
    m += M if objective == "makespan" else count * IDLE * M + dyn
    if below is not None and objective == "energy":
        m += count * IDLE * M + dyn <= below
    m += pulp.lpSum(n) == count
    for s, _, _ in SIZES:
        m += pulp.lpSum(y[(s, q)] for q in range(kmax[s])) == \
            pulp.lpSum(cfgs[c].get(s, 0) * n[c] for c in range(len(cfgs)))
        for q in range(kmax[s]):
            on = [(j, v) for (j, ss, qq), v in x.items() if ss == s and qq == q]
            for j, v in on:
                m += v <= y[(s, q)]
            load = pulp.lpSum(allowed[(j, s)][0] * v for j, v in on)
            m += load <= M
            if up is not None:
                m += load <= up[0] * (1 + 1e-9) * y[(s, q)]
            if q > 0:  # identical slots: existing ones first, loads in non-increasing order
                m += y[(s, q)] <= y[(s, q - 1)]
                m += load <= prev
            prev = load
    m += pulp.lpSum(allowed[(j, s)][0] * cs[s] * v for (j, s, q), v in x.items()) <= 7 * count * M
    for j in range(len(jobs)):
        m += pulp.lpSum(v for (jj, s, q), v in x.items() if jj == j) == 1
        m += pulp.lpSum(allowed[(j, s)][0] * v for (jj, s, q), v in x.items() if jj == j) <= M
    # Debian's python3-pulp uses the coinor-cbc binary on PATH (it bundles none).
    limit = [f"sec {SECONDS}"] if SECONDS else [f"maxNodes {NODES}"]
    try:
        st = m.solve(pulp.COIN_CMD(msg=0, threads=1, options=limit))
    except pulp.PulpSolverError:
        # CBC 2.10.8 can stop on an assertion in its simplex (seen once in 60 fleets, on a
        # bounded makespan question): once more without scaling, then undecided.
        try:
            st = m.solve(pulp.COIN_CMD(msg=0, threads=1, options=limit + ["scaling off"]))
        except pulp.PulpSolverError:
            return None, False
    if pulp.LpStatus[st] == "Infeasible":
        return None, True
    proven = m.sol_status == pulp.LpSolutionOptimal
    if m.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None, False  # stopped without an integer plan (the values are the relaxation's)
    return pulp.value(m.objective), proven


def planner(migbench, d, seed, objective):
    """The planner's (makespan, energy, bound makespan, bound energy; a bound None when the plan
    is exact), or None when it says no plan exists."""
    o = subprocess.run([migbench, "plan", "--jobs", f"{d}/j{seed}.yaml", "--profiles", f"{d}/p{seed}.csv",
                        "--objective", objective, "--threads", "1", "--time-limit", "600", "--json"],
                       capture_output=True, text=True)
    if o.returncode == 1:
        return None
    assert o.returncode == 0, o.stderr
    doc = json.loads(o.stdout)
    p, b = doc["predicted"], doc.get("bound") or {}
    return p["makespan_s"], p["energy_j"], b.get("makespan_s"), b.get("energy_j")


def decide(rows, jobs, count, cfgs, objective, got, tol, seed, bad):
    """When CBC cannot prove the optimum: asks it whether any plan beats the planner's by more
    than tol percent. No such plan (proven) means the planner is within tol of the optimum;
    one found is a failure. Returns whether the question was decided in the planner's favour."""
    v = got[1] if objective == "energy" else got[0]
    below = v / (1 + tol / 100)
    better, ok = milp(rows, jobs, count, cfgs, objective, below)
    if better is not None:
        bad.append(f"fleet {seed} {objective}: CBC found a plan of {better:.6g}, more than {tol}% "
                   f"below the planner's {v:.6g}")
    elif ok:
        print(f"fleet {seed} ({count} GPUs, {len(jobs)} jobs) {objective}: planner {v:.6g}; CBC did "
              f"not prove the optimum but proves no plan below {below:.6g}: within {tol}%")
        return True
    else:
        print(f"fleet {seed} {objective}: CBC proved neither the optimum nor that no plan is more "
              f"than {tol}% better within its {'time' if SECONDS else 'node'} limit")
    return False


def main():
    global GPUS, JOBS, SECONDS, SPARSE
    migbench, d = sys.argv[1], sys.argv[2]
    if "--cbc-seconds" in sys.argv:
        SECONDS = float(sys.argv[sys.argv.index("--cbc-seconds") + 1])
    n = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 30
    SPARSE = "--sparse" in sys.argv
    if "--large" in sys.argv:
        GPUS, JOBS = (2, 4), (6, 20)
    proven, within, bad = 0, 0, []
    worst = {"energy": 0.0, "makespan": 0.0}
    for seed in range(1, n + 1):
        rows, jobs, count = fleet(seed, d)
        usable = {s for (w, s) in rows}
        cfgs = configs(migbench, usable)
        for objective, tol in (("energy", 1.0), ("makespan", 3.0)):
            opt, ok = milp(rows, jobs, count, cfgs, objective)
            got = planner(migbench, d, seed, objective)
            if got is None and opt is not None:
                bad.append(f"fleet {seed} {objective}: planner says infeasible, CBC found a plan ({opt})")
                continue
            if not ok and got is not None:
                ok = decide(rows, jobs, count, cfgs, objective, got, tol, seed, bad)
                within += ok
                continue
            if not ok:
                print(f"fleet {seed} {objective}: CBC did not prove its answer within its "
                      f"{'time' if SECONDS else 'node'} limit")
                continue
            proven += 1
            if opt is None:
                if got is not None:
                    bad.append(f"fleet {seed}: CBC proves no plan, the planner found one {got}")
                else:
                    print(f"fleet {seed} ({count} GPUs, {len(jobs)} jobs) {objective}: no plan "
                          f"(CBC proves it; the planner says so too)")
                continue
            if got is None:
                bad.append(f"fleet {seed} {objective}: planner says infeasible, CBC solves it ({opt})")
                continue
            v = got[1] if objective == "energy" else got[0]
            lb = got[3] if objective == "energy" else got[2]
            if lb is not None and lb > opt * (1 + 1e-6):
                bad.append(f"fleet {seed} {objective}: reported lower bound {lb} above CBC's "
                           f"proven optimum {opt}")
            gap = (v - opt) / opt * 100
            worst[objective] = max(worst[objective], gap)
            lbgap = f", CBC over the planner's bound {(opt - lb) / lb * 100:+.3f}%" if lb else ""
            print(f"fleet {seed} ({count} GPUs, {len(jobs)} jobs) {objective}: planner {v:.6g}, "
                  f"CBC {opt:.6g}, gap {gap:+.3f}%{lbgap}")
            if gap > tol:
                bad.append(f"fleet {seed} {objective}: {gap:.2f}% over CBC's optimum (limit {tol}%)")
            if gap < -1e-4:
                bad.append(f"fleet {seed} {objective}: planner {v} below CBC's proven optimum {opt}")
    print(f"{proven} of {2 * n} proven optimal, {within} more proven within the tolerance, "
          f"{2 * n - proven - within} undecided; worst gap to a proven optimum: energy "
          f"{worst['energy']:.3f}%, makespan {worst['makespan']:.3f}%")
    if proven + within < n and not SECONDS:
        bad.append(f"only {proven} of {2 * n} fleet/objective pairs proven by CBC")
    for b in bad:
        print("FAIL:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
