"""Shared pieces of the hostile-environment tests: ``fabricui`` run as a separate process in
a clean environment, and what its output must never look like."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
#: Environment variables that would let the developer's own setup leak into a run.
SCRUBBED = (
    "FABRICUI_PLUGINS_DIR",
    "FABRICUI_LOAD_PLUGINS",
    "FABRICUI_DISABLE_PLUGINS",
    "FABRICUI_STRICT_PLUGINS",
    "FABRICUI_TRACE_PLUGINS",
    "FABRICUI_PLUGIN_TIMEOUT_S",
    "FABRICUI_CONFIG",
)


@dataclass
class Run:
    """What one ``fabricui`` process did."""

    status: int
    out: str
    err: str
    seconds: float

    @property
    def err_lines(self) -> list[str]:
        """Non-empty stderr lines."""
        return [line for line in self.err.splitlines() if line.strip()]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The caller's environment without fabricui settings, a config dir of the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["PYTHONUNBUFFERED"] = ""
    env.update(extra)
    return env


def command(*argv: str) -> list[str]:
    """``fabricui ARGV`` as the installed program runs it (``python -m fabricui``)."""
    return [sys.executable, "-m", "fabricui", *argv]


def run(argv: Sequence[str], env: dict[str, str], timeout: float = 60, **popen: Any) -> Run:
    """Run ``argv`` to the end (killed after ``timeout``), capturing both streams as text."""
    start = time.perf_counter()
    result = subprocess.run(
        list(argv), env=env, capture_output=True, text=True, timeout=timeout, **popen
    )
    return Run(result.returncode, result.stdout, result.stderr, time.perf_counter() - start)


def no_traceback(run_: Run) -> None:
    """Nothing on stderr looks like Python's crash output."""
    assert "Traceback" not in run_.err, run_.err
    assert "Exception ignored" not in run_.err, run_.err


def one_error(run_cli: Any, *argv: str) -> str:
    """The one stderr line of a command refused in-process (``run_cli``): status 2,
    nothing on stdout, no traceback."""
    status, out, err = run_cli(*argv)
    assert (status, out) == (2, ""), err
    assert err.startswith("fabricui: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return str(err).strip()
