"""The code passes ruff's lint and format checks (configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
TARGETS = ["fabricui", "tests", "benchmarks", "plugins", "tools"]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(exe).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    targets = [t for t in TARGETS if (ROOT / t).exists()]
    return subprocess.run(
        [exe, *args, *targets], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_ruff_check():
    """No lint findings."""
    result = ruff("check", "--output-format", "concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    """Formatting is ruff's."""
    result = ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_over_the_package_and_the_plugins():
    """Every layer, the TUI included, and the built-in plugins type-check (``[tool.mypy]``
    in pyproject.toml): a ``type: ignore`` that hides nothing is itself an error, so the
    ones left still say why."""
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
