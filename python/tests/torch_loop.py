# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch training loop that reports through migbench.steps() (used by test_run.py).

It keeps its own clock too: after each step it appends "t samples" (time.monotonic(), the
cumulative samples) to --log, so the test can compute the throughput by the loop's own clock
over the window migbench measured. Steps are paced to --period seconds (absolute deadlines, so a
late step is caught up), which keeps the rate steady on a loaded machine.
"""

import argparse
import time

import torch

import migbench

ap = argparse.ArgumentParser()
ap.add_argument("--log", required=True)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--period", type=float, default=0.02)
args = ap.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def batches():
    while True:
        yield torch.randn(args.batch, 32), torch.randn(args.batch, 1)


samples = 0
start = time.monotonic()
with open(args.log, "w", buffering=1) as log:
    for k, (x, y) in enumerate(migbench.steps(batches())):
        if k:  # migbench.steps reported the previous batch when this one was asked for
            log.write("%.9f %d\n" % (time.monotonic(), samples))
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        samples += x.shape[0]
        delay = start + (k + 1) * args.period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
