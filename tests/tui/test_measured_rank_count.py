"""A measured nccl-tests run is priced for its own rank count: ``snapshot collectives
--measured`` and the view opened with one compare like with like, or refuse in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.tui.app import settle

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
#: 16 ranks on 2 hosts (rank lines) of an all_reduce_perf output.
SIXTEEN = DATA / "h100_2node_degraded_default_all_reduce_perf.txt"


def test_snapshot_prices_the_runs_rank_count(capsys):
    """No --group: the 32-GPU pod's table is for the run's 16 ranks (its first 16 GPUs)."""
    assert main(["snapshot", "collectives", "--measured", str(SIXTEEN), "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert "all_reduce on gpus:16 (16 GPUs)" in out
    assert "16 ranks; error = predicted / measured - 1." in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--group", "all"], "16 ranks, but group all has 32 GPUs: give --group gpus:16"),
        (["-t", "dgx-h100"], "16 ranks, but dgx-h100 has only 8 GPUs: give --nodes 2"),
    ],
)
@pytest.mark.parametrize("suffix", ["md", "svg"])
def test_snapshot_refuses_counts_that_differ(argv, message, suffix, tmp_path, capsys):
    """A --group of another GPU count, or a topology smaller than the run: one line saying
    both counts and what to pass, exit 2, nothing written (report and screen alike)."""
    out = tmp_path / f"out.{suffix}"
    argv = ["snapshot", "collectives", "--measured", str(SIXTEEN), *argv, "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_a_saved_view_of_another_group_is_reported_with_both_counts(tui_catalog):
    """The report of a view the user set to another group (a save from the explorer) is
    written, and its note says the run's ranks are not the GPUs priced."""
    from fabricui.services.reports import build_report
    from fabricui.services.requests import LaunchRequest

    options = (("measured", str(SIXTEEN)), ("group", "all"))
    report = build_report(LaunchRequest(view="collectives", options=options), tui_catalog)
    assert any("16 ranks (not the 32 GPUs priced)" in note for note in report.notes)


async def test_view_opened_with_a_measured_run_prices_its_ranks(app_factory):
    """The view started with a measured run (as snapshots start it) shows the group of the
    run's rank count, as pressing m does."""
    app = app_factory(view="collectives", options={"measured": str(SIXTEEN)})
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.measured.nranks == 16 and screen.group == "gpus:16"
        assert screen.prediction.nranks == 16


async def test_view_keeps_a_group_given_with_the_run(app_factory):
    """A group given with the run (a saved view) is kept; the controls say both counts."""
    options = {"measured": str(SIXTEEN), "group": "all"}
    app = app_factory(view="collectives", options=options)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.group == "all"
        assert "(16 ranks, not 32)" in str(screen.query_one("#coll-controls").render())
