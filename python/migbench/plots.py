# SPDX-License-Identifier: Apache-2.0
"""One matplotlib helper per chart of the HTML report (docs/report.md), drawn from load()'s data.

    plot_stp(results)              normalised throughput of each job in each run, with 95 % CIs
    plot_gains(results)            energy saving and throughput gain of each run, with 95 % CIs
    plot_energy_per_unit(results)  energy per unit of work of each job in each run, with 95 % CIs
    plot_timeline(results, run)    one cell's power over time, the measurement window shaded

Each takes an optional matplotlib Axes (ax=) and an experiment index, and returns the Axes.
matplotlib is imported only when a helper is called; ImportError says how to get it.
"""

from . import _lib


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("migbench's plots need matplotlib (Debian: apt install python3-matplotlib)") from exc
    return plt


def _ax(ax):
    if ax is not None:
        return ax
    return _plt().subplots()[1]


def _exp(results, experiment):
    try:
        return results.experiments[experiment]
    except IndexError:
        raise _lib.InvalidArgument(1, "MB_EINVAL", "no experiment %r in %s" % (experiment, results.path))


def _grouped(ax, e, key, ylabel, title):
    runs = e.get("runs", [])
    jobs = []
    for r in runs:
        for j in r.get("jobs", []):
            if j["name"] not in jobs:
                jobs.append(j["name"])
    width = 0.8 / max(len(jobs), 1)
    for k, job in enumerate(jobs):
        xs, ys, errs = [], [], []
        for i, r in enumerate(runs):
            for j in r.get("jobs", []):
                v = j.get(key)
                if j["name"] == job and isinstance(v, dict) and v.get("mean") is not None:
                    xs.append(i - 0.4 + width * (k + 0.5))
                    ys.append(v["mean"])
                    errs.append(v.get("ci95") or 0)
        ax.bar(xs, ys, width, yerr=errs, capsize=3, label=job)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r["name"] for r in runs])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if jobs:
        ax.legend()
    return ax


def plot_stp(results, ax=None, experiment=0):
    """Normalised throughput (job throughput / its exclusive throughput) per job and run."""
    e = _exp(results, experiment)
    ax = _grouped(_ax(ax), e, "normalised", "normalised throughput", "%s: normalised throughput" % e.get("experiment"))
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    return ax


def plot_energy_per_unit(results, ax=None, experiment=0):
    """Energy per unit of work (J per image, token, ...) per job and run."""
    e = _exp(results, experiment)
    return _grouped(_ax(ax), e, "j_per_unit", "J per unit", "%s: energy per unit" % e.get("experiment"))


def plot_gains(results, ax=None, experiment=0):
    """Energy saving and throughput gain of each run against running the jobs one by one."""
    e = _exp(results, experiment)
    ax = _ax(ax)
    runs = [r for r in e.get("runs", []) if isinstance(r.get("energy_saving"), dict)
            or isinstance(r.get("throughput_gain"), dict)]
    for k, (key, label) in enumerate((("energy_saving", "energy saving"), ("throughput_gain", "throughput gain"))):
        xs, ys, errs = [], [], []
        for i, r in enumerate(runs):
            v = r.get(key)
            if isinstance(v, dict) and v.get("mean") is not None:
                xs.append(i - 0.2 + 0.4 * k)
                ys.append(v["mean"])
                errs.append(v.get("ci95") or 0)
        ax.bar(xs, ys, 0.4, yerr=errs, capsize=3, label=label)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r["name"] for r in runs])
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_title("%s: gains of sharing" % e.get("experiment"))
    ax.legend()
    return ax


def plot_timeline(results, run, rep=0, ax=None, experiment=0):
    """Power over time of one cell (its telemetry.csv), the measurement window (cell.json) shaded."""
    ax = _ax(ax)
    rows = results.telemetry(run, rep, experiment)
    if hasattr(rows, "to_dict"):
        rows = rows.to_dict("records")
    cell = results.cell_record(run, rep, experiment)
    t0 = cell.get("t0_ns") or 0
    pts = [((r["t_ns"] - t0) * 1e-9, r["power_mw"] / 1000) for r in rows
           if r.get("power_mw") is not None and r.get("t_ns") is not None]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], linewidth=1)
    w = cell.get("window") or {}
    if w.get("start_ns") and w.get("end_ns"):
        ax.axvspan((w["start_ns"] - t0) * 1e-9, (w["end_ns"] - t0) * 1e-9, alpha=0.15,
                   label="measurement window")
        ax.legend()
    ax.set_xlabel("time (s)")
    ax.set_ylabel("power (W)")
    ax.set_title("%s rep %d: power" % (run, rep))
    return ax
