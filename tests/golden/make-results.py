#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the fixed, hand-shaped results directories the report tests read.

The numbers are invented but realistic (shaped after H100/A100 MIG training runs); every cell
says its device is emulated, so nothing here can be mistaken for a measurement. Deterministic:
run it again and the files are byte-identical. Usage: make-results.py [OUTDIR]
"""
import json
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

WORKLOADS = {
    "resnet50": {"unit": "images", "per_step": 64, "argv": ["{python}", "workloads/vision.py", "--model", "resnet50"]},
    "densenet121": {"unit": "images", "per_step": 64, "argv": ["{python}", "workloads/vision.py", "--model", "densenet121"]},
    "gpt2-small": {"unit": "tokens", "per_step": 8192, "argv": ["{python}", "workloads/gpt.py", "--size", "small"]},
}


WARMUP_S = 5


def job_entry(name, thr, ci, window_s, start_ns, end_ns, env, instance=None, pct=None, failed=None):
    """start_ns..end_ns is the job's measurement window; it was spawned WARMUP_S before it.
    steps and units are cumulative, as the runner records them (warm-up included)."""
    w = WORKLOADS[name]
    python = "/usr/bin/python3"
    argv = [a.replace("{python}", python) for a in w["argv"]]
    units = thr * (window_s + WARMUP_S) if thr is not None else None
    steps = int(units // w["per_step"]) if units is not None else None
    if steps is not None:
        units = float(steps * w["per_step"])
    return {
        "name": name, "workload": name, "unit": w["unit"], "argv": argv, "env": env,
        "instance": instance, "cpus": None, "thread_percentage": pct,
        "exit": failed or {"code": None, "signal": 15},
        "steps": steps, "units": units,
        "throughput": {"mean": None if thr is None else round(thr, 2),
                       "ci95": None if ci is None else round(ci, 2),
                       "unit_per_s": w["unit"] + "/s"},
        "window": {"start_ns": start_ns, "end_ns": end_ns,
                   "seconds": round((end_ns - start_ns) * 1e-9, 3)},
        "started_ns": start_ns - WARMUP_S * 10**9, "ended_ns": end_ns + 200_000_000,
        "log": "jobs/%s.log" % name,
    }


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def telemetry(rng, t0, t_end, power_fn, hz, style, activity_fn=None, njobs=0):
    """Rows every 1/hz s; returns (csv text, counter energy J, samples)."""
    dt = int(1e9 / hz)
    rows, t, energy_mj, prev = [], t0, 0.0, None
    while t <= t_end:
        p = power_fn(t) + rng.gauss(0, 4.0)
        if prev is not None:
            energy_mj += 0.5 * (p + prev[1]) * (t - prev[0]) * 1e-6
        prev = (t, p)
        acts = [activity_fn(t, i) for i in range(njobs)] if activity_fn else []
        rows.append((t, p, energy_mj, acts))
        t += dt
    if style == "ns":
        # The meter's columns (src/power/meter.c); energy_dram_mj is unsupported here, so empty.
        head = ("t_ns,t_s,read_ok,power_mw,power_instant_mw,power_avg_mw,energy_mj,"
                "energy_dram_mj,util_gpu_pct,util_mem_pct,mem_used_bytes,clock_sm_mhz,"
                "clock_mem_mhz,temp_c,throttle_reasons,power_limit_mw")
        if activity_fn:
            for g in range(1, njobs + 1):
                head += ",gi%d_mem_used_bytes,gi%d_sm_util_pct" % (g, g)
        lines = [head]
        for (t, p, e, acts) in rows:
            busy = p > 150
            line = "%d,%.9f,1,%d,,%d,%d,,%d,%d,%d,1980,2619,%d,0,700000" % (
                t, (t - t0) * 1e-9, round(p * 1000), round(p * 1000), round(e),
                97 if busy else 0, 41 if busy else 0, 31 << 30, 62 if busy else 36)
            if activity_fn:
                line += "," + ",".join("%d,%.1f" % (10 << 30, 100 * a) for a in acts)
            lines.append(line)
    else:  # the other accepted spelling: seconds and watts, no energy column
        lines = ["t_s,power_w"]
        for (t, p, e, acts) in rows:
            lines.append("%.3f,%.1f" % ((t - t0) * 1e-9, p))
    return "\n".join(lines) + "\n", energy_mj / 1000.0, len(rows)


def device(model, name, mig_instances):
    return {
        "backend": "emu", "emulated": True, "name": name, "model": model,
        "uuid": "GPU-emu-%s-0000" % model, "driver_version": None, "nvml_version": None,
        "power_limit_mw": 700000 if "H100" in model else 400000,
        "sensor": {"energy_counter": True, "power_semantics": "1s-average" if "H100" in model else "instant",
                   "period_ms": 100 if "H100" in model else 20},
        "mig": {"mode": 1 if mig_instances else 0, "instances": mig_instances},
    }


def make_experiment(root, exp, model, devname, base, runs, reps=3, seed=1, tel_style="ns",
                    idle_w=88.0, hz=4, interrupted_after=None):
    rng = random.Random(seed)
    journal = [{"event": "experiment_started", "experiment": exp, "t_unix": 1764400000}]
    clock = 5_000_000_000_000  # monotonic ns
    for run in runs:
        for rep in range(reps):
            mode = run["mode"]
            celldir = os.path.join(root, run["name"], str(rep))
            t0 = clock
            idle_s = 5.0
            start = t0 + int(idle_s * 1e9)
            jobs = []
            mig_inst = []
            phases = []  # (start, end, power_w) while jobs run
            failed = run.get("fail_rep") == rep
            if mode == "exclusive":
                t = start
                for name in run["jobs"]:
                    thr = base[name]["thr"] * (1 + rng.gauss(0, 0.012))
                    end = t + int(run["seconds"] * 1e9)
                    jobs.append(job_entry(name, thr, thr * 0.006, run["seconds"], t, end,
                                          {"CUDA_VISIBLE_DEVICES": "0"}))
                    phases.append((t, end, base[name]["power"] * (1 + rng.gauss(0, 0.01))))
                    t = end
                wend = t
            else:
                wend = start + int(run["seconds"] * 1e9)
                for i, name in enumerate(run["jobs"]):
                    thr = base[name]["thr"] * run["norm"][i] * (1 + rng.gauss(0, 0.015))
                    inst = None
                    pct = None
                    env = {"CUDA_VISIBLE_DEVICES": "0"}
                    if mode == "mig":
                        prof = run["layout"][i]
                        uuid = "MIG-emu-%s-%d-%d" % (model, rep, i)
                        inst = {"profile": prof, "uuid": uuid}
                        env = {"CUDA_VISIBLE_DEVICES": uuid}
                        mig_inst.append({"profile": prof, "placement": run["placement"][i],
                                         "gi_id": i + 1, "ci_id": 0, "uuid": uuid})
                    if mode == "mps":
                        pct = run["pct"][i]
                        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(pct)
                    if failed:
                        jobs.append(job_entry(name, None, None, run["seconds"], start,
                                              start + 2_100_000_000, env, inst, pct,
                                              {"code": 1, "signal": None} if name == run["fail_job"]
                                              else {"code": None, "signal": 15}))
                    elif False:
                        jobs.append(job_entry(name, None, None, run["seconds"], start,
                                              start + 2_100_000_000, env, inst, pct,
                                              {"code": 1, "signal": None}))
                    else:
                        jobs.append(job_entry(name, thr, thr * 0.008, run["seconds"], start,
                                              wend, env, inst, pct))
                phases.append((start, wend, run["power"] * (1 + rng.gauss(0, 0.01))))
            if failed:
                wend = start + 2_100_000_000
                phases = [(start, wend, idle_w + 60)]
            tend = wend + 2_000_000_000

            def power(t, phases=phases):
                for (a, b, p) in phases:
                    if a <= t < b:
                        return p
                return idle_w

            act_fn = None
            if mode == "mig":
                busy = run.get("activity", [0.9] * len(run["jobs"]))

                def act_fn(t, i, busy=busy):  # SM utilisation of the instance, 0..1
                    if start <= t < wend:
                        return min(1.0, max(0.0, busy[i] + rng.gauss(0, 0.02)))
                    return 0.0
            text, _, nsamp = telemetry(rng, t0, tend, power, hz, tel_style, act_fn,
                                       len(run["jobs"]))
            if not run.get("no_telemetry_rep") == rep:
                write(os.path.join(celldir, "telemetry.csv"), text)
            # The window's energy: integral of the (noise-free) phases, plus a sensor error.
            counter = sum((b - a) * 1e-9 * p for (a, b, p) in phases)
            gap = rng.gauss(0, 0.4)
            if run.get("gap_rep") == rep:
                gap = 2.7
            integrated = counter * (1 + gap / 100)
            win_s = (wend - start) * 1e-9
            refused = None
            if run.get("refuse_rep") == rep:
                refused = "energy counter did not advance over the window (zero delta)"
            energy = {
                "counter_j": None if refused or failed else round(counter, 3),
                "integrated_j": None if refused or failed else round(integrated, 3),
                "gap_pct": None if refused or failed else round(gap, 2),
                "flag": ("gap" if abs(gap) > 2 else "ok") if not (refused or failed) else None,
                "refused_reason": refused,
                "idle_power_w": idle_w + round(rng.gauss(0, 0.5), 2),
                "mean_power_w": None if failed else round(counter / win_s, 1),
                "peak_power_w": None if failed else round(max(p for (_, _, p) in phases) + 25, 1),
                "samples": nsamp, "missed_updates": run.get("missed", {}).get(rep, 0),
            }
            cell = {
                "schema": 1, "experiment": exp, "experiment_sha": "fnv1a64:9c1f2e77d04a3b65",
                "run": run["name"], "mode": mode, "rep": rep,
                "status": "failed" if failed else "ok",
                "failure": {"job": run["fail_job"], "reason": run["fail_reason"],
                            "log_tail": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"}
                if failed else None,
                "migbench_version": "0.1.0", "started_unix": 1764400000 + (t0 - 5_000_000_000_000) // 10**9,
                "t0_ns": t0,
                "window": {"start_ns": start, "end_ns": wend, "seconds": round(win_s, 3)},
                "device": device(model, devname, mig_inst),
                "mps": {"thread_percentage": run["pct"]} if mode == "mps" else None,
                "reconfigure_seconds": 4.2 if mode == "mig" else None,
                "energy": energy, "jobs": jobs,
                "future_field": {"ignored": True},
            }
            write(os.path.join(celldir, "cell.json"), json.dumps(cell, indent=2) + "\n")
            for j in jobs:
                write(os.path.join(celldir, "jobs", j["name"] + ".log"),
                      "step=1 samples=64\n" if not failed else "RuntimeError: CUDA out of memory\n")
            journal.append({"event": "cell_started", "run": run["name"], "rep": rep})
            journal.append({"event": "cell_failed" if failed else "cell_finished",
                            "run": run["name"], "rep": rep})
            clock = tend + 30_000_000_000
    tail = ""
    if interrupted_after:
        # A fourth repetition that was interrupted before it wrote its cell, and a torn line.
        journal.append({"event": "cell_started", "run": interrupted_after, "rep": reps})
        journal.append({"event": "interrupted", "signal": "SIGINT"})
        tail = '{"event": "cell_sta'
    write(os.path.join(root, "journal.jsonl"),
          "".join(json.dumps(j) + "\n" for j in journal) + tail)


H100 = {
    "resnet50": {"thr": 2750.0, "power": 540.0},
    "densenet121": {"thr": 1620.0, "power": 470.0},
    "gpt2-small": {"thr": 98000.0, "power": 610.0},
}
A100 = {
    "resnet50": {"thr": 1400.0, "power": 330.0},
    "densenet121": {"thr": 880.0, "power": 300.0},
    "gpt2-small": {"thr": 51000.0, "power": 370.0},
}
JOBS = ["gpt2-small", "resnet50", "densenet121"]
make_experiment(
    os.path.join(OUT, "results-h100"), "paper-mix", "H100-80GB", "NVIDIA H100 80GB HBM3 (emulated)",
    H100, [
        {"name": "exclusive", "mode": "exclusive", "jobs": ["resnet50", "densenet121", "gpt2-small"], "seconds": 20},
        {"name": "timeslice", "mode": "timeslice", "jobs": JOBS, "seconds": 30, "power": 660.0,
         "norm": [0.36, 0.35, 0.37], "gap_rep": 2},
        {"name": "mps", "mode": "mps", "jobs": JOBS, "seconds": 30, "power": 640.0,
         "norm": [0.58, 0.37, 0.24], "pct": [57, 29, 14], "missed": {1: 3}},
        {"name": "mig", "mode": "mig", "jobs": JOBS, "seconds": 30, "power": 505.0,
         "norm": [0.55, 0.33, 0.19], "layout": ["4g.40gb", "2g.20gb", "1g.10gb"],
         "placement": [{"start": 0, "size": 4}, {"start": 4, "size": 2}, {"start": 6, "size": 1}],
         "activity": [0.93, 0.88, 0.97],
         "fail_rep": 1, "fail_job": "densenet121", "fail_reason": "exited with status 1 (CUDA out of memory)"},
    ], seed=7, interrupted_after="mig")
make_experiment(
    os.path.join(OUT, "results-a100"), "paper-mix", "A100-80GB", "NVIDIA A100-SXM4-80GB (emulated)",
    A100, [
        {"name": "exclusive", "mode": "exclusive", "jobs": ["resnet50", "densenet121", "gpt2-small"], "seconds": 20},
        {"name": "timeslice", "mode": "timeslice", "jobs": JOBS, "seconds": 30, "power": 380.0,
         "norm": [0.35, 0.36, 0.36], "no_telemetry_rep": 0, "refuse_rep": 2},
        {"name": "mig", "mode": "mig", "jobs": JOBS, "seconds": 30, "power": 300.0,
         "norm": [0.56, 0.31, 0.18], "layout": ["4g.40gb", "2g.20gb", "1g.10gb"],
         "placement": [{"start": 0, "size": 4}, {"start": 4, "size": 2}, {"start": 6, "size": 1}],
         "activity": [0.9, 0.85, 0.95]},
    ], seed=11, tel_style="s", idle_w=55.0, hz=2)
