"""Fixtures for the importer tests: the ``fabricui import`` command run in-process."""

from __future__ import annotations

import sys

import pytest

from fabricui.cli import _Parser
from fabricui.commands import import_cmd
from fabricui.errors import FabricError


@pytest.fixture
def run_import(capsys):
    """Run ``fabricui import ...`` as the CLI does; returns (status, stdout, stderr).

    Builds its own parser (the subcommand is wired into ``fabricui.cli`` separately) and maps
    a FabricError to ``fabricui: error: <msg>`` with status 2, exactly as ``cli.main`` does.
    """

    def run(*argv: str) -> tuple[int, str, str]:
        parser = _Parser(prog="fabricui")
        parser.add_argument("--hwdb", action="append", default=[])
        sub = parser.add_subparsers(dest="command", parser_class=_Parser)
        import_cmd.add_parser(sub)
        try:
            status = import_cmd.run(parser.parse_args(["import", *argv]))
        except FabricError as exc:
            print(f"fabricui: error: {exc.message}", file=sys.stderr)
            status = 2
        out, err = capsys.readouterr()
        return status, out, err

    return run
