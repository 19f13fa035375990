"""fabricui plugin: Ultra Ethernet (UEC Specification 1.0, June 2025) at 800G.

Ultra Ethernet is the Ultra Ethernet Consortium's scale-out stack: its transport (UET)
sprays the packets of a message over every equal-cost path, places them out of order,
retransmits selectively and runs modern congestion control, over standard Ethernet. This
plugin adds:

- the ``uec-800g`` link generation (``fabricui_ultraethernet.links``, with references and
  how the transport maps onto fabricui's pricing);
- the ``ultraethernet`` interconnect;
- an hwdb directory with an 800G UEC NIC (its per-message latency), a 128 x 800GbE switch and
  the ``uec-800g-cluster`` reference topology::

    fabricui path --topology uec-800g-cluster --src n0.g0 --dst n31.g0
    fabricui collective all_reduce --topology uec-800g-cluster --size 1G
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fabricui.api import Interconnect, LinkGeneration, hookimpl
from fabricui_ultraethernet.links import FAMILY, LINKS

__version__ = "0.1.0"

#: This plugin's hwdb directory: NIC, switch and the ``uec-800g-cluster`` topology.
HWDB = Path(__file__).resolve().parent / "hwdb"

ULTRA_ETHERNET = Interconnect(
    name="ultraethernet",
    families=(FAMILY,),
    description="Ultra Ethernet (UEC 1.0): packet-sprayed RDMA over 800GbE",
)


@hookimpl
def register_link_generations(register: Callable[[LinkGeneration], None]) -> None:
    """Register the UEC 800G link generation.

    Args:
        register: The host's callback.
    """
    for link in LINKS:
        register(link)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ultraethernet interconnect.

    Args:
        register: The host's callback.
    """
    register(ULTRA_ETHERNET)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register the plugin's hwdb directory (NIC, switch, ``uec-800g-cluster``).

    Args:
        register: The host's callback.
    """
    register(HWDB)
