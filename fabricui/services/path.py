"""The routed path between two GPUs of a requested fabric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.services.command_requests import PathRequest
from fabricui.services.health import health_json
from fabricui.services.jobs import job_of
from fabricui.services.loaded import LoadedFabric

if TYPE_CHECKING:
    from fabricui.engine.evaluate import PathReport
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost
    from fabricui.services.jobs import JobPlacement


@dataclass(frozen=True)
class PathResult:
    """A path report and the fabric it was routed on (renderers name its devices)."""

    report: PathReport
    """Hops, bottleneck, latency and transfer time."""
    fabric: Fabric
    """The fabric."""
    job: JobPlacement | None = None
    """Where the job's ranks are, when a job was placed (``--hosts``)."""

    def to_json(self) -> dict[str, Any]:
        """The ``fabricui path --json`` object (with ``job`` when one was placed)."""
        out = self.report.to_json()
        if self.job is not None:
            out["job"] = self.job.to_json()
        health = health_json(self.fabric)
        if health is not None:
            out["health"] = health
        return out


def find_path(
    request: PathRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> PathResult:
    """Route between the two requested GPUs.

    Raises:
        FabricError: Unknown topology or GPU ids (named with the nearest valid ones),
            identical endpoints, a negative size.
    """
    loaded = LoadedFabric.load(request.topology, catalog, host, report_health=True)
    job = job_of(loaded.fabric, request.hosts)
    if job is not None:
        src, dst = job.rank_of(request.src), job.rank_of(request.dst)
    else:
        src, dst = loaded.parse_gpu(request.src), loaded.parse_gpu(request.dst)
    return PathResult(loaded.path(src, dst, request.size_bytes), loaded.fabric, job)
