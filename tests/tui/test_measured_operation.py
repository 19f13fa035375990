"""A measured nccl-tests run is compared as its own collective, not the one on screen."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from fabricui.cli import main
from fabricui.services.collective import measured_run
from fabricui.tui.app import settle
from fabricui.tui.screens.measured import MeasuredModal
from fabricui.tui.textual_private import notifications

#: An all_reduce_perf output: its header names the collective.
ALL_REDUCE = (
    Path(__file__).parents[1] / "data/nccl_tests/h100_2node_degraded_default_all_reduce_perf.txt"
)


def unnamed(tmp_path: Path) -> Path:
    """The same output with nothing naming its collective."""
    path = tmp_path / "run.txt"
    path.write_text(ALL_REDUCE.read_text().replace("all_reduce_perf", "some_perf"))
    return path


def test_the_operation_on_screen_does_not_override_the_files_own():
    """An all_reduce_perf file read while broadcast is shown is still an all_reduce run."""
    assert measured_run(str(ALL_REDUCE), "broadcast").op == "all_reduce"
    assert measured_run(str(ALL_REDUCE)).op == "all_reduce"


def test_the_operation_on_screen_names_a_run_that_names_none(tmp_path):
    """Only an output that names no collective takes the one on screen (with the rank
    count its rows give for it)."""
    path = str(unnamed(tmp_path))
    assert measured_run(path).op is None
    run = measured_run(path, "broadcast")
    assert run.op == "broadcast" and run.nranks == 16


async def test_loading_an_all_reduce_run_on_broadcast_switches_to_all_reduce(app_factory):
    """``m`` with an all_reduce_perf file on the broadcast view: the view shows all_reduce,
    says so, and the errors compare all_reduce predictions with the run."""
    app = app_factory(view="collectives", options={"op": "broadcast"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.op == "broadcast"
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MeasuredModal)
        app.screen.query_one(Input).value = str(ALL_REDUCE)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert screen.measured.op == "all_reduce" and screen.op == "all_reduce"
        assert screen.prediction.op == "all_reduce"
        said = [n.message for n in notifications(app)]
        assert "operation all_reduce, as the measured run" in said


def test_report_with_another_operation_shows_the_runs_own_and_says_so(capsys):
    """``snapshot collectives --op broadcast --measured ALL_REDUCE``: an all_reduce table,
    with a note saying why."""
    args = ["collectives", "--op", "broadcast", "--measured", str(ALL_REDUCE), "-o", "-"]
    assert main(["snapshot", *args]) == 0
    out = capsys.readouterr().out
    assert "\n**all_reduce on " in out and "**broadcast on " not in out
    assert "The measured run is all_reduce, so the table is all_reduce (not broadcast)." in out
