"""A view saved from the explorer (``S``: SVG or text) draws the ``--jobs`` and ``--hosts``
underlines again, and a line above the map names the underlined jobs and their hosts: the
underline is in the SVG, the line in both (a text file has no underline)."""

from __future__ import annotations

import re

from textual.widgets import Input, Static

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import screen_text, settle
from fabricui.tui.screens.save import SaveModal
from fabricui.tui.widgets.topology_map import TopologyMap

SQUEUE = (
    "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"
    "7 batch a u R 1:00 2 n[0-1]\n"
    "8 batch b u R 2:00 1 n3\n"
)


def underlined_cells(svg: str) -> int:
    """How many runs of text the SVG draws underlined."""
    classes = re.findall(r"\.(terminal-[\w-]+) \{[^}]*text-decoration: underline", svg)
    return sum(svg.count(f'class="{c}"') for c in classes)


async def save(pilot, fmt: str, path) -> None:
    """``S``, the format, the file, enter; then wait for the save worker."""
    await pilot.press("S")
    await pilot.pause()
    assert isinstance(pilot.app.screen, SaveModal)
    pilot.app.screen.query_one(f"#save-{fmt}").value = True
    await pilot.pause()
    pilot.app.screen.query_one("#save-path", Input).value = str(path)
    await pilot.press("enter")
    await settle(pilot)


async def test_a_saved_view_keeps_the_jobs_underlines_and_names_them(app_factory, tmp_path):
    """Jobs 7 (n0, n1) and 8 (n3) of a squeue file: the line above the map names them with
    their hosts, on screen and in the saved text; the saved SVG underlines their 24 GPUs
    as the screen does (and more than the same view without --jobs)."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(SQUEUE)
    request = TopologyRequest("h100-ib-cluster", 4)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert len(app.screen.query_one(TopologyMap).job_ranks) == 24
        line = app.screen.query_one("#map-jobs", Static)
        assert line.display
        said = "underlined: job 7 n[0-1] · job 8 n3"
        assert said in screen_text(app)
        assert dict(app.current_launch().options)["jobs"] == str(squeue)
        await save(pilot, "txt", tmp_path / "view.txt")
        await save(pilot, "svg", tmp_path / "view.svg")
    assert said in (tmp_path / "view.txt").read_text()
    with_jobs = underlined_cells((tmp_path / "view.svg").read_text())

    app = app_factory(launch=LaunchRequest(topology=request))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#map-jobs", Static).display
        assert "underlined" not in screen_text(app)
        assert "jobs" not in dict(app.current_launch().options)
        await save(pilot, "svg", tmp_path / "plain.svg")
    assert with_jobs > underlined_cells((tmp_path / "plain.svg").read_text())


async def test_hosts_are_named_and_kept_for_the_saved_view(app_factory, tmp_path):
    """``--hosts n[1-2]`` underlines the job's GPUs, the line names it, and the view's
    state (what a save, a report and a copied command draw) keeps the hostlist."""
    request = TopologyRequest("h100-ib-cluster", 4)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("hosts", "n[1-2]"),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "underlined: --hosts n[1-2]" in screen_text(app)
        assert dict(app.current_launch().options)["hosts"] == "n[1-2]"
        await save(pilot, "txt", tmp_path / "view.txt")
    assert "underlined: --hosts n[1-2]" in (tmp_path / "view.txt").read_text()
