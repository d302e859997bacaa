# SPDX-License-Identifier: Apache-2.0
"""Per-GPU power limits against CBC (issue 29): random small fleets (2-3 H100s, 6-10 jobs, the
workloads of tests/cli/plan_milp.py) with profile rows at the default limit and at 300 W (each
row slowed and its power cut by the emulator's DVFS rule: a load whose power above idle exceeds
the room under the limit runs at the cube root of the ratio, power falling with the cube), planned
by `migbench plan --power-limits default,300W` and, from the same inputs, by CBC over a
formulation written here: the MILP of plan_milp.py with a limit per GPU (binary y[g][k], each job
on an existing slot at its GPU's limit, timed on that limit's row) and, for the shared-limit
optimum, the same with every GPU's y equal. Two capped variants, as in the issue: energy under a
makespan cap (1.05 x the planner's default-limit makespan plan) and makespan under an energy cap
(40 % of the way from the planner's least 300 W energy to its least default energy). Reports per
fleet the planner's per-GPU plan, its best shared limit, CBC's per-GPU and shared optima (proven
or not within the time limit). Not run in CI; the numbers go to BENCHMARKS.md.
Usage: plan_cbc_pergpu.py MIGBENCH TMPDIR [FLEETS] [CBC_SECONDS]
"""
import json
import math
import os
import statistics
import subprocess
import sys

import pulp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from plan_milp import IDLE, SIZES, configs, draw, write_jobs  # noqa: E402  (the same fleets)

CAPS = [None, 300.0]  # None: the default limit


def dvfs(thr, pw, cap):
    """A row measured at the default limit, under `cap` W."""
    if cap is None or pw <= cap:
        return thr, pw
    room, dyn = cap - IDLE, pw - IDLE
    s = (room / dyn) ** (1 / 3)
    return thr * s, IDLE + dyn * s ** 3


def fleet(seed, d):
    """plan_milp.py's fleet `seed` (2-3 GPUs, 6-10 jobs) with each row also under 300 W."""
    base, count, jobs = draw(seed, (2, 3), (6, 10))
    rows = {}
    for (w, name), (thr, pw, mem) in base.items():
        for k, cap in enumerate(CAPS):
            t, p = dvfs(thr, pw, cap)
            rows[(w, name, k)] = (t, p, mem)
    with open(f"{d}/p{seed}.csv", "w") as f:
        f.write("workload,gpu,partition,throughput,unit,power_w,idle_power_w,peak_mem_mib,source,proxy,"
                "power_limit_w\n")
        for (w, p, k), (thr, pw, mem) in rows.items():
            cap = "" if CAPS[k] is None else f"{CAPS[k]:g}"
            f.write(f"{w},H100-80GB,{p},{thr:.6f},u,{pw:.6f},{IDLE},{mem},t,false,{cap}\n")
    write_jobs(d, seed, count, jobs)
    return rows, jobs, count


def milp(rows, jobs, count, cfgs, objective, mcap, ecap, shared, secs):
    """CBC: (value or None, proven)."""
    mem = {s: m for s, _, m in SIZES}
    K = len(CAPS)
    allowed = {}
    for j, (_, w, work) in enumerate(jobs):
        for s, _, _ in SIZES:
            for k in range(K):
                if (w, s, k) in rows and rows[(w, s, k)][2] <= mem[s]:
                    thr, pw, _ = rows[(w, s, k)]
                    allowed[(j, s, k)] = (work / thr, (pw - IDLE) * work / thr)
    kmax = {s: max([c.get(s, 0) for c in cfgs] + [0]) for s, _, _ in SIZES}
    m = pulp.LpProblem("plan", pulp.LpMinimize)
    z = {(g, c): pulp.LpVariable(f"z_{g}_{c}", cat="Binary") for g in range(count) for c in range(len(cfgs))}
    y = {(g, k): pulp.LpVariable(f"y_{g}_{k}", cat="Binary") for g in range(count) for k in range(K)}
    x = {}
    for (j, s, k) in allowed:
        for g in range(count):
            for q in range(kmax[s]):
                x[(j, g, s, q, k)] = pulp.LpVariable(f"x_{j}_{g}_{s.replace('.', '_')}_{q}_{k}", cat="Binary")
    M = pulp.LpVariable("M", lowBound=0)
    energy = count * IDLE * M + pulp.lpSum(allowed[(j, s, k)][1] * v for (j, g, s, q, k), v in x.items())
    m += M if objective == "makespan" else energy
    if mcap:
        m += M <= mcap
    if ecap:
        m += energy <= ecap
    for g in range(count):
        m += pulp.lpSum(z[(g, c)] for c in range(len(cfgs))) == 1
        m += pulp.lpSum(y[(g, k)] for k in range(K)) == 1
        if g > 0 and shared:
            for k in range(K):
                m += y[(g, k)] == y[(0, k)]
        elif g > 0:  # identical GPUs: limits in non-decreasing index order
            m += pulp.lpSum(k * y[(g, k)] for k in range(K)) >= pulp.lpSum(k * y[(g - 1, k)] for k in range(K))
        for s, _, _ in SIZES:
            for q in range(kmax[s]):
                exists = pulp.lpSum(z[(g, c)] for c in range(len(cfgs)) if cfgs[c].get(s, 0) > q)
                on = [(j, k, v) for (j, gg, ss, qq, k), v in x.items() if gg == g and ss == s and qq == q]
                for j, k, v in on:
                    m += v <= exists
                    m += v <= y[(g, k)]
                m += pulp.lpSum(allowed[(j, s, k)][0] * v for j, k, v in on) <= M
    for j in range(len(jobs)):
        m += pulp.lpSum(v for (jj, g, s, q, k), v in x.items() if jj == j) == 1
    st = m.solve(pulp.COIN_CMD(msg=0, threads=1, options=[f"sec {secs}"]))
    if pulp.LpStatus[st] == "Infeasible":
        return None, True
    if m.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None, False
    return pulp.value(m.objective), m.sol_status == pulp.LpSolutionOptimal


def plan(migbench, d, seed, objective, extra):
    o = subprocess.run([migbench, "plan", "--jobs", f"{d}/j{seed}.yaml", "--profiles", f"{d}/p{seed}.csv",
                        "--objective", objective, "--threads", "1", "--time-limit", "60", "--json"] + extra,
                       capture_output=True, text=True)
    if o.returncode != 0:
        return None
    return json.loads(o.stdout)


def main():
    migbench, d = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    secs = float(sys.argv[4]) if len(sys.argv) > 4 else 30
    gains, cbc_gains, gaps = {"energy": [], "makespan": []}, {"energy": [], "makespan": []}, \
        {"energy": [], "makespan": []}
    for seed in range(1, n + 1):
        rows, jobs, count = fleet(seed, d)
        usable = {s for (w, s, k) in rows}
        cfgs = configs(migbench, usable)
        base_m = plan(migbench, d, seed, "makespan", ["--power-limits", "default"])
        e_def = plan(migbench, d, seed, "energy", ["--power-limits", "default"])
        e_low = plan(migbench, d, seed, "energy", ["--power-limits", "300W"])
        mcap = 1.05 * base_m["predicted"]["makespan_s"]
        lo, hi = e_low["predicted"]["energy_j"], e_def["predicted"]["energy_j"]
        ecap = lo + 0.4 * (hi - lo) if hi > lo else 1.05 * lo
        for objective, cap in (("energy", ["--makespan-cap", f"{mcap:.6f}"]),
                               ("makespan", ["--energy-cap", f"{ecap:.6f}"])):
            key = "energy_j" if objective == "energy" else "makespan_s"
            p = plan(migbench, d, seed, objective, cap + ["--power-limits", "default,300W"])
            if p is None:
                print(f"fleet {seed} {objective}: the planner found no plan")
                continue
            mine = p["predicted"][key]
            shared = min([x[key] for x in p["power_limits"] if x["status"] == "ok"] or [math.inf])
            lims = [g["power_limit_w"] for g in p["gpus"]]
            kw = dict(mcap=mcap if objective == "energy" else None,
                      ecap=ecap if objective == "makespan" else None)
            per, per_ok = milp(rows, jobs, count, cfgs, objective, shared=False, secs=secs, **kw)
            sh, sh_ok = milp(rows, jobs, count, cfgs, objective, shared=True, secs=secs, **kw)
            gain = (shared - mine) / shared * 100 if math.isfinite(shared) else math.nan
            cg = (sh - per) / sh * 100 if per and sh else math.nan
            gap = (mine - per) / per * 100 if per else math.nan
            gains[objective].append(gain)
            if per_ok and sh_ok:
                cbc_gains[objective].append(cg)
            if per_ok:
                gaps[objective].append(gap)
            print(f"fleet {seed} ({count} GPUs, {len(jobs)} jobs) {objective}: planner per-GPU "
                  f"{mine:.6g} (limits {lims}), best shared {shared:.6g} ({gain:+.2f}%); CBC per-GPU "
                  f"{per if per is None else f'{per:.6g}'} ({'proven' if per_ok else 'not proven'}), "
                  f"shared {sh if sh is None else f'{sh:.6g}'} ({'proven' if sh_ok else 'not proven'}); "
                  f"planner over CBC per-GPU {gap:+.2f}%", flush=True)
    for o in ("energy", "makespan"):
        g = [x for x in gains[o] if math.isfinite(x)]
        c = [x for x in cbc_gains[o] if math.isfinite(x)]
        q = [x for x in gaps[o] if math.isfinite(x)]
        fmt = lambda v: f"median {statistics.median(v):.2f}%, max {max(v):.2f}% (n={len(v)})" if v else "n/a"
        print(f"{o}: planner per-GPU vs its best shared limit: {fmt(g)}; CBC per-GPU vs CBC shared "
              f"(both proven): {fmt(c)}; planner over CBC's proven per-GPU optimum: {fmt(q)}")


if __name__ == "__main__":
    main()
