"""The collectives view's measured run says what it ran on, as ``calibrate`` says it: a
line under the controls, ``assumed:`` for another part of the topology's architecture on
its node, ``caution:`` for another node (the comparison is of other links)."""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.widgets import Input, Static

from fabricui.tui.app import settle
from fabricui.tui.screens.measured import MeasuredModal
from fabricui.tui.textual_private import screen_text

#: Rows of an 8-GPU all_reduce: size [bytes], time [us], algbw, busbw [GB/s].
ROWS = [[1048576, 28.56, 36.71, 64.24], [16777216, 124.0, 135.33, 236.82]]


def h200_entry(tmp_path: Path, name: str, intra: dict[str, str]) -> str:
    """A measurements YAML of one H200 all_reduce entry on an 8-GPU node over ``intra``."""
    hardware = {"gpu": "h200-sxm", "nodes": 1, "gpus_per_node": 8, "intra": intra, "net": None}
    entry = {"id": name, "quality": "reference", "hardware": hardware, "op": "all_reduce"}
    entry.update({"nranks": 8, "env": None, "rows": ROWS})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump([entry], sort_keys=False))
    return str(path)


async def test_the_measured_line_says_assumed_or_caution(app_factory, tmp_path):
    """dgx-h100 at 80x24 with an H200 entry on its NVSwitch: ``assumed:`` on two lines;
    ``m`` drops it and the line goes; an H200 PCIe box opened with ``m``: ``caution:``
    naming both nodes, styled as a warning."""
    same = h200_entry(tmp_path, "h200_box", {"fabric": "nvswitch", "link": "nvlink4"})
    pcie = h200_entry(tmp_path, "h200_pcie", {"fabric": "pcie", "link": "pcie5"})
    app = app_factory(topology="dgx-h100", view="collectives", options={"measured": same})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        line = screen.query_one("#coll-measured", Static)
        said = str(line.render()).replace("\n", " ")
        assert said == (
            "assumed: ran on h200-sxm, priced as dgx-h100's h100-sxm (the same hopper "
            "architecture, and the same 8-GPU nodes on nvswitch/nvlink4)"
        )
        assert line.display and not line.has_class("-caution")
        assert "assumed: ran on h200-sxm" in screen_text(app)
        await pilot.press("m")  # drop the run
        await settle(pilot)
        assert not line.display
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MeasuredModal)
        app.screen.query_one(Input).value = pcie
        await pilot.press("enter")
        await settle(pilot)
        said = str(line.render()).replace("\n", " ")
        assert said == (
            "caution: the measured run ran on h200-sxm in 8-GPU nodes on pcie/pcie5, not "
            "dgx-h100's 8-GPU nodes on nvswitch/nvlink4: its errors compare other links"
        )
        assert line.display and line.has_class("-caution")
        assert line.tooltip == said
