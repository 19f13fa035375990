"""The title bar: app, view and topology on one line; its icon opens the command palette."""

from __future__ import annotations

from textual.command import CommandPalette

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.widgets.title_bar import TitleBar, fit_title


async def test_title_follows_the_view_and_the_topology(app_factory):
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(TitleBar)
        assert "fabricui — Topology · dgx-h100-pod" in str(bar.render())
        await pilot.press("3")
        await settle(pilot)
        assert "Collectives" in str(app.screen.query_one(TitleBar).render())


async def test_narrow_title_is_cut_with_an_ellipsis(app_factory):
    app = app_factory()
    async with app.run_test(size=(40, 20)) as pilot:
        await settle(pilot)
        line = str(app.screen.query_one(TitleBar).render())
        assert len(line) <= 40 and line.rstrip().endswith("…")


async def test_clicking_the_icon_opens_the_command_palette(app_factory):
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


#: One degraded port in iblinkinfo's format: enough for ``--health`` to mark "(as it is)".
IBLINKINFO_ONE_DEGRADED = (
    "CA: n0 mlx5_0:\n"
    "      0x0000000000000101      1    1[  ] ==( 1X        106.25 Gbps Active/  LinkUp)==>"
    '       2   17[  ] "leaf0" ( Could be 4X)\n'
)


async def test_narrow_title_shortens_the_topology_arguments_first(app_factory, tmp_path):
    """At 80 columns the topology arguments give way; the view's name, "(as it is)" and the
    view's state stay whole."""
    health = tmp_path / "iblinkinfo.txt"
    health.write_text(IBLINKINFO_ONE_DEGRADED)
    app = app_factory(
        launch=LaunchRequest(
            topology=TopologyRequest("h100-ib-cluster", 2, health=(str(health),)),
            view="collectives",
        )
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "(as it is) · all_reduce" in app.sub_title
        line = str(app.screen.query_one(TitleBar).render()).rstrip()
        assert len(line) <= 80
        assert "fabricui — Collectives · h100-ib" in line
        assert line.endswith("… (as it is) · all_reduce on all")


def test_fit_title_cuts_the_arguments_then_the_end():
    title = "app — View · topo-id --nodes 2 (as it is) · state"
    assert fit_title(title, "topo-id --nodes 2", 60, "…") == title
    cut = "app — View · topo-id… (as it is) · state"
    assert fit_title(title, "topo-id --nodes 2", len(cut), "…") == cut
    # Cut between words: not "--no…".
    cut = "app — View · topo-id… (as it is) · state"
    assert fit_title(title, "topo-id --nodes 2", len(cut) + 4, "…") == cut
    # Too narrow to keep a few characters of the arguments: the end is cut instead.
    assert fit_title(title, "topo-id --nodes 2", 20, "...") == "app — View · topo..."
    assert fit_title(title, "", 20, "…") == "app — View · topo-i…"
