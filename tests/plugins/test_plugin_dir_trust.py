"""Plugin directories are trusted as ssh trusts ``authorized_keys``: every directory above one
must be the user's or root's and not writable by others, and what is imported is what was
checked, even when someone swaps a directory or a file between the check and the import."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from fabricui.plugins import PluginHost, get_host
from fabricui.plugins import files as plugin_files
from fabricui.plugins import host as plugins_module

needs_unix = pytest.mark.skipif(
    not plugin_files._HAVE_DIR_FD, reason="no Unix owners and descriptor-relative opens"
)
pytestmark = needs_unix

GOOD_FILE = """\
from fabricui import hookimpl
from fabricui.engine.types import Interconnect


@hookimpl
def register_interconnects(register):
    register(Interconnect("{name}", ("{name}",)))
"""

#: A plugin an attacker would swap in: leaves a mark when it runs.
TRAP_FILE = """\
from pathlib import Path
Path({mark!r}).write_text("ran")
"""


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """No entry points, no user config dir, a fresh process-wide host before and after."""
    for name in ("FABRICUI_LOAD_PLUGINS", "FABRICUI_DISABLE_PLUGINS", "FABRICUI_STRICT_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FABRICUI_PLUGIN_TIMEOUT_S", "2")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    get_host.cache_clear()
    yield
    get_host.cache_clear()


def plugin_dir(parent: Path, name: str = "homelink", mode: int = 0o755) -> Path:
    """``parent/plugins`` holding one good plugin, ``name.py``."""
    parent.mkdir(parents=True, exist_ok=True)
    directory = parent / "plugins"
    directory.mkdir()
    (directory / f"{name}.py").write_text(GOOD_FILE.format(name=name))
    (directory / f"{name}.py").chmod(0o644)
    directory.chmod(mode)
    return directory


def load(monkeypatch: pytest.MonkeyPatch, directory: Path | str) -> PluginHost:
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    return PluginHost(builtins=False)


def report(host: PluginHost) -> list[str]:
    stream = io.StringIO()
    host.report_failures(stream)
    return stream.getvalue().splitlines()


# --- every directory above ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "problem"),
    [(0o775, "writable by group"), (0o777, "writable by others"), (0o757, "writable by others")],
)
def test_writable_ancestor_skips_the_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: int, problem: str
):
    """A directory two levels up that others (or a shared group) can write: whoever can
    write it can rename the plugin directory away and put their own in its place."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: False)
    above = tmp_path / "shared"
    directory = plugin_dir(above / "me")
    above.chmod(mode)
    host = load(monkeypatch, directory)
    assert host.interconnects() == {}
    [line] = report(host)
    if "group" in problem:
        problem = f"{problem} {plugin_files._group_name(above.stat().st_gid)}"
    assert line == (
        f"fabricui: plugin {directory} skipped: plugin directory: {above} above it is "
        f"{problem} (mode {mode:04o}): none of its plugins loaded (make it yours and "
        f"`chmod go-w {above}`)"
    )


def test_group_writable_ancestor_of_a_private_group_is_fine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """umask 002 with a user-private group: the group is the user alone."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: True)
    above = tmp_path / "home"
    directory = plugin_dir(above)
    above.chmod(0o775)
    assert list(load(monkeypatch, directory).interconnects()) == ["homelink"]


def test_sticky_ancestor_is_fine_but_not_as_the_plugin_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """Like /tmp (1777): others may add names there but not rename or remove the user's,
    so it may be above a plugin directory; it may not be the plugin directory itself."""
    above = tmp_path / "scratch"
    directory = plugin_dir(above)
    above.chmod(0o1777)
    assert list(load(monkeypatch, directory).interconnects()) == ["homelink"]
    get_host.cache_clear()
    directory.chmod(0o1777)
    host = load(monkeypatch, directory)
    assert host.interconnects() == {}
    assert "plugin directory writable by others (mode 1777)" in report(host)[0]


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="needs root to chown")
def test_ancestor_owned_by_another_user_skips_the_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """A directory above owned by someone else (not root): they could swap what is below."""
    above = tmp_path / "theirs"
    directory = plugin_dir(above / "mine")
    os.chown(above, 4242, -1)
    host = load(monkeypatch, directory)
    assert host.interconnects() == {}
    assert f"{above} above it is owned by another user (uid 4242)" in report(host)[0]


def test_relative_directory_and_dot_dot_are_walked_as_the_kernel_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """A relative FABRICUI_PLUGINS_DIR starts at the working directory; ``..`` goes up."""
    plugin_dir(tmp_path / "a")
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    assert list(load(monkeypatch, "../a/./plugins").interconnects()) == ["homelink"]


def test_missing_directory_is_silent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The default ~/.config/fabricui/plugins rarely exists: no line, nothing loaded."""
    host = load(monkeypatch, tmp_path / "nowhere" / "plugins")
    assert host.interconnects() == {} and report(host) == []


def test_directory_name_over_the_limit_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """A component longer than the file system allows: one line, and the command goes on."""
    host = load(monkeypatch, tmp_path / ("x" * 300))
    assert report(host) == [
        f"fabricui: plugin {tmp_path / ('x' * 300)} skipped: plugin directory cannot be "
        f"opened: {tmp_path / ('x' * 300)}: file name too long"
    ]


def test_directory_that_cannot_be_entered_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """A directory on the way the user may not search (simulated: root may enter any)."""
    directory = plugin_dir(tmp_path / "closed")
    real_open = os.open

    def refuse(path, flags, mode=0o777, *, dir_fd=None):
        if path == "closed":
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", refuse)
    host = load(monkeypatch, directory)
    assert report(host) == [
        f"fabricui: plugin {directory} skipped: plugin directory cannot be opened: "
        f"{tmp_path / 'closed'}: permission denied"
    ]


# --- symbolic links ------------------------------------------------------------------------


def test_symlinked_directory_in_a_trusted_place_is_followed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """~/.config/fabricui/plugins -> ~/src/plugins: the link and its target are checked."""
    target = plugin_dir(tmp_path / "src")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "plugins").symlink_to(target)
    (tmp_path / "rel").symlink_to("src")  # relative link, resolved in its own directory
    assert list(load(monkeypatch, tmp_path / "config" / "plugins").interconnects()) == ["homelink"]
    get_host.cache_clear()
    assert list(load(monkeypatch, tmp_path / "rel" / "plugins").interconnects()) == ["homelink"]


def test_symlink_into_an_untrusted_place_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """The target's own directories are checked, wherever the link points."""
    monkeypatch.setattr(plugin_files, "_private_group", lambda gid, uid: False)
    shared = tmp_path / "shared"
    target = plugin_dir(shared)
    shared.chmod(0o777)
    (tmp_path / "link").symlink_to(target)
    host = load(monkeypatch, tmp_path / "link")
    assert host.interconnects() == {}
    assert f"{shared} above it is writable by others" in report(host)[0]


def test_symlink_loop_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A link to itself: refused after 40 links, as the kernel does."""
    (tmp_path / "loop").symlink_to("loop")
    host = load(monkeypatch, tmp_path / "loop")
    assert report(host)[0].endswith(": too many symbolic links")


def test_symlinked_plugin_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A plugin file may not be a symbolic link: its target was never checked."""
    directory = plugin_dir(tmp_path)
    (tmp_path / "elsewhere.py").write_text(GOOD_FILE.format(name="elsewhere"))
    (directory / "linked.py").symlink_to(tmp_path / "elsewhere.py")
    host = load(monkeypatch, directory)
    assert list(host.interconnects()) == ["homelink"]
    assert report(host) == [
        f"fabricui: plugin linked skipped: {directory / 'linked.py'}: is a symbolic link "
        "(not followed), expected a Python file"
    ]


def test_fifo_named_like_a_plugin_does_not_block(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """A FIFO called ``x.py`` is refused at once (opened without blocking, then fstat)."""
    directory = plugin_dir(tmp_path)
    os.mkfifo(directory / "fifo.py")
    host = load(monkeypatch, directory)
    assert list(host.interconnects()) == ["homelink"]
    assert "is a FIFO (named pipe), expected a Python file" in report(host)[0]


# --- swapping between the check and the import -------------------------------------------------


def test_swapping_the_directory_after_it_was_checked_cannot_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """The attack of issue #16: once the directory passed its check, rename it away and put
    another (with the attacker's code under the same file name) in its place. Files are
    opened through the descriptor of the directory that was checked, so the swap is
    invisible: the original plugin loads, the attacker's never runs."""
    directory = plugin_dir(tmp_path / "home")
    mark = tmp_path / "trap-ran"
    real_open = os.open
    swapped = []

    def swap_then_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == "homelink.py" and not swapped:
            swapped.append(True)
            directory.rename(tmp_path / "home" / "moved-away")
            directory.mkdir()
            (directory / "homelink.py").write_text(TRAP_FILE.format(mark=str(mark)))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", swap_then_open)
    host = load(monkeypatch, directory)
    assert swapped, "the swap did not happen between the check and the open"
    assert list(host.interconnects()) == ["homelink"]
    assert not mark.exists()


def test_swapping_an_ancestor_for_a_symlink_cannot_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """Same race one level up: the walk holds each checked directory open and never looks
    a path up again, so a directory above replaced by a link to the attacker's tree after
    it was checked changes nothing."""
    directory = plugin_dir(tmp_path / "home" / "me")
    attacker = plugin_dir(tmp_path / "attacker" / "me", name="homelink")
    mark = tmp_path / "trap-ran"
    (attacker / "homelink.py").write_text(TRAP_FILE.format(mark=str(mark)))
    real_open = os.open
    swapped = []

    def swap_then_open(path, flags, mode=0o777, *, dir_fd=None):
        if path == "plugins" and dir_fd is not None and not swapped:
            swapped.append(True)
            (tmp_path / "home").rename(tmp_path / "home-moved")
            (tmp_path / "home").symlink_to(tmp_path / "attacker")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", swap_then_open)
    host = load(monkeypatch, directory)
    assert swapped
    assert list(host.interconnects()) == ["homelink"]
    assert not mark.exists()


def test_changing_the_file_after_it_was_read_cannot_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """The module is compiled from the bytes read through the checked descriptor; the file
    is never opened again by its path (here replaced right after the read)."""
    directory = plugin_dir(tmp_path)
    mark = tmp_path / "trap-ran"
    real_read_open = plugin_files.read_open

    def read_then_replace(fd, info, origin, *args, **kwargs):
        data = real_read_open(fd, info, origin, *args, **kwargs)
        Path(origin).write_text(TRAP_FILE.format(mark=str(mark)))
        return data

    monkeypatch.setattr(plugin_files, "read_open", read_then_replace)
    host = load(monkeypatch, directory)
    assert list(host.interconnects()) == ["homelink"]
    assert not mark.exists()
    module = sys.modules["fabricui_file_plugin_homelink"]
    assert module.__file__ == str(directory / "homelink.py")


def test_a_plugin_file_is_never_opened_by_its_path(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Every open of a plugin file goes through the directory descriptor."""
    directory = plugin_dir(tmp_path)
    real_open = os.open
    by_path = []

    def watch(path, flags, mode=0o777, *, dir_fd=None):
        if str(path).endswith("homelink.py") and dir_fd is None:
            by_path.append(path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", watch)
    assert list(load(monkeypatch, directory).interconnects()) == ["homelink"]
    assert by_path == []
