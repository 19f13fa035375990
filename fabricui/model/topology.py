"""The topology spec: what a builder turns into a fabric.

Its smallest form is the ``hardware`` block of ``shared/data/nccl/measurements.yaml``
(gpu, nodes, gpus_per_node, intra, net); every other field is optional detail.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from fabricui.model.cluster import ClusterSpec

#: Intra-node fabrics a builder understands: ``switch`` is any scale-up link generation on
#: the switch its record names (UALink, a plugin's FooLink ...); ``nvswitch`` the same for
#: NVLink with the NVSwitch of the generation by default.
INTRA_FABRICS = ("nvswitch", "switch", "mesh", "pcie", "torus", "none")

#: Intra-node fabrics whose switch may span several hosts (a scale-up domain).
SWITCHED_FABRICS = ("nvswitch", "switch")

#: Intra-node fabrics that may span several hosts: a switch, or a torus of chip-to-chip
#: links (a Trn2 UltraServer's four instances).
DOMAIN_FABRICS = (*SWITCHED_FABRICS, "torus")

#: Where a NIC plugs in (``NetSpec.nic_attach``).
NIC_ATTACH = ("gpu", "pcie-switch", "cpu")

#: Network layouts: one switch, two or three tiers of switches (fat-trees), a dragonfly of
#: router groups, a 3D torus of direct chip-to-chip links (no switches, no NICs), or the
#: explicit switch graph of a real cluster (the spec's ``cluster`` section).
NetLayout = Literal["auto", "single", "leaf-spine", "three-tier", "dragonfly", "torus", "explicit"]
NET_LAYOUTS: tuple[NetLayout, ...] = get_args(NetLayout)
#: Layouts a network link's record may name as its own (``LinkGeneration.layout``): the
#: switched ones a size alone does not pick.
SWITCHED_LAYOUTS: tuple[NetLayout, ...] = ("single", "leaf-spine", "three-tier", "dragonfly")


@dataclass(frozen=True)
class IntraSpec:
    """How the GPUs of one node are connected."""

    fabric: str = "none"
    """``nvswitch`` (NVLink switch), ``switch`` (any scale-up link generation on the switch
    ``switch`` names), ``mesh`` (direct GPU links), ``torus`` (chip-to-chip links in a
    torus, ``torus``), ``pcie`` or ``none`` (one GPU per node)."""
    link: str | None = None
    """Link generation id of the GPU-to-GPU (or GPU-to-switch) links."""
    hosts_per_domain: int = 1
    """Switch fabrics only: hosts (nodes) that share one scale-up domain, e.g. 18 compute
    trays of 4 GPUs in a GB200 NVL72 rack. Node ids stay per host (``n17.g3``); every
    domain holds this many hosts (``nodes`` is a multiple of it, or smaller: one domain)."""
    links_per_pair: int = 1
    """Mesh only: parallel links between every GPU pair."""
    links_per_gpu: int | None = None
    """NVSwitch only: links from each GPU into the switch fabric (default: the GPU's count)."""
    p2p: bool = True
    """PCIe only: False when peer traffic is staged through host memory."""
    pcie_switches: int | None = None
    """PCIe switches per node (0: devices hang off the CPU root ports). Default: one per two
    GPUs for 4+ GPUs, else 0."""
    sockets: int | None = None
    """CPU sockets per node (default 2 for 4+ GPUs, else 1)."""
    host_link: str | None = None
    """GPU/NIC host-link generation id (default: the GPU's PCIe generation)."""
    cpu_pcie: str | None = None
    """PCIe generation id of the CPUs' root ports, where PCIe switches uplink to them
    (default: the GPU's PCIe generation; Grace is ``pcie5`` beside a Gen6 GPU)."""
    socket_link: str | None = None
    """Link generation id between CPU sockets (default by platform: NVLink-C2C between
    Grace CPUs, AMD's socket link on AMD GPU platforms, Intel UPI otherwise)."""
    switch: str | None = None
    """Switch model id of the scale-up switch (``nvswitch``: default by NVLink generation;
    ``switch``: required unless one catalog switch has the link's family)."""
    torus: tuple[int, ...] | None = None
    """Torus only: ring sizes of a scale-up domain's torus (``[4, 4, 4]``: a Trn2
    UltraServer); their product is ``gpus_per_node x hosts_per_domain``. Default (and for
    a partial domain): the most cube-like shape of whole host blocks."""
    host_block: tuple[int, ...] | None = None
    """Torus only: a host's chips along x, y, z (``[4, 4, 1]``: a trn2.48xlarge's 4x4)."""
    axis_links: tuple[str, ...] | None = None
    """Torus only: the link generation of each ring dimension, x first (default: ``link``
    for all)."""


@dataclass(frozen=True)
class NetSpec:
    """How nodes reach each other."""

    link: str
    """Network link generation id (``ib-ndr``, ``roce``, ``efa``)."""
    gbps: float | None = None
    """Per-NIC port rate [Gb/s] (default: the link's rate)."""
    nics_per_node: int = 1
    """NICs (ports) per node used for this traffic."""
    nic_map: tuple[int, ...] | None = None
    """Explicit NIC index of each local GPU; default spreads GPUs evenly over NICs."""
    adapters: tuple[str, ...] | None = None
    """The RDMA device of each NIC, in NIC order, as the host names it (``ibstat``'s CA
    names: ``mlx5_0``, ``mlx5_3`` ...): which of a host's adapters are its NICs here, beside
    its storage and management ones. None: not stated (the ports of the NICs' link layer,
    in order)."""
    layout: NetLayout = "auto"
    """``single`` switch, ``leaf-spine``, ``three-tier`` (leaf/spine pods under cores),
    ``dragonfly`` (groups of all-to-all routers joined by global links), ``torus`` (chips
    wired directly in a 3D torus, e.g. TPU ICI), ``explicit`` (the switches and cables of the
    spec's ``cluster`` section), or ``auto`` (the link record's own ``layout`` where it names
    one, as Slingshot's dragonfly; else single when the ports fit one switch, else
    leaf-spine)."""
    leafs: int | None = None
    """Leaf switches (default: as many as the switch radix needs)."""
    spines: int | None = None
    """Spine switches; 0 joins the leafs directly to each other (default: as needed)."""
    rail_optimized: bool = True
    """True: NIC k of every node goes to the leaf of rail k; False: a node's NICs share a leaf."""
    oversubscription: float = 1.0
    """Leaf downlink : uplink capacity ratio (1.0 = non-blocking)."""
    spine_oversubscription: float = 1.0
    """Three-tier only: spine downlink : uplink (to the cores) capacity ratio."""
    switch: str | None = None
    """Switch model id (default by link family)."""
    nic: str | None = None
    """NIC model id (default: the catalog's NIC for the link, the GPU and the port rate)."""
    nic_attach: str | None = None
    """Where each NIC plugs in (``NIC_ATTACH``): ``gpu`` (the GPU's own lanes, or ports on
    its die), ``pcie-switch`` (the PCIe switch of its GPUs: a ConnectX-8's integrated
    switch on GB300), ``cpu`` (a CPU's root ports: GB200's ConnectX-7 behind Grace).
    Default: ``gpu`` for adapters on the accelerator's die (the NIC record's ``attach``),
    else ``pcie-switch`` when the host has PCIe switches, else ``cpu``."""
    switch_lat_us: float | None = None
    """Port-to-port latency of every network switch [us] (default: the switch model's)."""
    sharp: bool = False
    """True when in-network reduction (SHARP / CollNet) is enabled on reducing switches."""
    groups: int | None = None
    """Dragonfly only: router groups (default: as many as the routers need)."""
    routers_per_group: int | None = None
    """Dragonfly only: routers in each group, all-to-all by one local cable each (default:
    half the switch radix, fewer when the whole fabric fits in one group)."""
    global_links: int | None = None
    """Dragonfly only: cables in the one global bundle between every pair of groups
    (default: each router's radix/4 global ports spread over the other groups)."""
    torus: tuple[int, ...] | None = None
    """Torus only: ring sizes ``[X, Y, Z]`` (1 to 3 entries); their product is the number
    of chips. Default (and after ``--nodes`` changes the chip count): the most cube-like
    factorization of the chip count whose sides hold whole host blocks."""
    axis_links: tuple[str, ...] | None = None
    """Torus only: the link generation of each ring dimension, x first (default:
    ``link`` for all): a Trn2 UltraServer's rings across its instances are not its
    in-instance torus links. Needs ``torus``."""
    host_block: tuple[int, ...] | None = None
    """Torus only: a host's chips along x, y, z (default by chips per host: 4 -> 2 x 2 x 1
    as a TPU v5p host, 8 -> 2 x 2 x 2, 2 -> 2 x 1 x 1)."""


@dataclass(frozen=True)
class TopologySpec:
    """A whole fabric description: nodes of GPUs, their intra-node fabric and the network."""

    gpu: str
    """GPU id in the catalog."""
    nodes: int
    """Number of nodes."""
    gpus_per_node: int
    """GPUs in each node."""
    intra: IntraSpec = field(default_factory=IntraSpec)
    """Intra-node fabric."""
    net: NetSpec | None = None
    """Network, or None for a single node."""
    id: str = "custom"
    """Name of the topology (built-ins use it for ``--topology``)."""
    description: str = ""
    """One line shown by ``fabricui topologies``."""
    source: str = ""
    """Reference for the layout (reference architecture, datasheet)."""
    origin: str = ""
    """File the spec came from, for messages."""
    nodes_settable: bool = True
    """True when ``--nodes N`` may rescale this topology."""
    builder: str | None = None
    """Name of a plugin topology builder that turns this spec into a fabric (``fabricui
    plugins`` lists them); None: the built-in builder. The named builder decides what
    ``intra`` means; the catalog then checks only the ids the spec refers to."""
    cluster: ClusterSpec | None = None
    """A real cluster's host names and, with ``net.layout: explicit``, its switches and
    cables (written by ``fabricui import ibnetdiscover ... -o``)."""

    @property
    def n_gpus(self) -> int:
        """Total GPUs in the fabric."""
        return self.nodes * self.gpus_per_node

    @property
    def hosts_per_domain(self) -> int:
        """Hosts in each scale-up domain as built: the spec's, or all nodes when fewer."""
        return max(1, min(self.intra.hosts_per_domain, self.nodes))

    @property
    def domains(self) -> int:
        """Scale-up domains (NVLink racks); equal to ``nodes`` when a domain is one host."""
        return -(-self.nodes // self.hosts_per_domain)

    def with_nodes(self, nodes: int) -> TopologySpec:
        """Return a copy with ``nodes`` nodes (``--nodes N``).

        A torus whose explicit shape no longer holds the chip count falls back to the
        derived, most cube-like shape; explicit leaf and spine counts describe the size the
        topology was written for, so another node count derives them from the switch radix.
        """
        spec = replace(self, nodes=nodes)
        net = spec.net
        rescaled = net is not None and nodes != self.nodes and net.layout != "torus"
        if rescaled and net is not None and (net.leafs is not None or net.spines is not None):
            net = replace(net, leafs=None, spines=None)
            spec = replace(spec, net=net)
        if net is not None and net.layout == "torus" and net.torus is not None:
            chips = 1
            for size in net.torus:
                chips *= size
            if chips != spec.n_gpus:
                spec = replace(spec, net=replace(net, torus=None))
        return spec
