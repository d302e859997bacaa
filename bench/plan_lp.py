# SPDX-License-Identifier: Apache-2.0
"""The makespan bound of a fleet instance by linear programming (issue 29), independent of the
planner's code: for a trial makespan M, fractional GPUs x_c per MIG layout c (from `migbench
layouts`) or MIG off, and each job split over the sizes it may use that finish it within M
(memory from the size's name), each size's total time within M x its instances; the least G
that carries the jobs at M, found by CBC's LP solver (python3-pulp), against the fleet's GPUs, by
bisection over M. This is the strongest bound of the planner's kind (its weights are this LP's
dual), so the planner's bound below it means its weight tuning falls short, and the gap from it
to the plan is the jobs' discreteness and the search's. Instance files from bench_plan_fleet with
BENCH_PLAN_DUMP=DIR. Usage: plan_lp.py MIGBENCH DIR [LO_S HI_S]
"""
import json
import re
import subprocess
import sys

import pulp

MEM = {"1g.10gb": 10240, "1g.20gb": 20480, "2g.20gb": 20480, "3g.40gb": 40960, "4g.40gb": 40960,
       "7g.80gb": 81920, "full": 81920}


def load(d):
    rows = {}
    with open(f"{d}/profiles.csv") as f:
        next(f)
        for line in f:
            w, _, p, thr, _, _, _, mem = line.strip().split(",")
            if float(mem) <= MEM[p]:
                rows.setdefault(w, {})[p] = float(thr)
    jobs, count = [], 0
    with open(f"{d}/jobs.yaml") as f:
        for line in f:
            m = re.match(r"count: (\d+)", line)
            if m:
                count = int(m.group(1))
            m = re.search(r"workload: (\w+), work: ([0-9.e+-]+)", line)
            if m:
                jobs.append({p: float(m.group(2)) / thr for p, thr in rows[m.group(1)].items()})
    return jobs, count


def layouts(migbench):
    lay = json.loads(subprocess.run([migbench, "layouts", "--gpu", "H100-80GB", "--json"],
                                    check=True, capture_output=True, text=True).stdout)
    out = []
    for l in lay:
        c = {}
        for p in l["profiles"]:
            c[p] = c.get(p, 0) + 1
        if c not in out:
            out.append(c)
    out.append({"full": 1})
    return out


def gpus_needed(jobs, cfgs, M):
    m = pulp.LpProblem("fluid", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{c}", lowBound=0) for c in range(len(cfgs))]
    load = {}
    for j, t in enumerate(jobs):
        ok = [p for p in t if t[p] <= M]
        if not ok:
            return float("inf")
        y = {p: pulp.LpVariable(f"y{j}_{p.replace('.', '_')}", lowBound=0) for p in ok}
        m += pulp.lpSum(y.values()) == 1
        for p, v in y.items():
            load.setdefault(p, []).append(t[p] * v)
    for p, terms in load.items():
        m += pulp.lpSum(terms) <= M * pulp.lpSum(cfgs[c].get(p, 0) * x[c] for c in range(len(cfgs)))
    m += pulp.lpSum(x)
    m.solve(pulp.COIN_CMD(msg=0, threads=1))
    return pulp.value(m.objective)


def main():
    migbench, d = sys.argv[1], sys.argv[2]
    jobs, count = load(d)
    cfgs = layouts(migbench)
    lo = float(sys.argv[3]) if len(sys.argv) > 3 else max(min(t.values()) for t in jobs)
    hi = float(sys.argv[4]) if len(sys.argv) > 4 else lo * 4
    while gpus_needed(jobs, cfgs, hi) > count:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-4 * lo:
        mid = (lo + hi) / 2
        if gpus_needed(jobs, cfgs, mid) <= count * (1 + 1e-9):
            hi = mid
        else:
            lo = mid
    print(f"{len(jobs)} jobs, {count} GPUs, {len(cfgs)} layouts: LP makespan bound {hi:.6g} s")


if __name__ == "__main__":
    main()
