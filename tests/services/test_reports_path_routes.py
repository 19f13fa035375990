"""The topology view's report prices a hop spread over equal links (a leaf's uplinks to its
spines) as ``fabricui path`` and the explorer's panel do: ``ib-ndr x4, 8 routes`` at what
the transfer gets over all of them, not one link's bandwidth without its routes."""

from __future__ import annotations

from fabricui.render.markdown import render_markdown
from fabricui.render.path import render_path
from fabricui.services.loaded import LoadedFabric
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest


def test_a_spread_hop_reads_as_the_path_command_reads_it(catalog):
    """n0.g0 -> n63.g7 on 64 nodes crosses a spine: each of the report's hop rows has the
    link and GB/s of the same hop of ``fabricui path``."""
    request = TopologyRequest("h100-ib-cluster", 64)
    launch = LaunchRequest(topology=request, view="topology", src="n0.g0", dst="n63.g7")
    report = render_markdown(build_report(launch, catalog))
    data = LoadedFabric.load(request, catalog)
    path = data.path(data.parse_gpu("n0.g0"), data.parse_gpu("n63.g7"), 2**30)
    assert any(hop.routes > 1 for hop in path.hops)
    cli = render_path(path, data.fabric)
    for hop in path.hops:
        figure = f"{hop.transfer_GBps:.1f}"
        assert f"| {hop.src} | {hop.dst} | {hop.label} | {figure} |" in report
        assert f"{hop.label}  " in cli and f" {figure} " in cli
