"""The path panel on a short terminal: when the hops and the figures need more rows than
the side shows, a line of the path's answers (bottleneck, latency, the message's time)
goes above the hops, every hop stays on screen, and the figures' details follow (PgDn).
Where everything fits, nothing changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.text import Text

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.widgets.path_panel import PathPanel, key_figures, pack_pieces
from fabricui.units import format_bandwidth, format_bytes, format_time_us


def side_lines(app) -> list[str]:
    """The path side's lines as the screen shows them (right of the map's edge)."""
    return [line.split("▏", 1)[1].strip() for line in screen_text(app).splitlines() if "▏" in line]


def answers(report) -> list[str]:
    """The key line's figures, as the panel words them."""
    return [
        f"bottleneck {format_bandwidth(report.bottleneck_GBps)}",
        f"latency {format_time_us(report.latency_us)}",
        f"{format_bytes(report.size_bytes)} in {format_time_us(report.transfer_us)}",
    ]


@pytest.mark.parametrize(
    ("topology", "nodes", "src", "dst"),
    [
        ("gb200-nvl72-cluster", None, None, None),
        ("h100-ib-cluster", 64, "n0.g7", "n63.g0"),
        ("h100-ib-cluster", 128, "n0.g7", "n127.g0"),
    ],
)
async def test_a_long_paths_answers_and_every_hop_are_on_the_first_screen_at_80x24(
    app_factory, topology, nodes, src, dst
):
    """A 10-hop path across a spine at 80x24: the bottleneck, the latency and the
    message's transfer time are on screen above the hops, every hop is on screen too, and
    the figures' details (per direction, the link) follow the hops."""
    request = TopologyRequest(topology, nodes)
    app = app_factory(launch=LaunchRequest(topology=request, src=src, dst=dst))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        report = app.screen.report
        assert len(report.hops) == 10
        lines = side_lines(app)
        text = " ".join(lines)
        for figure in answers(report):
            assert figure in text, figure
        first_hop = next(i for i, line in enumerate(lines) if line.startswith("-> "))
        key = next(i for i, line in enumerate(lines) if line.startswith("bottleneck "))
        assert key < first_hop
        narrow = report.hops[report.bottleneck_hop]
        assert f"({narrow.src} -> {narrow.dst})" in lines[key]
        assert sum(line.startswith("-> ") for line in lines) == len(report.hops)
        # The details come after the hops, where PgDn reaches them.
        panel = app.screen.query_one(PathPanel)
        assert panel.fold_rows is not None and panel.fold_rows < 24


async def test_the_answers_follow_the_message_size(app_factory):
    """``+`` doubles the message: the line above the hops gives the new transfer time."""
    app = app_factory(launch=LaunchRequest(TopologyRequest("gb200-nvl72-cluster")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("plus")
        await settle(pilot)
        report = app.screen.report
        assert report.size_bytes == 2 << 30
        assert answers(report)[2] in " ".join(side_lines(app))


@pytest.mark.parametrize(
    ("topology", "nodes", "src", "dst", "size"),
    [
        ("gb200-nvl72-cluster", None, None, None, (200, 60)),
        ("h100-ib-cluster", 128, "n0.g0", "n127.g0", (80, 24)),
    ],
)
async def test_no_key_line_where_the_hops_and_figures_fit(
    app_factory, topology, nodes, src, dst, size
):
    """At 200x60, and on an 8-hop path that fits 80x24, the panel is the hops then the
    figures, with no line of answers above the hops."""
    request = TopologyRequest(topology, nodes)
    app = app_factory(launch=LaunchRequest(topology=request, src=src, dst=dst))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        lines = side_lines(app)
        first_hop = next(i for i, line in enumerate(lines) if line.startswith("-> "))
        assert not any(line.startswith("bottleneck") for line in lines[:first_hop])
        assert any(line.startswith("bottleneck") for line in lines[first_hop:])
        assert any(line.startswith("hardware") for line in lines)


def test_key_figures_name_the_bottleneck_hop_and_skip_a_missing_size():
    """The bottleneck with its hop's two ends, the latency, then the transfer time only
    when the path has a message size."""
    hop = SimpleNamespace(src="n0.nic0", dst="leaf0")
    report = SimpleNamespace(
        hops=[hop],
        bottleneck_hop=0,
        bottleneck_GBps=50.0,
        latency_us=2.53,
        size_bytes=1 << 30,
        transfer_us=21480.0,
    )
    assert key_figures(report) == [
        ("bottleneck", "50 GB/s", " (n0.nic0 -> leaf0)"),
        ("latency", "2.53 us", ""),
        ("1 GiB in", "21.48 ms", ""),
    ]
    report.size_bytes = report.transfer_us = None
    assert [label for label, *_ in key_figures(report)] == ["bottleneck", "latency"]


def test_pack_pieces_breaks_between_pieces_only():
    """Pieces share a line while they fit; a piece never breaks (a long one gets its own
    line)."""
    pieces = [Text("aaaa"), Text("bbb"), Text("cc")]
    assert pack_pieces(pieces, 20, " · ").plain == "aaaa · bbb · cc"
    assert pack_pieces(pieces, 10, " · ").plain == "aaaa · bbb\ncc"
    assert pack_pieces(pieces, 3, " · ").plain == "aaaa\nbbb\ncc"
    assert pack_pieces([], 10, " · ").plain == ""


async def test_ascii_key_line_separates_figures_with_semicolons(app_factory):
    """With ``--ascii`` the figures of the key line are parted by ``;``, not by ``-``
    (``dot``'s ASCII form), which would read as a minus between two numbers."""
    request = TopologyRequest("h100-ib-cluster", 64)
    app = app_factory(
        launch=LaunchRequest(topology=request, src="n0.g7", dst="n63.g0"), ascii_only=True
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        _, latency, transfer = answers(report := app.screen.report)
        text = screen_text(app)
        assert report.size_bytes is not None
        assert f"{latency}; {transfer}" in text
        assert f"{latency} - " not in text


async def test_the_fit_is_measured_once_per_path_and_width(app_factory, monkeypatch):
    """Textual renders the panel again for its height and on each refresh: the whole
    content is drawn to measure its fit once per path, width and rows, not each time."""
    request = TopologyRequest("h100-ib-cluster", 64)
    app = app_factory(launch=LaunchRequest(topology=request, src="n0.g7", dst="n63.g0"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(PathPanel)
        measured = []
        real = PathPanel._fits
        monkeypatch.setattr(PathPanel, "_fits", lambda self, c: measured.append(1) or real(self, c))
        first = panel.render()
        assert measured == []  # measured when it was drawn
        assert screen_text(app) and panel.render() is not first
        assert measured == []
        panel.fold_rows = (panel.fold_rows or 0) + 1  # another height: measured again
        panel.render()
        assert measured == [1]
