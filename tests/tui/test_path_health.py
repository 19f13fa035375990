"""The path panel on the fabric as it is: a hop over a changed link carries the map's
marker on its row and a line under the path's figures says what the link keeps, and a
down cable or lost NVLinks on the hosts at its ends are said too, as off the path."""

from __future__ import annotations

import io

from rich.console import Console

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.widgets.path_panel import BOTTLENECK_MARK, PathPanel
from tests.tui.test_tui_health import IBSTAT_H100, NVLINK_A100, ONE_X, ibstat_with


def panel_lines(app) -> list[str]:
    """The path panel's whole content as lines at its width (beyond what the screen shows
    of it at 80x24)."""
    panel = app.screen.query_one(PathPanel)
    console = Console(width=panel.content_size.width, file=io.StringIO(), color_system=None)
    with console.capture() as captured:
        console.print(panel.render())
    return [line.rstrip() for line in captured.get().splitlines()]


def open_path(app_factory, health, topology, nodes, src, dst):
    """The explorer on ``topology`` with ``health`` files, routing ``src`` -> ``dst``."""
    request = TopologyRequest(topology, nodes, health=tuple(str(p) for p in health))
    return app_factory(launch=LaunchRequest(topology=request, src=src, dst=dst))


async def test_degraded_bottleneck_hop_is_marked_and_said(app_factory, tmp_path):
    """n0.nic0 at 1X: its hop to leaf0 ends in '~<-' (degraded, the bottleneck) and the
    line under the bottleneck says it keeps 25% of its bandwidth, at 80x24 and 200x60."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    for size in ((80, 24), (200, 60)):
        app = open_path(app_factory, [links], "h100-ib-cluster", 2, "n0.g0", "n1.g0")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            report = app.screen.report
            hop = report.bottleneck_hop
            assert report.hops[hop].src == "n0.nic0"
            panel = app.screen.query_one(PathPanel)
            assert [h.hop for h in panel.health] == [hop]
            text = "\n".join(panel_lines(app))
            assert f"~{BOTTLENECK_MARK}" in text
            said = " ".join(text.split())
            assert f"as it is ~ hop {hop + 1} degraded: n0.nic0 (n0 mlx5_0) -> leaf0" in said
            assert "keeps 25% of its bandwidth" in said


async def test_down_nic_on_an_end_host_is_said_as_off_the_path(app_factory, tmp_path):
    """n3's mlx5_4 (its third InfiniBand NIC) is down: n3.g2's path leaves by another
    NIC, and the panel says the down cable is on the source's host, not on the path (no
    hop carries its marker); the other way round it is on the destination's host."""
    ibstat = tmp_path / "n3.txt"
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="none", down="mlx5_4"))
    for src, dst, whose in (("n3.g2", "n10.g2", "source"), ("n10.g2", "n3.g2", "destination")):
        app = open_path(app_factory, [ibstat], "h100-ib-cluster", 16, src, dst)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            report = app.screen.report
            assert all("n3.nic2" not in (h.src, h.dst) for h in report.hops)
            said = " ".join(" ".join(panel_lines(app)).split())
            assert "as it is x down: n3.nic2 (n3 mlx5_4) -> leaf2, carries nothing" in said
            assert f"(on the {whose}'s host: not on the path)" in said
            assert not any(line.rstrip().endswith("x") for line in panel_lines(app))


async def test_half_the_nvlinks_of_the_source_gpu_mark_its_scale_up_hop(app_factory, tmp_path):
    """dgx-a100, GPU 3 with six of its twelve NVLinks inactive: n0.g3 -> n0.g5's first hop
    (to the NVSwitch, 150 GB/s) ends in '~<-', said as 6 of 12 active; with all twelve
    inactive the path goes over PCIe and the panel says so, no hop marked."""
    text = NVLINK_A100.read_text()
    head, gpu3, rest = text.partition("GPU 3:")
    block, gpu4, tail = rest.partition("GPU 4:")
    half = "\n".join(
        line.replace("25 GB/s", "<inactive>")
        if any(f"Link {i}:" in line for i in range(6))
        else line
        for line in block.split("\n")
    )
    for links, expected in (
        (half, "~ hop 1 degraded: n0.g3 NVLinks (6 of 12 active"),
        (
            block.replace("25 GB/s", "<inactive>"),
            "x down: n0.g3 NVLinks (0 of 12 active), carries nothing (on the source's host: "
            "over PCIe, not over its NVLinks)",
        ),
    ):
        nvlink = tmp_path / "n0.txt"
        nvlink.write_text(head + gpu3 + links + gpu4 + tail)
        app = open_path(app_factory, [nvlink], "dgx-a100", None, "n0.g3", "n0.g5")
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            said = " ".join(" ".join(panel_lines(app)).split())
            assert f"as it is {expected}" in said
            marked = [line for line in panel_lines(app) if "~" + BOTTLENECK_MARK in line]
            assert bool(marked) == expected.startswith("~")


async def test_the_paths_figures_stay_on_screen_and_the_as_it_is_lines_follow(
    app_factory, tmp_path
):
    """n0.g7 -> n1.g0 crosses eight hops, the fifth over the degraded n0.nic0. At 80x24 the
    bottleneck, latency, transfer time and hardware lines are all on screen (a figure's
    explanation gives way rather than wrap it); the 'as it is' lines come after them, where
    PgDn reaches them. At 200x60 every line is whole, explanations included."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    for size in ((80, 24), (200, 60)):
        app = open_path(app_factory, [links], "h100-ib-cluster", 2, "n0.g7", "n1.g0")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            assert len(app.screen.report.hops) == 8
            screen = screen_text(app)
            for label in ("bottleneck", "latency", "transfer", "hardware"):
                assert f"▏ {label} " in screen, (size, label)
            assert "QM9700 (NDR)" in screen
            lines = panel_lines(app)
            labels = ["bottleneck", "latency", "transfer", "hardware", "as"]
            order = [line.split()[0] for line in lines if line and line.split()[0] in labels]
            assert order == labels, (size, order)
            said = " ".join(" ".join(lines).split())
            assert "as it is ~ hop 5 degraded: n0.nic0 (n0 mlx5_0) -> leaf0" in said
            if size == (200, 60):
                assert "3.23 us (links, switches, NICs)" in said and "(lat+size/bw)" in said


def test_a_figures_explanation_gives_way_to_a_narrow_column():
    """The latency and transfer lines keep their explanation when it fits the value
    column, and drop it (never the figure) when it would wrap."""
    from types import SimpleNamespace

    from fabricui.tui.widgets.path_panel import LATENCY_NOTE, TRANSFER_NOTE, summary_lines

    hop = SimpleNamespace(src="a", dst="b", link="ib-ndr", src_model="", dst_model="")
    report = SimpleNamespace(
        hops=[hop],
        bottleneck_hop=0,
        bottleneck_GBps=50.0,
        latency_us=3.23,
        size_bytes=1 << 30,
        transfer_us=21480.0,
    )
    wide = dict(summary_lines(report))
    assert wide["latency"].endswith(LATENCY_NOTE) and wide["transfer"].endswith(TRANSFER_NOTE)
    assert dict(summary_lines(report, 200)) == wide
    narrow = dict(summary_lines(report, 20))
    assert narrow["latency"] == wide["latency"].removesuffix(f" {LATENCY_NOTE}")
    assert narrow["transfer"] == wide["transfer"].removesuffix(f" {TRANSFER_NOTE}")
    assert narrow["bottleneck"] == wide["bottleneck"]
