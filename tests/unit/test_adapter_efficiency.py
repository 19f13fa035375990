"""An adapter's own bulk efficiency (``NicSpec.efficiency``): where a cloud adapter's
transport, not its wire, decides how much of the line rate bulk transfers get, the fabric's
network links carry the adapter's figure instead of the link generation's."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.collectives import predict
from fabricui.engine.group import Group
from fabricui.errors import HwdbError
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog, shipped_hwdb_dirs
from fabricui.hwdb.overlay import apply_overlay, parse_overlay
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument, parse_yaml
from fabricui.services.session import collective_algorithms


def efa_nodes(gpu: str, gbps: int, nics: int, nodes: int = 2) -> dict:
    return {
        "gpu": gpu,
        "nodes": nodes,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink5" if gpu == "b200" else "nvlink3"},
        "net": {"link": "efa", "gbps": gbps, "nics_per_node": nics},
    }


def fabric_of(catalog, hardware: dict):
    spec = parse_topology(YamlDocument(data=hardware, origin="test"), catalog, default_id="t")
    return build_fabric(spec, catalog)


def network_efficiency(fabric) -> set[float]:
    gen = fabric.generations.index("efa")
    return {round(float(e), 6) for e in fabric.link_eff[fabric.link_gen == gen]}


def test_each_efa_generation_carries_its_own_efficiency(catalog):
    """First-generation EFA (A100 instances) keeps the link's 0.84; EFAv4 (400 Gb/s, P6)
    its own 0.95; the NVLink links keep their generation's figure either way."""
    a100 = fabric_of(catalog, efa_nodes("a100-sxm4-80gb", 100, 4))
    b200 = fabric_of(catalog, efa_nodes("b200", 400, 8))
    assert network_efficiency(a100) == {catalog.links["efa"].efficiency} == {0.84}
    assert network_efficiency(b200) == {catalog.nics["efa-v4"].efficiency} == {0.95}
    nvlink = b200.generations.index("nvlink5")
    assert set(b200.link_eff[b200.link_gen == nvlink]) == {catalog.links["nvlink5"].efficiency}


def test_a_ring_across_efav4_instances_runs_at_the_adapters_rate(catalog):
    """Hand-computed: a ring's busbw across 4 instances is bounded by each node's 8 x 400 Gb/s
    at 0.95 = 380 GB/s, and at 16 GiB the latency terms are under 2% of the time."""
    fabric = fabric_of(catalog, efa_nodes("b200", 400, 8, nodes=4))
    group = Group(
        fabric,
        np.arange(32),
        library_version=(2, 27, 7),
        nccl_env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"},
    )
    busbw = predict(group, "all_reduce", [2.0**34], collective_algorithms()).busbw_GBps[0]
    bound = 8 * 400 / 8 * 0.95
    assert bound * 0.97 < busbw <= bound


def test_a_calibrated_link_efficiency_replaces_the_adapters(catalog):
    """A fitted efficiency of the ``efa`` link is what every EFA network carries afterwards,
    the adapters' own figures included; a fitted latency alone leaves them."""
    fitted = apply_overlay(catalog, parse_overlay(overlay("efa: {efficiency: 0.5}")))
    assert network_efficiency(fabric_of(fitted, efa_nodes("b200", 400, 8))) == {0.5}
    assert fitted.nics["efa-v4"].efficiency is None
    latency_only = apply_overlay(catalog, parse_overlay(overlay("efa: {lat_us: 1.0}")))
    assert latency_only.nics["efa-v4"] is catalog.nics["efa-v4"]


def overlay(entry: str) -> YamlDocument:
    return parse_yaml(f"links:\n  {entry}\n", "cal.yaml")


def test_an_adapter_efficiency_out_of_range_is_one_line(tmp_path):
    """A user's NIC record with an efficiency above 1 names the file, line and field."""
    (tmp_path / "nics.yaml").write_text(
        "nics:\n"
        "- id: my-nic\n"
        "  name: My NIC\n"
        "  link: ib-ndr\n"
        "  ports: 1\n"
        "  rate_Gbps: 400\n"
        "  pcie: pcie5\n"
        "  lat_us: 1.0\n"
        "  efficiency: 1.5\n"
        "  source: https://example.com\n"
    )
    with pytest.raises(HwdbError, match=r"nics.yaml:9: .*efficiency.*between 0.01 and 1"):
        load_catalog([*shipped_hwdb_dirs(), tmp_path])
