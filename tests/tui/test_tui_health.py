"""The explorer on the fabric as it is: ``--health`` marks down, degraded and erroring devices
on the map with a text marker (not only a colour), and the heat key can show them."""

from __future__ import annotations

from pathlib import Path

from rich.style import Style
from textual.widgets import Static

from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.screens.topology import HEALTH_LEGEND, NIC_COLUMN_LEGEND
from fabricui.tui.widgets.findings_panel import FindingsPanel
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


DATA = Path(__file__).resolve().parents[1] / "data"
#: The real ibstat of an H100 host (8 NDR InfiniBand ports, 4 Ethernet ones).
IBSTAT_H100 = (
    DATA / "health/infiniband/ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt"
)
#: The real `nvidia-smi nvlink --status` of an 8x A100 SXM4 host (12 links each, all up).
NVLINK_A100 = DATA / "health/nvlink/nvidia_smi_nvlink_status_a100_sxm4_8gpu_12_links_25gbs.txt"

#: iblinkinfo as infiniband-diags prints it, named for h100-ib-cluster: n3's rail-2 cable
#: and one of leaf2's cables to spine1 trained at 1X of 4X.
BUILT_IN_LINKS = "\n".join(
    [
        "Switch: 0x0c42a1030060abd0 leaf2:",
        "        3179    1[  ] ==( 1X         106.25 Gbps Active/  LinkUp)==>       5128    1[  ]"
        ' "n3 mlx5_2" ( Could be 4X 106.25 Gbps)',
        "        3179    2[  ] ==( 4X         106.25 Gbps Active/  LinkUp)==>       5577    1[  ]"
        ' "n4 mlx5_2" ( )',
        "        3179   33[  ] ==( 1X         106.25 Gbps Active/  LinkUp)==>       3185    3[  ]"
        ' "spine1" ( Could be 4X 106.25 Gbps)',
        "Switch: 0x0c42a103005899b0 spine1:",
        "        3185    3[  ] ==( 1X         106.25 Gbps Active/  LinkUp)==>       3179   33[  ]"
        ' "leaf2" ( Could be 4X 106.25 Gbps)',
        "",
    ]
)

#: iblinkinfo of two Selene switches as they name themselves (GUIDs, LIDs and peers from
#: the dump): luna-0001's mlx5_6 cable and one LG01-05 -> CSPINE1-41 cable at 1X of 4X,
#: and a port polling with no peer.
SELENE_LINKS = "\n".join(
    [
        "Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:",
        "        3179    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       5128    1[  ]"
        ' "luna-0001 mlx5_6" ( Could be 4X 50.0 Gbps)',
        "        3179    2[  ] ==( 4X          50.0 Gbps Active/  LinkUp)==>       5577    1[  ]"
        ' "luna-0002 mlx5_6" ( )',
        '        3179    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )',
        "        3179   21[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3185    1[  ]"
        ' "MF0;CSPINE1-41:MQM8700/U1" ( Could be 4X 50.0 Gbps)',
        "        3179   31[  ] ==( 4X          50.0 Gbps Active/  LinkUp)==>       3185    2[  ]"
        ' "MF0;CSPINE1-41:MQM8700/U1" ( )',
        "",
    ]
)

#: ibqueryerrors of the same leaf: luna-0001's cable counts receive errors.
SELENE_ERRORS = "\n".join(
    [
        'Errors for 0x0c42a1030060abd0 "MF0;LG01-05:MQM8700/U1"',
        "   GUID 0x0c42a1030060abd0 port 1: [PortRcvErrors == 50] Link info:   3179    1[  ] "
        '==( 4X          50.0 Gbps Active/  LinkUp)==>    5128    1[  ] "luna-0001 mlx5_6" ( )',
        "",
        "## Summary: 666 nodes checked, 1 bad nodes found",
        "##          12852 ports checked, 1 ports have errors beyond threshold",
        "",
    ]
)


def ibstat_with(path: Path, half: str, down: str) -> str:
    """The real H100 ibstat with adapter ``half`` at half its rate and ``down`` down."""
    text = "".join(path.read_text().splitlines(keepends=True)[2:])  # the collector's header
    blocks = text.split("CA '")
    for i, block in enumerate(blocks):
        if block.startswith(f"{half}'"):
            blocks[i] = block.replace("Rate: 400", "Rate: 200", 1)
        if block.startswith(f"{down}'"):
            blocks[i] = block.replace("State: Active", "State: Down", 1).replace(
                "Physical state: LinkUp", "Physical state: Polling", 1
            )
    return "CA '".join(blocks)


def map_line(topology_map: TopologyMap, starts: str) -> str:
    """The first line of the map (as text) that starts with ``starts``."""
    lines = topology_map.render_text().splitlines()
    return next(line for line in lines if line.startswith(starts))


def marked(app) -> dict[str, str]:
    """Device name -> mark the map draws."""
    fabric = app.data.fabric
    return {fabric.device_name(d): m for d, m in app.screen.query_one(TopologyMap).health.items()}


def panel_text(app) -> str:
    """What the findings panel beside the map shows."""
    return str(app.screen.query_one(FindingsPanel).render())


def legend_text(app) -> str:
    """The line above the map."""
    return str(app.screen.query_one("#map-legend", Static).render())


def cursor_text(app) -> str:
    """The overview's cursor line."""
    return str(app.screen.query_one("#map-cursor", Static).render())


def style_at(topology_map: TopologyMap, y: int, text: str) -> Style:
    """The style the map draws the first ``text`` of its line ``y`` (unscrolled) with."""
    for segment in topology_map.render_line(y):
        if segment.text == text:
            return segment.style
    raise AssertionError(f"no {text!r} on line {y}")


async def test_overview_marks_degraded_network_links_at_nics_and_switches(app_factory, tmp_path):
    """h100-ib-cluster (an overview: no NICs drawn) with iblinkinfo and a host's ibstat:
    each host with a marked NIC gets the NIC's mark right of its GPUs (the worst of its
    NICs), the cursor line says which NICs, the leaf and spine rows carry theirs, and the
    findings panel lists each change with the same marker."""
    links, ibstat = tmp_path / "links.txt", tmp_path / "n1.txt"
    links.write_text(BUILT_IN_LINKS)
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="mlx5_0", down="mlx5_3"))
    launch = LaunchRequest(
        topology=TopologyRequest("h100-ib-cluster", health=(str(links), str(ibstat)))
    )
    app = app_factory(launch=launch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert topology_map.overview and topology_map.nic_column
        assert marked(app) == {
            "n1.nic0": "degraded",  # ibstat: Rate 200 on a 400 Gb/s cable
            "leaf0": "degraded",
            "n1.nic1": "down",  # ibstat: the fourth InfiniBand port is down
            "leaf1": "down",
            "n3.nic2": "degraded",  # iblinkinfo: 1X of 4X
            "leaf2": "degraded",
            "spine1": "degraded",  # iblinkinfo: leaf2 -> spine1 at 1X
        }
        # One group, n0-n31 (n1's down cable leaves it in its leaves' group): four hosts a line.
        first = map_line(topology_map, "n0  ")
        assert "n1  ········ x  n2" in first  # down over degraded
        assert first.endswith("n3  ········ ~")
        assert "n2  ········    n3" in first  # no mark, no glyph
        assert "~leaf0 xleaf1 ~leaf2" in map_line(topology_map, "Leaf")
        assert "~spine1" in map_line(topology_map, "Spine")
        assert NIC_COLUMN_LEGEND in legend_text(app)
        await pilot.press("right_square_bracket")  # the same GPU of the next node: n1
        await pilot.pause()
        assert cursor_text(app).startswith("cursor n1.g0 · host n1 · rank 8 · NIC ~0 x1 ·")
        text = panel_text(app)
        assert text.startswith("Fabric as it is (--health): 3 degraded, 1 down")
        assert "x down n1.nic1 (n1 mlx5_3) -> leaf1: carries nothing" in text
        assert "~ degraded n1.nic0 (n1 mlx5_0) -> leaf0: keeps 50% of its bandwidth" in text
        assert "~ degraded n3.nic2 (n3 mlx5_2) -> leaf2" in text
        assert "~ degraded leaf2 -> spine1 (1 of 8 cables)" in text
        # The health heat colours the same devices: n1's NIC mark reversed (down).
        for _ in range(3):
            await pilot.press("h")
            await pilot.pause()
        assert app.screen.heat_pattern == "health"
        lines = topology_map.render_text().splitlines()
        y = next(i for i, line in enumerate(lines) if line.startswith("n0  "))
        assert style_at(topology_map, y, "x").reverse  # n1's, the line's only 'x'


async def test_zoomed_host_numbers_its_marked_nics(app_factory, tmp_path):
    """z on a host of the overview: its box's NIC row carries the marks the overview gave
    as one, and the legend no longer speaks of a NIC column."""
    ibstat = tmp_path / "n1.txt"
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="mlx5_0", down="mlx5_3"))
    launch = LaunchRequest(
        topology=TopologyRequest("h100-ib-cluster", health=(str(ibstat),)), src="n1.g0"
    )
    app = app_factory(launch=launch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("z")
        await pilot.pause()
        topology_map = app.screen.query_one(TopologyMap)
        assert not topology_map.nic_column
        assert "NIC  ~0 x1  2" in topology_map.render_text()
        assert NIC_COLUMN_LEGEND not in legend_text(app)
        assert HEALTH_LEGEND in legend_text(app)


async def test_imported_cluster_marks_its_nic_leaf_and_spine(app_factory, selene, tmp_path):
    """Selene with iblinkinfo as its switches print it: luna-0001's mlx5_6 (its fifth NIC)
    at 1X is '~' right of its GPUs and in the cursor line, LG01-05 and CSPINE1-41 carry '~'
    in the leaf and spine rows; the port polling with no peer, which names no cable, is
    listed under the changes as not applied."""
    links = tmp_path / "links.txt"
    links.write_text(SELENE_LINKS)
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest(selene, health=(str(links),))))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert marked(app) == {
            "luna-0001.nic4": "degraded",
            "LG01-05": "degraded",
            "CSPINE1-41": "degraded",
        }
        assert map_line(topology_map, "luna-0001 ").startswith("luna-0001 S······■ ~  ")
        assert "~LG01-05" in topology_map.render_text().split("\nLeaf", 1)[1]
        assert "~CSPINE1-41" in topology_map.render_text().split("\nSpine", 1)[1]
        assert map_line(topology_map, "Core ")  # the cores a route crosses are drawn too
        assert cursor_text(app).startswith("cursor luna-0001.g0 · host luna-0001 · rank 0 · NIC ~4")
        text = panel_text(app)
        assert "~ degraded luna-0001.nic4 (luna-0001 mlx5_6) -> LG01-05: keeps 25%" in text
        assert "~ degraded LG01-05 -> CSPINE1-41 (1 of 2 cables)" in text
        line = "iblinkinfo links.txt: LG01-05 port 3 not applied: no peer"
        assert f"not applied (1):\n  {line}" in text


async def test_erroring_cable_is_marked_at_its_nic_and_leaf(app_factory, selene, tmp_path):
    """ibqueryerrors alone: luna-0001's cable counts errors, so its NIC mark and LG01-05
    read '!' (marked, not slowed), and the panel says the counters crossed their
    threshold."""
    errors = tmp_path / "ibqe.txt"
    errors.write_text(SELENE_ERRORS)
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest(selene, health=(str(errors),))))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert marked(app) == {"luna-0001.nic4": "errors", "LG01-05": "errors"}
        assert map_line(topology_map, "luna-0001 ").startswith("luna-0001 S······■ !  ")
        assert "!LG01-05" in topology_map.render_text().split("\nLeaf", 1)[1]
        assert "! errors luna-0001.nic4 (luna-0001 mlx5_6) -> LG01-05: counters over" in (
            panel_text(app)
        )


async def test_lost_nvlinks_mark_their_gpu_not_the_nvswitch(app_factory, tmp_path):
    """dgx-a100 with the real `nvidia-smi nvlink --status` and GPU 3's twelve links made
    inactive: GPU 3 reads 'x', its NVSwitch (which the other seven GPUs still reach at full
    rate) is not marked, and the health heat colours GPU 3 alone."""
    text = NVLINK_A100.read_text()
    head, gpu3, rest = text.partition("GPU 3:")
    block, gpu4, tail = rest.partition("GPU 4:")
    nvlink = tmp_path / "n0.txt"
    nvlink.write_text(head + gpu3 + block.replace("25 GB/s", "<inactive>") + gpu4 + tail)
    app = app_factory(
        launch=LaunchRequest(topology=TopologyRequest("dgx-a100", health=(str(nvlink),)))
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert marked(app) == {"n0.g3": "down"}
        assert " x3 " in map_line(topology_map, "│ GPU")
        assert "x" not in map_line(topology_map, "│ NVSw")
        assert "x down n0.g3 NVLinks (0 of 12 active): carries nothing" in panel_text(app)
        for _ in range(3):
            await pilot.press("h")
            await pilot.pause()
        heat = topology_map.heat
        assert heat is not None and sorted(int(d) for d in heat.nonzero()[0]) == [
            int(app.data.fabric.gpu_dev[3])
        ]


async def test_router_cable_is_marked_on_the_dragonfly_router_row(app_factory, tmp_path):
    """A dragonfly's routers are drawn (a row of their own) so that a degraded cable
    between two of them shows on both."""
    links = tmp_path / "links.txt"
    links.write_text(
        "Switch: 0x0c42a1030060abd0 router0:\n"
        "        3179    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3185    1[  ]"
        ' "router1" ( Could be 4X 50.0 Gbps)\n'
    )
    launch = LaunchRequest(
        topology=TopologyRequest("dragonfly-cluster", nodes=64, health=(str(links),))
    )
    app = app_factory(launch=launch)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert marked(app) == {"router0": "degraded", "router1": "degraded"}
        routers = map_line(topology_map, "Router")
        assert "~ 0" in routers and "~ 1" in routers  # (the path's bottleneck is 0's too)
        assert map_line(topology_map, "network:").endswith(", 32 routers")


async def test_log_findings_keep_the_health_list(app_factory, tmp_path):
    """The findings panel holds both: an NCCL log's line under the health changes, and the
    changes stay when the log's part changes."""
    ibstat = tmp_path / "n1.txt"
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="mlx5_0", down="mlx5_3"))
    app = app_factory(
        launch=LaunchRequest(topology=TopologyRequest("dgx-h100-pod", health=(str(ibstat),)))
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(FindingsPanel)
        assert panel.display
        panel.show_message("reading run.log...")
        text = panel_text(app)
        assert text.index("x down n1.nic1") < text.index("reading run.log...")


def test_dragonfly_map_draws_its_routers(tui_catalog):
    """The dragonfly's network rows are its routers, said with their groups (it has no
    leaf switches to draw)."""
    data = LoadedFabric.load(TopologyRequest("dragonfly-cluster"), catalog=tui_catalog)
    lines = ["".join(c.text for c in line) for line in build_layout(data.fabric, 100).lines]
    assert "network: slingshot, 256 routers in 8 groups" in lines
    assert any(line.split()[:3] == ["Router", "0", "1"] for line in lines)


async def test_a_host_with_a_down_cable_stays_in_its_leaf_group(app_factory, tmp_path):
    """64 hosts, n3's third InfiniBand cable down: the overview keeps n0-n31 as one group
    under one header (n3 marked 'x' in it), not n0-n2, n3 alone and n4-n31."""
    ibstat = tmp_path / "n3.txt"
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="none", down="mlx5_4"))
    launch = LaunchRequest(topology=TopologyRequest("h100-ib-cluster", 64, health=(str(ibstat),)))
    app = app_factory(launch=launch)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        topology_map = app.screen.query_one(TopologyMap)
        assert marked(app)["n3.nic2"] == "down"
        headers = [line for line in topology_map.render_text().splitlines() if "leafs" in line]
        assert [h.split(" ·")[0] for h in headers] == ["n0-n31", "n32-n63"]
        assert "n3  ········ x" in topology_map.render_text()


async def test_switch_brackets_close_on_the_name(app_factory, selene):
    """Selene's switch names differ in length: the bottleneck leaf reads '<LG01-08>' (the
    padding to the column after it), not '<LG01-08 >'."""
    app = app_factory(launch=LaunchRequest(topology=TopologyRequest(selene)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("z")
        await pilot.pause()
        leaves = app.screen.query_one(TopologyMap).render_text().split("\nLeaf", 1)[1]
        assert "<LG01-08>" in leaves and "<LG01-08 >" not in leaves
