"""``name_lines``: a file of host names, one per line (``scontrol show hostnames``), read
as names; any other text is None, a broken hostlist line an error on its line."""

from __future__ import annotations

import pytest

from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import name_lines


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("a1\na2\n", ["a1", "a2"]),
        ("a[1-3]\n", ["a1", "a2", "a3"]),
        ("# hdr\n\n a1 \na1 # again\na2,b1\n", ["a1", "a2", "b1"]),
        ("\ufeffnode-01.cluster\r\nnode_02\r\n", ["node-01.cluster", "node_02"]),
        ("10.0.0.1\n", ["10.0.0.1"]),
    ],
)
def test_names_one_per_line(text, names):
    """Names, hostlists, comments, blanks, repeats, BOM and CR line ends, in file order."""
    assert name_lines(text) == names


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n\n",
        "a1 a2\n",
        "a1\nNodeName=a2\n",
        "PARTITION AVAIL TIMELIMIT NODES STATE NODELIST\n",
        "a1\n-a2\n",
        "a1:22\n",
    ],
)
def test_other_text_is_none(text):
    """No names, two on a line, Key=Value, a table, a leading dash, a port."""
    assert name_lines(text) is None


def test_a_broken_hostlist_line_is_an_error_on_its_line():
    """The hostlist error, with the line it is on."""
    with pytest.raises(ParseError) as exc:
        name_lines("a1\na[2-\n")
    assert exc.value.line == 2 and "never closed" in exc.value.message


def test_the_names_are_bounded():
    """All lines together may name at most ``limit`` hosts."""
    with pytest.raises(ParseError, match=r"^line 2: the lines name more than 10 hosts$"):
        name_lines("a[1-6]\nb[1-6]\n", limit=10)
    with pytest.raises(ParseError, match=r"^line 1: hostlist 'a\[1-11\]' stands for more"):
        name_lines("a[1-11]\n", limit=10)
