"""What a link can carry: its bandwidth times its efficiency, TCP capped at what the
socket transport drives. Shared by the router and the bulk router."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fabricui.fabric.fabric import Fabric

FloatArray = npt.NDArray[np.float64]


def link_capacity_GBps(fabric: Fabric, socket_max_GBps: float | None = None) -> FloatArray:
    """(n_links,) achievable bandwidth ``bw * eff``; TCP links capped at the socket ceiling."""
    capacity = fabric.link_bw_GBps * fabric.link_eff
    if socket_max_GBps is not None and "tcp" in fabric.generations:
        tcp = fabric.link_gen == fabric.generations.index("tcp")
        capacity = np.where(tcp, np.minimum(capacity, socket_max_GBps), capacity)
    return capacity
