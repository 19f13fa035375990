"""The fabric as it is: a health overlay applied to a built fabric.

The fabric as designed has every cable at its nominal rate. The machines' own tools say
otherwise: a cable that trained at 1X of 4X, a port that is down or polling, a GPU with
NVLinks inactive. ``apply_health`` takes those conditions, named as the tools name things
(switch names, host names and their adapters, a GPU's index on its host), finds them in the
fabric and returns a new fabric every later stage prices unchanged:

* a degraded cable runs at its trained rate (a bundle of ``c`` cables loses ``(1 - f) / c``
  of its bandwidth for each cable at fraction ``f``); a port's rate is judged against its
  own cable's rate in the fabric, an up port at rate 0 is down, and an output none of whose
  ports runs at its cable's rate is said once (another fabric's, or every port slow);
* a down cable is removed: on an imported cluster's explicit graph the link goes, and GPUs
  whose NIC lost its only cable use the nearest cabled NIC of their host, as NCCL skips an
  inactive port; a generated fat-tree keeps its regular tables, so a down switch-to-switch
  cable carries nothing there (its bandwidth is 0 and routes take the others), and a host
  cable that is down turns the fabric into its explicit graph first (``cluster_of``; with
  no catalog to build it from, the cable is priced up, left unmarked, and said so); a
  generated dragonfly keeps its tables too: a down host cable stays in them at 0 GB/s,
  its NIC's GPUs move as on a graph and the router takes no route over it, but a down
  cable between two routers is priced up and said (its minimal routes are the tables',
  they cannot leave it); a generated torus wires chips to each other, with no host cable
  to lose;
* inactive NVLinks leave the GPU's scale-up links: they keep ``active / listed`` of their
  bandwidth, or, when the tool prints each link's rate, the sum of those rates over
  ``listed`` links at the fabric's rate per NVLink (a link at half rate is half a link);
* erroring ports are marked (views draw them), not slowed: the counters say the link is at
  risk, not what it delivers; a cable one output says is degraded (or down) and another
  (or the same) says counts errors is one change that says both, priced at its rate;
* a cable two outputs slow (one says degraded, another down or slower) is one change at
  the slower rate, whichever comes first, naming both;
* a condition that cannot be placed (a switch or host the fabric lacks, a switch port with
  no peer named) changes nothing, and one line of ``unmatched`` says why, naming switches
  as switches and hosts as hosts, a cable listed from both ends once.

Nothing here reads files or knows the tools: the service layer turns imported outputs into
``LinkCondition`` and ``GpuLinkCondition`` records.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError, FabricError
from fabricui.fabric.build import build_fabric
from fabricui.fabric.explicit import cluster_of
from fabricui.fabric.fabric import NETWORK_SWITCHES, DeviceKind, Fabric

if TYPE_CHECKING:
    from fabricui.hwdb.tables import Catalog

#: Marks a link can carry, worst last (``HealthOverlay.link_marks`` values).
MARKS = ("ok", "errors", "degraded", "down")
#: A trained rate within this fraction of nominal is nominal (rates print rounded).
_TOLERANCE = 0.01
#: Generic host names of a fabric without a cluster section: ``n3`` is node 3.
_NODE_NAME = re.compile(r"^n(\d{1,9})$")
_DIGITS = re.compile(r"(\d{1,6})$")
#: Why a switch port the output names no peer for is not applied.
NO_PEER = (
    "no peer is named for it, so which cable it is is unknown (give ibnetdiscover output "
    "that lists its cable with it)"
)


@dataclass(frozen=True)
class LinkCondition:
    """One port or cable as a tool saw it."""

    device: str
    """Where the port is: a switch (``LG01-01``, ``leaf3``) or a host, optionally with its
    adapter (``luna-0001 mlx5_0``, ``n3``)."""
    port: int | None = None
    """Port number at ``device``, when known."""
    peer: str | None = None
    """The other end (switch or ``host adapter``), when the tool says."""
    peer_port: int | None = None
    """Port number at ``peer``, when known."""
    state: str = "up"
    """``up``; ``unknown`` when the tool prints no state (``perfquery``: its counters only
    mark it); else why it carries nothing (``down``, ``polling``, ``disabled`` ...)."""

    @property
    def carries_nothing(self) -> bool:
        """Whether the port is down: a state other than ``up`` (none printed is not down)."""
        return self.state not in ("up", "unknown")

    fraction: float | None = None
    """Trained share of the nominal rate when the tool knows it (1X of 4X: 0.25)."""
    rate_gbps: float | None = None
    """Trained rate [Gb/s], compared with the fabric's nominal when ``fraction`` is unknown."""
    nic: int | None = None
    """Which of the host's NICs (0-based, in the fabric's order) when ``device`` is a host
    and no peer says which cable it is."""
    host_ports: int | None = None
    """Ports the host's tool listed among which ``nic`` counts: more than the host has NICs
    in the fabric (storage adapters), and counting cannot tell which NIC a port is."""
    erroring: bool = False
    """Its counters crossed a threshold (marked, not slowed)."""
    source: str = ""
    """Where it was read (``iblinkinfo links.txt``)."""
    device_kind: str = ""
    """``switch`` or ``host`` when the tool says what ``device`` is; ``adapter``: a host's
    adapter whose host the output does not name; empty: told from the name (the fabric's
    switches and hosts; ``host adapter`` is a host)."""
    peer_kind: str = ""
    """The same for ``peer``."""


@dataclass(frozen=True)
class GpuLinkCondition:
    """One GPU's NVLinks as ``nvidia-smi nvlink`` or ``dcgmi nvlink`` listed them."""

    host: str | None
    """The GPU's host (None: the output does not say; fine on a one-node fabric)."""
    gpu: int
    """GPU index on the host (``nvidia-smi``'s)."""
    inactive: int
    """Links not up."""
    listed: int | None
    """Links listed (None: the output names only the links that are down; the fabric's
    count of the GPU's scale-up links is used)."""
    erroring: bool = False
    """Its error counters crossed a threshold."""
    source: str = ""
    """Where it was read."""
    rates_gbps: tuple[float, ...] = ()
    """Rate of each active link [Gb/s] when the tool prints them (``nvidia-smi nvlink -s``);
    empty: only which links are active is known."""


@dataclass(frozen=True)
class HealthChange:
    """What one condition changed."""

    kind: str
    """``down``, ``degraded`` or ``errors``."""
    label: str
    """The links it changed, as views name them (``n3.nic0 -> leaf1``)."""
    factor: float
    """Bandwidth kept (0 when removed, 1 when only marked)."""
    devices: tuple[int, int]
    """The two devices of the link (``-1`` for a GPU's scale-up links as a whole)."""
    source: str
    """Where the condition was read (each output that said something of the link, joined
    with ``; ``)."""
    erroring: bool = False
    """Its counters crossed a threshold: every ``errors`` change, and a ``degraded`` or
    ``down`` link an output (the same or another) says counts errors too; it is priced at
    its rate, not at its errors."""

    def to_json(self) -> dict[str, Any]:
        """``kind``, ``link``, ``bandwidth_kept``, ``source``, ``erroring``."""
        return {
            "kind": self.kind,
            "link": self.label,
            "bandwidth_kept": round(self.factor, 4),
            "source": self.source,
            "erroring": self.erroring,
        }

    @property
    def condition(self) -> str:
        """``degraded``, or ``degraded, erroring`` for a slowed link that counts errors too."""
        return f"{self.kind}, erroring" if self.erroring and self.kind != "errors" else self.kind


@dataclass(frozen=True)
class HealthOverlay:
    """The fabric as it is, and what the overlay changed to make it."""

    fabric: Fabric
    """The overlaid fabric."""
    changes: tuple[HealthChange, ...]
    """Each change, in the conditions' order."""
    unmatched: tuple[str, ...]
    """Conditions that name nothing in the fabric (another fabric's switches, a host the
    fabric does not know), one line each."""
    link_marks: npt.NDArray[np.int8] = field(repr=False)
    """(n_links,) index into ``MARKS`` of every link of ``fabric``."""
    device_marks: dict[int, str] = field(default_factory=dict)
    """Device -> worst mark among its links and ports (devices whose cable was removed
    included)."""
    warnings: tuple[str, ...] = ()
    """What looks wrong with the conditions as a whole (an output whose rates are none of
    the fabric's), or what they leave of a host (cut off from the network), one line each."""
    cut_off: tuple[int, ...] = ()
    """Fabric nodes whose every NIC cable is down: their GPUs reach only their own node."""
    not_applied: dict[LinkCondition | GpuLinkCondition, str] = field(
        default_factory=dict, repr=False
    )
    """Each condition that changed nothing because it could not be placed (or the network
    cannot lose its cable), with why (its line of ``unmatched`` without the file); the other
    end of a cable listed from both ends included."""

    def to_json(self) -> dict[str, Any]:
        """``changes``, ``unmatched`` and ``warnings``."""
        return {
            "changes": [c.to_json() for c in self.changes],
            "unmatched": list(self.unmatched),
            "warnings": list(self.warnings),
        }

    def worst_first(self) -> list[HealthChange]:
        """The changes, down links first, then degraded, then erroring (in the order read
        within each kind)."""
        return sorted(self.changes, key=lambda c: -MARKS.index(c.kind))

    def summary(self) -> str:
        """One line: how many links are down, degraded, erroring (a slowed link that counts
        errors too is said with its kind: ``1 degraded (1 also erroring)``)."""
        parts = []
        for kind in MARKS[1:]:
            mine = [c for c in self.changes if c.kind == kind]
            also = sum(1 for c in mine if c.erroring) if kind != "errors" else 0
            if mine:
                parts.append(f"{len(mine)} {kind}" + (f" ({also} also erroring)" if also else ""))
        quiet = "no change: nothing the files mark down, degraded or erroring is a link here"
        text = "health: " + (", ".join(parts) if parts else quiet)
        if self.unmatched:
            text += f"; {len(self.unmatched)} condition(s) not applied"
        return text


def health_of(fabric: Fabric) -> HealthOverlay | None:
    """The overlay that made ``fabric``, if a health overlay made it."""
    found = fabric.__dict__.get("_health")
    return found if isinstance(found, HealthOverlay) else None


class _Names:
    """The fabric's switches and hosts by the names tools use."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        first = fabric.domains * fabric.node_devices
        self.switch = {fabric.device_name(d): d for d in range(first, fabric.n_devices)}
        cluster = fabric.spec.cluster
        self.hosts: dict[str, int] = {}
        self.per_node = 1
        if cluster is not None and cluster.hosts:
            self.per_node = cluster.hosts_per_node
            self.hosts = {h.name: i for i, h in enumerate(cluster.hosts) if h.name}
        kinds, src, dst = fabric.dev_kind, fabric.link_src, fabric.link_dst
        is_switch = np.isin(kinds, NETWORK_SWITCHES)
        net = np.arange(fabric.domains * fabric.node_links, fabric.n_links)
        up = net[(kinds[src[net]] == DeviceKind.NIC) & is_switch[dst[net]]]
        down = net[is_switch[src[net]] & (kinds[dst[net]] == DeviceKind.NIC)]
        self.cable_up = {int(src[k]): int(k) for k in up}
        self.cable_down = {int(dst[k]): int(k) for k in down}

    def host(self, text: str) -> tuple[str, str | None, int | None]:
        """(host, adapter, host index) of ``luna-0001 mlx5_0``, ``n3`` or ``luna-0001``."""
        host, _, rest = text.strip().partition(" ")
        adapter = rest.strip() or None
        if host in self.hosts:
            return host, adapter, self.hosts[host]
        m = _NODE_NAME.match(host)
        if m and int(m.group(1)) < self.fabric.nodes and not self.hosts:
            return host, adapter, int(m.group(1))
        return host, adapter, None

    def nics(self, index: int) -> list[int]:
        """NIC devices of host ``index`` in device order."""
        fabric = self.fabric
        node, slot = divmod(index, self.per_node)
        devices = fabric.host_device_ids(node)
        nics = [int(d) for d in devices if fabric.dev_kind[d] == DeviceKind.NIC]
        if self.per_node > 1:
            per = len(nics) // self.per_node
            nics = nics[slot * per : (slot + 1) * per]
        return nics

    def node_of(self, index: int) -> int:
        """Fabric node of host ``index``."""
        return index // self.per_node


def _pair_links(fabric: Fabric, a: int, b: int) -> list[int]:
    """Directed links between devices ``a`` and ``b`` (both directions)."""
    src, dst = fabric.link_src, fabric.link_dst
    net = slice(fabric.domains * fabric.node_links, fabric.n_links)
    s, d = src[net], dst[net]
    hits = np.flatnonzero(((s == a) & (d == b)) | ((s == b) & (d == a)))
    return [int(k) + fabric.domains * fabric.node_links for k in hits]


def _nominal_gbps(fabric: Fabric, link: int) -> float:
    """Nominal rate of one cable of a link [Gb/s]."""
    return float(fabric.link_bw_GBps[link]) * 8.0 / max(int(fabric.link_count[link]), 1)


def _fraction(condition: LinkCondition, fabric: Fabric, link: int | None) -> float:
    """Share of its cable's rate a port in this condition delivers (0 when not up, or up
    at rate 0; 1 when ``link`` is None and only a rate is known)."""
    if condition.carries_nothing:
        return 0.0
    if condition.fraction is not None:
        return max(0.0, min(1.0, condition.fraction))
    if condition.rate_gbps is not None and link is not None:
        nominal = _nominal_gbps(fabric, link)
        if nominal > 0.0:
            return max(0.0, min(1.0, condition.rate_gbps / nominal))
    return 1.0


class _Plan:
    """Changes gathered before the new fabric is made."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.lost = np.zeros(fabric.n_links)  # cables' worth of bandwidth lost per link
        self.scale = np.ones(fabric.n_links)  # multiplicative factors (NVLinks)
        self.marks = np.zeros(fabric.n_links, dtype=np.int8)
        self.device_marks: dict[int, str] = {}
        self.remove_cables: set[int] = set()  # NIC devices whose cable is down
        self.changes: list[HealthChange] = []
        self.unmatched: list[str] = []
        self.not_applied: dict[LinkCondition | GpuLinkCondition, str] = {}
        # Why each cable (by its ends' names and ports) is not applied: its other end is not
        # said again.
        self.missed_cables: dict[tuple[tuple[str, int], ...], str] = {}
        # NIC -> the conditions that took its cable down, and no other (said not applied when
        # the network is generated and cannot lose it; the others are applied).
        self.removed_by: dict[int, list[LinkCondition]] = {}
        self.seen: set[tuple[int, ...]] = set()
        # Switch cable (a key of ``seen``) -> why it is priced up: down on a generated
        # dragonfly, whose routes cannot leave it.
        self.priced_up: dict[tuple[int, ...], str] = {}
        # Cable (a key of ``seen``) -> index of its change: what another output says of the
        # same cable joins that change.
        self.cable_change: dict[tuple[int, ...], int] = {}
        # Cable (a key of ``seen``) -> (its fraction, the links it slowed, what each lost) of
        # the condition priced: a slower one said of it later takes its place.
        self.cable_slow: dict[tuple[int, ...], tuple[float, list[int], float]] = {}
        # Source -> (rate read, rate of its cable) of every up port with a rate [Gb/s].
        self.rates: dict[str, list[tuple[float, float]]] = {}

    def miss(self, condition: LinkCondition | GpuLinkCondition, why: str, what: str = "") -> None:
        """Say that ``condition`` is not applied, and why: a line of ``unmatched`` naming
        where it was read and ``what`` (``LG01-05 port 3 not applied: ``)."""
        self.not_applied[condition] = why
        if isinstance(condition, LinkCondition):
            cable = _cable_key(condition)
            if cable is not None:
                self.missed_cables.setdefault(cable, why)
        self.unmatched.append(f"{condition.source or 'health'}: {what}{why}")

    def read_rate(self, condition: LinkCondition, nominal: float | None) -> None:
        """Remember an up port's rate beside its cable's, to tell another fabric's output.

        Only a rate judged against the cable counts: a port whose tool gives its trained
        share (iblinkinfo's ``Could be 4X``) is judged against what its own ends support,
        and such tools list only the ports below it, so theirs say nothing of the fabric.
        """
        rate = condition.rate_gbps
        if condition.state == "up" and rate and nominal and condition.fraction is None:
            self.rates.setdefault(condition.source or "health", []).append((rate, nominal))

    def wrong_rates(self) -> list[str]:
        """One line per source none of whose ports runs at its cable's rate."""
        out = []
        for source, pairs in self.rates.items():
            if any(abs(rate / nominal - 1.0) <= _TOLERANCE for rate, nominal in pairs):
                continue
            read = "/".join(f"{r:g}" for r in sorted({r for r, _ in pairs}))
            cabled = "/".join(f"{n:g}" for n in sorted({n for _, n in pairs}))
            out.append(
                f"{source}: no port runs at its cable's rate in {self.fabric.spec.id} ({read} "
                f"Gb/s read, {cabled} Gb/s cabled): each is priced at the rate read; if the "
                "output is of another fabric, leave it out"
            )
        return out

    def again(
        self, cable: tuple[int, ...], kind: str | None, condition: LinkCondition, f: float
    ) -> bool:
        """Whether ``cable`` has its change already (listed from its other end, or in
        another output): what this condition says joins it (a degraded cable that counts
        errors is both), naming its source. False when this condition slows (``kind``, to
        fraction ``f``) a cable an earlier one only marked erroring, or slows it more than
        the one priced (down where another said degraded): that one's loss is taken back
        and the caller records this one (``record``), so the slower fact is priced
        whichever output comes first."""
        at = self.cable_change.get(cable)
        if at is None:
            return False
        change = self.changes[at]
        if kind is not None and change.kind == "errors":
            return False
        held = self.cable_slow.get(cable)
        if kind is not None and held is not None and f < held[0] - _TOLERANCE:
            _, links, lost = self.cable_slow.pop(cable)
            for k in links:
                self.lost[k] -= lost
            return False
        if kind is not None or condition.erroring:  # it says something of the cable
            source = _sources(change.source, condition.source or "health")
            erroring = change.erroring or condition.erroring
            self.changes[at] = dataclasses.replace(change, erroring=erroring, source=source)
        return True

    def record(self, cable: tuple[int, ...], change: HealthChange) -> None:
        """Record ``cable``'s change: in place of an earlier change of the same cable (one
        that only marked it erroring, or slowed it less), keeping that one's errors and
        naming both sources; else after the others."""
        at = self.cable_change.get(cable)
        if at is None:
            self.cable_change[cable] = len(self.changes)
            self.changes.append(change)
            return
        earlier = self.changes[at]
        self.changes[at] = dataclasses.replace(
            change,
            erroring=earlier.erroring or change.erroring,
            source=_sources(earlier.source, change.source),
        )

    def mark(self, links: list[int], kind: str) -> None:
        level = MARKS.index(kind)
        for k in links:
            self.marks[k] = max(self.marks[k], level)
            for dev in (int(self.fabric.link_src[k]), int(self.fabric.link_dst[k])):
                self.mark_device(dev, kind)

    def mark_device(self, dev: int, kind: str) -> None:
        old = self.device_marks.get(dev, "ok")
        if MARKS.index(kind) > MARKS.index(old):
            self.device_marks[dev] = kind

    def label(self, a: int, b: int) -> str:
        name = self.fabric.device_name
        return f"{name(a)} -> {name(b)}"


def apply_health(
    fabric: Fabric,
    links: list[LinkCondition] | tuple[LinkCondition, ...] = (),
    gpus: list[GpuLinkCondition] | tuple[GpuLinkCondition, ...] = (),
    catalog: Catalog | None = None,
) -> HealthOverlay:
    """The fabric as it is under these conditions.

    Args:
        fabric: The fabric as designed (any builder's).
        links: Port and cable conditions.
        gpus: NVLink conditions per GPU.
        catalog: The hardware database; needed only to rebuild a generated fat-tree as its
            explicit graph when a host cable is down (without it the cable is priced up,
            and said so).

    Returns:
        The overlay: the new fabric (``health_of`` finds the overlay on it), what changed
        and what matched nothing.
    """
    names = _Names(fabric)
    plan = _plan(fabric, names, links, gpus)
    # A generated dragonfly loses a host cable in place (``_build``); a fat-tree becomes
    # its explicit graph.
    if (
        plan.remove_cables
        and fabric.dragonfly is None
        and (fabric.tree is not None or fabric.torus is not None)
    ):
        if catalog is not None:
            explicit = _as_explicit(fabric, catalog)
            if explicit is not None:
                return apply_health(explicit, links, gpus, catalog)
        # No cable graph to take it from (no catalog, or a layout the explicit builder
        # does not take): routes would cross a cable that carries nothing, so it is priced
        # up and said so.
        plan = _price_host_cables_up(plan, names, links, gpus)
    return _build(plan, names)


def _plan(
    fabric: Fabric,
    names: _Names,
    links: Sequence[LinkCondition],
    gpus: Sequence[GpuLinkCondition],
) -> _Plan:
    """The changes ``links`` and ``gpus`` make to ``fabric``, gathered."""
    plan = _Plan(fabric)
    for link in links:
        _link(plan, names, link)
    worst: dict[int, _GpuChange] = {}  # one change per GPU: reports of it overlap
    for gpu in gpus:
        found = _gpu(plan, names, gpu)
        if found is not None:
            held = worst.get(found.dev)
            worst[found.dev] = found if held is None else held.joined(found)
    for found in worst.values():
        found.apply(plan)
    plan.unmatched = list(dict.fromkeys(plan.unmatched))  # a host named by each of its ports
    return plan


def _price_host_cables_up(
    plan: _Plan,
    names: _Names,
    links: Sequence[LinkCondition],
    gpus: Sequence[GpuLinkCondition],
) -> _Plan:
    """``plan`` gathered again without the conditions that take a host cable down (a
    generated network with no cable graph to take it from), and one line for each such
    cable saying it is priced up: its down change and mark go (a link drawn down is priced
    down), and what else is said of the cable applies as said of a cable that is up (its
    error counters mark it erroring, a slower rate slows it), as a dragonfly's router
    cable that is not applied leaves its other facts applied."""
    fabric = plan.fabric
    down = [c for c in plan.changes if c.kind == "down" and c.devices[0] in plan.remove_cables]
    taken_down = {c for change in down for c in plan.removed_by[change.devices[0]]}
    kept = _plan(fabric, names, [c for c in links if c not in taken_down], gpus)
    for change in down:
        conditions = plan.removed_by[change.devices[0]]
        why = (
            f"{change.label} is down, but {fabric.spec.id}'s network is generated, not a "
            "graph a cable can leave: priced with it up"
        )
        source = "; ".join(dict.fromkeys(c.source or "health" for c in conditions))
        kept.unmatched.append(f"{source}: {why}")
        for condition in conditions:
            kept.not_applied[condition] = why
    return kept


def _link(plan: _Plan, names: _Names, condition: LinkCondition) -> None:
    """Find one port or cable and record its change."""
    fabric = plan.fabric
    where = condition.source or "health"
    a_name, b_name = condition.device, condition.peer
    a_switch = names.switch.get(a_name)
    b_switch = names.switch.get(b_name) if b_name else None
    kind = (
        "down" if condition.carries_nothing else ("degraded" if _is_degraded(condition) else None)
    )
    if kind is None and not condition.erroring:
        return
    said = _cable_key(condition)
    if said is not None and said in plan.missed_cables:  # its other end, said already
        plan.not_applied[condition] = plan.missed_cables[said]
        return
    if condition.device_kind == "adapter":  # one line for the file, not one per adapter
        example = next(iter(names.hosts), "n0")
        plan.miss(
            condition,
            f"the ports' host is not named as a host of {fabric.spec.id} (name the file after "
            f"its host, e.g. {example}.txt)",
        )
        return
    named = _ends(names, condition)
    missing = [(end_kind, name) for end_kind, name, found in named if not found]
    if missing:
        # Named by kind; a port of a switch is named with the port, each cable once; a
        # host's own ports (a one-host output) are one line for the host.
        switch_port = any(end_kind == "switch" for end_kind, _, _ in named)
        what = f"{_port_label(condition)} not applied: " if switch_port else ""
        plan.miss(condition, _not_of(missing, fabric.spec.id), what)
        return
    if a_switch is not None and not b_name:
        plan.miss(condition, NO_PEER, f"{_port_label(condition)} not applied: ")
        return
    if a_switch is not None and b_switch is not None:
        pair = _pair_links(fabric, a_switch, b_switch)
        if not pair:
            plan.miss(
                condition,
                f"no cable {a_name} - {b_name} in {fabric.spec.id}",
                f"{_port_label(condition)} not applied: ",
            )
            return
        # Each end with its own port: (A 1 <-> B 21) and (A 21 <-> B 1) are two cables.
        ends = sorted(((a_switch, _port(condition.port)), (b_switch, _port(condition.peer_port))))
        key: tuple[int, ...] = (*ends[0], *ends[1])
        f = _fraction(condition, fabric, pair[0])
        kind = _kind(condition, f)
        if kind is None and not condition.erroring:
            return  # at its cable's rate
        if fabric.dragonfly is not None and _leaves_nothing(plan, key, pair, f):
            # Said once per cable (not ``miss``: another output that says the cable is
            # only degraded is applied, whichever comes first).
            why = plan.priced_up.get(key) or (
                f"{plan.label(a_switch, b_switch)} is down, but {fabric.spec.id} is a "
                "generated dragonfly, whose routes between routers are its tables' and cannot "
                "leave a cable: priced with it up (a down cable from a host's NIC to its "
                "router is applied)"
            )
            if key not in plan.priced_up:
                plan.priced_up[key] = why
                plan.unmatched.append(f"{where}: {_port_label(condition)} not applied: {why}")
            plan.not_applied[condition] = why
            return
        if plan.again(key, kind, condition, f):  # listed from both ends, or in another output
            return
        plan.seen.add(key)
        plan.read_rate(condition, _nominal_gbps(fabric, pair[0]))
        count = max(int(fabric.link_count[pair[0]]), 1)
        if kind is None:
            plan.mark(pair, "errors")
            plan.record(
                key,
                HealthChange(
                    "errors",
                    plan.label(a_switch, b_switch),
                    1.0,
                    (a_switch, b_switch),
                    where,
                    erroring=True,
                ),
            )
            return
        lost = (1.0 - f) / count
        for k in pair:
            plan.lost[k] += lost
        plan.cable_slow[key] = (f, pair, lost)
        kept = max(0.0, 1.0 - plan.lost[pair[0]])
        kind = "down" if kept <= 0.0 else kind
        plan.mark(pair, kind)
        what = f" (1 of {count} cables)" if count > 1 else ""
        label = plan.label(a_switch, b_switch) + what
        plan.record(
            key,
            HealthChange(
                kind, label, kept, (a_switch, b_switch), where, erroring=condition.erroring
            ),
        )
        return
    # A host port: the host is at one end, its switch (if named) at the other.
    if a_switch is not None and b_name:
        host_text, switch = b_name, a_switch
    elif b_switch is not None:
        host_text, switch = a_name, b_switch
    else:
        host_text, switch = a_name, None
    host, adapter, index = names.host(host_text)
    if index is None:  # not reached (every end was found above): said, never guessed
        plan.miss(condition, f"{host} is not a host of {fabric.spec.id}")
        return
    nics = names.nics(index)
    if not nics and fabric.torus is not None:
        plan.miss(
            condition,
            f"{host} has no NIC in {fabric.spec.id}: its chips are wired to each other (a "
            "torus), so no adapter's cable is part of the fabric",
        )
        return
    fastest = _host_cable(fabric, names, nics)
    nominal = _kind(condition, _fraction(condition, fabric, fastest)) is None
    if nominal and not condition.erroring:  # at the rate of the host's cables: no condition
        plan.read_rate(condition, None if fastest is None else _nominal_gbps(fabric, fastest))
        return
    candidates = [n for n in nics if switch is None or _switch_of(fabric, names, n) == switch]
    nic = None
    if len(candidates) == 1 and (switch is not None or len(nics) == 1):
        nic = candidates[0]
    elif condition.nic is not None and (condition.host_ports or 0) > len(nics):
        # Some of the listed ports are no NIC of the fabric (storage adapters), and which
        # ones only the cabling says: not guessed.
        plan.miss(
            condition,
            f"cannot tell which NIC {adapter or 'this port'} is on {host} "
            f"({condition.host_ports} HCA ports, {len(nics)} NICs): give iblinkinfo or "
            "ibnetdiscover output with it",
        )
        return
    elif (
        condition.nic is not None
        and condition.nic < len(nics)
        and nics[condition.nic] in candidates
    ):
        nic = nics[condition.nic]
    elif switch is not None and adapter and candidates and (m := _DIGITS.search(adapter)):
        ordinal = int(m.group(1))
        nic = candidates[ordinal] if ordinal < len(candidates) else None
    if nic is None:
        plan.miss(
            condition,
            f"which NIC of {host} is {adapter or 'this port'} is unknown"
            + (" (no cable to that switch)" if switch is not None and not candidates else ""),
        )
        return
    up, down = names.cable_up.get(nic), names.cable_down.get(nic)
    cable = [k for k in (up, down) if k is not None]
    if not cable:
        plan.miss(condition, f"{fabric.device_name(nic)} has no cable in {fabric.spec.id}")
        return
    f = _fraction(condition, fabric, cable[0])
    kind = _kind(condition, f)
    if kind is None and not condition.erroring:
        plan.read_rate(condition, _nominal_gbps(fabric, cable[0]))
        return  # at its own cable's rate
    if (nic,) in plan.seen:  # the same cable from its other end, or in another file
        if nic in plan.remove_cables and kind == "down":
            plan.removed_by[nic].append(condition)
        if plan.again((nic,), kind, condition, f):
            return
    plan.seen.add((nic,))
    plan.read_rate(condition, _nominal_gbps(fabric, cable[0]))
    peer = int(fabric.link_dst[cable[0]]) if up is not None else int(fabric.link_src[cable[0]])
    port_name = f"{host} {adapter}" if adapter else host
    label = f"{fabric.device_name(nic)} ({port_name}) -> {fabric.device_name(peer)}"
    erroring = condition.erroring
    if kind is None:
        plan.mark(cable, "errors")
        plan.record((nic,), HealthChange("errors", label, 1.0, (nic, peer), where, erroring=True))
        return
    if f <= 0.0:
        plan.remove_cables.add(nic)
        plan.removed_by.setdefault(nic, []).append(condition)
        plan.cable_slow[(nic,)] = (0.0, [], 0.0)
        plan.mark(cable, "down")
        plan.record((nic,), HealthChange("down", label, 0.0, (nic, peer), where, erroring=erroring))
        return
    for k in cable:
        plan.lost[k] += 1.0 - f
    plan.cable_slow[(nic,)] = (f, cable, 1.0 - f)
    plan.mark(cable, "degraded")
    plan.record((nic,), HealthChange("degraded", label, f, (nic, peer), where, erroring=erroring))


def _leaves_nothing(plan: _Plan, key: tuple[int, ...], pair: list[int], f: float) -> bool:
    """Whether a switch cable ``key`` at fraction ``f`` leaves its link ``pair`` nothing (the
    bundle's other cables lost already): not when a change as slow of the same cable is
    priced (this condition joins it)."""
    held = plan.cable_slow.get(key)
    if held is not None and f >= held[0] - _TOLERANCE:
        return False
    own = held[2] if held is not None else 0.0
    count = max(int(plan.fabric.link_count[pair[0]]), 1)
    return bool(plan.lost[pair[0]] - own + (1.0 - f) / count >= 1.0 - 1e-9)


def _sources(said: str, more: str) -> str:
    """``said`` with ``more`` named after it (``iblinkinfo links.txt; ibqueryerrors
    errors.txt``), each source once."""
    return "; ".join(dict.fromkeys([*said.split("; "), more]))


def _cable_key(condition: LinkCondition) -> tuple[tuple[str, int], ...] | None:
    """A cable by its two ends' names and ports, the same from either end (None: the
    condition does not name both)."""
    if condition.peer is None or condition.port is None or condition.peer_port is None:
        return None
    return tuple(
        sorted(((condition.device, condition.port), (condition.peer, condition.peer_port)))
    )


def _end_kind(names: _Names, name: str, said: str) -> str:
    """``switch`` or ``host``: what the tool said, else a switch of the fabric, a host of it
    or an adapter (``luna-0001 mlx5_0``) is a host, and a bare name is a switch (tools name
    a host's port with its adapter)."""
    if said in ("switch", "host"):
        return said
    if name in names.switch:
        return "switch"
    if names.host(name)[2] is not None or " " in name.strip():
        return "host"
    return "switch"


def _ends(names: _Names, condition: LinkCondition) -> list[tuple[str, str, bool]]:
    """(kind, name, found in the fabric) of each end the condition names: a host by its
    host name (``luna-0001`` of ``luna-0001 mlx5_6``)."""
    out = []
    for name, said in (
        (condition.device, condition.device_kind),
        (condition.peer, condition.peer_kind),
    ):
        if not name:
            continue
        kind = _end_kind(names, name, said)
        if kind == "switch":
            out.append((kind, name, name in names.switch))
        else:
            host, _, index = names.host(name)
            out.append((kind, host, index is not None))
    return out


def _port_label(condition: LinkCondition) -> str:
    """``LG01-05 port 3``, or a cable by both ends (``LG01-05 port 21 - CSPINE1-41 port 1``)."""

    def end(name: str, port: int | None) -> str:
        return name if port is None else f"{name} port {port}"

    here = end(condition.device, condition.port)
    return f"{here} - {end(condition.peer, condition.peer_port)}" if condition.peer else here


def _not_of(missing: list[tuple[str, str]], fabric_id: str) -> str:
    """``LG01-05 is not a switch of selene``, ``LG01-05 and CSPINE1-41 are not switches of
    ...``, ``LG01-05 is not a switch and luna-0001 not a host of ...``."""
    missing = list(dict.fromkeys(missing))  # a cable from a switch to itself
    if len(missing) == 1:
        kind, name = missing[0]
        return f"{name} is not a {kind} of {fabric_id}"
    (a_kind, a_name), (b_kind, b_name) = missing[:2]
    if a_kind == b_kind:
        plural = "switches" if a_kind == "switch" else "hosts"
        return f"{a_name} and {b_name} are not {plural} of {fabric_id}"
    return f"{a_name} is not a {a_kind} and {b_name} not a {b_kind} of {fabric_id}"


def _port(number: int | None) -> int:
    """A port number for a cable's key (-1: not given)."""
    return -1 if number is None else number


def _is_degraded(condition: LinkCondition) -> bool:
    if condition.fraction is not None:
        return condition.fraction < 1.0 - _TOLERANCE
    return condition.rate_gbps is not None  # judged against its cable's rate, once found


def _kind(condition: LinkCondition, kept: float) -> str | None:
    """``down``, ``degraded`` or None (nominal) for a condition keeping ``kept`` of its
    cable's rate: an active port at rate 0 carries nothing."""
    if condition.carries_nothing or kept <= 0.0:
        return "down"
    return "degraded" if kept < 1.0 - _TOLERANCE else None


def _host_cable(fabric: Fabric, names: _Names, nics: list[int]) -> int | None:
    """The fastest cable of a host's NICs (None: none is cabled)."""
    cables = [
        k for nic in nics if (k := names.cable_up.get(nic, names.cable_down.get(nic))) is not None
    ]
    return max(cables, key=lambda k: _nominal_gbps(fabric, k)) if cables else None


def _switch_of(fabric: Fabric, names: _Names, nic: int) -> int | None:
    k = names.cable_up.get(nic)
    return int(fabric.link_dst[k]) if k is not None else None


@dataclass(frozen=True)
class _GpuChange:
    """What one GPU's NVLink condition does to its scale-up links (not yet applied)."""

    dev: int
    """The GPU's device."""
    links: list[int]
    """Its scale-up links."""
    factor: float
    """Share of their bandwidth kept: active / listed NVLinks, or the links' rates over
    their nominal (1: none inactive or slow)."""
    erroring: bool
    """Its error counters crossed a threshold."""
    label: str
    """``n0.g0 NVLinks (0 of 18 active)``."""
    where: str
    """Where the condition was read."""

    def joined(self, other: _GpuChange) -> _GpuChange:
        """One change of the GPU from two reports of it: the slower one's rate, erroring
        when either counts errors, naming the other report too when it says something of
        the GPU (errors, or links inactive or slow), as a cable's change does."""
        slower, faster = (other, self) if other.factor < self.factor else (self, other)
        if not faster.erroring and faster.factor >= 1.0 - _TOLERANCE:
            return slower
        where = _sources(slower.where, faster.where)
        return dataclasses.replace(slower, erroring=slower.erroring or faster.erroring, where=where)

    def apply(self, plan: _Plan) -> None:
        """Scale and mark the links, and record the change."""
        if self.factor >= 1.0 - _TOLERANCE:  # none inactive or slow: only its counters
            if self.erroring:
                plan.mark(self.links, "errors")
                plan.changes.append(
                    HealthChange(
                        "errors", self.label, 1.0, (self.dev, -1), self.where, erroring=True
                    )
                )
            return
        plan.scale[self.links] *= self.factor
        kind = "down" if self.factor <= 0.0 else "degraded"
        plan.mark(self.links, kind)
        plan.changes.append(
            HealthChange(
                kind, self.label, self.factor, (self.dev, -1), self.where, erroring=self.erroring
            )
        )


def _gpu(plan: _Plan, names: _Names, condition: GpuLinkCondition) -> _GpuChange | None:
    """What scaling one GPU's scale-up links to the share of its NVLinks that are active
    does (None: the condition changes nothing, or names nothing here, said in
    ``plan.unmatched``)."""
    fabric = plan.fabric
    where = condition.source or "health"
    if condition.host is None:
        if fabric.nodes != 1:
            plan.miss(
                condition,
                "the GPUs' host is not named (name the file after its host, e.g. luna-0001.txt)",
            )
            return None
        node = 0
    else:
        _, _, index = names.host(condition.host)
        if index is None:
            plan.miss(condition, f"{condition.host} is not a host of {fabric.spec.id}")
            return None
        node = names.node_of(index)
        if names.per_node > 1:
            plan.miss(condition, f"hosts share node blocks in {fabric.spec.id}")
            return None
    if condition.gpu >= fabric.gpus_per_node:
        plan.miss(
            condition,
            f"GPU {condition.gpu} of {condition.host or 'the host'}: the fabric's hosts "
            f"have {fabric.gpus_per_node} GPUs",
        )
        return None
    rank = node * fabric.gpus_per_node + condition.gpu
    dev = int(fabric.gpu_dev[rank])
    kinds = fabric.dev_kind
    scale_up = (DeviceKind.NVSWITCH, DeviceKind.GPU)
    src, dst = fabric.link_src, fabric.link_dst
    mine = np.flatnonzero(
        ((src == dev) & np.isin(kinds[dst], scale_up))
        | ((dst == dev) & np.isin(kinds[src], scale_up))
    )
    if not mine.size:
        plan.miss(condition, f"{fabric.gpu_name(rank)} has no scale-up links in {fabric.spec.id}")
        return None
    links = [int(k) for k in mine]
    listed = condition.listed or int(fabric.link_count[links[0]])
    active = max(0, listed - condition.inactive)
    label = f"{fabric.gpu_name(rank)} NVLinks ({active} of {listed} active"
    factor = active / listed if listed else 0.0
    out = [k for k in links if int(src[k]) == dev]
    count = int(fabric.link_count[out].sum()) if out else 0
    if condition.rates_gbps and listed and count:
        # Each link's rate against the fabric's per NVLink: a link at half rate is half.
        per_link = float(fabric.link_bw_GBps[out].sum()) * 8.0 / count
        have = sum(min(max(r, 0.0), per_link) for r in condition.rates_gbps)
        factor = have / (listed * per_link)
        label += f", {have / 8:g} of {listed * per_link / 8:g} GB/s"
    label += ")"
    if factor >= 1.0 - _TOLERANCE:
        return _GpuChange(dev, links, 1.0, True, label, where) if condition.erroring else None
    return _GpuChange(dev, links, factor, condition.erroring, label, where)


def _build(plan: _Plan, names: _Names) -> HealthOverlay:
    """The new fabric from the plan (links removed, bandwidths scaled, GPUs re-pointed)."""
    fabric = plan.fabric
    keep_bw = np.clip(1.0 - plan.lost, 0.0, 1.0) * plan.scale
    bw = fabric.link_bw_GBps * keep_bw
    marks = plan.marks.copy()
    gpu_nic = fabric.gpu_nic
    removed = np.zeros(fabric.n_links, dtype=bool)
    cables = [
        k
        for nic in plan.remove_cables
        for k in (names.cable_up.get(nic), names.cable_down.get(nic))
        if k is not None
    ]
    if fabric.tree is None and fabric.dragonfly is None and fabric.torus is None:
        # An explicit graph: what carries nothing goes (cables down, whole bundles lost).
        network = np.arange(fabric.n_links) >= fabric.domains * fabric.node_links
        removed = network & (bw <= 0.0)
        removed[cables] = True
    else:
        # A dragonfly's tables name links by id: its down host cables stay, carrying
        # nothing (the router takes no NIC cable at 0 GB/s, as if it were not there).
        bw[cables] = 0.0
    if plan.remove_cables:
        gpu_nic = _repoint(fabric, names, plan.remove_cables)
    cut_off = _cut_off(fabric, names, plan.remove_cables)
    keep = ~removed
    new = dataclasses.replace(
        fabric,
        link_src=fabric.link_src[keep],
        link_dst=fabric.link_dst[keep],
        link_bw_GBps=bw[keep],
        link_lat_us=fabric.link_lat_us[keep],
        link_eff=fabric.link_eff[keep],
        link_gen=fabric.link_gen[keep],
        link_count=fabric.link_count[keep],
        gpu_nic=gpu_nic,
    )
    overlay = HealthOverlay(
        fabric=new,
        changes=tuple(plan.changes),
        unmatched=tuple(plan.unmatched),
        link_marks=marks[keep],
        device_marks=dict(plan.device_marks),
        warnings=(
            *plan.wrong_rates(),
            *(
                f"{_node_label(fabric, node)} is cut off from the network: every NIC cable is "
                "down, so its GPUs reach only their own node"
                for node in cut_off
            ),
        ),
        cut_off=tuple(cut_off),
        not_applied=dict(plan.not_applied),
    )
    object.__setattr__(new, "_health", overlay)  # found again by health_of
    return overlay


def _cut_off(fabric: Fabric, names: _Names, lost: set[int]) -> list[int]:
    """Nodes that had a cabled NIC and have none left once ``lost`` NICs' cables go."""
    out = []
    for node in sorted({int(fabric.dev_node[n]) for n in lost}):
        nics = [
            int(d) for d in fabric.host_device_ids(node) if fabric.dev_kind[d] == DeviceKind.NIC
        ]
        if not any(n in names.cable_up and n not in lost for n in nics):
            out.append(node)
    return out


def _node_label(fabric: Fabric, node: int) -> str:
    """A node's host name(s) (``luna-0001``), else ``n3``."""
    names = fabric.host_names
    per = len(names) // fabric.nodes if names else 0
    hosts = [h for h in names[node * per : (node + 1) * per] if h]
    return ", ".join(hosts) if hosts else f"n{node}"


def _repoint(fabric: Fabric, names: _Names, lost: set[int]) -> npt.NDArray[np.int32]:
    """``gpu_nic`` with GPUs whose NIC lost its cable on the nearest cabled NIC of their host
    (by NIC position), as NCCL moves off an inactive port; a host with no cabled NIC left
    keeps its NICs (routes to it fail, naming the NIC)."""
    gpu_nic = fabric.gpu_nic.copy()
    nic_node = fabric.dev_node
    affected = sorted({int(nic_node[n]) for n in lost})
    g = fabric.gpus_per_node
    for node in affected:
        nics = [
            int(d) for d in fabric.host_device_ids(node) if fabric.dev_kind[d] == DeviceKind.NIC
        ]
        cabled = [i for i, n in enumerate(nics) if n in names.cable_up and n not in lost]
        if not cabled:
            continue
        for rank in range(node * g, (node + 1) * g):
            nic = int(gpu_nic[rank])
            if nic in lost and nic in nics:
                position = nics.index(nic)
                best = min(cabled, key=lambda c: (abs(c - position), c))
                gpu_nic[rank] = nics[best]
    return gpu_nic


def _as_explicit(fabric: Fabric, catalog: Catalog) -> Fabric | None:
    """A generated fat-tree rebuilt as its explicit graph (same devices and links), so a
    cable can be removed; None when it has no leaf switches to write out."""
    try:
        spec = cluster_of(fabric)
    except EngineError:
        return None
    if spec.cluster is None:
        return None
    # Hosts keep the names they had: the cluster's, else the fabric's own (``n3``).
    before = fabric.spec.cluster.hosts if fabric.spec.cluster is not None else ()
    names = tuple(
        dataclasses.replace(h, name=before[i].name if i < len(before) else f"n{i}")
        for i, h in enumerate(spec.cluster.hosts)
    )
    spec = dataclasses.replace(spec, cluster=dataclasses.replace(spec.cluster, hosts=names))
    try:
        return build_fabric(spec, catalog)
    except FabricError:  # a layout the explicit builder does not take (shared NIC ports)
        return None
