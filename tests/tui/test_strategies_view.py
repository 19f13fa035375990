"""The strategies view at 80x24 and 160x50: the layout search names its layouts, each
figure says which computation it comes from, and the README's keys work there."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable

from fabricui.tui.app import screen_text, settle
from fabricui.tui.screens.strategies import StrategiesScreen
from fabricui.tui.widgets.filter_bar import FilterBar
from fabricui.units import format_time_us


async def searched(pilot) -> StrategiesScreen:
    """Press f and wait for the ranked layouts (and the scroll that shows them)."""
    await pilot.press("f")
    await settle(pilot)
    await pilot.pause(0.2)
    screen = pilot.app.screen
    assert isinstance(screen, StrategiesScreen) and screen.plans
    return screen


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
async def test_search_rows_show_degrees_and_whole_step_times(app_factory, size):
    """After f the screen shows, for the fastest layouts, tp cp pp vpp dp ep etp (``-``
    where the expert TP is the TP) and the step time in full (never cut to '5.55…'), under
    a title naming the batch searched."""
    app = app_factory(view="strategies")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await searched(pilot)
        text = screen_text(app)
        assert "…" not in text
        first = screen.plans[0].layout
        assert f"at global batch {first.global_batch} x {first.seq_len} tokens" in " ".join(
            text.split()
        )
        for rank, plan in enumerate(screen.plans[:5], 1):
            lay = plan.layout
            etp = lay.expert_tp if lay.expert_tp != lay.tp else "-"
            words = [rank, lay.tp, lay.cp, lay.pp, lay.vpp, lay.dp, lay.ep, etp, lay.microbatches]
            row = r"\s+".join(re.escape(str(w)) for w in words) + r"\s+\w+\s+\w+\s+"
            row += re.escape(format_time_us(plan.step_us))
            assert re.search(row, text), row


async def test_each_figure_names_its_computation(app_factory):
    """The decision table's compute is the whole model on one GPU, the layout's step is the
    chosen layout's (with its batch), and FSDP's gathers say forward and backward."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        titles = {
            name: str(app.screen.query_one(name).render())
            for name in ("#table-title", "#plan-title")
        }
        assert titles["#table-title"].startswith("decision table: each strategy alone on 4 GPUs")
        compute = format_time_us(app.screen.table.step_us)
        assert f"compute {compute}: the whole model on one GPU" in text
        assert titles["#plan-title"] == (
            "chosen layout: tp 8 x pp 1 x dp 4 (ep 1), 1 micro-batch of 1, "
            "global batch 4 x 8192 tokens"
        )
        assert "fsdp all_gather (forward)" in text and "fsdp all_gather (backward)" in text


async def test_enter_on_a_search_row_shows_its_step(app_factory):
    """Enter on a ranked layout shows that plan (the search's own, not a new pricing)."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await searched(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.plan is screen.plans[1]
        assert screen.view_state()["search"] == "yes"


async def test_slash_filters_and_typing_never_reaches_the_app_keys(app_factory):
    """`/tp8 cp2` filters the layouts; its t and p never switch the topology."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await searched(pilot)
        await pilot.press("slash", *"tp8")  # typed: t and p stay in the filter
        screen.query_one(FilterBar).value = "tp8 cp2"
        await pilot.press("enter")
        await settle(pilot)
        table = screen.query_one("#strat-search", DataTable)
        shown = [screen.plans[int(str(key.value)) - 1] for key in table.rows]
        assert shown and all(p.layout.cp == 2 for p in shown)
        assert len(shown) < len(screen.plans)
        assert app.screen is screen and app.data.spec.id == "dgx-h100-pod"
        await pilot.press("slash", "escape")
        assert table.row_count == len(screen.plans)


async def test_greater_than_sorts_the_search(app_factory):
    """> sorts by the next column (tp, then cp ...), I reverses; the controls line says so."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await searched(pilot)
        await pilot.press("greater_than_sign", "greater_than_sign", "I")
        table = screen.query_one("#strat-search", DataTable)
        cps = [screen.plans[int(str(k.value)) - 1].layout.cp for k in table.rows]
        assert cps == sorted(cps, reverse=True)
        assert "by cp down" in screen_text(app)


async def test_the_screen_keeps_textuals_own_scrolling(app_factory):
    """The view's "bring this title to the top" helper has a name of its own: Textual
    scrolls a screen through ``Widget._scroll_to`` (keys, a focused widget coming into
    view), which a screen method of that name would replace with one that refuses its
    arguments."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await searched(pilot)
        screen.scroll_to(y=1, animate=False, immediate=True)
        screen.scroll_home(animate=False, immediate=True)
        await settle(pilot)
        assert app.screen is screen


def test_the_readme_keys_are_the_views_keys():
    """The README's "Collectives and strategies" keys are bound in those views, and the
    keys it names everywhere (:, Esc, Backspace, j, k) in the app."""
    from fabricui.tui.app import FabricApp
    from fabricui.tui.screens.collectives import CollectivesScreen
    from fabricui.tui.screens.topology import TopologyScreen

    def keys(bindings) -> set[str]:
        return {key.strip() for b in bindings for key in b.key.split(",")}

    both = {"slash", "greater_than_sign", "less_than_sign", "I"}
    assert both | {"o", "g", "e", "n", "b", "p", "r"} <= keys(CollectivesScreen.BINDINGS)
    assert both | {"m", "l", "f", "pagedown", "pageup"} <= keys(StrategiesScreen.BINDINGS)
    assert {"slash", "g", "s", "d", "x", "z", "h", "o", "m", "pagedown"} <= keys(
        TopologyScreen.BINDINGS
    )
    assert {"colon", "escape", "backspace", "j", "k", "t", "S", "y", "c", "q"} <= keys(
        FabricApp.BINDINGS
    )
