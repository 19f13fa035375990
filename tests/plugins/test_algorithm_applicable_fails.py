"""A plugin algorithm whose ``applicable()`` raises (or answers garbage): asked for by name,
the refusal names the plugin and what went wrong in one line; under ``auto`` it is skipped
with one warning and the built-in algorithms price the collective."""

from __future__ import annotations

import pytest

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
def plugin(plugin_file) -> None:
    """The plugin file ``p_applicable.py`` (and the built-ins), a fresh host."""
    plugin_file("p_applicable", PLUGIN)


@pytest.mark.parametrize(
    ("algo", "why"),
    [
        ("boomalgo", "collective algorithm 'boomalgo': applicable: RuntimeError: applicable boom"),
        ("maybealgo", "collective algorithm 'maybealgo': applicable: returned str, not bool"),
    ],
)
def test_asked_for_by_name_the_refusal_names_plugin_and_error(run_main, algo: str, why: str):
    status, out, err = run_main("collective", "all_gather", "1M", "--algo", algo)
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("fabricui: error:")]
    assert errors == [
        f"fabricui: error: no algorithm can run all_gather on this group: plugin "
        f"p_applicable: {why}"
    ]


def test_under_auto_it_is_skipped_with_one_warning(run_main):
    status, out, err = run_main("collective", "all_reduce", "1M")
    assert status == 0 and "best for 1 MiB" in out
    assert err.splitlines() == [
        "fabricui: plugin p_applicable skipped: collective algorithm 'boomalgo': applicable: "
        "RuntimeError: applicable boom",
        "fabricui: plugin p_applicable skipped: collective algorithm 'maybealgo': applicable: "
        "returned str, not bool",
    ]


def test_a_failed_algorithm_keeps_naming_why(run_main):
    """Asked for again in the same process (the explorer), the same line: the failure is
    remembered, the plugin not called again."""
    first = run_main("collective", "all_gather", "1M", "--algo", "boomalgo")[2]
    again = run_main("collective", "all_gather", "2M", "--algo", "boomalgo")[2]
    line = "applicable: RuntimeError: applicable boom"
    assert line in first.splitlines()[-1] and line in again.splitlines()[-1]
