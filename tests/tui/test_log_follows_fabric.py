"""An NCCL log's findings follow the fabric on screen (checked again, and saying against
which), and the path panel shows a new path from its top."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll

from fabricui.tui.app import settle
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.widgets.findings_panel import FindingsPanel

LOG = Path(__file__).parents[1] / "doctor" / "data" / "healthy_h100_nvls_2_24_3.log"


def findings(app) -> str:
    """The findings panel's text."""
    return str(app.screen.query_one(FindingsPanel).render())


async def read_log(pilot) -> None:
    """``o``, the log's path, enter; wait for the findings."""
    from textual.widgets import Input

    await pilot.press("o")
    await pilot.pause()
    assert isinstance(pilot.app.screen, PromptModal)
    pilot.app.screen.query_one(Input).value = str(LOG)
    await pilot.press("enter")
    await settle(pilot)


async def test_a_new_fabric_checks_the_log_again_and_says_against_which(app_factory):
    """The H100 pod's log read on the pod, then a GB200 rack opened: the findings are
    those against the rack, under a line naming it, not the pod's."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await read_log(pilot)
        assert "checked against dgx-h100-pod" in findings(app)
        app.load_topology("gb200-nvl72")
        await settle(pilot)
        await settle(pilot)
        assert app.data.spec.id == "gb200-nvl72"
        text = findings(app)
        assert "checked against gb200-nvl72" in text and "dgx-h100-pod" not in text
        assert str(LOG) in text.replace("\n", "")


async def test_a_new_path_shows_from_the_top(app_factory):
    """After the log scrolled the panel down to its findings, a new destination (and a
    new topology) shows the path's "src -> dst" line again; a new message size alone
    keeps the panel where it is."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await read_log(pilot)
        side = app.screen.query_one("#path-side", VerticalScroll)
        assert side.scroll_y > 0
        await pilot.press("plus")
        await settle(pilot)
        assert side.scroll_y > 0
        app.screen.dst = 12
        await settle(pilot)
        assert side.scroll_y == 0
        side.scroll_end(animate=False)
        await pilot.pause()
        assert side.scroll_y > 0
        app.load_topology("gb200-nvl72")
        await settle(pilot)
        await settle(pilot)
        side = app.screen.query_one("#path-side", VerticalScroll)
        assert side.scroll_y == 0
