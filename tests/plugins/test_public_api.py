"""Plugin authors need one module: the example packages import only ``fabricui.api`` (and
``fabricui.hookimpl``), and that module names everything they use."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "plugins" / "examples").rglob("*.py"))
ALLOWED = {"fabricui", "fabricui.api"}


def _fabricui_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == "fabricui" or n.startswith("fabricui.")]
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_import_only_the_public_api(path):
    """No example module reaches into fabricui's internals."""
    bad = [f"{line}: {name}" for line, name in _fabricui_imports(path) if name not in ALLOWED]
    assert not bad, f"{path.name} imports internals: {bad}"


def test_every_public_name_exists():
    """``fabricui.api.__all__`` names only what the module defines."""
    from fabricui import api

    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing
