"""The one entry point that builds a topology spec: a real cluster's explicit switch graph
(``explicit``), or the tiled node blocks and derived network of every other layout."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.tables import Catalog
    from fabricui.model import TopologySpec

#: Node counts ``most_nodes`` tries below a torus's largest slice.
TORUS_TRIES = 512


def build_fabric(spec: TopologySpec, catalog: Catalog) -> Fabric:
    """Build the fabric of a topology spec.

    Args:
        spec: A checked topology spec (from the catalog or a user file).
        catalog: The hardware database the spec's ids refer to.

    Returns:
        The fabric.

    Raises:
        EngineError: The spec cannot be built (sizes, counts, a cluster that does not fit).
    """
    if spec.net is not None and spec.net.layout == "explicit":  # a real cluster's own graph
        from fabricui.fabric.explicit import build_explicit

        return build_explicit(spec, catalog)
    from fabricui.fabric.builder import build_tiled

    return build_tiled(spec, catalog)


def check_fabric(spec: TopologySpec, catalog: Catalog) -> None:
    """Refuse a spec as ``build_fabric`` would, without building it: a tiled layout's
    counts, one scale-up domain and the network above the NICs (``builder.check_tiled``, a
    fraction of the build). A cluster's own graph (``explicit``) is checked when built.

    Raises:
        EngineError: ``build_fabric`` would refuse the spec (the same line).
    """
    if spec.net is not None and spec.net.layout == "explicit":
        return
    from fabricui.fabric.builder import check_tiled

    check_tiled(spec, catalog)


def most_nodes(spec: TopologySpec, catalog: Catalog, at_most: int) -> int | None:
    """The largest node count, at most ``at_most``, whose fabric the built-in builder
    accepts: whole scale-up domains, switches of the spec's radix, a torus the chips make.

    Node counts are tried by bisection on ``builder.check_tiled`` (the builder's own
    checks, without tiling the domains). Above the largest count the builder refuses
    every count it is given, so the bisection ends on it. A torus skips counts its chips
    cannot shape: its counts are tried one by one down from the largest slice's.

    Args:
        spec: A checked topology spec.
        catalog: The hardware database the spec's ids refer to.
        at_most: The largest count to consider (what the memory budget allows).

    Returns:
        The node count, or None for a cluster's own graph (``explicit``: no node count to
        choose) and when the builder accepts no count of whole domains up to ``at_most``.
    """
    if spec.net is not None and spec.net.layout == "explicit":
        return None
    from fabricui.fabric.builder import MAX_GPUS, check_tiled

    hosts = max(1, spec.intra.hosts_per_domain)
    at_most = min(at_most, MAX_GPUS // max(1, spec.gpus_per_node))

    def builds(domains: int) -> bool:
        try:
            check_tiled(spec.with_nodes(domains * hosts), catalog)
        except EngineError:
            return False
        return True

    if spec.net is not None and spec.net.layout == "torus":
        # A torus skips counts its chips cannot shape: walk down from the most chips a
        # slice holds (a few hundred cheap tries) instead of bisecting.
        link = catalog.links.get(spec.net.link)
        chips = None if link is None else link.torus_max_chips or math.prod(link.torus_max or (0,))
        top = min(at_most, chips // max(1, spec.gpus_per_node)) if chips else at_most
        for domains in range(top // hosts, max(0, top // hosts - TORUS_TRIES), -1):
            if builds(domains):
                return domains * hosts
    low, high = 0, at_most // hosts + 1  # builds(low) (or low 0: none yet); not builds(high)
    while high - low > 1:
        middle = (low + high) // 2
        if builds(middle):
            low = middle
        else:
            high = middle
    return low * hosts if low else None
