# SPDX-License-Identifier: Apache-2.0
"""Code shared by the reference workloads (vision.py, gpt.py).

Exit codes of every workload:
  0  finished: the step/duration limit was reached, or SIGTERM/SIGINT stopped it cleanly
  1  unexpected error (a Python traceback follows)
  2  bad argument (argparse's usage message, or a message naming the argument or file)
  3  out of memory (GPU, or host memory on the CPU)
  4  the requested device or feature is not available here (no CUDA, --compile on torch < 2)
"""

import argparse
import contextlib
import os
import random
import signal
import sys
import time

import migbench_progress


def _migbench_package():
    """The migbench Python package when it and its C library load (the source tree's python/ is
    tried too), else None: the workloads then report through the standalone migbench_progress,
    which writes the same protocol (step= samples= unit=)."""
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(os.path.dirname(here), "python")
    if os.path.isfile(os.path.join(tree, "migbench", "__init__.py")) and tree not in sys.path:
        sys.path.append(tree)
    try:
        import migbench
    except ImportError:
        return None
    return migbench if migbench.available() else None


class PackageReporter:
    """Reports through the migbench package (migbench.Progress) with migbench_progress's
    interface: report(step, samples, **extra) with cumulative counts. Lines carry the job's own
    clock (t=), so bursts of buffered reads do not bias the throughput."""

    def __init__(self, migbench, unit, echo_stderr=False):
        self.progress = migbench.Progress(unit=None if unit == "tokens" else unit)
        self.tokens = unit == "tokens"
        self.echo_stderr = echo_stderr
        self.error = migbench.MigbenchError

    def report(self, step, samples, **extra):
        p = self.progress
        delta = samples - (p.tokens if self.tokens else p.samples)
        try:
            if self.tokens:
                p.step(tokens=delta, steps=step - p.steps)
            else:
                p.step(samples=delta, steps=step - p.steps)
        except self.error as exc:
            migbench_progress._note("progress is no longer reported (%s)" % exc)
        if self.echo_stderr:
            sys.stderr.write("progress: " + migbench_progress.format_line(step, samples, **extra))
            sys.stderr.flush()


def progress_reporter(unit):
    """The reporter train_loop uses: the migbench package's, else migbench_progress's."""
    mb = _migbench_package()
    if mb is not None:
        echo = os.environ.get(migbench_progress.ENV_STDERR, "") not in ("", "0")
        return PackageReporter(mb, unit, echo)
    return migbench_progress.Reporter.from_env()

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_OOM = 3
EXIT_UNAVAILABLE = 4


class WorkloadExit(Exception):
    """Raised to end a workload with a message and an exit code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be > 0, got %s" % text)
    return value


def nonneg_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0, got %s" % text)
    return value


def nonneg_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a finite number >= 0, got %s" % text)
    return value


def positive_float(text):
    value = nonneg_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0, got %s" % text)
    return value


def device_arg(text):
    if text == "cpu" or text == "cuda":
        return text
    if text.startswith("cuda:") and text[5:].isdigit():
        return text
    raise argparse.ArgumentTypeError("expected cpu, cuda or cuda:N, got %r" % text)


def add_common_args(parser):
    g = parser.add_argument_group("common options")
    g.add_argument("--device", type=device_arg, default="cpu",
                   help="cpu, cuda or cuda:N (under MIG the visible device is the instance); default cpu")
    g.add_argument("--batch-size", type=positive_int, default=None, help="samples per step")
    g.add_argument("--amp", choices=["auto", "bf16", "fp16", "off"], default="auto",
                   help="autocast precision; auto = bf16 on CUDA where supported, else fp16; off on the CPU")
    g.add_argument("--steps", type=nonneg_int, default=None,
                   help="stop after N optimizer steps (0 = no step limit)")
    g.add_argument("--duration", type=nonneg_float, default=None,
                   help="stop after S seconds of training (0 = no time limit); with neither limit "
                        "the job runs until SIGTERM/SIGINT")
    g.add_argument("--seed", type=int, default=0, help="seed for Python, NumPy and torch (default 0)")
    g.add_argument("--threads", type=positive_int, default=None, help="torch.set_num_threads(N) (default: OMP_NUM_THREADS, which migbench sets to the cores the job may use)")
    g.add_argument("--workers", type=nonneg_int, default=2,
                   help="data loader worker processes for --data (default 2; synthetic data needs none)")
    g.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2.0)")
    g.add_argument("--print-params", action="store_true",
                   help="print the parameter count to stdout and exit (allocates no optimizer or data)")
    g.add_argument("--log-every", type=nonneg_int, default=20,
                   help="a status line on stderr every N steps (0 = none; default 20)")
    g.add_argument("--progress-stderr", action="store_true",
                   help="also echo each progress line to stderr (as MIGBENCH_PROGRESS_STDERR=1)")


def note(prog, message):
    sys.stderr.write("%s: %s\n" % (prog, message))
    sys.stderr.flush()


def human_count(n):
    if n >= 1e9:
        return "%.2fB" % (n / 1e9)
    if n >= 1e6:
        return "%.1fM" % (n / 1e6)
    if n >= 1e3:
        return "%.1fK" % (n / 1e3)
    return str(n)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def torch_major_minor(torch):
    parts = torch.__version__.split("+")[0].split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return 0, 0


def seed_everything(torch, seed):
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def resolve_device(torch, name):
    """Returns a torch.device for --device, or raises WorkloadExit(4) when CUDA is missing."""
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise WorkloadExit(EXIT_UNAVAILABLE,
                               "--device %s: CUDA is not available to this torch %s (no GPU visible, "
                               "or a CPU-only build)" % (name, torch.__version__))
        dev = torch.device(name)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise WorkloadExit(EXIT_UNAVAILABLE, "--device %s: only %d CUDA device(s) visible"
                               % (name, torch.cuda.device_count()))
        torch.cuda.set_device(dev.index or 0)
        # TF32 for fp32 matrix products and convolutions (Ampere and later); autocast covers the rest.
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        return dev
    return torch.device("cpu")


def device_description(torch, dev):
    if dev.type == "cuda":
        idx = dev.index or 0
        props = torch.cuda.get_device_properties(idx)
        return "cuda:%d (%s, %d MiB, %d SMs)" % (idx, props.name, props.total_memory // (1 << 20),
                                                  props.multi_processor_count)
    return "cpu (%d threads)" % torch.get_num_threads()


class Precision:
    """Autocast context and gradient scaler for --amp."""

    def __init__(self, torch, dev, amp, prog):
        self.torch = torch
        self.dtype = None
        self.scaler = None
        self.note = None
        self.device_type = dev.type
        has_autocast = hasattr(torch, "autocast")
        if amp == "auto":
            if dev.type == "cuda":
                amp = "bf16" if _cuda_bf16(torch) else "fp16"
            else:
                amp = "off"
        if amp != "off" and not has_autocast:
            self.note = "--amp %s: this torch has no torch.autocast; running in fp32" % amp
            amp = "off"
        if dev.type == "cuda":
            if amp == "bf16" and not _cuda_bf16(torch):
                self.note = "--amp bf16: this GPU does not support bf16; running fp16 with loss scaling"
                amp = "fp16"
            if amp == "bf16":
                self.dtype = torch.bfloat16
            elif amp == "fp16":
                self.dtype = torch.float16
                amp_mod = getattr(torch, "amp", None)
                if amp_mod is not None and hasattr(amp_mod, "GradScaler"):
                    self.scaler = amp_mod.GradScaler("cuda")  # torch >= 2.3
                else:
                    self.scaler = torch.cuda.amp.GradScaler()
        else:
            if amp == "fp16":
                self.note = "--amp fp16: autocast on the CPU supports bf16 only; running in fp32"
                amp = "off"
            elif amp == "bf16":
                if _cpu_bf16_autocast(torch):
                    self.dtype = torch.bfloat16
                else:
                    self.note = "--amp bf16: CPU bf16 autocast is not supported by this torch; running in fp32"
                    amp = "off"
        self.name = amp
        if self.note:
            note(prog, self.note)

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return self.torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def backward_step(self, loss, optimizer, params=None, clip=None):
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            if clip:
                self.scaler.unscale_(optimizer)
                self.torch.nn.utils.clip_grad_norm_(params, clip)
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            loss.backward()
            if clip:
                self.torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()


def _cuda_bf16(torch):
    fn = getattr(torch.cuda, "is_bf16_supported", None)
    if fn is None:
        return False
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001 - some builds raise instead of answering
        return False


def _cpu_bf16_autocast(torch):
    try:
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            pass
        return True
    except Exception:  # noqa: BLE001
        return False


def maybe_compile(torch, model, enabled):
    if not enabled:
        return model
    if not hasattr(torch, "compile") or torch_major_minor(torch) < (2, 0):
        raise WorkloadExit(EXIT_UNAVAILABLE, "--compile needs torch >= 2.0 (this is torch %s); run without "
                           "--compile" % torch.__version__)
    return torch.compile(model)


class StopFlag:
    """SIGTERM/SIGINT set a flag; the training loop finishes its step and stops.

    A second signal of the same kind restores the default action and re-raises it, so a job that
    hangs inside a step can still be killed.
    """

    def __init__(self):
        self.signum = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handler)

    def _handler(self, signum, frame):  # noqa: ARG002
        if self.signum is not None:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        self.signum = signum

    @property
    def stopped(self):
        return self.signum is not None


_stop = None


def stop_flag():
    """The process's StopFlag, installed on first use (run_main installs it before torch loads,
    so a SIGTERM during start-up also ends the job cleanly, with zero steps)."""
    global _stop
    if _stop is None:
        _stop = StopFlag()
    return _stop


def ignore_term_in_worker(_worker_id):
    """DataLoader worker_init_fn: workers leave SIGTERM/SIGINT to the main process, which stops
    cleanly and then shuts them down; and they close their copy of the progress pipe, so that the
    reader sees end-of-file as soon as the main process exits."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fd = os.environ.get(migbench_progress.ENV_FD, "")
    if fd.isdigit():
        try:
            os.close(int(fd))
        except OSError:
            pass


def is_oom(torch, exc):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, RuntimeError):
        text = str(exc)
        return ("out of memory" in text or "can't allocate memory" in text
                or "CUDNN_STATUS_ALLOC_FAILED" in text)
    return False


def cpu_threads(args):
    """The CPU threads torch should use: --threads, else OMP_NUM_THREADS (migbench sets it to the
    cores the job may use), else None (torch's default)."""
    if args.threads:
        return args.threads
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def train_loop(torch, prog, dev, args, step_fn, units_per_step, unit_name):
    """Runs step_fn() until --steps/--duration or a stop signal; reports progress each step.

    step_fn returns the loss tensor (or None); units_per_step is the work done per step (images
    or tokens). Returns (steps, units, seconds).
    """
    stop = stop_flag()
    reporter = progress_reporter(unit_name)
    if args.progress_stderr:
        reporter.echo_stderr = True
    max_steps = args.steps or 0
    max_seconds = args.duration or 0.0
    step = 0
    units = 0
    start = time.monotonic()
    last_log_time = start
    last_log_units = 0
    while not stop.stopped:
        loss = step_fn(step)
        loss_value = float(loss.item()) if loss is not None else None  # .item() waits for the GPU
        step += 1
        units += units_per_step
        reporter.report(step, units, loss=loss_value, unit=unit_name)
        now = time.monotonic()
        if args.log_every and step % args.log_every == 0:
            rate = (units - last_log_units) / max(now - last_log_time, 1e-9)
            note(prog, "step %d  %s %d  loss %s  %.1f %s/s" % (
                step, unit_name, units, "n/a" if loss_value is None else "%.4f" % loss_value, rate, unit_name))
            last_log_time, last_log_units = now, units
        if max_steps and step >= max_steps:
            break
        if max_seconds and now - start >= max_seconds:
            break
    elapsed = time.monotonic() - start
    why = "signal %d" % stop.signum if stop.stopped else ("step limit" if max_steps and step >= max_steps
                                                          else "time limit")
    note(prog, "stopped (%s) after %d steps, %d %s in %.1f s (%.1f %s/s)" % (
        why, step, units, unit_name, elapsed, units / max(elapsed, 1e-9), unit_name))
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_reserved(dev) // (1 << 20)
        note(prog, "peak GPU memory reserved by torch: %d MiB (allocated: %d MiB)"
             % (peak, torch.cuda.max_memory_allocated(dev) // (1 << 20)))
    return step, units, elapsed


def run_main(prog, body, torch_getter):
    """Calls body() and maps WorkloadExit and out-of-memory errors to exit codes."""
    stop_flag()
    try:
        body()
    except WorkloadExit as exc:
        note(prog, exc.message)
        return exc.code
    except Exception as exc:  # noqa: BLE001
        torch = torch_getter()
        if torch is not None and is_oom(torch, exc):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            note(prog, "out of memory: %s. Reduce --batch-size (or --seq-len / the model size), or give "
                 "the job a larger device or partition." % first)
            return EXIT_OOM
        raise
    return EXIT_OK
