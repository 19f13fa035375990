"""A plugin algorithm whose ``applicable()`` raises (or answers garbage): asked for by name,
the refusal names the plugin and what went wrong in one line; under ``auto`` it is skipped
with one warning and the built-in algorithms price the collective."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.cli import main
from fabricui.plugins import get_host
from fabricui.plugins import host as plugins_module

PLUGIN = """\
from fabricui.api import CollectiveAlgorithm, hookimpl


class Raising(CollectiveAlgorithm):
    name = "boomalgo"
    ops = ("all_reduce", "all_gather")
    protocols = ("simple",)
    description = "applicable raises"

    def applicable(self, group, op):
        raise RuntimeError("applicable boom")

    def time_us(self, group, op, size_bytes, protocol):
        return size_bytes * 0 + 1e6


class Garbage(Raising):
    name = "maybealgo"
    description = "applicable answers a word"

    def applicable(self, group, op):
        return "maybe"


@hookimpl
def register_collective_algorithms(register):
    register(Raising())
    register(Garbage())
"""


@pytest.fixture(autouse=True)
def plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plugin file ``p_applicable.py`` (and the built-ins), a fresh host."""
    for name in (plugins_module.ENV_LOAD, plugins_module.ENV_DISABLE, plugins_module.ENV_STRICT):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    directory = tmp_path / "plugins"
    directory.mkdir(mode=0o700)
    (directory / "p_applicable.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    get_host.cache_clear()
    yield
    get_host.cache_clear()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


@pytest.mark.parametrize(
    ("algo", "why"),
    [
        ("boomalgo", "collective algorithm 'boomalgo': applicable: RuntimeError: applicable boom"),
        ("maybealgo", "collective algorithm 'maybealgo': applicable: returned str, not bool"),
    ],
)
def test_asked_for_by_name_the_refusal_names_plugin_and_error(capsys, algo: str, why: str):
    status, out, err = run(capsys, "collective", "all_gather", "1M", "--algo", algo)
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("fabricui: error:")]
    assert errors == [
        f"fabricui: error: no algorithm can run all_gather on this group: plugin "
        f"p_applicable: {why}"
    ]


def test_under_auto_it_is_skipped_with_one_warning(capsys):
    status, out, err = run(capsys, "collective", "all_reduce", "1M")
    assert status == 0 and "best for 1 MiB" in out
    assert err.splitlines() == [
        "fabricui: plugin p_applicable skipped: collective algorithm 'boomalgo': applicable: "
        "RuntimeError: applicable boom",
        "fabricui: plugin p_applicable skipped: collective algorithm 'maybealgo': applicable: "
        "returned str, not bool",
    ]


def test_a_failed_algorithm_keeps_naming_why(capsys):
    """Asked for again in the same process (the explorer), the same line: the failure is
    remembered, the plugin not called again."""
    first = run(capsys, "collective", "all_gather", "1M", "--algo", "boomalgo")[2]
    again = run(capsys, "collective", "all_gather", "2M", "--algo", "boomalgo")[2]
    line = "applicable: RuntimeError: applicable boom"
    assert line in first.splitlines()[-1] and line in again.splitlines()[-1]
