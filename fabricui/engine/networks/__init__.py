"""One router per kind of network, behind one protocol (``base.Network``).

The bulk router (``engine/bulk.py``) asks a fabric's kind for each flow's route between
scale-up domains (or the resources it loads) and for its aggregate resources; the kinds
are tried in ``KINDS`` order and the first that ``applies`` routes the fabric. Adding a
kind of network is adding one ``Network`` subclass and listing it here.
"""

from __future__ import annotations

from fabricui.engine.networks.base import Network
from fabricui.engine.networks.domain import DomainRoutes, Flows
from fabricui.engine.networks.dragonfly import DragonflyNetwork
from fabricui.engine.networks.explicit import ExplicitNetwork
from fabricui.engine.networks.fat_tree import FatTreeNetwork
from fabricui.engine.networks.no_network import NoNetwork
from fabricui.engine.networks.pairwise import PairwiseNetwork
from fabricui.engine.networks.torus import TorusNetwork
from fabricui.fabric.fabric import Fabric

#: Kinds in the order they are tried (each ``applies`` assumes the ones before it did
#: not): tables first, then the explicit graph, then routing pair by pair, then no network.
KINDS: tuple[type[Network], ...] = (
    TorusNetwork,
    FatTreeNetwork,
    DragonflyNetwork,
    ExplicitNetwork,
    PairwiseNetwork,
    NoNetwork,
)


def network_kind(fabric: Fabric) -> type[Network]:
    """The kind of network that routes ``fabric`` (the first of ``KINDS`` that applies)."""
    return next(kind for kind in KINDS if kind.applies(fabric))


__all__ = [
    "KINDS",
    "DomainRoutes",
    "DragonflyNetwork",
    "ExplicitNetwork",
    "FatTreeNetwork",
    "Flows",
    "Network",
    "NoNetwork",
    "PairwiseNetwork",
    "TorusNetwork",
    "network_kind",
]
