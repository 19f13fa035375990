"""Fixtures of the calibration tests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from fabricui.commands import calibrate as calibrate_command
from fabricui.errors import FabricError


@pytest.fixture
def run_calibrate(capsys):
    """Run ``calibrate`` through a parser with the global options the CLI adds
    (``--hwdb``, ``--calibration``); returns (status, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="fabricui")
    parser.add_argument("--hwdb", action="append", type=Path, default=[])
    parser.add_argument("--calibration", type=Path)
    calibrate_command.add_parser(parser.add_subparsers(dest="command"))

    def run(*argv: str) -> tuple[int, str, str]:
        globals_ = [a for a in argv if a.startswith("--calibration=")]
        rest = [a for a in argv if not a.startswith("--calibration=")]
        try:
            status = calibrate_command.run(parser.parse_args([*globals_, "calibrate", *rest]))
        except FabricError as exc:
            print(f"fabricui: error: {exc.message}", file=sys.stderr)
            status = 2
        out, err = capsys.readouterr()
        return status, out, err

    return run
