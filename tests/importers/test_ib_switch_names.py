"""InfiniBand switches get one name whichever tool printed them: ``iblinkinfo`` and
``ibqueryerrors`` name a Mellanox switch (``MF0;LG01-05:MQM8700/U1``) as the
``ibnetdiscover`` import of the same fabric does (``LG01-05``), so their health matches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.importers import iblinkinfo, ibnetdiscover, ibqueryerrors
from fabricui.importers.fabric_graph import node_name, switch_name

#: The real Selene (DGX A100 SuperPOD) ibnetdiscover dump the cluster is imported from.
SELENE = (
    Path(__file__).parents[1]
    / "data/fabric/ibnetdiscover/nvidia_selene_compute_hdr_superpod_2021.txt"
)

#: iblinkinfo of two Selene switches as the switches name themselves (GUIDs, LIDs and
#: peers from the dump above; one cable trained at 1X of 4X).
LINKS = "\n".join(
    [
        "Switch: 0x0c42a1030060abd0 MF0;LG01-05:MQM8700/U1:",
        '3179  1[  ] ==( 1X 50.0 Gbps Active/  LinkUp)==>  5128  1[  ] "luna-0001 mlx5_6"'
        " ( Could be 4X 50.0 Gbps)",
        '3179  2[  ] ==( 4X 50.0 Gbps Active/  LinkUp)==>  5577  1[  ] "luna-0002 mlx5_6" ( )',
        '3179  3[  ] ==(                Down/ Polling)==>             [  ] "" ( )',
        '3179 21[  ] ==( 1X 50.0 Gbps Active/  LinkUp)==>  3185  1[  ] "MF0;CSPINE1-41:MQM8700/U1"'
        " ( Could be 4X 50.0 Gbps)",
        '3179 31[  ] ==( 4X 50.0 Gbps Active/  LinkUp)==>  3185  2[  ] "MF0;CSPINE1-41:MQM8700/U1"'
        " ( )",
        "Switch: 0x0c42a103005899b0 MF0;CSPINE1-41:MQM8700/U1:",
        '3185  1[  ] ==( 1X 50.0 Gbps Active/  LinkUp)==>  3179 21[  ] "MF0;LG01-05:MQM8700/U1"'
        " ( Could be 4X 50.0 Gbps)",
        '3185  2[  ] ==( 4X 50.0 Gbps Active/  LinkUp)==>  3179 31[  ] "MF0;LG01-05:MQM8700/U1"'
        " ( )",
    ]
)

#: ibqueryerrors -r of the same switch, as infiniband-diags prints it (the peer with its GUID).
ERRORS = "\n".join(
    [
        'Errors for 0x0c42a1030060abd0 "MF0;LG01-05:MQM8700/U1"',
        "   GUID 0x0c42a1030060abd0 port 21: [SymbolErrorCounter == 1234] [LinkDownedCounter == 3]",
        "       Link info:   3179   21[  ] ==( 4X 50.0 Gbps Active/  LinkUp)==>"
        '  0x0c42a103005899b0   3185    1[  ] "MF0;CSPINE1-41:MQM8700/U1" ( )',
        "   GUID 0x0c42a1030060abd0 port 1: [PortRcvErrors == 50]",
        "       Link info:   3179    1[  ] ==( 4X 50.0 Gbps Active/  LinkUp)==>"
        '  0x0c42a1030025594a   5128    1[  ] "luna-0001 mlx5_6" ( )',
        "",
        "## Summary: 666 nodes checked, 1 bad nodes found",
        "##          12852 ports checked, 2 ports have errors beyond threshold",
    ]
)


@pytest.fixture(scope="module")
def selene_switches() -> set[str]:
    """The switch names of the Selene ibnetdiscover import."""
    return {s.name for s in ibnetdiscover.parse(SELENE.read_text()).switches}


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("MF0;LG01-05:MQM8700/U1", ("LG01-05", "MQM8700")),
        ("  MF0;CSPINE1-41:MQM8700/U1  ", ("CSPINE1-41", "MQM8700")),
        ("MF0;sw-ib-01:MSB7800", ("sw-ib-01", "MSB7800")),
        ("ib-sw", ("ib-sw", "")),
        (
            "MT47396 Infiniscale-III Mellanox Technologies",
            (None, "MT47396 Infiniscale-III Mellanox Technologies"),
        ),
        ("", (None, "")),
    ],
)
def test_switch_name_reads_mellanox_descriptions(description, expected):
    """A Mellanox description gives its name and model; a blank-free one is the name; one
    with blanks only a model."""
    assert switch_name(description) == expected


def test_node_name_shortens_only_mellanox_switches():
    """A peer that is a Mellanox switch is shortened; an adapter's description stays."""
    assert node_name("MF0;LG01-05:MQM8700/U1") == "LG01-05"
    assert node_name("luna-0001 mlx5_6") == "luna-0001 mlx5_6"
    assert node_name("MF0;:MQM8700/U1") == "MF0;:MQM8700/U1"


def test_ibnetdiscover_names_selene_switches_by_their_mf0_name(selene_switches):
    """The import the health files must match names switches ``LG01-05``, not ``MF0;...``."""
    assert {"LG01-05", "CSPINE1-41"} <= selene_switches
    assert not any(name.startswith("MF0;") for name in selene_switches)


def test_iblinkinfo_names_switches_and_peers_as_ibnetdiscover_does(selene_switches):
    """Switches, cable ends and degraded ports' owners and peers carry the short names."""
    graph = iblinkinfo.parse(LINKS)
    assert {s.name for s in graph.switches} == {"LG01-05", "CSPINE1-41"}
    assert {s.name for s in graph.switches} <= selene_switches
    assert {s.model for s in graph.switches} == {"MQM8700"}
    ends = {end for link in graph.links for end in (link.a, link.b)}
    assert not any("MF0;" in end for end in ends)
    degraded = [p for p in graph.ports if p.degraded]
    assert degraded
    for port in degraded:
        assert port.device in selene_switches
        assert port.peer is not None and "MF0;" not in port.peer
    assert ("LG01-05", 21, "CSPINE1-41") in {(p.device, p.port, p.peer) for p in degraded}
    down = [p for p in graph.ports if p.state != "up"]
    assert [(p.device, p.port) for p in down] == [("LG01-05", 3)]


def test_iblinkinfo_names_a_peer_switch_it_has_no_block_for():
    """A switch seen only as a peer (its own block not printed) is named short as well."""
    graph = iblinkinfo.parse(LINKS.split("Switch: 0x0c42a103005899b0")[0])
    peers = {p.peer for p in graph.ports if p.degraded}
    assert "CSPINE1-41" in peers


def test_iblinkinfo_shared_or_blank_names_fall_back_to_the_guid_id():
    """Two switches sharing a name, or a description with blanks, are named by GUID id as
    ibnetdiscover names them."""
    text = (
        "Switch: 0x0002c90200000001 MF0;dup:MQM8700/U1:\n"
        '  1 1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  9 1[  ] "h1 mlx5_0" ( )\n'
        "Switch: 0x0002c90200000002 MF0;dup:MQM8700/U1:\n"
        '  2 1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  8 1[  ] "h2 mlx5_0" ( )\n'
        "Switch: 0x0002c90200000003 MT47396 Infiniscale-III Mellanox Technologies:\n"
        '  3 1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  7 1[  ] "h3 mlx5_0" ( )\n'
    )
    graph = iblinkinfo.parse(text)
    assert sorted(s.name for s in graph.switches) == [
        "S-0002c90200000001",
        "S-0002c90200000002",
        "S-0002c90200000003",
    ]
    assert any("no usable name" in w for w in graph.warnings)


def test_ibqueryerrors_names_switches_and_peers_as_ibnetdiscover_does(selene_switches):
    """The erroring switch and its switch peer carry the short names; an adapter peer stays."""
    report = ibqueryerrors.parse(ERRORS)
    got = [(p.device, p.port, p.peer, p.peer_port) for p in report.ports]
    assert got == [
        ("LG01-05", 21, "CSPINE1-41", 1),
        ("LG01-05", 1, "luna-0001 mlx5_6", 1),
    ]
    assert {p.device for p in report.ports} <= selene_switches
    assert report.ports[0].counters == {"SymbolErrorCounter": 1234, "LinkDownedCounter": 3}


def test_ibqueryerrors_link_info_joined_to_its_port_line_is_read():
    """A paste that lost the break before ``Link info:`` still gives the port its peer."""
    joined = ERRORS.replace("\n       Link info:", " Link info:")
    report = ibqueryerrors.parse(joined)
    got = [(p.device, p.port, p.peer, p.state) for p in report.ports]
    assert got == [("LG01-05", 21, "CSPINE1-41", "up"), ("LG01-05", 1, "luna-0001 mlx5_6", "up")]
    assert report.ports[0].counters == {"SymbolErrorCounter": 1234, "LinkDownedCounter": 3}


def test_ibqueryerrors_unnamed_switch_is_named_by_guid_id():
    """A switch whose description is no name is ``S-<guid>``, as ibnetdiscover names it; an
    adapter keeps its description."""
    text = (
        'Errors for 0x2c90200000003 "MT47396 Infiniscale-III Mellanox Technologies"\n'
        "   GUID 0x2c90200000003 port 4: [SymbolErrorCounter == 7]\n"
        'Errors for "node01 HCA-1"\n'
        "   GUID 0x2c90300000009 port 1: [PortRcvErrors == 2]\n"
    )
    report = ibqueryerrors.parse(text)
    assert [p.device for p in report.ports] == ["S-0002c90200000003", "node01 HCA-1"]
