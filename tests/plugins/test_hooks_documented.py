"""Every hook in fabricui.hookspecs is documented in the README with its signature."""

from __future__ import annotations

import inspect
from pathlib import Path

from fabricui import hookspecs

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def hook_names() -> list[str]:
    return [
        name
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("register_")
    ]


def test_every_hook_is_in_the_readme():
    """`register_<thing>(register)` appears in the README for each hookspec."""
    names = hook_names()
    assert names
    missing = [n for n in names if f"{n}(register)" not in README]
    assert not missing, f"undocumented hooks: {missing}"
