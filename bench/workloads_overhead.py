#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What progress reporting costs a workload (the job's side of running under migbench).

1. report(): the time of one migbench_progress.report() call into a pipe that a reader thread
   drains, against the time of one training step of each workload: the fraction is the share of
   the job's time spent reporting.
2. A/B (--ab): each workload for a fixed duration with no progress descriptor and with a real
   progress pipe read by this process, alternated, repeated; the mean throughput of each and the
   difference. With --migbench PATH the second arm is the job run under
   `PATH measure --device host --` instead (migbench reads the pipe, samples the device at
   100 ms and keeps the job's log): the tool's whole cost to the job. On a busy machine the run-to-run spread is far larger than the reporting cost;
   the spread is printed so the difference can be read against it.

Usage: /usr/bin/python3 bench/workloads_overhead.py [--ab] [--reps N] [--seconds S] [--migbench PATH]
Needs torch (for the workloads). Prints a table to stdout.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WL = os.path.join(ROOT, "workloads")
sys.path.insert(0, WL)

import migbench_progress  # noqa: E402

JOBS = [
    ("resnet18 64px b8", "vision.py", ["--model", "resnet18", "--image-size", "64", "--batch-size", "8"]),
    ("gpt2-tiny 8x64", "gpt.py", ["--size", "tiny", "--seq-len", "64", "--batch-size", "8"]),
]
RATE_RE = re.compile(r"stopped \(time limit\) after (\d+) steps, (\d+) \S+ in ([0-9.]+) s")


def report_cost(n=200000):
    r, w = os.pipe()
    stop = threading.Event()

    def drain():
        while True:
            if not os.read(r, 65536) and stop.is_set():
                return

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    rep = migbench_progress.Reporter(w)
    t0 = time.perf_counter()
    for i in range(1, n + 1):
        rep.report(i, i * 64, loss=3.14159)
    dt = time.perf_counter() - t0
    stop.set()
    os.close(w)
    t.join()
    os.close(r)
    return dt / n


def run_job(script, args, seconds, with_pipe, migbench=None):
    argv = [sys.executable, os.path.join(WL, script)] + args + [
        "--device", "cpu", "--threads", "1", "--log-every", "0", "--duration", str(seconds)]
    env = dict(os.environ)
    env.pop("MIGBENCH_PROGRESS_FD", None)
    if migbench:
        p = subprocess.run([migbench, "measure", "--device", "host", "--"] + argv,
                           capture_output=True, text=True, env=env)
        err = p.stderr
    elif not with_pipe:
        p = subprocess.run(argv, capture_output=True, text=True, env=env)
        err = p.stderr
    else:
        r, w = os.pipe()
        env["MIGBENCH_PROGRESS_FD"] = str(w)
        proc = subprocess.Popen(argv, pass_fds=(w,), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        os.close(w)
        lines = 0
        with os.fdopen(r, "rb", buffering=0) as rf:
            while True:
                chunk = rf.read(4096)
                if not chunk:
                    break
                lines += chunk.count(b"\n")
        err = proc.stderr.read()
        proc.wait()
    m = RATE_RE.search(err)
    if not m:
        raise SystemExit("bench: job did not finish as expected:\n" + err[-2000:])
    steps, units, secs = int(m.group(1)), int(m.group(2)), float(m.group(3))
    return units / secs, secs / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ab", action="store_true", help="also run the A/B comparison of whole jobs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--migbench", help="second A/B arm: the job under `migbench measure`")
    a = ap.parse_args()

    per_report = report_cost()
    print("report() into a drained pipe: %.2f us per line" % (per_report * 1e6))
    print("%-18s %12s %14s" % ("workload", "step (ms)", "report share"))
    steps = {}
    for name, script, args in JOBS:
        _rate, step_s = run_job(script, args, 5, False)
        steps[name] = step_s
        print("%-18s %12.1f %13.4f%%" % (name, step_s * 1e3, 100 * per_report / step_s))

    if a.ab:
        print()
        arm = "under migbench" if a.migbench else "with pipe"
        print("%-18s %22s %22s %9s" % ("workload", "bare (units/s)", arm + " (units/s)", "diff"))
        for name, script, args in JOBS:
            bare, piped = [], []
            for _ in range(a.reps):
                bare.append(run_job(script, args, a.seconds, False)[0])
                piped.append(run_job(script, args, a.seconds, True, a.migbench)[0])
            mb, mp = statistics.mean(bare), statistics.mean(piped)
            sb = statistics.stdev(bare) if len(bare) > 1 else float("nan")
            sp = statistics.stdev(piped) if len(piped) > 1 else float("nan")
            print("%-18s %14.1f +- %5.1f %14.1f +- %5.1f %+8.2f%%" % (name, mb, sb, mp, sp, 100 * (mp - mb) / mb))


if __name__ == "__main__":
    main()
