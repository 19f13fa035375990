"""A down cable on a generated network that keeps its tables: on a dragonfly a host's cable
to its router is applied as on an explicit graph (its GPUs move to another NIC of their
host, a host with none left is cut off), a cable between two routers is priced up and said
so; a TPU torus has no host cable to lose, and a torus with a NIC network (Trainium) loses
its host cables as a fat-tree does."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _ibstat import ibstat_text

from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.group import Group
from fabricui.fabric.health import LinkCondition, apply_health
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import collective_algorithms, load_fabric

#: 4 nodes of 8 H100s on a dragonfly (one Slingshot NIC per GPU): n0 and n1 on router0,
#: n2 and n3 on router1.
DRAGONFLY = ("-t", "dragonfly-cluster", "--nodes", "4")
#: router0 port 20 to router1 trained but not activated: it carries nothing.
ROUTERS_DOWN = """\
Switch: 0x0000000000000a01 router0:
           1   20[  ] ==( 4X       50.0 Gbps Initialize/  LinkUp)==>       2   20[  ] "router1" ( )
"""  # noqa: E501
CUT_OFF = (
    "n2 is cut off from the network: every NIC cable is down, so its GPUs reach only their own node"
)
UNCABLED = (
    "{topology}: NIC n2.nic0 has no cable to a switch (not cabled, or down with every other "
    "NIC of its host): no route over the network"
)


def _ibstat(folder: Path, host: str, down: set[int], ports: int = 8, rate: float = 200) -> str:
    """``host``'s ibstat (``ports`` one-port adapters at ``rate`` Gb/s), those in ``down``
    down, saved under its host's name."""
    path = folder / f"{host}.txt"
    path.write_text(ibstat_text(range(ports), down=down, rate_Gbps=rate, ca_type=None))
    return str(path)


def _path(run_cli, *argv: str) -> dict:
    status, out, err = run_cli("path", *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def _cable(fabric, a: str, b: str) -> list[int]:  # type: ignore[no-untyped-def]
    """The links between devices ``a`` and ``b`` (both directions), ascending."""
    ends = {
        k: {
            fabric.device_name(int(fabric.link_src[k])),
            fabric.device_name(int(fabric.link_dst[k])),
        }
        for k in range(fabric.n_links)
    }
    return [k for k, names in ends.items() if names == {a, b}]


def _nics(data: dict) -> list[str]:
    """The NICs a path's hops cross, in order."""
    return [h["from"] for h in data["hops"] if ".nic" in h["from"]]


def test_a_down_host_cable_of_a_dragonfly_moves_its_gpu_to_another_nic(run_cli, tmp_path):
    """n2's mlx5_0 down: n0.g0 -> n2.g0 arrives by n2.nic1, not n2.nic0; the change is
    listed as applied, nothing as not applied."""
    health = _ibstat(tmp_path, "n2", {0})
    before = _path(run_cli, *DRAGONFLY, "n0.g0", "n2.g0")
    after = _path(run_cli, *DRAGONFLY, "--health", health, "n0.g0", "n2.g0")
    assert _nics(before) == ["n0.nic0", "n2.nic0"]
    assert _nics(after) == ["n0.nic0", "n2.nic1"]
    assert after["bottleneck_GBps"] == pytest.approx(25.0)
    changes = [(c["kind"], c["link"]) for c in after["health"]["changes"]]
    assert changes == [("down", "n2.nic0 (n2 mlx5_0) -> router1")]
    assert after["health"]["unmatched"] == []
    back = _path(run_cli, *DRAGONFLY, "--health", health, "n2.g0", "n3.g0")
    assert _nics(back) == ["n2.nic1", "n3.nic0"]


def test_the_bulk_router_takes_the_moved_gpus_route(catalog):
    """Every pair of the 32 GPUs with n2.nic0's cable down: the bulk routes are the per-pair
    router's link for link, no route crosses the dead cable, every max-min rate is positive
    and an all-reduce is priced in finite time without a numpy warning."""
    fabric = load_fabric(TopologyRequest("dragonfly-cluster", 4), catalog)
    down = LinkCondition("n2 mlx5_0", 1, "router1", 1, state="down", source="t")
    overlay = apply_health(fabric, [down], [], catalog)
    new = overlay.fabric
    assert new.n_links == fabric.n_links  # the tables keep their link ids
    dead = np.flatnonzero(new.link_bw_GBps <= 0.0)
    assert sorted(new.device_name(int(new.link_src[k])) for k in dead) == ["n2.nic0", "router1"]
    n = new.n_gpus
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    group = Group(new, np.arange(n))
    rows = group.bulk.paths(src, dst)
    for i in range(src.shape[0]):
        assert [int(k) for k in rows[i] if k >= 0] == [int(k) for k in group.route(src[i], dst[i])]
    assert not np.isin(rows, dead).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rates, _ = group.bulk.max_min_rates(src, dst)
        prediction = evaluate_collective(
            new, "all_reduce", [2**30], ranks=np.arange(n), algorithms=collective_algorithms()
        )
    assert (np.asarray(rates) > 0).all()
    assert np.isfinite(prediction.time_us).all()


def test_a_dragonfly_host_with_every_cable_down_is_cut_off(run_cli, tmp_path):
    """Every NIC cable of n2 down: n2 is said cut off, a path to it is one error naming its
    NIC, the rest of the network is priced, and the doctor names the host."""
    health = _ibstat(tmp_path, "n2", set(range(8)))
    status, _, err = run_cli("path", *DRAGONFLY, "--health", health, "n0.g0", "n2.g0")
    lines = err.strip().splitlines()
    assert status == 2
    assert lines[0] == "fabricui: as it is: 8 down"
    assert f"fabricui: warning: {CUT_OFF}" in lines
    assert lines[-1] == "fabricui: error: " + UNCABLED.format(topology="dragonfly-cluster")
    rest = _path(run_cli, *DRAGONFLY, "--health", health, "n1.g0", "n3.g0")
    assert rest["health"]["warnings"] == [CUT_OFF] and rest["bottleneck_GBps"] == 25.0
    status, out, err = run_cli("doctor", "--health", health, *DRAGONFLY, "--json")
    assert status == 0, err
    job = json.loads(out)["health"]["job"]
    assert [(f["code"], f["hosts"]) for f in job] == [("host-lost-a-nic-cable", ["n2"])]


def test_a_down_cable_between_routers_is_priced_up_and_said(run_cli, tmp_path):
    """router0 - router1 down: a generated dragonfly's routes cannot leave it, so it is not
    applied (one line saying so and which cables are), and n0 -> n2 still crosses it at its
    rate."""
    links = tmp_path / "links.txt"
    links.write_text(ROUTERS_DOWN)
    data = _path(run_cli, *DRAGONFLY, "--health", str(links), "n0.g0", "n2.g0")
    assert data["health"]["changes"] == []
    assert data["health"]["unmatched"] == [
        "iblinkinfo links.txt: router0 port 20 - router1 port 20 not applied: router0 -> "
        "router1 is down, but dragonfly-cluster is a generated dragonfly, whose routes between "
        "routers are its tables' and cannot leave a cable: priced with it up (a down cable "
        "from a host's NIC to its router is applied)"
    ]
    hop = next(h for h in data["hops"] if (h["from"], h["to"]) == ("router0", "router1"))
    assert hop["bw_GBps"] == pytest.approx(25.0)


def test_a_global_bundle_keeps_the_cable_that_would_leave_it_nothing(catalog):
    """80 nodes make two groups, router0 -> router32 a bundle of 16 global cables: 15 of
    them down are applied (the bundle keeps 1/16), the 16th is priced up and said once
    (listed from both ends)."""
    fabric = load_fabric(TopologyRequest("dragonfly-cluster", 80), catalog)
    names = [fabric.device_name(int(d)) for d in range(fabric.n_devices)]
    k = int(np.flatnonzero(fabric.link_src == names.index("router0"))[-1])
    assert (names[int(fabric.link_dst[k])], int(fabric.link_count[k])) == ("router32", 16)
    down = [
        LinkCondition("router0", 40 + p, "router32", 40 + p, state="down", source="t")
        for p in range(16)
    ]
    last = LinkCondition("router32", 55, "router0", 55, state="down", source="t")
    overlay = apply_health(fabric, [*down, last], [])
    assert [c.label for c in overlay.changes] == ["router0 -> router32 (1 of 16 cables)"] * 15
    assert overlay.fabric.link_bw_GBps[k] == pytest.approx(fabric.link_bw_GBps[k] / 16)
    assert overlay.unmatched == (
        "t: router0 port 55 - router32 port 55 not applied: router0 -> router32 is down, but "
        "dragonfly-cluster is a generated dragonfly, whose routes between routers are its "
        "tables' and cannot leave a cable: priced with it up (a down cable from a host's NIC "
        "to its router is applied)",
    )
    assert set(overlay.not_applied) == {down[-1], last}


def test_a_router_cable_said_down_and_degraded_is_priced_at_the_degraded_rate(catalog):
    """One router cable, down in one output and at half rate in another: the down one is
    not applied, the degraded one is, whichever comes first."""
    fabric = load_fabric(TopologyRequest("dragonfly-cluster", 4), catalog)
    slow = LinkCondition("router0", 20, "router1", 20, fraction=0.5, source="a")
    down = LinkCondition("router1", 20, "router0", 20, state="down", source="b")
    for order in ([slow, down], [down, slow]):
        overlay = apply_health(fabric, order, [])
        assert [(c.kind, c.factor) for c in overlay.changes] == [("degraded", 0.5)]
        assert len(overlay.unmatched) == 1 and "priced with it up" in overlay.unmatched[0]
        assert list(overlay.not_applied) == [down]


def test_a_fat_tree_host_cable_without_a_catalog_is_neither_priced_nor_drawn_down(catalog):
    """A generated fat-tree with no catalog to build its cable graph from: n1's mlx5_0 down
    is said not applied (priced up), and nothing marks its cable or its ends down; with
    the catalog it is applied and marked."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)
    down = LinkCondition("n1 mlx5_0", 1, state="down", nic=0, source="t")
    overlay = apply_health(fabric, [down], [])
    assert overlay.changes == ()
    assert overlay.unmatched == (
        "t: n1.nic0 (n1 mlx5_0) -> leaf0 is down, but h100-ib-cluster's network is "
        "generated, not a graph a cable can leave: priced with it up",
    )
    assert list(overlay.not_applied) == [down]
    assert not overlay.link_marks.any() and overlay.device_marks == {}
    np.testing.assert_array_equal(overlay.fabric.link_bw_GBps, fabric.link_bw_GBps)
    applied = apply_health(fabric, [down], [], catalog)
    assert [c.kind for c in applied.changes] == ["down"]
    new = applied.fabric
    assert {new.device_name(d): m for d, m in applied.device_marks.items()} == {
        "n1.nic0": "down",
        "leaf0": "down",
    }


#: n1's mlx5_0 as three outputs see it: up with error counters, down, at half rate.
ERRORS = LinkCondition("n1 mlx5_0", 1, erroring=True, nic=0, source="errors.txt")
DOWN = LinkCondition("n1 mlx5_0", 1, state="down", nic=0, source="ibstat.txt")
SLOW = LinkCondition("n1 mlx5_0", 1, fraction=0.5, nic=0, source="iblinkinfo.txt")
PRICED_UP = (
    "ibstat.txt: n1.nic0 (n1 mlx5_0) -> leaf0 is down, but h100-ib-cluster's network is "
    "generated, not a graph a cable can leave: priced with it up"
)


@pytest.mark.parametrize(
    "order", [(ERRORS, DOWN), (DOWN, ERRORS)], ids=["errors-first", "down-first"]
)
def test_a_priced_up_host_cable_keeps_its_errors(catalog, order):
    """A fat-tree host cable with no catalog to lose it, said down in one output and up with
    error counters in another (whichever comes first): the down is said not applied
    (priced up), and the cable shows what is left, up and erroring: its errors change
    (from the errors output alone) and mark stay, and the errors output is applied."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)
    overlay = apply_health(fabric, list(order), [])
    (change,) = overlay.changes
    assert (change.kind, change.label, change.factor, change.source, change.erroring) == (
        "errors",
        "n1.nic0 (n1 mlx5_0) -> leaf0",
        1.0,
        "errors.txt",
        True,
    )
    assert overlay.unmatched == (PRICED_UP,)
    assert list(overlay.not_applied) == [DOWN]
    new = overlay.fabric
    assert {new.device_name(d): m for d, m in overlay.device_marks.items()} == {
        "n1.nic0": "errors",
        "leaf0": "errors",
    }
    assert list(np.flatnonzero(overlay.link_marks)) == _cable(new, "n1.nic0", "leaf0")
    assert set(overlay.link_marks[overlay.link_marks > 0]) == {1}  # MARKS[1]: errors
    np.testing.assert_array_equal(new.link_bw_GBps, fabric.link_bw_GBps)
    applied = apply_health(fabric, list(order), [], catalog)  # with its cable graph: down
    assert [(c.kind, c.erroring) for c in applied.changes] == [("down", True)]


@pytest.mark.parametrize("order", [(SLOW, DOWN), (DOWN, SLOW)], ids=["slow-first", "down-first"])
def test_a_priced_up_host_cable_said_slow_too_is_priced_at_its_rate(catalog, order):
    """The same cable down in one output and at half rate in another: the down is not
    applied, the half rate is (as a router cable's is on a dragonfly), whichever comes
    first; the slow output is not said unapplied."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)
    overlay = apply_health(fabric, list(order), [])
    assert [(c.kind, c.factor, c.source) for c in overlay.changes] == [
        ("degraded", 0.5, "iblinkinfo.txt")
    ]
    assert overlay.unmatched == (PRICED_UP,)
    assert list(overlay.not_applied) == [DOWN]
    new = overlay.fabric
    cable = _cable(new, "n1.nic0", "leaf0")
    assert len(cable) == 2
    np.testing.assert_allclose(new.link_bw_GBps[cable], fabric.link_bw_GBps[cable] / 2)


def test_a_tpu_torus_has_no_host_cable_to_lose(run_cli, tmp_path):
    """tpu7x's chips are wired to each other: an ibstat of n1 with a port down changes
    nothing, and one line says why."""
    health = _ibstat(tmp_path, "n1", {1})
    data = _path(run_cli, "-t", "tpu7x-4x4x4", "--nodes", "2", "--health", health, "0", "5")
    assert data["health"]["changes"] == []
    assert data["health"]["unmatched"] == [
        "ibstat n1.txt: n1 has no NIC in tpu7x-4x4x4: its chips are wired to each other (a "
        "torus), so no adapter's cable is part of the fabric"
    ]


def test_a_torus_with_a_nic_network_loses_its_host_cables(run_cli, tmp_path):
    """trn2-cluster (each instance a NeuronLink torus, EFA NICs on a fat-tree): n1's mlx5_1
    down moves n1.g1 to another NIC; every cable of n1 down cuts n1 off."""
    TRN2 = ("-t", "trn2-cluster", "--nodes", "2")
    before = _path(run_cli, *TRN2, "n0.g1", "n1.g1")
    after = _path(run_cli, *TRN2, "--health", _ibstat(tmp_path, "n1", {1}, 16), "n0.g1", "n1.g1")
    assert _nics(before)[-1] == "n1.nic1" and _nics(after)[-1] != "n1.nic1"
    assert [c["kind"] for c in after["health"]["changes"]] == ["down"]
    assert after["health"]["unmatched"] == []
    every = _ibstat(tmp_path, "n1", set(range(16)), 16)
    status, _, err = run_cli("path", *TRN2, "--health", every, "n0.g1", "n1.g1")
    assert status == 2
    assert "fabricui: warning: n1 is cut off from the network" in err
