"""A key Slurm reads, given twice on one ``topology.conf`` / ``scontrol show topology`` line, is
refused in one line (file, line, the record, the key), as a repeated ``topology.yaml`` key is;
the same key on another line, or an unknown key repeated, is not."""

from __future__ import annotations

import re

import pytest
from _fabric_samples import FABRIC, fabric_sample

from fabricui.importers import slurm_topology
from fabricui.importers.common import ParseError

#: Every ``Key=Value`` Slurm sample (tree, block, scontrol).
CONF_SAMPLES = sorted(
    str(p.relative_to(FABRIC))
    for folder in ("topology_conf", "topology_conf_block", "scontrol_show_topology")
    for p in (FABRIC / folder).glob("*.txt")
)
TREE = "SwitchName=s0 Switches=s[1-2]\nSwitchName=s1 Nodes=a[1-2]\nSwitchName=s2 Nodes=b[1-2]\n"


def refusal(text: str) -> str:
    """The message ``fabricui import slurm-topology t.conf`` gives for ``text``."""
    with pytest.raises(ParseError) as exc:
        slurm_topology.parse(text)
    return exc.value.located("t.conf")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "SwitchName=s3 Nodes=c[1-2] Nodes=d[1-2]",
            "t.conf:4: SwitchName=s3: duplicate key 'Nodes' (twice on this line)",
        ),
        (
            "SwitchName=s3 SwitchName=s4 Nodes=c1",
            "t.conf:4: SwitchName=s3: duplicate key 'SwitchName' (twice on this line)",
        ),
        (
            "SwitchName=s3 Switches=s1 switches=s2",
            "t.conf:4: SwitchName=s3: duplicate key 'switches' (twice on this line)",
        ),
        (
            "switchname=s3 Nodes=c1 LinkSpeed=1 LINKSPEED=2",
            "t.conf:4: switchname=s3: duplicate key 'LINKSPEED' (twice on this line)",
        ),
        (
            "BlockName=b1 Nodes=c[1-2] BlockName=b2",
            "t.conf:4: BlockName=b1: duplicate key 'BlockName' (twice on this line)",
        ),
        (
            "BlockSizes=4,16 BlockSizes=8",
            "t.conf:4: BlockSizes=4,16: duplicate key 'BlockSizes' (twice on this line)",
        ),
        (
            "SwitchName=s3 Nodes=c1 # Nodes=c2\nSwitchName=s4 Level=0 Level=1",
            "t.conf:5: SwitchName=s4: duplicate key 'Level' (twice on this line)",
        ),
    ],
)
def test_a_key_given_twice_on_a_line_is_refused(line, message):
    """Nodes, SwitchName, Switches, any case, a block line, BlockSizes; a comment is not read."""
    assert refusal(TREE + line + "\n") == message


def test_a_file_commented_out_entirely_is_checked_as_it_is_read():
    """The lines read with their ``#`` removed are checked too."""
    text = "# SwitchName=s1 Nodes=a1\n# SwitchName=s2 Nodes=b1 Nodes=b2\n"
    assert refusal(text) == "t.conf:2: SwitchName=s2: duplicate key 'Nodes' (twice on this line)"


def test_the_record_named_is_cut_short():
    """A long switch name is cut at 40 characters, so the message stays one short line."""
    name = "s" * 100
    assert refusal(f"SwitchName={name} Nodes=a1 Nodes=a2\n") == (
        f"t.conf:1: SwitchName={'s' * 40}: duplicate key 'Nodes' (twice on this line)"
    )


@pytest.mark.parametrize(
    "text",
    [
        TREE,
        TREE + "SwitchName=s1 Nodes=a3\n",
        TREE + "SwitchName=s3 Nodes=c1 Foo=1 Foo=2\n",
        "BlockName=b1 Nodes=a[1-2]\nBlockName=b2 Nodes=b[1-2]\nBlockSizes=2\n",
    ],
    ids=["tree", "switch-on-two-lines", "unknown-key-twice", "blocks"],
)
def test_keys_repeated_on_other_lines_are_not_refused(text):
    """``Nodes`` on every switch line, a switch defined on two lines (a warning, lists
    merged), a repeated unknown key (the typo warning), ``Nodes`` on every block line."""
    graph = slurm_topology.parse(text)
    assert graph.hosts


def test_the_command_names_the_file_and_line(tmp_path, run_import):
    """``fabricui import slurm-topology FILE``: exit 2, one line ``FILE:LINE: ...``."""
    path = tmp_path / "topology.conf"
    path.write_text("# racks\n" + TREE.replace("Nodes=b[1-2]", "Nodes=b1 Nodes=b2"), "utf-8")
    status, out, err = run_import("slurm-topology", str(path))
    assert status == 2 and out == ""
    assert err == (
        f"fabricui: error: {path}:4: SwitchName=s2: duplicate key 'Nodes' (twice on this line)\n"
    )


@pytest.mark.parametrize("name", CONF_SAMPLES)
def test_the_shared_slurm_samples_still_import(name):
    """Every real ``topology.conf`` / ``scontrol show topology`` sample still reads."""
    assert slurm_topology.parse(fabric_sample(name)).hosts


def first_node_list(lines: list[str]) -> tuple[int, int, str]:
    """(line index, end column, ``Nodes=...``) of the first node list the reader reads."""
    for index, line in enumerate(lines):
        body = re.sub(r"^#+[ \t]*(?=(?i:SwitchName|BlockName)=)", "", line).split("#", 1)[0]
        found = re.search(r"(?i)(?<!\S)nodes=\S+", body)
        if found:
            return index, len(line) - len(body) + found.end(), found.group(0)
    raise AssertionError("no Nodes= list")


@pytest.mark.parametrize("name", CONF_SAMPLES)
def test_a_sample_with_its_first_node_list_repeated_is_refused(name):
    """The first ``Nodes=`` of each real sample (commented out with the rest of the file in
    one), given twice, is refused on its line."""
    lines = fabric_sample(name).split("\n")
    index, end, nodes = first_node_list(lines)
    lines[index] = f"{lines[index][:end]} {nodes}{lines[index][end:]}"
    with pytest.raises(ParseError) as exc:
        slurm_topology.parse("\n".join(lines))
    key = nodes.split("=")[0]
    assert exc.value.line == index + 1
    assert exc.value.detail.endswith(f"duplicate key {key!r} (twice on this line)")
