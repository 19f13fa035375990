"""``python3 tools/build_pyz.py``: its options, its one-line refusals, and the preamble
that keeps a pyz off interpreters its compiled wheels were not built for (the build itself
is tests/install/test_pyz.py)."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from fabricui.errors import ConfigError
from tools import build_pyz
from tools.build_pyz import Target, main, target_of


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_default_target_is_this_interpreter():
    """Without options: this CPython, this system and machine, no pip target flags."""
    target = target_of(None, [])
    assert (target.major, target.minor) == sys.version_info[:2]
    assert target.platform == sys.platform
    assert target.machine == platform.machine().lower()
    assert target.pip_args == ()


def test_another_python_version_takes_binary_wheels_only():
    """``--python-version 3.9``: pip fetches cp39 binary wheels (nothing built from source)."""
    target = target_of("3.9", [])
    assert (target.major, target.minor) == (3, 9)
    assert target.pip_args == (
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        "3.9",
    )


def test_platform_tags_name_the_system_and_machine():
    """Platform tags set the system and machine the preamble checks; tags may repeat."""
    target = target_of("3.9", ["manylinux2014_aarch64", "manylinux_2_28_aarch64"])
    assert (target.platform, target.machine) == ("linux", "aarch64")
    assert target.pip_args[-4:] == (
        "--platform",
        "manylinux2014_aarch64",
        "--platform",
        "manylinux_2_28_aarch64",
    )
    assert target_of(None, ["win_amd64"]).machine == "x86_64"
    assert target_of(None, ["macosx_11_0_arm64"]).platform == "darwin"


@pytest.mark.parametrize(
    ("version", "platforms", "message"),
    [
        ("3", [], "--python-version must be 3.X"),
        ("2.7", [], "--python-version must be 3.X"),
        ("3.9.1", [], "--python-version must be 3.X"),
        (None, ["sparc"], "is not a wheel platform tag"),
        (None, ["manylinux2014_x86_64", "manylinux2014_aarch64"], "one system and machine"),
    ],
)
def test_bad_targets_are_refused(version, platforms, message):
    """Versions and platform tags that no wheel could match are refused with a reason."""
    with pytest.raises(ConfigError, match=message):
        target_of(version, platforms)


def test_errors_are_one_line_with_status_2(capsys):
    """A bad option: one line on stderr, exit status 2, no traceback."""
    status, out, err = run_main(capsys, "--python-version", "four")
    assert status == 2 and out == ""
    assert err.startswith("build_pyz: error: --python-version must be 3.X")
    assert err.count("\n") == 1
    status, _, err = run_main(capsys, "--nope")
    assert status == 2 and "unrecognized arguments: --nope" in err and err.count("\n") == 1


def test_missing_shiv_names_the_extra(capsys, monkeypatch, tmp_path: Path):
    """Without shiv: one line naming ``fabricui[pyz]``, nothing written."""
    monkeypatch.setattr(build_pyz, "has_shiv", lambda: False)
    status, _, err = run_main(capsys, "-o", str(tmp_path / "f.pyz"))
    assert status == 2
    assert err == (
        "build_pyz: error: building fabricui.pyz needs shiv: "
        "pip install 'fabricui[pyz]' (or pip install shiv)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_existing_pyz_is_kept_without_force(capsys, monkeypatch, tmp_path: Path):
    """An existing file is never replaced without ``--force`` (refused before building)."""
    monkeypatch.setattr(build_pyz, "has_shiv", lambda: True)
    monkeypatch.setattr(build_pyz, "_run", pytest.fail)  # nothing may be built
    existing = tmp_path / "fabricui.pyz"
    existing.write_text("mine", encoding="utf-8")
    status, _, err = run_main(capsys, "-o", str(existing))
    assert status == 2 and "already exists; pass --force to overwrite it" in err
    assert existing.read_text(encoding="utf-8") == "mine"


def test_a_failed_step_is_one_line(capsys, monkeypatch, tmp_path: Path):
    """pip's last error line becomes the one-line error; no partial file is left."""
    monkeypatch.setattr(build_pyz, "has_shiv", lambda: True)
    failing = [sys.executable, "-c", "import sys; sys.exit('ERROR: No matching distribution')"]
    monkeypatch.setattr(build_pyz, "_run", lambda command, doing: _real_run(failing, doing))
    status, _, err = run_main(capsys, "-o", str(tmp_path / "f.pyz"))
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("build_pyz: error: building fabricui's wheel failed (exit 1)")
    assert err.rstrip().endswith("ERROR: No matching distribution")
    assert list(tmp_path.iterdir()) == []


_real_run = build_pyz._run


def run_preamble(target: Target) -> subprocess.CompletedProcess[str]:
    """Run the preamble a pyz for ``target`` carries, with this interpreter."""
    return subprocess.run(
        [sys.executable, "-c", target.preamble()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_preamble_lets_the_right_interpreter_through():
    """Built for this interpreter: the preamble says nothing and lets fabricui start."""
    result = run_preamble(target_of(None, []))
    assert result.returncode == 0 and result.stdout == result.stderr == ""


@pytest.mark.parametrize(
    "target",
    [
        Target(3, 99, sys.platform, platform.machine().lower()),
        Target(*sys.version_info[:2], "win32", "x86_64"),
        Target(*sys.version_info[:2], sys.platform, "s390x"),
    ],
    ids=["other-version", "other-system", "other-machine"],
)
def test_preamble_stops_other_interpreters_in_one_line(target):
    """Another version, system or machine: one line naming the --python-version to build
    with, exit status 2 (not numpy's ImportError)."""
    result = run_preamble(target)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("fabricui: error: this fabricui.pyz holds compiled packages")
    assert result.stderr.endswith(f"build_pyz.py --python-version {here}\n")
    assert result.stderr.count("\n") == 1


def test_the_pyz_is_named_atomically_and_never_replaced_without_force(tmp_path: Path):
    """``files.move_into_place`` (how the finished pyz gets its name) keeps an existing file,
    even one that appeared after the first check, unless forced."""
    from fabricui.files import move_into_place

    staged, target = tmp_path / ".f.pyz.tmp", tmp_path / "f.pyz"
    staged.write_bytes(b"new")
    move_into_place(staged, target)
    staged.unlink()  # as build() does: the staged name may be a second link to the file
    assert target.read_bytes() == b"new"
    staged.write_bytes(b"newer")
    with pytest.raises(ConfigError, match=r"f\.pyz: already exists; pass --force"):
        move_into_place(staged, target)
    assert target.read_bytes() == b"new"
    move_into_place(staged, target, force=True)
    assert target.read_bytes() == b"newer" and not staged.exists()


def test_the_module_name_still_builds_from_a_checkout():
    """``python3 -m fabricui.build_pyz`` runs the checkout's tools/build_pyz.py (its usage
    line names it), and the wheel leaves both out."""
    result = subprocess.run(
        [sys.executable, "-m", "fabricui.build_pyz", "--help"],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and "usage: python3 tools/build_pyz.py" in result.stdout
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text("utf-8")
    assert 'exclude = ["fabricui/build_pyz.py"]' in pyproject


def test_bundled_packages_are_not_compiled_for_nothing(monkeypatch, tmp_path: Path):
    """shiv leaves bytecode out of the pyz, so its pip install is told not to compile
    (half of the bundling time otherwise); the pyz itself is tests/install/test_pyz.py."""
    monkeypatch.setattr(build_pyz, "has_shiv", lambda: True)
    commands: list[list[str]] = []

    def fake_run(command, doing):  # type: ignore[no-untyped-def]
        command = [str(part) for part in command]
        commands.append(command)
        if command[2] == "pip":  # the wheel, into -w DIR
            wheels = Path(command[command.index("-w") + 1])
            wheels.mkdir(parents=True, exist_ok=True)
            (wheels / "fabricui-0.1.0-py3-none-any.whl").write_bytes(b"")
        else:  # shiv writes the staged pyz
            Path(command[command.index("--output-file") + 1]).write_bytes(b"pyz")

    monkeypatch.setattr(build_pyz, "_run", fake_run)
    out = tmp_path / "f.pyz"
    assert build_pyz.build(out, target_of("3.9", [])) == out and out.read_bytes() == b"pyz"
    (wheel, shiv) = commands
    assert shiv[2] == "shiv" and "--no-compile" in shiv
    assert shiv[shiv.index("--no-compile") + 1 :] == list(target_of("3.9", []).pip_args)
