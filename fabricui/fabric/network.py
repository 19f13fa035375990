"""The network above the NICs: one switch, a fat-tree, a dragonfly, or a torus.

One builder per kind, each in its own module (``fat_tree``, ``dragonfly``, ``torus``), on the
shared ``cabling``; ``build_network`` picks between the switched ones by the spec's
layout (a torus has no switches: the fabric builder calls ``torus.build_torus``).
"""

from __future__ import annotations

from fabricui.fabric.cabling import IntArray, NetworkBlock
from fabricui.fabric.dragonfly import Dragonfly, build_dragonfly, check_dragonfly
from fabricui.fabric.fat_tree import FatTree, build_fat_tree, check_fat_tree
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
    """Switches and cables above the NICs: a dragonfly where the spec's layout says so,
    else a fat-tree (one switch, leaf/spine or three tiers).

    The arguments are ``fat_tree.build_fat_tree``'s (a dragonfly reads neither
    ``hosts_per_domain`` nor ``cable_ports``).

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


def check_network(
    net: NetSpec, nodes: int, nics_per_node: int, ports: int, radix: int, cable_ports: int = 1
) -> None:
    """Refuse what ``build_network`` refuses (arguments as there, ``nics_per_node`` the NICs
    of each node it would cable), without cabling it: node counts can be tried at a
    fraction of a build (``build.most_nodes``).

    Raises:
        EngineError: ``build_network`` would refuse (the same line).
    """
    if net.layout == "dragonfly":
        check_dragonfly(net, nodes, nodes * nics_per_node, ports, radix)
        return
    check_fat_tree(net, nodes, nics_per_node, ports, radix, cable_ports)
