"""Parse ``show_gids`` output: the GID table of every RDMA port (which index is RoCE v2 over
IPv4, the one ``NCCL_IB_GID_INDEX`` should name).

Rows read ``DEV PORT INDEX GID [IPv4] VER DEV`` (``mlx5_0 1 5 0000:...:ac13:003c
172.19.0.60 v2 ens1f0``); the script ends with ``n_gids_found=N``. Pastes from mail wrap a
long row onto a second line (``172.31.43.187  v1  bnxt_roce.43``) and turn tabs into
non-breaking spaces; both are read. Each port lists its GIDs; a port's state is not in this
output (``unknown``).
"""

from __future__ import annotations

import re
from collections import Counter

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthReport,
    PortHealth,
    health_text,
    prompt_host,
    strip_quote,
)

FORMAT = "show-gids"
EXPECTED = "`show_gids` output (DEV PORT INDEX GID IPv4 VER DEV rows)"

#: Largest input read [characters].
MAX_INPUT_CHARS = 16 * 2**20
_GID = re.compile(r"^[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_VERSION = re.compile(r"^v[12]$", re.IGNORECASE)
_FOUND = re.compile(r"n_gids_found[ \t]*=[ \t]*(\d{1,9})")


def _row(tokens: list[str]) -> bool:
    return (
        len(tokens) >= 4
        and tokens[1].isdigit()
        and tokens[2].isdigit()
        and bool(_GID.match(tokens[3]))
    )


def parse(text: str) -> HealthReport:
    """Parse ``show_gids`` output.

    Args:
        text: The output as pasted (wrapped rows and non-breaking spaces are read).

    Returns:
        One port per ``DEV PORT`` with its GIDs (``gids`` in the JSON), a note naming the
        RoCE v2 IPv4 GID index of each port.

    Raises:
        ParseError: Too large, or no GID row.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any show_gids output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="show_gids", host=prompt_host(lines))
    gids: list[dict[str, object]] = []
    ports: dict[tuple[str, int], PortHealth] = {}
    found = None
    pending: dict[str, object] | None = None
    for raw in lines:
        line = raw.strip()
        if not line or len(line) > MAX_LINE_CHARS:
            continue
        m = _FOUND.search(line)
        if m:
            found = int(m.group(1))
            continue
        tokens = line.split()
        if _row(tokens):
            entry: dict[str, object] = {
                "device": tokens[0],
                "port": int(tokens[1]),
                "index": int(tokens[2]),
                "gid": tokens[3],
                "ipv4": None,
                "version": None,
                "netdev": None,
            }
            _fill(entry, tokens[4:])
            gids.append(entry)
            pending = entry if entry["version"] is None else None
            key = (tokens[0], int(tokens[1]))
            if key not in ports:
                ports[key] = PortHealth(tokens[0], int(tokens[1]))
                report.ports.append(ports[key])
            continue
        if pending is not None and tokens and (_VERSION.match(tokens[0]) or _IPV4.match(tokens[0])):
            _fill(pending, tokens)  # the rest of a row the paste wrapped
            pending = None
    if not gids:
        raise wrong_format(text, EXPECTED, FORMAT)
    report.extra["gids"] = gids
    if found is not None and found != len(gids):
        report.warnings.append(f"n_gids_found={found} but {len(gids)} GID rows were read")
    for (device, number), port in ports.items():
        v2 = [g for g in gids if (g["device"], g["port"]) == (device, number)]
        roce = [g for g in v2 if g["version"] == "v2" and g["ipv4"]]
        if roce:
            first = roce[0]
            port.detail = f"RoCE v2 IPv4 {first['ipv4']} at GID index {first['index']}"
            report.notes.append(
                f"{device} port {number}: RoCE v2 over IPv4 {first['ipv4']} is GID index "
                f"{first['index']} (NCCL_IB_GID_INDEX={first['index']})"
            )
    repeats = Counter((g["device"], g["port"], g["gid"], g["version"]) for g in gids)
    doubled = [key for key, count in repeats.items() if count > 1]
    if doubled:
        where, at, gid, version = doubled[0]
        report.warnings.append(
            f"{len(doubled)} GID(s) listed more than once on one port (e.g. {where} port "
            f"{at} {gid} {version}, {repeats[doubled[0]]} times): stale GID table entries"
        )
    return report


def _fill(entry: dict[str, object], tokens: list[str]) -> None:
    """Put the tokens after a row's GID into its IPv4, version and netdev fields."""
    for token in tokens:
        if _IPV4.match(token) and entry["ipv4"] is None:
            entry["ipv4"] = token
        elif _VERSION.match(token) and entry["version"] is None:
            entry["version"] = token.lower()
        elif entry["version"] is not None and entry["netdev"] is None:
            entry["netdev"] = token
