"""Which NIC of the fabric an ``ibstat`` port is: a graph file's cabling says it; counting
adapters does not when the host lists more than it has NICs (a DGX A100's two storage
HCAs), so that port is named in one line and the fabric is left as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from _ibstat import ibstat_text

from fabricui.fabric.health import health_of
from fabricui.services.health import report_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

#: The compute HCAs of the host, in the order of its rails (mlx5_4 and mlx5_5 are storage).
COMPUTE = (0, 1, 2, 3, 6, 7, 8, 9)

RAILS = [f"R{k}" for k in range(8)]
TOPOLOGY = f"""id: rails
gpu: a100-sxm4-80gb
nodes: 2
gpus_per_node: 8
nodes_settable: false
intra: {{fabric: nvswitch, link: nvlink3, sockets: 2, pcie_switches: 4}}
net: {{link: ib-hdr, gbps: 200, nics_per_node: 8, layout: explicit}}
cluster:
  switches: [{", ".join(r + " leaf" for r in RAILS)}, S1 spine]
  hosts: [h1 {" ".join(RAILS)}, h2 {" ".join(RAILS)}]
  cables: [{", ".join(r + " S1 1 200" for r in RAILS)}]
"""


def _ibstat(path: Path, hcas: range | tuple[int, ...], down: int) -> str:
    """An ``ibstat`` of one-port HDR adapters ``mlx5_<k>``, ``mlx5_<down>`` down."""
    path.write_text(ibstat_text(hcas, down={down}, rate_Gbps=200, ca_type="MT4123", guids=True))
    return str(path)


def _ibnetdiscover(path: Path) -> str:
    """h1's compute HCAs, each cabled to port 5 of its rail's leaf."""
    lines = []
    for k, hca in enumerate(COMPUTE):
        lines += [
            f'Switch  36 "S-{0xA00 + k:016x}"   # "R{k}" base port 0 lid {100 + k} lmc 0',
            f'[5]  "H-{0xB00 + k:016x}"[1]({0xB00 + k:x})   # "h1 mlx5_{hca}" lid {200 + k} 4xHDR',
            "",
            f'Ca  1 "H-{0xB00 + k:016x}"   # "h1 mlx5_{hca}"',
            f'[1]({0xB00 + k:x})  "S-{0xA00 + k:016x}"[5]   # lid {200 + k} lmc 0 "R{k}" lid '
            f"{100 + k} 4xHDR",
            "",
        ]
    path.write_text("\n".join(lines))
    return str(path)


@pytest.fixture
def topology(tmp_path: Path) -> str:
    path = tmp_path / "rails.yaml"
    path.write_text(TOPOLOGY)
    return str(path)


def test_more_adapters_than_nics_is_not_guessed(catalog, topology, tmp_path):
    """10 HCAs on a host of 8 NICs, mlx5_6 down: which NIC it is cannot be told by
    counting, so nothing is removed and one line says what to give."""
    health = (_ibstat(tmp_path / "h1.txt", range(10), down=6),)
    fabric = load_fabric(TopologyRequest(topology, health=health), catalog)
    overlay = health_of(fabric)
    assert overlay is not None and overlay.changes == ()
    assert overlay.unmatched == (
        "ibstat h1.txt: cannot tell which NIC mlx5_6 is on h1 (10 HCA ports, 8 NICs): give "
        "iblinkinfo or ibnetdiscover output with it",
    )
    assert fabric.n_links == load_fabric(TopologyRequest(topology), catalog).n_links


def test_the_cabling_says_which_nic_the_adapter_is(catalog, topology, tmp_path):
    """With ibnetdiscover output naming mlx5_6's cable to R4, mlx5_6 down removes h1.nic4
    (not nic6, its place among the 10 adapters), and h1's GPU 4 moves to another NIC."""
    health = (
        _ibstat(tmp_path / "h1.txt", range(10), down=6),
        _ibnetdiscover(tmp_path / "net.txt"),
    )
    fabric = load_fabric(TopologyRequest(topology, health=health), catalog)
    overlay = health_of(fabric)
    assert overlay is not None and overlay.unmatched == ()
    assert [(c.kind, c.label) for c in overlay.changes] == [("down", "h1.nic4 (h1 mlx5_6) -> R4")]
    assert fabric.device_name(int(fabric.gpu_nic[4])) != "h1.nic4"


def test_as_many_adapters_as_nics_are_the_nics_in_order(catalog, topology, tmp_path):
    """8 HCAs on a host of 8 NICs: the 5th adapter in name order is nic4."""
    health = (_ibstat(tmp_path / "h1.txt", COMPUTE, down=6),)
    overlay = health_of(load_fabric(TopologyRequest(topology, health=health), catalog))
    assert overlay is not None
    assert [c.label for c in overlay.changes] == ["h1.nic4 (h1 mlx5_6) -> R4"]


def test_the_topologys_adapter_names_say_which_nic_the_adapter_is(catalog, tmp_path):
    """``net.adapters`` names the compute HCAs: the 10-adapter ibstat's mlx5_6 is NIC 4."""
    adapters = ", ".join(f"mlx5_{k}" for k in COMPUTE)
    path = tmp_path / "rails.yaml"
    path.write_text(
        TOPOLOGY.replace("layout: explicit}", f"layout: explicit, adapters: [{adapters}]}}")
    )
    health = (_ibstat(tmp_path / "h1.txt", range(10), down=6),)
    overlay = health_of(load_fabric(TopologyRequest(str(path), health=health), catalog))
    assert overlay is not None and overlay.unmatched == ()
    assert [(c.kind, c.label) for c in overlay.changes] == [("down", "h1.nic4 (h1 mlx5_6) -> R4")]


def test_an_imported_cluster_keeps_its_hosts_adapter_names(run_cli, tmp_path):
    """Every host naming its cabled ports alike: the import writes them as net.adapters."""
    out = tmp_path / "imported.yaml"
    graph = _ibnetdiscover(tmp_path / "fabric.txt")
    status, _, err = run_cli("import", "ibnetdiscover", graph, "--node", "dgx-a100", "-o", str(out))
    assert status == 0, err
    names = ", ".join(f"mlx5_{k}" for k in COMPUTE)
    assert f"  adapters: [{names}]\n" in out.read_text()


def test_a_cluster_cabled_at_its_adapters_second_ports_names_none(run_cli, tmp_path):
    """Each host's cable on its adapters' port 2: --health takes a named device's first port
    for its NIC, so the import writes no net.adapters (the ports go in order)."""
    out = tmp_path / "imported.yaml"
    graph = Path(_ibnetdiscover(tmp_path / "fabric.txt"))
    text = graph.read_text().replace('"[1](', '"[2](')
    graph.write_text(
        "\n".join(
            f"[2]{line[3:]}" if line.startswith("[1](") else line for line in text.split("\n")
        )
    )
    status, _, err = run_cli(
        "import", "ibnetdiscover", str(graph), "--node", "dgx-a100", "-o", str(out)
    )
    assert status == 0, err
    assert "adapters:" not in out.read_text()


def test_a_dgx_a100_ibstat_is_matched_to_its_nics_by_device_name(catalog, tmp_path):
    """dgx-a100 names its compute HCAs (``net.adapters``): an ibstat of all 12 of a DGX
    A100's HCAs with mlx5_7 down takes n1.nic5's cable (GPU 5's NIC) down, and mlx5_4 down
    (a storage HCA) is none of the fabric's. (The shared samples hold no DGX A100 ibstat:
    the A100 one is an Azure VM's eight VFs, so the output is built here.)"""
    health = (_ibstat(tmp_path / "n1.txt", range(12), down=7),)
    overlay = health_of(load_fabric(TopologyRequest("dgx-a100", 2, health=health), catalog))
    assert overlay is not None and overlay.unmatched == ()
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic5 (n1 mlx5_7) -> leaf0")
    ]
    storage = (_ibstat(tmp_path / "n1.txt", range(12), down=4),)
    fabric = load_fabric(TopologyRequest("dgx-a100", 2, health=storage), catalog)
    overlay = health_of(fabric)
    assert overlay is not None and overlay.changes == ()
    report = report_of(fabric)
    assert report is not None
    (storage_port,) = [f for f in report.findings if f.where == "mlx5_4 port 1"]
    assert storage_port.fix.endswith(
        "--health does not apply it: mlx5_4 is none of the host's NICs in this topology "
        "(net.adapters: mlx5_0, mlx5_1, mlx5_2, mlx5_3 ...)"
    )


def test_a_dgx_a100_that_lost_a_compute_hca_at_boot_is_said_and_not_placed_by_name(
    catalog, tmp_path
):
    """mlx5_2 lost at boot, the storage HCAs on Ethernet: every later device moved down one
    name, so mlx5_3 and mlx5_9 (NIC names) are Ethernet storage ports now, and the listing
    has 7 InfiniBand ports for 8 NICs. Said in one note; no NIC is taken down: not for the
    Ethernet port down (a storage cable, named mlx5_3), nor for the InfiniBand one (mlx5_5,
    the old mlx5_6: which NIC it is the names no longer say)."""
    # The 11 HCAs left, renamed in order: the old mlx5_4, 5, 10 and 11 (storage) are
    # mlx5_3, 4, 9 and 10 now.
    ethernet = {3, 4, 9, 10}
    text = ibstat_text(range(11), down={3, 5}, rate_Gbps=200, ca_type="MT4123")
    blocks = text.split("CA 'mlx5_")
    text = blocks[0] + "".join(
        "CA 'mlx5_"
        + (b.replace("InfiniBand", "Ethernet") if int(b.split("'")[0]) in ethernet else b)
        for b in blocks[1:]
    )
    path = tmp_path / "n1.txt"
    path.write_text(text)
    fabric = load_fabric(TopologyRequest("dgx-a100", 2, health=(str(path),)), catalog)
    overlay, report = health_of(fabric), report_of(fabric)
    assert overlay is not None and report is not None
    assert overlay.changes == ()
    assert report.notes == [
        "n1.txt: mlx5_3 (NIC 3 in net.adapters) and mlx5_9 (NIC 7 in net.adapters) are ports "
        "of Ethernet in n1's device listing, not of InfiniBand as the other NICs, and the "
        "listing has 7 InfiniBand ports for 8 NICs: an HCA the driver does not list (dead, "
        "unseated, or its driver failed to load) carries no traffic, but the kernel names "
        "devices in the order it finds them, so after a lost HCA every later name moves down "
        "by one and which NIC is gone cannot be told from the names: every NIC is priced up, "
        "and n1's ports are not placed by name (give iblinkinfo or ibnetdiscover output with "
        "it)"
    ]
    (storage,) = [f for f in report.findings if f.where == "mlx5_3 port 1"]
    assert storage.fix.endswith(
        "--health does not apply it: an Ethernet port beside the host's InfiniBand NICs, "
        "none of the fabric's"
    ), storage.fix
    (compute,) = [f for f in report.findings if f.where == "mlx5_5 port 1"]
    assert compute.fix.endswith(
        "--health does not apply it: mlx5_3 (NIC 3 in net.adapters) and mlx5_9 (NIC 7 in "
        "net.adapters) are ports of Ethernet in n1's device listing, not of InfiniBand as the "
        "other NICs, so the names may have moved: which NIC this port is cannot be told (give "
        "iblinkinfo or ibnetdiscover output with it)"
    ), compute.fix
