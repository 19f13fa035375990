"""A superchip's host side where a topology leaves it out (hwdb ``host_link`` and
``gpus_per_cpu`` of the GPU record)."""

from __future__ import annotations

import pytest

from fabricui.engine.group import Group
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def spec_of(catalog, hardware):
    return parse_topology(YamlDocument(data=hardware, origin="test"), catalog)


def quad(**intra):
    return {
        "gpu": "gh200",
        "nodes": 2,
        "gpus_per_node": 4,
        "intra": {"fabric": "mesh", "link": "nvlink4", "links_per_pair": 6, **intra},
        "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 4},
    }


def test_a_gh200_node_has_a_grace_per_gpu_on_nvlink_c2c(catalog):
    """GH200 quad stated as the measurement files state it (no host link, no sockets):
    four Graces, each GPU on its own over NVLink-C2C, as the written-out spec."""
    implied = spec_of(catalog, quad())
    assert (implied.intra.host_link, implied.intra.sockets) == ("nvlink-c2c", 4)
    written = spec_of(catalog, quad(host_link="nvlink-c2c", sockets=4))
    assert implied.intra == written.intra


def test_what_a_spec_states_wins(catalog):
    spec = spec_of(catalog, quad(sockets=2))
    assert (spec.intra.host_link, spec.intra.sockets) == ("nvlink-c2c", 2)


@pytest.mark.parametrize(("gpu", "per_node", "sockets"), [("gb200", 4, 2), ("gb300", 4, 2)])
def test_two_blackwell_gpus_share_a_grace(catalog, gpu, per_node, sockets):
    hardware = {
        "gpu": gpu,
        "nodes": 1,
        "gpus_per_node": per_node,
        "intra": {"fabric": "nvswitch", "link": "nvlink5"},
        "net": None,
    }
    spec = spec_of(catalog, hardware)
    assert (spec.intra.host_link, spec.intra.sockets) == ("nvlink-c2c", sockets)


def test_a_pcie_hosted_gpu_is_left_as_written(catalog):
    hardware = {
        "gpu": "h100-sxm",
        "nodes": 1,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink4"},
        "net": None,
    }
    spec = spec_of(catalog, hardware)
    assert (spec.intra.host_link, spec.intra.sockets) == (None, None)


def test_nccl_sees_the_grace_between_gpu_and_nic(catalog):
    """With the implied NVLink-C2C host the NIC is a PCIe hop behind the Grace (NCCL's PHB
    before 2.27), so NCCL 2.23 runs no LL128 across nodes, as on the written-out spec."""
    fabric = build_fabric(spec_of(catalog, quad()), catalog)
    group = Group(fabric, list(range(8)), library_version=(2, 23, 4))
    written = build_fabric(spec_of(catalog, quad(host_link="nvlink-c2c", sockets=4)), catalog)
    same = Group(written, list(range(8)), library_version=(2, 23, 4))
    assert group.nic_path == same.nic_path == "c2c"
