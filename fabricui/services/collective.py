"""Collectives on a loaded fabric: which ranks a named group means, the prediction per
size with every loaded algorithm, and the textbook bandwidth-only bound."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError
from fabricui.services.command_requests import CollectiveRequest
from fabricui.services.progress import NO_PROGRESS, Phases
from fabricui.services.requests import GROUPS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from fabricui.engine.collectives import Prediction
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost
    from fabricui.services.jobs import JobPlacement


@dataclass(frozen=True)
class CollectiveResult:
    """One collective per size, as ``fabricui collective`` reports it."""

    op: str
    """Collective name."""
    topology: str | None
    """Topology id (None for the textbook bound)."""
    nranks: int
    """Ranks in the group."""
    rows: tuple[dict[str, Any], ...]
    """Per size: ``size_bytes``, ``algorithm``, ``time_us``, ``algbw_GBps``, ``busbw_GBps``."""
    job: dict[str, Any] | None = None
    """Where the job ran (``JobPlacement.to_json``), when a job was placed."""
    packed: tuple[dict[str, Any], ...] = ()
    """The same rows for as many GPUs packed from rank 0 (the placement a scheduler
    would give an empty cluster), when a job was placed."""

    def to_json(self) -> dict[str, Any]:
        """The ``fabricui collective --json`` object (``job`` and ``packed_rows`` when a
        job was placed)."""
        out: dict[str, Any] = {
            "op": self.op,
            "topology": self.topology,
            "nranks": self.nranks,
            "rows": list(self.rows),
        }
        if self.job is not None:
            out["job"] = self.job
            out["packed_rows"] = list(self.packed)
        return out


def group_ranks(
    fabric: Fabric, group: str = "all", gpus: int | None = None
) -> npt.NDArray[np.int64]:
    """Global ranks of a named group, or of the first ``gpus`` GPUs.

    Args:
        fabric: The fabric.
        group: ``all``, ``node`` (the GPUs of node 0) or ``per-node`` (GPU 0 of every node).
        gpus: The first N GPUs instead of a named group.

    Raises:
        ConfigError: ``gpus`` out of range, or an unknown group.
    """
    import numpy as np

    from fabricui.services.jobs import placeable_ranks

    # An imported cluster's empty NVLink-domain slots hold no host: never in a group.
    placeable = placeable_ranks(fabric)
    if gpus is not None:
        if not 1 <= gpus <= placeable.shape[0]:
            raise ConfigError(f"--gpus must be within 1..{placeable.shape[0]} (got {gpus})")
        return placeable[:gpus]
    g = fabric.gpus_per_node
    if group in ("node", "host"):
        return np.arange(g, dtype=np.int64)
    if group == "domain":
        return np.arange(min(fabric.gpus_per_domain, fabric.n_gpus), dtype=np.int64)
    if group == "per-node":
        return placeable[placeable % g == 0]
    if group != "all":
        raise ConfigError(f"unknown group {group!r} (one of {', '.join(GROUPS)})")
    return placeable


def prediction_rows(prediction: Prediction) -> tuple[dict[str, Any], ...]:
    """One JSON-ready row per size of a prediction."""
    return tuple(
        {
            "size_bytes": int(size),
            "algorithm": algo,
            "time_us": float(t),
            "algbw_GBps": float(alg),
            "busbw_GBps": float(bus),
        }
        for size, algo, t, alg, bus in zip(
            prediction.size_bytes,
            prediction.algorithm,
            prediction.time_us,
            prediction.algbw_GBps,
            prediction.busbw_GBps,
        )
    )


#: Phases ``predict_collective`` reports (one more with ``--hosts``: the packed job).
COLLECTIVE_PHASES = 3


def predict_collective(
    request: CollectiveRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    progress: Phases = NO_PROGRESS,
) -> CollectiveResult:
    """Predict a collective on the requested fabric with every loaded algorithm, reporting
    ``COLLECTIVE_PHASES`` phases to ``progress``.

    Raises:
        FabricError: Unknown topology, op or algorithm; a bad group; no algorithm can run.
    """
    from fabricui.engine.evaluate import evaluate_collective
    from fabricui.engine.routing import Router
    from fabricui.services import flow_memory
    from fabricui.services.session import collective_algorithms, load_fabric

    progress.phase("building the fabric")
    fabric = load_fabric(request.topology, catalog, host)
    job = job_of(fabric, request.hosts)
    ranks = job.ranks if job is not None else group_ranks(fabric, request.group, request.gpus)
    flow_memory.admit_collective(request.op, ranks, Router.for_fabric(fabric))
    progress.phase("loading the algorithms")
    algorithms = collective_algorithms(host=host)

    def rows_of(group: Any) -> tuple[dict[str, Any], ...]:
        progress.phase(f"{request.op} among {len(group):,} GPUs")
        prediction = evaluate_collective(
            fabric,
            request.op,
            list(request.size_bytes),
            ranks=group,
            algorithms=algorithms,
            algo=request.algo,
        )
        return prediction_rows(prediction)

    if job is None:
        return CollectiveResult(request.op, fabric.spec.id, int(len(ranks)), rows_of(ranks))
    import numpy as np

    packed = rows_of(np.arange(len(ranks), dtype=np.int64))
    return CollectiveResult(
        request.op, fabric.spec.id, int(len(ranks)), rows_of(ranks), job.to_json(), packed
    )


def job_of(fabric: Fabric, hosts: str | None) -> JobPlacement | None:
    """The job placed on ``fabric`` by ``hosts`` (or ``$SLURM_JOB_NODELIST`` when the
    fabric is an imported cluster with host names), else None.

    Raises:
        ConfigError: Unknown hosts (named with the nearest known ones).
    """
    import os

    from fabricui.services.jobs import NODELIST_ENV, place_job

    cluster = fabric.spec.cluster
    if hosts or (cluster is not None and cluster.hosts and os.environ.get(NODELIST_ENV)):
        return place_job(fabric, hosts)
    return None


def ideal_collective(
    op: str, size_bytes: Sequence[int], nranks: int, bw_GBps: float
) -> CollectiveResult:
    """The textbook bandwidth-only time of ``op`` over ``nranks`` ranks of ``bw_GBps`` each.

    Raises:
        ConfigError: Fewer than one rank or a bandwidth that is not positive.
    """
    import numpy as np

    from fabricui.engine.collectives import algbw_GBps, bus_factor, ideal_time_us

    if nranks < 1 or not bw_GBps > 0:
        raise ConfigError("--ideal needs --nranks N (>= 1) and a positive --bw, e.g. 100GB/s")
    sizes = np.asarray(size_bytes, dtype=float)
    times = ideal_time_us(op, sizes, nranks, bw_GBps)
    alg = algbw_GBps(sizes, times)
    rows = tuple(
        {
            "size_bytes": int(s),
            "algorithm": "ideal",
            "time_us": float(t),
            "algbw_GBps": float(a),
            "busbw_GBps": float(a) * bus_factor(op, nranks),
        }
        for s, t, a in zip(sizes, times, alg)
    )
    return CollectiveResult(op, None, nranks, rows)
