"""The layers of docs/architecture.md hold: import-linter's contracts in pyproject.toml (the
layer order, a pure engine, Textual only in the TUI, no import cycle at any depth)."""

from __future__ import annotations

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
