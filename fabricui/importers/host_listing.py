"""One command's output from many hosts, as cluster shells print it: ``pdsh`` and ``clush``
put the host before every line (``luna-0001: CA 'mlx5_0'``), ``dshbak`` and ``clush -b``
print each host's output under a header (a dashed line, the host or a hostlist such as
``luna-[0001-0002] (2)`` for hosts whose outputs are identical, a dashed line).

Each host's part is read as that host's own output, so ``pdsh -w 'luna-[0001-0016]' ibstat >
ibstat.txt`` gives ``--health`` sixteen hosts' ports in one file. What the shell says itself
about a host (``pdsh@login: luna-0005: ssh exited with exit code 255``, or the ``ssh: connect
to host ...`` line of a host it could not reach, with ``2>&1``) goes with that host's part, so
a host whose command failed is a part of its own that says why. Text only: which hosts the
fabric has, and which parts an importer reads, is decided by the caller.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import expand

#: A host as the shells print it: a name without blanks (a header may hold a hostlist).
_HOST = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,252}"
#: A ``pdsh``/``clush`` line (``fullmatch``): the host, a colon, a blank and the line (or
#: nothing, for an empty line).
PREFIXED_LINE = re.compile(rf"({_HOST}):(?:[ \t](.*))?")
#: The shell itself, as it names its own lines (``pdsh@login``, ``clush``).
_SHELL = rf"(?:pdsh@{_HOST}|clush)"
#: A line the shell prints itself about a host (``fullmatch``): the host and what it says.
_SHELL_LINE = re.compile(rf"{_SHELL}: ({_HOST}): (.*)")
#: A line the shell prints itself that names no host.
_SHELL_ONLY = re.compile(rf"{_SHELL}:(?:[ \t].*)?")
#: A ``dshbak``/``clush -b`` header: the hosts between two dashed lines, with the count
#: ``clush -b`` adds for a group of hosts (``luna-[0001-0002] (2)``); ``dshbak`` of
#: ``pdsh ... 2>&1`` heads pdsh's own lines with ``pdsh@login``.
_HEADER = re.compile(
    rf"(?m)^-{{3,}}[ \t]*\n[ \t]*({_SHELL}|{_HOST}(?:\[[\d,\-]{{1,2000}}\][\w.\-]*)*"
    rf"(?:,{_HOST}(?:\[[\d,\-]{{1,2000}}\][\w.\-]*)*)*)(?:[ \t]+\(\d{{1,7}}\))?[ \t]*\n"
    rf"-{{3,}}[ \t]*$"
)
#: A line a listing may start with before its first header: blank, or the command that
#: printed it (``$ pdsh -w n[1-4] ibstat | dshbak``).
_LEAD = re.compile(r"[ \t]*|[^\n]{0,200}\b(?:pdsh|clush|dshbak)\b[^\n]{0,400}")
#: An error a host's command printed before the first header (``clush -b`` prints stderr as
#: it comes): ``luna-0005: ssh: connect to host luna-0005 port 22: Connection refused``.
_LEAD_ERROR = re.compile(rf"({_HOST}): ([A-Za-z][\w.\-]{{0,40}}: .*)")
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

    A prefixed listing needs every line that is not blank prefixed (or the shell's own),
    and at least two lines per host on average (a ``Key: value`` output names a key per
    line, not a host per line); a host the shell could not reach may have one line.

    Raises:
        ParseError: A header's hostlist names more than ``MAX_LISTED_HOSTS`` hosts.
    """
    return _by_header(text) or _by_prefix(text)


def _by_prefix(text: str) -> list[HostPart] | None:
    lines = text.split("\n")
    parts: dict[str, list[str]] = {}
    spans: dict[str, list[int]] = {}
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        said = _SHELL_LINE.fullmatch(line)
        if said is None and _SHELL_ONLY.fullmatch(line):
            continue  # the shell's own line about no host
        match = said or PREFIXED_LINE.fullmatch(line)
        if match is None:
            return None
        host = match.group(1)
        parts.setdefault(host, []).append(match.group(2) or "")
        spans.setdefault(host, [number, number])[1] = number
    counted = sum(len(v) for v in parts.values())
    if not parts or all(len(v) < 2 for v in parts.values()) or len(parts) > counted / 2:
        return None
    return [HostPart(host, "\n".join(body) + "\n", *spans[host]) for host, body in parts.items()]


def _by_header(text: str) -> list[HostPart] | None:
    headers = list(_HEADER.finditer(text))
    if not headers:
        return None
    # The listing starts with a header (after the command that made it, if pasted, and the
    # errors of hosts the shell could not reach): a tool's own section titles between
    # dashed lines (ibdiagnet's ``Summary``) come later.
    said = _Said()
    for number, line in enumerate(text[: headers[0].start()].split("\n"), start=1):
        error = _SHELL_LINE.fullmatch(line) or _LEAD_ERROR.fullmatch(line)
        if error is not None:
            said.add(error.group(1), error.group(2), number)
        elif not _LEAD.fullmatch(line):
            return None
    out: list[HostPart] = []
    for i, header in enumerate(headers):
        begin = header.end() + 1
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        first = text.count("\n", 0, header.start()) + 1
        body = said.body(text[begin:end] if begin <= end else "", first + 3, header.group(1))
        if body is None:
            continue  # the shell's own lines (pdsh@login's): each went to its host
        last = first + text[header.start() : end].rstrip("\n").count("\n")
        for host in expand(header.group(1), limit=MAX_LISTED_HOSTS):
            out.append(HostPart(host, body, first, last))
    out = said.joined(out)
    if len(out) > MAX_LISTED_HOSTS:
        raise ParseError(f"a listing of {len(out)} hosts, at most {MAX_LISTED_HOSTS}")
    return out or None


class _Said:
    """What the shell printed itself about each host in a ``dshbak``/``clush -b`` listing,
    with the line it is on: joined to that host's part (a part of its own for a host with
    no output)."""

    def __init__(self) -> None:
        self.lines: dict[str, list[tuple[int, str]]] = {}

    def add(self, host: str, line: str, number: int) -> None:
        """Keep ``line`` (of line ``number``) for ``host``."""
        self.lines.setdefault(host, []).append((number, line))

    def body(self, text: str, first: int, header: str) -> str | None:
        """The part's text without the shell's lines (kept for their hosts); None for the
        part of the shell itself (``dshbak`` heads ``pdsh@login: ...`` lines with
        ``pdsh@login``), whose every line is kept for the host it names."""
        shell = _SHELL_ONLY.fullmatch(f"{header}:") is not None
        if not shell and "pdsh@" not in text and "clush:" not in text:
            return text
        kept: list[str] = []
        for number, line in enumerate(text.split("\n"), start=first):
            found = _SHELL_LINE.fullmatch(line) or (
                PREFIXED_LINE.fullmatch(line) if shell else None
            )
            if found is not None:
                self.add(found.group(1), found.group(2) or "", number)
            elif not shell:
                kept.append(line)
        return None if shell else "\n".join(kept)

    def joined(self, parts: list[HostPart]) -> list[HostPart]:
        """``parts`` with each host's lines added to its part, and a part for each host
        that has only such lines."""
        if not self.lines:
            return parts
        out = []
        for part in parts:
            extra = self.lines.get(part.host)
            if extra:
                text = part.text.rstrip("\n") + "\n" + "\n".join(t for _, t in extra) + "\n"
                part = dataclasses.replace(part, text=text.lstrip("\n"))
            out.append(part)
        listed = {p.host for p in parts}
        for host, extra in self.lines.items():
            if host not in listed:
                text = "\n".join(t for _, t in extra) + "\n"
                out.append(HostPart(host, text, extra[0][0], extra[-1][0]))
        return out
