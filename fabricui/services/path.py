"""The routed path between two GPUs of a requested fabric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricui.services.requests import PathRequest

if TYPE_CHECKING:
    from fabricui.engine.evaluate import PathReport
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost


@dataclass(frozen=True)
class PathResult:
    """A path report and the fabric it was routed on (renderers name its devices)."""

    report: PathReport
    """Hops, bottleneck, latency and transfer time."""
    fabric: Fabric
    """The fabric."""


def find_path(
    request: PathRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> PathResult:
    """Route between the two requested GPUs.

    Raises:
        FabricError: Unknown topology or GPU ids (named with the nearest valid ones),
            identical endpoints, a negative size.
    """
    from fabricui.engine.evaluate import evaluate_path
    from fabricui.services.session import load_fabric

    fabric = load_fabric(request.topology, catalog, host)
    return PathResult(evaluate_path(fabric, request.src, request.dst, request.size_bytes), fabric)
