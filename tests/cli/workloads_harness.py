# SPDX-License-Identifier: Apache-2.0
"""Checks the reference workloads (workloads/*.py) on the CPU; run by tests/cli/workloads.sh.

Usage: PYTHON workloads_harness.py WORKLOADS_DIR
Each check prints "ok: ..." or "FAIL: ..."; the exit status is 1 if any check failed.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

WL = os.path.abspath(sys.argv[1])
PY = sys.executable
LINE_RE = re.compile(r"^step=(\d+) samples=(\d+)((?: [A-Za-z_][A-Za-z0-9_]*=\S+)*)$")
FAILS = []
CPU = ["--device", "cpu", "--threads", "1", "--log-every", "0"]


def check(cond, what, detail=""):
    if cond:
        print("ok: " + what)
    else:
        FAILS.append(what)
        print("FAIL: " + what + ("\n  " + detail.replace("\n", "\n  ") if detail else ""))


def tail(text, n=15):
    return "\n".join(text.splitlines()[-n:])


def run_plain(script, args, timeout=120):
    env = dict(os.environ)
    env.pop("MIGBENCH_PROGRESS_FD", None)
    p = subprocess.run([PY, os.path.join(WL, script)] + args, capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def run_with_pipe(script, args, term_after=None, close_reader=False, timeout=120, group=False):
    """Runs a workload with a real progress pipe. Returns (rc, lines, stderr). With term_after, sends
    SIGTERM after that many lines: to the process, or with group to its whole process group (as
    migbench does, which also reaches data-loader workers)."""
    r, w = os.pipe()
    env = dict(os.environ, MIGBENCH_PROGRESS_FD=str(w))
    if close_reader:
        os.close(r)
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([PY, os.path.join(WL, script)] + args, pass_fds=(w,), env=env,
                            stdout=subprocess.DEVNULL, stderr=err, start_new_session=group)
    os.close(w)
    lines = []
    deadline = time.monotonic() + timeout
    if not close_reader:
        buf = b""
        with os.fdopen(r, "rb", buffering=0) as rf:
            while True:
                chunk = rf.read(4096)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    lines.append(line.decode())
                    if term_after is not None and len(lines) == term_after:
                        if group:
                            os.killpg(proc.pid, signal.SIGTERM)
                        else:
                            proc.send_signal(signal.SIGTERM)
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            if buf:
                lines.append("<unterminated>" + buf.decode(errors="replace"))
    try:
        rc = proc.wait(timeout=max(deadline - time.monotonic(), 5))
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    err.seek(0)
    return rc, lines, err.read()


def check_lines(what, lines, units_per_step, min_lines, exact=None):
    ok = len(lines) >= min_lines and (exact is None or len(lines) == exact)
    detail = "lines: %r" % lines[:6]
    for i, line in enumerate(lines):
        m = LINE_RE.match(line)
        if not m:
            ok, detail = False, "line %d does not parse: %r" % (i + 1, line)
            break
        step, samples = int(m.group(1)), int(m.group(2))
        extra = dict(kv.split("=", 1) for kv in m.group(3).split())
        if step != i + 1 or samples != step * units_per_step:
            ok, detail = False, "line %d: step %d samples %d, expected step %d samples %d" % (
                i + 1, step, samples, i + 1, (i + 1) * units_per_step)
            break
        try:
            loss = float(extra.get("loss", "nan"))
        except ValueError:
            loss = float("nan")
        if not loss == loss or loss <= 0:
            ok, detail = False, "line %d: loss %r is not a positive number" % (i + 1, extra.get("loss"))
            break
    check(ok, what + ": %d progress lines, steps count up, samples grow by %d a step"
          % (len(lines), units_per_step), detail)


def param_count(out):
    m = re.search(r": (\d+) parameters", out)
    return int(m.group(1)) if m else None


def test_progress_module():
    sys.path.insert(0, WL)
    import migbench_progress as mp

    check(mp.format_line(3, 96, loss=2.5) == "step=3 samples=96 loss=2.5\n", "progress: line format")
    check(mp.format_line(1, 2, loss=None, note="a b") == "step=1 samples=2 note=a_b\n",
          "progress: None left out, spaces replaced")
    try:
        mp.format_line(1, 2, **{"bad key": 1})
        check(False, "progress: bad key refused")
    except ValueError:
        check(True, "progress: bad key refused")
    rep = mp.Reporter.from_env({})
    rep.report(1, 1)
    check(not rep.active, "progress: no MIGBENCH_PROGRESS_FD -> inactive, report() is a no-op")
    rep = mp.Reporter.from_env({"MIGBENCH_PROGRESS_FD": "x7"})
    check(not rep.active, "progress: a non-number fd is refused without crashing")
    r, w = os.pipe()
    rep = mp.Reporter(w)
    rep.report(5, 320, loss=1.25, lr=0.001)
    os.close(w)
    with os.fdopen(r, "rb") as rf:
        got = rf.read()
    check(got == b"step=5 samples=320 loss=1.25 lr=0.001\n", "progress: one line through a pipe", repr(got))
    r, w = os.pipe()
    os.close(r)
    rep = mp.Reporter(w)
    rep.report(1, 1)
    rep.report(2, 2)
    os.close(w)
    check(not rep.active, "progress: EPIPE stops reporting without an exception")


def main():
    test_progress_module()

    # Bad arguments: argparse usage errors, exit 2, before torch is even imported.
    for script, args, pattern in [
        ("vision.py", ["--model", "nosuch"], "invalid choice"),
        ("vision.py", ["--batch-size", "0"], "must be > 0"),
        ("vision.py", ["--data", "/nonexistent/dir"], "not a directory"),
        ("vision.py", ["--model", "inception_v3", "--image-size", "64"], "at least 75"),
        ("gpt.py", ["--size", "huge"], "invalid choice"),
        ("gpt.py", ["--seq-len", "5000"], "context of 1024"),
        ("gpt.py", ["--steps", "-1"], "must be >= 0"),
        ("gpt.py", ["--init-from", "x.pt"], "needs --finetune"),
        ("gpt.py", ["--device", "tpu"], "expected cpu, cuda"),
    ]:
        rc, _out, err = run_plain(script, args)
        check(rc == 2 and re.search(pattern, err) is not None,
              "%s %s -> exit 2 naming the problem" % (script, " ".join(args)), "rc %d, stderr: %s" % (rc, tail(err)))

    # Published parameter counts.
    for script, args, want, human in [
        ("vision.py", ["--model", "resnet50"], 25557032, "25.6M"),
        ("vision.py", ["--model", "densenet121"], 7978856, "8.0M"),
        ("vision.py", ["--model", "inception_v3"], 27161264, "27.2M"),
        ("gpt.py", ["--size", "tiny"], 858880, "858.9K"),
        ("gpt.py", ["--size", "small"], 124439808, "124.4M"),
        ("gpt.py", ["--size", "xl"], 1557611200, "1.56B"),
    ]:
        rc, out, err = run_plain(script, args + ["--print-params"])
        got = param_count(out)
        check(rc == 0 and got == want and "(%s" % human in out,
              "%s %s --print-params = %d (%s)" % (script, " ".join(args), want, human),
              "rc %d, got %r, stdout %r, stderr: %s" % (rc, got, out, tail(err)))
        if script == "gpt.py" and rc == 0:
            check("tied token embedding counted once" in out and "checked against a" in out,
                  "gpt %s: counting convention stated and cross-checked" % args[1], out)

    # A few real training steps per workload on the CPU, with a real progress pipe.
    for script, args, units in [
        ("vision.py", ["--model", "resnet18", "--image-size", "32", "--batch-size", "4"], 4),
        ("vision.py", ["--model", "densenet121", "--image-size", "32", "--batch-size", "2"], 2),
        ("vision.py", ["--model", "inception_v3", "--image-size", "75", "--batch-size", "2"], 2),
        ("gpt.py", ["--size", "tiny", "--seq-len", "32", "--batch-size", "4"], 128),
    ]:
        rc, lines, err = run_with_pipe(script, args + CPU + ["--steps", "3"])
        what = "%s %s" % (script, args[1])
        check(rc == 0, what + ": 3 steps exit 0", "rc %d, stderr: %s" % (rc, tail(err)))
        check_lines(what, lines, units, 3, exact=3)
        check(re.search(r"params=\d+ .*device=cpu", err) is not None and "stopped (step limit)" in err,
              what + ": configuration printed once at start, stop reason at the end", tail(err))
        if "inception" in what:
            check("auxiliary classifier needs" in err, what + ": aux classifier left out below 299 px with a note")

    # SIGTERM: finish the current step, report it, exit 0.
    rc, lines, err = run_with_pipe("gpt.py", ["--size", "tiny", "--seq-len", "32", "--batch-size", "4"] + CPU,
                                   term_after=2)
    check(rc == 0 and "stopped (signal 15)" in err, "gpt tiny: SIGTERM -> clean exit 0",
          "rc %d, stderr: %s" % (rc, tail(err)))
    check_lines("gpt tiny after SIGTERM", lines, 128, 2)

    # Precision on the CPU: bf16 autocast where torch supports it (else fp32 with a note); fp16
    # has no CPU autocast, so it falls back to fp32 with a note.
    rc, lines, err = run_with_pipe("gpt.py", ["--size", "tiny", "--seq-len", "16", "--batch-size", "2", "--amp", "bf16",
                                              "--steps", "2"] + CPU)
    check(rc == 0 and ("amp=bf16" in err or ("amp=off" in err and "--amp bf16: CPU bf16" in err)),
          "gpt --amp bf16 on the CPU: bf16 autocast, or fp32 with a note", "rc %d, stderr: %s" % (rc, tail(err)))
    check_lines("gpt --amp bf16", lines, 32, 2, exact=2)
    rc, _out, err = run_plain("vision.py", ["--model", "resnet18", "--image-size", "32", "--batch-size", "2", "--amp",
                                            "fp16", "--steps", "1"] + CPU)
    check(rc == 0 and "amp=off" in err and "--amp fp16: autocast on the CPU supports bf16 only" in err,
          "vision --amp fp16 on the CPU: fp32 with a note", "rc %d, stderr: %s" % (rc, tail(err)))

    # --duration stops on time.
    rc, lines, err = run_with_pipe("vision.py", ["--model", "resnet18", "--image-size", "32", "--batch-size", "2",
                                                 "--duration", "1"] + CPU)
    check(rc == 0 and "stopped (time limit)" in err, "vision --duration 1 stops on time", tail(err))
    check_lines("vision --duration", lines, 2, 1)

    # A reader that went away must not kill the job.
    rc, _lines, err = run_with_pipe("gpt.py", ["--size", "tiny", "--seq-len", "16", "--batch-size", "2",
                                               "--steps", "3"] + CPU, close_reader=True)
    check(rc == 0 and "progress reader went away" in err and err.count("went away") == 1,
          "gpt tiny: closed progress pipe -> one note, job finishes with exit 0", "rc %d, stderr: %s" % (rc, tail(err)))

    with tempfile.TemporaryDirectory() as tmp:
        # Byte-level text data, --save, then fine-tuning from the checkpoint.
        text = os.path.join(tmp, "corpus.txt")
        with open(text, "w") as f:
            f.write("migbench trains real models on real text. " * 40)
        ckpt = os.path.join(tmp, "tiny.pt")
        rc, lines, err = run_with_pipe("gpt.py", ["--size", "tiny", "--seq-len", "32", "--batch-size", "2",
                                                  "--data", text, "--steps", "2", "--save", ckpt] + CPU)
        check(rc == 0 and os.path.isfile(ckpt) and "bytes of" in err, "gpt tiny --data FILE --save CKPT",
              "rc %d, stderr: %s" % (rc, tail(err)))
        check_lines("gpt tiny --data", lines, 64, 2, exact=2)
        rc, lines, err = run_with_pipe("gpt.py", ["--size", "tiny", "--seq-len", "32", "--batch-size", "2",
                                                  "--finetune", "--init-from", ckpt, "--steps", "2"] + CPU)
        check(rc == 0 and "finetune from weights from" in err and "lr=3e-05" in err,
              "gpt tiny --finetune --init-from CKPT loads the weights, fine-tuning LR",
              "rc %d, stderr: %s" % (rc, tail(err)))
        check_lines("gpt tiny --finetune", lines, 64, 2, exact=2)
        rc, _out, err = run_plain("gpt.py", ["--size", "small", "--finetune", "--init-from", ckpt, "--steps", "1"]
                                  + CPU)
        check(rc == 2 and "a tiny checkpoint, but --size is small" in err,
              "gpt --init-from with the wrong size -> exit 2", "rc %d, stderr: %s" % (rc, tail(err)))
        rc, _out, err = run_plain("gpt.py", ["--size", "tiny", "--seq-len", "16", "--batch-size", "2",
                                             "--finetune", "--steps", "1"] + CPU)
        check(rc == 0 and "RANDOM weights" in err, "gpt --finetune without --init-from says so plainly",
              "rc %d, stderr: %s" % (rc, tail(err)))

        # An ImageFolder with real image files and a data-loader worker.
        try:
            from PIL import Image

            for cls in ("cat", "dog"):
                os.makedirs(os.path.join(tmp, "img", cls))
                for i in range(3):
                    Image.new("RGB", (40, 36), (40 * i, 80, 120)).save(os.path.join(tmp, "img", cls, "%d.png" % i))
            rc, lines, err = run_with_pipe("vision.py", ["--model", "resnet18", "--image-size", "32", "--batch-size",
                                                         "2", "--data", os.path.join(tmp, "img"), "--workers", "1",
                                                         "--steps", "4"] + CPU)
            check(rc == 0 and "imagefolder" in err, "vision --data DIR (ImageFolder, 1 worker)",
                  "rc %d, stderr: %s" % (rc, tail(err)))
            check_lines("vision --data", lines, 2, 4, exact=4)
            rc, lines, err = run_with_pipe("vision.py", ["--model", "resnet18", "--image-size", "32", "--batch-size",
                                                         "2", "--data", os.path.join(tmp, "img"), "--workers", "2"]
                                           + CPU, term_after=3, group=True)
            check(rc == 0 and "stopped (signal 15)" in err and "Traceback" not in err,
                  "vision --data with 2 workers: SIGTERM to the process group -> clean exit 0",
                  "rc %d, stderr: %s" % (rc, tail(err)))
            check_lines("vision --data after SIGTERM", lines, 2, 3)
        except ImportError:
            check(False, "vision --data DIR: PIL (python3-pil, a torchvision dependency) is missing")

    # Out of memory: exit 3 with a message. The job's address space is capped at what it uses
    # after importing torch plus 1.5 GB (so the cap works for any torch build); a step wants more.
    cap_then_run = (
        "import resource, runpy, sys, torch\n"
        "size = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "cap = size + (3 << 29)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    p = subprocess.run([PY, "-c", cap_then_run, os.path.join(WL, "gpt.py"), "--size", "tiny", "--batch-size",
                        "4096", "--seq-len", "256", "--steps", "1"] + CPU, capture_output=True, text=True,
                       timeout=120)
    rc, err = p.returncode, p.stderr
    check(rc == 3 and "out of memory" in err and "Reduce --batch-size" in err, "out of memory -> exit 3 with advice",
          "rc %d, stderr: %s" % (rc, tail(err)))

    # Features this torch or machine lacks: exit 4 with a clear message.
    import torch

    if not torch.cuda.is_available():
        rc, _out, err = run_plain("vision.py", ["--model", "resnet18", "--device", "cuda", "--steps", "1"])
        check(rc == 4 and "CUDA is not available" in err, "--device cuda without CUDA -> exit 4",
              "rc %d, stderr: %s" % (rc, tail(err)))
    # Where this torch has fused attention, it must compute what the written-out attention does.
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        sys.path.insert(0, WL)
        import gpt

        args = gpt.parse_args(["--size", "tiny", "--seq-len", "32"])
        GPT, _ = gpt.define_model(torch)
        torch.manual_seed(1)
        fused = GPT(gpt.model_config(args, fused=True)).eval()
        plain = GPT(gpt.model_config(args, fused=False)).eval()
        plain.load_state_dict(fused.state_dict())
        x = torch.randint(0, 256, (2, 33))
        with torch.no_grad():
            a, b = fused(x[:, :-1], x[:, 1:]).item(), plain(x[:, :-1], x[:, 1:]).item()
        check(abs(a - b) < 1e-4, "gpt: fused attention loss equals written-out attention loss", "%r vs %r" % (a, b))
    else:
        print("note: torch %s has no scaled_dot_product_attention; gpt.py uses the written-out attention"
              % torch.__version__)
    if not hasattr(torch, "compile"):
        rc, _out, err = run_plain("gpt.py", ["--size", "tiny", "--compile", "--steps", "1"] + CPU)
        check(rc == 4 and "--compile needs torch >= 2.0" in err, "--compile on torch < 2 -> exit 4",
              "rc %d, stderr: %s" % (rc, tail(err)))

    if FAILS:
        print("%d check(s) failed: %s" % (len(FAILS), "; ".join(FAILS)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
