"""The doctor with the fabric: an NCCL log's rings and NICs checked against the cluster the
job ran on (``fabricui doctor LOG --topology T [--hosts HOSTLIST]``).

An NCCL_DEBUG=INFO log says where each rank ran (the host of its lines, its device in
``a[dev] -> b[dev]``), the ring of every channel (rank 0's ``Channel 00/16 : 0 1 ...``, or
each rank's ``Ring 00 : prev -> rank -> next``), and which NIC each network connection
uses (``via NET/IB/3``, ``NET/IB/3(5)`` when rank 5 sends for it: PXN). The fabric says
which leaf, spine and core each GPU's traffic climbs to and which NIC is each GPU's own.
Joining them shows what the log alone cannot: a ring ordered across switches (more spine
or core crossings than the job's placement needs), ranks on a NIC that is not their
GPU's, cross-rail traffic that PXN would have kept on one rail, fewer channels than the
nodes have NICs, and hosts the cluster does not know. Finding codes are stable
(``FABRIC_CODES``), like the log-only doctor's.

Where the log is silent the mapping is stated, not guessed silently: log hosts map to the
cluster's hosts by name, or in order to ``--hosts`` (or to nodes 0, 1, ... of a reference
topology); a rank's GPU is its printed device index (bus ids in address order); NCCL's NIC
index k is the k-th HCA of the ``NET/IB : Using`` list, whose names in natural order are
the fabric's NICs 0, 1, ...
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.bulk import bulk_router
from fabricui.engine.routing import Router
from fabricui.errors import ConfigError
from fabricui.fabric.kinds import DeviceKind
from fabricui.importers.common import component_labels
from fabricui.importers.hostlist import natural_key
from fabricui.services.doctor import Finding
from fabricui.services.doctor_algorithms import check_choices
from fabricui.services.doctor_codes import SEVERITIES
from fabricui.services.session import collective_algorithms

if TYPE_CHECKING:
    import numpy.typing as npt

    from fabricui.fabric.fabric import Fabric
    from fabricui.importers.nccl_log import NcclLog

#: Network tiers by the highest switch a route enters (0: within a scale-up domain).
_TIER_NAMES = ("domain", "leaf", "spine", "core")
#: Most ring edges and connections routed (a bigger log is checked on a prefix).
_MAX_EDGES = 2_000_000
#: Connection kinds whose NIC index is an RDMA device (a socket's is an IP interface).
_RDMA = ("net_ib", "net_ib_gdr", "net_other", "net_other_gdr")
#: Most examples a finding names.
_SHOW = 3


@dataclass
class LogPlacement:
    """Where the log's ranks sit on the fabric."""

    gpu_of: dict[int, int] = field(default_factory=dict)
    """Log rank -> global fabric rank (GPU)."""
    host_of: dict[str, str] = field(default_factory=dict)
    """Log host -> the fabric host it is (a cluster host name, or ``n<node>``)."""
    unknown: list[str] = field(default_factory=list)
    """Log hosts the topology does not know."""
    beyond: list[str] = field(default_factory=list)
    """Ranks whose device index is beyond the host's GPUs (``rank (host dev)``)."""
    assumptions: list[str] = field(default_factory=list)
    """How the mapping was made where the log does not say it."""
    exact: bool = True
    """Every placed rank's host and GPU come from the log's own names and device indices
    (False: from an order the log implies)."""


@dataclass
class FabricCheck:
    """The comparison of one log with one fabric."""

    topology: str
    """Topology id."""
    placement: LogPlacement
    """Where the log's ranks sit."""
    findings: list[Finding]
    """Findings, most severe first."""
    rings: list[dict[str, Any]] = field(default_factory=list)
    """Per checked channel: ``channel``, ``edges`` by tier, and ``needed`` above the leaf
    and to the core."""
    nic_map: dict[int, int] = field(default_factory=dict)
    """NCCL's NIC index -> the fabric's NIC index used."""
    choices: list[Any] = field(default_factory=list)
    """The algorithms the log shows NCCL choosing, priced (``doctor_algorithms``)."""

    def to_json(self) -> dict[str, Any]:
        """The ``fabric`` object of ``fabricui doctor --json``."""
        return {
            "topology": self.topology,
            "ranks_placed": len(self.placement.gpu_of),
            "hosts": dict(self.placement.host_of),
            "unknown_hosts": list(self.placement.unknown),
            "assumptions": list(self.placement.assumptions),
            "rings": self.rings,
            "nic_map": {str(k): v for k, v in sorted(self.nic_map.items())},
            "algorithm_choices": [c.to_json() for c in self.choices],
            "findings": [f.to_json() for f in self.findings],
        }


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(natural_key(text))


# --- where the ranks ran ------------------------------------------------------------------


def _log_hosts(log: NcclLog, per_host: int, notes: list[str]) -> tuple[dict[int, str], int | None]:
    """(rank -> host, ranks per host when hosts follow from rank order).

    From the log's own lines; or by ``localRanks`` (else the topology's GPUs per host)
    when the names are missing or cannot be right (redacted): fewer distinct names than
    ``nNodes``, two ranks of one name on one device or more ranks than a host has GPUs, or
    a network connection between two ranks of one name.
    """
    by_rank = dict(log.rank_hosts)
    # P2P and shared-memory connections join ranks of one host.
    for _ in range(2):
        for t in log.transports:
            if t.kind.startswith(("p2p", "shm")):
                for a, b in ((t.src, t.dst), (t.dst, t.src)):
                    if a in by_rank and b not in by_rank:
                        by_rank[b] = by_rank[a]
    hosts = set(by_rank.values())
    in_rings = {r for order in log.ring_orders().values() for r in order}
    ranks = sorted(log.ranks | set(by_rank) | in_rings)
    per = log.local_ranks
    source = f"localRanks {per}"
    if not per and log.nranks and log.nnodes and log.nranks % log.nnodes == 0:
        per, source = log.nranks // log.nnodes, f"{log.nranks} ranks on {log.nnodes} nodes"
    if not per:
        per, source = per_host, "the topology's GPUs per host"
    devices = Counter((by_rank[r], log.rank_devs[r]) for r in by_rank if r in log.rank_devs)
    crowded = Counter(by_rank.values())
    networked = any(
        t.kind.startswith("net") and t.src in by_rank and by_rank.get(t.dst) == by_rank[t.src]
        for t in log.transports
    )
    redacted = (
        bool(log.nnodes and len(hosts) < log.nnodes)
        or any(n > 1 for n in devices.values())
        or any(n > per for n in crowded.values())
        or networked
    )
    if not hosts or redacted:
        why = "redacted" if hosts else "not printed"
        notes.append(
            f"host names are {why}: rank r is GPU r % {per} of the log's node r // {per} ({source})"
        )
        return {r: f"node{r // per}" for r in ranks}, per
    return by_rank, None


def _local_index(devs: dict[int, str], ranks: list[int], notes: list[str]) -> dict[int, int | None]:
    """Rank -> GPU index on its host: the printed nvmlDev, or the bus id's place in
    address order (older NCCL prints bus ids), or the rank's place on the host."""
    printed = {r: devs[r] for r in ranks if r in devs}
    if printed and all(d.isdigit() and len(d) <= 3 for d in printed.values()):
        return {r: int(printed[r]) if r in printed else None for r in ranks}
    if printed and len(printed) == len(ranks):
        note = "bus ids (an older NCCL) in address order are the host's GPUs 0, 1, ..."
        if note not in notes:
            notes.append(note)
        order = sorted(set(printed.values()), key=lambda d: int(d, 16) if _hex(d) else 0)
        return {r: order.index(printed[r]) for r in ranks}
    note = "no device in the log: a host's ranks in order are its GPUs 0, 1, ..."
    if note not in notes:
        notes.append(note)
    return {r: i for i, r in enumerate(sorted(ranks))}


def _hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def place_log(log: NcclLog, fabric: Fabric, hosts: list[str] | None = None) -> LogPlacement:
    """Map the log's ranks to the fabric's GPUs.

    Args:
        log: The parsed log.
        fabric: The fabric the job ran on.
        hosts: The job's hosts in order (``--hosts``): log hosts that are not cluster hosts
            by name map to these in the order of their first rank.

    Returns:
        The placement (unknown hosts and impossible devices listed, not raised).
    """
    placement = LogPlacement()
    notes = placement.assumptions
    per_node = fabric.spec.cluster.hosts_per_node if fabric.spec.cluster is not None else 1
    by_rank, by_order = _log_hosts(log, fabric.gpus_per_node // per_node, notes)
    placement.exact = not notes
    first_rank: dict[str, int] = {}
    for rank, host in sorted(by_rank.items()):
        first_rank.setdefault(host, rank)
    log_hosts = sorted(first_rank, key=first_rank.__getitem__)
    cluster = fabric.spec.cluster
    named = cluster is not None and bool(cluster.hosts)
    # --hosts takes a reference topology's own host names (n0, n1 ...) too.
    names = fabric.host_layout[0]
    index = {name: i for i, name in enumerate(names) if name is not None}
    host_index: dict[str, int] = {}
    positional = hosts if hosts is not None else None
    if positional is not None:
        missing = [h for h in positional if h not in index]
        if missing:
            raise ConfigError(
                f"--hosts: {len(missing)} host(s) not in {fabric.spec.id}: "
                + ", ".join(missing[:_SHOW])
            )
    if named and all(h in index for h in log_hosts):
        host_index = {h: index[h] for h in log_hosts}
    elif positional is not None:
        for i, host in enumerate(log_hosts):
            if i < len(positional):
                host_index[host] = index[positional[i]]
            else:
                placement.unknown.append(host)
        notes.append(
            f"the log's {len(log_hosts)} host(s) are the --hosts list in the order of their "
            "first rank"
        )
    elif named:
        host_index = {h: index[h] for h in log_hosts if h in index}
        placement.unknown = [h for h in log_hosts if h not in index]
    else:
        nodes = fabric.nodes * per_node
        for i, host in enumerate(log_hosts):
            if i < nodes:
                host_index[host] = i
            else:
                placement.unknown.append(host)
        if log_hosts:
            notes.append(
                f"{fabric.spec.id} names no hosts: the log's hosts are its nodes 0.."
                f"{min(len(log_hosts), nodes) - 1} in the order of their first rank"
            )
    per_host = fabric.gpus_per_node // per_node
    ranks_of: dict[str, list[int]] = {}
    for rank, host in by_rank.items():
        ranks_of.setdefault(host, []).append(rank)
    for host, ranks in ranks_of.items():
        if host not in host_index:
            continue
        i = host_index[host]
        node, slot = divmod(i, per_node)
        placement.host_of[host] = (names[i] if i < len(names) else None) or f"n{i}"
        before = len(notes)
        if by_order:
            local: dict[int, int | None] = {r: r % by_order for r in ranks}
        else:
            local = _local_index(log.rank_devs, ranks, notes)
        placement.exact = placement.exact and len(notes) == before
        for rank in ranks:
            k = local[rank]
            if k is None:
                continue
            if k >= per_host:
                placement.beyond.append(f"{rank} ({host} dev {k})")
                continue
            placement.gpu_of[rank] = node * fabric.gpus_per_node + slot * per_host + k
    return placement


# --- what the fabric says about the log's rings and NICs ----------------------------------


def _tiers(fabric: Fabric, src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64]):
    """(n,) highest tier each route climbs (0 domain, 1 leaf, 2 spine, 3 core)."""
    if not src.size:
        return np.zeros(0, dtype=np.int64)
    links = bulk_router(Router.for_fabric(fabric)).paths(src, dst)
    rank = np.zeros(len(DeviceKind), dtype=np.int64)
    rank[DeviceKind.LEAF] = 1
    rank[DeviceKind.SPINE] = 2
    rank[DeviceKind.ROUTER] = 2
    rank[DeviceKind.CORE] = 3
    kinds = fabric.dev_kind[fabric.link_dst[np.maximum(links, 0)]]
    return np.where(links >= 0, rank[kinds], 0).max(axis=1)


def _ring_findings(
    log: NcclLog, fabric: Fabric, placement: LogPlacement
) -> tuple[list[Finding], list[dict[str, Any]]]:
    """``ring-extra-crossings``: each ring's edges by the tier they climb, against the
    fewest crossings any order of the same nodes needs."""
    rings = log.ring_orders()
    if not rings:
        return [], []
    gpu_of = placement.gpu_of
    g = fabric.gpus_per_domain
    checked: list[dict[str, Any]] = []
    needed: tuple[int, int] | None = None
    worst: tuple[int, int, int, int, int] | None = None
    budget = _MAX_EDGES
    for channel, order in sorted(rings.items()):
        if len(order) < 2 or budget < len(order) or any(r not in gpu_of for r in order):
            continue
        budget -= len(order)
        ring = np.asarray([gpu_of[r] for r in order], dtype=np.int64)
        nxt = np.roll(ring, -1)
        tiers = _tiers(fabric, ring, nxt)
        if needed is None:
            needed = _needed(fabric, np.unique(ring // g) * g, ring, g)
        above_leaf = int((tiers >= 2).sum())
        to_core = int((tiers >= 3).sum())
        counts = Counter(int(t) for t in tiers)
        checked.append(
            {
                "channel": channel,
                "edges": {_TIER_NAMES[t]: counts.get(t, 0) for t in range(4)},
                "needed": {"above_leaf": needed[0], "to_core": needed[1]},
            }
        )
        extra = (above_leaf - needed[0]) + (to_core - needed[1])
        if extra > 0 and (worst is None or extra > worst[0]):
            worst = (extra, channel, above_leaf, to_core, len(set((ring // g).tolist())))
    if worst is None or needed is None:
        return [], checked
    _, channel, above_leaf, to_core, nodes = worst
    bad = sum(
        1
        for c in checked
        if c["edges"]["spine"] + c["edges"]["core"] > c["needed"]["above_leaf"]
        or c["edges"]["core"] > c["needed"]["to_core"]
    )
    return [
        Finding(
            "ring-extra-crossings",
            "warning",
            f"the ring of channel {channel} climbs above the leaves {above_leaf} times and to "
            f"the cores {to_core} times, where an order of its {nodes} nodes by switch needs "
            f"{needed[0]} and {needed[1]} ({bad} of {len(checked)} rings checked are so)",
            "NCCL links nodes in rank order: give ranks in switch order (Slurm's topology/tree "
            "plugin, or a hostfile sorted by leaf; `fabricui path --hosts` names each host's "
            "leaf), so that ring neighbours share a leaf",
        )
    ], checked


def _tree_findings(log: NcclLog, fabric: Fabric, placement: LogPlacement) -> list[Finding]:
    """``tree-extra-crossings``: each channel's tree edges between scale-up domains by the
    tier they climb, against the same tree with its domains in switch order.

    NCCL builds a channel's tree over the nodes in the order of their first rank; the
    reference keeps the tree's shape and gives its k-th node the k-th domain sorted by the
    spine, then the leaf, its representative GPU sits under (a hostfile sorted by switch)."""
    gpu_of = placement.gpu_of
    g = fabric.gpus_per_domain
    edges: dict[int, list[tuple[int, int]]] = {}
    for (channel, rank), up in log.tree_up.items():
        if up >= 0 and rank in gpu_of and up in gpu_of:
            a, b = gpu_of[rank], gpu_of[up]
            if a // g != b // g:
                edges.setdefault(channel, []).append((a, b))
    worst: tuple[int, int, int, int, int, int] | None = None
    checked = bad = 0
    for channel, pairs in sorted(edges.items()):
        if len(pairs) > _MAX_EDGES // 4:
            continue
        src = np.asarray([a for a, _ in pairs], dtype=np.int64)
        dst = np.asarray([b for _, b in pairs], dtype=np.int64)
        domains = np.unique(np.concatenate([src, dst]) // g)
        if domains.shape[0] * (domains.shape[0] - 1) // 2 > _MAX_EDGES:  # pairwise grouping
            continue
        order = _domains_in_log_order(log, placement, domains, g)
        switch = _domains_in_switch_order(fabric, order, g)
        relabel = {int(d): int(s_) for d, s_ in zip(order, switch)}
        offset_src, offset_dst = src % g, dst % g
        ref_src = np.asarray([relabel[int(d)] for d in src // g], dtype=np.int64) * g + offset_src
        ref_dst = np.asarray([relabel[int(d)] for d in dst // g], dtype=np.int64) * g + offset_dst
        tiers, ref = _tiers(fabric, src, dst), _tiers(fabric, ref_src, ref_dst)
        have = (int((tiers >= 2).sum()), int((tiers >= 3).sum()))
        need = (int((ref >= 2).sum()), int((ref >= 3).sum()))
        checked += 1
        extra = (have[0] - need[0]) + (have[1] - need[1])
        if extra > 0:
            bad += 1
            if worst is None or extra > worst[0]:
                worst = (extra, channel, *have, *need)
    if worst is None:
        return []
    _, channel, above_leaf, to_core, need_leaf, need_core = worst
    return [
        Finding(
            "tree-extra-crossings",
            "warning",
            f"the tree of channel {channel} climbs above the leaves {above_leaf} times and to "
            f"the cores {to_core} times, where the same tree over its nodes in switch order "
            f"needs {need_leaf} and {need_core} ({bad} of {checked} trees checked are so)",
            "NCCL builds its trees over the nodes in rank order: give ranks in switch order "
            "(Slurm's topology/tree plugin, or a hostfile sorted by leaf), so that parent and "
            "child nodes share a leaf",
        )
    ]


def _domains_in_log_order(log: NcclLog, placement: LogPlacement, domains, g: int):
    """The domains of ``domains`` in the order of their lowest log rank (NCCL's node order)."""
    first: dict[int, int] = {}
    for rank, gpu in sorted(placement.gpu_of.items()):
        first.setdefault(gpu // g, rank)
    return np.asarray(sorted((int(d) for d in domains), key=lambda d: first.get(d, 1 << 62)))


def _domains_in_switch_order(fabric: Fabric, order, g: int):
    """``order``'s domains sorted by the spine group, then the leaf group, their first GPUs
    share (ties keep ``order``)."""
    n = order.shape[0]
    if n < 2:
        return order
    reps = order * g
    a, b = np.triu_indices(n, 1)
    tiers = _tiers(fabric, reps[a], reps[b])
    leaf = component_labels(n, a[tiers <= 1], b[tiers <= 1])
    spine = component_labels(n, a[tiers <= 2], b[tiers <= 2])
    keys = sorted(range(n), key=lambda i: (spine[i], leaf[i], i))
    return order[np.asarray(keys, dtype=np.int64)]


def _needed(fabric: Fabric, firsts, ring, g: int) -> tuple[int, int]:
    """(edges above the leaf, edges to the core) the best order of the ring's domains needs:
    one crossing per group of domains that share a leaf (or a spine), when there are
    several such groups."""
    domains = np.unique(ring // g)
    # The ring's first GPU in each domain stands for it (same rail across domains).
    pick = {int(d): int(r) for r, d in zip(ring[::-1].tolist(), (ring[::-1] // g).tolist())}
    reps = np.asarray([pick[int(d)] for d in domains], dtype=np.int64)
    n = reps.shape[0]
    if n < 2:
        return 0, 0
    a, b = np.triu_indices(n, 1)
    if a.shape[0] > _MAX_EDGES:
        return 0, 0
    tiers = _tiers(fabric, reps[a], reps[b])
    leaf = len(set(component_labels(n, a[tiers <= 1], b[tiers <= 1])))
    spine = len(set(component_labels(n, a[tiers <= 2], b[tiers <= 2])))
    return (leaf if leaf > 1 else 0), (spine if spine > 1 else 0)


def _nic_index(log: NcclLog, notes: list[str]) -> dict[int, int] | None:
    """NCCL's NIC index -> the fabric's NIC index: the ``NET/IB : Using`` list's HCA names
    in natural order; the index itself without a list; None for fused virtual NICs."""
    if not log.ib_lists:
        if any(t.net_dev is not None for t in log.transports):
            notes.append("no NET/IB device list: NCCL's NIC k is taken to be the fabric's NIC k")
        return {}
    devices = log.ib_lists[0]
    if any(d.vnic is not None for d in devices):
        notes.append("fused virtual NICs: the NICs of connections are not checked")
        return None
    names = sorted({f"{d.name}:{d.port}" for d in devices}, key=_natural)
    notes.append(
        "NCCL's NICs are the fabric's in HCA name order: "
        + ", ".join(f"{name}={i}" for i, name in enumerate(names[:8]))
        + (" ..." if len(names) > 8 else "")
    )
    return {d.index: names.index(f"{d.name}:{d.port}") for d in devices}


def _nic_leaves(fabric: Fabric) -> dict[tuple[int, int], int]:
    """(host, NIC index) -> the switch that NIC is cabled to."""
    up, _ = Router.for_fabric(fabric).nic_cables()
    nics = fabric.devices_of_kind(DeviceKind.NIC)
    out: dict[tuple[int, int], int] = {}
    for nic, host, index in zip(
        nics.tolist(), fabric.dev_node[nics].tolist(), fabric.dev_index[nics].tolist()
    ):
        if up[nic] >= 0:
            out[(int(host), int(index))] = int(fabric.link_dst[up[nic]])
    return out


def _nic_findings(
    log: NcclLog, fabric: Fabric, placement: LogPlacement, nic_map: dict[int, int]
) -> list[Finding]:
    """``nic-not-gpu-rail``, ``pxn-absent`` and ``cross-rail-traffic`` from the network
    connection lines."""
    gpu_of = placement.gpu_of
    g = fabric.gpus_per_node
    leaves = _nic_leaves(fabric)
    # What the log itself proves is a warning; what rests on a mapping it implies, a note.
    severity = "warning" if placement.exact and nic_map else "info"
    hedge = "" if severity == "warning" else ", if the mapping assumed above holds"

    def fabric_nic(index: int) -> int:
        return nic_map.get(index, index)

    def own(rank: int) -> int | None:
        nic = int(fabric.gpu_nic[gpu_of[rank]])
        return int(fabric.dev_index[nic]) if nic >= 0 else None

    def rails_apart(src: int, dst: int, nic: int, far: int) -> bool:
        """Leaving on ``nic`` and arriving on ``far`` crosses leaves, where leaving on the
        sender's NIC ``far`` would have stayed under the receiver's leaf."""
        a, b = gpu_of[src] // g, gpu_of[dst] // g
        sent, arrived = leaves.get((a, nic)), leaves.get((b, far))
        return (
            sent is not None
            and arrived is not None
            and sent != arrived
            and (leaves.get((a, far)) == arrived)
        )

    received: dict[tuple[int, int, int], int] = {}
    for t in log.transports:
        if t.net_dev is not None and t.kind in _RDMA and t.direction == "receive":
            received[(t.channel, t.src, t.dst)] = fabric_nic(t.net_dev)
    off_rail: dict[int, str] = {}
    crossing: dict[tuple[int, int], str] = {}
    for t in log.transports:
        if t.net_dev is None or t.kind not in _RDMA or t.src not in gpu_of or t.dst not in gpu_of:
            continue
        local = t.dst if t.direction == "receive" else t.src
        nic = fabric_nic(t.net_dev)
        mine = own(local)
        if t.proxy is None and mine is not None and nic != mine:
            off_rail.setdefault(local, f"rank {local} on NIC {t.net_dev} (its GPU's is {mine})")
        if t.direction != "send" or t.proxy is not None:
            continue
        far = received.get((t.channel, t.src, t.dst), own(t.dst))
        if far is not None and far != nic and rails_apart(t.src, t.dst, nic, far):
            crossing.setdefault(
                (t.src, t.dst), f"{t.src} -> {t.dst} leaves on NIC {nic}, arrives on NIC {far}"
            )
    findings: list[Finding] = []
    if off_rail:
        findings.append(
            Finding(
                "nic-not-gpu-rail",
                severity,
                f"{len(off_rail)} rank(s) move network traffic through a NIC other than their "
                f"GPU's (e.g. {'; '.join(list(off_rail.values())[:_SHOW])}{hedge}): the data "
                "crosses PCIe switches or the CPU to a farther NIC",
                "let NCCL see every rail NIC and its real PCIe distance: NCCL_IB_HCA listing "
                "all of them (or unset), no NCCL_CROSS_NIC=1, and an NCCL_TOPO_FILE that "
                "matches the machine (nvidia-smi topo -m)",
            )
        )
    if crossing:
        version = log.version or ""
        parts = version.split(".")[:2]
        old = (
            all(p.isdigit() for p in parts)
            and len(parts) == 2
            and ((int(parts[0]), int(parts[1])) < (2, 12))
        )
        if Router.for_fabric(fabric).proxy is not None:
            why = f"NCCL {version} predates PXN (2.12)" if old else "PXN is off"
            findings.append(
                Finding(
                    "pxn-absent",
                    severity,
                    f"{len(crossing)} rank pair(s) connect across rails ({why}; e.g. "
                    f"{'; '.join(list(crossing.values())[:_SHOW])}{hedge}): their traffic "
                    "climbs to the spines",
                    "use NCCL >= 2.12 with PXN on (unset NCCL_PXN_DISABLE; "
                    "NCCL_P2P_PXN_LEVEL=2): the GPU on the peer's rail sends over NVLink",
                )
            )
        else:
            findings.append(
                Finding(
                    "cross-rail-traffic",
                    severity,
                    f"{len(crossing)} rank pair(s) leave on one rail and arrive on another (e.g. "
                    f"{'; '.join(list(crossing.values())[:_SHOW])}{hedge}): they climb to the "
                    "spines",
                    "keep ring neighbours on one rail: one rank per GPU with the same local "
                    "GPU order on every host, and no NCCL_CROSS_NIC=1",
                )
            )
    return findings


def _channel_findings(log: NcclLog, fabric: Fabric, placement: LogPlacement) -> list[Finding]:
    """``channels-below-nics``: fewer channels than the NICs the job's GPUs use per node."""
    channels = log.channels
    if channels is None:
        seen = {t.channel for t in log.transports} | set(log.ring_orders())
        channels = len(seen) or None
    if channels is None or not placement.gpu_of:
        return []
    # The NICs of the hosts the job ran on (a log excerpt shows a few of its ranks).
    g = fabric.gpus_per_node
    hosts = {gpu // g for gpu in placement.gpu_of.values()}
    nics = {
        host: {int(n) for n in fabric.gpu_nic[host * g : (host + 1) * g] if n >= 0}
        for host in hosts
    }
    most = max((len(v) for v in nics.values()), default=0)
    if len({gpu // fabric.gpus_per_domain for gpu in placement.gpu_of.values()}) < 2:
        return []
    if channels >= most:
        return []
    return [
        Finding(
            "channels-below-nics",
            "warning",
            f"{channels} channel(s) for {most} NICs per node on {fabric.spec.id}: at most "
            f"{channels} of each node's NICs carry ring and tree traffic",
            f"let NCCL open at least {most} channels (NCCL_MIN_NCHANNELS={most}; check "
            "NCCL_MAX_NCHANNELS/NCCL_NCHANNELS_PER_NET_PEER are not lowering it) or "
            "check the log came from a run over every NIC",
        )
    ]


#: The NET/IB link layer each network family of the hwdb runs on.
_LINK_LAYERS = {"infiniband": "IB", "roce": "RoCE"}


def _network_mismatch(log: NcclLog, fabric: Fabric, per_host: int) -> list[str]:
    """How the log's RDMA NICs contradict the fabric's network: another link layer (RoCE
    NICs on an InfiniBand fabric, or the reverse), or fewer NICs than each host has when
    ``NCCL_IB_HCA`` does not choose them."""
    if not log.ib_lists or fabric.spec.net is None:
        return []
    devices = log.ib_lists[0]
    names = ", ".join(f"{d.name}:{d.port}/{d.link_layer}" for d in devices[:_SHOW])
    records = {r.id: r for r in fabric.generation_records}
    record = records.get(fabric.spec.net.link)
    expected = _LINK_LAYERS.get(record.family if record is not None else "")
    layers = {d.link_layer for d in devices}
    out = []
    if expected and expected not in layers:
        out.append(
            f"the log's NICs are {'/'.join(sorted(layers))} ({names}), the topology's "
            f"network is {fabric.spec.net.link} ({expected})"
        )
    ports = {(d.name, d.port) for d in devices}
    if per_host and len(ports) < per_host and "NCCL_IB_HCA" not in log.env:
        out.append(
            f"{len(ports)} NIC(s) in NET/IB ({names}), {per_host} per host on "
            f"{fabric.spec.id} (NCCL_IB_HCA does not choose fewer)"
        )
    return out


def compare(log: NcclLog, fabric: Fabric, hosts: list[str] | None = None) -> FabricCheck:
    """Check an NCCL log's rings, trees, NICs and channels against the fabric the job ran on.

    Args:
        log: The parsed log.
        fabric: The fabric (an imported cluster, or a topology like the job's machines).
        hosts: The job's hosts in order (``--hosts``), for logs whose host names the
            topology does not have.

    Returns:
        The check: placement, findings (most severe first), per-ring crossings.

    Raises:
        ConfigError: ``hosts`` names hosts the topology lacks.
    """
    placement = place_log(log, fabric, hosts)
    findings: list[Finding] = []
    if placement.unknown:
        shown = ", ".join(placement.unknown[:_SHOW])
        more = len(placement.unknown) - _SHOW
        findings.append(
            Finding(
                "log-host-unknown",
                "error",
                f"{len(placement.unknown)} host(s) of the log are not in {fabric.spec.id}: "
                f"{shown}{f' and {more} more' if more > 0 else ''}: their ranks are not checked",
                "import the cluster the job ran on (fabricui import ibnetdiscover ... -o) or "
                "give the job's hosts with --hosts, in the order of their first rank",
            )
        )
    notes = placement.assumptions
    nic_map = _nic_index(log, notes)
    mismatch = []
    if placement.beyond:
        mismatch.append(
            f"ranks on GPUs the topology's hosts lack: {', '.join(placement.beyond[:_SHOW])}"
        )
    per_host = fabric.spec.net.nics_per_node if fabric.spec.net is not None else 0
    if nic_map and per_host and len(set(nic_map.values())) > per_host:
        mismatch.append(f"{len(set(nic_map.values()))} NICs in NET/IB, {per_host} per host")
    mismatch += _network_mismatch(log, fabric, per_host)
    if mismatch:
        findings.append(
            Finding(
                "log-fabric-mismatch",
                "warning",
                f"the log does not fit {fabric.spec.id}: {'; '.join(mismatch)}",
                "compare the log with the topology of the machines it ran on (fabricui probe "
                "on one of them writes its node spec)",
            )
        )
    ring_findings, rings = _ring_findings(log, fabric, placement)
    findings += ring_findings
    findings += _tree_findings(log, fabric, placement)
    if nic_map is not None and fabric.spec.net is not None:
        findings += _nic_findings(log, fabric, placement, nic_map)
    findings += _channel_findings(log, fabric, placement)
    algorithm_findings, choices = _algorithm_check(log, fabric, placement)
    findings += algorithm_findings
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (order[f.severity], f.code))
    return FabricCheck(
        topology=fabric.spec.id,
        placement=placement,
        findings=findings,
        rings=rings,
        nic_map=dict(nic_map or {}),
        choices=choices,
    )


def _algorithm_check(log: NcclLog, fabric: Fabric, placement: LogPlacement):
    """The algorithms the log shows NCCL choosing, against the best picks on this fabric:
    on the placed ranks when the log shows every rank, else on the first ``nranks`` GPUs."""
    if not log.choices:
        return [], []
    ranks = sorted(set(placement.gpu_of.values()))
    if log.nranks and len(ranks) != log.nranks:
        ranks = list(range(min(log.nranks, fabric.n_gpus)))
        placement.assumptions.append(
            f"the algorithm check prices the log's choices on GPUs 0..{len(ranks) - 1}"
        )
    elif not ranks:
        ranks = list(range(fabric.n_gpus))
        placement.assumptions.append(
            "the log does not say its ranks: the algorithm check prices its choices on every "
            f"GPU of {fabric.spec.id}"
        )
    return check_choices(log, fabric, ranks, collective_algorithms())
