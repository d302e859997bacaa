# SPDX-License-Identifier: Apache-2.0
"""Loading libmigbench.so through ctypes: the stable API of migbench/api.h and nothing else.

The library is found, in order, at $MIGBENCH_LIBRARY, next to this package where `cmake --install`
put both (the relative path is written at install time into _install.py), and through the system
loader (libmigbench.so.ABI). Calls through ctypes.CDLL release the GIL while C runs, so a window's
end, which waits for the meter's next sample, never blocks other Python threads.
"""

import ctypes
import os
import threading

ABI_VERSION = 1  # MB_ABI_VERSION this package is written against (include/migbench/version.h)
ERROR_MSG_MAX = 512  # MB_ERROR_MSG_MAX: struct mb_error is frozen in the ABI (docs/api.md)


class Error(ctypes.Structure):
    """struct mb_error (migbench/status.h), whose layout the ABI check keeps fixed."""

    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * ERROR_MSG_MAX)]


class MigbenchError(Exception):
    """A migbench call failed: status (the number), status_name ("MB_EINVAL") and message."""

    def __init__(self, status, status_name, message):
        super().__init__("%s: %s" % (status_name, message) if message else status_name)
        self.status = status
        self.status_name = status_name
        self.message = message


class LibraryNotFound(MigbenchError, ImportError):
    """libmigbench.so could not be loaded, or has another ABI version."""

    def __init__(self, message):
        MigbenchError.__init__(self, 11, "MB_ELIB", message)


_SUBCLASSES = {}


def _subclass(name, *bases):
    cls = type(name, (MigbenchError,) + bases, {"__doc__": "MigbenchError for %s" % name})
    return cls


InvalidArgument = _subclass("InvalidArgument", ValueError)
NotFound = _subclass("NotFound", LookupError)
Busy = _subclass("Busy")
Unsupported = _subclass("Unsupported")
TimedOut = _subclass("TimedOut", TimeoutError)
_SUBCLASSES.update({"MB_EINVAL": InvalidArgument, "MB_ERANGE": InvalidArgument,
                    "MB_ENOTFOUND": NotFound, "MB_EBUSY": Busy, "MB_ENORESOURCES": Busy,
                    "MB_EUNSUPPORTED": Unsupported, "MB_ETIMEDOUT": TimedOut})

_lock = threading.Lock()
_lib = None


def _candidates():
    env = os.environ.get("MIGBENCH_LIBRARY")
    if env:
        yield env
        return
    try:
        from . import _install  # written by cmake --install: the library's place from here
        yield os.path.normpath(os.path.join(os.path.dirname(__file__), _install.LIBDIR,
                                            "libmigbench.so.%d" % ABI_VERSION))
    except ImportError:
        pass
    yield "libmigbench.so.%d" % ABI_VERSION


def _declare(lib):
    c = ctypes
    err = c.POINTER(Error)
    out = c.POINTER(c.c_void_p)
    sigs = {
        "mb_version": (c.c_char_p, []),
        "mb_abi_version": (c.c_int, []),
        "mb_status_name": (c.c_char_p, [c.c_int]),
        "mb_status_str": (c.c_char_p, [c.c_int]),
        "mb_wmeter_open": (c.c_int, [c.c_char_p, c.c_int64, c.c_int64, out, err]),
        "mb_wmeter_close": (None, [c.c_void_p]),
        "mb_wmeter_begin": (c.c_int, [c.c_void_p, c.c_char_p, err]),
        "mb_wmeter_end": (c.c_int, [c.c_void_p, c.c_char_p, out, err]),
        "mb_wmeter_info": (c.c_int, [c.c_void_p, out, err]),
        "mb_report_json": (c.c_int, [c.c_char_p, c.c_char_p, out, err]),
        "mb_cell_json": (c.c_int, [c.c_char_p, out, err]),
        "mb_progress_fd": (c.c_int, []),
        "mb_progress_report": (c.c_int, [c.c_uint64, c.c_double, c.c_char_p, err]),
        "mb_free": (None, [c.c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def lib():
    """The loaded library (loaded on first use); LibraryNotFound when it cannot be."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            try:
                handle = ctypes.CDLL(path)
            except OSError as exc:
                tried.append("%s (%s)" % (path, exc))
                continue
            try:
                _declare(handle)
            except AttributeError as exc:
                raise LibraryNotFound("%s lacks the migbench API: %s" % (path, exc))
            abi = handle.mb_abi_version()
            if abi != ABI_VERSION:
                raise LibraryNotFound("%s has ABI version %d; this package needs %d"
                                      % (path, abi, ABI_VERSION))
            _lib = handle
            return _lib
        raise LibraryNotFound("cannot load libmigbench: tried " + "; ".join(tried)
                              + " (set MIGBENCH_LIBRARY to the library's path)")


def check(status, err):
    """Raises the exception for a failed call (status != MB_OK) with err's message."""
    if status == 0:
        return
    name = lib().mb_status_name(status).decode("ascii", "replace")
    message = err.msg.decode("utf-8", "replace") if err.status == status or err.msg else ""
    raise _SUBCLASSES.get(name, MigbenchError)(status, name, message)


def take_text(ptr):
    """The NUL-terminated text at ptr (a c_void_p the API returned), freed with mb_free."""
    if not ptr.value:
        return None
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        lib().mb_free(ptr)


def encode(text, what):
    """text as bytes for a char * argument; InvalidArgument for a NUL or a non-string."""
    if not isinstance(text, str):
        raise InvalidArgument(1, "MB_EINVAL", "%s must be a string, got %s" % (what, type(text).__name__))
    data = text.encode("utf-8")
    if b"\0" in data:
        raise InvalidArgument(1, "MB_EINVAL", "%s holds a NUL character" % what)
    return data
