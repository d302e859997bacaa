# SPDX-License-Identifier: Apache-2.0
"""Results in a notebook: migbench.load(dir) gives the analysis the report is built from.

load() asks the C library for the report's JSON (mb_report_json: exactly `migbench report DIR
--format json`), so Python never re-derives a figure: runs, cells, jobs, throughput and energy
with their confidence intervals, attribution methods and the quality notes are the report's.
Results.data is that document as plain Python objects (dicts, lists, numbers, None for a figure
that was not measured); Results.jobs(), .runs(), .cells() and .attribution() flatten it into rows,
as pandas DataFrames when pandas is installed (as_frame=True).
"""

import csv
import ctypes
import json
import os

from . import _lib


def report_json(path, power_rule=None):
    """The report's JSON text for results directory path (see load)."""
    err = _lib.Error()
    out = ctypes.c_void_p()
    rule = None if power_rule is None else _lib.encode(power_rule, "power_rule")
    try:
        path = os.fspath(path)
    except TypeError:
        raise _lib.InvalidArgument(1, "MB_EINVAL", "the results directory must be a path, got %r" % (path,))
    status = _lib.lib().mb_report_json(_lib.encode(path, "results directory"), rule,
                                       ctypes.byref(out), ctypes.byref(err))
    text = _lib.take_text(out)
    _lib.check(status, err)
    return text


def load(path, power_rule=None):
    """Loads results directory path into a Results. power_rule: as `report --power-rule`
    (energy, time, cost:ETA, slowdown:S; default energy). Raises NotFound or MigbenchError
    (MB_EPARSE, naming file and field) as the report would."""
    return Results(json.loads(report_json(path, power_rule)), os.fspath(path))  # a path: checked


def _ci(prefix, value):
    """A {mean, ci95, n} figure as three columns; None when not measured."""
    if not isinstance(value, dict):
        return {prefix: value}
    return {prefix: value.get("mean"), prefix + "_ci95": value.get("ci95"), prefix + "_n": value.get("n")}


class Results:
    """The analysis of one results directory. data: the report's JSON document (schema 1)."""

    def __init__(self, data, path):
        self.data = data
        self.path = path
        self.schema = data.get("schema")
        self.experiments = data.get("experiments", [])

    def __repr__(self):
        runs = sum(len(e.get("runs", [])) for e in self.experiments)
        return "Results(%r: %d experiment(s), %d run(s))" % (self.path, len(self.experiments), runs)

    def _rows(self, kind):
        for e in self.experiments:
            for r in e.get("runs", []):
                base = {"experiment": e.get("experiment"), "run": r.get("name")}
                if kind == "runs":
                    row = dict(base, mode=r.get("mode"), layout=r.get("layout"),
                               cells_ok=r.get("cells_ok"), cells_failed=r.get("cells_failed"),
                               default_attribution=r.get("default_attribution"))
                    for k in ("window_s", "energy_j", "power_w", "stp", "antt", "energy_ratio",
                              "energy_saving", "throughput_gain"):
                        row.update(_ci(k, r.get(k)))
                    yield row
                elif kind == "jobs":
                    for j in r.get("jobs", []):
                        row = dict(base, job=j.get("name"), workload=j.get("workload"),
                                   unit=j.get("unit"), instance=j.get("instance"))
                        for k in ("throughput", "normalised", "s_per_step", "j_per_unit"):
                            row.update(_ci(k, j.get(k)))
                        yield row
                elif kind == "cells":
                    for c in r.get("cells", []):
                        yield dict(base, **{k: v for k, v in c.items() if not isinstance(v, (dict, list))})
                elif kind == "attribution":
                    for method, a in (r.get("attribution") or {}).items():
                        for job, j in (a.get("jobs_j") or {}).items():
                            yield dict(base, method=method, available=a.get("available"),
                                       note=a.get("note"), job=job, energy_j=j,
                                       total_j=a.get("total_j"))

    def _table(self, kind, as_frame):
        rows = list(self._rows(kind))
        if as_frame is False:
            return rows
        try:
            import pandas
        except ImportError:
            if as_frame:
                raise
            return rows
        return pandas.DataFrame(rows)

    def runs(self, as_frame=None):
        """One row per run: mode, layout, cells, window, energy, power, STP, ANTT, gains (mean,
        ci95, n each). A DataFrame when pandas is installed (as_frame=None) or asked (True)."""
        return self._table("runs", as_frame)

    def jobs(self, as_frame=None):
        """One row per job and run: throughput, normalised throughput, s/step, J/unit (mean,
        ci95, n)."""
        return self._table("jobs", as_frame)

    def cells(self, as_frame=None):
        """One row per cell (run x repetition): status, window, energy by counter and integral,
        gap, flag, power, samples."""
        return self._table("cells", as_frame)

    def attribution(self, as_frame=None):
        """One row per run, attribution method and job: the job's energy and the method's note."""
        return self._table("attribution", as_frame)

    def _cell_dir(self, run, rep, experiment):
        e = self.experiments[experiment]
        base = self.path if len(self.experiments) == 1 else (e.get("results_dir") or self.path)
        return os.path.join(base, run, str(int(rep)))

    def cell_record(self, run, rep=0, experiment=0):
        """One cell's own record (<dir>/<run>/<rep>/cell.json, docs/results.md) as a dict, read by
        the C library's one cell.json decoder (mb_cell_json): the fields it knows, as the report
        reads them. Raises NotFound or MigbenchError (MB_EPARSE, naming file and field)."""
        path = os.path.join(self._cell_dir(run, rep, experiment), "cell.json")
        err = _lib.Error()
        out = ctypes.c_void_p()
        status = _lib.lib().mb_cell_json(_lib.encode(path, "cell record"), ctypes.byref(out),
                                         ctypes.byref(err))
        text = _lib.take_text(out)
        _lib.check(status, err)
        return json.loads(text)

    def telemetry(self, run, rep=0, experiment=0):
        """The meter's raw samples of one cell (<dir>/<run>/<rep>/telemetry.csv) as rows of
        floats (None where empty), or a DataFrame with pandas."""
        path = os.path.join(self._cell_dir(run, rep, experiment), "telemetry.csv")
        with open(path, newline="") as f:
            rows = [{k: (float(v) if v not in ("", None) else None) for k, v in row.items()}
                    for row in csv.DictReader(f)]
        try:
            import pandas

            return pandas.DataFrame(rows)
        except ImportError:
            return rows
