"""Build ``fabricui.pyz``: fabricui, its built-in plugins, the hwdb and every dependency in
one file that runs with a bare ``python3`` (``python3 tools/build_pyz.py`` in a checkout).

Why shiv rather than plain ``zipapp``: numpy's core is a compiled extension, and Python
cannot import an extension from inside a zip file. shiv's bootstrap unpacks the bundled
site-packages once into a cache (``~/.shiv``, or ``$SHIV_ROOT``) and runs from there, so
numpy's wheel works unchanged, files are real paths (the hwdb is read with ``pathlib``) and
the ``.dist-info`` directories are on ``sys.path``, which is where the plugin host finds the
built-in plugins' entry points.

The price of bundling numpy's wheel: a pyz runs on one CPython version and one platform.
``--python-version`` and ``--platform`` build for another one (a login node's Python 3.9,
an aarch64 node) from pip's binary wheels, and a small preamble makes any other
interpreter exit with one line instead of an ImportError from deep inside numpy.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from fabricui import files
from fabricui.errors import ConfigError, FabricError, one_line

#: Where the pyz goes unless ``-o`` says otherwise (``dist/`` is ignored by git).
DEFAULT_OUTPUT = Path("dist") / "fabricui.pyz"
#: The interpreter the pyz's first line names.
SHEBANG = "/usr/bin/env python3"
#: Machine names as ``platform.machine()`` spells them, as the ends of wheel platform tags.
MACHINES = ("x86_64", "aarch64", "arm64", "ppc64le", "s390x", "i686", "armv7l", "amd64")
#: Names of one machine: ``platform.machine()`` says AMD64 on Windows, arm64 on macOS.
MACHINE_ALIASES = (("x86_64", "amd64"), ("aarch64", "arm64"))
#: The ends of platform tags, by the ``sys.platform`` they run on.
PLATFORM_PREFIXES = (
    ("manylinux", "linux"),
    ("musllinux", "linux"),
    ("linux", "linux"),
    ("macosx", "darwin"),
    ("win", "win32"),
)
#: How to install the tool this needs.
INSTALL_HINT = "pip install 'fabricui[pyz]' (or pip install shiv)"

#: The preamble shiv runs after unpacking and before fabricui: the interpreter must be the
#: one the bundled compiled wheels were built for. ``{...}`` is filled in at build time.
PREAMBLE = '''\
"""fabricui.pyz: refuse an interpreter the bundled compiled wheels were not built for."""
import platform
import sys

BUILT_FOR = {built_for!r}
here = (sys.version_info[0], sys.version_info[1], sys.platform, platform.machine().lower())
wanted = (BUILT_FOR["major"], BUILT_FOR["minor"], BUILT_FOR["platform"])
machine_ok = BUILT_FOR["machine"] is None or here[3] in BUILT_FOR["machines"]
if sys.implementation.name != "cpython" or here[:3] != wanted or not machine_ok:
    built = f"CPython {{wanted[0]}}.{{wanted[1]}} on {{BUILT_FOR['label']}}"
    this = f"{{sys.implementation.name}} {{here[0]}}.{{here[1]}} on {{here[2]}} {{here[3]}}"
    sys.stderr.write(
        f"fabricui: error: this fabricui.pyz holds compiled packages for {{built}}, and this "
        f"is {{this}}; build one for it: python3 tools/build_pyz.py --python-version "
        f"{{here[0]}}.{{here[1]}}\\n"
    )
    sys.exit(2)
'''


@dataclass(frozen=True)
class Target:
    """The interpreter a pyz is built for."""

    major: int
    """Python major version."""
    minor: int
    """Python minor version."""
    platform: str
    """``sys.platform`` there (``linux``)."""
    machine: str | None
    """``platform.machine()`` there, lower case (``x86_64``); None when unknown."""
    pip_args: tuple[str, ...] = ()
    """What pip needs to fetch wheels for it (empty: this interpreter)."""

    @property
    def label(self) -> str:
        """``linux x86_64``."""
        return f"{self.platform} {self.machine or 'any machine'}"

    def preamble(self) -> str:
        """The preamble script that checks the interpreter against this target."""
        same = next((group for group in MACHINE_ALIASES if self.machine in group), ())
        machines = sorted(set(same) | ({self.machine} if self.machine else set()))
        built_for = {
            "major": self.major,
            "minor": self.minor,
            "platform": self.platform,
            "machine": self.machine,
            "machines": machines,
            "label": self.label,
        }
        return PREAMBLE.format(built_for=built_for)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The builder's options."""
    parser = _Parser(
        prog="python3 tools/build_pyz.py",
        description="Build fabricui.pyz: one file with fabricui, its plugins, the hwdb and "
        "every dependency (numpy's compiled wheel included), run with a bare python3.",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help=f"the pyz to write (default: {DEFAULT_OUTPUT}; its directory is created)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing FILE")
    parser.add_argument(
        "--python-version",
        metavar="X.Y",
        help="build for another CPython, e.g. 3.9 for a RHEL 9 login node (default: this one)",
    )
    parser.add_argument(
        "--platform",
        action="append",
        default=[],
        metavar="TAG",
        help="build for another platform, as a wheel platform tag, e.g. "
        "manylinux2014_aarch64 (repeatable; default: this machine)",
    )
    return parser


def target_of(python_version: str | None, platforms: Sequence[str]) -> Target:
    """The target the options name (this interpreter when they name none).

    Raises:
        ConfigError: A version that is not ``X.Y``, platform tags of different systems or
            machines, or a tag without a known machine.
    """
    if python_version is None and not platforms:
        return Target(
            sys.version_info[0], sys.version_info[1], sys.platform, platform.machine().lower()
        )
    major, minor = sys.version_info[0], sys.version_info[1]
    pip_args = ["--only-binary=:all:", "--implementation", "cp"]
    if python_version is not None:
        match = re.fullmatch(r"(3)\.(\d{1,2})", python_version.strip())
        if not match:
            raise ConfigError(f"--python-version must be 3.X, e.g. 3.9 (got {python_version!r})")
        major, minor = int(match.group(1)), int(match.group(2))
        pip_args += ["--python-version", f"{major}.{minor}"]
    system, machine = sys.platform, platform.machine().lower()
    if platforms:
        kinds = {_platform_of(tag) for tag in platforms}
        if len(kinds) > 1:
            raise ConfigError(
                f"--platform tags must name one system and machine (got {', '.join(platforms)})"
            )
        ((system, machine),) = kinds
        for tag in platforms:
            pip_args += ["--platform", tag]
    return Target(major, minor, system, machine, tuple(pip_args))


def _platform_of(tag: str) -> tuple[str, str]:
    """(``sys.platform``, machine) of a wheel platform tag.

    Raises:
        ConfigError: The tag names no known system or machine.
    """
    text = tag.strip().lower()
    system = next((name for prefix, name in PLATFORM_PREFIXES if text.startswith(prefix)), None)
    machine = next((m for m in MACHINES if text.endswith(m)), None)
    if system is None or machine is None:
        raise ConfigError(
            f"--platform {tag!r} is not a wheel platform tag such as manylinux2014_x86_64 "
            "or manylinux_2_28_aarch64"
        )
    return system, "x86_64" if machine == "amd64" else machine


def has_shiv() -> bool:
    """Whether shiv can be run by this interpreter (``python -m shiv``)."""
    return importlib.util.find_spec("shiv") is not None


def project_root() -> Path:
    """The checkout this module belongs to.

    Raises:
        ConfigError: fabricui runs from an installed copy, which has no pyproject.toml.
    """
    root = Path(__file__).resolve().parents[1]
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or 'name = "fabricui"' not in pyproject.read_text("utf-8"):
        raise ConfigError(
            "build_pyz builds from a fabricui checkout; run it there "
            "(python3 tools/build_pyz.py from the directory holding pyproject.toml)"
        )
    return root


def build(output: Path, target: Target, force: bool = False) -> Path:
    """Build the pyz for ``target`` into ``output`` (written atomically).

    Args:
        output: The file to write; its directory is created.
        target: The interpreter it is for.
        force: Replace an existing file.

    Returns:
        The file written.

    Raises:
        ConfigError: shiv is missing, ``output`` exists (without ``force``), or pip could
            not build the wheel or fetch a dependency for the target.
    """
    if not has_shiv():
        raise ConfigError(f"building fabricui.pyz needs shiv: {INSTALL_HINT}")
    root = project_root()
    output = Path(output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{output}: cannot write ({files.reason(exc)})") from None
    files.check_target(output, force)
    with tempfile.TemporaryDirectory(prefix="fabricui-pyz-") as scratch:
        wheels = Path(scratch) / "wheels"
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", wheels, root],
            "building fabricui's wheel",
        )
        (wheel,) = wheels.glob("fabricui-*.whl")
        preamble = Path(scratch) / "fabricui_pyz_check.py"
        files.write_text(preamble, target.preamble())
        staged = output.parent / f".{output.name}.{os.getpid()}.tmp"
        try:
            _run(
                [
                    sys.executable,
                    "-m",
                    "shiv",
                    "--quiet",
                    "--compressed",
                    "--console-script",
                    "fabricui",
                    "--python",
                    SHEBANG,
                    "--preamble",
                    preamble,
                    "--output-file",
                    staged,
                    wheel,
                    # shiv zips the installed files without their bytecode: compiling
                    # every module (numpy, textual) would take half of pip's time for nothing.
                    "--no-compile",
                    *target.pip_args,
                ],
                f"bundling fabricui and its dependencies for CPython "
                f"{target.major}.{target.minor} on {target.label}",
            )
            files.move_into_place(staged, output, force)
        finally:
            staged.unlink(missing_ok=True)
    return output


def _run(command: Sequence[object], doing: str) -> None:
    """Run a build step quietly; its last error line becomes the one-line error.

    Raises:
        ConfigError: The step failed.
    """
    proc = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()] or lines or ["no output"]
        raise ConfigError(f"{doing} failed (exit {proc.returncode}): {one_line(errors[-1])}")


def main(argv: Sequence[str] | None = None) -> int:
    """Build the pyz; returns the exit status (0 built, 2 a one-line error on stderr)."""
    try:
        args = build_parser().parse_args(argv)
        target = target_of(args.python_version, args.platform)
        written = build(args.output, target, force=args.force)
    except FabricError as exc:
        print(f"build_pyz: error: {one_line(exc.message)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    size_mb = written.stat().st_size / 1e6
    print(
        f"wrote {written} ({size_mb:.1f} MB, CPython {target.major}.{target.minor}, "
        f"{target.label}); run it with: python3 {written} --help"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
