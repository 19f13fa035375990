"""ibstat / ibv_devinfo / ibdev2netdev and rocm-smi --showtopo samples and variants."""

from __future__ import annotations

import pytest
from _topo_samples import listing, sample_text

from fabricui.importers import ibstat, rocm_smi
from fabricui.importers.common import ParseError

FOLDER = "ib_rocm"
IB_SAMPLES = {
    "ibdev2netdev_h100_cx7_ib_plus_cx6_eth_imbue.txt",
    "ibstat_partial_redacted_with_ibpanic_gpud_752.txt",
    "ibv_devinfo_mlx4_0_roce_dualport_tf_gdr.txt",
}
ROCM_SAMPLES = {
    "amd_8gpu_xgmi_weight15_hops1_vllm_53900.txt",
    "rocm_smi_showtopo_4gpu_pcie_rocm_smi_lib_108.txt",
}


def test_every_sample_has_an_importer_and_a_test():
    """Each file of the folder is covered below (a new one fails here)."""
    names = set(listing(FOLDER))
    if not names:
        pytest.fail("topology samples not found under tests/data/topo")
    assert names == IB_SAMPLES | ROCM_SAMPLES


def needs(name: str) -> None:
    if name not in listing(FOLDER):
        pytest.fail("topology samples not found under tests/data/topo")


def test_ibstat_redacted_with_ibpanic():
    """The port is read; the elided start, the redacted values and the error line are gaps."""
    name = "ibstat_partial_redacted_with_ibpanic_gpud_752.txt"
    needs(name)
    r = ibstat.parse(sample_text(FOLDER, name))
    assert r.sources == ["ibstat"] and [h.name for h in r.hcas] == ["mlx5_7"]
    port = r.hcas[0].ports[0]
    assert (port.port, port.state, port.physical_state) == (1, "Active", "LinkUp")
    assert (port.rate_gbps, port.link_layer) == (200.0, "InfiniBand")
    assert (port.lid, port.sm_lid) == (13305, 1)
    assert r.hcas[0].firmware is None and r.hcas[0].ports_declared == 1
    assert len(r.warnings) == 3
    assert "output starts with '...'" in r.warnings[0]
    assert "redacted as '...': CA type" in r.warnings[1] and "Firmware version" in r.warnings[1]
    assert "ibpanic" in r.warnings[2] and "mlx5_8 is missing from the list" in r.warnings[2]
    assert r.suggested_net() == "ib-hdr:200"
    data = r.to_json()
    assert data["format"] == "ibstat" and data["hcas"][0]["ports"][0]["rate_gbps"] == 200.0


def test_ibv_devinfo_dual_port_roce():
    """Tab-aligned ibv_devinfo: two Ethernet (RoCE) ports, colon GUID normalised, no rate."""
    name = "ibv_devinfo_mlx4_0_roce_dualport_tf_gdr.txt"
    needs(name)
    r = ibstat.parse(sample_text(FOLDER, name))
    hca = r.hcas[0]
    assert r.sources == ["ibv_devinfo"] and hca.name == "mlx4_0"
    assert hca.node_guid == "0x248a070300f63370" and hca.firmware == "2.40.7000"
    assert hca.ca_type == "4099" and hca.ports_declared == 2
    assert [(p.port, p.state, p.link_layer, p.lid) for p in hca.ports] == [
        (1, "Active", "Ethernet", 0),
        (2, "Active", "Ethernet", 0),
    ]
    assert r.warnings == ["no port rate for mlx4_0 (ibv_devinfo prints it only with -v)"]
    assert r.suggested_net() is None


def test_ibdev2netdev_column_t_with_comments():
    """12 HCAs in natural order with netdevs, (Up)/(Down), comments; the gaps are stated."""
    name = "ibdev2netdev_h100_cx7_ib_plus_cx6_eth_imbue.txt"
    needs(name)
    r = ibstat.parse(sample_text(FOLDER, name))
    assert [h.name for h in r.hcas] == [f"mlx5_{i}" for i in range(12)]
    first = r.hcas[0].ports[0]
    assert (first.netdev, first.netdev_up, first.link_layer) == ("ibp26s0", False, "InfiniBand")
    assert first.comment == "CX-7 1/8 infiniband"
    eth = r.hcas[1].ports[0]
    assert (eth.netdev, eth.netdev_up, eth.link_layer) == ("enp27s0f0np0", True, "Ethernet")
    assert len(r.warnings) == 2
    assert "no port state or rate" in r.warnings[0]
    assert "inferred from interface names" in r.warnings[1]


def test_ibv_devinfo_verbose_rate():
    """``ibv_devinfo -v`` gives the rate as active width x active speed."""
    text = (
        "hca_id:\tmlx5_0\n\tphys_port_cnt:\t\t1\n\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tactive_width:\t\t4X (2)\n"
        "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n\t\t\tlink_layer:\t\tInfiniBand\n"
    )
    r = ibstat.parse(text)
    assert r.hcas[0].ports[0].rate_gbps == 400.0 and r.warnings == []
    assert r.suggested_net() == "ib-ndr:400"


def test_ibstat_tabs_expanded_two_cas_and_a_cut():
    """ibstat with tabs expanded to spaces; a CA announcing 2 ports but listing 1 is stated."""
    text = (
        "CA 'mlx5_0'\n        CA type: MT4129\n        Number of ports: 2\n"
        "        Port 1:\n                State: Down\n                Rate: 400\n"
        "                Link layer: InfiniBand\n"
        "CA 'mlx5_1'\n        Number of ports: 1\n        Port 1:\n"
        "                State: Active\n                Rate: 100\n"
        "                Link layer: Ethernet\n"
    )
    r = ibstat.parse(text)
    assert [h.name for h in r.hcas] == ["mlx5_0", "mlx5_1"]
    assert r.hcas[0].ca_type == "MT4129"
    assert r.warnings == ["mlx5_0: 2 ports announced, 1 listed (truncated?)"]
    assert r.suggested_net() == "roce:100"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", "use `fabricui import nvidia-smi"),
        ("CA 'mlx5_0'\n\tCA type: MT4123\n", "without any port"),
        ("nothing here\n", "no `ibstat`, `ibv_devinfo` or `ibdev2netdev` output found"),
    ],
)
def test_ibstat_refuses(text: str, message: str):
    """Other formats, and a listing cut before its first port, are refused."""
    with pytest.raises(ParseError) as exc:
        ibstat.parse(text)
    assert message in str(exc.value)


def test_rocm_8gpu_xgmi_excerpt():
    """The untitled weight matrix, the cut hops matrix, the missing link types are all stated;
    weight 15 is read as one XGMI hop."""
    name = "amd_8gpu_xgmi_weight15_hops1_vllm_53900.txt"
    needs(name)
    r = rocm_smi.parse(sample_text(FOLDER, name))
    assert r.gpus == [f"GPU{i}" for i in range(8)] and len(r.links) == 28
    assert r.links[0] == {"a": "GPU0", "b": "GPU1", "kind": "XGMI", "weight": 15, "hops": 1}
    assert r.links[-1] == {"a": "GPU6", "b": "GPU7", "kind": "XGMI", "weight": 15, "hops": None}
    assert len(r.warnings) == 5
    assert "no title: taken as the weight matrix" in r.warnings[0]
    assert "hops matrix truncated: rows GPU1..GPU7 missing" in r.warnings[1]
    assert "no link type matrix" in r.warnings[2]
    assert "28 pairs of weight 15 taken as one XGMI hop" in r.warnings[3]
    assert "no Numa Nodes block" in r.warnings[4]
    assert set(r.to_json()) == {"format", "gpus", "links", "numa"}


def test_rocm_4gpu_pcie():
    """Weight 52, hops 3, PCIE between all pairs; the cut Numa Nodes block is stated."""
    name = "rocm_smi_showtopo_4gpu_pcie_rocm_smi_lib_108.txt"
    needs(name)
    r = rocm_smi.parse(sample_text(FOLDER, name))
    assert r.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert {(x["kind"], x["weight"], x["hops"]) for x in r.links} == {("PCIE", 52, 3)}
    assert r.warnings == [
        "Numa Nodes block is empty (the output is cut off): NUMA placement unknown"
    ]


def test_rocm_numa_block():
    """The per-GPU NUMA lines are read."""
    text = (
        "=== Link Type between two GPUs ===\n       GPU0         GPU1\n"
        "GPU0   0            XGMI\nGPU1   XGMI         0\n"
        "=== Numa Nodes ===\nGPU[0]\t\t: (Topology) Numa Node: 0\n"
        "GPU[0]\t\t: (Topology) Numa Affinity: 0\nGPU[1]\t\t: (Topology) Numa Node: 1\n"
    )
    r = rocm_smi.parse(text)
    assert r.numa == {"GPU0": 0, "GPU1": 1}
    assert r.links == [{"a": "GPU0", "b": "GPU1", "kind": "XGMI", "weight": None, "hops": None}]
    assert r.warnings == ["no weight matrix in the input", "no hops matrix in the input"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n", "use `fabricui import nvidia-smi"),
        ("just words\n", "no `rocm-smi --showtopo` output found"),
    ],
)
def test_rocm_refuses(text: str, message: str):
    """nvidia-smi matrices and text without a matrix are refused."""
    with pytest.raises(ParseError) as exc:
        rocm_smi.parse(text)
    assert message in str(exc.value)


def test_a_hundred_thousand_ports_parse_in_linear_time():
    """Ports are found through an index, not a scan per line: ten times the ports take about
    ten times as long (a scan per line would take a hundred), measured against a dump a tenth
    the size in the same run so that a loaded machine slows both alike."""
    import time

    def dump(n: int) -> str:
        ports = "".join(
            f"\tPort {i}:\n\t\tState: Active\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n"
            for i in range(1, n + 1)
        )
        return f"CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: {n}\n{ports}"

    def parse_s(text: str, ports: int) -> float:
        started = time.perf_counter()
        result = ibstat.parse(text)
        elapsed = time.perf_counter() - started
        assert len(result.hcas[0].ports) == ports
        return elapsed

    small, large = dump(10_000), dump(100_000)
    baseline_s = min(parse_s(small, 10_000) for _ in range(3))
    assert parse_s(large, 100_000) < 30 * baseline_s
