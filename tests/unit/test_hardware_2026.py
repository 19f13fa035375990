"""The 2026 hardware generation: every new reference topology builds, routes at the hand-derived
per-GPU scale-up bandwidth and NIC rate, and prices an all-reduce below what its links allow.

Figures (per direction) come from the records' sources: NVLink 5 18 x 50 GB/s, NVLink 6
3.6 TB/s bidirectional, xGMI 4 76.8 GB/s per link, ICI 100 GB/s per link, NeuronLink-v3 read
as 128 GB/s per torus link, Gaudi 3 3 x 200GbE per peer, ConnectX-8 800 Gb/s, ConnectX-9 2 x
800 Gb/s, EFAv3 2 x 200 Gb/s and EFAv4 400 Gb/s per GPU.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricui import api
from fabricui.engine.evaluate import evaluate_collective
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.session import collective_algorithms

#: topology -> (scale-up link, GB/s between GPU 0 and GPU 1 per direction)
SCALE_UP = {
    "gb300-nvl72": ("nvlink5", 18 * 50.0),
    "dgx-b300": ("nvlink5", 18 * 50.0),
    "vera-rubin-nvl144": ("nvlink6", 1800.0),
    "mi325x-node": ("xgmi3", 64.0),
    "mi350x-node": ("xgmi4", 76.8),
    "mi355x-node": ("xgmi4", 76.8),
    "tpu-v6e-256": ("ici-v6e", 100.0),
    "tpu7x-4x4x4": ("ici-v7", 100.0),
    "trn2-ultraserver": ("neuronlink-v3", 128.0),
    "gaudi3-node": ("gaudi3-roce", 3 * 25.0),
}

#: topology -> (network link, per-GPU NIC GB/s per direction), checked on two nodes
NETWORK = {
    "gb300-nvl72": ("ib-xdr", 100.0),
    "dgx-b300": ("ib-xdr", 100.0),
    "vera-rubin-nvl144": ("ib-xdr", 200.0),
    "mi325x-node": ("roce", 50.0),
    "mi355x-node": ("roce", 50.0),
    "gaudi3-node": ("roce", 75.0),
    "spectrum-x-b200-cluster": ("roce", 50.0),
    "gb300-nvl72-xdr-cluster": ("ib-xdr", 100.0),
    "aws-p5en-cluster": ("efa", 50.0),
    "aws-p6-b200-cluster": ("efa", 50.0),
}


def fabric_of(catalog, name, nodes=None):
    return build_fabric(resolve_topology(name, catalog, nodes), catalog)


@pytest.mark.parametrize(("name", "expected"), sorted(SCALE_UP.items()))
def test_scale_up_path_is_the_per_gpu_link(catalog, name, expected):
    """GPU 0 -> GPU 1 crosses the scale-up link at the per-GPU (or per-pair) figure."""
    link, bw = expected
    report = api.path(fabric_of(catalog, name), "n0.g0", "n0.g1")
    assert report.hops[0].link == link
    assert report.bottleneck_GBps == pytest.approx(bw)


@pytest.mark.parametrize(("name", "expected"), sorted(NETWORK.items()))
def test_network_path_is_limited_by_the_nic_rate(catalog, name, expected):
    """Across two scale-up domains (servers, or the racks of NVL72 trays) the bottleneck is
    the GPU's NIC ports on the network link."""
    link, bw = expected
    hosts = resolve_topology(name, catalog).intra.hosts_per_domain
    report = api.path(fabric_of(catalog, name, nodes=2 * hosts), "n0.g0", "d1.g0")
    hop = next(h for h in report.hops if h.src == "n0.nic0")
    assert hop.link == link
    assert report.bottleneck_GBps == pytest.approx(bw)


@pytest.mark.parametrize("name", sorted(set(SCALE_UP) | set(NETWORK)))
def test_all_reduce_is_priced_below_the_links(catalog, name):
    """A 1 GiB all-reduce over the whole topology: busbw positive and below what the
    per-GPU links could carry in both directions (in-switch reduction doubles at most)."""
    fabric = fabric_of(catalog, name)
    prediction = evaluate_collective(
        fabric, "all_reduce", [2.0**30], algorithms=collective_algorithms()
    )
    busbw = float(prediction.busbw_GBps[0])
    per_gpu = SCALE_UP.get(name, ("", 0.0))[1] or max(
        float(fabric.link_bw_GBps[fabric.link_src == fabric.gpu_dev[0]].max()), 1.0
    )
    links_per_gpu = {"mi325x-node": 7, "mi350x-node": 7, "mi355x-node": 7, "gaudi3-node": 7}
    capacity = per_gpu * links_per_gpu.get(name, 1)
    if name.startswith(("tpu", "trn2")):
        capacity = per_gpu * fabric.gpu.scaleup_links
    assert 0 < busbw <= 2 * capacity, (name, busbw, capacity)


def test_gaudi3_nic_sits_on_the_accelerator(catalog):
    """Gaudi 3's scale-out ports are on die: the GPU reaches its NIC without the host PCIe."""
    report = api.path(fabric_of(catalog, "gaudi3-node", nodes=2), "n0.g3", "n1.g3")
    assert report.hops[0].src == "n0.g3" and report.hops[0].dst == "n0.nic3"


def test_trn2_ultraserver_is_a_4x4x4_torus(catalog):
    """64 Trainium2 chips in one NeuronLink domain's 4x4x4 torus, each with 6 torus
    neighbours (4 in its instance, 2 across)."""
    fabric = fabric_of(catalog, "trn2-ultraserver")
    assert fabric.domain_torus is not None and fabric.n_gpus == 64
    assert fabric.domain_torus.dims == (4, 4, 4)
    gpus = fabric.gpu_dev.astype(np.int64)
    chip_links = np.isin(fabric.link_src, gpus) & np.isin(fabric.link_dst, gpus)
    assert np.all(np.bincount(fabric.link_src[chip_links], minlength=fabric.n_devices)[gpus] == 6)


def test_rubin_has_no_invented_bf16_peak(catalog, run_cli):
    """Rubin's BF16 peak is unpublished: null in hwdb, and a plan asks for one (exit 2)."""
    assert catalog.gpus["rubin"].bf16_dense_TFLOPS is None
    status, _, err = run_cli("plan", "-m", "llama3-8b", "-t", "vera-rubin-nvl144", "--tp", "8")
    assert status == 2 and "no published BF16 peak" in err and len(err.splitlines()) == 1


def test_unpublished_switch_ports_are_null_and_refused_as_a_network_switch(catalog, tmp_path):
    """The NVLink 6 switch's radix is not published: fine inside a node, refused as net.switch."""
    from fabricui.errors import HwdbError

    assert catalog.switches["nvlink6-switch"].radix is None
    spec = tmp_path / "t.yaml"
    spec.write_text(
        "gpu: b200\nnodes: 2\ngpus_per_node: 8\nintra: {fabric: nvswitch, link: nvlink5}\n"
        "net: {link: ib-xdr, gbps: 800, nics_per_node: 8, switch: nvlink6-switch}\n"
    )
    with pytest.raises(HwdbError, match=r"t\.yaml:\d+: net\.switch: nvlink6-switch has no"):
        resolve_topology(str(spec), catalog)


def test_done_criteria_listings(run_cli):
    """`topologies` lists the 2026 systems; `hwdb list` has EFA v3/v4 and nvlink6."""
    status, out, _ = run_cli("topologies", "--json")
    listed = {t["id"] for t in json.loads(out)}
    assert (
        status == 0
        and {
            "gb300-nvl72",
            "dgx-b300",
            "vera-rubin-nvl144",
            "mi325x-node",
            "mi355x-node",
            "tpu-v6e-256",
            "tpu7x-4x4x4",
            "trn2-ultraserver",
            "gaudi3-node",
        }
        <= listed
    )
    _, out, _ = run_cli("hwdb", "list", "nics", "--json")
    assert {"efa-v3", "efa-v4", "cx8-xdr", "cx9-xdr", "thor2"} <= set(json.loads(out)["nics"])
    _, out, _ = run_cli("hwdb", "list", "links", "--json")
    assert "nvlink6" in json.loads(out)["links"]


@pytest.mark.parametrize(("gbps", "nic"), [(100, "efa-v2"), (200, "efa-v3"), (400, "efa-v4")])
def test_efa_generation_follows_the_port_rate(catalog, tmp_path, gbps, nic):
    """An `efa` network on H100/H200/B200 nodes picks the EFA generation of its port rate
    (A100 keeps first-generation EFA, which carries Simple only)."""
    from fabricui.fabric.host_block import pick_nic

    spec = tmp_path / "efa.yaml"
    spec.write_text(
        "gpu: h100-sxm\nnodes: 2\ngpus_per_node: 8\nintra: {fabric: nvswitch, link: nvlink4}\n"
        f"net: {{link: efa, gbps: {gbps}, nics_per_node: 8}}\n"
    )
    picked = pick_nic(catalog, resolve_topology(str(spec), catalog))
    assert picked is not None and picked.id == nic and picked.protocols == ()
