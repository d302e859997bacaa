# SPDX-License-Identifier: Apache-2.0
"""Energy windows inside a training loop: Meter.begin(name) / Meter.end(name).

A Meter samples one device on the C library's own thread (migbench/api.h, mb_wmeter_*). Each
window's energy is given two ways, by the hardware energy counter and by the integral of the
sampled power, with their gap; a window shorter than the sensor resolves is refused with the
reason instead of a guessed number. Windows nest and overlap (at most 16 open at once).
"""

import contextlib
import ctypes
import json
import threading

from . import _lib


class WindowRefused(_lib.MigbenchError):
    """Meter.end(..., strict=True) on a window whose energy was refused; .result holds the rest."""

    def __init__(self, result):
        super().__init__(14, "MB_ETOOSHORT", "window %r: %s" % (result.name, result.reason))
        self.result = result


class WindowResult:
    """One window's figures. None marks a figure that was not measured (never 0 for unknown).

    name, duration_s, t0_s, t1_s (CLOCK_MONOTONIC); counter_j (the energy counter's difference),
    integral_j (the integrated power), gap_rel ((integral - counter) / counter), gap_flag (|gap| >
    2 %), mean_power_w, peak_power_w, samples, missed_updates, read_failures, counter_wraps,
    counter_resets, counter_patched_s, refused and reason, truncated, power_shift_s; the same
    figures as `migbench measure --json`'s "energy" (one encoder); sensor (power_kind,
    power_update_period_ms, power_avg_window_ms, has_energy_counter, energy_update_period_ms,
    scope, source), interval_s and min_window_s (the sampling period and the shortest window
    measured). data is the whole document.
    """

    def __init__(self, data):
        self.data = data
        for key, value in data.items():
            setattr(self, key, value)

    @property
    def energy_j(self):
        """The counter's energy when there is one, else the integrated power's; None if neither."""
        return self.counter_j if self.counter_j is not None else self.integral_j

    def __repr__(self):
        if self.refused:
            return "WindowResult(%r, %.3f s, refused: %s)" % (self.name, self.duration_s, self.reason)
        return "WindowResult(%r, %.3f s, %s J, mean %s W)" % (
            self.name, self.duration_s, self.energy_j, self.mean_power_w)


class Meter:
    """Measures named windows on one device.

    device: a spec as the CLI's --device: "auto" (the first NVIDIA GPU, else the host), "nvml:0",
    "emu:A100-40GB", "host". interval: the sampling period in seconds (default 0.1).
    min_window: the shortest window whose energy is given, in seconds (default: the sensor's rule,
    max(2 x update period, 1 s)). Use as a context manager or call close().
    """

    def __init__(self, device="auto", interval=None, min_window=None):
        lib = _lib.lib()
        spec = _lib.encode(device, "device")
        interval_ns = _seconds_ns(interval, "interval")
        min_ns = _seconds_ns(min_window, "min_window")
        err = _lib.Error()
        handle = ctypes.c_void_p()
        _lib.check(lib.mb_wmeter_open(spec, interval_ns, min_ns, ctypes.byref(handle),
                                      ctypes.byref(err)), err)
        self._handle = handle
        self._cv = threading.Condition()
        self._busy = 0
        self.device = device
        self.info = self._call_json(lib.mb_wmeter_info)

    def _enter(self):
        with self._cv:
            if self._handle is None:
                raise _lib.MigbenchError(19, "MB_ESTATE", "the meter is closed")
            self._busy += 1
            return self._handle

    def _leave(self):
        with self._cv:
            self._busy -= 1
            if self._busy == 0:
                self._cv.notify_all()

    def _call_json(self, fn, *args):
        handle = self._enter()
        try:
            err = _lib.Error()
            out = ctypes.c_void_p()
            status = fn(handle, *args, ctypes.byref(out), ctypes.byref(err))
            text = _lib.take_text(out)
            _lib.check(status, err)
            return json.loads(text)
        finally:
            self._leave()

    def begin(self, name):
        """Opens the window called name now. Busy if a window of that name is open."""
        data = _lib.encode(name, "window name")
        handle = self._enter()
        try:
            err = _lib.Error()
            _lib.check(_lib.lib().mb_wmeter_begin(handle, data, ctypes.byref(err)), err)
        finally:
            self._leave()

    def end(self, name, strict=False):
        """Ends the window called name now and returns its WindowResult.

        Waits (without the GIL) until the meter's samples cover the end: at most one sampling
        period. A refused window (too short for the sensor) comes back with refused True, the
        reason and no energy; with strict=True it raises WindowRefused instead.
        """
        result = WindowResult(self._call_json(_lib.lib().mb_wmeter_end, _lib.encode(name, "window name")))
        if strict and result.refused:
            raise WindowRefused(result)
        return result

    @contextlib.contextmanager
    def window(self, name, strict=False):
        """with meter.window("eval") as w: ...  -- w.result is the WindowResult afterwards."""
        holder = _Holder()
        self.begin(name)
        try:
            yield holder
        finally:
            holder.result = self.end(name, strict=strict)

    def close(self):
        """Stops sampling and frees the meter (waits for calls in progress). Idempotent."""
        with self._cv:
            while self._busy:
                self._cv.wait()
            handle, self._handle = self._handle, None
        if handle is not None:
            _lib.lib().mb_wmeter_close(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_handle", None) is not None:
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _Holder:
    result = None


def _seconds_ns(value, what):
    if value is None:
        return 0
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise _lib.InvalidArgument(1, "MB_EINVAL", "%s must be a number of seconds, got %r" % (what, value))
    if not seconds > 0 or seconds > 3600:
        raise _lib.InvalidArgument(1, "MB_EINVAL", "%s must be > 0 and at most 3600 s, got %r" % (what, value))
    return int(round(seconds * 1e9))
