# SPDX-License-Identifier: Apache-2.0
"""The planner against an exact MILP (issue 29): random small fleets (2-4 H100s, 6-20 jobs, four
workloads shaped like the study's, one needing 30 GB), each solved by `migbench plan` and, from the
same inputs, by CBC (python3-pulp) over a formulation of the model written here independently of
the planner's code: per GPU one configuration (a maximal layout of the usable sizes, from
`migbench layouts`, or MIG off); per size s up to k_s instance slots, slot q of size s existing when
the configuration has more than q instances of s; every job on one existing slot of a size it may
use; each slot's queue finishes within the makespan M; energy G idle M + sum of dynamic energies.

Only CBC's proven optima are compared (its node limit is deterministic, so which fleets count does
not depend on the machine's speed). Fails when, on a proven fleet, the planner's makespan is more
than 3 % above CBC's under the makespan objective, its energy more than 1 % above under the energy
objective, or it calls a fleet infeasible that CBC solves; or when fewer than half the fleets were
proven; or when the planner's reported lower bound exceeds CBC's proven optimum (a bound that
is not one). Usage: plan_milp.py MIGBENCH TMPDIR [FLEETS] [--large] [--cbc-seconds S]
The CI test (plan_cbc.sh) runs 2-3 GPUs and 5-10 jobs; --large the issue's 2-4 GPUs, 6-20 jobs.
--cbc-seconds S gives CBC a time limit of S seconds per solve instead of its node limit (which
fleets are proven then depends on the machine; bench/plan_cbc.sh), and the check that half the
fleets were proven is dropped.
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


def fleet(seed, d):
    """Writes the profiles and the jobs of fleet `seed`; returns (rows, jobs, count)."""
    r = random.Random(seed)
    rows = {}
    for w in range(4):
        base, a, dyn = r.uniform(100, 1000), r.uniform(0.3, 1.0), r.uniform(150, 450)
        mem = 30000 if w == 0 else 6000
        for name, cs, _ in SIZES:
            if name != "full" and name != "7g.80gb" and r.random() < 0.2:
                continue  # not profiled there
            rows[(f"w{w}", name)] = (base * (cs / 7) ** a, IDLE + dyn * (cs / 7) ** 0.6, mem)
    count = r.randint(GPUS[0], GPUS[1])
    jobs = [(f"j{j}", f"w{r.randrange(4)}", round(r.uniform(2e4, 2e5))) for j in range(r.randint(JOBS[0], JOBS[1]))]
    with open(f"{d}/p{seed}.csv", "w") as f:
        f.write("workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy\n")
        for (w, p), (thr, pw, mem) in rows.items():
            f.write(f"{w},H100-80GB,{p},{thr:.6f},u,{pw:.6f},{IDLE},{mem},t,false\n")
    with open(f"{d}/j{seed}.yaml", "w") as f:
        f.write(f"gpu: H100-80GB\ncount: {count}\njobs:\n")
        for n, w, work in jobs:
            f.write(f"  - {{name: {n}, workload: {w}, work: {work}}}\n")
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


def milp(rows, jobs, count, cfgs, objective):
    """CBC's optimum: (value, proven) or (None, proven) when it proves no plan exists."""
    mem = {s: m for s, _, m in SIZES}
    allowed = {}
    for j, (_, w, work) in enumerate(jobs):
        for s, _, _ in SIZES:
            if (w, s) in rows and rows[(w, s)][2] <= mem[s]:
                thr, pw, _ = rows[(w, s)]
                allowed[(j, s)] = (work / thr, (pw - IDLE) * work / thr)
    kmax = {s: max([c.get(s, 0) for c in cfgs] + [0]) for s, _, _ in SIZES}
    m = pulp.LpProblem("plan", pulp.LpMinimize)
    z = {(g, c): pulp.LpVariable(f"z_{g}_{c}", cat="Binary") for g in range(count) for c in range(len(cfgs))}
    x = {}
    for (j, s) in allowed:
        for g in range(count):
            for q in range(kmax[s]):
                x[(j, g, s, q)] = pulp.LpVariable(f"x_{j}_{g}_{s.replace('.', '_')}_{q}", cat="Binary")
    M = pulp.LpVariable("M", lowBound=0)
    dyn = pulp.lpSum(allowed[(j, s)][1] * v for (j, g, s, q), v in x.items())
    energy = count * IDLE * M + dyn
    m += M if objective == "makespan" else energy
    for g in range(count):
        m += pulp.lpSum(z[(g, c)] for c in range(len(cfgs))) == 1
        if g > 0:  # identical GPUs: configurations in non-increasing index order
            m += pulp.lpSum(c * z[(g, c)] for c in range(len(cfgs))) <= \
                pulp.lpSum(c * z[(g - 1, c)] for c in range(len(cfgs)))
        for s, _, _ in SIZES:
            for q in range(kmax[s]):
                exists = pulp.lpSum(z[(g, c)] for c in range(len(cfgs)) if cfgs[c].get(s, 0) > q)
                on = [(j, v) for (j, gg, ss, qq), v in x.items() if gg == g and ss == s and qq == q]
                for j, v in on:
                    m += v <= exists
                load = pulp.lpSum(allowed[(j, s)][0] * v for j, v in on)
                m += load <= M
                if q > 0:  # identical slots: loads in non-increasing order
                    m += load <= prev
                prev = load
    for j in range(len(jobs)):
        m += pulp.lpSum(v for (jj, g, s, q), v in x.items() if jj == j) == 1
    # Debian's python3-pulp uses the coinor-cbc binary on PATH (it bundles none).
    limit = [f"sec {SECONDS}"] if SECONDS else [f"maxNodes {NODES}"]
    st = m.solve(pulp.COIN_CMD(msg=0, threads=1, options=limit))
    if pulp.LpStatus[st] == "Infeasible":
        return None, True
    proven = m.sol_status == pulp.LpSolutionOptimal
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


def main():
    global GPUS, JOBS, SECONDS
    migbench, d = sys.argv[1], sys.argv[2]
    if "--cbc-seconds" in sys.argv:
        SECONDS = float(sys.argv[sys.argv.index("--cbc-seconds") + 1])
    n = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 30
    if "--large" in sys.argv:
        GPUS, JOBS = (2, 4), (6, 20)
    proven, bad = 0, []
    worst = {"energy": 0.0, "makespan": 0.0}
    for seed in range(1, n + 1):
        rows, jobs, count = fleet(seed, d)
        usable = {s for (w, s) in rows}
        cfgs = configs(migbench, usable)
        for objective, tol in (("energy", 1.0), ("makespan", 3.0)):
            opt, ok = milp(rows, jobs, count, cfgs, objective)
            got = planner(migbench, d, seed, objective)
            if not ok:
                print(f"fleet {seed} {objective}: CBC did not prove its answer within its "
                      f"{'time' if SECONDS else 'node'} limit")
                continue
            proven += 1
            if opt is None:
                if got is not None:
                    bad.append(f"fleet {seed}: CBC proves no plan, the planner found one {got}")
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
    print(f"{proven} of {2 * n} proven; worst gap energy {worst['energy']:.3f}%, "
          f"makespan {worst['makespan']:.3f}%")
    if proven < n and not SECONDS:
        bad.append(f"only {proven} of {2 * n} fleet/objective pairs proven by CBC")
    for b in bad:
        print("FAIL:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
