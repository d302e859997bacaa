# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch loop reporting through migbench.step():

    for batch in migbench.steps(loader):      # samples per step: the batch's first dimension
        loss = train_step(batch)

Each batch is reported as one step once the loop body is done with it (when the loop asks for the
next batch, or leaves the loop), so the step's time is the body's. No torch import is needed.
"""

from .progress import progress


def batch_size(batch):
    """The number of samples in a batch: a tensor's (or array's) first dimension, the first
    element of a tuple/list, the first value of a dict; None when it cannot be told."""
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    if isinstance(batch, dict) and batch:
        return batch_size(next(iter(batch.values())))
    if isinstance(batch, (tuple, list)) and batch:
        first = batch[0]
        if getattr(first, "shape", None) is not None or isinstance(first, (tuple, list, dict)):
            return batch_size(first)
        return len(batch)
    return None


def steps(iterable, samples=None, tokens=None, reporter=None):
    """Yields iterable's batches and reports one step per batch once its body has run.

    samples / tokens: an int per step, a function of the batch, or None. With neither, samples
    are the batch_size() of each batch (steps alone when it cannot be told).
    """
    rep = reporter or progress()

    def amount(fn, batch):
        if fn is None:
            return None
        return fn(batch) if callable(fn) else fn

    if samples is None and tokens is None:
        samples = batch_size
    for batch in iterable:
        try:
            yield batch
        except GeneratorExit:
            # The loop left with a break: the body finished this batch, so it is a step done.
            rep.step(samples=amount(samples, batch), tokens=amount(tokens, batch))
            raise
        rep.step(samples=amount(samples, batch), tokens=amount(tokens, batch))


__all__ = ["steps", "batch_size"]
