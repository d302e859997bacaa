# SPDX-License-Identifier: Apache-2.0
"""Progress reporting for jobs run by migbench.

migbench passes the write end of a pipe in the environment variable MIGBENCH_PROGRESS_FD. A job
reports its progress by writing lines such as

    step=120 samples=7680 loss=3.91

where ``step`` counts optimizer steps and ``samples`` counts units of work (images, tokens)
done since the start, both cumulative. migbench timestamps each line on arrival.

Usage from any training loop::

    import migbench_progress
    migbench_progress.report(step=step, samples=images_so_far, loss=loss.item())

Without MIGBENCH_PROGRESS_FD, report() does nothing, unless stderr echo is turned on (set
MIGBENCH_PROGRESS_STDERR=1, or call enable_stderr()). When the reader goes away (EPIPE) or the
descriptor is unusable, reporting stops quietly after one note on stderr; the job never crashes
because of progress reporting. This file has no dependencies beyond the standard library and can
be copied into any project.
"""

import errno
import os
import re
import sys

ENV_FD = "MIGBENCH_PROGRESS_FD"
ENV_STDERR = "MIGBENCH_PROGRESS_STDERR"

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SPACE_RE = re.compile(r"\s+")


def _format_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return repr(value)  # nan / inf: honest, and the reader treats it as not a number
        return format(value, ".6g")
    text = str(value)
    return _SPACE_RE.sub("_", text) if text else "_"


def format_line(step, samples, **extra):
    """Returns the progress line (with its newline) for the given values.

    step and samples must be non-negative integers; extra keys must look like identifiers.
    """
    step = int(step)
    samples = int(samples)
    if step < 0 or samples < 0:
        raise ValueError("step and samples must be >= 0")
    parts = ["step=%d" % step, "samples=%d" % samples]
    for key, value in extra.items():
        if key in ("step", "samples") or not _KEY_RE.match(key):
            raise ValueError("bad progress key %r" % key)
        if value is None:
            continue  # unmeasured: leave it out rather than write a made-up number
        parts.append("%s=%s" % (key, _format_value(value)))
    return " ".join(parts) + "\n"


class Reporter:
    """Writes progress lines to a file descriptor; see the module documentation."""

    def __init__(self, fd=None, echo_stderr=False):
        self.fd = fd
        self.echo_stderr = echo_stderr
        self.lines_written = 0

    @classmethod
    def from_env(cls, environ=None):
        env = os.environ if environ is None else environ
        fd = None
        raw = env.get(ENV_FD)
        if raw is not None and raw.strip() != "":
            try:
                fd = int(raw)
                if fd < 0:
                    raise ValueError
            except ValueError:
                _note("%s=%r is not a file descriptor number; progress is not reported" % (ENV_FD, raw))
                fd = None
        echo = env.get(ENV_STDERR, "") not in ("", "0")
        return cls(fd, echo)

    @property
    def active(self):
        return self.fd is not None

    def report(self, step, samples, **extra):
        line = format_line(step, samples, **extra)
        if self.echo_stderr:
            try:
                sys.stderr.write("progress: " + line)
                sys.stderr.flush()
            except (OSError, ValueError):
                self.echo_stderr = False
        if self.fd is None:
            return
        data = line.encode("ascii", "replace")
        try:
            # One write: a pipe write of at most PIPE_BUF (>= 512) bytes is atomic, so the line
            # never interleaves with another writer's. Longer lines are finished in a loop.
            while data:
                written = os.write(self.fd, data)
                data = data[written:]
            self.lines_written += 1
        except BrokenPipeError:
            _note("progress reader went away; progress is no longer reported")
            self.fd = None
        except OSError as exc:
            if exc.errno == errno.EINTR:
                return  # this one line is lost; the next report carries the cumulative counts
            _note("cannot write progress to fd %d (%s); progress is no longer reported" % (self.fd, exc.strerror))
            self.fd = None


def _note(message):
    try:
        sys.stderr.write("migbench_progress: %s\n" % message)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


_default = None


def _reporter():
    global _default
    if _default is None:
        _default = Reporter.from_env()
    return _default


def enable_stderr(on=True):
    """Also echoes each progress line to stderr (for runs outside migbench)."""
    _reporter().echo_stderr = bool(on)


def active():
    """True when a progress descriptor is set and still writable."""
    return _reporter().active


def report(step, samples, **extra):
    """Reports cumulative progress: step=STEP samples=SAMPLES [key=value ...]."""
    _reporter().report(step, samples, **extra)
