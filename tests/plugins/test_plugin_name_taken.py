"""A plugin named like one already loaded (a built-in's name, or the same module under a
second name) is named and skipped in one line, before its code runs; the rest loads."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import sys
import types
from pathlib import Path

import pytest

from fabricui import hookimpl
from fabricui.cli import main
from fabricui.engine.types import Interconnect
from fabricui.plugins import PluginHost, get_host
from fabricui.plugins import host as plugins_module

ENV_VARS = (
    plugins_module.ENV_PLUGINS_DIR,
    plugins_module.ENV_LOAD,
    plugins_module.ENV_DISABLE,
    plugins_module.ENV_STRICT,
    plugins_module.ENV_TRACE,
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No plugin env vars, a config dir of the test's own, a fresh process-wide host."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    get_host.cache_clear()
    yield
    get_host.cache_clear()


def plugin_dir(tmp_path: Path, **files: str) -> Path:
    directory = tmp_path / "plugs"
    directory.mkdir(mode=0o700)
    for stem, text in files.items():
        (directory / f"{stem}.py").write_text(text, encoding="utf-8")
    return directory


def vendor_module(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    """Module ``module`` registering interconnect ``name``."""

    @hookimpl
    def register_interconnects(register):  # type: ignore[no-untyped-def]
        register(Interconnect(name, (name,)))

    fake = types.ModuleType(module)
    fake.register_interconnects = register_interconnects  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module, fake)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_file_plugin_named_like_a_builtin_is_skipped_before_it_runs(
    installed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """nvlink.py in the plugin directory: one line naming the file and the built-in; its
    code never runs; the built-in nvlink and the other file plugins still load."""
    marker = tmp_path / "ran"
    directory = plugin_dir(
        tmp_path,
        nvlink=f"open({str(marker)!r}, 'w').close()\n",
        p_fine="x = 1\n",
    )
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    host = PluginHost()
    assert not marker.exists()
    errors = [f.error for f in host.failures if f.name == "nvlink"]
    assert errors == [f"{directory / 'nvlink.py'}: the name is taken by the built-in plugin nvlink"]
    rows = {(r["name"], r["source"]): r for r in host.describe()}
    assert rows[("nvlink", "builtin")]["status"] == "ok"
    assert rows[("nvlink", "file")]["status"] == "failed"
    assert rows[("p_fine", "file")]["status"] == "ok"
    assert "nvlink4" in host.link_generations() or "nvlink" in host.interconnects()


def test_plugins_command_prints_one_short_line(
    installed: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """``fabricui plugins`` with the clash: status 0, the error is one short line (not the
    plugin manager's whole registry)."""
    directory = plugin_dir(tmp_path, nvlink="x = 1\n")
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    status, out, err = run("plugins")
    assert status == 0
    lines = [line for line in out.splitlines() if "name is taken" in line]
    assert len(lines) == 1
    assert "the name is taken by the built-in plugin nvlink" in lines[0]
    assert len(lines[0]) < 200
    assert "Plugin name already registered" not in out + err


def test_entry_point_named_like_a_builtin_is_skipped(
    installed: None, monkeypatch: pytest.MonkeyPatch
):
    """An entry point ``nvlink = vendor_mod`` of another distribution: named and skipped; a
    second entry point of the same distribution with a free name loads."""
    vendor_module(monkeypatch, "vendor_clash", "clashnet")
    vendor_module(monkeypatch, "vendor_free", "freenet")
    found = plugins_module.entry_points()
    extra = [
        importlib.metadata.EntryPoint(name="nvlink", value="vendor_clash", group="fabricui"),
        importlib.metadata.EntryPoint(name="freenet", value="vendor_free", group="fabricui"),
    ]
    monkeypatch.setattr(plugins_module, "entry_points", lambda: found + extra)
    host = PluginHost()
    errors = [f.error for f in host.failures if f.name == "nvlink"]
    assert errors == [
        "entry point nvlink = vendor_clash: the name is taken by the built-in plugin nvlink"
    ]
    assert "freenet" in host.interconnects()
    assert "clashnet" not in host.interconnects()


def test_same_module_under_a_second_name_is_skipped(monkeypatch: pytest.MonkeyPatch):
    """Two entry points naming one module: the second is skipped naming the first."""
    vendor_module(monkeypatch, "vendor_twice", "twicenet")
    eps = [
        importlib.metadata.EntryPoint(name="first", value="vendor_twice", group="fabricui"),
        importlib.metadata.EntryPoint(name="second", value="vendor_twice", group="fabricui"),
    ]
    monkeypatch.setattr(plugins_module, "entry_points", lambda: eps)
    host = PluginHost(builtins=False)
    assert list(host.interconnects()) == ["twicenet"]
    assert [(f.name, f.error) for f in host.failures] == [
        (
            "second",
            "entry point second = vendor_twice: the same module is already loaded as "
            "plugin first (entry point first = vendor_twice)",
        )
    ]


def test_two_file_plugins_with_one_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The same file name in two plugin directories: the second names the first's path."""
    one = tmp_path / "one"
    two = tmp_path / "two"
    for directory in (one, two):
        directory.mkdir(mode=0o700)
        (directory / "p_same.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(plugins_module, "plugin_dirs", lambda: [one, two])
    host = PluginHost(builtins=False)
    assert [(f.name, f.error) for f in host.failures] == [
        (
            "p_same",
            f"{two / 'p_same.py'}: the name is taken by plugin p_same ({one / 'p_same.py'})",
        )
    ]
