"""Many hosts' outputs of one command, as pdsh, clush and dshbak print them, are split into
each host's output; one host's output (including a tool's own ``Key: value`` lines and
section titles between dashed lines) is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.importers.common import ParseError
from fabricui.importers.host_listing import split_hosts

DATA = Path(__file__).resolve().parents[1] / "data" / "health"
IBSTAT = DATA / "infiniband" / "ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt"


def _output(path: Path) -> str:
    """The output as published (the collector's two header lines left out)."""
    return "".join(path.read_text().splitlines(keepends=True)[2:]).rstrip("\n") + "\n"


def _prefixed(host: str, text: str) -> list[str]:
    return [f"{host}: {line}" if line else f"{host}:" for line in text.rstrip("\n").split("\n")]


def test_pdsh_lines_are_each_hosts_output_even_interleaved():
    one = _output(IBSTAT)
    a, b = _prefixed("luna-0001", one), _prefixed("luna-0002", one)
    mixed = [line for pair in zip(a, b) for line in pair]  # pdsh prints lines as they come
    parts = split_hosts("\n".join(mixed) + "\n")
    assert parts is not None
    assert [p.host for p in parts] == ["luna-0001", "luna-0002"]
    assert parts[0].text == one and parts[1].text == one
    assert (parts[0].first_line, parts[1].last_line) == (1, len(mixed))


def test_dshbak_blocks_after_the_command_line():
    one = _output(IBSTAT)
    text = (
        "$ pdsh -w luna-[0001-0002] ibstat | dshbak\n"
        f"----------------\nluna-0001\n----------------\n{one}"
        f"----------------\nluna-0002\n----------------\n{one}"
    )
    parts = split_hosts(text)
    assert parts is not None
    assert [p.host for p in parts] == ["luna-0001", "luna-0002"]
    assert parts[0].text == one and parts[1].text == one
    assert parts[0].first_line == 2


def test_clush_groups_hosts_with_the_same_output():
    one = _output(IBSTAT)
    parts = split_hosts(f"---------------\nluna-[0001-0003] (3)\n---------------\n{one}")
    assert parts is not None
    assert [p.host for p in parts] == ["luna-0001", "luna-0002", "luna-0003"]
    assert all(p.text == one for p in parts)


@pytest.mark.parametrize(
    "name",
    [
        "infiniband/perfquery_x_edr_switch_two_ports_xmitwait.txt",  # Key:....value lines
        "infiniband/ibdiagnet_fabric_summary_ar_dump_15node_lab_3_discovery_warnings.txt",
        "infiniband/mlxlink_show_module_cx7_ndr_b2b_fs_dac_rx_los_flags.txt",
        "infiniband/ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt",
    ],
)
def test_one_hosts_output_is_not_a_listing(name):
    assert split_hosts(_output(DATA / name)) is None


def test_a_title_between_dashed_lines_later_in_an_output_is_no_header():
    """ibdiagnet prints ``Summary`` between dashed lines; a listing starts with its header."""
    assert split_hosts("Fabric Summary\n-----\nSummary\n-----\nTotal Nodes 15\n") is None


def test_a_header_naming_too_many_hosts_is_one_line():
    with pytest.raises(ParseError, match="more than 65,536 names"):
        split_hosts("----\nn[1-9999999]\n----\nCA 'mlx5_0'\n")


def test_a_host_the_shell_could_not_reach_is_a_part_of_its_own():
    """pdsh ... 2>&1: the unreachable host's one ssh line and pdsh's own line about it are
    that host's part; the listing is still a listing."""
    one = _output(IBSTAT)
    text = "\n".join(
        [
            *_prefixed("luna-0001", one),
            "luna-0005: ssh: connect to host luna-0005 port 22: Connection refused",
            "pdsh@login: luna-0005: ssh exited with exit code 255",
        ]
    )
    parts = split_hosts(text + "\n")
    assert parts is not None
    assert [p.host for p in parts] == ["luna-0001", "luna-0005"]
    assert parts[1].text == (
        "ssh: connect to host luna-0005 port 22: Connection refused\n"
        "ssh exited with exit code 255\n"
    )


def test_dshbak_of_pdsh_2_to_1_gives_pdshs_lines_to_their_host():
    """``dshbak`` heads pdsh's own lines with ``pdsh@login``: they go to the host they name,
    not into the host above them."""
    one = _output(IBSTAT)
    text = (
        f"----------------\nluna-0001\n----------------\n{one}"
        "----------------\npdsh@login\n----------------\n"
        "luna-0005: ssh exited with exit code 255\n"
    )
    parts = split_hosts(text)
    assert parts is not None
    assert [(p.host, p.text) for p in parts] == [
        ("luna-0001", one),
        ("luna-0005", "ssh exited with exit code 255\n"),
    ]


def test_clush_errors_before_and_after_the_headers_go_to_their_host():
    one = _output(IBSTAT)
    text = (
        "luna-0005: ssh: connect to host luna-0005 port 22: Connection refused\n"
        f"---------------\nluna-[0001-0002] (2)\n---------------\n{one}"
        "clush: luna-0005: exited with exit code 255\n"
    )
    parts = split_hosts(text)
    assert parts is not None
    assert [p.host for p in parts] == ["luna-0001", "luna-0002", "luna-0005"]
    assert parts[1].text.rstrip("\n") == one.rstrip("\n")
    assert parts[2].text == (
        "ssh: connect to host luna-0005 port 22: Connection refused\nexited with exit code 255\n"
    )


def test_key_value_lines_one_per_key_are_no_listing():
    """A host on one line each is a ``Key: value`` output, not hosts (``sinfo -o '%N: %t'``
    too): a listing has two lines per host on average."""
    assert split_hosts("State: Active\nRate: 200\nLink: up\n") is None
