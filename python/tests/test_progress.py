# SPDX-License-Identifier: Apache-2.0
"""migbench.step(): the progress channel of a running migbench, a no-op alone."""

import os

import pytest

from conftest import run_python


def read_lines(fd):
    data = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return data.decode().splitlines()
        data += chunk


def test_alone_is_a_noop(package_env):
    p = run_python("import migbench\n"
                   "for _ in range(3): migbench.step(samples=8)\n"
                   "print(migbench.active(), migbench.progress().steps, migbench.progress().samples)",
                   package_env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "3", "24"]
    assert p.stderr == ""


def test_lines_on_the_channel(package_env):
    r, w = os.pipe()
    env = dict(package_env, MIGBENCH_PROGRESS_FD=str(w))
    p = run_python("import migbench, time\n"
                   "t0 = time.monotonic()\n"
                   "migbench.step(samples=8)\n"
                   "migbench.step(samples=8, steps=2)\n"
                   "with migbench.tracking(samples=4): pass\n"
                   "print(t0, time.monotonic())", env, pass_fds=(w,))
    os.close(w)
    lines = read_lines(r)
    os.close(r)
    assert p.returncode == 0, p.stderr
    t0, t1 = map(float, p.stdout.split())
    fields = [dict(kv.split("=") for kv in line.split()) for line in lines]
    assert [(f["step"], f["samples"]) for f in fields] == [("1", "8"), ("3", "16"), ("4", "20")]
    for f in fields:  # the job's own clock: CLOCK_MONOTONIC, as time.monotonic()
        assert t0 <= float(f["t"]) <= t1
        assert "unit" not in f


def test_tokens_and_units(package_env):
    r, w = os.pipe()
    env = dict(package_env, MIGBENCH_PROGRESS_FD=str(w))
    p = run_python("import migbench\n"
                   "migbench.step(tokens=512)\n"
                   "migbench.step(tokens=512, samples=2)\n"
                   "q = migbench.Progress(unit='images'); q.step(samples=3)\n"
                   "s = migbench.Progress(); s.step(); s.step()", env, pass_fds=(w,))
    os.close(w)
    lines = read_lines(r)
    os.close(r)
    assert p.returncode == 0, p.stderr
    fields = [dict(kv.split("=") for kv in line.split()) for line in lines]
    assert (fields[0]["samples"], fields[0]["unit"]) == ("512", "tokens")
    assert (fields[1]["samples"], fields[1]["unit"]) == ("1024", "tokens")
    assert (fields[2]["samples"], fields[2]["unit"]) == ("3", "images")
    # No work given: steps alone (migbench then counts steps), never a made-up samples=0.
    assert [f["step"] for f in fields[3:]] == ["1", "2"] and all("samples" not in f for f in fields[3:])


def test_reader_gone_raises_once_then_stops(package_env):
    r, w = os.pipe()
    os.close(r)
    env = dict(package_env, MIGBENCH_PROGRESS_FD=str(w))
    p = run_python("import migbench, signal\n"
                   "signal.signal(signal.SIGPIPE, signal.SIG_IGN)\n"
                   "try:\n"
                   "    migbench.step(samples=1)\n"
                   "except migbench.MigbenchError as e:\n"
                   "    print(e.status_name)\n"
                   "migbench.step(samples=1)\n"
                   "print(migbench.active())", env, pass_fds=(w,))
    os.close(w)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["MB_EIO", "False"]


@pytest.mark.parametrize("kwargs", [{"samples": -1}, {"tokens": 1.5}, {"samples": "x"},
                                    {"steps": -2}, {"samples": float("nan")},
                                    {"samples": float("inf")}, {"tokens": True}])
def test_bad_counts(kwargs):
    import migbench

    with pytest.raises(migbench.InvalidArgument):
        migbench.Progress().step(**kwargs)


def test_steps_helper_counts_batches():
    import migbench

    class Batch:
        shape = (16, 3)

    rep = migbench.Progress()
    for _ in migbench.steps([Batch(), (Batch(), 1), {"x": Batch()}], reporter=rep):
        pass
    assert (rep.steps, rep.samples) == (3, 48)
    rep = migbench.Progress()
    for i, _ in enumerate(migbench.steps(range(10), samples=4, reporter=rep)):
        if i == 2:
            break  # the step the body finished still counts
    assert (rep.steps, rep.samples) == (3, 12)


def test_callbacks_need_their_library():
    import importlib.util

    for mod, lib in (("migbench.hf", "transformers"), ("migbench.lightning", "lightning")):
        if importlib.util.find_spec(lib) is None and (lib != "lightning" or importlib.util.find_spec("pytorch_lightning") is None):
            with pytest.raises(ImportError):
                importlib.import_module(mod)


def test_callbacks_against_their_interfaces(monkeypatch):
    """The HF and Lightning callbacks, driven as their trainers call them (stand-in base classes
    where the libraries are not installed: the callbacks use only the documented hooks)."""
    import importlib
    import sys
    import types

    import migbench

    if importlib.util.find_spec("transformers") is None:
        fake = types.ModuleType("transformers")
        fake.TrainerCallback = type("TrainerCallback", (), {})
        monkeypatch.setitem(sys.modules, "transformers", fake)
    if importlib.util.find_spec("lightning") is None and importlib.util.find_spec("pytorch_lightning") is None:
        for name in ("lightning", "lightning.pytorch"):
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
        cbs = types.ModuleType("lightning.pytorch.callbacks")
        cbs.Callback = type("Callback", (), {})
        monkeypatch.setitem(sys.modules, "lightning.pytorch.callbacks", cbs)
    for mod in ("migbench.hf", "migbench.lightning"):
        sys.modules.pop(mod, None)
    hf = importlib.import_module("migbench.hf")
    pl = importlib.import_module("migbench.lightning")

    rep = migbench.Progress()
    cb = hf.MigbenchCallback(reporter=rep)
    args = types.SimpleNamespace(per_device_train_batch_size=8, gradient_accumulation_steps=4)
    control = object()
    for _ in range(5):
        assert cb.on_step_end(args, None, control) is control
    assert (rep.steps, rep.samples) == (5, 160)
    rep = migbench.Progress()
    hf.MigbenchCallback(tokens_per_sample=128, reporter=rep).on_step_end(args, None, control)
    assert (rep.steps, rep.tokens) == (1, 32 * 128)

    class Batch:
        shape = (12, 5)

    rep = migbench.Progress()
    cb = pl.MigbenchCallback(reporter=rep)
    for i in range(3):
        cb.on_train_batch_end(None, None, None, (Batch(), Batch()), i)
    assert (rep.steps, rep.samples) == (3, 36)
    for mod in ("migbench.hf", "migbench.lightning"):
        sys.modules.pop(mod, None)
