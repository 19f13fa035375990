"""Max-min fair rates of concurrent flows over shared resources (progressive filling).

Every unfrozen flow grows at the same pace until some resource is full; the flows through
it freeze at that rate; repeat. Flows that share a spread (an imported cluster's leaf
pair, ``Incidence`` groups) load it as a group: the group's resources count its active
flows once per round, and a full resource in a group freezes every flow of the group.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fabricui.engine.graph_routes import Incidence

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def max_min_rates_GBps(incidence: Incidence, capacity_GBps: FloatArray) -> FloatArray:
    """(n_flows,) max-min fair rate of each flow [GB/s]; inf for a flow that loads
    nothing (a GPU to itself).

    Args:
        incidence: Which resources each flow loads, and by how much per byte.
        capacity_GBps: (n_resources,) capacity of every resource [GB/s].
    """
    flow, res, weight = incidence.flow, incidence.res, incidence.weight
    n_flows = incidence.n_flows
    size = capacity_GBps.size
    rate = np.zeros(n_flows)
    remaining = capacity_GBps.astype(np.float64).copy()
    has_links = np.bincount(flow, minlength=n_flows) > 0
    groups = _Groups.of(incidence)
    if groups is not None:
        has_links |= groups.member
    rate[~has_links] = np.inf
    active = has_links.copy()
    live = _Entries(flow, res, weight)
    for _ in range(n_flows + 1):
        if not active.any():
            break
        counts = live.counts(size)
        if groups is not None:
            counts += groups.counts(active, size)
        used = counts > 0
        share = np.full(size, np.inf)
        share[used] = remaining[used] / counts[used]
        step = share[used].min()
        rate[active] += step
        remaining -= step * counts
        full = used & (share <= step * (1 + 1e-9))
        frozen = live.through(full, n_flows)  # flows through a full resource freeze
        if groups is not None:
            frozen |= groups.frozen(full)
        active &= ~frozen
        live = live.without(frozen)
    return rate


class _Entries:
    """The (flow, resource, weight) entries of the flows still filling, in incidence order:
    a round sums exactly what a mask over every entry would pick (bit for bit), and once
    half of them belong to frozen flows the rest are copied out, so that later rounds read
    only what is left (a permutation freezes a few flows a round, for hundreds of rounds).
    """

    def __init__(
        self,
        flow: IntArray,
        res: IntArray,
        weight: FloatArray | None,
        live: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        self.flow = flow
        self.res = res
        self.weight = weight
        """None: 1 on every entry."""
        self.live = live
        """Which entries still fill (None: all)."""

    def counts(self, size: int) -> FloatArray:
        """(size,) the live entries' weights summed per resource."""
        res, weight, live = self.res, self.weight, self.live
        if live is not None:
            res, weight = res[live], None if weight is None else weight[live]
        return np.bincount(res, weights=weight, minlength=size).astype(np.float64)

    def through(self, full: npt.NDArray[np.bool_], n_flows: int) -> npt.NDArray[np.bool_]:
        """(n_flows,) the flows with a live entry on a ``full`` resource."""
        hit = full[self.res]
        if self.live is not None:
            hit &= self.live
        frozen = np.zeros(n_flows, dtype=bool)
        frozen[self.flow[hit]] = True
        return frozen

    def without(self, frozen: npt.NDArray[np.bool_]) -> _Entries:
        """The entries without those of ``frozen`` flows: copied out once at most half of
        them stay, else marked."""
        keep = ~frozen[self.flow]
        if self.live is not None:
            keep &= self.live
        kept = int(np.count_nonzero(keep))
        if kept == self.flow.shape[0]:
            return self
        if 2 * kept > self.flow.shape[0]:
            return _Entries(self.flow, self.res, self.weight, keep)
        weight = None if self.weight is None else self.weight[keep]
        return _Entries(self.flow[keep], self.res[keep], weight)


class _Groups:
    """The shared groups of an incidence, as progressive filling counts and freezes them."""

    def __init__(self, incidence: Incidence) -> None:
        group, ptr = incidence.group, incidence.group_ptr
        assert group is not None and ptr is not None
        assert incidence.group_res is not None and incidence.group_weight is not None
        self.member = group >= 0
        """(n_flows,) flows in a group."""
        self._of_flow = np.maximum(group, 0)
        self._n_groups = ptr.shape[0] - 1
        self._incidence = incidence

    @classmethod
    def of(cls, incidence: Incidence) -> _Groups | None:
        """The groups, or None when the incidence has none."""
        ptr = incidence.group_ptr
        if incidence.group is None or ptr is None or ptr.size <= 1:
            return None
        return cls(incidence)

    def counts(self, active: npt.NDArray[np.bool_], size: int) -> FloatArray:
        """(size,) what the active members of every group put on its resources."""
        per_group = np.bincount(self._of_flow[active & self.member], minlength=self._n_groups)
        counts = np.zeros(size)
        self._incidence.add_group_loads(per_group.astype(np.float64), counts)
        return counts

    def frozen(self, full: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """(n_flows,) members of a group with a full resource."""
        hit = np.zeros(self._n_groups, dtype=bool)
        group_res = self._incidence.group_res
        assert group_res is not None
        for entries, rows in self._incidence.group_chunks():
            hit[rows[full[group_res[entries]]]] = True
        return self.member & hit[self._of_flow]
