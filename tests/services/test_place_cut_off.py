"""``place N --health``: a host ``--health`` cuts off from the network (every NIC cable
down) is never picked, and is listed among the left-out hosts as cut off."""

from __future__ import annotations

import json

import pytest

from fabricui.errors import ConfigError
from fabricui.fabric.health import LinkCondition, apply_health
from fabricui.services import place as place_module
from fabricui.services.place import PlaceRequest, place
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

CUT_OFF = "cut off from the network"


def test_the_cut_off_host_is_left_out_with_its_reason(run_cli, all_down):
    """3 DGX H100 nodes, n0 cut off: the pick is n[1-2], n0 is left out as cut off (JSON
    and text), not as a down link."""
    argv = ["place", "2", "-t", "h100-ib-cluster", "--nodes", "3", "--health", all_down]
    status, out, err = run_cli(*argv, "--no-price", "--json")
    assert status == 0, err
    data = json.loads(out)
    assert data["hosts"] == ["n1", "n2"] and data["free"] == 2
    assert data["left_out"] == {CUT_OFF: ["n0"]}
    status, out, _ = run_cli(*argv, "--no-price")
    assert status == 0 and f"  left out ({CUT_OFF}): n0" in out.splitlines()


def test_the_cut_off_host_is_never_picked_to_make_up_the_count(run_cli, all_down):
    """Three hosts asked of three with n0 cut off: refused, two are free, and the refusal
    says where the third went."""
    argv = ["place", "3", "-t", "h100-ib-cluster", "--nodes", "3", "--health", all_down]
    status, out, err = run_cli(*argv, "--no-price")
    assert (status, out) == (2, "")
    assert err.strip().splitlines()[-1] == (
        f"fabricui: error: 3 host(s) asked for, 2 free (left out: {CUT_OFF} 1)"
    )


def test_the_cut_off_list_is_read_from_the_overlay(catalog, monkeypatch):
    """A host the overlay names cut off is left out even where its links' marks alone
    would not say it (the overlay's own word, not an inference from missing cables)."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 3), catalog)
    down = [
        LinkCondition(f"n2 mlx5_{k}", 1, f"leaf{k}", 1, state="down", source="t") for k in range(8)
    ]
    overlay = apply_health(fabric, down, [], catalog)
    assert overlay.cut_off == (2,)
    monkeypatch.setattr(place_module, "load_fabric", lambda *_: overlay.fabric)
    monkeypatch.setattr(place_module, "_health_penalty", lambda layout: ({}, set()))
    result = place(PlaceRequest(TopologyRequest("h100-ib-cluster", 3), 2, price=False), catalog)
    assert result.hosts == ("n0", "n1") and result.left_out[CUT_OFF] == ["n2"]
    with pytest.raises(ConfigError, match="3 host.*2 free"):
        place(PlaceRequest(TopologyRequest("h100-ib-cluster", 3), 3, price=False), catalog)
