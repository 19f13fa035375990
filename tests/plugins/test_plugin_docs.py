"""docs/plugins.md documents every hook with an example that really registers."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import pytest

from fabricui import hookspecs
from fabricui.plugins import PluginHost

DOC = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
HOOKS = [
    n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("register_")
]
#: What each hook's facade method is called on the host.
FACADE = {
    "register_link_generations": "link_generations",
    "register_hwdb_paths": "hwdb_paths",
    "register_interconnects": "interconnects",
    "register_topology_builders": "topology_builders",
    "register_collective_algorithms": "collective_algorithms",
    "register_strategies": "strategies",
    "register_importers": "importers",
}


def section(hook: str) -> str:
    match = re.search(rf"^## {hook}\n(.*?)(?=^## |\Z)", DOC, re.S | re.M)
    assert match, f"docs/plugins.md has no section for {hook}"
    return match.group(1)


def test_every_hook_has_a_section():
    """A hook added to hookspecs without a docs section fails here."""
    assert set(HOOKS) == set(FACADE)
    for hook in HOOKS:
        section(hook)


@pytest.mark.parametrize("hook", HOOKS)
def test_example_registers_cleanly(hook, tmp_path):
    """Each section's example, run as a plugin module, contributes without a failure."""
    code = re.search(r"```python\n(.*?)```", section(hook), re.S)
    assert code, f"{hook}: no python example"
    module = types.ModuleType(f"doc_example_{hook}")
    module.__file__ = str(tmp_path / "example.py")
    exec(compile(code.group(1), f"docs/plugins.md:{hook}", "exec"), module.__dict__)
    host = PluginHost(load_external=False, builtins=False)
    assert host.register(module, name=module.__name__)
    contributed = getattr(host, FACADE[hook])()
    assert contributed, f"{hook}: the example registered nothing"
    assert host.failures == []
