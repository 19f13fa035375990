"""What a topology leaves out, built as the hardware is built: a superchip's host side
(the GPU record's ``host_link`` and ``gpus_per_cpu``) and a network's layout (the link
record's ``layout``)."""

from __future__ import annotations

import pytest

from fabricui.engine.group import Group
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
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


def test_a_slingshot_network_is_a_dragonfly_unless_stated(catalog):
    """Slingshot's record says its routers form a dragonfly: a network that states no
    layout is built as one (routers, no leaf/spine); a stated layout and other links'
    networks are left as written."""
    implied = spec_of(catalog, quad())
    assert implied.net.layout == "dragonfly"
    fabric = build_fabric(implied, catalog)
    assert fabric.net_family == "slingshot"
    stated = quad()
    stated["net"] = {**stated["net"], "layout": "leaf-spine"}
    assert spec_of(catalog, stated).net.layout == "leaf-spine"
    infiniband = {
        "gpu": "h100-sxm",
        "nodes": 2,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink4"},
        "net": {"link": "ib-ndr", "gbps": 400, "nics_per_node": 8},
    }
    assert spec_of(catalog, infiniband).net.layout == "auto"


def test_a_link_record_names_only_a_switched_layout(tmp_path):
    """A network link whose record names a layout the builder cannot pick by itself is a
    one-line error naming the file and key."""
    from fabricui.errors import HwdbError

    records = tmp_path / "links.yaml"
    records.write_text(
        "links:\n"
        "- id: my-net\n  name: my net\n  family: ethernet\n  tier: scale-out\n"
        "  bw_GBps: 50.0\n  lat_us: 1.0\n  efficiency: 0.9\n  layout: torus\n"
        "  source: https://example.org\n",
        encoding="utf-8",
    )
    with pytest.raises(HwdbError) as exc:
        load_catalog([*shipped_hwdb_dirs(), tmp_path])
    text = str(exc.value)
    assert "\n" not in text and "links.yaml" in text and "layout" in text
