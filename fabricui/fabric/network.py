"""The network above the NICs: one switch, a fat-tree, a dragonfly, or a torus.

One builder per kind, each in its own module (``fat_tree``, ``dragonfly``, ``torus``), on the
shared ``cabling``; ``build_network`` picks between the switched ones by the spec's
layout (a torus has no switches: the fabric builder calls ``torus.build_torus``).
"""

from __future__ import annotations

from fabricui.fabric.cabling import IntArray, NetworkBlock
from fabricui.fabric.dragonfly import Dragonfly, build_dragonfly
from fabricui.fabric.fat_tree import FatTree, build_fat_tree
from fabricui.model import NetSpec


def build_network(
    net: NetSpec,
    nodes: int,
    nic_devs: IntArray,
    nic_bw_GBps: float,
    ports: int,
    port_bw_GBps: float,
    radix: int,
    base: int,
    hosts_per_domain: int = 1,
    cable_ports: int = 1,
) -> NetworkBlock[FatTree] | NetworkBlock[Dragonfly]:
    """Switches and cables above the NICs.

    Args:
        net: The network spec.
        nodes: Number of nodes.
        nic_devs: (nodes, nics_per_node) absolute device ids of the NICs.
        nic_bw_GBps: Bandwidth of one NIC device (all its ports) [GB/s].
        ports: Switch ports one NIC device uses.
        port_bw_GBps: Bandwidth of one port (and of one switch-to-switch cable) [GB/s].
        radix: Ports per switch at the NIC port rate (``effective_radix``).
        base: Absolute id of the first switch device.
        hosts_per_domain: Hosts (nodes) of one scale-up domain, for the plan to say when
            a rail-optimized scalable unit splits domains.
        cable_ports: NIC-rate ports one switch port holds (a 800G port split into two
            400G NIC ports: 2); switch-to-switch cables run at the full switch port rate.

    Returns:
        The network block.

    Raises:
        EngineError: A layout the switches cannot build (one line naming what is missing).
    """
    if net.layout == "dragonfly":
        return build_dragonfly(net, nodes, nic_devs, nic_bw_GBps, ports, port_bw_GBps, radix, base)
    return build_fat_tree(
        net,
        nodes,
        nic_devs,
        nic_bw_GBps,
        ports,
        port_bw_GBps,
        radix,
        base,
        hosts_per_domain,
        cable_ports,
    )
