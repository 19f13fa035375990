"""The one entry point that builds a topology spec: a real cluster's explicit switch graph
(``explicit``), or the tiled node blocks and derived network of every other layout."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.tables import Catalog
    from fabricui.model import TopologySpec


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
