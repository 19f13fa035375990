"""``--health`` reads a pdsh/clush/dshbak listing of many hosts' ``ibstat`` as each host's own
output; the doctor says which host a finding is on; ``import`` refuses such a listing in one
line; and a host's Ethernet port beside its InfiniBand NICs is said not to be applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.fabric.health import health_of
from fabricui.services.health import read_health, report_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

DATA = Path(__file__).resolve().parents[1] / "data" / "health" / "infiniband"
IBSTAT = DATA / "ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt"


def _ibstat(down_first: bool = False) -> str:
    """The real H100 node's ibstat (the collector's header left out); with its first port
    (mlx5_0, InfiniBand) down when asked."""
    text = "".join(IBSTAT.read_text().splitlines(keepends=True)[2:]).rstrip("\n") + "\n"
    if down_first:
        at = text.index("State: Active", text.index("CA 'mlx5_0'"))
        text = text[:at] + "State: Down" + text[at + len("State: Active") :]
    return text


def _pdsh(parts: dict[str, str]) -> str:
    return "".join(
        "".join(f"{host}: {line}\n" if line else f"{host}:\n" for line in text.rstrip().split("\n"))
        for host, text in parts.items()
    )


def _dshbak(parts: dict[str, str]) -> str:
    return "$ pdsh -w n[0-1] ibstat | dshbak\n" + "".join(
        f"----------------\n{host}\n----------------\n{text}" for host, text in parts.items()
    )


@pytest.mark.parametrize("listing", [_pdsh, _dshbak])
def test_each_hosts_part_is_that_hosts_ibstat(catalog, tmp_path, listing):
    path = tmp_path / "ibstat-all.txt"
    path.write_text(listing({"n0": _ibstat(), "n1": _ibstat(down_first=True)}))
    request = TopologyRequest("h100-ib-cluster", 2, health=(str(path),))
    fabric = load_fabric(request, catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic0 (n1 mlx5_0) -> leaf0")
    ]
    report = report_of(fabric)
    assert report is not None
    assert [i.name for i in report.inputs] == ["ibstat-all.txt (n0)", "ibstat-all.txt (n1)"]


def test_the_doctor_names_the_host_of_each_finding(run_cli, tmp_path):
    path = tmp_path / "ibstat-all.txt"
    path.write_text(_pdsh({"n0": _ibstat(), "n1": _ibstat(down_first=True)}))
    status, out, _ = run_cli(
        "doctor", "--health", str(path), "-t", "h100-ib-cluster", "--nodes", "2"
    )
    assert status == 0
    assert "port-down (mlx5_0 port 1 in ibstat-all.txt (n1)): down:" in out


def test_ports_of_another_link_layer_are_none_of_the_fabrics(run_cli, tmp_path):
    """Without the devices named (net.adapters), the host's ports of its NICs' link layer
    are its NICs: the CX-6 Dx Ethernet ports beside InfiniBand say they are not applied."""
    spec = tmp_path / "pod.yaml"
    spec.write_text(
        "gpu: h100-sxm\nnodes: 2\ngpus_per_node: 8\n"
        "intra: {fabric: nvswitch, link: nvlink4}\n"
        "net: {link: ib-ndr, gbps: 400, nics_per_node: 8}\n"
    )
    path = tmp_path / "n1.txt"
    path.write_text(_ibstat())
    status, out, _ = run_cli("doctor", "--health", str(path), "-t", str(spec))
    assert status == 0
    lines = out.splitlines()
    fix = lines[lines.index(next(x for x in lines if "(mlx5_2 port 1)" in x)) + 1]
    assert fix.endswith(
        "--health does not apply it: an Ethernet port beside the host's InfiniBand NICs, "
        "none of the fabric's"
    )


def test_import_refuses_a_listing_of_several_hosts(run_cli, tmp_path):
    path = tmp_path / "ibstat-all.txt"
    path.write_text(_dshbak({"n0": _ibstat(), "n1": _ibstat()}))
    status, out, err = run_cli("import", str(path))
    assert status == 2 and out == ""
    assert err.strip() == (
        f"fabricui: error: {path}: 2 hosts' ibstat outputs (a pdsh, clush or dshbak listing: "
        "n0, n1): `--health FILE` reads it host by host; `fabricui import` reads one host's "
        "output"
    )


def test_a_topology_naming_its_nics_devices_places_each_port(catalog, tmp_path):
    """DGX H100 nodes name their NICs' devices (net.adapters, the user guide's table): with
    InfiniBand storage ports too (nine InfiniBand ports for eight NICs) mlx5_4 is still GPU
    2's NIC, and the storage port is said to be none of the fabric's."""
    text = _ibstat()
    at = text.index("Link layer: Ethernet", text.index("CA 'mlx5_1'"))
    text = text[:at] + "Link layer: InfiniBand" + text[at + len("Link layer: Ethernet") :]
    at = text.index("State: Active", text.index("CA 'mlx5_4'"))
    text = text[:at] + "State: Down" + text[at + len("State: Active") :]
    path = tmp_path / "n1.txt"
    path.write_text(text)
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog, report_health=False
    )
    overlay = health_of(fabric)
    assert overlay is not None
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic2 (n1 mlx5_4) -> leaf2")
    ]
    report = report_of(fabric)
    assert report is not None
    (eth,) = [f for f in report.findings if f.where == "mlx5_2 port 1"]
    assert eth.fix.endswith(
        "--health does not apply it: mlx5_2 is none of the host's NICs in this topology "
        "(net.adapters: mlx5_0, mlx5_3, mlx5_4, mlx5_5 ...)"
    )


@pytest.mark.parametrize(
    ("adapters", "problem"),
    [
        ("[mlx5_0, mlx5_1]", "needs one device name per NIC (8), got 2"),
        (
            "[mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_0]",
            "mlx5_0 is named twice",
        ),
        ("[mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, 'a b']", "not a device name"),
    ],
)
def test_adapters_that_are_not_one_name_per_nic_are_refused(run_cli, tmp_path, adapters, problem):
    spec = tmp_path / "pod.yaml"
    spec.write_text(
        "gpu: h100-sxm\nnodes: 2\ngpus_per_node: 8\n"
        "intra: {fabric: nvswitch, link: nvlink4}\n"
        f"net:\n  link: ib-ndr\n  nics_per_node: 8\n  adapters: {adapters}\n"
    )
    status, _, err = run_cli("hwdb", "validate", str(spec))
    assert status == 2
    assert err.count("\n") == 1 and "net.adapters" in err and problem in err
    assert f"{spec}:" in err


def test_a_host_whose_part_no_importer_reads_is_said_and_the_others_read(catalog, tmp_path):
    """The first host's part is what ssh said (pdsh ... 2>&1): the listing is still read
    host by host, and that host's part is one warning line quoting it."""
    path = tmp_path / "ibstat-all.txt"
    refused = "ssh: connect to host n0 port 22: Connection refused"
    path.write_text(f"n0: {refused}\n" + _pdsh({"n1": _ibstat(down_first=True)}))
    request = TopologyRequest("h100-ib-cluster", 2, health=(str(path),))
    fabric = load_fabric(request, catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None
    assert [c.label for c in overlay.changes] == ["n1.nic0 (n1 mlx5_0) -> leaf0"]
    report = report_of(fabric)
    assert report is not None
    assert report.warnings == [
        f"{path} (n0), line 1: not read (cannot tell which tool printed this: {refused!r})"
    ]


@pytest.mark.parametrize("listing", [_pdsh, _dshbak])
def test_import_refuses_a_listing_whose_first_host_printed_no_output(run_cli, tmp_path, listing):
    """Read whole, the second host's ports would be taken for one host's."""
    path = tmp_path / "ibstat-all.txt"
    path.write_text(listing({"n0": "hello\nnot an output\n", "n1": _ibstat()}))
    status, _, err = run_cli("import", str(path))
    assert status == 2
    assert err.startswith(f"fabricui: error: {path}: 2 hosts' ibstat outputs (a pdsh")


def test_ibstat_of_several_hosts_without_their_names_is_refused(run_cli, tmp_path):
    """pdsh -N drops the host names: the same CA four times is four hosts' outputs, which
    --health cannot tell apart (each port kept as last listed, a down one lost)."""
    path = tmp_path / "all.txt"
    path.write_text(_ibstat(down_first=True) + _ibstat())
    status, out, err = run_cli("doctor", "--health", str(path))
    assert (status, out) == (2, "")
    assert err == (
        f"fabricui: error: --health {path}: CA 'mlx5_0' is listed 2 times, as several hosts' "
        "outputs joined without their names are (pdsh -N, or files put together); give each "
        "host's with its name (pdsh without -N, or a file per host)\n"
    )
    status, _, err = run_cli("import", str(path))
    assert status == 0 and "CA 'mlx5_0' is listed 2 times (and 11 more HCAs)" in err


def test_a_named_devices_second_port_is_not_its_nic(catalog, tmp_path):
    """A dual-port adapter of net.adapters whose second port is uncabled (Polling): its
    first port is the NIC, which stays up; the second port's finding says why it is not
    applied."""
    text = _ibstat()
    at = text.index("CA 'mlx5_1'\n")  # mlx5_0 (NIC 0) gets a second port
    second = "\tPort 2:\n\t\tState: Polling\n\t\tPhysical state: Polling\n\t\tRate: 400\n"
    text = text[:at] + second + "\t\tLink layer: InfiniBand\n" + text[at:]
    path = tmp_path / "n1.txt"
    path.write_text(text)
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog, report_health=False
    )
    overlay = health_of(fabric)
    assert overlay is not None and overlay.changes == ()
    report = report_of(fabric)
    assert report is not None
    (polling,) = [f for f in report.findings if f.where == "mlx5_0 port 2"]
    assert polling.fix.endswith(
        "--health does not apply it: mlx5_0 port 2 is not NIC 0's port (net.adapters names "
        "mlx5_0: its first port is the NIC)"
    )


def test_the_doctor_names_the_host_of_a_listing_of_one_host(run_cli, tmp_path):
    """``pdsh -w n1 ibstat``: one host's part, still named on its finding; the health line
    names a listing of many hosts once, with their hostlist."""
    path = tmp_path / "one.txt"
    path.write_text(_pdsh({"n1": _ibstat(down_first=True)}))
    status, out, _ = run_cli("doctor", "--health", str(path))
    assert status == 0
    assert "port-down (mlx5_0 port 1 in one.txt (n1)): down:" in out
    many = tmp_path / "many.txt"
    many.write_text(_dshbak({f"n{i}": _ibstat() for i in range(5)}))
    status, out, _ = run_cli("doctor", "--health", str(many), "--health", str(path))
    assert out.splitlines()[0] == "health: many.txt (5 hosts n[0-4]: ibstat), one.txt (n1) (ibstat)"
    status, out, _ = run_cli("doctor", "--health", str(many), "--json")
    files = json.loads(out)["health"]["files"]
    assert [f.get("host") for f in files] == ["n0", "n1", "n2", "n3", "n4"]


def test_hosts_of_one_coalesced_header_are_read_once(tmp_path):
    """``dshbak -c`` prints ``n[0-999]`` over one output: it is read once for them all."""
    path = tmp_path / "all.txt"
    path.write_text(f"----------------\nn[0-999]\n----------------\n{_ibstat()}")
    report = read_health([str(path)])
    assert len(report.inputs) == 1000
    assert len({id(i.result) for i in report.inputs}) == 1
    assert report.inputs[999].name == "all.txt (n999)"
