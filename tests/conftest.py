"""Shared fixtures: the real catalog, the fixed mini catalog, a CLI runner, a maker of one
subcommand's runner, the hardware block of one 8-GPU H100 server and Selene imported from
its real ibnetdiscover dump."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from fabricui.cli import main
from fabricui.errors import FabricError
from fabricui.hwdb import Catalog, load_catalog

DATA = Path(__file__).parent / "data"
MINI_HWDB = DATA / "hwdb" / "mini"
#: Selene's real fabric as ibnetdiscover printed it (458 DGX A100 hosts on 666 switches).
SELENE_DUMP = DATA / "fabric" / "ibnetdiscover" / "nvidia_selene_compute_hdr_superpod_2021.txt"


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


@pytest.fixture(scope="session")
def selene(tmp_path_factory) -> str:
    """Selene imported as users do (`fabricui import ibnetdiscover FILE --node dgx-a100`):
    the path of the cluster spec (hosts luna-0001 ... luna-0560), made once a session."""
    out = tmp_path_factory.mktemp("selene") / "selene.yaml"
    argv = ["import", "ibnetdiscover", str(SELENE_DUMP), "-o", str(out), "--node", "dgx-a100"]
    assert main(argv) == 0
    return str(out)


@pytest.fixture
def run_cli(capsys):
    """Run the CLI in-process; returns (status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture
def command_runner(capsys):
    """Make an in-process runner of one subcommand: ``command_runner(name, module, parser)``
    returns ``run(*argv) -> (status, stdout, stderr)``.

    ``module.add_parser`` wires the subcommand into ``parser`` (by default a bare
    ``argparse.ArgumentParser(prog="fabricui")``; give one holding the global options the
    command reads: the subcommand is wired into ``fabricui.cli`` separately). ``run`` maps a
    FabricError to ``fabricui: error: <msg>`` on stderr and status 2, exactly as
    ``cli.main`` does. Arguments that start with one of ``leading`` (global options written
    ``--name=value``) go before the subcommand's name.
    """

    def make(
        name: str,
        module: ModuleType,
        parser: argparse.ArgumentParser | None = None,
        *,
        leading: tuple[str, ...] = (),
    ) -> Callable[..., tuple[int, str, str]]:
        if parser is None:
            parser = argparse.ArgumentParser(prog="fabricui")
        module.add_parser(parser.add_subparsers(dest="command"))

        def run(*argv: str) -> tuple[int, str, str]:
            first = [a for a in argv if a.startswith(leading)]
            rest = [a for a in argv if not a.startswith(leading)]
            try:
                status = module.run(parser.parse_args([*first, name, *rest]))
            except FabricError as exc:
                print(f"fabricui: error: {exc.message}", file=sys.stderr)
                status = 2
            out, err = capsys.readouterr()
            return status, out, err

        return run

    return make
