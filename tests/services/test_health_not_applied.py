"""A health condition that cannot be placed in the fabric changes nothing and says so: a
switch port that is down has no peer in ``iblinkinfo`` and is placed on its cable only by
a graph file that lists the cable at that port; what names nothing in the fabric is listed
by kind (a switch as a switch, a host as a host), a cable seen from both ends once; and the
findings of those ports say that ``--health`` does not apply them, and why."""

from __future__ import annotations

import json
from pathlib import Path

from fabricui.fabric.health import LinkCondition, apply_health, health_of
from fabricui.services.health import overlay as health_overlay
from fabricui.services.health import read_health, report_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

DATA = Path(__file__).resolve().parents[1] / "data"
SELENE = DATA / "fabric" / "ibnetdiscover" / "nvidia_selene_compute_hdr_superpod_2021.txt"

#: Selene's leaf LG01-05 as iblinkinfo prints it (LIDs and GUIDs of the real fabric): port 1
#: to luna-0001 at 1X of 4X, port 3 down (no peer printed), port 21 to CSPINE1-41 at 1X
#: (listed from both ends), port 31 to CSPINE1-41 at 4X.
SELENE_LINKS = """\
Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:
        3179    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       5128    1[  ] "luna-0001 mlx5_6" ( Could be 4X 50.0 Gbps)
        3179    2[  ] ==( 4X          50.0 Gbps Active/  LinkUp)==>       5577    1[  ] "luna-0002 mlx5_6" ( )
        3179    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )
        3179   21[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3185    1[  ] "MF0;CSPINE1-41:MQM8700/U1" ( Could be 4X 50.0 Gbps)
        3179   31[  ] ==( 4X          50.0 Gbps Active/  LinkUp)==>       3185    2[  ] "MF0;CSPINE1-41:MQM8700/U1" ( )
Switch: 0x0c42a103005899b0 MF0;CSPINE1-41:MQM8700/U1:
        3185    1[  ] ==( 1X          50.0 Gbps Active/  LinkUp)==>       3179   21[  ] "MF0;LG01-05:MQM8700/U1" ( Could be 4X 50.0 Gbps)
        3185    2[  ] ==( 4X          50.0 Gbps Active/  LinkUp)==>       3179   31[  ] "MF0;LG01-05:MQM8700/U1" ( )
"""  # noqa: E501

#: dgx-h100-pod's leaf0 with port 3 down.
POD_DOWN = """\
Switch: 0x0000000000000a01 leaf0:
           1    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )
"""
#: The same port trained but not activated by the subnet manager: its peer is printed.
POD_INIT = """\
Switch: 0x0000000000000a01 leaf0:
           1    3[  ] ==( 4X       106.25 Gbps Initialize/  LinkUp)==>      20    1[  ] "n1 mlx5_0" ( )
"""  # noqa: E501
#: The pod's cabling as ibnetdiscover lists it: leaf0 port 3 is n1's mlx5_0.
POD_CABLING = """\
Switch  64 "S-0000000000000a01"   # "leaf0" base port 0 lid 1 lmc 0
[3]  "H-0000000000000b01"[1](b01)   # "n1 mlx5_0" lid 20 4xNDR
"""


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def _finding(fabric, where: str):
    report = report_of(fabric)
    assert report is not None
    (found,) = [f for f in report.findings if f.where == where and f.code != "counter-saturated"]
    return found


def test_a_down_port_without_a_peer_is_not_applied_on_an_imported_cluster(
    selene, catalog, tmp_path
):
    """LG01-05 port 3 is down and iblinkinfo names no peer: nothing is removed for it, one
    line says why, and its finding says --health does not apply it instead of claiming the
    fabric is priced without it; the two degraded cables are applied."""
    links = _write(tmp_path, "links.txt", SELENE_LINKS)
    fabric = load_fabric(TopologyRequest(selene, health=(links,)), catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None
    assert [c.kind for c in overlay.changes] == ["degraded", "degraded"]
    assert overlay.unmatched == (
        "iblinkinfo links.txt: LG01-05 port 3 not applied: no peer is named for it, so which "
        "cable it is is unknown (give ibnetdiscover output that lists its cable with it)",
    )
    assert overlay.summary() == "health: 2 degraded; 1 condition(s) not applied"
    # iblinkinfo lists only the ports below what their ends support: no "another fabric's
    # rates" warning from those alone (the 4X ports at full rate are not conditions)
    assert overlay.warnings == ()
    fix = _finding(fabric, "LG01-05 port 3").fix
    assert "priced without it" not in fix
    assert fix.endswith(
        "--health does not apply it: no peer is named for it, so which cable it is is unknown "
        "(give ibnetdiscover output that lists its cable with it)"
    )
    assert _finding(fabric, "LG01-05 port 1").fix.endswith("priced at its trained rate (--health)")


def test_the_cabling_given_with_it_places_the_down_port(selene, catalog, tmp_path):
    """With Selene's own ibnetdiscover output (port 3 of LG01-05 is luna-0003 mlx5_6), the
    down port is that host's 5th NIC cable: removed, its GPU moves to another NIC, and the
    finding keeps saying the fabric is priced without it."""
    links = _write(tmp_path, "links.txt", SELENE_LINKS)
    health = (links, str(SELENE))
    fabric = load_fabric(TopologyRequest(selene, health=health), catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None and overlay.unmatched == ()
    down = [c.label for c in overlay.changes if c.kind == "down"]
    assert down == ["luna-0003.nic4 (luna-0003 mlx5_6) -> LG01-05"]
    assert fabric.device_name(int(fabric.gpu_nic[2 * 8 + 4])) != "luna-0003.nic4"
    fix = _finding(fabric, "LG01-05 port 3").fix
    assert fix.endswith("the fabric is priced without it (--health)")


def test_a_built_in_topology_places_the_port_by_the_cabling(catalog, tmp_path):
    """dgx-h100-pod's leaf0 port 3 down: without a peer it is not applied; with ibnetdiscover
    output naming n1 mlx5_0 at that port, n1.nic0's cable is removed (the generated tree
    taken as its explicit graph)."""
    down = _write(tmp_path, "links.txt", POD_DOWN)
    alone = load_fabric(TopologyRequest("dgx-h100-pod", health=(down,)), catalog)
    overlay = health_of(alone)
    assert overlay is not None and overlay.changes == ()
    assert overlay.unmatched == (
        "iblinkinfo links.txt: leaf0 port 3 not applied: no peer is named for it, so which "
        "cable it is is unknown (give ibnetdiscover output that lists its cable with it)",
    )
    cabling = _write(tmp_path, "net.txt", POD_CABLING)
    placed = load_fabric(TopologyRequest("dgx-h100-pod", health=(down, cabling)), catalog)
    overlay = health_of(placed)
    assert overlay is not None and overlay.unmatched == ()
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic0 (n1 mlx5_0) -> leaf0")
    ]
    assert _finding(placed, "leaf0 port 3").fix.endswith("priced without it (--health)")


def test_a_port_that_is_not_active_and_prints_its_peer_is_placed(catalog, tmp_path):
    """A port in Initialize prints its peer: iblinkinfo alone places it, and it carries
    nothing until the subnet manager activates it."""
    init = _write(tmp_path, "links.txt", POD_INIT)
    report = read_health([init])
    (port,) = report.inputs[0].result.ports
    assert (port.device, port.port, port.state, port.peer, port.peer_port) == (
        "leaf0",
        3,
        "init",
        "n1 mlx5_0",
        1,
    )
    fabric = load_fabric(TopologyRequest("dgx-h100-pod", health=(init,)), catalog)
    overlay = health_of(fabric)
    assert overlay is not None and overlay.unmatched == ()
    assert [c.label for c in overlay.changes] == ["n1.nic0 (n1 mlx5_0) -> leaf0"]


def test_what_names_nothing_is_listed_by_kind_and_a_cable_once(catalog, tmp_path):
    """Selene's leaf on dgx-h100-pod: LG01-05 is a switch (not "a host"), luna-0001 a host,
    and the 1X cable LG01-05 port 21 - CSPINE1-41 port 1, printed from both ends, is one
    line; each port's finding says why it is not applied."""
    links = _write(tmp_path, "links.txt", SELENE_LINKS)
    fabric = load_fabric(TopologyRequest("dgx-h100-pod"), catalog)
    overlay = health_overlay(fabric, (links,), catalog, report=False)
    assert overlay.changes == ()
    assert overlay.unmatched == (
        "iblinkinfo links.txt: LG01-05 port 1 - luna-0001 mlx5_6 port 1 not applied: LG01-05 "
        "is not a switch and luna-0001 not a host of dgx-h100-pod",
        "iblinkinfo links.txt: LG01-05 port 3 not applied: LG01-05 is not a switch of dgx-h100-pod",
        "iblinkinfo links.txt: LG01-05 port 21 - CSPINE1-41 port 1 not applied: LG01-05 and "
        "CSPINE1-41 are not switches of dgx-h100-pod",
    )
    assert overlay.summary().endswith("; 3 condition(s) not applied")
    report = report_of(overlay.fabric)
    assert report is not None
    fixes = {f.where: f.fix for f in report.findings}
    assert fixes["CSPINE1-41 port 1"].endswith(
        "--health does not apply it: LG01-05 and CSPINE1-41 are not switches of dgx-h100-pod"
    )
    assert fixes["LG01-05 port 1"].endswith(
        "--health does not apply it: LG01-05 is not a switch and luna-0001 not a host of "
        "dgx-h100-pod"
    )
    assert not any("priced" in fix for fix in fixes.values())


def test_the_cli_says_what_is_not_applied(run_cli, tmp_path):
    """``path --health`` on the pod: one stderr line per condition not applied, by kind."""
    links = _write(tmp_path, "links.txt", SELENE_LINKS)
    status, _, err = run_cli(
        "path", "-t", "dgx-h100-pod", "--src", "0", "--dst", "9", "--health", links
    )
    assert status == 0
    lines = [line for line in err.splitlines() if "not applied" in line]
    assert lines[0].startswith("fabricui: as it is: no change")
    assert lines[0].endswith("; 3 condition(s) not applied")
    said = (
        "fabricui: warning: iblinkinfo links.txt: LG01-05 port 3 not applied: LG01-05 is not "
        "a switch of dgx-h100-pod"
    )
    assert said in lines
    assert len(lines) == 4  # the summary and three conditions: the cable once


def test_a_host_output_of_no_host_of_the_fabric_is_one_line(catalog, tmp_path):
    """An ibstat saved as luna-0001.txt on dgx-h100-pod (hosts n0 to n3): its adapters are
    not called hosts, one line per port; one line says its host is not one of the fabric's."""
    lines = []
    for k in range(8):
        state = "Down" if k < 2 else "Active"
        lines += [f"CA 'mlx5_{k}'", "\tPort 1:", f"\t\tState: {state}", "\t\tRate: 400"]
        lines += ["\t\tLink layer: InfiniBand"]
    path = _write(tmp_path, "luna-0001.txt", "\n".join(lines) + "\n")
    fabric = load_fabric(TopologyRequest("dgx-h100-pod"), catalog)
    overlay = health_overlay(fabric, (path,), catalog, report=False)
    assert overlay.changes == ()
    assert overlay.unmatched == (
        "ibstat luna-0001.txt: the ports' host is not named as a host of dgx-h100-pod (name "
        "the file after its host, e.g. n0.txt)",
    )


def test_a_thousand_hosts_not_of_the_fabric_are_a_few_lines(run_cli, tmp_path):
    """A listing of another cluster's hosts: each is not applied, and stderr shows a few of
    them and how many more (``path --json`` lists every one)."""
    ibstat = (
        "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Disabled\n"
        "\t\tLink layer: InfiniBand\n"
    )
    path = tmp_path / "all.txt"
    path.write_text(
        "".join(f"gpu{i:03d}: {line}\n" for i in range(40) for line in ibstat.rstrip().split("\n"))
    )
    argv = ["path", "-t", "h100-ib-cluster", "--nodes", "2", "--health", str(path), "n0.g0"]
    status, _, err = run_cli(*argv, "n1.g0")
    assert status == 0
    said = [line for line in err.splitlines() if "not a host of" in line]
    assert len(said) == 12
    assert err.splitlines()[-1] == (
        "fabricui: warning: ... and 28 more conditions not applied "
        "(`fabricui path --json` lists all)"
    )
    status, out, _ = run_cli(*argv, "n1.g0", "--json")
    assert len(json.loads(out)["health"]["unmatched"]) == 40


def test_a_hosts_erroring_counters_mark_no_cable_down(catalog, tmp_path):
    """A perfquery saved as the host's file prints no port state and names the port by its
    LID: its symbol errors take no cable down, and which NIC the LID is is not guessed."""
    sample = DATA / "health" / "infiniband" / "perfquery_x_edr_switch_two_ports_xmitwait.txt"
    text = "".join(sample.read_text().splitlines(keepends=True)[2:])
    path = tmp_path / "n1.txt"
    path.write_text(
        text.replace(
            "SymbolErrorCounter:..............0", "SymbolErrorCounter:..............5000", 1
        )
    )
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog, report_health=False
    )
    overlay = health_of(fabric)
    assert overlay is not None and overlay.changes == () and overlay.cut_off == ()
    assert overlay.unmatched == ("perfquery n1.txt: which NIC of n1 is lid 1719 is unknown",)


def test_an_erroring_port_of_no_state_is_marked_not_removed(catalog):
    """A host port a counter tool marks erroring (state unknown) keeps its cable: errors."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 2), catalog)
    condition = LinkCondition("n1 mlx5_0", 1, "leaf0", None, state="unknown", erroring=True)
    overlay = apply_health(fabric, [condition], [], catalog)
    assert [(c.kind, c.factor) for c in overlay.changes] == [("errors", 1.0)]
