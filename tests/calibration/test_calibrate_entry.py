"""``calibrate --entry``: an id picks a measurements-YAML entry, a number N the N-th run of
an nccl-tests output; what picks nothing is refused in one line, never ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _model_outputs import refused

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"
DEFAULT = DATA / "h100_2node_degraded_default_all_reduce_perf.txt"
MEASUREMENTS = DATA / "h100_2node_degraded_measurements.yaml"


@pytest.fixture
def two_runs(tmp_path) -> Path:
    """One output of two runs: the ring run's table, then the default run's rows (sizes
    start over)."""
    rows = [line for line in DEFAULT.read_text().splitlines() if line[:1] == " " and line.split()]
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(RING.read_text() + "\n".join(rows) + "\n")
    return path


def test_a_number_picks_a_run_of_an_output(run_calibrate, two_runs):
    """Without --entry both runs are fitted, numbered 1 and 2 in --json; --entry 2 fits
    the second alone."""
    status, out, err = run_calibrate(str(two_runs), "-t", "dgx-h100", "--json")
    assert status == 0, err
    runs = json.loads(out)["runs"]
    assert [r["run"] for r in runs] == [1, 2] and [r["entry"] for r in runs] == [None, None]
    status, out, err = run_calibrate(str(two_runs), "-t", "dgx-h100", "--entry", "2", "--json")
    assert status == 0, err
    (picked,) = json.loads(out)["runs"]
    assert (picked["source"], picked["run"]) == (runs[1]["source"], 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(RING), "--entry", "nccltests290_h100_2node_ib_ndr_allreduce_ring"], "an entry id"),
        ([str(RING), "--entry", "2"], "holds one run, at line 32 (drop --entry)"),
        ([str(RING), "--entry", "0"], "numbered from 1"),
        ([str(MEASUREMENTS), "--entry", "1"], "the results are measurements YAML"),
    ],
)
def test_an_entry_that_picks_nothing_isrefused(run_calibrate, args, message):
    """An entry id with nccl-tests output, a run number the output lacks (or 0), a number
    with measurements YAML: one line each."""
    err = refused(run_calibrate(*args, "-t", "dgx-h100"))
    assert message in err


def test_a_number_beyond_the_runs_names_them(run_calibrate, two_runs):
    """--entry 3 of two runs: the lines where they start and the numbers to give."""
    err = refused(run_calibrate(str(two_runs), "-t", "dgx-h100", "--entry", "3"))
    assert "holds 2 runs, at lines 32, " in err and "give --entry 1 to 2" in err


def test_ids_still_pick_entries_next_to_an_output(run_calibrate):
    """An id picks the YAML's entry; an nccl-tests output beside it is fitted whole."""
    entry = "nccltests290_h100_2node_ib_ndr_allreduce_ring"
    status, out, err = run_calibrate(
        str(MEASUREMENTS), str(DEFAULT), "-t", "dgx-h100", "--entry", entry, "--json"
    )
    assert status == 0, err
    runs = json.loads(out)["runs"]
    assert [r["entry"] for r in runs] == [entry, None]


@pytest.fixture
def a_run_without_usable_rows(tmp_path) -> Path:
    """One output of three runs: the ring run, a run whose every time is NaN (its table
    starts over at 8 MiB), then the default run's rows."""
    rows = [line for line in DEFAULT.read_text().splitlines() if line[:1] == " " and line.split()]
    nan = []
    for line in rows:
        tokens = line.split()
        tokens[5] = tokens[9] = "nan"
        nan.append("  ".join(tokens))
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(RING.read_text() + "\n".join(nan + rows) + "\n")
    return path


def test_a_table_without_usable_rows_is_counted(a_run_without_usable_rows):
    """Every table of the output is a run, the one whose rows were all dropped too: the
    third table is run 3, and without --entry the runs with rows are read, the dropped
    rows of the other still said."""
    from fabricui.services.calibrate import _read_runs

    runs, numbered = _read_runs([a_run_without_usable_rows], None, [], [])
    assert [numbered[run.source] for run in runs] == [1, 3]
    assert len(runs[0].dropped) == 11 and {row.why for row in runs[0].dropped} == {
        "a NaN or infinite time"
    }
    (third,), _ = _read_runs([a_run_without_usable_rows], None, [], [3])
    assert third.source == runs[1].source and len(third.rows) == 11


def test_entry_on_a_table_without_usable_rows_isrefused(run_calibrate, a_run_without_usable_rows):
    """--entry 2 picks the run whose every row was dropped: one line saying so and why; an
    --entry beyond the three runs names all three."""
    err = refused(run_calibrate(str(a_run_without_usable_rows), "-t", "dgx-h100", "--entry", "2"))
    assert "--entry 2: run 2 of " in err and "(line 46) has no usable row: dropped 11 rows: " in err
    assert "11 with a NaN or infinite time (lines 46, 47, 48, 49, 50, ...)" in err
    assert err.rstrip().endswith("pick another run (1 to 3)")
    err = refused(run_calibrate(str(a_run_without_usable_rows), "-t", "dgx-h100", "--entry", "4"))
    assert "holds 3 runs, at lines 32, 46, 57 (give --entry 1 to 3)" in err


def test_held_out_files_are_used_whole_whatever_entry_picks(run_calibrate):
    """``--entry`` picks what is fitted; a ``--held-out`` YAML checks the fit with every
    entry (an id it lacks is no error), as ``--help`` says: fit the ring entry, hold out
    the same file's default entry; the ring entry, fitted, is left out of the held-out
    rows (it would check nothing) and said to be; the default entry, the rows of the
    nccl-tests output also held out, is read and counted once, and said to be."""
    entry = "nccltests290_h100_2node_ib_ndr_allreduce_ring"
    status, out, err = run_calibrate(
        str(MEASUREMENTS), "-t", "dgx-h100", "--entry", entry, "--held-out", str(DEFAULT),
        "--held-out", str(MEASUREMENTS), "--json",
    )  # fmt: skip
    assert status == 0, err
    runs = json.loads(out)["runs"]
    fitted = [r["entry"] for r in runs if {row["set"] for row in r["rows"]} != {"held_out"}]
    held = [r["entry"] for r in runs if {row["set"] for row in r["rows"]} == {"held_out"}]
    assert fitted == [entry]
    assert held == [None]  # the nccl-tests output, whole
    repeats = json.loads(out)["held_out_repeats"]
    default = f"{MEASUREMENTS}#nccltests290_h100_2node_ib_ndr_allreduce_default"
    assert [r["source"] for r in repeats if r["fitted"] is None] == [default]
    assert [r["fitted"] for r in repeats if r["fitted"]] == [f"{MEASUREMENTS}#{entry}"]
    assert "is also a fitted run" in err and "repeats the held-out run" in err


def test_a_run_given_twice_is_fitted_once(run_calibrate, tmp_path):
    """``calibrate A A`` (or A and a copy of it): the run is fitted once, each repeat said
    in one warning line and listed in --json fit_repeats; its rows would weigh twice."""
    copy = tmp_path / "copy_all_reduce_perf.txt"
    copy.write_text(RING.read_text())
    status, out, err = run_calibrate(
        str(RING), str(RING), str(copy), "-t", "dgx-h100", "--json"
    )  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    assert len(report["runs"]) == 1
    sources = [(r["source"].rpartition(":")[0], r["repeats"]) for r in report["fit_repeats"]]
    first = report["runs"][0]["source"]
    assert sources == [(str(RING), first), (str(copy), first)]
    assert f"{first} is given twice: fitted once" in err
    assert f"repeats {first} (the same rows): fitted once" in err


@pytest.fixture
def a_run_stopped_after_its_header(tmp_path) -> Path:
    """One output of two runs: one that crashed after printing its header (no size row),
    then the ring run."""
    header = RING.read_text().splitlines()[6:31]  # 'Collective test starting' to '(B) ...'
    crash = ["node0:4100:4100 [0] NCCL WARN Cuda failure 'out of memory'"]
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text("\n".join(header + crash) + "\n" + RING.read_text())
    return path


def test_a_table_of_its_header_alone_is_counted(run_calibrate, a_run_stopped_after_its_header):
    """The run that stopped before its first size is run 1, as the file shows it: the ring
    run is run 2 (fitted alone without --entry, and by --entry 2); --entry 1 says in one
    line that that table has no rows."""
    path = a_run_stopped_after_its_header
    status, out, err = run_calibrate(str(path), "-t", "dgx-h100", "--json")
    assert status == 0, err
    (run,) = json.loads(out)["runs"]
    assert (run["source"], run["run"]) == (f"{path}:58", 2)
    status, out, err = run_calibrate(str(path), "-t", "dgx-h100", "--entry", "2", "--json")
    assert status == 0, err
    assert [r["run"] for r in json.loads(out)["runs"]] == [2]
    err = refused(run_calibrate(str(path), "-t", "dgx-h100", "--entry", "1"))
    assert "--entry 1: run 1 of " in err
    assert (
        "(line 24) has no rows: its table ends after the header (the run stopped before its "
        "first size); pick another run (1 to 2)"
    ) in err
    err = refused(run_calibrate(str(path), "-t", "dgx-h100", "--entry", "3"))
    assert "holds 2 runs, at lines 24, 58 (give --entry 1 to 2)" in err


def test_an_output_of_a_header_alone_isrefused(run_calibrate, tmp_path):
    """An output whose only run stopped after its header: one line saying so."""
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text("\n".join(RING.read_text().splitlines()[:31]) + "\n")
    err = refused(run_calibrate(str(path), "-t", "dgx-h100"))
    assert "no nccl-tests result rows: its table at line 30 ends after the header" in err
