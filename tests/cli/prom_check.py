# SPDX-License-Identifier: Apache-2.0
"""Checks a Prometheus textfile written by migbench.

usage: prom_check.py FILE [--results DIR]

- `promtool check metrics` passes except for the findings that dcgm-exporter's own naming causes,
  accepted by name: the camelCase label `modelName`, and the counter
  DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION without a `_total` suffix. Anything else fails.
- HELP and TYPE once per family, before its samples; no timestamps; no whole-GPU power or energy
  on a MIG-instance row (a row with GPU_I_ID).
- With --results: per run and attribution method, the jobs' migbench_job_energy_joules_total sum
  to the run's migbench_run_energy_joules_total, and that equals the sum of the energies in the
  run's cell.json files (the GPU's energy over the same windows).
"""
import glob
import json
import os
import re
import subprocess
import sys

ALLOWED = [
    re.compile(r"^(\S+) label names should be written in 'snake_case' not 'camelCase'$"),
    re.compile(r'^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter metrics should have "_total" suffix$'),
]
WHOLE_GPU_ENERGY_POWER = re.compile(
    r"^(DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION|DCGM_FI_DEV_POWER_MGMT_LIMIT"
    r"|migbench_power_.*|migbench_monitor_energy_joules_total)$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fail(msg):
    print("prom_check: " + msg, file=sys.stderr)
    sys.exit(1)


def parse(path):
    families, samples, order = {}, [], []
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name = line.split(" ")[1:3]
            fam = families.setdefault(name, {})
            if kind in fam:
                fail(f"{path}:{n}: second {kind} for {name}")
            if any(s[0] == name for s in samples):
                fail(f"{path}:{n}: {kind} of {name} after its samples")
            fam[kind] = line
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"{path}:{n}: not 'name{{labels}} value' (a timestamp?): {line}")
        name, labels = m.group(1), dict(LABEL.findall(m.group(3) or ""))
        if name not in families or set(families[name]) != {"HELP", "TYPE"}:
            fail(f"{path}:{n}: {name} without HELP and TYPE before it")
        samples.append((name, labels, float(m.group(4))))
    return families, samples


def promtool(path, samples):
    p = subprocess.run(["promtool", "check", "metrics"], stdin=open(path), capture_output=True,
                       text=True)
    camel = {name for name, labels, _ in samples if "modelName" in labels}
    for line in (p.stdout + p.stderr).splitlines():
        m = next((a.match(line) for a in ALLOWED if a.match(line)), None)
        if not m:
            fail(f"promtool: {line}")
        if m.groups() and m.group(1) not in camel:
            fail(f"promtool: camelCase finding on {m.group(1)}, which has no modelName label")
    if p.returncode not in (0, 3):  # 3: lint findings only
        fail(f"promtool exited {p.returncode}")


def energy_sums(samples, results):
    runs = {l["run"]: v for n, l, v in samples if n == "migbench_run_energy_joules_total"}
    if not runs:
        fail("no migbench_run_energy_joules_total")
    parts = {}
    for n, l, v in samples:
        if n == "migbench_job_energy_joules_total":
            parts.setdefault((l["run"], l["method"]), []).append(v)
    for run, total in runs.items():
        methods = [m for (r, m) in parts if r == run]
        if not methods:
            fail(f"run {run}: no attributed job energies")
        for m in methods:
            s = sum(parts[(run, m)])
            if round(s * 1000) != round(total * 1000):
                fail(f"run {run} method {m}: jobs sum to {s} J, the run's energy is {total} J")
        cells = glob.glob(os.path.join(results, run, "*", "cell.json"))
        measured = 0.0
        for c in cells:
            e = json.load(open(c))["energy"]
            measured += e["counter_j"] if e["counter_j"] is not None else e["integrated_j"]
        if not cells or abs(measured - total) > 0.001 * len(cells):
            fail(f"run {run}: cell.json energies sum to {measured} J, the file says {total} J")
        print(f"run {run}: {total:.3f} J = sum over jobs for {', '.join(sorted(methods))}")


def main():
    path = sys.argv[1]
    families, samples = parse(path)
    if not samples:
        fail("no samples")
    promtool(path, samples)
    for name, labels, _ in samples:
        if "GPU_I_ID" in labels and WHOLE_GPU_ENERGY_POWER.match(name):
            fail(f"whole-GPU {name} on a MIG instance row")
    if len(sys.argv) > 3 and sys.argv[2] == "--results":
        energy_sums(samples, sys.argv[3])
    print(f"{path}: {len(families)} families, {len(samples)} samples ok")


main()
