"""Traffic patterns and their max-min fair outcome on a fabric (``fabricui traffic``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fabricui.engine.bulk import BulkRouter
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric
from fabricui.vocabulary import PATTERNS


def pattern_flows(
    pattern: str, ranks: npt.ArrayLike, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(sources, destinations) of a traffic pattern among ``ranks``.

    ``all_to_all``: every ordered pair; ``ring``: each rank to the next; ``random-pairs``: a
    random perfect matching (each rank sends to one partner and receives from one).

    Raises:
        EngineError: Unknown pattern, fewer than two ranks or a negative seed.
    """
    r = np.asarray(ranks, dtype=np.int64)
    if r.size < 2:
        raise EngineError("a traffic pattern needs at least two GPUs")
    if seed < 0:
        raise EngineError(f"a traffic pattern's seed must be >= 0 (got {seed})")
    if pattern == "all_to_all":
        a, b = np.meshgrid(r, r, indexing="ij")
        keep = a != b
        return a[keep], b[keep]
    if pattern == "ring":
        return r, np.roll(r, -1)
    if pattern == "random-pairs":
        perm = np.random.default_rng(seed).permutation(r)
        return perm, np.roll(perm, -1)
    raise EngineError(f"unknown pattern {pattern!r} (one of {', '.join(PATTERNS)})")


@dataclass(frozen=True)
class TrafficReport:
    """Max-min fair rates of a set of flows and the load they put on every link."""

    src: np.ndarray
    """(n_flows,) source ranks."""
    dst: np.ndarray
    """(n_flows,) destination ranks."""
    rate_GBps: np.ndarray
    """(n_flows,) achieved rate of each flow [GB/s]."""
    link_load_GBps: np.ndarray
    """(n_links,) traffic on every link [GB/s]."""
    link_capacity_GBps: np.ndarray
    """(n_links,) achievable capacity of every link [GB/s]."""

    def busiest_links(self, count: int = 10) -> np.ndarray:
        """Link ids with the highest utilisation, busiest first."""
        with np.errstate(divide="ignore", invalid="ignore"):
            util = np.where(
                self.link_capacity_GBps > 0, self.link_load_GBps / self.link_capacity_GBps, 0.0
            )
        order = np.argsort(-util, kind="stable")
        return order[: min(count, int((self.link_load_GBps > 0).sum()))]


def simulate_traffic(
    fabric: Fabric, src: npt.ArrayLike, dst: npt.ArrayLike, bulk: BulkRouter | None = None
) -> TrafficReport:
    """Max-min fair rates of concurrent flows and the resulting per-link loads.

    Args:
        fabric: The fabric.
        src: (n_flows,) source ranks.
        dst: (n_flows,) destination ranks.
        bulk: A bulk router to reuse.

    Returns:
        The report.
    """
    bulk = bulk or BulkRouter(fabric)
    rates, resource_load = bulk.max_min_rates(src, dst)
    return TrafficReport(
        src=np.asarray(src),
        dst=np.asarray(dst),
        rate_GBps=rates,
        link_load_GBps=bulk.link_loads(resource_load),
        link_capacity_GBps=bulk.capacity_GBps,
    )
