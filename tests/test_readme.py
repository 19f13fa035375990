"""The README as the first thing a user runs: a virtual environment before the two set-up
commands, the test command CI reads from it, and every command of the parser named."""

from __future__ import annotations

import re
from pathlib import Path

from fabricui.cli import build_parser

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def test_ci_reads_the_test_command():
    """The first line of the first code block after the marker (what .ci/run runs)."""
    after = README.split("<!-- test-command -->", 1)[1]
    block = re.search(r"^```\w*\n(.*?)\n", after, re.M | re.S)
    assert block is not None
    assert block.group(1) == "python3 -m pip install -e '.[test]' && python3 -m pytest"


def test_a_virtual_environment_comes_before_installing():
    """A system Python refuses `pip install .` (externally-managed-environment): the set-up
    says to make a venv before its two commands."""
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    first_install = setup.index("python3 -m pip install . && fabricui")
    assert "externally-managed-environment" in setup[:first_install]
    assert "python3 -m venv .venv && . .venv/bin/activate" in setup[:first_install]


def test_every_command_is_in_the_readme():
    """Each subcommand of the parser appears as `fabricui COMMAND`."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    missing = [name for name in commands if f"fabricui {name}" not in README]
    assert missing == []
