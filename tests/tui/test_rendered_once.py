"""A ``Static`` holding a rich table (the plugins list, the strategies view's tables) renders
the table once per width, not once to measure its height and again to draw it."""

from __future__ import annotations

import io
from collections import Counter

from rich.console import Console
from rich.table import Table
from textual.widgets import Static

from fabricui.tui.app import settle
from fabricui.tui.widgets.rendered_once import KEPT_WIDTHS, RenderedOnce


def _table() -> Table:
    table = Table("name", "figure")
    for i in range(20):
        table.add_row(f"row {i}", f"{i * 1.5:.1f}")
    return table


def _text(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_the_lines_are_the_tables_own_rendered_once_per_width():
    """Asked three times at one width, the table renders once; the lines are the table's."""
    once = RenderedOnce(_table())
    for _ in range(3):
        assert _text(once, 40) == _text(_table(), 40)
    assert once.renders == 1
    assert _text(once, 30) == _text(_table(), 30)
    assert once.renders == 2


def test_widths_kept_are_bounded():
    """Only the last few widths are kept (a window resized over and over)."""
    once = RenderedOnce(_table())
    for width in range(30, 30 + 2 * KEPT_WIDTHS):
        _text(once, width)
    assert len(once._lines) == KEPT_WIDTHS


def _count_table_renders(monkeypatch) -> Counter[tuple[int, int]]:
    """Renders of each rich table, by table and width, from now on."""
    counts: Counter[tuple[int, int]] = Counter()
    render = Table.__rich_console__

    def counted(table, console, options):
        counts[(id(table), options.max_width)] += 1
        yield from render(table, console, options)

    monkeypatch.setattr(Table, "__rich_console__", counted)
    return counts


async def test_the_plugins_table_renders_once_per_width(app_factory, monkeypatch):
    """Opening the plugins view renders its table once (not measured, drawn and measured
    again: three renders)."""
    counts = _count_table_renders(monkeypatch)
    app = app_factory(view="plugins")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause()
        assert isinstance(app.screen.query_one("#plugins-table", Static).content, RenderedOnce)
    assert counts
    assert set(counts.values()) == {1}


async def test_the_strategies_tables_render_once_per_width(app_factory, monkeypatch):
    """The decision table, the chosen layout's step and their nested tables: each once
    per width it is drawn at."""
    counts = _count_table_renders(monkeypatch)
    app = app_factory(view="strategies")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause()
    assert len(counts) >= 2
    assert set(counts.values()) == {1}
