"""The settings file's ``hwdb:`` changes what every command computes, so anything wrong with
it - a number, a mapping, a list item that is not a name, a directory that does not exist - is
the same one-line error naming file, line and key, status 2. Problems in the explorer's own
settings (keymap, theme, an unknown key) stay one warning, and ``hwdb:`` still applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.errors import ConfigError
from fabricui.services.settings import HwdbSettingError, load_settings, read_settings

MINI_HWDB = Path(__file__).resolve().parents[1] / "data" / "hwdb" / "mini"


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A settings file of the test's own, beside a database directory ``db``."""
    path = tmp_path / "config.yaml"
    (tmp_path / "db").symlink_to(MINI_HWDB)
    monkeypatch.setenv("FABRICUI_CONFIG", str(path))
    monkeypatch.delenv("FABRICUI_HWDB", raising=False)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hwdb: 5\n", ":1: hwdb: expected a directory or a list of them (got 5)"),
        ("hwdb: true\n", ":1: hwdb: expected a directory or a list of them (got True)"),
        ("hwdb: {a: 1}\n", ":1: hwdb: expected a directory or a list of them (got {'a': 1})"),
        ("theme: nord\nhwdb:\n- db\n- 5\n", ":4: hwdb[1]: expected a directory name (got 5)"),
        ("hwdb: ['']\n", ":1: hwdb[0]: expected a directory name (got '')"),
        ("hwdb: nodir\n", ":1: hwdb: {dir}/nodir is not a directory"),
        ("hwdb:\n- db\n- nodir\n", ":3: hwdb[1]: {dir}/nodir is not a directory"),
    ],
)
def test_a_wrong_hwdb_is_one_error_line(run_cli, config: Path, text: str, expected: str):
    config.write_text(text, encoding="utf-8")
    status, out, err = run_cli("topologies")
    assert status == 2 and out == ""
    assert err == f"fabricui: error: {config}{expected.replace('{dir}', str(config.parent))}\n"


def test_the_explorer_views_refuse_it_too(run_cli, config: Path, tmp_path: Path):
    """``snapshot`` (the explorer's views, headless) reads the database the same way: the
    same line, before anything is drawn."""
    config.write_text("hwdb: 5\n", encoding="utf-8")
    status, _, err = run_cli("snapshot", "topology", "-o", str(tmp_path / "x.svg"))
    assert status == 2 and not (tmp_path / "x.svg").exists()
    assert err == (
        f"fabricui: error: {config}:1: hwdb: expected a directory or a list of them (got 5)\n"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("theme: 5\nhwdb: db\n", ":1: theme: expected a theme name"),
        ("keymap: 5\nhwdb: db\n", ":1: keymap: expected binding-id: keys pairs"),
        ("bogus: 1\nhwdb: db\n", ":1: unknown setting 'bogus'"),
    ],
)
def test_other_problems_warn_and_keep_hwdb(run_cli, config: Path, text: str, problem: str):
    config.write_text(text, encoding="utf-8")
    status, out, err = run_cli("topologies", "--json")
    assert status == 0
    assert "pcie-box" in {t["id"] for t in json.loads(out)}  # db's topology: hwdb: applied
    lines = err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"fabricui: warning: {config}{problem}")
    assert lines[0].endswith("(only its hwdb: used)")


def test_a_file_that_is_not_yaml_warns_and_is_not_used(run_cli, config: Path):
    config.write_text("hwdb: [\n", encoding="utf-8")
    status, _, err = run_cli("topologies")
    assert status == 0
    assert err.startswith(f"fabricui: warning: {config}:")
    assert err.rstrip().endswith("(settings not used)")


def test_load_settings_raises_and_read_settings_returns_the_problem(config: Path):
    """``load_settings`` (the explorer's keymap and theme) raises on every problem;
    ``read_settings`` returns the explorer-only ones and raises only for ``hwdb:``."""
    config.write_text("theme: 5\nhwdb: db\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="theme: expected a theme name"):
        load_settings()
    settings, problem = read_settings()
    assert settings.hwdb_dirs == (config.parent / "db",)
    assert settings.hwdb_where == (f"{config}:2: hwdb",)
    assert problem is not None and "theme" in problem
    config.write_text("theme: nord\nhwdb: 5\n", encoding="utf-8")
    with pytest.raises(HwdbSettingError, match=r":2: hwdb: expected a directory"):
        read_settings()
    with pytest.raises(ConfigError, match=r":2: hwdb: expected a directory"):
        load_settings()


def test_a_good_file_reads_as_before(config: Path):
    config.write_text("theme: nord\nkeymap: {view.topology: f1}\nhwdb: [db]\n", encoding="utf-8")
    settings, problem = read_settings()
    assert problem is None
    assert settings.theme == "nord" and settings.keymap == {"view.topology": "f1"}
    assert settings.hwdb_dirs == (config.parent / "db",)
