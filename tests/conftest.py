"""Shared fixtures: the real catalog, the fixed mini catalog, a CLI runner and the hardware
block of one 8-GPU H100 server."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.hwdb import Catalog, load_catalog

DATA = Path(__file__).parent / "data"
MINI_HWDB = DATA / "hwdb" / "mini"


@pytest.fixture(autouse=True)
def utf8_locale(monkeypatch):
    """Every test sees a UTF-8 locale (the explorer draws with ASCII otherwise), so that
    results do not depend on the machine's LANG; ASCII tests set their own."""
    monkeypatch.setenv("LC_ALL", "C.UTF-8")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The real built-in hardware database."""
    return load_catalog()


@pytest.fixture(scope="session")
def mini() -> Catalog:
    """A small database with round figures, for hand-computed cases."""
    return load_catalog([MINI_HWDB])


@pytest.fixture
def h100_box() -> dict:
    """The hardware block of one 8-GPU H100 server on NVSwitch, without a network (as a
    measurement or a topology file writes it); a fresh dict each time."""
    return {
        "gpu": "h100-sxm",
        "nodes": 1,
        "gpus_per_node": 8,
        "intra": {"fabric": "nvswitch", "link": "nvlink4"},
        "net": None,
    }


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; returns (status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    return run
