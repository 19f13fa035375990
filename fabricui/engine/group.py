"""A group of GPUs on a fabric and the traffic primitives collective algorithms are built from.

An algorithm describes its steady state as *flows*: (source rank, destination rank, bytes
moved per byte of message). ``Group.seconds_per_byte`` routes every flow, adds the bytes
each link carries (``np.bincount``), and returns the busiest link's time per message byte:
``max_l load_l / (bw_l * eff_l)``. A NIC shared by two GPUs or an oversubscribed spine
therefore slows a collective without any special case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from fabricui.engine.bulk import BulkRouter, bulk_router
from fabricui.engine.nccl.env import read_env, socket_setting
from fabricui.engine.nccl.view import compute_capability
from fabricui.engine.routing import Router
from fabricui.engine.socket_fabric import socket_fabric
from fabricui.errors import EngineError, FabricError
from fabricui.fabric.fabric import DeviceKind, Fabric, FloatArray, IntArray

if TYPE_CHECKING:
    from fabricui.engine.nccl.search import Graphs

#: What ``Group.memo`` caches: whatever its compute function returns.
Memo = TypeVar("Memo")

#: Network families whose NCCL transport receives into host-visible buffers rather than by
#: GPUDirect RDMA (NCCL's socket transport over plain Ethernet; GPUDirect-TCPXO's plugin).
NO_GPUDIRECT_FAMILIES = ("ethernet", "tcpxo")
#: GPU architectures ordered by generation (index used for per-architecture constants).
ARCH_ORDER = {
    "volta": 0,
    "turing": 0,
    "ampere": 1,
    "ada": 1,
    "cdna2": 1,
    "hopper": 2,
    "cdna3": 2,
    "blackwell": 3,
    "cdna4": 3,
    # Vera Rubin: no fitted library constants of its own yet; Blackwell's are the closest.
    "rubin": 3,
}


class Group:
    """Ranks of one communicator on a fabric, with cached routes.

    Args:
        fabric: The fabric.
        ranks: Global ranks in the group (any order; the ring follows node-major order).
        router: Router to share caches with.
        single_process: One process launches on every GPU of a node (nccl-tests ``-g N``).
        gpus_per_thread: With ``single_process``, the GPUs one thread drives when that is
            fewer than a node's (nccl-tests ``-g 4`` on 8-GPU nodes: two threads each issue
            their four GPUs' calls, side by side); None: every GPU of its node.
        library_version: Version of the collective library that runs the group (NCCL's
            ``(2, 23, 4)``), for the defaults that changed between releases; None for the
            current release.
        nccl_env: The run's NCCL environment (``NCCL_MAX_NCHANNELS`` ... change the
            channels NCCL builds; libfabric's ``FI_CXI_*`` change a Slingshot receive,
            ``fabricui.engine.cxi``), or None.

    Raises:
        EngineError: Empty group, duplicates or out-of-range ranks.
    """

    def __init__(
        self,
        fabric: Fabric,
        ranks: npt.ArrayLike,
        router: Router | None = None,
        single_process: bool = False,
        library_version: tuple[int, int, int] | None = None,
        nccl_env: Mapping[str, str] | None = None,
        gpus_per_thread: int | None = None,
    ):
        ranks_arr = np.unique(np.asarray(ranks, dtype=np.int64))
        if ranks_arr.size == 0:
            raise EngineError("a collective needs at least one GPU")
        if ranks_arr[0] < 0 or ranks_arr[-1] >= fabric.n_gpus:
            raise EngineError(f"ranks must be within 0..{fabric.n_gpus - 1}")
        self.fabric = fabric
        self.ranks: IntArray = ranks_arr.astype(np.int32)
        self.nccl_env = dict(nccl_env or {})
        """NCCL environment variables of the run (those that change its channels count)."""
        self.net_socket_setting: str | None = None
        """The NCCL setting that puts an InfiniBand or RoCE network on NCCL's NET/Socket
        transport (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``), None when it keeps RDMA or
        spans one node (``fabricui.engine.net_socket``)."""
        if self.n_nodes > 1:
            self.net_socket_setting = socket_setting(read_env(self.nccl_env), fabric.net_family)
        if self.net_socket_setting is not None:
            # NCCL's sockets drive the NICs: priced on the fabric as they drive it.
            self.fabric, router = socket_fabric(fabric), None
        self.router = router or Router.for_fabric(self.fabric)
        self.single_process = single_process
        """True when one process drives every GPU of a node (slower launches)."""
        self.gpus_per_thread = gpus_per_thread
        """GPUs one issuing thread drives, when fewer than a node's; None: all of them."""
        self.library_version = library_version
        """Collective library release (``(2, 23, 4)``), or None for the current one."""
        self._routes: dict[tuple[int, int], IntArray] = {}
        self._memo: dict[object, Any] = {}

    def memo(self, key: object, compute: Callable[[], Memo]) -> Memo:
        """Cache a pure per-group figure (e.g. an algorithm's raw time per byte)."""
        if key not in self._memo:
            self._memo[key] = compute()
        value: Memo = self._memo[key]
        return value

    @property
    def n(self) -> int:
        """Number of ranks."""
        return int(self.ranks.shape[0])

    @cached_property
    def node_of(self) -> IntArray:
        """(n,) scale-up domain of each rank: what NCCL treats as one node (a server, or
        every host of an NVL72 rack sharing its NVLink switch)."""
        return (self.ranks // self.fabric.gpus_per_domain).astype(np.int32)

    @cached_property
    def host_of(self) -> IntArray:
        """(n,) host (node id of ``n<host>.g<gpu>``) of each rank."""
        return (self.ranks // self.fabric.gpus_per_node).astype(np.int32)

    @cached_property
    def ranks_per_host(self) -> int:
        """Ranks on the busiest host (one process per host drives them with ``-g N``)."""
        return int(np.bincount(self.host_of).max())

    @property
    def ranks_per_thread(self) -> int:
        """GPUs the busiest issuing thread drives when ``single_process``: every rank of
        its host, or ``gpus_per_thread`` when that is fewer."""
        if self.gpus_per_thread is None:
            return self.ranks_per_host
        return max(1, min(self.gpus_per_thread, self.ranks_per_host))

    @cached_property
    def nodes(self) -> IntArray:
        """Distinct nodes spanned, ascending."""
        return np.unique(self.node_of)

    @property
    def n_nodes(self) -> int:
        """Number of nodes spanned."""
        return int(self.nodes.shape[0])

    @cached_property
    def ppn(self) -> int:
        """Ranks per node (the largest count when uneven)."""
        return int(np.bincount(self.node_of).max())

    @cached_property
    def by_node(self) -> list[IntArray]:
        """Ranks of each spanned node, ascending (ranks are sorted, so nodes are contiguous)."""
        cuts = np.flatnonzero(np.diff(self.node_of)) + 1
        return np.split(self.ranks, cuts)

    @cached_property
    def arch_index(self) -> int:
        """0 Volta/Turing, 1 Ampere/Ada, 2 Hopper, 3 Blackwell (per-architecture constants)."""
        return ARCH_ORDER.get(self.fabric.gpu.arch, 1)

    @cached_property
    def gdr_flush_us(self) -> float:
        """Time each Simple receive across the network waits for its flush [us].

        Data a NIC writes into GPU memory (GPUDirect RDMA) is not yet visible to the GPU's
        kernels on Ampere and older GPUs, so NCCL's proxy follows every Simple receive with
        an RDMA read of the GPU's memory through the NIC (``ncclTopoNeedFlush`` in
        src/graph/paths.cc: "Flush is required on Ampere and earlier"; RCCL flushes on every
        AMD GPU) before the kernel may read it: the read crosses the adapter twice, out and
        back. LL and LL128 carry their own flags and need none; the socket transports
        (NET/Socket, GPUDirect-TCPXO) receive into host-visible buffers, not by GPUDirect.
        0 on one node.
        """
        fabric = self.fabric
        socket = self.net_socket_setting is not None  # NET/Socket on an IB or RoCE network
        if self.n_nodes < 2 or fabric.net_family in NO_GPUDIRECT_FAMILIES or socket:
            return 0.0
        gpu = fabric.gpu
        flushes = gpu.vendor == "amd" or (gpu.vendor == "nvidia" and compute_capability(gpu) < 90)
        nic = int(fabric.gpu_nic[self.ranks[0]])
        if not flushes or nic < 0:
            return 0.0
        return 2.0 * float(fabric.dev_lat_us[nic])

    @cached_property
    def capacity_GBps(self) -> FloatArray:
        """(n_links,) achievable bandwidth of every link: ``bw * eff`` [GB/s], TCP links
        capped at what the socket transport can drive."""
        return self.router.capacity_GBps

    def route(self, src: int, dst: int) -> IntArray:
        """Cached route between two global ranks."""
        key = (src, dst)
        links = self._routes.get(key)
        if links is None:
            links = self._routes[key] = self.router.route(src, dst)
        return links

    def path_latency_us(self, src: int, dst: int) -> float:
        """Link plus forwarding latency between two ranks [us]."""
        links = self.route(src, dst)
        if links.size == 0:
            return 0.0
        fabric = self.fabric
        lat = fabric.link_lat_us[links].sum() + fabric.dev_lat_us[fabric.link_dst[links[:-1]]].sum()
        return float(lat)

    def path_latencies_us(self, src: IntArray, dst: IntArray) -> FloatArray:
        """``path_latency_us`` of many pairs at once [us], bit for bit: the routes come in
        one vectorized call (kept across calibration trials, ``BulkRouter.route_rows``) and
        are summed per route length, as one route's sums would be."""
        rows = self.bulk.route_rows(src, dst)
        fabric = self.fabric
        lengths = (rows >= 0).sum(axis=1)
        out = np.zeros(rows.shape[0])
        for length in np.unique(lengths[lengths > 0]):
            at = np.flatnonzero(lengths == length)
            links = rows[at, :length]
            out[at] = fabric.link_lat_us[links].sum(axis=1) + fabric.dev_lat_us[
                fabric.link_dst[links[:, :-1]]
            ].sum(axis=1)
        return out

    @cached_property
    def bulk(self) -> BulkRouter:
        """Vectorized router sharing this group's capacities (loads of many flows at once)."""
        bulk: BulkRouter = bulk_router(self.router, self.capacity_GBps)
        return bulk

    def seconds_per_byte(self, src: IntArray, dst: IntArray, volume: FloatArray) -> float:
        """Time per message byte of the busiest link or aggregate [us per byte], 0 without
        traffic. Flows crossing the network spread evenly over equal-cost routes."""
        return self.bulk.seconds_per_byte(src, dst, volume)

    @cached_property
    def scaleup_active_share(self) -> float:
        """Least share of its scale-up links (NVLinks) a member GPU still has up: 1 as
        built, less where a health overlay took some down, 0 when one GPU has none left.
        NCCL counts only a GPU's active NVLinks (src/graph/xml.cc, ``isActive``)."""
        fabric = self.fabric
        gpu_devs = fabric.gpu_dev[self.ranks]
        scale_up = np.isin(fabric.dev_kind[fabric.link_dst], (DeviceKind.NVSWITCH, DeviceKind.GPU))
        mine = np.flatnonzero(np.isin(fabric.link_src, gpu_devs) & scale_up)
        if not mine.size or not fabric.generation_records:
            return 1.0
        rated = np.array([fabric.generation_records[g].bw_GBps for g in fabric.link_gen[mine]])
        nominal = rated * fabric.link_count[mine]
        src = np.searchsorted(np.sort(gpu_devs), fabric.link_src[mine])
        up = np.bincount(src, weights=fabric.link_bw_GBps[mine], minlength=gpu_devs.size)
        built = np.bincount(src, weights=nominal, minlength=gpu_devs.size)
        has = built > 0
        return float(min(1.0, (up[has] / built[has]).min())) if has.any() else 1.0

    @cached_property
    def switch_port_GBps(self) -> float:
        """Slowest link from a member GPU into its NVSwitch [GB/s]; 0 without an NVSwitch
        (computed once per group: every NVLS size of a sweep asks for it)."""
        fabric = self.fabric
        gpu_devs = fabric.gpu_dev[self.ranks]
        to_switch = np.isin(fabric.link_src, gpu_devs) & (
            fabric.dev_kind[fabric.link_dst] == DeviceKind.NVSWITCH
        )
        return float(self.capacity_GBps[to_switch].min()) if to_switch.any() else 0.0

    def switch_port_spb(self, volume: float) -> float:
        """Time per message byte when every rank moves ``volume`` bytes over its link into the
        node's NVSwitch (the busiest such link) [us per byte]; inf without an NVSwitch."""
        port_GBps = self.switch_port_GBps
        if port_GBps <= 0.0:
            return float("inf")
        return float(volume / (port_GBps * 1e3))

    def uplink_spb(self, volume: float) -> float:
        """Time per message byte when every rank sends ``volume`` bytes up to its leaf switch
        at once (shared NICs and PCIe add up) [us per byte]."""
        routes = [self.router.to_leaf(int(r)) for r in self.ranks]
        links = np.concatenate(routes)
        load = np.bincount(links, minlength=self.fabric.n_links) * volume
        used = load > 0
        return float(np.max(load[used] / (self.capacity_GBps[used] * 1e3)))

    def ring_orders(self, channels: int) -> list[IntArray]:
        """One node-major ring per channel; channel c enters every node at its c-th GPU.

        Rotating the entry point spreads the node-crossing edges of different channels over
        different GPUs and hence different NICs, as NCCL's channels do.
        """
        mesh = self.fabric.spec.intra.fabric == "mesh"
        counts = np.array([local.shape[0] for local in self.by_node])
        sizes = sorted(set(counts.tolist()))
        # On a direct mesh, channels also differ in stride so they use different links.
        strides = {p: [s for s in range(1, p) if np.gcd(s, p) == 1] or [1] for p in sizes}
        orders = []
        if len(sizes) == 1:  # every node alike: one gather per channel for all nodes
            table = np.stack(self.by_node)  # (nodes, ppn)
            p = table.shape[1]
            steps = [strides[p][c % len(strides[p])] if mesh else 1 for c in range(channels)]
            starts = [(c * p) // channels for c in range(channels)]
            if self.n_nodes > 1:
                starts = balanced_entries(self.fabric.gpu_nic[table[0]], starts, steps)
            for start, stride in zip(starts, steps):
                columns = (start + stride * np.arange(p)) % p
                orders.append(table[:, columns].reshape(-1))
            return orders
        # Uneven nodes: every rank's position within its node, and its node's size and start.
        size = np.repeat(counts, counts)
        start = np.repeat(np.cumsum(counts) - counts, counts)
        local = np.arange(self.n) - start
        for c in range(channels):
            step = np.ones(self.n, dtype=np.int64)
            if mesh:
                for p in sizes:
                    step[size == p] = strides[p][c % len(strides[p])]
            shift = (c * size) // channels
            orders.append(self.ranks[start + (shift + step * local) % size])
        return orders

    def ring_edges(self, channels: int) -> tuple[IntArray, IntArray, FloatArray]:
        """Edges of the rings of all channels and the share of a rank's ring volume on each.

        Node-major rings, one per channel, each edge carrying ``1/channels``. On a direct
        mesh the traffic inside a node instead spreads over every GPU-to-GPU link (RCCL
        builds its rings to use them all): each directed link carries ``1/ppn`` (one node)
        or ``1/ppn`` of the intra-node share while the node-crossing edges keep theirs.

        Returns:
            (sources, destinations, shares), each (n_edges,).
        """
        mesh = self.fabric.spec.intra.fabric == "mesh" and self.ppn > 2
        if mesh:
            # Node by node, step by step: every rank to the rank ``step`` further round.
            counts = np.array([local.shape[0] for local in self.by_node])
            block = counts * (counts - 1)
            node = np.repeat(np.arange(counts.shape[0]), block)
            offset = np.arange(int(block.sum())) - np.repeat(np.cumsum(block) - block, block)
            size, start = counts[node], (np.cumsum(counts) - counts)[node]
            step, at = offset // size + 1, offset % size
            src_i = self.ranks[start + at]
            dst_i = self.ranks[start + (at + step) % size]
            if self.n_nodes == 1:
                return src_i, dst_i, np.full(src_i.shape[0], 1.0 / (self.ppn - 1))
            share_i = np.full(src_i.shape[0], 1.0 / self.ppn)
        src, dst = [], []
        for order in self.ring_orders(channels):
            nxt = np.roll(order, -1)
            if mesh:
                crossing = self.fabric.gpus_per_domain
                keep = (order // crossing) != (nxt // crossing)
                order, nxt = order[keep], nxt[keep]
            src.append(order)
            dst.append(nxt)
        src_r, dst_r = np.concatenate(src), np.concatenate(dst)
        share_r = np.full(src_r.shape[0], 1.0 / channels)
        if mesh:
            return (
                np.concatenate([src_i, src_r]),
                np.concatenate([dst_i, dst_r]),
                np.concatenate([share_i, share_r]),
            )
        return src_r, dst_r, share_r

    @cached_property
    def nccl_search(self) -> Graphs:
        """The graphs NCCL's search builds for this group under its release and environment
        (``fabricui.engine.nccl.search``)."""
        from fabricui.engine.nccl.picks import NcclSettings, nccl_graphs

        settings = NcclSettings.of(self.library_version, self.nccl_env)
        return nccl_graphs(self, settings)[1]

    @property
    def nccl_channels(self) -> int:
        """Collective channels NCCL builds for this group (its search's ring and tree
        channels, doubled, and its extra rules): each runs its own pipeline of chunks."""
        return self.nccl_search.channels

    @property
    def nccl_tree_channels(self) -> int:
        """Channels NCCL's tree search builds (``graphs[NCCL_ALGO_TREE]->nChannels``, before
        the runtime doubles them): the count NCCL's per-channel tree ceilings multiply
        (src/graph/tuning.cc ``ncclTopoTuneModel``)."""
        return self.nccl_search.tree.channels

    @cached_property
    def nic_path(self) -> str:
        """How a GPU of the group reaches its NIC, in NCCL's path classes: ``pci`` (through
        PCIe switches only: NCCL's PIX/PXB), ``c2c`` (through a CPU the GPU joins over
        NVLink-C2C, a Grace: NCCL's P2C) or ``host`` (through a CPU's root complex over
        PCIe: NCCL's PHB); ``pci`` without a NIC."""
        fabric = self.fabric
        try:
            links = self.router.to_leaf(int(self.ranks[0]))
        except FabricError:
            return "pci"
        hops = fabric.link_dst[links[:-1]]
        cpu = np.flatnonzero(fabric.dev_kind[hops] == DeviceKind.CPU)
        if cpu.size == 0:
            return "pci"
        first = int(links[cpu[0]])  # the link into the CPU
        return "c2c" if fabric.generations[int(fabric.link_gen[first])] == "nvlink-c2c" else "host"

    @cached_property
    def nics_per_node(self) -> int:
        """Distinct NICs the ranks of the busiest node use (1 without a network)."""
        nic = self.fabric.gpu_nic[self.ranks].astype(np.int64)
        if (nic < 0).any():
            return 1
        pairs = np.unique(self.node_of.astype(np.int64) * (self.fabric.n_devices + 1) + nic)
        return max(1, int(np.bincount(pairs // (self.fabric.n_devices + 1)).max()))

    @cached_property
    def intra_class(self) -> str:
        """``nvlink`` when ranks of a node talk over scale-up links only (NVLink, xGMI, any
        link whose hwdb tier is ``scale-up``), else ``pci``."""
        local = max(self.by_node, key=lambda r: r.shape[0])
        if local.shape[0] < 2:
            fabric_kind = self.fabric.spec.intra.fabric
            return "nvlink" if fabric_kind in ("nvswitch", "mesh") else "pci"
        links = self.route(int(local[0]), int(local[1]))
        records = self.fabric.generation_records
        if records:
            scale_up = all(records[int(g)].tier == "scale-up" for g in self.fabric.link_gen[links])
        else:  # a builder that gives no records: known scale-up generations by name
            gens = [self.fabric.generations[int(g)] for g in self.fabric.link_gen[links]]
            scale_up = all(g.startswith(("nvlink", "xgmi")) and g != "nvlink-c2c" for g in gens)
        return "nvlink" if scale_up else "pci"

    @cached_property
    def link_protocols(self) -> tuple[str, ...] | None:
        """Protocols every link generation between the group's GPUs carries (hwdb
        ``protocols``), or None when none restricts them.

        The links looked at are those of a route between two ranks of the busiest node and,
        across nodes, the network links between the first ranks of two nodes: the GPUs'
        traffic crosses them. A NIC's host link is left out of the network route (NCCL
        keeps LL128 over a GPU's PCIe path to its NIC), and the NIC's own restriction is
        ``Fabric.net_protocols``.
        """
        records = self.fabric.generation_records
        if not records or not any(r.protocols for r in records):
            return None
        fabric = self.fabric
        gens: set[int] = set()
        local = max(self.by_node, key=lambda r: r.shape[0])
        if local.shape[0] > 1:
            gens |= {int(g) for g in fabric.link_gen[self.route(int(local[0]), int(local[1]))]}
        if self.n_nodes > 1:
            links = self.route(int(self.by_node[0][0]), int(self.by_node[1][0]))
            network = links[links >= fabric.domains * fabric.node_links]
            gens |= {int(g) for g in fabric.link_gen[network]}
        allowed: tuple[str, ...] | None = None
        for g in sorted(gens):
            protocols = records[g].protocols
            if protocols:
                allowed = tuple(p for p in (allowed or protocols) if p in protocols)
        return allowed

    @cached_property
    def has_nvswitch_reduction(self) -> bool:
        """Every domain's GPUs sit on a scale-up switch that can reduce (NVLS), each still
        linked to it (a GPU whose NVLinks are all down is out of NVLink SHARP)."""
        fabric = self.fabric
        switches = np.flatnonzero((fabric.dev_kind == DeviceKind.NVSWITCH) & fabric.dev_reduces)
        return bool(switches.size) and self.ppn > 1 and self.switch_port_GBps > 0.0

    @cached_property
    def net_latency_us(self) -> float:
        """Latency between the first ranks of the first two nodes [us] (0 on one node)."""
        if self.n_nodes < 2:
            return 0.0
        return self.path_latency_us(int(self.by_node[0][0]), int(self.by_node[1][0]))

    @cached_property
    def tree_latency_us(self) -> float:
        """Latency of the slowest root-to-leaf path of NCCL's double binary trees over the
        group's nodes [us] (0 on one node).

        NCCL's tree (src/graph/trees.cc ``ncclGetBtree``, every release) links a node whose
        lowest set bit is ``b`` to the node ``b`` further on, so the levels near the root join
        nodes half the group apart, which cross more switches of a fat-tree or a dragonfly
        than neighbouring nodes do; the second tree mirrors the first (an even number of
        nodes) or shifts it by one (odd). Each node is represented by its first rank.
        """
        k = self.n_nodes
        if k < 2:
            return 0.0
        first = self.ranks[np.cumsum([0] + [r.shape[0] for r in self.by_node[:-1]])]
        slowest = 0.0
        for tree in (0, 1):
            parent = nccl_tree_parents(k, tree)
            hop = np.zeros(k)
            child = np.flatnonzero(parent >= 0)  # one routed hop per tree edge
            hop[child] = self.path_latencies_us(first[child], first[parent[child]])
            to_root = np.where(parent < 0, 0.0, np.nan)
            while np.isnan(to_root).any():  # a level of the tree per pass
                ready = np.isnan(to_root) & ~np.isnan(to_root[parent])
                to_root[ready] = hop[ready] + to_root[parent[ready]]
            slowest = max(slowest, float(to_root.max()))
        return slowest

    @cached_property
    def tree_hop_latency_us(self) -> float:
        """Mean routed latency of a network hop along the slowest root-to-leaf path of NCCL's
        trees [us]: ``tree_latency_us`` over the trees' depth ``ceil(log2 nodes)``; on two
        nodes, the latency between them (``net_latency_us``)."""
        if self.n_nodes < 3:
            return self.net_latency_us
        return self.tree_latency_us / int(np.ceil(np.log2(self.n_nodes)))

    @cached_property
    def intra_latency_us(self) -> float:
        """Latency between two ranks of one node [us] (0 with one rank per node)."""
        local = self.by_node[0]
        if local.shape[0] < 2:
            return 0.0
        return self.path_latency_us(int(local[0]), int(local[1]))


def nccl_tree_parent(node: int, nodes: int, tree: int = 0) -> int:
    """Parent of ``node`` in NCCL's double binary tree over ``nodes`` nodes, -1 for a root.

    Tree 0 is NCCL's btree rooted at node 0: a node whose lowest set bit is ``b`` hangs
    under ``(node ^ b) | 2b``, or under ``node ^ b`` when that is out of range; tree 1
    mirrors it for an even number of nodes and shifts it by one node for an odd number
    (src/graph/trees.cc ``ncclGetBtree``, ``ncclGetDtree``).

    Args:
        node: Node index, 0 <= node < nodes.
        nodes: Nodes in the tree.
        tree: 0 or 1, which of the two trees.

    Returns:
        The parent's node index, or -1 for the root.
    """

    def btree(rank: int) -> int:
        if rank == 0:
            return -1
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        return up if up < nodes else rank ^ bit

    if tree == 0:
        return btree(node)
    if nodes % 2 == 1:
        parent = btree((node - 1 + nodes) % nodes)
        return -1 if parent < 0 else (parent + 1) % nodes
    parent = btree(nodes - 1 - node)
    return -1 if parent < 0 else nodes - 1 - parent


def nccl_tree_parents(nodes: int, tree: int = 0) -> npt.NDArray[np.int64]:
    """(nodes,) every node's parent in NCCL's double binary tree, -1 for the root: the
    array form of ``nccl_tree_parent``."""
    node = np.arange(nodes, dtype=np.int64)

    def btree(rank: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        return np.where(rank == 0, -1, np.where(up < nodes, up, rank ^ bit))

    if tree == 0:
        return btree(node)
    if nodes % 2 == 1:
        parent = btree((node - 1 + nodes) % nodes)
        return np.where(parent < 0, -1, (parent + 1) % nodes)
    parent = btree(nodes - 1 - node)
    return np.where(parent < 0, -1, nodes - 1 - parent)


def balanced_entries(nic_of: IntArray, starts: list[int], strides: list[int]) -> list[int]:
    """Where each channel's ring enters a node, so that the node's NICs carry as many
    channels in as out, the same on each (NCCL's search counts every channel's network
    bandwidth on the NIC it enters by and on the one it leaves by, per direction, and
    finds no channel past a NIC's capacity: src/graph/search.cc).

    A ring entering at local GPU ``e`` with stride ``d`` leaves at ``e - d``; with strides
    that differ by channel (a direct mesh) the default entries can leave every channel by
    one NIC. The defaults are kept whenever they are already even.

    Args:
        nic_of: (ppn,) NIC device of each local GPU of a node (negative: none).
        starts: Default entry (local GPU) of each channel.
        strides: Each channel's stride.

    Returns:
        Each channel's entry.
    """
    p = nic_of.shape[0]
    if (nic_of < 0).any() or np.unique(nic_of).shape[0] < 2:
        return starts
    nics, nic = np.unique(nic_of, return_inverse=True)

    def spread(entries: list[int]) -> tuple[int, int]:
        ins = np.bincount(nic[[e % p for e in entries]], minlength=nics.shape[0])
        outs = np.bincount(
            nic[[(e - d) % p for e, d in zip(entries, strides)]], minlength=nics.shape[0]
        )
        return int(ins.max() - ins.min()), int(outs.max() - outs.min())

    if max(spread(starts)) <= 1:
        return starts
    ins = np.zeros(nics.shape[0], dtype=np.int64)
    outs = np.zeros(nics.shape[0], dtype=np.int64)

    def cost(entry: int, stride: int) -> tuple[int, int]:
        """The busiest NIC in and out once this channel is added, then its own NICs' load."""
        into, out_of = nic[entry], nic[(entry - stride) % p]
        busiest = max(ins[into] + 1, ins.max()) + max(outs[out_of] + 1, outs.max())
        return int(busiest), int(ins[into] + outs[out_of])

    chosen = []
    for start, stride in zip(starts, strides):
        candidates = [(start + k) % p for k in range(p)]  # the default first on ties
        costs = [cost(e, stride) for e in candidates]
        entry = candidates[costs.index(min(costs))]
        ins[nic[entry]] += 1
        outs[nic[(entry - stride) % p]] += 1
        chosen.append(entry)
    return chosen
