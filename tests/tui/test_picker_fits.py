"""The pickers (``t``, ``c``, ...) fit their list to the screen: the highlighted row is
always on screen, and descriptions get the width a mostly empty column would take."""

from __future__ import annotations

import pytest
from textual.containers import Vertical
from textual.widgets import OptionList

from fabricui.tui.app import settle
from fabricui.tui.screens.picker import PickerModal


def highlight_on_screen(modal: PickerModal) -> bool:
    """The list lies inside the modal's frame and its highlighted row is scrolled into it."""
    options = modal.query_one(OptionList)
    frame = modal.query_one(Vertical).content_region
    inside = options.region.y >= frame.y and options.region.bottom <= frame.bottom
    top = round(options.scroll_offset.y)
    return inside and top <= options.highlighted < top + options.scrollable_content_region.height


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_topology_picker_shows_the_highlighted_row_and_the_last_one(app_factory, size):
    """``t`` on a large topology highlights it on screen; Down and End keep the highlight
    on screen, End on the last topology."""
    app = app_factory(topology="gb200-nvl72-cluster")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PickerModal)
        options = modal.query_one(OptionList)
        assert options.get_option_at_index(options.highlighted).id == "gb200-nvl72-cluster"
        assert highlight_on_screen(modal)
        await pilot.press("down")
        await pilot.pause()
        assert highlight_on_screen(modal)
        await pilot.press("end")
        await pilot.pause()
        assert options.highlighted == options.option_count - 1
        assert highlight_on_screen(modal)
        await pilot.press("home")
        await pilot.pause()
        assert highlight_on_screen(modal)


async def test_picker_lines_fit_the_modal_and_say_where_they_are_cut(app_factory):
    """At 80 columns each topology's line fits the modal (a cut one ends with an
    ellipsis), the regime tags ride in the description, and a description keeps at least
    30 columns."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        modal = app.screen
        options = modal.query_one(OptionList)
        width = options.scrollable_content_region.width
        lines = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert all(len(line) <= width for line in lines)
        dgx = next(line for line in lines if line.startswith("hgx-h200 "))
        assert "[HGX node] HGX H200 server" in dgx
        description = dgx[dgx.index("GPUs") + len("GPUs") :].strip()
        assert len(description) >= 30 and description.endswith("…")


async def test_picker_refits_on_resize_on_the_same_row(app_factory):
    """A picker open while the terminal grows keeps its highlighted row, and the lines
    get the new width."""
    app = app_factory(topology="gb200-nvl72-cluster")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        modal = app.screen
        options = modal.query_one(OptionList)
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        await pilot.pause()
        assert options.get_option_at_index(options.highlighted).id == "gb200-nvl72-cluster"
        assert highlight_on_screen(modal)
        line = str(options.get_option_at_index(options.highlighted).prompt)
        assert len(line) > 100


async def test_compare_picker_shows_its_last_row(app_factory):
    """``c`` at 80x24: End reaches the last topology on screen."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PickerModal)
        await pilot.press("end")
        await pilot.pause()
        options = modal.query_one(OptionList)
        assert options.highlighted == options.option_count - 1
        assert highlight_on_screen(modal)


def test_a_one_string_choice_does_not_widen_the_columns():
    """``c`` on the fabric as it is: its first choice is one long string; the topologies'
    columns keep their widths (GPU counts right-aligned, then the description)."""
    from fabricui.tui.screens.picker import choice_lines

    lines = choice_lines(
        [
            ("@built", "the same fabric as built: /tmp/a/long/path/cluster.yaml, without --health"),
            ("dgx-a100", ("dgx-a100", "8 GPUs", "NVIDIA DGX A100")),
            ("dgx-h100-pod", ("dgx-h100-pod", "32 GPUs", "4 DGX H100 nodes")),
        ]
    )
    assert lines == [
        "the same fabric as built: /tmp/a/long/path/cluster.yaml, without --health",
        "dgx-a100       8 GPUs  NVIDIA DGX A100",
        "dgx-h100-pod  32 GPUs  4 DGX H100 nodes",
    ]
