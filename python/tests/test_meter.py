# SPDX-License-Identifier: Apache-2.0
"""migbench.Meter on the emulated GPU and the host: windows, their energy, refusals, errors.

The emulated GPU runs at a constant load here (idle 100 W, max 300 W, load 0.5: 200 W), so a
window's true energy is 200 W x its duration; the meter must give that within its stated error
(the 2 % counter-vs-integral gap it flags). Windows are timed by real work (a busy loop on
time.monotonic), not synchronised on sleeps: nothing checked depends on how long they last.
"""

import json
import subprocess
import threading
import time

import pytest

import migbench

EMU = "emu:A100-40GB:idle_w=100,max_w=300,load=0.5"
TRUE_W = 200.0
STATED_ERROR = 0.02  # MB_METER_GAP_FLAG: the gap the meter flags


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def meter():
    with migbench.Meter(EMU, interval=0.01, min_window=0.1) as m:
        yield m


def check_energy(r):
    assert not r.refused and r.reason is None
    assert r.duration_s > 0.1
    true_j = TRUE_W * r.duration_s
    assert r.counter_j == pytest.approx(true_j, rel=STATED_ERROR)
    assert r.integral_j == pytest.approx(true_j, rel=STATED_ERROR)
    assert abs(r.gap_rel) <= STATED_ERROR and r.gap_flag is False
    assert r.mean_power_w == pytest.approx(TRUE_W, rel=STATED_ERROR)
    assert r.peak_power_w == pytest.approx(TRUE_W, rel=STATED_ERROR)
    assert r.energy_j == r.counter_j
    assert r.samples > 0


def test_info_names_the_emulated_device(meter):
    assert meter.info["backend"] == "emu" and meter.info["emulated"] is True
    assert meter.info["sensor"]["has_energy_counter"] is True
    assert meter.info["interval_s"] == pytest.approx(0.01)
    assert meter.info["min_window_s"] == pytest.approx(0.1)


def test_window_matches_emulated_energy(meter):
    meter.begin("train")
    spin(0.3)
    r = meter.end("train")
    assert r.name == "train"
    check_energy(r)
    assert r.t1_s - r.t0_s == pytest.approx(r.duration_s)
    assert r.sensor["power_kind"] in ("instant", "averaged")
    assert r.min_window_s == pytest.approx(0.1)


def test_windows_nest_and_overlap(meter):
    meter.begin("epoch")
    meter.begin("a")
    spin(0.15)
    meter.begin("b")  # overlaps a
    spin(0.15)
    ra = meter.end("a")
    spin(0.15)
    rb = meter.end("b")
    with meter.window("eval") as w:  # nested in epoch
        spin(0.15)
    re = meter.end("epoch")
    for r in (ra, rb, w.result, re):
        check_energy(r)
    assert re.t0_s <= ra.t0_s < rb.t0_s < ra.t1_s < rb.t1_s <= w.result.t0_s < re.t1_s
    # The whole covers its parts: energy is additive over time at constant power.
    assert re.counter_j > ra.counter_j + w.result.counter_j


def test_short_window_is_refused_with_reason(meter):
    meter.begin("tiny")
    r = meter.end("tiny")
    assert r.refused is True
    assert "shorter than the sensor can resolve" in r.reason
    assert r.counter_j is None and r.integral_j is None and r.energy_j is None
    assert r.mean_power_w is None
    with pytest.raises(migbench.WindowRefused) as exc:
        meter.begin("tiny")
        meter.end("tiny", strict=True)
    assert exc.value.status_name == "MB_ETOOSHORT" and exc.value.result.refused


def test_default_minimum_window_is_the_sensors():
    with migbench.Meter(EMU) as m:
        assert m.info["min_window_s"] == pytest.approx(1.0)  # max(2 x 100 ms, 1 s)
        assert m.info["interval_s"] == pytest.approx(0.1)


def test_errors_carry_status_and_message(meter):
    with pytest.raises(migbench.NotFound) as exc:
        meter.end("never")
    assert exc.value.status == 5 and "never" in exc.value.message
    meter.begin("dup")
    with pytest.raises(migbench.Busy) as exc:
        meter.begin("dup")
    assert exc.value.status_name == "MB_EBUSY"
    for bad in ("", "x" * 64, "a\nb", "nul\0"):
        with pytest.raises(migbench.InvalidArgument):
            meter.begin(bad)
    with pytest.raises(migbench.InvalidArgument):
        meter.begin(42)
    meter.end("dup")


def test_sixteen_windows_at_most(meter):
    for i in range(16):
        meter.begin("w%d" % i)
    with pytest.raises(migbench.Busy) as exc:
        meter.begin("w16")
    assert exc.value.status_name == "MB_ENORESOURCES"
    for i in range(16):
        meter.end("w%d" % i)


@pytest.mark.parametrize("device", ["bogus", "emu:NoSuchGPU", "emu:A100-40GB:load=7", "nvml:99x"])
def test_bad_device_specs(device):
    with pytest.raises(migbench.MigbenchError) as exc:
        migbench.Meter(device)
    assert exc.value.message


@pytest.mark.parametrize("kwargs", [{"interval": 0}, {"interval": "fast"}, {"interval": 1e9},
                                    {"min_window": -1}])
def test_bad_intervals(kwargs):
    with pytest.raises(migbench.InvalidArgument):
        migbench.Meter(EMU, **kwargs)


def test_closed_meter_refuses_calls():
    m = migbench.Meter(EMU)
    m.close()
    m.close()
    with pytest.raises(migbench.MigbenchError) as exc:
        m.begin("x")
    assert exc.value.status_name == "MB_ESTATE"


def test_threads_share_a_meter(meter):
    """Windows from several threads at once; end() waits without the GIL (ctypes releases it),
    so the threads' windows all complete."""
    results, errors = {}, []

    def worker(i):
        try:
            meter.begin("t%d" % i)
            spin(0.15)
            results[i] = meter.end("t%d" % i)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results.values():
        check_energy(r)


def test_host_device():
    """The host backend: RAPL energy where the kernel exposes it, else no energy and a reason;
    time is always there."""
    try:
        m = migbench.Meter("host", interval=0.01, min_window=0.1)
    except migbench.MigbenchError as exc:
        pytest.skip("no host device here: %s" % exc)
    with m:
        assert m.info["backend"] == "host" and m.info["emulated"] is False
        m.begin("cpu")
        spin(0.2)
        r = m.end("cpu")
    assert r.duration_s > 0.1 and not r.refused
    if r.energy_j is None:
        assert r.reason
    else:
        assert r.energy_j > 0


def test_nvml_device_through_the_fake_driver(package_env):
    """The nvml backend, on the fake libnvidia-ml.so.1 the C tests use (an emulated GPU behind
    NVML's API): the same windows and figures as on emu."""
    import os

    from conftest import run_python

    build = os.path.dirname(package_env["MIGBENCH_LIBRARY"])
    fake = os.path.join(build, "tests", "fake-nvml", "libnvidia-ml.so.1")
    if not os.path.exists(fake):
        pytest.fail("the fake NVML is not built at %s" % fake)
    env = dict(package_env, MIGBENCH_NVML_LIBRARY=fake,
               MIGBENCH_FAKE_NVML_SPEC="A100-40GB:idle_w=100,max_w=300,load=0.5")
    p = run_python(
        "import time, migbench\n"
        "with migbench.Meter('nvml:0', interval=0.01, min_window=0.1) as m:\n"
        "    print(m.info['backend'], m.info['emulated'])\n"
        "    m.begin('w')\n"
        "    end = time.monotonic() + 0.3\n"
        "    while time.monotonic() < end: pass\n"
        "    r = m.end('w')\n"
        "print(r.refused, r.counter_j / r.duration_s, r.integral_j / r.duration_s)\n", env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "nvml False"
    refused, counter_w, integral_w = lines[1].split()
    assert refused == "False"
    assert float(counter_w) == pytest.approx(TRUE_W, rel=STATED_ERROR)
    assert float(integral_w) == pytest.approx(TRUE_W, rel=STATED_ERROR)


def test_window_figures_are_those_of_measure(meter, migbench_cmd, package_env):
    """A window's figures have one encoder: the window meter's result carries every field of
    `measure --json`'s energy window (counter_patched_s included), plus its own times, sampling and
    sensor."""
    meter.begin("w")
    spin(0.15)
    r = meter.end("w")
    p = subprocess.run([migbench_cmd, "measure", "--device", EMU, "--json", "--", "true"],
                       env=package_env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    window = json.loads(p.stdout)["energy"]
    extra = {"name", "t0_s", "t1_s", "power_shift_s", "interval_s", "min_window_s", "sensor"}
    assert set(r.data) == set(window) | extra
    assert r.counter_patched_s == 0
