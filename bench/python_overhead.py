#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the migbench Python package costs a training loop (docs/python.md).

1. step(): one migbench.step(samples=...) call, (a) alone (no progress channel: it only counts)
   and (b) under migbench (a pipe that another process drains, as `migbench run` does): mean
   over N calls.
   (c) workloads/migbench_progress.py's report() on the same pipe, for comparison.
2. A window: Meter.begin + Meter.end on the emulated GPU (the end waits for the meter's extra
   sample); and an open window's cost to the loop: the CPU time the meter's sampling thread takes
   per second of window (process CPU time minus this thread's), at the default 100 ms interval
   and at 10 ms, and a fixed arithmetic loop timed with no meter and inside an open window,
   alternated.

Usage: MIGBENCH_LIBRARY=build/libmigbench.so.1 /usr/bin/python3 bench/python_overhead.py [--calls N]
Prints a table to stdout.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import migbench  # noqa: E402

EMU = "emu:A100-40GB:load=0.5"


def per_call(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def step_alone(n):
    p = migbench.Progress()
    p._fd = -1  # as without MIGBENCH_PROGRESS_FD
    return per_call(lambda: p.step(samples=64), n)


def standalone_piped(n):
    """workloads/migbench_progress.py's report() on the same kind of pipe, for comparison."""
    sys.path.insert(0, os.path.join(ROOT, "workloads"))
    import migbench_progress

    r, w = os.pipe()
    reader = subprocess.Popen(["cat"], stdin=r, stdout=subprocess.DEVNULL)
    os.close(r)
    rep = migbench_progress.Reporter(w)
    k = [0]

    def one():
        k[0] += 1
        rep.report(k[0], 64 * k[0])

    cost = per_call(one, n)
    os.close(w)
    reader.wait()
    return cost


def step_piped(n):
    # The reader is another process, as migbench is (a reader thread here would compete for
    # the GIL and be counted as step()'s cost).
    r, w = os.pipe()
    reader = subprocess.Popen(["cat"], stdin=r, stdout=subprocess.DEVNULL)
    os.close(r)
    os.environ["MIGBENCH_PROGRESS_FD"] = str(w)
    # mb_progress_fd() reads the variable once per process: this benchmark sets it before the
    # first step of the process, so the C side sees the pipe.
    p = migbench.Progress()
    cost = per_call(lambda: p.step(samples=64), n)
    os.close(w)
    reader.wait()
    return cost


def busy(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def meter_cost(interval, seconds):
    with migbench.Meter(EMU, interval=interval, min_window=0.1) as m:
        begin_end = per_call(lambda: (m.begin("w"), m.end("w")), 50)
        m.begin("open")
        c0, t0, w0 = time.process_time(), time.thread_time(), time.monotonic()
        busy(3_000_000)
        while time.monotonic() - w0 < seconds:
            busy(100_000)
        wall = time.monotonic() - w0
        other = (time.process_time() - c0) - (time.thread_time() - t0)
        m.end("open")
    return begin_end, other / wall


def loop_ab(reps, n):
    bare, inside = [], []
    with migbench.Meter(EMU) as m:
        for _ in range(reps):
            t = time.perf_counter()
            busy(n)
            bare.append(time.perf_counter() - t)
            m.begin("ab")
            t = time.perf_counter()
            busy(n)
            inside.append(time.perf_counter() - t)
            m.end("ab")
    return bare, inside


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    print("library %s, python %s" % (migbench.library_version(), sys.version.split()[0]))
    print("step() alone:         %.3f us per call" % (step_alone(args.calls) * 1e6))
    print("step() under migbench: %.3f us per call" % (step_piped(args.calls) * 1e6))
    print("migbench_progress.report() on the same pipe: %.3f us per call"
          % (standalone_piped(args.calls) * 1e6))
    for interval in (0.1, 0.01):
        be, share = meter_cost(interval, 5.0)
        print("interval %3.0f ms: begin+end %.3f ms; open window: sampler %.3f %% of a core"
              % (interval * 1e3, be * 1e3, share * 100))
    bare, inside = loop_ab(args.reps, 2_000_000)
    mb, mi = statistics.mean(bare), statistics.mean(inside)
    print("loop bare %.4f +- %.4f s, in an open window %.4f +- %.4f s (%+.2f %%)"
          % (mb, statistics.stdev(bare), mi, statistics.stdev(inside), (mi / mb - 1) * 100))


if __name__ == "__main__":
    main()
