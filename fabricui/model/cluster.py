"""A real cluster's switch graph and host names: the ``cluster`` section of a topology spec.

``fabricui import ibnetdiscover|iblinkinfo|slurm-topology FILE -o cluster.yaml`` writes it;
with ``net.layout: explicit`` the builder (``fabricui.fabric.explicit``) builds exactly these
switches and cables instead of a generated leaf/spine fabric. Without ``explicit`` only the
host names are used (to place a job's ranks on named nodes).

Hosts are listed node by node: fabric node ``n`` holds hosts ``n * hosts_per_node`` to
``(n + 1) * hosts_per_node - 1``. A node is usually one host; in a multi-node NVLink domain
(a GB200 NVL72 rack, a Slurm block) the node is the domain and its hosts are the trays in it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Tier names a cluster switch may have (bottom up).
CLUSTER_TIERS = ("leaf", "spine", "core")


@dataclass(frozen=True)
class ClusterSwitch:
    """One network switch of a real fabric."""

    name: str
    """Its real name (``LG01-01``, or the GUID id when it has none); unique."""
    tier: str
    """``leaf`` (holds hosts), ``spine`` or ``core`` (as inferred from the cabling)."""
    model: str = ""
    """Part name as the fabric reports it (``MQM8700``); a label only."""


@dataclass(frozen=True)
class ClusterHost:
    """One host and the switch each of its NIC ports is cabled to."""

    name: str | None
    """Host name; None for an empty slot (a domain position without a host)."""
    ports: tuple[str | None, ...] = ()
    """Switch of each NIC port in NIC order (rail order); None when that port has no
    cable. Empty when the network is not explicit."""
    gbps: tuple[float | None, ...] = ()
    """Rate of each port's cable [Gb/s]; None (or a missing entry) means ``net.gbps``."""


@dataclass(frozen=True)
class ClusterCable:
    """A bundle of parallel cables between two switches."""

    a: str
    """One switch's name."""
    b: str
    """The other switch's name."""
    cables: int
    """Parallel cables in the bundle."""
    gbps: float
    """Rate of one cable, per direction [Gb/s]."""


@dataclass(frozen=True)
class ClusterSpec:
    """The real cluster: switches, cables, hosts and their NVLink domains."""

    hosts_per_node: int = 1
    """Hosts in each fabric node (the trays of an NVLink domain; 1 otherwise)."""
    switches: tuple[ClusterSwitch, ...] = ()
    """Network switches (empty unless ``net.layout`` is ``explicit``)."""
    cables: tuple[ClusterCable, ...] = ()
    """Switch-to-switch bundles."""
    hosts: tuple[ClusterHost, ...] = ()
    """``nodes * hosts_per_node`` hosts, node by node."""
    blocks: tuple[str, ...] = ()
    """Name of each node's block or NVLink domain (empty, or one per node)."""

    def host_names(self) -> list[str | None]:
        """Host names in host order (None for empty slots)."""
        return [h.name for h in self.hosts]
