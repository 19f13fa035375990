"""Hostile environments, end to end: ``fabricui`` run as a separate process (closed streams,
broken pipes, signals, memory limits, other users, misbehaving plugins)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _hostile import environment


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A clean environment for one run (built-in plugins only)."""
    return environment(tmp_path)
