"""Write output files atomically: a reader sees the old file or the whole new one, never half.

Every file fabricui writes on request (``-o`` of ``import``, ``calibrate`` and ``snapshot``)
goes through ``write_text``: the text goes to a temporary file in the target's directory,
is flushed to disk, and is then moved into place in one step (``os.link`` when the target
must not exist, so a file created meanwhile is never replaced; ``os.replace`` with
``force``). On any error the temporary file is removed and no target is left behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fabricui.errors import ConfigError


def exists_message(path: Path | str) -> str:
    """The one-line refusal to replace an existing file."""
    return f"{path}: already exists; pass --force to overwrite it"


def check_target(path: Path, force: bool = False) -> None:
    """Raise unless ``path`` may be written: not a directory, and absent unless ``force``.

    Commands call this before doing slow work, so a refusal comes first.

    Args:
        path: The output file.
        force: Whether an existing file may be replaced.

    Raises:
        ConfigError: ``path`` is a directory, its directory does not exist, or it exists
            and ``force`` is False.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, give a file name")
    if not force and (path.exists() or path.is_symlink()):
        raise ConfigError(exists_message(path))
    parent = path.parent
    if not parent.is_dir():
        raise ConfigError(f"{path}: no such directory {parent}")


def write_text(path: Path, text: str, force: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; refuse to replace a file unless ``force``.

    The new file gets the usual permissions (``0o666`` minus the umask), not the private
    ones of a temporary file.

    Args:
        path: Destination file.
        text: The whole content.
        force: Replace an existing file.

    Raises:
        ConfigError: ``path`` exists (without ``force``), is a directory, or cannot be
            written (the message names the reason); nothing is left behind.
    """
    path = Path(path)
    check_target(path, force)
    directory = path.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        if force:
            os.replace(tmp, path)
        else:
            _link_new(Path(tmp), path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except UnicodeEncodeError as exc:
        raise ConfigError(f"{path}: cannot write text that is not Unicode ({exc.reason})") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _link_new(tmp: Path, path: Path) -> None:
    """Give ``tmp`` the name ``path`` unless ``path`` exists (also if it appeared meanwhile)."""
    try:
        # A hard link never replaces an existing file, even one created since the check.
        os.link(tmp, path)
    except FileExistsError:
        raise ConfigError(exists_message(path)) from None
    except OSError:
        # No hard links here (some network and FUSE file systems): check, then rename.
        if path.exists() or path.is_symlink():
            raise ConfigError(exists_message(path)) from None
        os.replace(tmp, path)
