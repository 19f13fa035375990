"""fabricui-ultraethernet: the UEC 800G figures and the plugin's data inside fabricui.

Run with the plugin installed (``pip install -e .`` next to this file, then ``pytest``).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from fabricui_ultraethernet import ULTRA_ETHERNET
from fabricui_ultraethernet.links import UEC_800G

from fabricui import api
from fabricui.api import DeviceKind


@pytest.fixture(scope="module")
def host():
    """Built-ins plus every installed plugin (this one among them)."""
    return api.plugin_host()


@pytest.fixture(scope="module")
def catalog(host):
    return api.load_catalog(host=host)


@pytest.fixture(scope="module")
def cluster(catalog, host):
    spec = api.resolve_topology("uec-800g-cluster", catalog)
    return api.build(spec, catalog, host)


def test_link_figures():
    """800 Gb/s per port = 100 GB/s per direction; 400G selectable; referenced."""
    assert UEC_800G.bw_GBps == 100.0 and UEC_800G.rates_Gbps == (400.0, 800.0)
    assert UEC_800G.tier == "scale-out" and UEC_800G.family == "uec"
    assert set(UEC_800G.sources) == {"year", "bw_GBps", "efficiency"}


def test_plugin_loads_from_its_entry_point(host):
    """The installed entry point loads and contributes a link, an interconnect and hwdb."""
    row = next(r for r in host.describe() if r["name"] == "ultraethernet")
    assert row["status"] == "ok" and row["dist"] == "fabricui-ultraethernet"
    assert row["contributes"]["link_generations"] == ["uec-800g"]
    assert row["contributes"]["interconnects"] == [ULTRA_ETHERNET.name]
    assert len(row["contributes"]["hwdb_paths"]) == 1


def test_hwdb_records(catalog):
    """The NIC speaks uec-800g over PCIe Gen6; the switch has 128 x 800G ports."""
    nic = catalog.nics["thor-ultra"]
    assert (nic.link, nic.rate_Gbps, nic.pcie) == ("uec-800g", 800.0, "pcie6")
    switch = catalog.switches["tomahawk-6"]
    assert switch.radix * switch.port_Gbps == 102_400.0


def test_cluster_is_a_two_tier_fabric_of_uec_nics(cluster):
    """32 nodes x 8 GPUs, one Thor Ultra per GPU, leafs and spines of Tomahawk 6."""
    assert cluster.n_gpus == 256
    nics = cluster.devices_of_kind(DeviceKind.NIC)
    assert nics.size == 256 and {cluster.model_of(int(d)) for d in nics} == {
        "Broadcom Thor Ultra 800G AI Ethernet NIC (UEC)"
    }
    assert cluster.devices_of_kind(DeviceKind.SPINE).size > 0


def test_path_uses_the_uec_link_and_nic_latency(cluster):
    """Cross-node traffic leaves on a 100 GB/s uec-800g port; each NIC adds 0.5 us."""
    report = api.path(cluster, "n0.g0", "n31.g3")
    net = [h for h in report.hops if h.link == "uec-800g"]
    assert net and report.bottleneck_GBps == 100.0
    assert report.hops[report.bottleneck_hop].link == "uec-800g"
    # NIC -> leaf: link 0.2 us + leaf 0.6 us; the hop into each NIC carries its 0.5 us.
    into_nic = [h for h in report.hops if ".nic" in h.dst]
    assert [h.lat_us for h in into_nic] == pytest.approx([0.3 + 0.5, 0.2 + 0.5])


def test_sprayed_flows_do_not_collide(cluster):
    """16 concurrent cross-rail flows each get a full NIC: traffic spreads over the spines
    (what UET's packet spraying does), no two flows pinned to one uplink."""
    src = np.arange(16) * 8  # GPU 0 of nodes 0..15 (rail 0)
    dst = (np.arange(16) + 16) * 8 + 1  # GPU 1 of nodes 16..31 (rail 1)
    rates = api.max_min_rates(cluster, src, dst)
    assert rates == pytest.approx(np.full(16, 100.0 * 0.92))


def test_ring_all_reduce_is_bound_by_the_nics_or_nvlink(catalog, host):
    """Two nodes, ring: bus bandwidth approaches the slower of the node's 8 NICs (8 x 100 GB/s
    x 0.92 = 736) and a GPU's NVLink 5 port, which carries the whole ring volume because a
    ring leaves the node through the NIC of its entry GPU (PXN): 900 GB/s x 0.76 = 684. At
    400G the NICs bind: 8 x 50 x 0.92 = 368."""
    spec = api.resolve_topology("uec-800g-cluster", catalog, nodes=2)
    size = 8 * 2**30

    def busbw(gbps: float) -> float:
        net = dataclasses.replace(spec.net, gbps=gbps)
        fabric = api.build(dataclasses.replace(spec, net=net), catalog, host)
        time_us = api.collective(fabric, "all_reduce", [size], algo="ring").time_us[0]
        return size / time_us / 1e3 * 2 * 15 / 16

    assert 0.95 * 684.0 < busbw(800.0) <= 684.0
    assert 0.95 * 368.0 < busbw(400.0) <= 368.0


def test_cli_path_and_collective(capsys):
    """The commands find the plugin's topology and link generation."""
    assert (
        api.run_cli(["path", "--topology", "uec-800g-cluster", "--src", "0", "--dst", "255"]) == 0
    )
    assert "uec-800g" in capsys.readouterr().out
    status = api.run_cli(
        ["collective", "all_reduce", "--topology", "uec-800g-cluster", "--size", "1G", "--json"]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert result["topology"] == "uec-800g-cluster" and result["nranks"] == 256
