"""The layers of docs/architecture.md hold: import-linter's contracts in pyproject.toml (the
layer order, a pure engine, Textual only in the TUI, no import cycle at any depth)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def test_import_contracts_hold():
    """``lint-imports`` keeps every contract."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        if sys.version_info < (3, 10):
            pytest.skip("import-linter needs Python 3.10+; the contracts are checked there")
        pytest.fail("lint-imports is missing: pip install -e '.[test]'")
    result = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


#: What the views (commands, TUI, CLI) may not import at run time: they ask the services.
#: Type-only imports (under ``if TYPE_CHECKING:``) name the types results carry; the device
#: kinds (``fabric.kinds``, one small enum) are words of the map as much as of the fabric.
BELOW_SERVICES = ("fabricui.engine", "fabricui.importers", "fabricui.fabric", "fabricui.hwdb")
VIEW_MAY_IMPORT = ("fabricui.fabric.kinds",)


def _run_time_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each ``from X import`` outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    return [
        (node.lineno, node.module)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and id(node) not in type_only
    ]


def test_views_reach_the_engine_only_through_services():
    """Commands, the TUI and the CLI import no engine, importer, fabric or hwdb module at
    run time (one road: every figure a view shows comes from a service)."""
    files = [ROOT / "fabricui" / "cli.py"]
    for package in ("commands", "tui"):
        files += sorted((ROOT / "fabricui" / package).rglob("*.py"))
    reaches = [
        f"{path.relative_to(ROOT)}:{line} {module}"
        for path in files
        for line, module in _run_time_imports(path)
        if module.startswith(BELOW_SERVICES) and not module.startswith(VIEW_MAY_IMPORT)
    ]
    assert not reaches, "views reaching past the services:\n" + "\n".join(reaches)
