# SPDX-License-Identifier: Apache-2.0
"""migbench.load(): the report's analysis, equal to `migbench report DIR --format json`."""

import json
import os
import subprocess

import pytest

import migbench


@pytest.fixture(scope="module")
def golden(source_dir):
    return os.path.join(source_dir, "tests", "golden", "results-h100")


def report_json(cmd, path, *extra):
    p = subprocess.run([cmd, "report", path, "--format", "json", *extra], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_load_equals_report_json(migbench_cmd, golden):
    r = migbench.load(golden)
    assert r.data == report_json(migbench_cmd, golden)
    assert r.schema == 1 and r.experiments[0]["experiment"] == "paper-mix"
    assert migbench.load(golden, power_rule="time").data == report_json(
        migbench_cmd, golden, "--power-rule", "time")


def test_rows_without_pandas(golden):
    r = migbench.load(golden)
    runs = r.runs(as_frame=False)
    assert [x["run"] for x in runs] == [x["name"] for x in r.experiments[0]["runs"]]
    jobs = r.jobs(as_frame=False)
    first = r.experiments[0]["runs"][0]["jobs"][0]
    assert jobs[0]["throughput"] == first["throughput"]["mean"]
    assert jobs[0]["throughput_ci95"] == first["throughput"]["ci95"]
    cells = r.cells(as_frame=False)
    assert len(cells) == sum(len(x["cells"]) for x in r.experiments[0]["runs"])
    att = r.attribution(as_frame=False)
    assert {a["method"] for a in att} >= {"equal"}
    # None stays None: an unmeasured figure is never turned into 0.
    assert any(a["energy_j"] is None for a in att)


def test_dataframes(golden):
    pd = pytest.importorskip("pandas")
    r = migbench.load(golden)
    df = r.jobs()
    assert isinstance(df, pd.DataFrame)
    assert list(df["job"]) == [x["job"] for x in r.jobs(as_frame=False)]
    assert isinstance(r.telemetry("exclusive", 0), pd.DataFrame)


def test_plots(golden):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from migbench import plots

    r = migbench.load(golden)
    for fn in (plots.plot_stp, plots.plot_gains, plots.plot_energy_per_unit):
        ax = fn(r)
        assert ax.patches, fn.__name__  # bars were drawn
    ax = plots.plot_timeline(r, "exclusive", 0)
    assert ax.lines and len(ax.lines[0].get_xdata()) > 10


@pytest.mark.parametrize("bad", ["/nonexistent/results", "", "a\0b", None, 42])
def test_load_errors(bad):
    with pytest.raises(migbench.MigbenchError) as exc:
        migbench.load(bad)
    assert exc.value.message


def test_load_malformed(tmp_path):
    (tmp_path / "journal.jsonl").write_text("{not json\n")
    run = tmp_path / "r" / "0"
    run.mkdir(parents=True)
    (run / "cell.json").write_text("{\"schema\": 1, \"run\": ")
    with pytest.raises(migbench.MigbenchError) as exc:
        migbench.load(str(tmp_path))
    assert exc.value.status_name.startswith("MB_E")


def test_cell_record_through_the_decoder(golden, tmp_path):
    r = migbench.load(golden)
    cell = r.cell_record("exclusive", 0)
    with open(os.path.join(golden, "exclusive", "0", "cell.json")) as f:
        raw = json.load(f)
    # The library's decoder read it: the fields the report uses arrive as written.
    assert cell["schema"] == raw["schema"] and cell["status"] == raw["status"]
    assert cell["window"] == raw["window"] and cell["t0_ns"] == raw["t0_ns"]
    assert [j["name"] for j in cell["jobs"]] == [j["name"] for j in raw["jobs"]]
    # A field the decoder does not know is not passed through: no second reader of the file.
    odd = tmp_path / "exclusive" / "0"
    odd.mkdir(parents=True)
    (odd / "cell.json").write_text(json.dumps(dict(raw, not_a_field=1)))
    other = migbench.Results(r.data, str(tmp_path))
    assert "not_a_field" not in other.cell_record("exclusive", 0)
    (odd / "cell.json").write_text("{\"schema\": 1, \"run\": ")
    with pytest.raises(migbench.MigbenchError) as exc:
        other.cell_record("exclusive", 0)
    assert exc.value.status_name == "MB_EPARSE" and "cell.json" in exc.value.message
    with pytest.raises(migbench.MigbenchError) as exc:
        other.cell_record("missing", 0)
    assert exc.value.status_name == "MB_ENOTFOUND"
