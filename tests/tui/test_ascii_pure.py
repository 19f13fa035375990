"""``--ascii`` draws with ASCII only, shows what is typed in one-line filters, and gives
each mark one meaning."""

from __future__ import annotations

from textual.widgets import Input

from fabricui.tui.app import settle
from fabricui.tui.glyphs import ASCII
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.textual_private import screen_text
from fabricui.tui.widgets.topology_map import HEAT_MARKERS


def non_ascii(text: str) -> list[str]:
    """The characters of ``text`` outside ASCII."""
    return sorted({ch for ch in text if ord(ch) >= 128})


async def test_cut_link_names_and_the_command_prompt_stay_ascii(app_factory):
    """1,024 GPUs at 80x24 cut the path panel's links (``ib-ndr x2...``: the ASCII
    ellipsis is not '~', the map's degraded mark), and the ``:`` prompt lists the
    commands: both with ASCII marks."""
    app = app_factory(topology="h100-ib-cluster", nodes=128, ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "ib-ndr x2..." in text and "~" not in text
        assert not non_ascii(text)
        await pilot.press("colon")
        await pilot.pause()
        text = screen_text(app)
        assert "nodes N - view NAME" in text
        assert not non_ascii(text)


async def test_one_line_filters_show_what_is_typed(app_factory):
    """The picker's filter and the collectives table's ``/`` filter show the words typed
    (a border would take their only row)."""
    app = app_factory(ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        await pilot.press("d", "g", "x")
        await pilot.pause()
        field = app.screen.query_one("#picker-filter", Input)
        assert field.value == "dgx" and field.content_region.height == 1
        assert "| dgx " in screen_text(app)
        await pilot.press("escape")
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("slash", "t", "r", "e", "e")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert lines[2].strip() == "tree"
        assert not non_ascii("\n".join(lines))


def test_ascii_marks_have_one_meaning():
    """A path device, the heat map's full link and the scrollbar's thumb are three
    different characters."""
    from textual.scrollbar import ScrollBar

    from fabricui.tui.app import _ascii_scrollbars

    _ascii_scrollbars(True)
    try:
        thumb = {ScrollBar.renderer.VERTICAL_BARS[0], ScrollBar.renderer.HORIZONTAL_BARS[0]}
    finally:
        _ascii_scrollbars(False)
    marks = [ASCII.square, *HEAT_MARKERS.values()]
    assert len(set(marks)) == len(marks)
    assert not thumb & set(marks)
