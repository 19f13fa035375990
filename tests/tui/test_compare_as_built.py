"""``c`` on the fabric as it is offers the same fabric as built first: what the conditions
``--health`` read cost, figure by figure."""

from __future__ import annotations

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.screens.compare import CompareModal
from fabricui.tui.screens.picker import PickerModal
from tests.tui.test_tui_health import ONE_X


async def test_compare_offers_the_fabric_as_built(app_factory, tmp_path):
    """n0.nic0 at 1X of 4X: c, enter compares h100-ib-cluster as built (A) with it as it
    is (B): n0.g0 -> n1.g0's bottleneck is 50 GB/s against a quarter of it, worse."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    request = TopologyRequest("h100-ib-cluster", 2, health=(str(links),))
    app = app_factory(launch=LaunchRequest(topology=request, src="n0.g0", dst="n1.g0"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        await pilot.press("enter")  # the fabric as built is the first choice
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, CompareModal)
        assert modal.labels == ("h100-ib-cluster --nodes 2", "h100-ib-cluster --nodes 2 (as it is)")
        path = {f.name: f for f in modal.figures}["path n0.g0 -> n1.g0: bottleneck"]
        assert (path.a, path.b) == (50.0, 12.5) and path.better is False


async def test_compare_on_the_fabric_as_built_offers_no_such_choice(app_factory):
    """Without --health there is nothing to compare against as built."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        assert "@built" not in [choice for choice, _ in app.screen.choices]
