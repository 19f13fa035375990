"""A key repeated in one mapping of a Slurm ``topology.yaml`` is refused in one line (file,
line, key path, first line), as every other YAML input is; the same key in another switch,
block or topology is not a repeat."""

from __future__ import annotations

import pytest
from _fabric_samples import FABRIC, fabric_sample

from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.importers import slurm_topology
from fabricui.importers.common import ParseError

MANPAGE = "topology_yaml/slurm_manpage_multi_topology_example.txt"
#: Every Slurm topology file of the shared samples (topology.conf, scontrol, topology.yaml).
SLURM_SAMPLES = sorted(
    str(p.relative_to(FABRIC))
    for folder in (
        "topology_conf",
        "topology_conf_block",
        "topology_yaml",
        "scontrol_show_topology",
    )
    for p in (FABRIC / folder).glob("*.txt")
)
TREE = (
    "- topology: t1\n"
    "  tree:\n"
    "    switches:\n"
    "    - switch: s1\n"
    "      nodes: n[1-2]\n"
    "    - switch: s2\n"
    "      nodes: n[3-4]\n"
)


def refusal(text: str) -> str:
    """The message ``fabricui import slurm-topology t.yaml`` gives for ``text``."""
    with pytest.raises(ParseError) as exc:
        slurm_topology.parse(text)
    return exc.value.located("t.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            TREE + "      nodes: n[5-6]\n",
            "t.yaml:8: [0].tree.switches[1].nodes: duplicate key 'nodes' (first at line 7)",
        ),
        (
            TREE.replace("  tree:\n", "  tree:\n  cluster_default: true\n  tree:\n"),
            "t.yaml:4: [0].tree: duplicate key 'tree' (first at line 2)",
        ),
        (
            TREE + "    - switch: s3\n      switch: s4\n",
            "t.yaml:9: [0].tree.switches[2].switch: duplicate key 'switch' (first at line 8)",
        ),
        (
            TREE + "- topology: t2\n  block:\n    block_sizes: [4]\n    block_sizes: [8]\n",
            "t.yaml:11: [1].block.block_sizes: duplicate key 'block_sizes' (first at line 10)",
        ),
        (
            TREE + '      "nodes": n9\n',
            "t.yaml:8: [0].tree.switches[1].nodes: duplicate key 'nodes' (first at line 7)",
        ),
        (
            "---\n- topology: t1  # first\n  topology: t2\n",
            "t.yaml:3: [0].topology: duplicate key 'topology' (first at line 2)",
        ),
    ],
)
def test_a_repeated_key_is_refused_with_file_line_and_path(text, message):
    """Within a switch, a topology, a block topology; quoted; after ``---`` and a comment."""
    assert refusal(text) == message


@pytest.mark.parametrize(
    "text",
    [
        TREE,
        TREE + "- topology: t2\n  tree:\n    switches:\n    - switch: s1\n      nodes: n1\n",
        TREE.replace("    - ", "      - ").replace("      nodes", "        nodes"),
        TREE + "  cluster_default: true\n",
        "- topology: t1\n  note: |\n    nodes: a\n    nodes: b\n  tree:\n    switches:\n"
        "    - switch: s1\n      nodes: n1\n",
        TREE + "---\n" + TREE,
        TREE + "      url: 'http://x/nodes: a'\n      link: http://y\n",
    ],
    ids=[
        "two-switches",
        "same-names-in-two-topologies",
        "indented-list",
        "key-after-a-list",
        "block-scalar",
        "two-documents",
        "colons-in-values",
    ],
)
def test_keys_repeated_in_other_mappings_are_not_refused(text):
    """``nodes`` in every switch, ``switch``/``topology`` in every item, a key back at the
    topology's level after its list, text in a ``|`` block, a second document."""
    for document in text.split("---\n"):  # the YAML loader agrees
        parse_yaml(document, "t.yaml")
    assert slurm_topology.parse(text).switches


def test_every_repeated_key_of_the_manpage_example_reads_as_the_yaml_loader_says():
    """Each ``key: value`` line of the man page's example, repeated under itself, is refused
    with the very message the YAML loader of the other inputs gives."""
    lines = fabric_sample(MANPAGE).split("\n")
    checked = 0
    for index, line in enumerate(lines):
        body = line.lstrip(" -")
        key, colon, value = body.partition(":")
        if not colon or not value.strip() or line.startswith("#"):
            continue
        repeated = " " * (len(line) - len(body)) + body
        text = "\n".join([*lines[: index + 1], repeated, *lines[index + 1 :]])
        with pytest.raises(Exception) as expected:
            parse_yaml(text, "t.yaml")
        assert refusal(text) == str(expected.value), key
        checked += 1
    assert checked > 30


def test_the_command_names_the_file_and_line(tmp_path, run_import):
    """``fabricui import slurm-topology FILE``: exit 2, one line ``FILE:LINE: ...`` (the
    line of the file, its two comment lines counted)."""
    path = tmp_path / "topology.yaml"
    text = (FABRIC / MANPAGE).read_text(encoding="utf-8")
    path.write_text(
        text.replace("  flat: true\n", "  flat: true\n  flat: false\n"), encoding="utf-8"
    )
    status, out, err = run_import("slurm-topology", str(path))
    assert status == 2 and out == ""
    assert err == (
        f"fabricui: error: {path}:32: [2].flat: duplicate key 'flat' (first at line 31)\n"
    )


def test_an_error_without_a_file_names_its_line():
    """The importer alone says ``line N: ...`` (as its other line errors do)."""
    with pytest.raises(ParseError, match=r"^line 8: \[0\]\.tree\.switches\[1\]\.nodes: dup"):
        slurm_topology.parse(TREE + "      nodes: n[5-6]\n")


@pytest.mark.parametrize("name", SLURM_SAMPLES)
def test_the_shared_slurm_topologies_still_import(name):
    """Every real Slurm topology sample still reads (none repeats a key)."""
    graph = slurm_topology.parse(fabric_sample(name))
    assert graph.hosts
