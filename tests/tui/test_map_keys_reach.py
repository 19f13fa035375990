"""The map read from the keyboard alone: the switch rows under the hosts (where ``--health``
marks leaves and spines) are reached with the arrows and End, not only the mouse wheel, and
``n`` goes from one marked host to the next."""

from __future__ import annotations

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.textual_private import notifications, press_queued
from fabricui.tui.widgets.topology_map import TopologyMap
from tests.tui.test_tui_health import SELENE_LINKS

SIZE = (80, 24)


def _shown(topology_map: TopologyMap) -> str:
    """The map's lines on screen, as text."""
    top = topology_map.scroll_offset.y
    lines = topology_map.render_text().splitlines()
    return "\n".join(lines[top : top + topology_map.scrollable_content_region.height])


async def test_the_marked_spine_is_reached_with_end_and_up(app_factory, selene, tmp_path):
    """Selene at 80x24 with LG01-05 -> CSPINE1-41 at 1X: End puts the cursor on the last
    GPU, End again shows the end of the map; Up then scrolls back a line at a time with the
    cursor kept, up to the spine row marked '~'; Home goes back to the first GPU."""
    links = tmp_path / "links.txt"
    links.write_text(SELENE_LINKS)
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest(selene, health=(str(links),))))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        await pilot.press("end")
        await pilot.pause()
        last = topology_map.cursor
        assert last == app.data.fabric.n_gpus - 1 and "Core" not in _shown(topology_map)
        await pilot.press("end")
        await pilot.pause()
        bottom = topology_map.scroll_offset.y
        assert bottom == topology_map.max_scroll_y > 0 and topology_map.cursor == last
        lines = topology_map.render_text().splitlines()
        spine = next(i for i, line in enumerate(lines) if "~CSPINE1-41" in line)
        # Held down, as a user reads up the map (one at a time, each key waits 40 ms idle).
        await press_queued(pilot, *["up"] * (bottom - spine))
        assert topology_map.scroll_offset.y == spine and topology_map.cursor == last
        assert "~CSPINE1-41" in _shown(topology_map)
        await pilot.press("down")
        await pilot.pause()
        assert topology_map.scroll_offset.y == spine + 1 and topology_map.cursor == last
        await pilot.press("home")
        await pilot.pause()
        assert topology_map.cursor == 0 and topology_map.scroll_offset.y == 0


async def test_down_below_a_zoomed_host_scrolls_to_its_network(app_factory, selene):
    """Zoomed on luna-0001, Down scrolls to the network rows under its box (the cursor
    stays on its GPU); Right brings the cursor, and the box, back into view."""
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest(selene)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        await pilot.press("z")
        await press_queued(pilot, *["down"] * 30)
        assert topology_map.scroll_offset.y == 30 and topology_map.cursor == 0
        assert "LG0" in _shown(topology_map) and "GPU" not in _shown(topology_map)
        await pilot.press("right")
        await pilot.pause()
        assert topology_map.cursor == 1 and "GPU" in _shown(topology_map)


async def test_n_goes_from_marked_host_to_marked_host(app_factory, tmp_path):
    """h100-ib-cluster 64 with n3's and n40's cables down: n puts the cursor on n3, then
    n40, then round to n3; the findings panel says the key. Without a marked host, n says
    so and leaves the cursor."""
    from tests.tui.test_tui_health import IBSTAT_H100, ibstat_with, panel_text

    health = []
    for host in ("n3", "n40"):
        path = tmp_path / f"{host}.txt"
        path.write_text(ibstat_with(IBSTAT_H100, half="none", down="mlx5_4"))
        health.append(str(path))
    launch = LaunchRequest(topology=TopologyRequest("h100-ib-cluster", 64, health=tuple(health)))
    app = app_factory(launch=launch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert "n: the cursor to the next marked host" in panel_text(app)
        seen = []
        for _ in range(3):
            await pilot.press("n")
            await pilot.pause()
            seen.append(topology_map.cursor)
        assert seen == [3 * 8, 40 * 8, 3 * 8]
        assert "NIC x2" in str(app.screen.query_one("#map-cursor").render())
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest("h100-ib-cluster", 64)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen.query_one(TopologyMap).cursor == 0
        said = [n.message for n in notifications(app)]
        assert "no host is marked: --health marks none of its GPUs or NICs" in said
