"""What an ``NCCL_DEBUG=INFO`` log says, as records: its NICs, connections, algorithm
choices and the ``NcclLog`` that holds them (``nccl_log`` fills it, the doctor reads it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fabricui.errors import FabricError

#: Transport kinds counted from ``Channel ... via X`` lines, with their display labels.
TRANSPORT_LABELS = {
    "p2p_ipc": "P2P/IPC",
    "p2p_cumem": "P2P/CUMEM",
    "p2p_direct": "P2P/direct pointer",
    "p2p": "P2P (other)",
    "shm": "SHM (host shared memory)",
    "net_ib": "NET/IB (no GDRDMA)",
    "net_ib_gdr": "NET/IB + GDRDMA",
    "net_socket": "NET/Socket",
    "net_other": "NET/plugin (no GDRDMA)",
    "net_other_gdr": "NET/plugin + GDRDMA",
    "nvls": "NVLS",
    "collnet": "CollNet",
    "other": "other",
}

#: Networks that move data over TCP sockets.
SOCKET_NETWORKS = ("Socket", "FastSocket")


class NcclLogError(FabricError):
    """The input is not an NCCL_DEBUG log (or cannot be read)."""

    title = "doctor"


@dataclass(frozen=True)
class IbDevice:
    """One HCA port of a ``NET/IB : Using`` list."""

    index: int
    """NCCL's device index (``[3]``); for fused virtual NICs, the index inside the braces."""
    name: str
    """HCA name (``mlx5_0``, ``ibp0``, ``rdmaP1111p0s2``)."""
    port: int
    """HCA port number."""
    link_layer: str
    """``IB`` or ``RoCE``."""
    sharp: bool = False
    """The port advertises SHARP (``/SHARP``)."""
    vnic: int | None = None
    """Virtual NIC the port is fused into (``[1]={...}``), None when not fused."""


@dataclass(frozen=True)
class Transport:
    """One ``Channel NN : a[x] -> b[y] via KIND`` connection line."""

    line: int
    """1-based line number in the input."""
    channel: int
    """Channel number."""
    src: int
    """Source rank."""
    dst: int
    """Destination rank."""
    kind: str
    """Key of ``TRANSPORT_LABELS``."""
    text: str
    """What followed ``via`` (``NET/IB/3/GDRDMA``)."""
    direction: str = ""
    """``send``, ``receive`` or empty."""
    src_dev: str = ""
    """The source rank's device as printed (``3``: its nvmlDev; ``3d000``: older NCCL's
    PCI bus id)."""
    dst_dev: str = ""
    """The destination rank's device as printed."""
    net_dev: int | None = None
    """NCCL's network device index (``NET/IB/3``: 3), for network connections."""
    proxy: int | None = None
    """The rank that sends for ``src`` through its own NIC (PXN, ``NET/IB/3(5)``: 5)."""
    host: str | None = None
    """Host that printed the line (the sender's, or the receiver's for ``receive``)."""


@dataclass(frozen=True)
class AlgoChoice:
    """One collective NCCL logged its algorithm for (``NCCL_DEBUG_SUBSYS=TUNING``)."""

    line: int
    """Line number in the log."""
    op: str | None
    """Collective (``all_reduce`` ...), None when the line does not name it (2.21-2.22)."""
    size_bytes: int
    """Bytes as NCCL prints them: NCCL's whole buffer, except 2.26+ lines, which print one
    rank's count times the type size (``per_rank``)."""
    algorithm: str
    """NCCL's algorithm (``ring``, ``tree``, ``nvls_tree``, ``collnet_direct``, ``pat`` ...)."""
    protocol: str
    """``ll``, ``ll128`` or ``simple``."""
    time_us: float | None = None
    """NCCL's own predicted time, when printed (2.21-2.25)."""
    channels: int | None = None
    """Channels used (``channel{Lo..Hi}``, 2.26+)."""
    per_rank: bool = False
    """The size is one rank's (2.26+ lines)."""


@dataclass(frozen=True)
class Message:
    """A WARN line or another line the doctor quotes."""

    line: int
    """1-based line number in the input."""
    text: str
    """The message without its prefix."""


@dataclass
class NcclLog:
    """Everything the doctor reads from one NCCL_DEBUG log."""

    source: str = "<log>"
    """File name for messages."""
    recognized: int = 0
    """Lines recognised as NCCL output (prefixed or a known message)."""
    version: str | None = None
    """NCCL version (``2.24.3``)."""
    cuda: str | None = None
    """CUDA version NCCL was built with (``12.2``)."""
    cuda_driver: int | None = None
    """``cudaDriverVersion`` (``12040``)."""
    networks: list[str] = field(default_factory=list)
    """``Using network X`` values in order of appearance, without repeats."""
    net_lists: dict[str, list[str]] = field(default_factory=dict)
    """``NET/<name> : Using ...`` interface lists by transport name (``Socket``,
    ``FastSocket``), the IB list excluded."""
    ib_lists: list[tuple[IbDevice, ...]] = field(default_factory=list)
    """Distinct ``NET/IB : Using`` device lists."""
    ib_no_device: bool = False
    """``NET/IB : No device found.`` was printed."""
    ibverbs_missing: list[Message] = field(default_factory=list)
    """``Failed to open libibverbs`` lines."""
    plugins: list[str] = field(default_factory=list)
    """External network plugins seen (``NCCL RDMA Plugin v8``, ``IBext_v8``, ``FastSocket``)."""
    plugin_path: str | None = None
    """``Plugin Path : ...`` (the library NCCL loaded)."""
    tuner_plugins: list[str] = field(default_factory=list)
    """Tuner plugins NCCL uses, which pick the algorithms and protocols instead of its own
    model (``Example``, ``aws-ofi-nccl's region tuner (p5en.48xlarge)``)."""
    bootstrap: list[tuple[str, str]] = field(default_factory=list)
    """(interface, address) pairs of ``Bootstrap : Using`` lines, without repeats."""
    oob: list[tuple[str, str]] = field(default_factory=list)
    """(interface, address) of the ``OOB`` part of ``NET/IB : Using`` lines."""
    env: dict[str, str] = field(default_factory=dict)
    """``NCCL_X set by environment to V`` / ``NCCL_X set to V`` settings."""
    transports: list[Transport] = field(default_factory=list)
    """Every connection line."""
    ring_channels: int | None = None
    """Channel count from ring lists (``Channel 00/02 :    0   1 ...``)."""
    coll_channels: int | None = None
    """``N coll channels`` (largest seen)."""
    nvls_channels: int | None = None
    """``N nvls channels`` (smallest seen)."""
    nvls_support: dict[int, bool] = field(default_factory=dict)
    """``NVLS multicast support is [not] available on dev N``: device -> available."""
    gdr_disabled: list[Message] = field(default_factory=list)
    """``GPU Direct RDMA Disabled for ...`` lines."""
    gdr_enabled: list[Message] = field(default_factory=list)
    """``GPU Direct RDMA Enabled for ...`` lines."""
    completion_errors: list[Message] = field(default_factory=list)
    """``Got completion from peer ... with error N`` lines."""
    warnings: list[Message] = field(default_factory=list)
    """Every ``NCCL WARN`` line."""
    error_returns: list[tuple[int, str, int]] = field(default_factory=list)
    """(line, ``file.cc:N``, NCCL result code) of ``file.cc:N -> 6`` error traces."""
    hosts: set[str] = field(default_factory=set)
    """Host names of the prefixes (redacted names such as ``<cluster_name>`` included)."""
    ranks: set[int] = field(default_factory=set)
    """Ranks seen in connection and init lines."""
    nranks: int | None = None
    """Communicator size from init lines."""
    nnodes: int | None = None
    """Node count from ``nNodes N``."""
    local_ranks: int | None = None
    """Ranks per node from ``localRanks N``."""
    system_print: bool = False
    """The GRAPH ``=== System : ...`` topology print is present."""
    nvswitch_seen: bool = False
    """The topology print shows an NVSwitch (``NVS/``)."""
    gpu_names: list[str] = field(default_factory=list)
    """GPU model names mentioned (``H100``), when the log has them."""
    rings: dict[int, list[int]] = field(default_factory=dict)
    """Channel -> its ring as rank 0 prints it (``Channel 00/02 :    0   1 ...``)."""
    ring_next: dict[tuple[int, int], int] = field(default_factory=dict)
    """(channel, rank) -> the next rank of its ring (``Ring 00 : 7 -> 0 -> 1`` lines)."""
    tree_up: dict[tuple[int, int], int] = field(default_factory=dict)
    """(channel, rank) -> its parent in the channel's tree, -1 at the root (``Trees [0]
    1/-1/-1->0->-1`` lines; NCCL 2.5's ``...|up->r->down`` second half is not read)."""
    rank_hosts: dict[int, str] = field(default_factory=dict)
    """Rank -> the host that printed its init or connection lines."""
    rank_devs: dict[int, str] = field(default_factory=dict)
    """Rank -> its device as printed (nvmlDev/cudaDev, or an older NCCL's bus id)."""
    choices: list[AlgoChoice] = field(default_factory=list)
    """Algorithms NCCL logged choosing (``... Bytes -> Algo ... proto ...`` lines)."""
    tuning: dict[tuple[str, str, str], tuple[float, float]] = field(default_factory=dict)
    """NCCL's own model as rank 0 prints it (TUNING subsystem): (collective, algorithm,
    protocol) -> (latency [us], algorithm bandwidth [GB/s])."""
    tuning_block: tuple[str, ...] = ()
    """Algorithms of the table block being read (parsing state)."""

    @property
    def network(self) -> str | None:
        """The network NCCL used between nodes: the last ``Using network`` line, else what
        the connection lines and NIC lists imply (``IB``, ``Socket``, a plugin name)."""
        if self.networks:
            return self.networks[-1]
        kinds = self.transport_counts()
        if kinds.get("net_ib", 0) + kinds.get("net_ib_gdr", 0):
            return "IB"
        if kinds.get("net_socket", 0):
            return "Socket"
        if self.ib_lists and not self.ib_no_device:
            return "IB"
        plugin_lists = [name for name in self.net_lists if name != "Socket"]
        if plugin_lists:
            return plugin_lists[-1]
        if "Socket" in self.net_lists:
            return "Socket"
        return None

    @property
    def socket_network(self) -> bool:
        """The data moves over TCP sockets."""
        return self.network in SOCKET_NETWORKS

    @property
    def ib_network(self) -> bool:
        """The data moves over the built-in IB verbs transport or an external IB plugin."""
        net = self.network or ""
        return net == "IB" or net.startswith("IBext")

    def transport_counts(self) -> dict[str, int]:
        """Connection lines per transport kind, in ``TRANSPORT_LABELS`` order."""
        counts = Counter(t.kind for t in self.transports)
        return {kind: counts[kind] for kind in TRANSPORT_LABELS if counts[kind]}

    @property
    def ib_devices(self) -> tuple[IbDevice, ...]:
        """Distinct HCA ports over every ``NET/IB : Using`` list."""
        seen: dict[tuple[str, int], IbDevice] = {}
        for devices in self.ib_lists:
            for dev in devices:
                seen.setdefault((dev.name, dev.port), dev)
        return tuple(seen.values())

    @property
    def channels(self) -> int | None:
        """Collective channels: ``N coll channels`` when printed, else the ring lists'."""
        return self.coll_channels if self.coll_channels is not None else self.ring_channels

    def ring_orders(self) -> dict[int, list[int]]:
        """Channel -> ring order: the printed lists, else rebuilt from ``Ring c : prev ->
        rank -> next`` lines (from rank 0 when every rank printed its line)."""
        if self.rings:
            return dict(self.rings)
        out: dict[int, list[int]] = {}
        channels = sorted({c for c, _ in self.ring_next})
        for channel in channels:
            start = min(r for c, r in self.ring_next if c == channel)
            order, seen, rank = [], set(), start
            while rank not in seen and (channel, rank) in self.ring_next:
                seen.add(rank)
                order.append(rank)
                rank = self.ring_next[(channel, rank)]
            if rank == start and len(order) > 1:
                out[channel] = order
        return out


def classify_transport(via: str) -> str:
    """The ``TRANSPORT_LABELS`` key of a ``via ...`` text.

    Args:
        via: What follows ``via`` on a connection line (``P2P/CUMEM/read``, ``NET/IB/0``,
            ``SHM/direct/direct``, ``direct shared memory``, ``NET/IBext_v8/1/GDRDMA``).

    Returns:
        The transport kind.
    """
    text = via.strip()
    upper = text.upper()
    if upper.startswith("P2P/IPC"):
        return "p2p_ipc"
    if upper.startswith("P2P/CUMEM"):
        return "p2p_cumem"
    if upper.startswith("P2P/DIRECT"):
        return "p2p_direct"
    if upper.startswith("P2P"):
        return "p2p"
    if upper.startswith("SHM") or "SHARED MEMORY" in upper:
        return "shm"
    if upper.startswith("NET/"):
        name = text[4:].split("/", 1)[0]
        gdr = "/GDRDMA" in upper
        if name == "IB" or name.startswith("IBext"):
            return "net_ib_gdr" if gdr else "net_ib"
        if name in SOCKET_NETWORKS:
            return "net_socket"
        return "net_other_gdr" if gdr else "net_other"
    if upper.startswith("NVLS"):
        return "nvls"
    if upper.startswith("COLLNET"):
        return "collnet"
    return "other"
