"""The topology view at 80x24: an imported cluster's map and paths speak its host names,
/ finds a host, the bottleneck is marked in text (NO_COLOR), and the path's figures and
the heat legend fit on the screen."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.widgets.path_panel import BOTTLENECK_MARK, hop_rows

SIZE = (80, 24)


def _synthetic():
    path = Path(__file__).parents[1] / "importers" / "_synthetic.py"
    spec = importlib.util.spec_from_file_location("_synthetic_dumps", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def luna_cluster(tmp_path_factory) -> Path:
    """An ibnetdiscover dump of 20 DGX hosts luna-0001..luna-0020 (8 rails), imported."""
    directory = tmp_path_factory.mktemp("luna")
    dump = directory / "fabric.topo"
    hosts = [f"luna-{i:04d}" for i in range(1, 21)]
    dump.write_text(_synthetic().ibnetdiscover_dump(hosts, hcas=8, leaves=8, spines=2))
    out = directory / "cluster.yaml"
    status = main(["import", "ibnetdiscover", str(dump), "-o", str(out), "--node", "dgx-h100"])
    assert status == 0
    return out


def test_a_mistyped_host_names_the_nearest_hosts(run_cli, luna_cluster):
    """`path --src luna-016.g7` (a zero short) is one line naming luna-0016 first."""
    argv = ["path", "-t", str(luna_cluster), "--src", "luna-016.g7", "--dst", "luna-0001.g0"]
    status, out, err = run_cli(*argv)
    assert (status, out) == (2, "")
    assert err.startswith(
        "fabricui: error: unknown host 'luna-016' in cluster (nearest: luna-0016,"
    )
    assert err.count("\n") == 1 and "HOST.gK (luna-0001.g0)" in err


async def test_imported_map_and_path_use_host_names(app_factory, luna_cluster):
    """The map lists luna-0001.., the path says luna-0001.g0; n15.g7 is still accepted."""
    app = app_factory(launch=LaunchRequest(TopologyRequest(str(luna_cluster))))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "luna-0001 " in text and "luna-0002 " in text
        assert app.screen.report.src == "luna-0001.g0"
        assert "n0." not in text and "n1." not in text
        await pilot.press("g", *"n15.g7", "enter")
        await settle(pilot)
        assert app.screen.map.cursor == 15 * 8 + 7
        assert app.data.fabric.gpu_name(app.screen.map.cursor) == "luna-0016.g7"


async def test_slash_finds_a_host_by_name(app_factory, luna_cluster):
    """/luna-0016 jumps to that host's first GPU; /-0019 (part of a name) to luna-0019; an
    unknown name keeps the prompt open with the nearest hosts."""
    app = app_factory(launch=LaunchRequest(TopologyRequest(str(luna_cluster))))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"luna-0016", "enter")
        await settle(pilot)
        assert app.screen.map.cursor == 15 * 8
        for text in ("-0019", "lunar-0016"):  # typed into the line (the harness types slowly)
            await pilot.press("slash")
            await pilot.pause()
            app.screen.query_one("Input").value = text
            await pilot.press("enter")
            await settle(pilot)
            if text == "-0019":
                assert app.screen.map.cursor == 18 * 8
        assert isinstance(app.screen, PromptModal)
        error = str(app.screen.query_one("#prompt-error").render())
        assert "unknown host, switch or GPU 'lunar-0016' (nearest: luna-0016" in error


async def test_bottleneck_is_marked_in_text(app_factory, monkeypatch):
    """Without colours the bottleneck hop still stands out: '<-' on its row of the path
    panel and '< >' around its devices on the map."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
        marked = [line for line in lines if line.rstrip().endswith(BOTTLENECK_MARK)]
        assert len(marked) == 1 and "-> leaf1" in marked[0] and "50.0" in marked[0]
        assert any("<7>" in line and "NIC" in line for line in lines)


async def test_path_figures_and_heat_legend_fit_at_80x24(app_factory):
    """At 80x24 every hop's numbers, the hardware at the bottleneck and (after h) the heat
    legend with the busiest link are on screen, and PgDn is on the key bar."""
    app = app_factory()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "…" not in text
        assert "QM9700 (NDR)" in text and "hardware" in text
        assert "PgDn" in text.splitlines()[-1]
        await pilot.press("h")
        await settle(pilot)
        text = screen_text(app)
        assert "heat: all_to_all" in text and "busiest" in text
        assert "QM9700 (NDR)" in text


async def test_a_long_path_keeps_every_hop_and_figure_readable_at_80x24(app_factory):
    """On an NVL72 cluster (long link names: ``ib-ndr x2, 16 routes``) each hop at 80x24
    names where it goes in full and keeps its GB/s and us; the links give way instead."""
    app = app_factory(launch=LaunchRequest(TopologyRequest("gb200-nvl72-cluster")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        report = app.screen.report
        lines = screen_text(app).splitlines()
        hops = [line.split("▏", 1)[1] for line in lines if "▏ -> " in line]
        assert len(hops) == len(report.hops)
        for line, (*_, dst, _link, bw, lat) in zip(hops, hop_rows(report)):
            name, _, rest = line.strip()[3:].partition(" ")
            assert "…" not in name and dst.endswith(name.lstrip("."))
            assert rest.replace(BOTTLENECK_MARK, "").split()[-2:] == [bw, lat]
