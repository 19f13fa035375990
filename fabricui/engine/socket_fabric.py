"""The fabric as NCCL's NET/Socket transport drives an InfiniBand or RoCE network's NICs,
when the NCCL environment turns its IB transport off (``fabricui.engine.net_socket``).

The same links and routes; what changes is each NIC's network link, which carries what the
host threads moving the data through the sockets can drive (``ModelConstants.
socket_max_GBps``), and each NIC's latency, which includes the kernel TCP stack's
(``ModelConstants.socket_nic_lat_us``). A TCP network's own links are capped where every
fabric's are (``fabricui.engine.capacity``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fabricui.engine.constants import DEFAULT
from fabricui.engine.routing import Router
from fabricui.fabric.fabric import DeviceKind, Fabric


def socket_fabric(fabric: Fabric) -> Fabric:
    """``fabric`` with each NIC's network links capped at the socket ceiling and each NIC's
    latency at least the socket NIC latency; kept on ``fabric`` and routed as it
    (``Router.share_routes``: neither changes a route)."""
    cached = fabric.__dict__.get("_socket_fabric")
    if cached is not None:
        kept: Fabric = cached
        return kept
    nic = fabric.dev_kind == DeviceKind.NIC
    links = nic[fabric.link_src] | nic[fabric.link_dst]
    net = fabric.spec.net
    if net is not None and net.link in fabric.generations:
        links &= fabric.link_gen == fabric.generations.index(net.link)
    ceiling = DEFAULT.socket_max_GBps / np.maximum(fabric.link_bw_GBps, 1e-12)
    eff = np.where(links, np.minimum(fabric.link_eff, ceiling), fabric.link_eff)
    lat = np.where(nic, np.maximum(fabric.dev_lat_us, DEFAULT.socket_nic_lat_us), fabric.dev_lat_us)
    socket = dataclasses.replace(fabric, link_eff=eff, dev_lat_us=lat)
    Router.share_routes(socket, fabric)
    object.__setattr__(fabric, "_socket_fabric", socket)  # a cache kept on the frozen fabric
    return socket
