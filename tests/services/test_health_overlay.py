"""The fabric as it is: a health file's degraded, down and inactive links change what path,
collective and plan report, by what the model says (hand-checked figures)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _ibstat import ibstat_text

from fabricui import api
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.group import Group
from fabricui.engine.nccl.picks import NcclSettings
from fabricui.engine.nccl.view import NcclView
from fabricui.errors import EngineError
from fabricui.fabric.health import GpuLinkCondition, LinkCondition, apply_health, health_of
from fabricui.services.health import overlay as health_overlay
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import collective_algorithms, load_fabric

#: One DGX H100 NIC cable trained at 1X of 4X, as iblinkinfo prints it from the host's side.
ONE_X = (
    "CA: n0 mlx5_0:\n"
    "      0x0000000000000101      1    1[  ] ==( 1X        106.25 Gbps Active/  LinkUp)==>"
    '       2   17[  ] "leaf0" ( Could be 4X)\n'
)


@pytest.fixture(scope="module")
def cluster(catalog):
    """2 DGX H100 nodes on a rail-optimized NDR fabric, as designed."""
    return load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)


@pytest.fixture
def one_x(tmp_path: Path) -> str:
    path = tmp_path / "links.txt"
    path.write_text(ONE_X)
    return str(path)


def test_path_through_a_1x_of_4x_cable_gets_a_quarter(cluster, catalog, one_x):
    """n0.nic0's cable at 1X of 4X: the hop runs at 50 / 4 = 12.5 GB/s and is the bottleneck;
    the other hops keep their rates."""
    before = api.path(cluster, "n0.g0", "n1.g0", 2**30)
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(one_x,)), catalog)
    after = api.path(fabric, "n0.g0", "n1.g0", 2**30)
    hop = next(h for h in after.hops if h.src == "n0.nic0")
    assert before.bottleneck_GBps == pytest.approx(50.0)
    assert hop.bw_GBps == pytest.approx(12.5)
    assert after.bottleneck_GBps == pytest.approx(12.5)
    assert [h.bw_GBps for h in after.hops if h.src != "n0.nic0"] == [
        h.bw_GBps for h in before.hops if h.src != "n0.nic0"
    ]
    overlay = health_of(fabric)
    assert overlay is not None and [c.kind for c in overlay.changes] == ["degraded"]
    assert overlay.changes[0].factor == pytest.approx(0.25)


def test_ring_across_the_degraded_cable_slows_by_its_share(cluster, catalog, one_x):
    """A 1 GiB ring all-reduce over both nodes: the bandwidth term is set by the busiest
    link; n0.nic0 carries 1/8 of the inter-node traffic at a quarter of its rate, so the ring
    takes four times as long there (algbw within 10% of a quarter: latency terms differ)."""
    algorithms = collective_algorithms()
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(one_x,)), catalog)
    ranks = np.arange(16)
    healthy = evaluate_collective(
        cluster, "all_reduce", [2**30], ranks=ranks, algorithms=algorithms, algo="ring"
    )
    slowed = evaluate_collective(
        fabric, "all_reduce", [2**30], ranks=ranks, algorithms=algorithms, algo="ring"
    )
    ratio = float(slowed.algbw_GBps[0] / healthy.algbw_GBps[0])
    assert ratio == pytest.approx(0.25, rel=0.1)


def test_cli_path_collective_and_plan_take_health(run_cli, one_x):
    """``--health`` on path (JSON carries what changed and the findings), collective and
    plan; stderr says what the overlay did."""
    status, out, err = run_cli(
        "path", "-t", "h100-ib-cluster", "--nodes", "2", "--src", "n0.g0", "--dst", "n1.g0",
        "--health", one_x, "--json",
    )  # fmt: skip
    assert status == 0, err
    data = json.loads(out)
    assert data["bottleneck_GBps"] == pytest.approx(12.5)
    assert data["health"]["changes"][0]["bandwidth_kept"] == 0.25
    assert data["health"]["findings"][0]["code"] == "link-degraded"
    assert "as it is: 1 degraded" in err
    status, out, err = run_cli(
        "collective", "all_reduce", "-t", "h100-ib-cluster", "--nodes", "2", "--size", "1G",
        "--algo", "ring", "--health", one_x, "--json",
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["rows"][0]["busbw_GBps"] < 100


def test_down_cable_is_removed_and_gpus_move_to_another_nic(cluster, catalog):
    """A host cable that is down leaves the fabric (the fat-tree becomes its explicit
    graph); the GPU of that NIC sends through the nearest NIC of its host, as NCCL does."""
    condition = LinkCondition("n0 mlx5_0", 1, "leaf0", 17, state="polling", source="test")
    overlay = apply_health(cluster, [condition], [], catalog)
    fabric = overlay.fabric
    assert fabric.n_links == cluster.n_links - 2
    assert fabric.device_name(int(fabric.gpu_nic[0])) == "n0.nic1"
    assert int(fabric.gpu_nic[8]) == int(cluster.gpu_nic[8])
    path = api.path(fabric, "n0.g0", "n1.g0", None)
    assert "n0.nic0" not in {h.src for h in path.hops}
    assert [c.kind for c in overlay.changes] == ["down"]


def test_a_host_with_every_cable_down_is_off_the_network_in_one_line(cluster, catalog):
    """Every NIC cable of n1 down: no NIC of its host to move to, so a route to it names the
    NIC it would leave by, and says why, instead of pricing a route through nothing."""
    conditions = [
        LinkCondition(f"n1 mlx5_{k}", 1, f"leaf{k}", 18, state="down", source="test")
        for k in range(8)
    ]
    fabric = apply_health(cluster, conditions, [], catalog).fabric
    with pytest.raises(EngineError) as error:
        api.path(fabric, "n0.g0", "n1.g0", None)
    assert str(error.value) == (
        "h100-ib-cluster: NIC n1.nic0 has no cable to a switch (not cabled, or down with "
        "every other NIC of its host): no route over the network"
    )


def _ibstat(folder: Path, host: str, down: set[int]) -> str:
    """An ``ibstat`` of ``host``'s eight InfiniBand ports, those in ``down`` down."""
    path = folder / f"{host}.txt"
    path.write_text(ibstat_text(down=down, ca_type=None))
    return str(path)


def test_a_host_off_one_rail_still_routes_flows_on_that_rail(catalog, tmp_path: Path):
    """n0's last NIC cable down: its GPU 7 sends through another NIC, so n0 uses 7 rails
    while n1 still uses 8; flows to n1's GPU 7 still find their rail (all-to-all max-min
    rates over both hosts, every flow positive)."""
    health = (_ibstat(tmp_path, "n0", {7}),)
    request = TopologyRequest("spectrum-x-b200-cluster", 2, health=health)
    fabric = load_fabric(request, catalog, report_health=False)
    assert fabric.device_name(int(fabric.gpu_nic[7])) != "n0.nic7"
    src, dst = np.nonzero(~np.eye(16, dtype=bool))
    rates, _ = Group(fabric, np.arange(16)).bulk.max_min_rates(src, dst)
    assert (np.asarray(rates) > 0).all()


def test_a_down_host_cable_of_a_generated_dragonfly_moves_its_gpu(catalog, tmp_path):
    """A dragonfly keeps its tables: a down host cable stays in them carrying nothing, the
    GPU of that NIC sends through another NIC of its host (no route crosses the dead cable),
    and the fabric is priced in finite time."""
    fabric = load_fabric(TopologyRequest("dragonfly-cluster"), catalog)
    overlay = health_overlay(fabric, (_ibstat(tmp_path, "n1", {1}),), catalog, report=False)
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic1 (n1 mlx5_1) -> router0")
    ]
    assert overlay.unmatched == ()
    moved = overlay.fabric
    assert moved.device_name(int(moved.gpu_nic[9])) in ("n1.nic0", "n1.nic2")
    path = api.path(moved, "n0.g1", "n1.g1", None)
    assert "n1.nic1" not in {h.src for h in path.hops} | {h.dst for h in path.hops}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prediction = evaluate_collective(
            overlay.fabric,
            "all_reduce",
            [2**30],
            ranks=np.arange(16),
            algorithms=collective_algorithms(),
        )
    assert np.isfinite(prediction.time_us).all()


def test_inactive_nvlinks_leave_the_gpus_scale_up_bandwidth(catalog):
    """GPU 3 with 2 of 18 NVLinks inactive keeps 16/18 of its 450 GB/s; the others keep all."""
    fabric = load_fabric(TopologyRequest("dgx-h100"), catalog)
    overlay = apply_health(fabric, [], [GpuLinkCondition(None, 3, 2, 18)])
    path = api.path(overlay.fabric, "n0.g3", "n0.g5", None)
    assert path.bottleneck_GBps == pytest.approx(450.0 * 16 / 18)
    other = api.path(overlay.fabric, "n0.g1", "n0.g5", None)
    assert other.bottleneck_GBps == pytest.approx(450.0)


def _nvlinks(host, active, listed=18):
    """Every GPU of ``host`` with ``active`` of its ``listed`` NVLinks up."""
    return [GpuLinkCondition(host, gpu, listed - active, listed) for gpu in range(8)]


def test_gpus_without_nvlinks_talk_over_pcie_and_the_others_do_not(cluster, catalog):
    """Every NVLink of n1 down: n1's GPUs reach each other through their PCIe switches and
    the host (63 GB/s), in the per-pair router and the vectorized one alike, while n0 keeps
    its NVSwitch; a 2-node all-reduce is priced without NVLink SHARP, as NCCL sees it (its
    topology counts active NVLinks only), in finite time and without a numpy warning."""
    fabric = apply_health(cluster, [], _nvlinks("n1", 0)).fabric
    n1 = api.path(fabric, "n1.g1", "n1.g2", None)
    assert n1.bottleneck_GBps == pytest.approx(63.0)
    assert not any("nvsw" in h.src or "nvsw" in h.dst for h in n1.hops)
    assert api.path(fabric, "n0.g1", "n0.g2", None).bottleneck_GBps == pytest.approx(450.0)
    group = Group(fabric, np.arange(16))
    src = np.arange(16)
    dst = (src + 1) % 16
    rows = group.bulk.paths(src, dst)
    for i in range(16):
        assert [int(k) for k in rows[i] if k >= 0] == [int(k) for k in group.route(src[i], dst[i])]
        assert (fabric.link_bw_GBps[group.route(src[i], dst[i])] > 0).all()
    assert group.scaleup_active_share == 0.0 and not group.has_nvswitch_reduction
    settings = NcclSettings.of()
    assert NcclView.of(group, settings.release, settings.env).intra == "pcie"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prediction = evaluate_collective(
            fabric,
            "all_reduce",
            [8, 2**20, 2**30],
            ranks=np.arange(16),
            algorithms=collective_algorithms(),
        )
    assert np.isfinite(prediction.time_us).all()
    assert not any(a.startswith("nvls") for a in prediction.algorithm)


def test_a_rack_gpu_without_nvlinks_reaches_other_trays_over_the_network(catalog):
    """GB200 NVL72: tray n0's GPU 3 with every NVLink down is cut off inside the rack; it
    reaches n1's GPUs through its Grace, its NIC and the InfiniBand fabric (the NIC's
    50 GB/s the bottleneck), and a rack-wide all-reduce is priced that way."""
    rack = load_fabric(TopologyRequest("gb200-nvl72"), catalog)
    fabric = apply_health(rack, [], [GpuLinkCondition("n0", 3, 18, 18)]).fabric
    path = api.path(fabric, "n0.g3", "n1.g0", None)
    assert path.bottleneck_GBps == pytest.approx(50.0)
    assert any(h.src.startswith("leaf") for h in path.hops)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prediction = evaluate_collective(
            fabric, "all_reduce", [2**20], ranks=np.arange(72), algorithms=collective_algorithms()
        )
    assert np.isfinite(prediction.time_us).all()


def test_half_the_nvlinks_halve_what_nccl_sees(catalog):
    """9 of 18 NVLinks up on every GPU: NCCL's topology holds 9 links a GPU, half the
    bandwidth its search starts from; NVLink SHARP stays (every GPU still reaches it)."""
    fabric = load_fabric(TopologyRequest("dgx-h100"), catalog)
    settings = NcclSettings.of()
    full = NcclView.of(Group(fabric, np.arange(8)), settings.release, settings.env)
    half_fabric = apply_health(fabric, [], _nvlinks(None, 9)).fabric
    group = Group(half_fabric, np.arange(8))
    half = NcclView.of(group, settings.release, settings.env)
    assert group.scaleup_active_share == pytest.approx(0.5) and group.has_nvswitch_reduction
    assert (half.intra, half.gpu_nvlink_total_GBps) == ("nvswitch", full.gpu_nvlink_total_GBps / 2)


def test_a_switch_cable_in_a_bundle_loses_its_share(catalog):
    """One of the four cables of leaf0 -> spine0 at 1X of 4X: the bundle keeps
    (3 + 1/4) / 4 of its bandwidth, in both directions, once even when both ends list it."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)
    a = LinkCondition("leaf0", 33, "spine0", 1, fraction=0.25, source="test")
    b = LinkCondition("spine0", 1, "leaf0", 33, fraction=0.25, source="test")
    overlay = apply_health(fabric, [a, b], [])
    names = [
        (fabric.device_name(int(s)), fabric.device_name(int(d)))
        for s, d in zip(fabric.link_src, fabric.link_dst)
    ]
    k = names.index(("leaf0", "spine0"))
    back = names.index(("spine0", "leaf0"))
    assert fabric.link_count[k] == 4
    kept = (3 + 0.25) / 4
    assert overlay.fabric.link_bw_GBps[k] == pytest.approx(fabric.link_bw_GBps[k] * kept)
    assert overlay.fabric.link_bw_GBps[back] == pytest.approx(fabric.link_bw_GBps[back] * kept)
    assert len(overlay.changes) == 1


def test_conditions_that_name_nothing_are_listed(cluster, catalog):
    """Another fabric's switch or host is not guessed at: it is listed as unmatched."""
    overlay = apply_health(
        cluster,
        [
            LinkCondition("LG01-01", 3, "CSPINE1-01", 1, state="down", source="x.txt"),
            LinkCondition("luna-0001 mlx5_0", 1, "leaf0", 1, state="down", source="x.txt"),
        ],
        [GpuLinkCondition(None, 0, 1, 18, source="y.txt")],
    )
    assert len(overlay.unmatched) == 3
    assert overlay.unmatched[0] == (
        "x.txt: LG01-01 port 3 - CSPINE1-01 port 1 not applied: LG01-01 and CSPINE1-01 are "
        "not switches of h100-ib-cluster"
    )
    assert "luna-0001 is not a host" in overlay.unmatched[1]
    assert "name the file after its host" in overlay.unmatched[2]
    assert overlay.fabric.n_links == cluster.n_links
    assert overlay.summary() == (
        "health: no change: nothing the files mark down, degraded or erroring is a link "
        "here; 3 condition(s) not applied"
    )
    assert apply_health(cluster, [], []).summary().startswith("health: no change: nothing")


def test_an_ibstat_file_named_after_its_host_takes_its_infiniband_ports(catalog, tmp_path):
    """The H100 node's ibstat (8 InfiniBand ports, 4 Ethernet) saved as n0.txt with mlx5_3
    polling: the 2nd InfiniBand port in adapter order is n0.nic1, removed; the Ethernet
    ports that are disabled are not the fabric's NICs and change nothing."""
    sample = Path(__file__).resolve().parents[1] / "data" / "health" / "infiniband"
    text = (
        sample / "ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt"
    ).read_text()
    text = "\n".join(text.split("\n")[2:])
    at = text.index("CA 'mlx5_3'")
    text = text[:at] + text[at:].replace("State: Active", "State: Down", 1).replace(
        "Physical state: LinkUp", "Physical state: Polling", 1
    )
    path = tmp_path / "n0.txt"
    path.write_text(text)
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog)
    overlay = health_of(fabric)
    assert [(c.kind, c.label.split(" ")[0]) for c in overlay.changes] == [("down", "n0.nic1")]
    assert fabric.device_name(int(fabric.gpu_nic[1])) == "n0.nic0"
    assert overlay.unmatched == ()
