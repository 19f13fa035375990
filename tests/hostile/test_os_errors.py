"""Every OS error a user can cause is one line and exit status 2, never a traceback: a name
over the file system's limit, a directory the user cannot enter (for real, as user nobody),
a read-only file system; for every command that reads or writes a file, ``--hwdb``,
``--calibration``, ``FABRICUI_PLUGINS_DIR`` and ``FABRICUI_CONFIG``."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from _hostile import DATA, ROOT, environment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricui.cli import main
from fabricui.errors import ConfigError
from fabricui.plugins import get_host

XML = DATA / "topo" / "nccl_topo_xml" / "aws_p5_48xl_topo_with_gpu_nic_2026.txt"
NCCL_TESTS = DATA / "nccl_tests" / "h100_2node_degraded_default_all_reduce_perf.txt"
LONG = "x" * 300  # over every common file system's 255-byte name limit


def commands(where: str) -> dict[str, list[str]]:
    """Each command that reads or writes a file, with ``where`` as the file (or directory)."""
    return {
        "import": ["import", "nccl-xml", f"{where}/in.xml"],
        "import -o": ["import", "nccl-xml", str(XML), "-o", f"{where}/out.yaml"],
        "snapshot -o": ["snapshot", "topology", "-t", "dgx-h100", "-o", f"{where}/view.svg"],
        "snapshot --all -o": ["snapshot", "--all", "-t", "dgx-h100", "-o", f"{where}/views"],
        "calibrate": ["calibrate", "-t", "h100-ib-cluster", "--nodes", "2", f"{where}/log.txt"],
        "calibrate -o": [
            "calibrate",
            "-t",
            "h100-ib-cluster",
            "--nodes",
            "2",
            str(NCCL_TESTS),
            "-o",
            f"{where}/cal.yaml",
        ],
        "--hwdb": ["--hwdb", f"{where}/hwdb", "topologies"],
        "--calibration": ["--calibration", f"{where}/cal.yaml", "topologies"],
        "hwdb validate": ["hwdb", "validate", f"{where}/topo.yaml"],
        "plugins new": ["plugins", "new", "my-fabric", "--dir", f"{where}"],
        "path -t FILE": ["path", "-t", f"{where}/topo.yaml", "--src", "0", "--dst", "1"],
        "doctor": ["doctor", f"{where}/nccl.log"],
    }


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Built-in plugins only, a config dir of the test's own, a fresh plugin host."""
    for name in ("FABRICUI_PLUGINS_DIR", "FABRICUI_CONFIG", "FABRICUI_DISABLE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FABRICUI_LOAD_PLUGINS", "")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    get_host.cache_clear()
    yield
    get_host.cache_clear()


def one_error_line(status: int, err: str) -> str:
    """The contract: status 2, one ``fabricui: error:`` line last (warnings the command
    printed before it failed may precede it), no traceback, no Python exception name (a
    crash dressed as a message). Returns the error line."""
    assert "Traceback" not in err, err
    assert status == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("fabricui: error: "), err
    assert all(line.startswith("fabricui: warning: ") for line in lines[:-1]), err
    assert "Error:" not in lines[-1] and "Errno" not in lines[-1], lines[-1]
    return lines[-1]


@pytest.mark.parametrize("name", sorted(commands(".")))
def test_name_over_the_limit_is_one_line(name: str, tmp_path: Path, capsys):
    """A 300-byte file or directory name: ``...: file name too long``, status 2."""
    argv = commands(str(tmp_path / LONG))[name]
    status = main(argv)
    line = one_error_line(status, capsys.readouterr().err)
    assert "file name too long" in line


@pytest.mark.parametrize("name", sorted(commands(".")))
def test_read_only_file_system_is_one_line(
    name: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
):
    """Every create on a read-only file system fails with EROFS (simulated: no mount here):
    the writing commands say ``read-only file system``; none leaves a traceback."""
    real_open = os.open

    def read_only_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def read_only_mkdir(path, mode=0o777, *, dir_fd=None):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(os, "open", read_only_open)
    monkeypatch.setattr(os, "mkdir", read_only_mkdir)
    if hasattr(pathlib, "_NormalAccessor"):  # Python < 3.11: Path.mkdir keeps its own os.mkdir
        monkeypatch.setattr(pathlib._NormalAccessor, "mkdir", staticmethod(read_only_mkdir))
    argv = commands(str(tmp_path))[name]
    status = main(argv)
    line = one_error_line(status, capsys.readouterr().err)
    if name.endswith("-o") or name == "plugins new":
        assert "read-only file system" in line.lower()


def test_long_plugins_dir_warns_and_the_command_goes_on(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
):
    """FABRICUI_PLUGINS_DIR with a name over the limit: the directory is skipped with one
    line (as an unsafe one is) and the command itself succeeds."""
    monkeypatch.delenv("FABRICUI_LOAD_PLUGINS")
    monkeypatch.setenv("FABRICUI_PLUGINS_DIR", str(tmp_path / LONG))
    assert main(["path", "-t", "dgx-h100", "--src", "0", "--dst", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["src"] == "n0.g0"
    assert err.splitlines() == [
        f"fabricui: plugin {tmp_path / LONG} skipped: plugin directory cannot be opened: "
        f"{tmp_path / LONG}: file name too long"
    ]


def test_long_settings_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """FABRICUI_CONFIG over the limit: the explorer shows this one line and starts anyway."""
    from fabricui.services.settings import load_settings

    monkeypatch.setenv("FABRICUI_CONFIG", str(tmp_path / LONG / "config.yaml"))
    with pytest.raises(ConfigError, match=r": cannot read \(file name too long\)$"):
        load_settings()


# --- hypothesis: any path at all -------------------------------------------------------------

#: Path components that stress the OS rather than the parsers: long, odd, reserved.
COMPONENT = st.one_of(
    st.sampled_from(["", ".", "-", " ", "a" * 255, "b" * 256, "nul\x01", "\u00e9"]),
    st.text(alphabet=st.characters(blacklist_characters="\x00/"), min_size=1, max_size=300),
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    parts=st.lists(COMPONENT, min_size=1, max_size=20),
    name=st.sampled_from(["import -o", "snapshot -o", "--hwdb", "hwdb validate", "import"]),
)
def test_any_path_is_a_result_or_one_line(parts: list[str], name: str, tmp_path: Path, capsys):
    """Whatever path a user types (long, many, odd components, over PATH_MAX), the command
    works or fails with one line and status 2."""
    where = str(tmp_path / "/".join(parts))
    status = main(commands(where)[name])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if status != 0:
        one_error_line(status, err)


# --- a directory the user cannot enter, for real ----------------------------------------------

NOBODY = 65534


def python_for_nobody() -> str | None:
    """An interpreter user nobody can run, of this one's version (this one may live where
    only root can go, as under /root/.pyenv), that can import fabricui from this virtual
    environment's site-packages; None when there is none (or the environment sits where
    nobody cannot read it), or we are not root."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for exe in (sys.executable, shutil.which(f"python{version}"), f"/usr/bin/python{version}"):
        if not exe:
            continue
        try:
            probe = subprocess.run(
                [
                    exe,
                    "-c",
                    "import site, sys\n"
                    f"site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
                    "import fabricui.cli\n"
                    "print('%d.%d' % sys.version_info[:2])",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
                cwd="/",
            )
        except OSError:
            continue
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return exe
    return None


def test_directory_the_user_cannot_enter_is_one_line(tmp_path: Path):
    """As user nobody, every file under a directory only root may enter: one line naming
    the file and ``permission denied`` for each command; a plugin directory and a config
    directory there are one warning line each and the command goes on."""
    python = python_for_nobody()
    if python is None:
        pytest.skip("needs root, and an interpreter and a virtual environment user nobody may read")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    argvs = dict(commands(str(closed)))
    argvs["plugins new"] = ["plugins", "new", "my-fabric", "--dir", str(closed / "p")]
    script = (
        "import site, sys\n"
        f"site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
        "import contextlib, io, json\n"
        "from fabricui.cli import main\n"
        "from fabricui.plugins import get_host\n"
        "results = {}\n"
        "for name, argv in json.loads(sys.argv[1]).items():\n"
        "    get_host.cache_clear()\n"
        "    out, err = io.StringIO(), io.StringIO()\n"
        "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "        status = main(argv)\n"
        "    results[name] = [status, err.getvalue()]\n"
        "print(json.dumps(results))\n"
    )
    env = environment(
        tmp_path,
        HOME=str(closed),
        XDG_CONFIG_HOME=str(closed / "config"),
        FABRICUI_PLUGINS_DIR=str(closed / "plugins"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=str(ROOT),
    )
    result = subprocess.run(
        [python, "-c", script, json.dumps(argvs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)
    assert set(results) == set(argvs)
    warnings = [
        f"fabricui: plugin {closed / 'config' / 'fabricui' / 'plugins'} skipped: plugin "
        f"directory cannot be opened: {closed}: permission denied",
        f"fabricui: plugin {closed / 'plugins'} skipped: plugin directory cannot be opened: "
        f"{closed}: permission denied",
    ]
    for name, (status, err) in results.items():
        lines = [line for line in err.splitlines() if line not in warnings]
        line = one_error_line(status, "\n".join(lines))
        assert "permission denied" in line.lower(), (name, line)
        assert str(closed) in line, (name, line)
