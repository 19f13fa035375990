"""Switch-to-switch cables in a health file: each cable is known by both of its ends'
ports, so two cables of one bundle whose port numbers are each other's mirror are two
cables, and one cable listed from both ends is one."""

from __future__ import annotations

import pytest

from fabricui.fabric.health import LinkCondition, apply_health
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric


@pytest.fixture(scope="module")
def fabric(catalog):
    """64 DGX H100 nodes: leaf0 reaches spine0 over a bundle of 4 cables."""
    return load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)


def _bundle(fabric) -> int:
    names = [
        (fabric.device_name(int(s)), fabric.device_name(int(d)))
        for s, d in zip(fabric.link_src, fabric.link_dst)
    ]
    return names.index(("leaf0", "spine0"))


def test_mirrored_port_numbers_are_two_cables(fabric):
    """leaf0 port 1 <-> spine0 port 21 and leaf0 port 21 <-> spine0 port 1, both at 1X of
    4X: the bundle keeps (2 + 2 * 1/4) / 4 of its bandwidth and both are listed."""
    k = _bundle(fabric)
    assert fabric.link_count[k] == 4
    conditions = [
        LinkCondition("leaf0", 1, "spine0", 21, fraction=0.25, source="a"),
        LinkCondition("leaf0", 21, "spine0", 1, fraction=0.25, source="b"),
    ]
    overlay = apply_health(fabric, conditions, [])
    assert overlay.fabric.link_bw_GBps[k] == pytest.approx(fabric.link_bw_GBps[k] * 2.5 / 4)
    assert [c.source for c in overlay.changes] == ["a", "b"]


def test_one_cable_from_both_ends_counts_once(fabric):
    """leaf0 port 1 <-> spine0 port 21 as leaf0 lists it and as spine0 lists it: one cable."""
    k = _bundle(fabric)
    conditions = [
        LinkCondition("leaf0", 1, "spine0", 21, fraction=0.25, source="a"),
        LinkCondition("spine0", 21, "leaf0", 1, fraction=0.25, source="b"),
    ]
    overlay = apply_health(fabric, conditions, [])
    assert overlay.fabric.link_bw_GBps[k] == pytest.approx(fabric.link_bw_GBps[k] * 3.25 / 4)
    assert len(overlay.changes) == 1
