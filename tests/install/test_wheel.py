"""The wheel on its own: data files shipped, commands working from outside the checkout."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import InstalledVenv  # tests/install/conftest.py (fixture installed_venv)

pytestmark = pytest.mark.slow

#: The checkout (data files are compared with the wheel's; nothing is imported from here).
REPO = Path(__file__).resolve().parents[2]

#: The reference topologies, one YAML file each (the file stem is the topology id).
TOPOLOGY_IDS = sorted(path.stem for path in (REPO / "hwdb" / "topologies").glob("*.yaml"))
#: Directories of importable packages the wheel ships.
PACKAGE_DIRS = [REPO / "fabricui", *sorted((REPO / "plugins").glob("fabricui_*"))]


def builtin_entry_points() -> dict[str, str]:
    """``[project.entry-points.fabricui]`` of pyproject.toml: plugin name -> module.

    A small line parser rather than tomllib, which arrived in Python 3.11.
    """
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[project\.entry-points\.fabricui\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert section, "pyproject.toml has no [project.entry-points.fabricui] section"
    pairs = re.findall(r'^\s*([\w.-]+)\s*=\s*"([^"]+)"', section.group(1), re.M)
    return dict(pairs)


#: Files of the package directory that only a checkout uses (``exclude`` in pyproject.toml).
CHECKOUT_ONLY = {"fabricui/build_pyz.py"}


def test_wheel_ships_every_data_file(installed_venv: InstalledVenv) -> None:
    """Every non-Python file of the packages and every hwdb record is inside the wheel."""
    with zipfile.ZipFile(installed_venv.wheel) as wheel:
        names = set(wheel.namelist())
    wanted = []
    for package in PACKAGE_DIRS:
        for path in package.rglob("*"):
            relative = path.relative_to(package)
            if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
                continue  # editor and interpreter droppings are not part of the package
            if path.is_file() and path.suffix != ".pyc":
                wanted.append(f"{package.name}/{relative.as_posix()}")
    for path in (REPO / "hwdb").rglob("*.yaml"):
        wanted.append(f"fabricui/_hwdb/{path.relative_to(REPO / 'hwdb').as_posix()}")
    missing = sorted(set(wanted) - names - CHECKOUT_ONLY)
    assert not missing, f"{installed_venv.wheel.name} lacks: {', '.join(missing)}"
    assert not CHECKOUT_ONLY & names, "the pyz builder's module name runs only in a checkout"
    assert "fabricui/py.typed" in names and "fabricui/tui/app.tcss" in names


def test_imports_come_from_the_venv_not_the_checkout(installed_venv: InstalledVenv) -> None:
    """fabricui and each built-in plugin package are imported from the venv's site-packages."""
    modules = ["fabricui", *sorted({m.split(".")[0] for m in builtin_entry_points().values()})]
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    print(importlib.import_module(name).__file__)\n"
    )
    out = installed_venv.run("python", "-c", script, *modules).stdout.splitlines()
    assert len(out) == len(modules), out
    venv_root = installed_venv.root.resolve()
    for module, file in zip(modules, out):
        where = Path(file).resolve()
        assert venv_root in where.parents, f"{module} imported from {where}, not {venv_root}"
        assert REPO not in where.parents, f"{module} imported from the checkout: {where}"


def test_hwdb_is_the_packaged_copy(installed_venv: InstalledVenv) -> None:
    """`hwdb validate` checks the database shipped in the wheel, with every record file."""
    out = installed_venv.run("fabricui", "hwdb", "validate").stdout
    match = re.match(r"ok: (\S+):", out)
    assert match, out
    hwdb = Path(match.group(1)).resolve()
    assert installed_venv.root.resolve() in hwdb.parents, f"hwdb read from {hwdb}"
    shipped = sorted(p.relative_to(hwdb).as_posix() for p in hwdb.rglob("*.yaml"))
    source = sorted(
        p.relative_to(REPO / "hwdb").as_posix() for p in (REPO / "hwdb").rglob("*.yaml")
    )
    assert shipped == source
    assert f"{len(TOPOLOGY_IDS)} topologies" in out


def test_every_reference_topology_resolves_and_routes(installed_venv: InstalledVenv) -> None:
    """`fabricui topologies` lists every file in hwdb/topologies/, and each one routes a path."""
    listed = json.loads(installed_venv.run("fabricui", "topologies", "--json").stdout)
    assert TOPOLOGY_IDS
    assert set(TOPOLOGY_IDS) <= {t["id"] for t in listed}
    # One interpreter for all of them (a process each would cost a second apiece): the CLI's
    # own entry point, rank 0 to rank 1 on every topology.
    script = (
        "import contextlib, io, json, sys\n"
        "from fabricui.cli import main\n"
        "for topology in sys.argv[1:]:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        status = main(['path', '-t', topology, '--src', '0', '--dst', '1', '--json'])\n"
        "    report = json.loads(out.getvalue()) if status == 0 else None\n"
        "    print(json.dumps([topology, status, report and report['bottleneck_GBps']]))\n"
    )
    out = installed_venv.run("python", "-c", script, *TOPOLOGY_IDS).stdout
    results = [json.loads(line) for line in out.splitlines()]
    assert [r[0] for r in results] == TOPOLOGY_IDS
    failed = [r for r in results if r[1] != 0 or not r[2] or r[2] <= 0]
    assert not failed, f"topologies that did not route n0.g0 -> rank 1: {failed}"


def test_path_reports_the_readme_bottleneck(installed_venv: InstalledVenv) -> None:
    """The README's example path: 8 hops (PXN: over NVLink to the GPU on the destination's
    rail, out through its NIC), 50 GB/s at the NIC -> leaf hop, 1 GiB in 21.48 ms."""
    args = ("fabricui", "path", "--src", "n0.g0", "--dst", "n3.g7", "--size", "1G")
    report = json.loads(installed_venv.run(*args, "--json").stdout)
    assert report["topology"] == "dgx-h100-pod"
    assert len(report["hops"]) == 8
    assert report["bottleneck_GBps"] == 50.0
    assert report["bottleneck_link"] == "n0.nic7->leaf1"
    assert report["bottleneck_generation"] == "ib-ndr"
    assert report["transfer_us"] == pytest.approx(21477.7, rel=1e-3)
    text = installed_venv.run(*args).stdout
    assert "bottleneck: 50 GB/s per direction, hop 5 n0.nic7 -> leaf1 (ib-ndr)" in text


def test_collective_all_reduce_json(installed_venv: InstalledVenv) -> None:
    """A 1 GiB all-reduce on the default topology, with nccl-tests' busbw = algbw * 2(n-1)/n."""
    out = installed_venv.run("fabricui", "collective", "all_reduce", "--size", "1G", "--json")
    result = json.loads(out.stdout)
    assert result["op"] == "all_reduce" and result["topology"] == "dgx-h100-pod"
    n = result["nranks"]
    assert n == 32
    (row,) = result["rows"]
    assert row["size_bytes"] == 2**30
    assert row["time_us"] > 0
    assert row["algbw_GBps"] == pytest.approx(2**30 / row["time_us"] / 1e3, rel=1e-6)
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * (n - 1) / n, rel=1e-6)


def test_snapshot_writes_svg_and_text(installed_venv: InstalledVenv, tmp_path: Path) -> None:
    """`fabricui snapshot` renders the topology view headless to an SVG and a plain-text file."""
    pair = ("--src", "n0.g0", "--dst", "n3.g7")
    for name in ("path.svg", "path.txt"):
        out = installed_venv.run(
            "fabricui", "snapshot", "topology", *pair, "-o", name, cwd=tmp_path
        )
        assert f"wrote {name}" in out.stdout
    svg = (tmp_path / "path.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag.endswith("svg")
    assert "bottleneck" in svg and "n3.g7" in svg
    text = (tmp_path / "path.txt").read_text(encoding="utf-8")
    assert "<" not in text.split("\n", 1)[0]  # plain text, not markup
    assert "n0.g0 -> n3.g7" in text
    assert re.search(r"bottleneck\s+50 GB/s per direction", text), text


def test_plugins_lists_every_builtin_as_ok(installed_venv: InstalledVenv) -> None:
    """`plugins --all --json` names every entry point of pyproject.toml, each loaded without error.

    Other install tests may add example plugins to the shared venv, so only the built-ins
    are checked here.
    """
    out = installed_venv.run("fabricui", "plugins", "--all", "--json").stdout
    rows = {row["name"]: row for row in json.loads(out)["plugins"]}
    expected = builtin_entry_points()
    assert expected
    missing = sorted(set(expected) - set(rows))
    assert not missing, f"built-in plugins not listed: {missing}\n{out}"
    for name in expected:
        row = rows[name]
        assert (row["source"], row["status"], row["error"]) == ("builtin", "ok", None), row
        assert row["dist"] == "fabricui"
