"""``fabricui plugins new``: name checks, what it writes, no overwriting without --force."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.errors import ConfigError
from fabricui.plugins import PluginHost
from fabricui.plugins import scaffold as scaffold_module
from fabricui.plugins.scaffold import plugin_names, render, scaffold

#: Files every scaffold holds, for plugin ``my-fabric``.
FILES = {
    "pyproject.toml",
    "README.md",
    "fabricui_my_fabric/__init__.py",
    "tests/test_my_fabric.py",
}


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_names_derived_from_the_plugin_name():
    """my-fabric -> distribution fabricui-my-fabric, package fabricui_my_fabric, ids."""
    names = plugin_names("my-fabric2")
    assert names.project == "fabricui-my-fabric2"
    assert names.package == "fabricui_my_fabric2"
    assert names.module == "my_fabric2"
    assert names.title == "My Fabric2"
    assert names.link_id == "my-fabric2-400g"
    assert names.strategy == "my-fabric2-grad-norm"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("MyFabric", "lowercase letters, digits and single dashes"),
        ("my_fabric", "lowercase letters, digits and single dashes"),
        ("2fast", "starting with a letter"),
        ("my--fabric", "single dashes"),
        ("-x", "single dashes"),
        ("x-", "single dashes"),
        ("", "lowercase letters"),
        ("my fabric", "lowercase letters"),
        ("fabricui-x", "leave out the fabricui- prefix"),
        ("nvlink", "taken by a built-in plugin"),
        ("ddp", "taken by a built-in plugin"),
        ("strategies", "fabricui_strategies would shadow a built-in"),
    ],
)
def test_bad_names_are_one_line_errors_with_exit_2(
    name: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """A bad or built-in name: one stderr line, exit 2, nothing written."""
    with pytest.raises(ConfigError) as info:
        plugin_names(name)
    assert why in str(info.value) and "\n" not in str(info.value)
    assert main(["plugins", "new", "--dir", str(tmp_path), "--", name]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and why in err
    assert list(tmp_path.iterdir()) == []


def test_builtin_names_come_from_the_entry_points(monkeypatch: pytest.MonkeyPatch):
    """Without fabricui's metadata the fallback list still holds every built-in."""
    names, packages = scaffold_module.builtin_names()
    assert {"nvlink", "ddp", "importers"} <= names and "fabricui_strategies" in packages

    def missing(name: str) -> None:
        raise scaffold_module.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(scaffold_module.importlib.metadata, "distribution", missing)
    assert scaffold_module.builtin_names() == (
        scaffold_module.FALLBACK_BUILTINS,
        scaffold_module.FALLBACK_PACKAGES,
    )
    assert names <= scaffold_module.FALLBACK_BUILTINS


def test_writes_the_package(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """The CLI writes fabricui-NAME/ with every template filled in, into a new --dir."""
    parent = tmp_path / "not" / "yet"
    assert main(["plugins", "new", "my-fabric", "--dir", str(parent)]) == 0
    target = parent / "fabricui-my-fabric"
    assert files_under(target) == FILES
    assert list(parent.iterdir()) == [target]  # no staging directory left behind
    out = capsys.readouterr().out
    assert out.startswith(f"created {target.as_posix()}/") and "pip install -e" in out
    for path in target.rglob("*"):
        if path.is_file():
            assert "${" not in path.read_text(encoding="utf-8"), path
    for py in target.rglob("*.py"):
        compile(py.read_text(encoding="utf-8"), str(py), "exec")


def test_pyproject_declares_the_entry_point(tmp_path: Path):
    """pyproject.toml: hatchling, group fabricui, NAME = fabricui_<name>, the package."""
    tomllib = pytest.importorskip("tomllib")
    target = scaffold("my-fabric", tmp_path)
    data = tomllib.loads((target / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["build-system"]["build-backend"] == "hatchling.build"
    assert data["project"]["name"] == "fabricui-my-fabric"
    assert data["project"]["entry-points"]["fabricui"] == {"my-fabric": "fabricui_my_fabric"}
    assert data["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["fabricui_my_fabric"]
    assert any(dep.startswith("fabricui>=") for dep in data["project"]["dependencies"])


def test_generated_plugin_registers_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The generated module, registered in a fresh host, contributes its three things."""
    target = scaffold("my-fabric", tmp_path)
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.delitem(sys.modules, "fabricui_my_fabric", raising=False)
    module = importlib.import_module("fabricui_my_fabric")
    try:
        host = PluginHost(load_external=False, builtins=False)
        assert host.register(module, name="my-fabric")
        (row,) = host.describe()
        assert row["status"] == "ok" and host.failures == []
        assert row["contributes"] == {
            "link_generations": ["my-fabric-400g"],
            "interconnects": ["my-fabric"],
            "strategies": ["my-fabric-grad-norm"],
        }
        assert host.link_generations()["my-fabric-400g"].source.startswith("https://")
    finally:
        sys.modules.pop("fabricui_my_fabric", None)


def test_existing_directory_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """Without --force an existing fabricui-NAME (even empty, or a file) stays as it was."""
    target = tmp_path / "fabricui-my-fabric"
    target.mkdir()
    (target / "mine.txt").write_text("keep me", encoding="utf-8")
    assert main(["plugins", "new", "my-fabric", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err and err.count("\n") == 1
    assert files_under(target) == {"mine.txt"}
    shutil.rmtree(target)
    target.write_text("a file", encoding="utf-8")
    with pytest.raises(ConfigError, match="already exists"):
        scaffold("my-fabric", tmp_path)
    assert target.read_text(encoding="utf-8") == "a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fabricui-my-fabric"]


def test_force_replaces_the_directory(tmp_path: Path):
    """--force swaps in a fresh package; the old contents and the staging dirs are gone."""
    target = tmp_path / "fabricui-my-fabric"
    (target / "old").mkdir(parents=True)
    (target / "old" / "stale.py").write_text("", encoding="utf-8")
    assert main(["plugins", "new", "my-fabric", "--dir", str(tmp_path), "--force"]) == 0
    assert files_under(target) == FILES
    assert [p.name for p in tmp_path.iterdir()] == ["fabricui-my-fabric"]


def test_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A write that fails halfway leaves neither a partial package nor a staging dir,
    and with --force the existing package survives untouched."""
    real = Path.write_text
    calls = []

    def flaky(self: Path, *args: object, **kwargs: object) -> int:
        calls.append(self)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(ConfigError, match=r"fabricui-my-fabric: cannot write \(disk full\)"):
        scaffold("my-fabric", tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(Path, "write_text", real)
    target = scaffold("my-fabric", tmp_path)
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    calls.clear()
    monkeypatch.setattr(Path, "write_text", flaky)
    with pytest.raises(ConfigError, match="disk full"):
        scaffold("my-fabric", tmp_path, force=True)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["fabricui-my-fabric"]


def test_unwritable_directory_is_one_line_exit_2(tmp_path: Path, capsys):
    """--dir under a regular file: one error line, exit status 2, no traceback."""
    from fabricui.cli import main

    (tmp_path / "file").write_text("x")
    assert main(["plugins", "new", "foo", "--dir", str(tmp_path / "file" / "sub")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["x", "my-fabric", "a-rather-long-plugin-name-for-line-lengths"])
def test_generated_code_passes_ruff(name: str, tmp_path: Path):
    """The generated Python is formatted and lint-clean under the house ruff rules."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed")
    target = scaffold(name, tmp_path)
    rules = ["--isolated", "--line-length", "100", "--target-version", "py39"]
    for args in (
        ["check", *rules, "--select", "A,B,E,F,I,UP,SIM", "."],
        ["format", "--check", *rules, "."],
    ):
        result = subprocess.run([ruff, *args], cwd=target, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_render_matches_the_template_list():
    """Every template becomes exactly one file."""
    files = render(plugin_names("my-fabric"))
    assert set(files) == FILES


def test_listing_still_parses_without_an_action(capsys: pytest.CaptureFixture[str]):
    """``fabricui plugins --json`` (no action) is still the listing."""
    assert main(["plugins", "--json"]) == 0
    assert '"plugins"' in capsys.readouterr().out


def test_scale_up_template_ships_yaml_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """--scale-up: a link generation and a topology in hwdb/, the interconnect owning the
    family; registered in a host with the built-ins, the topology routes over the link and
    the package's own test checks what it registers, not an exact list."""
    assert main(["plugins", "new", "foo-link", "--scale-up", "--dir", str(tmp_path)]) == 0
    target = tmp_path / "fabricui-foo-link"
    assert files_under(target) == {
        "pyproject.toml",
        "README.md",
        "fabricui_foo_link/__init__.py",
        "fabricui_foo_link/hwdb/links.yaml",
        "fabricui_foo_link/hwdb/topologies/foo-link-node.yaml",
        "tests/test_foo_link.py",
    }
    test_text = (target / "tests" / "test_foo_link.py").read_text(encoding="utf-8")
    assert 'in contributes.get("link_generations", [])' in test_text
    assert '["contributes"] ==' not in test_text
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.delitem(sys.modules, "fabricui_foo_link", raising=False)
    module = importlib.import_module("fabricui_foo_link")
    try:
        from fabricui import api
        from fabricui.fabric import build_fabric
        from fabricui.hwdb.resolve import resolve_topology
        from fabricui.services.session import load_catalog_with_plugins

        host = PluginHost(load_external=False, builtins=True)
        assert host.register(module, name="foo-link")
        row = next(r for r in host.describe() if r["name"] == "foo-link")
        assert row["status"] == "ok", row["error"]
        assert row["contributes"]["link_generations"] == ["foo-link-gen1"]
        assert row["contributes"]["topologies"] == ["foo-link-node"]
        catalog = load_catalog_with_plugins(host=host)
        fabric = build_fabric(resolve_topology("foo-link-node", catalog), catalog)
        report = api.path(fabric, "0", "1")
        assert [(h.link, h.bw_GBps) for h in report.hops] == [("foo-link-gen1", 100.0)]
    finally:
        sys.modules.pop("fabricui_foo_link", None)


def test_scale_out_test_checks_what_it_registers(tmp_path: Path):
    """The default (scale-out) package's test asserts "registers at least", so adding a hook
    does not break it."""
    target = scaffold("my-fabric", tmp_path, kind="scale-out")
    text = (target / "tests" / "test_my_fabric.py").read_text(encoding="utf-8")
    assert "LINK_ID in contributes.get" in text and '["contributes"] ==' not in text
    with pytest.raises(ConfigError, match="plugin kind 'sideways'"):
        scaffold("other", tmp_path, kind="sideways")
