"""The one way fabricui reads a user's file and writes an output file.

Reading (``read_bounded``): a path or ``-`` (standard input); only regular files (a FIFO,
a device or a directory is a one-line error, never a hang: the file is opened without
blocking and checked with ``fstat`` before a byte is read); at most a stated number of
bytes, checked before the work starts. ``open_regular`` and ``read_open`` are the same two
steps for a caller that must check the opened file itself or open it relative to a
directory descriptor (single-file plugins).

Writing (``write_text``): every file fabricui writes on request (``-o`` of ``import``,
``calibrate`` and ``snapshot``, the TUI's saves) goes to a temporary file in the target's
directory, is flushed to disk, and is then moved into place in one step (``os.link`` when
the target must not exist, so a file created meanwhile is never replaced; ``os.replace``
with ``force``). Only a regular file is ever replaced (never a device, a FIFO or what a
symbolic link points to). On any error the temporary file is removed and no target is
left behind.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from fabricui.errors import ConfigError, FabricError

#: What ``fstat`` says a file that is not a regular one is, for messages.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bounded(
    name: str | Path,
    limit_bytes: int,
    error: type[FabricError] = ConfigError,
    what: str = "a text file",
    too_large: str = "",
) -> tuple[bytes, str]:
    """The bytes of a regular file (or of standard input for ``-``), at most ``limit_bytes``.

    Args:
        name: The path, or ``-`` for standard input.
        limit_bytes: Largest size accepted [bytes].
        error: The error type raised (the caller's area: ``HwdbError``, ``ParseError`` ...).
        what: What the file should be, for messages (``an NCCL_DEBUG log``).
        too_large: Advice appended to the too-large message.

    Returns:
        (the bytes, the name to use in messages: the path, or ``<stdin>``).

    Raises:
        FabricError: Of type ``error``: missing, a directory, FIFO, device or socket, not
            readable, or larger than ``limit_bytes`` (one line naming the file).
    """
    if str(name) == "-":
        stream = sys.stdin
        if stream is None or getattr(stream, "closed", False):
            raise error("<stdin>: no standard input")
        buffer = getattr(stream, "buffer", None)
        try:
            data = buffer.read(limit_bytes + 1) if buffer else stream.read().encode()
        except (OSError, ValueError) as exc:
            raise error(f"<stdin>: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
        return _within(data, "<stdin>", limit_bytes, error, too_large), "<stdin>"
    path = str(name)
    fd, info = open_regular(path, error=error, what=what)
    return read_open(fd, info, path, limit_bytes, error, too_large), path


def open_regular(
    path: str | Path,
    error: type[FabricError] = ConfigError,
    what: str = "a text file",
    dir_fd: int | None = None,
    follow_symlinks: bool = True,
    shown: str | None = None,
) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without ever blocking; returns (descriptor, fstat).

    Opened with ``O_NONBLOCK`` (a FIFO cannot hold the open), then checked with ``fstat``
    of the descriptor, so what is read is what was checked, whatever the path names now.

    Args:
        path: The file, relative to ``dir_fd`` when given.
        error: The error type raised.
        what: What the file should be, for messages.
        dir_fd: A directory descriptor ``path`` is relative to (see ``os.open``).
        follow_symlinks: False opens with ``O_NOFOLLOW``: a symbolic link is refused.
        shown: The name messages use (default ``path``).

    Returns:
        The open descriptor (the caller closes it, or hands it to ``read_open``) and its
        ``fstat``.

    Raises:
        FabricError: Of type ``error``: missing, not a regular file, a symbolic link (with
            ``follow_symlinks=False``), or cannot be opened (one line naming the file).
    """
    shown = shown or str(path)
    flags = os.O_RDONLY | _flag("O_NONBLOCK") | _flag("O_NOCTTY") | _flag("O_CLOEXEC")
    if not follow_symlinks:
        flags |= _flag("O_NOFOLLOW")
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise error(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise error(f"{shown}: is a directory, expected {what}") from None
    except OSError as exc:
        if not follow_symlinks and _is_symlink(path, dir_fd):
            raise error(f"{shown}: is a symbolic link (not followed), expected {what}") from None
        raise error(f"{shown}: cannot read ({reason(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{shown}: is {_kind(info.st_mode)}, expected {what}")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_open(
    fd: int,
    info: os.stat_result,
    origin: str,
    limit_bytes: int,
    error: type[FabricError] = ConfigError,
    too_large: str = "",
) -> bytes:
    """The bytes of a file ``open_regular`` opened, at most ``limit_bytes``; closes ``fd``.

    Raises:
        FabricError: Of type ``error``: larger than ``limit_bytes``, or a read error.
    """
    try:
        if info.st_size > limit_bytes:
            _within(b"", origin, limit_bytes, error, too_large, size=info.st_size)
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(limit_bytes + 1)
    except OSError as exc:
        raise error(f"{origin}: cannot read ({reason(exc)})") from None
    finally:
        if fd >= 0:
            os.close(fd)
    return _within(data, origin, limit_bytes, error, too_large)


def _flag(name: str) -> int:
    """``os.<name>``, or 0 where the platform has no such flag (Windows)."""
    return int(getattr(os, name, 0))


def _is_symlink(path: str | Path, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _within(
    data: bytes,
    origin: str,
    limit_bytes: int,
    error: type[FabricError],
    too_large: str,
    size: int | None = None,
) -> bytes:
    if (size if size is not None else len(data)) > limit_bytes:
        limit = f"{limit_bytes // 2**20} MiB" if limit_bytes >= 2**20 else f"{limit_bytes} bytes"
        raise error(f"{origin}: larger than {limit}{too_large}")
    return data


def shown_path(path: Path | str) -> str:
    """A path as one line of a message: as typed, or quoted with Python's escapes when it
    holds a character that is not printable (``'a\\nb.svg'``), so a newline in a name
    cannot split the line."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def output_name(text: str) -> str:
    """An output file name as typed, refused when empty: an empty ``-o ''`` must not fall
    back to standard output, a default name or the current directory.

    Args:
        text: The name (``-`` for standard output where the option takes it).

    Returns:
        ``text`` unchanged.

    Raises:
        ConfigError: ``text`` is empty or only blanks.
    """
    if not text.strip():
        raise ConfigError("an empty output path; give a file name")
    return text


def exists_message(path: Path | str) -> str:
    """The one-line refusal to replace an existing file."""
    return f"{shown_path(path)}: already exists; pass --force to overwrite it"


def check_target(path: Path, force: bool = False) -> None:
    """Raise unless ``path`` may be written: not a directory, and absent unless ``force``.

    Commands call this before doing slow work, so a refusal comes first.

    Args:
        path: The output file.
        force: Whether an existing file may be replaced.

    Raises:
        ConfigError: ``path`` is a directory, its directory does not exist, it exists and
            ``force`` is False, it is something ``force`` must not replace (a device, a
            FIFO, a socket, a symbolic link), or it cannot be looked at.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot write ({reason(exc)})") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"{shown_path(path)}: is a directory, give a file name")
        # What --force may not replace is said first: "pass --force" would not help.
        if stat.S_ISLNK(info.st_mode):
            raise ConfigError(
                f"{shown_path(path)}: is a symbolic link; only a regular file is ever replaced"
            )
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"{shown_path(path)}: is {_kind(info.st_mode)}; only a regular file is "
                "ever replaced"
            )
        if not force:
            raise ConfigError(exists_message(path))
    parent = path.parent
    try:
        parent_ok = stat.S_ISDIR(os.stat(parent).st_mode)
    except FileNotFoundError:
        parent_ok = False
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot write ({reason(exc)})") from None
    if not parent_ok:
        raise ConfigError(f"{shown_path(path)}: no such directory {shown_path(parent)}")


def reason(exc: OSError) -> str:
    """Why an OS call failed, in the OS's words in lower case (``file name too long``,
    ``permission denied``, ``read-only file system``)."""
    text = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def os_error_line(exc: OSError) -> str:
    """An ``OSError`` as one line for the user: the file it names and why, never a type name.

    The command line's last resort for an error no command turned into a message (a name
    over the file system's limit, a directory the user cannot enter, a read-only file
    system): ``/data/x.yaml: permission denied``.
    """
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    where = " -> ".join(names)
    return f"{where}: {reason(exc)}" if where else reason(exc)


def exists(path: str | Path, error: type[FabricError] = ConfigError) -> bool:
    """Whether ``path`` exists; a path that cannot even be looked at is a one-line error.

    ``Path.exists`` answers False only for a missing file and raises for a name over the
    file system's limit or a directory the user cannot enter.

    Raises:
        FabricError: Of type ``error``: ``path`` cannot be looked at (why, in words).
    """
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise error(f"{shown_path(path)}: cannot read ({reason(exc)})") from None
    return True


def write_bytes(path: Path, data: bytes, force: bool = False) -> None:
    """Write ``data`` to ``path`` atomically, as ``write_text`` writes text (a PDF).

    Raises:
        ConfigError: As ``write_text``.
    """
    write_text(path, data, force)


def write_text(path: Path, text: str | bytes, force: bool = False) -> None:
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
    import tempfile  # not at module level: readers (the explorer's start-up) need none of it

    path = Path(path)
    check_target(path, force)
    directory = path.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot write ({reason(exc)})") from None
    try:
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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
        raise ConfigError(f"{shown_path(path)}: cannot write ({reason(exc)})") from None
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"{shown_path(path)}: cannot write text that is not Unicode ({exc.reason})"
        ) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def move_into_place(tmp: Path, path: Path, force: bool = False) -> None:
    """Give a finished file the name ``path``, atomically; replace a file only with ``force``.

    For outputs another program writes whole (a build tool's archive), which ``write_text``
    cannot produce: the program writes ``tmp`` beside ``path``, and this names it.

    Args:
        tmp: The finished file, in ``path``'s directory; it keeps existing (callers remove it).
        path: Its name.
        force: Replace an existing file.

    Raises:
        ConfigError: ``path`` exists (also one created since ``check_target``) without
            ``force``, or cannot be written.
    """
    try:
        if force:
            os.replace(tmp, path)
        else:
            _link_new(Path(tmp), Path(path))
    except OSError as exc:
        raise ConfigError(f"{shown_path(path)}: cannot write ({reason(exc)})") from None


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
