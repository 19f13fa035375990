"""Fixtures for the importer tests: the ``fabricui import`` command run in-process."""

from __future__ import annotations

import pytest

from fabricui.cli import _Parser
from fabricui.commands import import_cmd


@pytest.fixture
def run_import(command_runner):
    """Run ``fabricui import ...`` as the CLI does; returns (status, stdout, stderr).

    Builds its own parser, with the CLI's parser class and its ``--hwdb``; a FabricError is
    ``fabricui: error: <msg>`` with status 2 (``command_runner``).
    """
    parser = _Parser(prog="fabricui")
    parser.add_argument("--hwdb", action="append", default=[])
    return command_runner("import", import_cmd, parser)
