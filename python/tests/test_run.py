# SPDX-License-Identifier: Apache-2.0
"""A PyTorch loop reporting through migbench.steps() under `migbench run` on the emulated GPU:
migbench's throughput equals the loop's own clock within 1 %; and the reference workloads'
reporter goes through the package."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def own_rate(log, start_ns, end_ns):
    pts = []
    with open(log) as f:
        for line in f:
            t, s = line.split()
            pts.append((float(t), int(s)))
    inside = [p for p in pts if start_ns * 1e-9 <= p[0] <= end_ns * 1e-9]
    assert len(inside) > 20, "too few steps in the window"
    (t0, s0), (t1, s1) = inside[0], inside[-1]
    return (s1 - s0) / (t1 - t0)


def test_torch_loop_throughput_matches_its_clock(tmp_path, migbench_cmd, package_env):
    pytest.importorskip("torch")
    log = tmp_path / "loop.log"
    exp = tmp_path / "loop.yaml"
    exp.write_text(
        "version: 1\nname: pyloop\ndevice: emu:A100-40GB\npython: %s\n"
        "workloads:\n  loop:\n    command: [\"{python}\", \"%s\", --log, \"%s\"]\n    unit: samples\n"
        "runs:\n  - {name: alone, mode: exclusive, jobs: [loop]}\n"
        "measure: {warmup: 20 steps, duration: 5s, sample_interval: 100ms, grace: 10s, progress_timeout: 120s}\n"
        % (sys.executable, os.path.join(HERE, "torch_loop.py"), log))
    res = tmp_path / "res"
    p = subprocess.run([migbench_cmd, "run", str(exp), "--results", str(res)], env=package_env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    cell = json.loads((res / "alone" / "0" / "cell.json").read_text())
    assert cell["status"] == "ok", cell["failure"]
    job = cell["jobs"][0]
    assert job["env"].get("MIGBENCH_PROGRESS_FD") == "pipe"
    mine = own_rate(log, job["window"]["start_ns"], job["window"]["end_ns"])
    theirs = job["throughput"]["mean"]
    print("throughput: migbench %.4f, own clock %.4f samples/s (%+.3f %%)" % (theirs, mine, (theirs / mine - 1) * 100))
    assert theirs == pytest.approx(mine, rel=0.01), (theirs, mine)
    # The report (and migbench.load) carries the same figure.
    import migbench

    r = migbench.load(res)
    tp = r.experiments[0]["runs"][0]["jobs"][0]["throughput"]["mean"]
    assert tp == pytest.approx(theirs, rel=1e-3)


def test_reference_workloads_report_through_the_package(tmp_path, source_dir, package_env):
    """workloads/_common.py picks the package when its library loads, else migbench_progress."""
    code = ("import os, sys\nsys.path.insert(0, %r)\nimport _common\n"
            "r = _common.progress_reporter('images')\nprint(type(r).__name__)\n"
            "r.report(1, 8, loss=0.5, unit='images')\nr.report(2, 16, loss=0.4, unit='images')\n"
            % os.path.join(source_dir, "workloads"))
    rd, wr = os.pipe()
    env = dict(package_env, MIGBENCH_PROGRESS_FD=str(wr))
    p = subprocess.run([sys.executable, "-c", code], env=env, pass_fds=(wr,), capture_output=True,
                       text=True, timeout=120)
    os.close(wr)
    out = os.read(rd, 65536).decode()
    os.close(rd)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "PackageReporter"
    lines = [dict(kv.split("=") for kv in line.split()) for line in out.splitlines()]
    assert [(l["step"], l["samples"], l["unit"]) for l in lines] == [("1", "8", "images"), ("2", "16", "images")]
    assert all("t" in l for l in lines)  # the package's lines carry the job's clock
    # Without the library the workloads still report, through migbench_progress.
    env["MIGBENCH_LIBRARY"] = str(tmp_path / "missing.so")
    rd, wr = os.pipe()
    env["MIGBENCH_PROGRESS_FD"] = str(wr)
    p = subprocess.run([sys.executable, "-c", code], env=env, pass_fds=(wr,), capture_output=True,
                       text=True, timeout=120)
    os.close(wr)
    out = os.read(rd, 65536).decode()
    os.close(rd)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Reporter"
    assert out.splitlines()[0].startswith("step=1 samples=8")
