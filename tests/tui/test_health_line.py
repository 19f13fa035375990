"""The line under the pyramid's, the collectives' and the strategies' titles on the fabric
as it is (``--health``): what the health files changed, on screen and so in a saved text
or SVG of the view; nothing on the fabric as built."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.glyphs import glyphs
from fabricui.tui.snapshot import render_view
from fabricui.tui.widgets.health_line import HealthLine, overlay_line
from tests.tui.test_tui_health import ONE_X

SAID = "as it is: 1 degraded (n0.nic0 (n0 mlx5_0) -> leaf0 keeps 25%)"
TAIL = "; without --health: as built"
VIEWS = ["pyramid", "collectives", "strategies"]


def launch(view: str, health: tuple[str, ...]) -> LaunchRequest:
    """``view`` of h100-ib-cluster --nodes 2 with ``health`` files."""
    return LaunchRequest(topology=TopologyRequest("h100-ib-cluster", 2, health=health), view=view)


@pytest.mark.parametrize("view", VIEWS)
async def test_the_line_under_the_title_says_what_the_health_files_changed(
    app_factory, tmp_path, view
):
    """A NIC cable trained at 1X: under the title, the overlay's count and the link with
    what it keeps; at 200 columns the line ends with how the figures are without
    --health."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    for size in ((80, 24), (200, 60)):
        app = app_factory(launch=launch(view, (str(links),)))
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            second = screen_text(app).splitlines()[1].strip()
            assert second == (SAID if size == (80, 24) else SAID + TAIL), (view, size)


@pytest.mark.parametrize("view", VIEWS)
async def test_no_line_on_the_fabric_as_built(app_factory, view):
    """Without --health the line is hidden and the view starts under its title."""
    app = app_factory(launch=launch(view, ()))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(HealthLine).display
        assert "as it is" not in screen_text(app)


def test_a_saved_view_says_it_too(tui_catalog, tui_host, tmp_path):
    """The text and the SVG a snapshot saves carry the line."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    shot = render_view(launch("pyramid", (str(links),)), tui_catalog, tui_host, (120, 40))
    assert SAID + TAIL in shot.text
    assert "keeps&#160;25%);&#160;without" in shot.svg


def _overlay(*changes, unmatched=()):
    """An overlay-like object: ``summary()`` and ``worst_first()`` as the overlay words and
    orders them, and its changes."""
    from fabricui.fabric.health import HealthOverlay

    fake = SimpleNamespace(changes=tuple(changes), unmatched=tuple(unmatched))
    fake.summary = lambda: HealthOverlay.summary(fake)
    fake.worst_first = lambda: HealthOverlay.worst_first(fake)
    return fake


def _change(kind, label, factor, erroring=False):
    return SimpleNamespace(kind=kind, label=label, factor=factor, erroring=erroring)


def test_overlay_line_gives_way_from_its_end_and_keeps_the_count():
    """Whole when it fits; else without its end; else the changes cut with the ellipsis
    (the count stays); the worst change first; each change's word for what it keeps."""
    overlay = _overlay(
        _change("errors", "a -> b", 1.0),
        _change("degraded", "c -> d", 0.25, erroring=True),
        _change("down", "e -> f", 0.0),
    )
    whole = overlay_line(overlay)
    assert whole == (
        "as it is: 1 errors, 1 degraded (1 also erroring), 1 down "
        "(e -> f down; c -> d keeps 25%, erroring; a -> b erroring)" + TAIL
    )
    assert overlay_line(overlay, len(whole)) == whole
    assert overlay_line(overlay, len(whole) - 1) == whole.removesuffix(TAIL)
    cut = overlay_line(overlay, 80)
    assert len(cut) <= 80 and cut.endswith(f"{glyphs().ellipsis})")
    assert cut.startswith("as it is: 1 errors, 1 degraded (1 also erroring), 1 down (e -> f")
    tiny = overlay_line(overlay, 30)
    assert len(tiny) == 30 and tiny.endswith(glyphs().ellipsis)


def test_overlay_line_without_changes_says_the_summary():
    """Files that change nothing: the overlay's own words, and what was not applied."""
    line = overlay_line(_overlay(unmatched=["x"]))
    assert line.startswith("as it is: no change: ")
    assert "1 condition(s) not applied" in line and line.endswith(TAIL)
