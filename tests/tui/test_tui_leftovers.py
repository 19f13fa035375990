"""What the explorer says beside the figures: a calibration overlay fitted on another
topology, each strategy bar's exposed share, the routes of a hop at 80 columns, and the
save dialog's chosen format without colours."""

from __future__ import annotations

import pytest

from fabricui.services.plan import verdict_text
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.services.session import load_catalog_with_plugins
from fabricui.tui.app import settle
from fabricui.tui.screens.save import FORMATS, SaveModal
from fabricui.tui.textual_private import notifications, screen_text
from fabricui.tui.widgets.bar_chart import BarChart
from fabricui.tui.widgets.path_panel import cut_link_notes
from tests.tui.test_ascii_pure import non_ascii

#: An overlay fitted on h100-ib-cluster that slows its InfiniBand NDR links.
OVERLAY = """topology: h100-ib-cluster
fitted_on: [all_reduce_perf.txt]
links:
  ib-ndr: {efficiency: 0.22, lat_us: 0.0}
"""


@pytest.fixture
def calibrated_catalog(tmp_path, tui_host):
    """The catalog as ``--calibration cal.yaml`` loads it, the overlay fitted on
    h100-ib-cluster."""
    path = tmp_path / "cal.yaml"
    path.write_text(OVERLAY)
    return load_catalog_with_plugins(host=tui_host, calibration=path)


def _calibration_notes(app) -> list[tuple[str, str]]:
    return [
        (str(n.severity), str(n.message))
        for n in notifications(app)
        if str(n.title) == "calibration"
    ]


async def test_calibration_fitted_on_another_topology_is_said_once(app_factory, calibrated_catalog):
    """Shown on dgx-h100-pod, an overlay fitted on h100-ib-cluster is a warning saying what
    the command line says on stderr, once, even when the fabric is shown again."""
    app = app_factory(catalog=calibrated_catalog)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        notes = _calibration_notes(app)
        assert len(notes) == 1
        severity, text = notes[0]
        assert severity == "warning"
        assert text == app.data.calibration_warning
        assert "fitted on h100-ib-cluster, applied to dgx-h100-pod" in text
        app.load_topology(app.request, remember=False)  # the cached fabric, drawn again
        await settle(pilot)
        assert len(_calibration_notes(app)) == 1


async def test_calibration_on_its_own_topology_says_nothing(app_factory, calibrated_catalog):
    """On h100-ib-cluster, the topology it was fitted on, the overlay applies silently."""
    app = app_factory(catalog=calibrated_catalog, topology="h100-ib-cluster", nodes=4)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.data.spec.id == "h100-ib-cluster"
        assert app.data.calibration_warning is None
        assert _calibration_notes(app) == []


async def test_strategy_bars_say_the_exposed_share_of_each_verdict(app_factory):
    """At 80x24 each bar of the decision table ends in its verdict with the exposed share
    (``no (120%)``, ``yes (0%)``): the words of ``verdict_text``, as the table says them."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.table
        bars = {b.label: b for b in app.screen.query_one(BarChart).bars if b.value is not None}
        lines = screen_text(app).splitlines()
        expected = {}
        for row in table.rows:
            if not row.applies:
                continue
            for where, comm, verdict, exposed in (
                ("intra", row.comm_us_intra, row.intra_verdict, row.exposed_us_intra),
                ("inter", row.comm_us_inter, row.inter_verdict, row.exposed_us_inter),
            ):
                if comm is not None:
                    expected[f"{row.name} {where}"] = verdict_text(verdict, exposed, table.step_us)
        assert expected and set(bars) == set(expected)
        for label, said in expected.items():
            assert bars[label].text.rstrip().endswith(f" {said}")
            line = next(line for line in lines if line.startswith(f" {label} "))
            assert f"% {said} " in line + " "  # the scrollbar may follow
        assert expected["fsdp inter"] == "no (120%)" and expected["fsdp intra"] == "yes (0%)"


def test_cut_link_notes_name_each_cut_link_whole_with_its_hops():
    """A link wider than the column is said whole once, with every hop it is on."""
    links = ["nvlink5 x18", "ib-ndr", "ib-ndr x2, 16 routes", "ib-ndr x2, 16 routes", "pcie5"]
    assert cut_link_notes(links, 11) == ["hops 3, 4: ib-ndr x2, 16 routes"]
    assert cut_link_notes(links[:3], 6) == ["hop 1: nvlink5 x18", "hop 3: ib-ndr x2, 16 routes"]
    assert cut_link_notes(links, 20) == []


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_routes_of_a_hop_stay_on_screen_at_80_columns(app_factory, size):
    """On an NVL72 cluster the spine hops spread over 16 routes: at 80x24 the cut link
    column is followed by the links whole (``hops 6, 7: ib-ndr x2, 16 routes``); at 200x60
    the hop table has them whole in its rows."""
    app = app_factory(launch=LaunchRequest(TopologyRequest("gb200-nvl72-cluster")))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        report = app.screen.report
        routed = [n for n, hop in enumerate(report.hops, 1) if hop.routes > 1]
        assert routed
        label = report.hops[routed[0] - 1].label
        assert label.endswith(" routes") and all(report.hops[n - 1].label == label for n in routed)
        panel = [line.split("▏", 1)[1] for line in screen_text(app).splitlines() if "▏" in line]
        note = f"hops {', '.join(map(str, routed))}: {label}"
        if size[0] == 80:
            assert any(line.strip() == note for line in panel)
        else:
            assert sum(label in line for line in panel) == len(routed)
            assert not any(line.strip() == note for line in panel)


def _format_lines(app) -> dict[str, str]:
    """The save dialog's line of each format, as the screen shows it without colours."""
    lines = screen_text(app).splitlines()
    return {fmt: next(line for line in lines if f" {fmt}: " in line) for fmt, _ in FORMATS}


@pytest.mark.parametrize(
    ("ascii_only", "chosen", "other"), [(False, "▐●▌", "▐ ▌"), (True, "(*)", "( )")]
)
async def test_save_dialog_marks_the_chosen_format_without_colours(
    app_factory, ascii_only, chosen, other
):
    """The chosen format's button has a dot (``(*)`` in ASCII), the others a blank, on a
    screen read without colours; the mark follows a choice made with the keys, and the
    ASCII dialog draws with ASCII only."""
    app = app_factory(ascii_only=ascii_only)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal)
        lines = _format_lines(app)
        assert f"{chosen} md: " in lines["md"]
        assert f"{other} svg: " in lines["svg"] and f"{other} txt: " in lines["txt"]
        await pilot.press("shift+tab", "down", "down", "enter")  # the formats, then txt
        await pilot.pause()
        assert app.screen.format == "txt"
        lines = _format_lines(app)
        assert f"{chosen} txt: " in lines["txt"]
        assert f"{other} md: " in lines["md"] and f"{other} svg: " in lines["svg"]
        if ascii_only:
            assert not non_ascii(screen_text(app))


async def test_save_dialog_cursor_is_underlined_not_only_coloured(app_factory):
    """The format the keys are on (before it is chosen) has its label underlined, so a
    monochrome terminal shows where the cursor is; the others are not."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        await pilot.press("shift+tab", "down")  # into the formats, onto svg
        await pilot.pause()
        labels = {
            fmt: app.screen.query_one(f"#save-{fmt}").get_component_rich_style("toggle--label")
            for fmt, _ in FORMATS
        }
        underlined = {fmt: bool(style.underline) for fmt, style in labels.items()}
        assert underlined == {"md": False, "svg": True, "txt": False}
