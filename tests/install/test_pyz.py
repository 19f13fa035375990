"""``fabricui.pyz`` on its own: built by the documented command, run from an empty directory
by a bare ``python3`` (no virtual environment, no PYTHONPATH, a fresh home), with the hwdb
and every built-in plugin coming from inside the file."""

from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.build_pyz import has_shiv

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not has_shiv(), reason="building the pyz needs shiv (fabricui[test])"),
]

REPO = Path(__file__).resolve().parents[2]
#: The README's example pair (50 GB/s at the InfiniBand hop, 1 GiB).
PAIR = ("-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7", "--size", "1G")


def bare_python(version: tuple[int, int] | None = None) -> Path | None:
    """A CPython outside any virtual environment: this one's base interpreter, or one of
    another ``version`` from pyenv or the system."""
    if version is None:
        version = sys.version_info[:2]
        base = Path(sys.base_prefix) / "bin" / f"python{version[0]}.{version[1]}"
        if base.is_file():
            return base
    name = f"python{version[0]}.{version[1]}"
    candidates = [
        *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version[0]}.{version[1]}.*"))),
        "/usr",
        "/usr/local",
    ]
    for prefix in candidates:
        path = Path(prefix) / "bin" / name
        if path.is_file():
            return path
    return None


def other_python() -> Path | None:
    """A bare CPython of another minor version that fabricui supports (>= 3.9), if any."""
    for minor in (9, 13, 12, 10, 11):
        if (3, minor) != sys.version_info[:2]:
            found = bare_python((3, minor))
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
class Pyz:
    """A built pyz and the clean place it runs from."""

    path: Path
    home: Path
    workdir: Path

    def run(self, python: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``python fabricui.pyz args`` from the empty work directory, with a bare environment:
        PATH, HOME and LANG only (shiv unpacks into HOME/.shiv)."""
        env = {
            "PATH": f"{python.parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        proc = subprocess.run(
            [str(python), str(self.path), *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(f"{' '.join(args)} exited {proc.returncode}\n{proc.stderr[-3000:]}")
        return proc


def build(base: Path, *options: str) -> Pyz:
    """Build a pyz with the README's command into ``base``."""
    out = build_file(base, *options)
    (base / "home").mkdir()
    (base / "work").mkdir()
    return Pyz(out, base / "home", base / "work")


def build_file(base: Path, *options: str) -> Path:
    """The pyz the README's command builds into ``base / "dist"``."""
    out = base / "dist" / "fabricui.pyz"
    proc = subprocess.run(
        [sys.executable, "tools/build_pyz.py", "-o", str(out), *options],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"wrote {out} (")
    return out


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Pyz:
    """A pyz built for this interpreter, once for the whole run: pytest-xdist's workers
    share it (the first builds it under a lock in the run's common temporary directory),
    each running it from a home and work directory of its own."""
    own = tmp_path_factory.mktemp("pyz")
    shared = own
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker's base is under the run's
        shared = tmp_path_factory.getbasetemp().parent
    with (shared / "pyz.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = shared / "pyz-built" / "dist" / "fabricui.pyz"
        if not built.is_file():
            build_file(shared / "pyz-built")
    (own / "home").mkdir()
    (own / "work").mkdir()
    return Pyz(built, own / "home", own / "work")


@pytest.fixture(scope="module")
def python() -> Path:
    """This CPython's bare interpreter."""
    found = bare_python()
    if found is None:
        pytest.skip(f"no bare python{sys.version_info[0]}.{sys.version_info[1]} found")
    return found


@pytest.fixture(scope="module")
def expected_path() -> dict:
    """``fabricui path --json`` for PAIR, computed by the checkout in this process."""
    import contextlib
    import io

    from fabricui.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["path", *PAIR, "--json"]) == 0
    report = json.loads(out.getvalue())
    assert report["topology"] == "dgx-h100-pod" and report["bottleneck_GBps"] == 50.0
    return report


def test_path_json_from_a_bare_python(pyz: Pyz, python: Path, expected_path: dict) -> None:
    """``python3 fabricui.pyz path --json`` from an empty directory: the checkout's report."""
    assert json.loads(pyz.run(python, "path", *PAIR, "--json").stdout) == expected_path
    assert not list(pyz.workdir.iterdir()), "the pyz wrote into the working directory"


def test_runs_as_a_program_through_its_shebang(pyz: Pyz, python: Path) -> None:
    """``./fabricui.pyz --version``: its first line finds python3 on PATH."""
    assert pyz.path.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert os.access(pyz.path, os.X_OK)
    env = {"PATH": f"{python.parent}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(pyz.home)}
    python3 = python.parent / "python3"
    if not python3.is_file():
        pytest.skip(f"{python.parent} has no python3 for the shebang to find")
    proc = subprocess.run(
        [str(pyz.path), "--version"], cwd=pyz.workdir, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("fabricui ")


def test_every_builtin_plugin_loads_from_the_pyz(pyz: Pyz, python: Path) -> None:
    """Entry points come from the bundled dist metadata: every built-in plugin is loaded."""
    declared = re.search(
        r"^\[project\.entry-points\.fabricui\]\n(.*?)(?=^\[|\Z)",
        (REPO / "pyproject.toml").read_text(encoding="utf-8"),
        re.M | re.S,
    )
    assert declared
    names = set(re.findall(r"^\s*([\w.-]+)\s*=", declared.group(1), re.M))
    listed = json.loads(pyz.run(python, "plugins", "--all", "--json").stdout)["plugins"]
    loaded = {p["name"]: p for p in listed}
    assert names <= set(loaded), f"missing: {sorted(names - set(loaded))}"
    for name in names:
        assert loaded[name]["status"] == "ok", loaded[name]
        assert loaded[name]["source"] == "builtin", loaded[name]


def test_hwdb_comes_from_inside_the_pyz(pyz: Pyz, python: Path) -> None:
    """``hwdb validate`` checks the database unpacked from the pyz, with every record file."""
    out = pyz.run(python, "hwdb", "validate").stdout
    match = re.match(r"ok: (\S+):", out)
    assert match, out
    hwdb = Path(match.group(1)).resolve()
    assert (pyz.home / ".shiv").resolve() in hwdb.parents, f"hwdb read from {hwdb}"
    shipped = sorted(p.relative_to(hwdb).as_posix() for p in hwdb.rglob("*.yaml"))
    source = sorted(
        p.relative_to(REPO / "hwdb").as_posix() for p in (REPO / "hwdb").rglob("*.yaml")
    )
    assert shipped == source


def test_bad_input_is_still_one_line(pyz: Pyz, python: Path) -> None:
    """A typo is fabricui's one-line error from inside the pyz too."""
    proc = pyz.run(
        python, "path", "-t", "dgx-h100-pod", "--src", "n9.g0", "--dst", "0", check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("fabricui: error: no GPU n9.g0") and proc.stderr.count("\n") == 1


def test_another_python_gets_one_line(pyz: Pyz) -> None:
    """Run by a CPython it was not built for: one line naming the build option, exit 2."""
    other = other_python()
    if other is None:
        pytest.skip("no CPython of another minor version found")
    proc = pyz.run(other, "path", *PAIR, "--json", check=False)
    version = re.search(r"python(\d+\.\d+)$", other.name)
    assert version
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("fabricui: error: this fabricui.pyz holds compiled packages")
    assert f"--python-version {version.group(1)}" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_built_for_another_python(tmp_path: Path, expected_path: dict) -> None:
    """``--python-version X.Y`` builds from pip's binary wheels for that CPython, and the pyz
    runs there (the RHEL 9 login node's 3.9 from a 3.11 workstation)."""
    other = other_python()
    if other is None:
        pytest.skip("no CPython of another minor version found")
    version = re.search(r"python(\d+\.\d+)$", other.name)
    assert version
    cross = build(tmp_path, "--python-version", version.group(1))
    assert json.loads(cross.run(other, "path", *PAIR, "--json").stdout) == expected_path
