"""k9s-style navigation at 80x24: j/k, the : command line, and Esc/Backspace back through
the views, topologies and selections visited (a topology switch can be undone)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from fabricui.tui.app import settle
from fabricui.tui.screens.collectives import CollectivesScreen
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.pyramid import PyramidScreen
from fabricui.tui.screens.strategies import StrategiesScreen
from fabricui.tui.screens.topology import TopologyScreen
from fabricui.tui.textual_private import notifications, press_queued

SIZE = (80, 24)


async def command(pilot, text: str) -> None:
    """``:`` then TEXT (put in the line: typing is slow under the test harness) and enter;
    wait for what it started."""
    from textual.widgets import Input

    await pilot.press("colon")
    await pilot.pause()
    assert isinstance(pilot.app.screen, PromptModal)
    pilot.app.screen.query_one(Input).value = text
    await pilot.press("enter")
    await settle(pilot)


async def test_j_and_k_move_down_and_up(app_factory):
    """j/k are the down/up arrows: the map's GPU cursor, then a table's row cursor."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gpu_map = app.screen.map
        start = gpu_map.cursor
        await pilot.press("j")
        assert gpu_map.cursor == start + 8  # the same GPU of the next node, one box below
        await pilot.press("k")
        assert gpu_map.cursor == start
        await pilot.press("3")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        await pilot.press("j", "j", "k")
        assert table.cursor_row == 1


# Slow: one app drives four views and two fabrics through the command line (about 3 s);
# it tests the TUI, not the Python version, so the 3.11 leg of CI runs it.
@pytest.mark.slow
async def test_command_line_runs_what_the_keys_do(app_factory):
    """:view, :src, :topology, :model work; a bad command keeps the line open and says why."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "src n1.g2")
        assert isinstance(app.screen, TopologyScreen) and app.screen.src == 10
        await command(pilot, "topology dgx-h100")
        assert app.data.spec.id == "dgx-h100"
        await command(pilot, "model Llama-3-8B")  # a model's name as written is its id
        assert isinstance(app.screen, StrategiesScreen) and app.screen.model_id == "llama3-8b"
        assert app.sub_title.endswith("llama3-8b")  # the header names the model shown
        await pilot.press("colon")
        await press_queued(pilot, *"topolgy x", "enter")
        assert isinstance(app.screen, PromptModal)
        error = str(app.screen.query_one("#prompt-error").render())
        assert "unknown command 'topolgy' (nearest: topology" in error
        await pilot.press("escape")
        await command(pilot, "view collectives")
        assert isinstance(app.screen, CollectivesScreen)
        await command(pilot, "op all_gather")
        assert "all_gather on all" in app.sub_title


# Slow: a topology switch and back, both fabrics built (about 2.5 s); see above.
@pytest.mark.slow
async def test_back_goes_through_views_selections_and_topologies(app_factory):
    """Backspace undoes a view switch, a new source and a topology switch (t), in turn;
    Esc on the topology view (not zoomed) goes back too."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        first_src = screen.src
        await pilot.press("right", "s")
        await settle(pilot)
        assert screen.src == first_src + 1
        await pilot.press("t")  # the one on screen: nothing opens
        await press_queued(pilot, *"dgx-h100-pod", "enter")
        await settle(pilot)
        assert not any("backspace goes back" in str(n.message) for n in notifications(app))
        await pilot.press("t")
        await press_queued(pilot, *"dgx-h100", "enter")
        await settle(pilot)
        assert app.data.spec.id == "dgx-h100"
        assert any("backspace goes back" in str(n.message) for n in notifications(app))
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, PyramidScreen)
        await pilot.press("backspace")
        await settle(pilot)
        assert isinstance(app.screen, TopologyScreen) and app.data.spec.id == "dgx-h100"
        await pilot.press("backspace")
        await settle(pilot)
        assert app.data.spec.id == "dgx-h100-pod" and app.screen.src == first_src + 1
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.src == first_src


async def test_command_line_src_and_dst_on_one_gpu_do_what_s_and_d_do(app_factory):
    """``:src`` on the destination makes it the source and leaves the destination to choose
    (as ``s`` on it), with no 'route failed' error; ``:dst`` on the source is refused with
    the warning ``d`` gives, the path kept."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert (screen.src, screen.dst) == (0, 31)
        await command(pilot, "dst n0.g0")
        assert (screen.src, screen.dst) == (0, 31) and screen.report is not None
        said = [n.message for n in notifications(app)]
        assert "source and destination are the same GPU" in said
        await command(pilot, "src n3.g7")
        assert (screen.src, screen.dst) == (31, None) and screen.report is None
        assert not [n for n in notifications(app) if n.severity == "error"]
