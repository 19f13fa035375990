"""Compare pairs the pyramid's tiers by what they are: a what-if with faster NICs (another
link generation, so another tier name) still shows its NIC tier, the figure it changes."""

from __future__ import annotations

from fabricui.services.compare import compare
from fabricui.services.loaded import TIER_KINDS, LoadedFabric
from fabricui.services.requests import TopologyRequest, WhatIf


def test_a_faster_nic_is_compared_tier_for_tier(catalog):
    """dgx-h100-pod against itself at 800 Gb/s per NIC (ib-xdr): the NIC row is there,
    named with both generations, and faster on the second."""
    a = LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog)
    b = LoadedFabric.load(TopologyRequest("dgx-h100-pod", what_if=WhatIf(nic_gbps=800)), catalog)
    rows = {f.name: f for f in compare(a, b)}
    nic = [label for label in rows if label.startswith("tier NIC")]
    assert nic == ["tier NIC (InfiniBand NDR) / NIC (InfiniBand XDR)"]
    figure = rows[nic[0]]
    assert figure.a == a.pyramid()[3].bw_GBps and figure.b == b.pyramid()[3].bw_GBps
    assert figure.b > figure.a
    assert "tier HBM3" in rows  # a tier of the same name keeps its one name


def test_every_tier_has_one_kind_of_its_own(catalog):
    """Each tier the pyramid builds says what it is, once per pyramid: an NVL72 rack's
    tier across hosts is not taken for its memory, nor its NIC for its NVLink."""
    for topology in ("dgx-h100-pod", "gb200-nvl72-cluster", "gb200-nvl72"):
        tiers = LoadedFabric.load(TopologyRequest(topology), catalog).pyramid()
        kinds = [tier.kind for tier in tiers]
        assert len(set(kinds)) == len(kinds) and set(kinds) <= set(TIER_KINDS), topology
    rack = {
        t.kind: t.name for t in LoadedFabric.load(TopologyRequest("gb200-nvl72"), catalog).pyramid()
    }
    assert rack["domain"] == "NVLink 5.0 across hosts"
    assert rack["NIC"] == "NIC (InfiniBand NDR)"
