"""Plugin authors need one module: the example packages import only ``fabricui.api`` (and
``fabricui.hookimpl``), and that module names everything they use."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "plugins" / "examples").rglob("*.py"))
#: The scaffold's templates and the built-in plugins' entry modules: what a vendor copies.
TEMPLATES = sorted((ROOT / "fabricui" / "plugins" / "templates").rglob("*.py.tmpl"))
#: Every module of the built-in strategy plugin too: strategies need nothing private.
BUILTIN_ENTRIES = sorted(
    {*(ROOT / "plugins").glob("fabricui_*/__init__.py")}
    | {*(ROOT / "plugins" / "fabricui_strategies").glob("*.py")}
)
ALLOWED = {"fabricui", "fabricui.api"}


def _fabricui_imports(path: Path) -> list[tuple[int, str]]:
    # Templates hold ${placeholders}: fill them with a plain name to parse them.
    text = re.sub(r"\$\{(\w+)\}", r"\1", path.read_text(encoding="utf-8"))
    tree = ast.parse(text)
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


@pytest.mark.parametrize(
    "path", EXAMPLES + TEMPLATES + BUILTIN_ENTRIES, ids=lambda p: str(p.relative_to(ROOT))
)
def test_examples_import_only_the_public_api(path):
    """No example module, scaffold template or built-in plugin entry reaches into
    fabricui's internals."""
    bad = [f"{line}: {name}" for line, name in _fabricui_imports(path) if name not in ALLOWED]
    assert not bad, f"{path.name} imports internals: {bad}"


def test_every_public_name_exists():
    """``fabricui.api.__all__`` names only what the module defines."""
    from fabricui import api

    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing
