"""Read an ``NCCL_DEBUG=INFO`` log into an ``NcclLog``: version, network, NICs, transports.

Logs arrive in many shapes (see shared/data/topo/INDEX.md, section 3): the usual
``host:pid:tid [dev] NCCL INFO`` prefix, a launcher's ``[rank] `` or Open MPI's
``[1,0]<stdout>:`` in front of it, the host part stripped (`` [0] NCCL INFO``), every prefix
stripped, a CloudWatch timestamp line before each line, prose and code fences around the
paste. Every line is reduced to its message, then matched against the handful of message
forms the doctor needs; anything else is ignored. No I/O except ``read_nccl_log``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fabricui.files import read_bounded
from fabricui.importers.nccl_log_forms import COMPLETION, gpu_names, parse_message
from fabricui.importers.nccl_log_records import (
    SOCKET_NETWORKS,
    TRANSPORT_LABELS,
    AlgoChoice,
    IbDevice,
    Message,
    NcclLog,
    NcclLogError,
    Transport,
    classify_transport,
)
from fabricui.importers.reading import UTF16_BOMS

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "COMPLETION",
    "MAX_LOG_BYTES",
    "SOCKET_NETWORKS",
    "TRANSPORT_LABELS",
    "AlgoChoice",
    "IbDevice",
    "Message",
    "NcclLog",
    "NcclLogError",
    "Transport",
    "classify_transport",
    "decode_and_parse",
    "parse_nccl_log",
    "read_log_bytes",
    "read_nccl_log",
]

#: Largest log read [bytes]; an INFO log of a big job is tens of MiB.
MAX_LOG_BYTES = 256 * 2**20

# --- line prefixes -------------------------------------------------------------------------

_STAMP = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_TIMESTAMP_LINE = re.compile(rf"^{_STAMP}$")
_LEADING_JUNK = re.compile(
    rf"^(?:{_STAMP}\s+"
    r"|\[\d+,\d+\]<std(?:out|err)>:"
    r"|\[\d+\]\s+(?=\S)"
    r"|\d+:\s+(?=\S+:\d+:\d+ \[))"
)
#: ``host:pid:tid [dev] [file.cc:N] NCCL LEVEL msg`` and its host-less form ``[dev] NCCL INFO``.
_NCCL_PREFIX = re.compile(
    r"(?:^|\s)(?:(?P<host>\S+):(?P<pid>\d+):(?P<tid>\d+)\s+)?\[(?P<dev>\d+)\]\s+"
    r"(?:(?P<loc>[\w./-]+:\d+)\s+)?NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<msg>.*)$"
)
_BARE_PREFIX = re.compile(r"^\s*NCCL (?P<level>INFO|WARN)\b ?(?P<msg>.*)$")


def _strip_junk(line: str) -> str:
    """Remove launcher and timestamp prefixes (they may be stacked)."""
    pos = 0
    while True:
        match = _LEADING_JUNK.match(line, pos)
        if not match or match.end() == pos:
            return line[pos:]
        pos = match.end()


def _split_line(raw: str) -> tuple[str | None, str, str, bool]:
    """(host, level, message, prefixed) of one line; level is empty when unknown."""
    line = _strip_junk(raw.rstrip("\r\n").strip("\ufeff"))
    match = _NCCL_PREFIX.search(line)
    if match:
        return match.group("host"), match.group("level"), match.group("msg").strip(), True
    bare = _BARE_PREFIX.match(line)
    if bare:
        return None, bare.group("level"), bare.group("msg").strip(), True
    return None, "", line.strip(), False


def parse_nccl_log(text: str, source: str = "<log>") -> NcclLog:
    """Parse the text of an NCCL_DEBUG=INFO log.

    Args:
        text: The log, with any of the prefix styles NCCL, launchers and pastes produce.
        source: File name for messages.

    Returns:
        What the log says; fields stay empty or None when the log does not say it.

    Raises:
        NcclLogError: Not one line looks like NCCL output.
    """
    log = NcclLog(source=source)
    seen_lists: set[tuple[IbDevice, ...]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or (stripped[0].isdigit() and _TIMESTAMP_LINE.match(stripped)):
            continue
        host, level, msg, prefixed = _split_line(raw)
        known = parse_message(log, number, level, msg, seen_lists, host if prefixed else None)
        if prefixed or known:
            log.recognized += 1
            if host and prefixed:
                log.hosts.add(host)
        for name in gpu_names(msg) if (prefixed or known) else ():
            if name not in log.gpu_names:
                log.gpu_names.append(name)
    if log.recognized == 0:
        raise NcclLogError(
            f"{source}: not an NCCL_DEBUG log (no 'NCCL INFO' or 'NCCL WARN' line, no NCCL "
            "message); capture it with NCCL_DEBUG=INFO"
        )
    return log


def read_nccl_log(path: Path | str) -> NcclLog:
    """Read and parse a log file; ``-`` reads standard input.

    Args:
        path: The log file, or ``-``.

    Returns:
        The parsed log.

    Raises:
        NcclLogError: The file cannot be read, is binary, or is not an NCCL log.
    """
    return decode_and_parse(*read_log_bytes(path))


def read_log_bytes(path: Path | str) -> tuple[bytes, str]:
    """The bytes of a log file (``-``: standard input) and its name for messages, read
    up to ``MAX_LOG_BYTES``.

    Raises:
        NcclLogError: The file cannot be read or is larger than ``MAX_LOG_BYTES``.
    """
    return read_bounded(
        path,
        MAX_LOG_BYTES,
        NcclLogError,
        "an NCCL_DEBUG log",
        "; keep the NCCL lines (grep NCCL) and read those",
    )


def decode_and_parse(data: bytes, source: str) -> NcclLog:
    """Parse the bytes of a log read elsewhere (the TUI reads files in a worker).

    Raises:
        NcclLogError: Binary data, or not an NCCL log.
    """
    if len(data) > MAX_LOG_BYTES:
        raise NcclLogError(
            f"{source}: larger than {MAX_LOG_BYTES // 2**20} MiB; keep the NCCL lines "
            "(grep NCCL) and read those"
        )
    if data.startswith(UTF16_BOMS):  # saved by PowerShell's '>': text, not binary
        return parse_nccl_log(data.decode("utf-16", errors="replace"), source)
    if b"\x00" in data[:4096]:
        raise NcclLogError(f"{source}: binary file, expected an NCCL_DEBUG text log")
    return parse_nccl_log(data.decode("utf-8", errors="replace"), source)
