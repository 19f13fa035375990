"""Collectives at scale: NCCL's release-dependent defaults and the physics of large groups.

Each case is computed by hand from the rule it checks (NCCL source lines are named in the
functions' docstrings), on fabrics built from small hardware blocks of the real catalog.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.collectives import (
    LL128_OVER_C2C_SINCE,
    ll128_over_network,
    network_protocols,
    nic_path,
    parse_library_version,
)
from fabricui.engine.group import Group
from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument


def fabric_of(catalog, hardware: dict):
    """A fabric from a compact ``hardware`` block (the measurement files' form)."""
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, default_id="t")
    return build_fabric(spec, catalog)


#: Two quad-GH200 nodes as on Alps: each GPU joins its Grace over NVLink-C2C and its NIC
#: hangs off the Grace's PCIe.
GH200_2 = {
    "gpu": "gh200",
    "nodes": 2,
    "gpus_per_node": 4,
    "intra": {
        "fabric": "mesh",
        "link": "nvlink4",
        "links_per_pair": 6,
        "sockets": 4,
        "host_link": "nvlink-c2c",
    },
    "net": {"link": "slingshot", "gbps": 200, "nics_per_node": 4},
}
#: Two 8x H100 servers: each NIC shares a PCIe switch with two GPUs.
H100_2 = {
    "gpu": "h100-sxm",
    "nodes": 2,
    "gpus_per_node": 8,
    "intra": {"fabric": "nvswitch", "link": "nvlink4"},
    "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 8},
}
#: Two PCIe boxes without switches: GPUs and NIC on the CPU's root ports.
PCIE_2 = {
    "gpu": "l40s",
    "nodes": 2,
    "gpus_per_node": 2,
    "intra": {"fabric": "pcie", "link": "pcie4"},
    "net": {"link": "roce", "gbps": 100, "nics_per_node": 1},
}


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.23.4-1 (uenv nccl-tests/nccl-2.23.4-1-aws-1.13.0:v0)", (2, 23, 4)),
        ("2.29.2+cuda13.1 (printed)", (2, 29, 2)),
        ("not printed (README example since June 2023)", None),
        (None, None),
        ("", None),
    ],
)
def test_library_version_is_the_first_release_number(text, version):
    """Version strings of the measurement files name their release first or not at all."""
    assert parse_library_version(text) == version


def test_nic_paths_follow_where_the_nic_hangs(catalog):
    """A Grace's NIC is reached over C2C (NCCL's P2C), an HGX NIC through a PCIe switch
    (PXB), a switchless PCIe box's NIC through the CPU's root complex (PHB)."""
    assert nic_path(Group(fabric_of(catalog, GH200_2), np.arange(8))) == "c2c"
    assert nic_path(Group(fabric_of(catalog, H100_2), np.arange(16))) == "pci"
    assert nic_path(Group(fabric_of(catalog, PCIE_2), np.arange(4))) == "host"


def test_ll128_through_a_grace_needs_nccl_2_27(catalog):
    """NCCL 2.23-2.26 disable LL128 on a PHB path, which a Grace's NIC is before 2.27 made
    it P2C; from 2.27 (and for an unknown release, taken as current) LL128 stays."""
    fabric = fabric_of(catalog, GH200_2)
    old = Group(fabric, np.arange(8), library_version=(2, 23, 4))
    new = Group(fabric, np.arange(8), library_version=LL128_OVER_C2C_SINCE)
    current = Group(fabric, np.arange(8))
    assert not ll128_over_network(old)
    assert ll128_over_network(new) and ll128_over_network(current)
    assert network_protocols(old, ("ll", "ll128", "simple")) == ("ll", "simple")
    assert network_protocols(new, ("ll", "ll128", "simple")) == ("ll", "ll128", "simple")
    # Within one node the network path does not matter.
    inside = Group(fabric, np.arange(4), library_version=(2, 23, 4))
    assert network_protocols(inside, ("ll", "ll128", "simple")) == ("ll", "ll128", "simple")


def test_ll128_never_crosses_a_host_bridge(catalog):
    """A NIC on the CPU's root complex (PHB) disables LL128 in every release; one behind a
    PCIe switch keeps it in every release."""
    host = Group(fabric_of(catalog, PCIE_2), np.arange(4), library_version=(2, 30, 7))
    assert not ll128_over_network(host)
    hgx = Group(fabric_of(catalog, H100_2), np.arange(16), library_version=(2, 18, 3))
    assert ll128_over_network(hgx)
