"""The headless core never imports Textual; the engine and fabric never import YAML; the
explorer's workers find the packages that import their own modules already imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


def modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_engine_and_fabric_are_free_of_yaml_and_textual():
    """Engine and fabric import numpy only (no yaml, textual or rich)."""
    loaded = modules_after("import fabricui.engine.evaluate, fabricui.fabric")
    assert not {"yaml", "textual", "rich"} & loaded


def test_cli_path_does_not_import_textual():
    """``fabricui path`` stays headless."""
    loaded = modules_after("import fabricui.cli, fabricui.render.path, fabricui.hwdb")
    assert "textual" not in loaded


def test_cli_start_leaves_one_command_modules_unimported():
    """Building the parser imports what every command needs, not what one command's run
    needs: the explorer (asyncio), ``plan --run``'s pricing, serve's access checks and
    probe's socket are imported by the command that uses them (start-up time)."""
    loaded = modules_after("import fabricui.cli; fabricui.cli.build_parser()")
    one_command = {
        "asyncio",
        "socket",
        "fabricui.tui.launch",
        "fabricui.services.plan_runs",
        "fabricui.services.serve_access",
    }
    assert not one_command & loaded


def _eager_packages() -> list[str]:
    """Packages of ``fabricui`` whose ``__init__`` imports one of their own modules."""
    root = Path(__file__).parents[2]
    eager = []
    for init in sorted((root / "fabricui").rglob("__init__.py")):
        package = ".".join(init.parent.relative_to(root).parts)
        tree = ast.parse(init.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package + ".")
            for node in tree.body
        ):
            eager.append(package)
    return eager


def test_the_loaded_fabric_imports_every_eager_package():
    """``import fabricui.services.loaded`` (the explorer's loading worker does it first)
    imports every package whose ``__init__`` imports its own modules: the views' workers,
    which run on a loaded fabric, never enter one of those from two threads at once."""
    eager = _eager_packages()
    assert "fabricui.fabric" in eager  # the scan finds them
    missing = set(eager) - modules_after("import fabricui.services.loaded")
    assert not missing, f"imported first by a worker: {sorted(missing)}"
