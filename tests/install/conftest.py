"""A fresh virtual environment with fabricui installed from its own wheel, outside the checkout.

Why one per session: building the wheel and installing textual and numpy into a new environment
costs tens of seconds, and every install test (the wheel itself, the example plugins, a scaffolded
plugin) can share it. Tests run their commands from a temporary directory, so nothing can be
imported from the checkout by accident.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from importlib import metadata
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

    def pip(self, *args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``pip ARGS`` for this venv: the venv's own pip when it has one, else the pip
        running the tests pointed at it (``pip --python``)."""
        if self.bin("pip").exists():
            return self.run("python", "-m", "pip", *map(str, args), timeout=timeout)
        python = str(self.bin("python"))
        cmd = [sys.executable, "-m", "pip", "--python", python, *map(str, args)]
        proc = subprocess.run(
            cmd, cwd=self.workdir, env=self.env(), capture_output=True, text=True, timeout=timeout
        )
        if proc.returncode != 0:
            pytest.fail(
                f"pip {' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
        return proc

    def pip_install(self, *targets: str | Path) -> None:
        self.pip("install", "--quiet", "--no-compile", *targets)


def pip_can_target_a_venv() -> bool:
    """Whether the pip running the tests installs into another environment (``--python``,
    pip 22.3): the venv is then made without a pip of its own, which ensurepip takes ~10 s
    to install."""
    try:
        major, minor = (int(part) for part in metadata.version("pip").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (22, 3)


@pytest.fixture(scope="session")
def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> InstalledVenv:
    base = tmp_path_factory.mktemp("install")
    shared = base
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker's base is under the run's
        shared = tmp_path_factory.getbasetemp().parent
    wheel_dir = shared / "wheels"
    with (shared / "wheels.lock").open("w") as lock:  # one build for every xdist worker
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not any(wheel_dir.glob("fabricui-*.whl")):
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
    venv.EnvBuilder(with_pip=not pip_can_target_a_venv()).create(root)
    workdir = base / "work"
    (workdir / "home").mkdir(parents=True)
    env = InstalledVenv(root=root, workdir=workdir, wheel=wheel)
    env.pip_install(wheel)
    return env
