"""Which NVLink domain each compute tray is in: from ``nvidia-smi -q``, a column file or NMX.

On GB200/GB300 NVL72 racks the driver registers every GPU with the NVLink fabric and prints
the domain it joined (``ClusterUUID``, the rack's NVLink domain, and ``CliqueId``, the
partition within it) in the ``Fabric`` section of ``nvidia-smi -q``. Trays whose GPUs share
both are one scale-up domain, as Slurm's ``topology/block`` groups them. ``fabricui import
ibnetdiscover DUMP -o cluster.yaml --node gb200-nvl72 --domains SOURCE`` reads SOURCE as:

- per-tray ``nvidia-smi -q`` outputs: a folder of files named after their hosts (read by the
  service layer and given here as ``{host: text}``), or one file of them with pdsh/clush
  ``host: `` prefixes (``pdsh -w gb200-[01-72] nvidia-smi -q > q.txt``);
- a column file: ``HOST CLUSTERUUID [CLIQUEID]`` per line (blanks, commas or ``: ``);
- an NVIDIA NMX/NetQ compute-node JSON export (``Name``, ``DomainUUID``, ``Health``).

Only trays whose GPUs completed registration successfully with a non-zero ClusterUUID are
grouped; every other tray is listed in a warning with its reason (registration in progress,
``Insufficient Resources``, no clique, GPUs in different domains) and kept out of the
domains. Unhealthy fabric health or reduced NVLink bandwidth is warned about and grouped.
Linear time, no I/O.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from fabricui.importers import nvidia_smi_q
from fabricui.importers.common import ParseError, clean_text
from fabricui.importers.fabric_graph import listing
from fabricui.importers.host_listing import PREFIXED_LINE
from fabricui.importers.hostlist import natural_key

#: Largest input read [characters] (72 trays' ``nvidia-smi -q`` is ~10 MB).
MAX_INPUT_CHARS = 256 * 2**20
#: Most trays read (a folder or a file).
MAX_TRAYS = 100_000
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_ZERO = re.compile(r"^0{8}-0{4}-0{4}-0{4}-0{12}$")
_SPLIT = re.compile(r"[\s,;]+|:\s+")


@dataclass
class DomainMap:
    """The NVLink domain of every tray that has one, and why the others have none."""

    source: str
    """What was read (``nvidia-smi -q of 72 trays``, ``column file``, ``NMX JSON``)."""
    domain_of: dict[str, str] = field(default_factory=dict)
    """Host -> domain id (``<ClusterUUID>/<CliqueId>``)."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Host -> why it is in no domain."""
    warnings: list[str] = field(default_factory=list)
    """Left-out trays and degraded ones, one line per reason."""

    def domains(self) -> dict[str, list[str]]:
        """Domain id -> its hosts in natural order, domains ordered by their first host."""
        out: dict[str, list[str]] = {}
        for host in sorted(self.domain_of, key=natural_key):
            out.setdefault(self.domain_of[host], []).append(host)
        return out


def _group_reasons(reasons: dict[str, str]) -> list[str]:
    """One warning per reason, naming the trays."""
    by_reason: dict[str, list[str]] = {}
    for host in sorted(reasons, key=natural_key):
        by_reason.setdefault(reasons[host], []).append(host)
    return [
        f"{len(hosts)} tray(s) are in no NVLink domain ({why}): left out: {listing(hosts)}"
        for why, hosts in by_reason.items()
    ]


def _tray(fabric: nvidia_smi_q.NvlinkFabric) -> tuple[str | None, str | None, list[str]]:
    """(domain, reason when none, remarks) of one tray's ``nvidia-smi -q``."""
    gpus = fabric.gpus
    remarks: list[str] = []
    domains = Counter(d for d in (g.domain() for g in gpus) if d is not None)
    unhealthy = Counter(
        g.health["Summary"] for g in gpus if g.health.get("Summary") not in (None, "Healthy", "N/A")
    )
    if unhealthy:
        remarks.append("fabric health " + ", ".join(repr(s) for s in unhealthy))
    slow = Counter(
        g.health["Bandwidth"]
        for g in gpus
        if g.health.get("Bandwidth") not in (None, "Full", "N/A")
    )
    if slow:
        remarks.append("NVLink bandwidth " + ", ".join(repr(s) for s in slow))
    if len(domains) > 1:
        return None, "its GPUs report different domains", remarks
    if domains:
        domain, members = next(iter(domains.items()))
        if members < len(gpus):
            remarks.append(f"{len(gpus) - members} of its {len(gpus)} GPUs are not in it")
        return domain, None, remarks
    states = Counter(g.state for g in gpus)
    if any(s not in (None, "Completed") for s in states):
        pending = ", ".join(repr(s) for s in states if s not in (None, "Completed"))
        return None, f"fabric registration not finished: State {pending}", remarks
    failed = Counter(g.status for g in gpus if g.status not in (None, "Success"))
    if failed:
        return None, "fabric Status " + ", ".join(repr(s) for s in failed), remarks
    if any(g.cluster_uuid and _ZERO.match(g.cluster_uuid) for g in gpus):
        return None, "all-zero ClusterUUID", remarks
    return None, "no ClusterUUID/CliqueId (an older driver, or no multi-node NVLink)", remarks


def domains_from_trays(outputs: dict[str, str], source: str = "") -> DomainMap:
    """Domains from each tray's ``nvidia-smi -q`` output.

    Args:
        outputs: Host name -> that host's ``nvidia-smi -q`` text.
        source: What was read, for the summary (default: ``nvidia-smi -q of N trays``).

    Returns:
        The map; trays whose output has no Fabric section are left out with the reason.

    Raises:
        ParseError: No tray, or more than ``MAX_TRAYS``.
    """
    if not outputs:
        raise ParseError("no tray's nvidia-smi -q output to read NVLink domains from")
    if len(outputs) > MAX_TRAYS:
        raise ParseError(f"{len(outputs):,} trays is more than {MAX_TRAYS:,}")
    result = DomainMap(source or f"nvidia-smi -q of {len(outputs)} tray(s)")
    degraded: dict[str, list[str]] = {}
    for host, text in outputs.items():
        try:
            fabric = nvidia_smi_q.parse(text)
        except ParseError as exc:
            result.left_out[host] = f"no Fabric section: {exc.message}"[:160]
            continue
        domain, reason, remarks = _tray(fabric)
        if domain is not None:
            result.domain_of[host] = domain
        else:
            result.left_out[host] = reason or "unknown"
        for remark in remarks:
            degraded.setdefault(remark, []).append(host)
    result.warnings = _group_reasons(result.left_out)
    for remark, hosts in degraded.items():
        hosts.sort(key=natural_key)
        result.warnings.append(f"{len(hosts)} tray(s) report {remark}: {listing(hosts)}")
    return result


def parse_domains(text: str, origin: str = "<domains>") -> DomainMap:
    """Domains from one file: pdsh-prefixed ``nvidia-smi -q``, a column file or NMX JSON.

    Args:
        text: The file's text.
        origin: Its name, for messages.

    Returns:
        The map.

    Raises:
        ParseError: Too large, or none of the three forms.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"{origin}: {len(text):,} characters is more than any domain source")
    text = clean_text(text)
    body = text.lstrip()
    if body.startswith(("[", "{")):
        return _nmx(body, origin)
    per_host: dict[str, list[str]] = {}
    other = 0
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = PREFIXED_LINE.fullmatch(line)
        if match:
            per_host.setdefault(match.group(1), []).append(match.group(2) or "")
        else:
            other += 1
    if per_host and any(any(row.strip() == "Fabric" for row in rows) for rows in per_host.values()):
        if len(per_host) > MAX_TRAYS:
            raise ParseError(f"{origin}: {len(per_host):,} trays is more than {MAX_TRAYS:,}")
        outputs = {host: "\n".join(rows) for host, rows in per_host.items()}
        return domains_from_trays(outputs, f"nvidia-smi -q of {len(outputs)} tray(s) ({origin})")
    return _columns(text, origin)


def _domain_key(tokens: list[str]) -> tuple[str | None, str | None]:
    """(domain id, reason when none) of a column line's ClusterUUID and CliqueId."""
    uuid = tokens[0]
    clique = tokens[1] if len(tokens) > 1 else None
    if uuid.upper() == "N/A" or (clique or "").upper() == "N/A":
        return None, "ClusterUUID or CliqueId N/A"
    if _ZERO.match(uuid):
        return None, "all-zero ClusterUUID"
    return (f"{uuid}/{clique}" if clique is not None else uuid), None


def _columns(text: str, origin: str) -> DomainMap:
    """``HOST CLUSTERUUID [CLIQUEID]`` lines."""
    result = DomainMap(f"column file ({origin})")
    bad: list[str] = []
    twice: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = [t for t in _SPLIT.split(line) if t]
        if len(tokens) not in (2, 3) or not _HOST.fullmatch(tokens[0]) or len(line) > 500:
            bad.append(str(number))
            continue
        host = tokens[0]
        if host in result.domain_of or host in result.left_out:
            twice.append(host)
            continue
        domain, reason = _domain_key(tokens[1:])
        if domain is not None:
            result.domain_of[host] = domain
        else:
            result.left_out[host] = reason or "unknown"
        if len(result.domain_of) + len(result.left_out) > MAX_TRAYS:
            raise ParseError(f"{origin}: more than {MAX_TRAYS:,} trays")
    if not result.domain_of and not result.left_out:
        raise ParseError(
            f"{origin}: not an NVLink domain source (per-tray nvidia-smi -q with host: "
            "prefixes, 'HOST CLUSTERUUID [CLIQUEID]' lines, or an NMX compute-node JSON)"
        )
    result.warnings = _group_reasons(result.left_out)
    if twice:
        result.warnings.append(
            f"{len(twice)} host(s) are listed twice: the first line is used: {listing(twice)}"
        )
    if bad:
        result.warnings.append(
            f"{len(bad)} line(s) are not 'HOST CLUSTERUUID [CLIQUEID]' (lines "
            f"{listing(bad)}): ignored"
        )
    return result


def _nmx(text: str, origin: str) -> DomainMap:
    """NMX/NetQ compute nodes: a JSON list of objects with ``Name`` and ``DomainUUID``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"{origin}: JSON that cannot be read ({str(exc)[:80]})") from None
    if isinstance(data, dict):
        data = data.get("computeNodes", data.get("items", [data]))
    if not isinstance(data, list) or len(data) > MAX_TRAYS:
        raise ParseError(f"{origin}: expected a JSON list of compute nodes (Name, DomainUUID)")
    result = DomainMap(f"NMX compute nodes ({origin})")
    degraded: list[str] = []
    for item in data:
        if not isinstance(item, dict):
            continue
        name, domain = item.get("Name"), item.get("DomainUUID")
        if not isinstance(name, str) or not _HOST.fullmatch(name):
            continue
        if not isinstance(domain, str) or not domain.strip() or _ZERO.match(domain.strip()):
            result.left_out[name] = "no DomainUUID"
            continue
        result.domain_of[name] = domain.strip()
        health = item.get("Health")
        if isinstance(health, str) and health.upper() != "HEALTHY":
            degraded.append(f"{name} ({health})")
    if not result.domain_of and not result.left_out:
        raise ParseError(f"{origin}: no compute node with a Name and a DomainUUID")
    result.warnings = _group_reasons(result.left_out)
    if degraded:
        result.warnings.append(
            f"{len(degraded)} tray(s) are not HEALTHY in NMX: {listing(degraded)}"
        )
    return result
