"""The headless core never imports Textual; the engine and fabric never import YAML."""

from __future__ import annotations

import subprocess
import sys


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
