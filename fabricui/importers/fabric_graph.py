"""The switch graph every cluster importer returns: switches, hosts, cables, Slurm blocks.

``ibnetdiscover``, ``iblinkinfo`` and Slurm's topology files describe the same thing at
different depths (every cable with its speed, or only which switch is whose parent). They
all fill one ``SwitchGraph``, so ``fabricui import FORMAT FILE --json`` prints the same keys
for each and ``importers.cluster_spec`` turns any of them into a topology spec.

Tiers are inferred from the graph, not from names: a *leaf* holds hosts, and every other
switch sits one tier above the nearest tier it is cabled to (hop distance from the leaves:
spine = 1, core = 2 and above). Everything here is linear in the graph's size (dicts and
breadth-first search).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.hostlist import compress, natural_key
from fabricui.importers.port_health import PortHealth

#: Nominal data rate of one lane [Gb/s] per InfiniBand speed name (``ibstat`` Rate / width).
LANE_GBPS = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.0,
    "FDR": 14.0,
    "EDR": 25.0,
    "HDR": 50.0,
    "NDR": 100.0,
    "XDR": 200.0,
}
#: Lane signalling rates ``iblinkinfo`` prints [Gb/s] -> speed name.
SIGNAL_SPEEDS = {
    2.5: "SDR",
    5.0: "DDR",
    10.0: "QDR",
    10.3125: "FDR10",
    14.0625: "FDR",
    25.78125: "EDR",
    53.125: "HDR",
    106.25: "NDR",
    212.5: "XDR",
}
#: Tier names by hop distance from the leaves (3 and above are all ``core``).
TIER_NAMES = ("leaf", "spine", "core")
#: Most items a message lists before ``...``.
_SHOW = 4
#: Most uplinks a host-less leaf may have to be recognised as one (a switch radix).
_MAX_UPLINKS = 256
#: A Mellanox-managed switch's NodeDescription: ``MF0;<name>:<model>/<slot>``.
_MF0 = re.compile(r"^MF0;([^:;]{1,80}):([^/]{1,40})(?:/(.{0,20}))?$")


def link_gbps(width: str | None, speed: str | None) -> float | None:
    """``4x`` + ``HDR`` -> 200.0 [Gb/s]; None when either is unknown.

    Args:
        width: ``1x``, ``4x``, ``12x`` (any case).
        speed: ``SDR`` ... ``XDR``.
    """
    if not width or not speed:
        return None
    lanes = re.fullmatch(r"(\d{1,2})[xX]", width)
    lane = LANE_GBPS.get(speed.upper())
    if lanes is None or lane is None:
        return None
    return int(lanes.group(1)) * lane


def switch_name(description: str) -> tuple[str | None, str]:
    """A switch's name and model from its NodeDescription, as every InfiniBand importer
    names switches (so their names match whichever tool printed them).

    ``MF0;LG01-05:MQM8700/U1`` (a Mellanox-managed switch) -> (``LG01-05``, ``MQM8700``);
    a description without blanks is the name (``ib-sw``, model ""); one with blanks is no
    name, only a model (``MT47396 Infiniscale-III Mellanox Technologies``).

    Args:
        description: The NodeDescription as printed (surrounding blanks are ignored).

    Returns:
        (name or None, model).
    """
    desc = description.strip()
    mf0 = _MF0.match(desc)
    if mf0:
        return mf0.group(1).strip() or None, mf0.group(2).strip()
    if desc and not re.search(r"\s", desc) and not desc.startswith("#"):
        return desc, ""
    return None, desc


def node_name(description: str) -> str:
    """A peer's or node's NodeDescription with a Mellanox switch's ``MF0;<name>:<model>/<slot>``
    shortened to ``<name>`` (as ``switch_name`` names switches); any other stays as printed.

    Args:
        description: The NodeDescription as printed (``luna-0001 mlx5_6`` stays so).
    """
    desc = description.strip()
    mf0 = _MF0.match(desc)
    if mf0 and mf0.group(1).strip():
        return mf0.group(1).strip()
    return desc


def listing(items: list[str]) -> str:
    """A few items and how many more: ``a, b, c, d and 12 more``."""
    shown = ", ".join(items[:_SHOW])
    return shown + (f" and {len(items) - _SHOW} more" if len(items) > _SHOW else "")


@dataclass
class FabricSwitch:
    """One switch (chip) of the fabric."""

    name: str
    """Unique name in this graph (from the NodeDescription, else the GUID id)."""
    guid: str | None = None
    """Node GUID or ibnetdiscover id (``S-...``), when the input has one."""
    ports: int | None = None
    """Port count the input announces."""
    lid: int | None = None
    """Base LID."""
    model: str = ""
    """Part as the input names it (``MQM8700``), else the raw description."""
    description: str = ""
    """The NodeDescription (or Slurm line) as read."""
    level: int | None = None
    """Slurm's ``Level=`` (``scontrol show topology``)."""
    chassis: str | None = None
    """Director chassis it belongs to (``ibnetdiscover -g``), when known."""

    def to_json(self) -> dict[str, Any]:
        """The fields, without empty ones."""
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class HostPort:
    """One connected port of a host's adapter (an InfiniBand CA port or a Slurm node)."""

    name: str
    """Endpoint name used in ``links`` (``luna-0001 mlx5_0``, ``H-0008f1...``)."""
    hca: str = ""
    """Adapter name on the host (``mlx5_0``, ``HCA-1``); empty when unknown."""
    port: int | None = None
    """Port number on the adapter."""
    guid: str | None = None
    """Adapter (CA) GUID or ibnetdiscover id."""

    def to_json(self) -> dict[str, Any]:
        """The fields, without empty ones."""
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class FabricHost:
    """A host (compute node) and its connected adapter ports."""

    name: str
    """Host name (or the adapter's GUID id when the input gives none)."""
    ports: list[HostPort] = field(default_factory=list)
    """Connected ports, in the input's order."""
    named: bool = True
    """False when the name is an adapter id because the input has no host name."""

    def to_json(self) -> dict[str, Any]:
        """Name, ports, and ``named: false`` for GUID-named hosts."""
        data: dict[str, Any] = {"name": self.name, "ports": [p.to_json() for p in self.ports]}
        if not self.named:
            data["named"] = False
        return data


@dataclass
class FabricLink:
    """One cable (or, for Slurm files, one parent-child relation with no cable details)."""

    a: str
    """One end: a switch name or a host port name."""
    a_port: int | None
    """Port number at ``a``."""
    b: str
    """The other end."""
    b_port: int | None
    """Port number at ``b``."""
    width: str | None = None
    """Lanes (``4x``), when known."""
    speed: str | None = None
    """Lane speed name (``HDR``), when known."""
    gbps: float | None = None
    """Data rate per direction [Gb/s], when known."""

    def to_json(self) -> dict[str, Any]:
        """The documented keys, in order."""
        return {
            "a": self.a,
            "a_port": self.a_port,
            "b": self.b,
            "b_port": self.b_port,
            "width": self.width,
            "speed": self.speed,
            "gbps": self.gbps,
        }


@dataclass
class FabricBlock:
    """A Slurm block (topology/block): nodes that share a fast domain (an NVL72 rack)."""

    name: str
    """Block name."""
    nodes: list[str] = field(default_factory=list)
    """Node names listed for it."""
    size: int | None = None
    """Node count the input states, when it states one (it may list fewer)."""

    def to_json(self) -> dict[str, Any]:
        """Name, nodes, and the stated size when there is one."""
        data: dict[str, Any] = {"name": self.name, "nodes": self.nodes}
        if self.size is not None:
            data["size"] = self.size
        return data


@dataclass
class SwitchGraph:
    """What a cluster importer read: switches, hosts and their cables, Slurm blocks."""

    format: str
    """Importer name (``ibnetdiscover``, ``slurm-topology`` ...)."""
    source: str
    """The variant read (``ibnetdiscover -p``, ``topology.conf (block)`` ...)."""
    switches: list[FabricSwitch] = field(default_factory=list)
    """Switches, in input order."""
    hosts: list[FabricHost] = field(default_factory=list)
    """Hosts (or Slurm nodes), in input order."""
    links: list[FabricLink] = field(default_factory=list)
    """Unique cables (each once, whichever end listed it)."""
    blocks: list[FabricBlock] = field(default_factory=list)
    """Slurm blocks."""
    warnings: list[str] = field(default_factory=list)
    """What could not be read or looks wrong (one line each)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    host_key: str = "hosts"
    """JSON key of ``hosts``: ``hosts`` (adapters) or ``nodes`` (Slurm node names)."""
    other_endpoints: dict[str, str] = field(default_factory=dict)
    """Endpoint name -> what it is, for link ends that are neither switch nor host port
    (``aggregation node``, ``router``)."""
    cables_known: bool = True
    """False when links are parent-child relations without cable counts or speeds."""
    ports: list[PortHealth] = field(default_factory=list)
    """Ports that are not links (down, polling, disabled, without a peer) and links that
    trained below what their ends support, in the state importers' shape."""
    _tiers: dict[str, int] | None = field(default=None, repr=False, compare=False)

    # --- structure ---------------------------------------------------------------------

    def switch_names(self) -> set[str]:
        """Names of all switches."""
        return {s.name for s in self.switches}

    def port_owner(self) -> dict[str, str]:
        """Host port name -> host name."""
        return {p.name: h.name for h in self.hosts for p in h.ports}

    def switch_links(self) -> list[FabricLink]:
        """Links between two different switches."""
        names = self.switch_names()
        return [k for k in self.links if k.a in names and k.b in names and k.a != k.b]

    def host_links(self) -> list[tuple[str, int | None, str, FabricLink]]:
        """(host port name, its port number, switch name, link) of every host-to-switch
        cable."""
        names = self.switch_names()
        ports = self.port_owner()
        out: list[tuple[str, int | None, str, FabricLink]] = []
        for k in self.links:
            if k.a in ports and k.b in names:
                out.append((k.a, k.a_port, k.b, k))
            elif k.b in ports and k.a in names:
                out.append((k.b, k.b_port, k.a, k))
        return out

    def tiers(self) -> dict[str, int]:
        """Switch name -> tier (0 leaf, 1 spine, 2+ above); -1 when no host is reachable.

        Leaves are the switches hosts are cabled to; every other switch is one tier above
        the nearest switch below it (breadth-first over switch-to-switch links).
        """
        if self._tiers is not None:
            return self._tiers
        adjacent: dict[str, set[str]] = {s.name: set() for s in self.switches}
        for k in self.switch_links():
            adjacent[k.a].add(k.b)
            adjacent[k.b].add(k.a)
        seeds = {switch for _, _, switch, _ in self.host_links()}
        first = _levels(adjacent, seeds)
        # Leaves without a host in the dump (idle, or holding only management ports) look
        # like leaves: cabled to more than half of the spines a real leaf uses, or hanging
        # alone from one switch far above the hosts. Without this they would come out as a
        # tier above the cores (Selene's MLG01-05 under MSPINE4-01, SLG03-09..12 of its
        # storage fabric).
        # Bounded so a hostile graph stays linear: a leaf has at most a radix of uplinks.
        extra = set()
        for name, others in adjacent.items():
            if name in seeds or not others or len(others) > _MAX_UPLINKS:
                continue
            if len(others) == 1 and first[next(iter(others))] >= 2:
                extra.add(name)
                continue
            probe = next(iter(others))
            candidates = [leaf for leaf in adjacent[probe] if leaf in seeds][:_MAX_UPLINKS]
            if len(others) >= 2 and any(
                others <= adjacent[leaf] and 2 * len(others) > len(adjacent[leaf])
                for leaf in candidates
            ):
                extra.add(name)
        self._tiers = _levels(adjacent, seeds | extra) if extra else first
        return self._tiers

    def tier_counts(self) -> dict[str, int]:
        """``{"leaf": 200, "spine": 320, "core": 146}`` (and ``unconnected``)."""
        counts: Counter[str] = Counter()
        for value in self.tiers().values():
            counts[tier_name(value)] += 1
        return dict(counts)

    def oversubscription(self) -> dict[str, float]:
        """Measured leaf down:up capacity ratios: ``min``, ``median``, ``max`` (empty when
        speeds or uplinks are unknown).

        Down = the leaf's host cables, up = its cables to higher tiers, both [Gb/s].
        """
        if not self.cables_known:
            return {}
        tiers = self.tiers()
        down: defaultdict[str, float] = defaultdict(float)
        up: defaultdict[str, float] = defaultdict(float)
        for _, _, switch, link in self.host_links():
            down[switch] += link.gbps or 0.0
        for k in self.switch_links():
            for low, high in ((k.a, k.b), (k.b, k.a)):
                if tiers[low] == 0 and tiers[high] > 0:
                    up[low] += k.gbps or 0.0
        ratios = sorted(down[s] / up[s] for s in down if up[s] > 0 and down[s] > 0)
        if not ratios:
            return {}
        return {
            "min": round(ratios[0], 3),
            "median": round(ratios[len(ratios) // 2], 3),
            "max": round(ratios[-1], 3),
        }

    # --- output ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """format, source, switches, hosts/nodes, links, blocks, tiers, oversubscription,
        warnings."""
        tiers = self.tiers()
        switches = []
        for s in self.switches:
            data = s.to_json()
            if self.links or self.hosts:
                data["tier"] = tier_name(tiers[s.name])
            switches.append(data)
        return {
            "format": self.format,
            "source": self.source,
            "switches": switches,
            # Slurm nodes have no adapter ports: only their names (and GUID-named ones marked).
            self.host_key: [
                h.to_json() if self.host_key == "hosts" else {"name": h.name, "named": h.named}
                for h in self.hosts
            ],
            "links": [k.to_json() for k in self.links],
            "blocks": [b.to_json() for b in self.blocks],
            "oversubscription": self.oversubscription(),
            "ports": [p.to_json() for p in self.ports],
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """Counts, tiers, speeds, measured oversubscription, blocks (a few lines)."""
        ports = sum(len(h.ports) for h in self.hosts)
        what = self.host_key
        lines = [
            f"{self.source}: {len(self.switches)} switches, {len(self.hosts)} {what}"
            + (f" ({ports} adapter ports)" if what == "hosts" else "")
            + f", {len(self.links)} links"
            + (f", {len(self.blocks)} blocks" if self.blocks else "")
        ]
        if self.switches and (self.links or self.hosts):
            counts = self.tier_counts()
            order = [*TIER_NAMES, "unconnected"]
            lines.append(
                "  tiers: " + ", ".join(f"{counts[t]} {t}" for t in order if counts.get(t))
            )
        speeds = Counter(
            f"{k.width or '?'}{k.speed or '?'}" for k in self.links if k.width or k.speed
        )
        if speeds:
            lines.append(
                "  speeds: " + ", ".join(f"{name} x{n}" for name, n in speeds.most_common())
            )
        ratio = self.oversubscription()
        if ratio:
            lines.append(
                f"  leaf oversubscription (host:uplink capacity): median {ratio['median']:g}:1 "
                f"(min {ratio['min']:g}, max {ratio['max']:g})"
            )
        named = [h.name for h in self.hosts if h.named]
        if named:
            lines.append(f"  {what}: {compress(named)}")
        not_links = Counter(p.state for p in self.ports if not p.degraded)
        if not_links:
            lines.append(
                "  ports that are not links: "
                + ", ".join(f"{n} {state}" for state, n in not_links.most_common())
            )
        degraded = [p for p in self.ports if p.degraded]
        if degraded:
            shown = ", ".join(
                f"{p.label()} {p.width or ''} (could be {p.could_be})".replace("  ", " ")
                for p in degraded[:_SHOW]
            )
            more = f" and {len(degraded) - _SHOW} more" if len(degraded) > _SHOW else ""
            lines.append(f"  degraded links: {shown}{more}")
        for block in self.blocks[:_SHOW]:
            lines.append(f"  block {block.name}: {len(block.nodes)} nodes")
        if len(self.blocks) > _SHOW:
            lines.append(f"  ... and {len(self.blocks) - _SHOW} more blocks")
        return "\n".join(lines)


def narrow_links(
    links: list[FabricLink], known: set[tuple[str, int | str | None]]
) -> list[PortHealth]:
    """Links that trained at fewer lanes than most of the fabric's (a 1X cable among 4X
    ones), as degraded ports of their ``a`` end; ``known`` ends (already reported, e.g. by a
    ``Could be`` hint) are skipped. Only lanes count: a slower speed can be a slower device
    (EDR storage on an HDR fabric), a narrower width is a link that lost lanes."""
    lanes = Counter(
        int(k.width[:-1])
        for k in links
        if k.width and k.width[:-1].isdigit() and k.width[-1] in "xX"
    )
    if not lanes:
        return []
    modal = max(lanes, key=lambda n: (lanes[n], n))
    out = []
    for k in links:
        if not k.width or not k.width[:-1].isdigit() or int(k.width[:-1]) >= modal:
            continue
        if (k.a, k.a_port) in known or (k.b, k.b_port) in known:
            continue
        port = PortHealth(k.a, k.a_port, "up", rate_gbps=k.gbps, degraded=True)
        port.width, port.could_be = k.width.upper(), f"{modal}X"
        port.peer, port.peer_port = k.b, k.b_port
        out.append(port)
    return out


def _levels(adjacent: dict[str, set[str]], seeds: set[str]) -> dict[str, int]:
    """Hop distance of every switch from the nearest seed (-1 when none is reachable)."""
    tier = {name: -1 for name in adjacent}
    frontier = sorted(seeds)
    for name in frontier:
        tier[name] = 0
    level = 0
    while frontier:
        level += 1
        fresh = []
        for name in frontier:
            for other in adjacent[name]:
                if tier[other] == -1:
                    tier[other] = level
                    fresh.append(other)
        frontier = fresh
    return tier


def tier_name(tier: int) -> str:
    """0 -> ``leaf``, 1 -> ``spine``, 2+ -> ``core``, -1 -> ``unconnected``."""
    if tier < 0:
        return "unconnected"
    return TIER_NAMES[min(tier, len(TIER_NAMES) - 1)]


def sort_hosts(hosts: list[FabricHost]) -> list[FabricHost]:
    """Hosts in natural name order, each host's ports by adapter then port."""
    for host in hosts:
        host.ports.sort(key=lambda p: (natural_key(p.hca), p.port or 0, p.name))
    return sorted(hosts, key=lambda h: natural_key(h.name))
