"""Single-file plugins: where they live, whether their directory can be trusted, and reading
one so that the code that runs is the code that was checked.

A plugin directory is trusted the way ssh (``StrictModes``) trusts ``authorized_keys``: the
directory and every directory above it, up to ``/``, must be owned by root or the user and
not writable by anyone else; a group may write only when it is the owner's private group
(Debian and Ubuntu give every user one, with umask 002). A directory above the plugin
directory may also be writable by others when it is sticky and owned by root or the user
(``/tmp``): there, others can add names but not rename or remove the user's.

Checking paths and then importing by path would leave a window: whoever can rename one of
those directories could swap in another between the check and the import. So the
directory is opened one component at a time from ``/``, each relative to the descriptor
of the one above (``openat`` with ``O_NOFOLLOW``; a symbolic link is followed only by
reading it through the trusted directory holding it, and must itself be owned by root or
the user), and each check is an ``fstat`` of the descriptor opened. The files are listed
and opened through the plugin directory's descriptor (``O_NOFOLLOW``: a plugin file may
not be a symbolic link), checked with ``fstat`` and read from that descriptor; the module
is compiled from those bytes, never opened again by its path.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import types
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fabricui.errors import PluginError
from fabricui.files import open_regular, read_open, reason

#: Environment variable naming an extra directory of single-file plugins.
ENV_PLUGINS_DIR = "FABRICUI_PLUGINS_DIR"
#: Largest single-file plugin read [bytes].
MAX_PLUGIN_BYTES = 4 * 2**20
#: Symbolic links followed on the way to a plugin directory before giving up (as Linux does).
MAX_SYMLINKS = 40

_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)
#: Whether directories can be opened relative to a descriptor (not on Windows, which has no
#: Unix owners to check either).
_HAVE_DIR_FD = (
    hasattr(os, "getuid") and os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
)


def plugin_dirs() -> list[Path]:
    """Directories searched for single-file plugins: the user's config dir, then the env's."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs = [Path(config) / "fabricui" / "plugins"]
    extra = os.environ.get(ENV_PLUGINS_DIR)
    if extra:
        dirs.append(Path(extra).expanduser())
    return dirs


@dataclass
class PluginFile:
    """One ``*.py`` file of a plugin directory, read (or refused) through its descriptor."""

    stem: str
    """The plugin's name (the file name without ``.py``)."""
    path: Path
    """Where it is, for messages and as the module's ``__file__``."""
    source: bytes | None
    """What was read; None when it was refused."""
    error: PluginError | None = None
    """Why it was refused (not the user's, a symbolic link, not a regular file ...)."""


def read_plugin_files(
    directory: Path, wanted: Callable[[str], bool] = lambda stem: True
) -> list[PluginFile] | None:
    """The plugin files of ``directory``, read through a descriptor of the checked directory.

    Args:
        directory: The plugin directory.
        wanted: Which plugin names to read (the allow-list); names starting with ``_`` are
            never plugins.

    Returns:
        One ``PluginFile`` per ``*.py`` file, sorted by name; None when the directory does
        not exist.

    Raises:
        PluginError: The directory cannot be trusted (someone else could write it or a
            directory above it) or cannot be opened; one line saying which and why.
    """
    if not _HAVE_DIR_FD:
        return _read_by_path(directory, wanted)
    fd = open_plugin_directory(directory)
    if fd is None:
        return None
    try:
        names = sorted(os.listdir(fd))
        found = []
        for name in names:
            stem = name[:-3]
            if not name.endswith(".py") or name.startswith("_") or not wanted(stem):
                continue
            path = directory / name
            try:
                found.append(PluginFile(stem, path, _read_plugin(fd, name, path)))
            except PluginError as exc:
                found.append(PluginFile(stem, path, None, exc))
        return found
    except OSError as exc:
        raise PluginError(f"plugin directory cannot be listed ({reason(exc)})") from None
    finally:
        os.close(fd)


def open_plugin_directory(directory: Path) -> int | None:
    """A descriptor of ``directory``, opened from ``/`` one checked component at a time.

    Args:
        directory: The plugin directory (relative paths start at the working directory).

    Returns:
        The open descriptor (the caller closes it); None when the directory (or one above
        it) does not exist or is not a directory.

    Raises:
        PluginError: A directory on the way is not trusted (see the module), a symbolic link
            on the way belongs to someone else, or a component cannot be opened.
    """
    uid = os.getuid()
    text = os.fspath(directory)
    if not os.path.isabs(text):
        text = os.path.join(os.getcwd(), text)
    pending = deque(text.split("/"))
    chain: list[tuple[int, str]] = []
    checked = 0
    """How many directories of ``chain`` passed the check for those above the target."""
    try:
        chain.append((os.open("/", _DIR_FLAGS), "/"))
        links = 0
        while pending:
            part = pending.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if len(chain) > 1:
                    os.close(chain.pop()[0])
                    checked = min(checked, len(chain))
                continue
            parent_fd, parent = chain[-1]
            if checked < len(chain):  # it holds more than the target: a directory above it
                _check(parent_fd, parent, uid, directory, above=True)
                checked = len(chain)
            here = os.path.join(parent, part)
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=parent_fd)
            except OSError as exc:
                target = _link_target(part, parent_fd, here, uid)
                if target is None:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                        return None
                    raise PluginError(
                        f"plugin directory cannot be opened: {here}: {reason(exc)}"
                    ) from None
                links += 1
                if links > MAX_SYMLINKS:
                    raise PluginError(
                        f"plugin directory cannot be opened: {here}: too many symbolic links"
                    ) from None
                if target.startswith("/"):
                    while len(chain) > 1:
                        os.close(chain.pop()[0])
                    checked = min(checked, 1)
                pending.extendleft(reversed(target.split("/")))
                continue
            chain.append((fd, here))
        fd, here = chain[-1]
        _check(fd, here, uid, directory, above=False)
        chain.pop()
        return fd
    finally:
        for fd, _ in chain:
            os.close(fd)


def _link_target(part: str, parent_fd: int, here: str, uid: int) -> str | None:
    """Where symbolic link ``part`` (in the trusted directory ``parent_fd``) points, or None
    when it is not a symbolic link; one owned by someone else is refused (in a sticky
    directory, as ``/tmp``, anyone may have made it)."""
    try:
        info = os.stat(part, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return None
    if info.st_uid not in (0, uid):
        raise PluginError(
            f"plugin directory: the symbolic link {here} on the way to it is owned by another "
            f"user (uid {info.st_uid}): none of its plugins loaded (remove the link)"
        )
    try:
        return os.readlink(part, dir_fd=parent_fd)
    except OSError as exc:
        raise PluginError(f"plugin directory cannot be opened: {here}: {reason(exc)}") from None


def _check(fd: int, here: str, uid: int, directory: Path, above: bool) -> None:
    """Raise PluginError when directory ``fd`` (``here``) could be written by someone else."""
    problem = _problem(os.fstat(fd), uid, above)
    if problem is None:
        return
    if above:
        raise PluginError(
            f"plugin directory: {here} above it is {problem}: none of its plugins loaded "
            f"(make it yours and `chmod go-w {here}`)"
        )
    raise PluginError(
        f"plugin directory {problem}: none of its plugins loaded "
        f"(make it yours and `chmod go-w {directory}`)"
    )


def _read_plugin(dir_fd: int, name: str, path: Path) -> bytes:
    """The bytes of plugin file ``name`` in directory ``dir_fd``, if only the user could have
    written them."""
    fd, info = open_regular(
        name, PluginError, "a Python file", dir_fd=dir_fd, follow_symlinks=False, shown=str(path)
    )
    problem = _problem(info, os.getuid(), above=False)
    if problem:
        os.close(fd)
        raise PluginError(
            f"{path} is {problem}: not loaded (make it yours and `chmod go-w {path}`)"
        )
    return read_open(fd, info, str(path), MAX_PLUGIN_BYTES, PluginError)


def _read_by_path(directory: Path, wanted: Callable[[str], bool]) -> list[PluginFile] | None:
    """Where there are no Unix owners nor descriptor-relative opens (Windows): by path."""
    if not directory.is_dir():
        return None
    found = []
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_") or not wanted(path.stem):
            continue
        try:
            fd, info = open_regular(path, PluginError, "a Python file")
            found.append(
                PluginFile(
                    path.stem, path, read_open(fd, info, str(path), MAX_PLUGIN_BYTES, PluginError)
                )
            )
        except PluginError as exc:
            found.append(PluginFile(path.stem, path, None, exc))
    return found


def import_source(stem: str, source: bytes, path: Path) -> types.ModuleType:
    """Run a single-file plugin's ``source`` as module ``fabricui_file_plugin_<stem>``.

    The code is compiled from the bytes read through the trusted directory; ``__file__``
    is ``path`` (so ``Path(__file__).parent`` finds files shipped beside it) but the file
    is not opened again.

    Args:
        stem: The plugin's name.
        source: The file's bytes.
        path: Where they were read from.

    Returns:
        The module.
    """
    module_name = "fabricui_file_plugin_" + re.sub(r"\W", "_", stem)
    code = compile(source, str(path), "exec", dont_inherit=True)
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def unsafe_reason(path: Path) -> str | None:
    """Why ``path`` (a plugin directory or file) must not be trusted to hold code, or None.

    Code there runs as the user, so no other user may write it: not writable by others, not
    writable by its group unless that group is the owner's private group, and owned by the
    user or root. Only ``path`` itself is looked at (``read_plugin_files`` also checks every
    directory above it). Not checked where there are no Unix owners (Windows).

    Args:
        path: The directory or file.

    Returns:
        One line, e.g. ``writable by others (mode 0777)``, or None when it is safe.
    """
    if not hasattr(os, "getuid"):
        return None
    try:
        info = path.stat()
    except OSError as exc:
        return f"not readable ({reason(exc)})"
    return _problem(info, os.getuid(), above=False)


def _problem(info: os.stat_result, uid: int, above: bool) -> str | None:
    """Why a file or directory with ``info`` could be written by someone but ``uid`` and
    root, or None. ``above``: a directory above the plugin directory, which may be sticky."""
    if info.st_uid not in (0, uid):
        return f"owned by another user (uid {info.st_uid})"
    mode = stat.S_IMODE(info.st_mode)
    sticky = above and stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_ISVTX)
    if info.st_mode & stat.S_IWOTH and not sticky:
        return f"writable by others (mode {mode:04o})"
    if info.st_mode & stat.S_IWGRP and not sticky and not _private_group(info.st_gid, info.st_uid):
        return f"writable by group {_group_name(info.st_gid)} (mode {mode:04o})"
    return None


def _private_group(gid: int, uid: int) -> bool:
    """True when ``gid`` is the primary group of ``uid`` and has no other members."""
    try:
        import grp
        import pwd
    except ImportError:  # no Unix user database
        return False
    try:
        owner = pwd.getpwuid(uid)
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    others = [name for name in group.gr_mem if name != owner.pw_name]
    primary_of_others = [
        user.pw_name for user in pwd.getpwall() if user.pw_gid == gid and user.pw_uid != uid
    ]
    return owner.pw_gid == gid and not others and not primary_of_others


def _group_name(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)
