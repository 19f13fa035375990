"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.plugins import get_host
from fabricui.plugins import host as plugins_module


@pytest.fixture
def installed() -> None:
    """Built-ins are found through the installed distribution's entry points."""
    try:
        importlib.metadata.distribution("fabricui")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("fabricui is not installed (pip install -e .)")


@pytest.fixture
def plugin_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Callable[[str, str], Path]]:
    """``plugin_file(name, source)`` writes one third-party plugin file into a trusted
    plugins directory, beside the built-ins, with no plugin environment inherited and a
    fresh plugin host before and after."""
    for name in (plugins_module.ENV_LOAD, plugins_module.ENV_DISABLE, plugins_module.ENV_STRICT):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    directory = tmp_path / "plugins"
    directory.mkdir(mode=0o700)
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))

    def write(name: str, source: str) -> Path:
        path = directory / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        get_host.cache_clear()
        return path

    get_host.cache_clear()
    yield write
    get_host.cache_clear()


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the CLI in-process, asserting no traceback: ``(status, stdout, stderr)``."""

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv))
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return status, out, err

    return run
