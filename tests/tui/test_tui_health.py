"""The explorer on the fabric as it is: ``--health`` marks down, degraded and erroring devices
on the map with a text marker (not only a colour), and the heat key can show them."""

from __future__ import annotations

from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.widgets.topology_map import TopologyMap, build_layout

ONE_X = (
    "CA: n0 mlx5_0:\n"
    "      0x0000000000000101      1    1[  ] ==( 1X        106.25 Gbps Active/  LinkUp)==>"
    '       2   17[  ] "leaf0" ( Could be 4X)\n'
)


async def test_degraded_nic_and_leaf_are_marked_in_text_and_heat(app_factory, tmp_path):
    """n0.nic0 and leaf0 carry the '~' marker; the legend says what it means; the heat
    key reaches a 'health' heat that colours them."""
    path = tmp_path / "n0.txt"
    path.write_text(ONE_X)
    launch = LaunchRequest(
        topology=TopologyRequest("h100-ib-cluster", 2, health=(str(path),)),
        src="n0.g0",
        dst="n1.g0",
    )
    app = app_factory(launch=launch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        fabric = app.data.fabric
        marked = {fabric.device_name(d): m for d, m in topology_map.health.items()}
        assert marked == {"n0.nic0": "degraded", "leaf0": "degraded"}
        text = topology_map.render_text()
        # The degraded NIC and leaf are the path's bottleneck too: '~' left, '>' right.
        assert "NIC  ~0>" in text and "~0>" in text.split("Leaf", 1)[1]
        assert "x down ~ degraded ! errors" in str(app.screen.query_one("#map-legend").render())
        for _ in range(3):
            await pilot.press("h")
            await pilot.pause()
        assert app.screen.heat_pattern == "health"
        assert topology_map.heat[fabric.devices_of_kind(4)[0]] > 0.5


def test_dragonfly_map_draws_its_routers(tui_catalog):
    """The dragonfly's network rows are its routers, said with their groups (it has no
    leaf switches to draw)."""
    data = LoadedFabric.load(TopologyRequest("dragonfly-cluster"), catalog=tui_catalog)
    lines = ["".join(c.text for c in line) for line in build_layout(data.fabric, 100).lines]
    assert "network: slingshot, 256 routers in 8 groups" in lines
    assert any(line.split()[:3] == ["Router", "0", "1"] for line in lines)
