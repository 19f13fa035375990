"""A fresh virtual environment with fabricui installed from its own wheel, outside the checkout.

Why one per session: building the wheel and installing textual and numpy into a new environment
costs tens of seconds, and every install test (the wheel itself, the example plugins, a scaffolded
plugin) can share it. Tests run their commands from a temporary directory, so nothing can be
imported from the checkout by accident.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "plugins" / "examples"


@dataclass(frozen=True)
class InstalledVenv:
    """A virtual environment plus a scratch working directory outside the checkout."""

    root: Path
    workdir: Path
    wheel: Path

    def bin(self, name: str) -> Path:
        return self.root / ("Scripts" if os.name == "nt" else "bin") / name

    def env(self) -> dict[str, str]:
        """The environment commands run with: this venv first on PATH, no user plugins."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FABRICUI_", "PYTHON"))}
        env["PATH"] = f"{self.bin('')}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["HOME"] = str(self.workdir / "home")  # no ~/.config/fabricui/plugins of the developer
        env["NO_COLOR"] = "1"
        return env

    def run(
        self, *args: str, cwd: Path | None = None, timeout: float = 180, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run `args[0]` from this venv's bin directory; fail the test with its output on error."""
        cmd = [str(self.bin(args[0])), *args[1:]]
        proc = subprocess.run(
            cmd,
            cwd=cwd or self.workdir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"{' '.join(args)} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
        return proc

    def pip_install(self, *targets: str | Path) -> None:
        self.run("python", "-m", "pip", "install", "--quiet", *map(str, targets), timeout=600)


@pytest.fixture(scope="session")
def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> InstalledVenv:
    base = tmp_path_factory.mktemp("install")
    wheel_dir = base / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(wheel_dir),
            str(REPO),
        ],
        check=True,
        timeout=600,
    )
    (wheel,) = wheel_dir.glob("fabricui-*.whl")
    root = base / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    workdir = base / "work"
    (workdir / "home").mkdir(parents=True)
    env = InstalledVenv(root=root, workdir=workdir, wheel=wheel)
    env.pip_install(wheel)
    return env
