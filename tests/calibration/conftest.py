"""Fixtures of the calibration tests."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fabricui.commands import calibrate as calibrate_command


@pytest.fixture
def run_calibrate(command_runner):
    """Run ``calibrate`` through a parser with the global options the CLI adds
    (``--hwdb``, ``--calibration``, the latter given as ``--calibration=FILE`` anywhere);
    returns (status, stdout, stderr)."""
    parser = argparse.ArgumentParser(prog="fabricui")
    parser.add_argument("--hwdb", action="append", type=Path, default=[])
    parser.add_argument("--calibration", type=Path)
    return command_runner("calibrate", calibrate_command, parser, leading=("--calibration=",))
