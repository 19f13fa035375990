"""Single-file plugins: where they live, whether their directory can be trusted, importing one."""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import sys
from pathlib import Path

from fabricui.errors import PluginError

#: Environment variable naming an extra directory of single-file plugins.
ENV_PLUGINS_DIR = "FABRICUI_PLUGINS_DIR"


def plugin_dirs() -> list[Path]:
    """Directories searched for single-file plugins: the user's config dir, then the env's."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs = [Path(config) / "fabricui" / "plugins"]
    extra = os.environ.get(ENV_PLUGINS_DIR)
    if extra:
        dirs.append(Path(extra).expanduser())
    return dirs


def _import_file(path: Path) -> object:
    """Import a single-file plugin as module ``fabricui_file_plugin_<stem>``."""
    module_name = "fabricui_file_plugin_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _load_file(path: Path) -> object:
    """Import a single-file plugin unless someone else than the user could have written it."""
    unsafe = unsafe_reason(path)
    if unsafe:
        raise PluginError(f"{path} is {unsafe}: not loaded (make it yours and `chmod go-w {path}`)")
    return _import_file(path)


def unsafe_reason(path: Path) -> str | None:
    """Why ``path`` (a plugin directory or file) must not be trusted to hold code, or None.

    Code there runs as the user, so no other user may write it: not writable by others, not
    writable by its group unless that group is the owner's private group (Debian and Ubuntu
    give every user one, with umask 002), and owned by the user or root. Not checked where
    there are no Unix owners (Windows).

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
        return f"not readable ({exc.strerror or exc})"
    if info.st_uid not in (0, os.getuid()):
        return f"owned by another user (uid {info.st_uid})"
    mode = stat.S_IMODE(info.st_mode)
    if info.st_mode & stat.S_IWOTH:
        return f"writable by others (mode {mode:04o})"
    if info.st_mode & stat.S_IWGRP and not _private_group(info.st_gid, info.st_uid):
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
