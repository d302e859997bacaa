# SPDX-License-Identifier: Apache-2.0
"""migbench from Python: progress from the training loop, energy windows, results in a notebook.

    import migbench
    migbench.step(samples=64)                 # each step, under `migbench run` / `measure`
    with migbench.Meter("auto") as m:
        m.begin("epoch"); ...; r = m.end("epoch")   # r.energy_j, r.counter_j, r.integral_j, ...
    res = migbench.load("results/my-exp")    # the report's analysis; res.jobs() as a DataFrame

The package wraps the installed C library libmigbench.so through ctypes, using only its stable
API (docs/api.md); docs/python.md has a complete example of each part.
"""

from ._lib import (ABI_VERSION, Busy, InvalidArgument, LibraryNotFound, MigbenchError, NotFound,
                   TimedOut, Unsupported)
from .loops import batch_size, steps
from .meter import Meter, WindowRefused, WindowResult
from .progress import Progress, active, progress, step, tracking
from .results import Results, load, report_json

__version__ = "0.1.0"


def library_version():
    """The loaded C library's version text (mb_version)."""
    from . import _lib

    return _lib.lib().mb_version().decode("ascii")


def available():
    """True when the C library loads (with the ABI this package needs)."""
    from . import _lib

    try:
        _lib.lib()
        return True
    except LibraryNotFound:
        return False


__all__ = ["ABI_VERSION", "Busy", "InvalidArgument", "LibraryNotFound", "Meter", "MigbenchError",
           "NotFound", "Progress", "Results", "TimedOut", "Unsupported", "WindowRefused",
           "WindowResult", "active", "available", "batch_size", "library_version", "load",
           "progress", "report_json", "step", "steps", "tracking"]
