"""An ``ibstat`` port's rate is judged against its own cable in the fabric, not against
the other ports of the file: every port slow is every cable slow, an active port at rate 0
carries nothing, and a file none of whose ports runs at the fabric's rate says so once."""

from __future__ import annotations

from pathlib import Path

import pytest
from _ibstat import ibstat_text

from fabricui.fabric.health import LinkCondition, apply_health, health_of
from fabricui.render.health import health_lines
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric


@pytest.fixture(scope="module")
def cluster(catalog):
    """2 DGX H100 nodes on NDR (400 Gb/s) cables."""
    return load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)


def _ibstat(path: Path, rates: list[float]) -> str:
    """Active InfiniBand ports ``mlx5_<k>`` at ``rates[k]`` Gb/s."""
    path.write_text(ibstat_text(range(len(rates)), rate_Gbps=dict(enumerate(rates))))
    return str(path)


def _overlay(catalog, path: str):
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(path,)), catalog)
    found = health_of(fabric)
    assert found is not None
    return fabric, found


def test_ports_at_their_cables_rate_change_nothing(catalog, tmp_path):
    """Eight ports at 400 on NDR cables: no change, no warning."""
    fabric, overlay = _overlay(catalog, _ibstat(tmp_path / "n0.txt", [400] * 8))
    assert overlay.changes == () and overlay.warnings == () and overlay.unmatched == ()


def test_every_port_slow_is_every_cable_slow(catalog, tmp_path):
    """Eight ports at 200 on NDR cables, none slower than the others: each cable keeps
    half, and one warning says no port runs at its cable's rate."""
    fabric, overlay = _overlay(catalog, _ibstat(tmp_path / "n0.txt", [200] * 8))
    assert [(c.kind, c.factor) for c in overlay.changes] == [("degraded", 0.5)] * 8
    assert overlay.warnings == (
        "ibstat n0.txt: no port runs at its cable's rate in h100-ib-cluster (200 Gb/s read, "
        "400 Gb/s cabled): each is priced at the rate read; if the output is of another "
        "fabric, leave it out",
    )
    assert f"fabricui: warning: {overlay.warnings[0]}" in health_lines(fabric)


def test_another_generations_host_is_priced_at_its_rates_and_said_once(catalog, tmp_path):
    """An HDR host's ibstat (200, one port at 100) on NDR cables: 50% and 25% of the
    cables, one warning for the file."""
    rates = [200.0] * 8
    rates[3] = 100.0
    fabric, overlay = _overlay(catalog, _ibstat(tmp_path / "n0.txt", rates))
    kept = {c.label.split(" ")[0]: c.factor for c in overlay.changes}
    assert kept["n0.nic3"] == pytest.approx(0.25)
    assert {v for k, v in kept.items() if k != "n0.nic3"} == {0.5}
    assert len(overlay.warnings) == 1 and "100/200 Gb/s read" in overlay.warnings[0]


def test_one_slow_port_among_nominal_ones_is_no_wrong_fabric(catalog, tmp_path):
    """One port at 100 among seven at 400: that cable keeps a quarter; no warning."""
    rates = [400.0] * 8
    rates[5] = 100.0
    fabric, overlay = _overlay(catalog, _ibstat(tmp_path / "n0.txt", rates))
    assert [(c.label.split(" ")[0], c.factor) for c in overlay.changes] == [("n0.nic5", 0.25)]
    assert overlay.warnings == ()


@pytest.mark.parametrize("rate", [0.0, None])
def test_an_active_port_at_rate_0_is_down(cluster, catalog, rate):
    """Active at rate 0 carries nothing: the cable is removed (rate None: no rate read,
    nothing changes)."""
    condition = LinkCondition("n0 mlx5_2", 1, state="up", rate_gbps=rate, nic=2, source="t")
    overlay = apply_health(cluster, [condition], [], catalog)
    if rate is None:
        assert overlay.changes == ()
    else:
        assert [(c.kind, c.factor) for c in overlay.changes] == [("down", 0.0)]
        assert overlay.fabric.n_links == cluster.n_links - 2


def test_a_switch_cable_at_its_rate_is_no_condition(catalog):
    """A leaf-spine cable reported up at 400 Gb/s on NDR: nothing changes; at 100 it keeps
    a quarter of its share of the bundle."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)
    same = LinkCondition("leaf0", 33, "spine0", 1, rate_gbps=400.0, source="t")
    assert apply_health(fabric, [same], []).changes == ()
    slow = LinkCondition("leaf0", 33, "spine0", 1, rate_gbps=100.0, source="t")
    assert [c.kind for c in apply_health(fabric, [slow], []).changes] == ["degraded"]
