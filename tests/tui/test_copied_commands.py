"""``y`` copies commands that price the fabric on screen: its ``--health`` files and its
what-if go with ``-t`` and ``--nodes``, so the command prints the figures the view shows."""

from __future__ import annotations

import json
import shlex

from fabricui.services.requests import LaunchRequest, TopologyRequest, WhatIf
from fabricui.tui.app import settle
from tests.tui.test_tui_health import ONE_X


async def test_copied_path_command_prices_the_fabric_as_it_is(app_factory, tmp_path, run_cli):
    """n0.nic0 at 1X and NICs at 200 Gb/s: the copied ``fabricui path`` carries
    ``--nic-gbps 200`` and ``--health FILE``, and run, prints the bottleneck the panel
    shows (not the as-built one)."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    request = TopologyRequest(
        "h100-ib-cluster", 2, what_if=WhatIf(nic_gbps=200), health=(str(links),)
    )
    app = app_factory(launch=LaunchRequest(topology=request, src="n0.g0", dst="n1.g0"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = app.screen.report.bottleneck_GBps
        command = dict(app.screen.copy_items())["command: fabricui path ..."]
    words = shlex.split(command)
    assert words[:4] == ["fabricui", "path", "-t", "h100-ib-cluster"]
    assert "--nic-gbps 200" in command and f"--health {links}" in command
    status, out, _err = run_cli(*words[1:], "--json")
    assert status == 0 and json.loads(out)["bottleneck_GBps"] == shown


async def test_copied_collective_command_carries_the_health_files(app_factory, tmp_path):
    """The collectives view's copied command names the same ``--health`` file."""
    links = tmp_path / "n0.txt"
    links.write_text(ONE_X)
    request = TopologyRequest("h100-ib-cluster", 2, health=(str(links),))
    app = app_factory(launch=LaunchRequest(topology=request, view="collectives"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        command = dict(app.screen.copy_items())["command: fabricui collective ..."]
    assert command.startswith("fabricui collective all_reduce -t h100-ib-cluster --nodes 2")
    assert f"--health {links}" in command
