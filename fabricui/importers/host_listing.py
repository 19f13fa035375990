"""One command's output from many hosts, as cluster shells print it: ``pdsh`` and ``clush``
put the host before every line (``luna-0001: CA 'mlx5_0'``), ``dshbak`` and ``clush -b``
print each host's output under a header (a dashed line, the host or a hostlist such as
``luna-[0001-0002] (2)`` for hosts whose outputs are identical, a dashed line).

Each host's part is read as that host's own output, so ``pdsh -w 'luna-[0001-0016]' ibstat >
ibstat.txt`` gives ``--health`` sixteen hosts' ports in one file. Text only: which hosts
the fabric has is decided by the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import expand

#: A host as the shells print it: a name without blanks (a header may hold a hostlist).
_HOST = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,252}"
#: A ``pdsh``/``clush`` line (``fullmatch``): the host, a colon, a blank and the line (or
#: nothing, for an empty line).
PREFIXED_LINE = re.compile(rf"({_HOST}):(?:[ \t](.*))?")
#: A ``dshbak``/``clush -b`` header: the hosts between two dashed lines, with the count
#: ``clush -b`` adds for a group of hosts (``luna-[0001-0002] (2)``).
_HEADER = re.compile(
    rf"(?m)^-{{3,}}[ \t]*\n[ \t]*({_HOST}(?:\[[\d,\-]{{1,2000}}\][\w.\-]*)*(?:,{_HOST}"
    rf"(?:\[[\d,\-]{{1,2000}}\][\w.\-]*)*)*)(?:[ \t]+\(\d{{1,7}}\))?[ \t]*\n-{{3,}}[ \t]*$"
)
#: A line a listing may start with before its first header: blank, or the command that
#: printed it (``$ pdsh -w n[1-4] ibstat | dshbak``).
_LEAD = re.compile(r"[ \t]*|[^\n]{0,200}\b(?:pdsh|clush|dshbak)\b[^\n]{0,400}")
#: Most hosts one listing may name (a header's hostlist included).
MAX_LISTED_HOSTS = 65_536


@dataclass(frozen=True)
class HostPart:
    """One host's output in a listing."""

    host: str
    """The host as the listing names it."""
    text: str
    """Its output, the shell's prefix or header removed."""
    first_line: int
    """First line of the listing it came from (1-based)."""
    last_line: int
    """Last line of the listing it came from (1-based)."""


def split_hosts(text: str) -> list[HostPart] | None:
    """Each host's output in a ``pdsh``/``clush``/``dshbak`` listing, in the order the
    hosts first appear; None when ``text`` is not such a listing (one host's output).

    A prefixed listing needs every line that is not blank prefixed, and each host on more
    than one line (a ``Key: value`` output such as ``perfquery``'s names a key per line,
    not a host per line).

    Raises:
        ParseError: A header's hostlist names more than ``MAX_LISTED_HOSTS`` hosts.
    """
    return _by_header(text) or _by_prefix(text)


def _by_prefix(text: str) -> list[HostPart] | None:
    lines = text.split("\n")
    parts: dict[str, list[str]] = {}
    spans: dict[str, list[int]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = PREFIXED_LINE.fullmatch(line.rstrip("\r"))
        if match is None:
            return None
        host = match.group(1)
        parts.setdefault(host, []).append(match.group(2) or "")
        spans.setdefault(host, [number, number])[1] = number
    counted = sum(len(v) for v in parts.values())
    if not parts or any(len(v) < 2 for v in parts.values()) or len(parts) > counted / 2:
        return None
    return [HostPart(host, "\n".join(body) + "\n", *spans[host]) for host, body in parts.items()]


def _by_header(text: str) -> list[HostPart] | None:
    headers = list(_HEADER.finditer(text))
    # The listing starts with a header (after the command that made it, if pasted): a tool's
    # own section titles between dashed lines (ibdiagnet's ``Summary``) come later.
    if not headers or not all(
        _LEAD.fullmatch(line) for line in text[: headers[0].start()].split("\n")
    ):
        return None
    out: list[HostPart] = []
    for i, header in enumerate(headers):
        begin = header.end() + 1
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        body = text[begin:end] if begin <= end else ""
        first = text.count("\n", 0, header.start()) + 1
        last = first + text[header.start() : end].rstrip("\n").count("\n")
        for host in expand(header.group(1), limit=MAX_LISTED_HOSTS):
            out.append(HostPart(host, body, first, last))
    if len(out) > MAX_LISTED_HOSTS:
        raise ParseError(f"a listing of {len(out)} hosts, at most {MAX_LISTED_HOSTS}")
    return out
