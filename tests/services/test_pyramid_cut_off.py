"""The bandwidth pyramid on a fabric whose first node a health file cut off the network
(every NIC cable of n0 down): its network tiers are priced between nodes still on the
network, not refused for n0's lost route; with fewer than two such nodes there is no
network tier, and the report says the tier went (not that every tier is as built)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.render.markdown import render_markdown
from fabricui.services.loaded import LoadedFabric
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest
from tests.services._ibstat import ibstat_text


@pytest.fixture
def n0_down(tmp_path: Path) -> str:
    """n0's ibstat (named after its host) with every port down."""
    path = tmp_path / "n0.txt"
    path.write_text(ibstat_text(down=set(range(8))))
    return str(path)


def _tiers(catalog, nodes: int, health: tuple[str, ...]) -> dict[str, tuple[float, str]]:
    data = LoadedFabric.load(TopologyRequest("h100-ib-cluster", nodes, health=health), catalog)
    return {tier.name: (tier.bw_GBps, tier.detail) for tier in data.pyramid()}


def test_the_network_tiers_start_from_a_node_on_the_network(catalog, n0_down):
    """Four nodes, n0 cut off: the peer tier on n1, the NIC tier n1 -> n2, at the figures
    the fabric as built has between n0 and n1."""
    built = _tiers(catalog, 4, ())
    as_is = _tiers(catalog, 4, (n0_down,))
    assert as_is.keys() == built.keys()
    assert built["NIC (InfiniBand NDR)"][1].startswith("n0.g0->n1.g0")
    assert as_is["NIC (InfiniBand NDR)"][1].startswith("n1.g0->n2.g0")
    assert as_is["NVLink 4.0 peer"][1].startswith("n1.g0->n1.g1")
    for name, (bw, _) in built.items():
        assert as_is[name][0] == pytest.approx(bw), name


def test_one_node_left_on_the_network_has_no_network_tier(catalog, n0_down):
    """Two nodes, n0 cut off: no NIC tier; the report's "As it is" section shows it as built
    and gone, never "Every pyramid tier is as built"."""
    assert "NIC (InfiniBand NDR)" not in _tiers(catalog, 2, (n0_down,))
    request = TopologyRequest("h100-ib-cluster", 2, health=(n0_down,))
    text = render_markdown(build_report(LaunchRequest(request, view="pyramid"), catalog))
    assert "**Pyramid tiers that changed, as built and as it is (-: no route left)**" in text
    assert "| tier NIC (InfiniBand NDR) | 50.0 GB/s | - | - |" in text
    assert "Every pyramid tier is as built." not in text
