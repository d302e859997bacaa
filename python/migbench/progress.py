# SPDX-License-Identifier: Apache-2.0
"""Progress without parsing: migbench.step() reports each training step to the `migbench run` or
`migbench measure` that started this process, through its progress channel (MIGBENCH_PROGRESS_FD).

Lines carry the cumulative step and work counts and this process's CLOCK_MONOTONIC time, so the
throughput migbench computes does not depend on when the pipe is read. Run alone (no channel),
step() only counts: it is a no-op as far as the outside world goes.
"""

import contextlib
import ctypes
import math
import threading

from . import _lib


class Progress:
    """Cumulative progress of this process. The module-level step() uses one shared instance."""

    def __init__(self, unit=None):
        self.unit = unit  # what samples count ("images"), sent as unit=; tokens are "tokens"
        self.steps = 0
        self.samples = 0
        self.tokens = 0
        self._unit = None  # decided by the first step that reports work: "samples" or "tokens"
        self._lock = threading.Lock()
        self._fd = None  # unknown until the first step
        self._err = None  # one struct mb_error, reused under the lock

    @property
    def active(self):
        """True when this process runs under migbench and the channel is still open."""
        if self._fd is None:
            self._fd = _channel_fd()
        return self._fd >= 0

    def step(self, samples=None, tokens=None, steps=1):
        """Counts steps optimizer steps that processed samples samples and/or tokens tokens.

        The work migbench measures is tokens when a step has reported tokens, else samples (else
        steps); keep to one unit per run. Raises InvalidArgument for negative or non-integral
        counts.
        """
        # Plain non-negative ints (the common case) skip the checks: step() is on the hot path.
        if steps.__class__ is not int or steps < 0:
            steps = _count(steps, "steps")
        tokens_given = tokens is not None
        if samples is None:
            samples = 0
        elif samples.__class__ is not int or samples < 0:
            samples = _count(samples, "samples")
        if tokens is None:
            tokens = 0
        elif tokens.__class__ is not int or tokens < 0:
            tokens = _count(tokens, "tokens")
        with self._lock:
            self.steps += steps
            self.samples += samples
            self.tokens += tokens
            if self._unit is None and (tokens_given or samples):
                self._unit = "tokens" if tokens_given else "samples"
            if not self.active:
                return
            if self._unit == "tokens":
                work, unit = self.tokens, b"tokens"
            elif self._unit == "samples":
                work, unit = self.samples, self.unit.encode("ascii") if self.unit else None
            else:
                work, unit = -1.0, None  # no samples= field: migbench counts steps
            if self._err is None:
                self._err = _lib.Error()
            err = self._err
            status = _lib.lib().mb_progress_report(self.steps, float(work), unit, ctypes.byref(err))
            if status != 0:
                self._fd = -1  # the reader went away: stop, as the C side does
                _lib.check(status, err)

    @contextlib.contextmanager
    def tracking(self, samples=None, tokens=None):
        """with progress.tracking(samples=64): <one step>  -- reports the step when it ends
        without an exception."""
        yield
        self.step(samples=samples, tokens=tokens)


def _channel_fd():
    try:
        return _lib.lib().mb_progress_fd()
    except _lib.LibraryNotFound:
        import os

        if os.environ.get("MIGBENCH_PROGRESS_FD", "").strip():
            raise  # under migbench without the library: say so rather than drop the progress
        return -1


def _count(value, what):
    """value as a whole number >= 0 (an int, an integral float, a numpy/torch integer)."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _lib.InvalidArgument(1, "MB_EINVAL", "%s must be a whole number, got %r" % (what, value))
    if isinstance(value, numbers.Integral):
        value = int(value)
    elif not math.isfinite(value) or value != int(value):
        raise _lib.InvalidArgument(1, "MB_EINVAL", "%s must be a whole number, got %r" % (what, value))
    if value < 0:
        raise _lib.InvalidArgument(1, "MB_EINVAL", "%s must be >= 0, got %r" % (what, value))
    return int(value)


_default = Progress()


def step(samples=None, tokens=None, steps=1):
    """Reports one training step (see Progress.step) to the migbench that runs this process."""
    _default.step(samples=samples, tokens=tokens, steps=steps)


def tracking(samples=None, tokens=None):
    """Context manager: reports one step when the block ends (see Progress.tracking)."""
    return _default.tracking(samples=samples, tokens=tokens)


def active():
    """True when this process reports to a running migbench."""
    return _default.active


def progress():
    """The process's shared Progress (its counters: steps, samples, tokens)."""
    return _default
