"""Adaptive routing's split of each flow between its minimal and Valiant route (UGAL).

A UGAL router decides per packet: minimal unless the minimal route's queues are the
longer, so in the steady state a flow's bytes split between its routes until neither is
less loaded. That equilibrium is found by successive averages: each round every flow's
best route under the current loads (cost: its bytes times each resource's utilisation to
the power ``POWER``, summed) is averaged into its split with weight 1/(round + 2); the
split whose busiest resource is least loaded is kept, and it is never worse than every
flow minimal or every flow Valiant.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from fabricui.engine.graph_routes import Incidence

FloatArray = npt.NDArray[np.float64]

#: Rounds of successive averages.
ROUNDS = 12
#: Exponent of the smooth route cost (sum of bytes x utilisation^p): large enough to act
#: like the busiest resource, smooth enough to let flows share out.
POWER = 8.0


def ugal_equilibrium(
    minimal: Incidence,
    valiant: Incidence,
    volume: FloatArray,
    capacity_GBps: FloatArray,
    busiest: Callable[[FloatArray], float],
) -> FloatArray:
    """(n_flows,) fraction of each flow's bytes on its Valiant route (module docstring).

    Args:
        minimal: What each flow loads on its minimal route.
        valiant: What it loads on its Valiant route.
        volume: (n_flows,) bytes per message byte of each flow.
        capacity_GBps: (n_resources,) capacity of every resource [GB/s].
        busiest: Time per byte of the busiest resource of a load vector (the score).
    """
    n = volume.shape[0]
    size = capacity_GBps.size
    cap = np.where(capacity_GBps > 0, capacity_GBps, np.inf)
    fm, rm, wm = minimal.expanded()
    fv, rv, wv = valiant.expanded()
    bytes_m, bytes_v = volume[fm] * wm, volume[fv] * wv

    def load_of(x: FloatArray) -> FloatArray:
        # (1 - x) per flow, then gathered: the same values as per entry, n not e of them.
        load = np.bincount(rm, weights=bytes_m * (1.0 - x)[fm], minlength=size) + (
            np.bincount(rv, weights=bytes_v * x[fv], minlength=size)
        )
        return load.astype(np.float64, copy=False)

    x = np.zeros(n)
    load = load_of(x)  # each split's load is scored, then drives the next round
    candidates = [x, np.ones(n)]
    scores = [busiest(load), busiest(load_of(candidates[1]))]
    for k in range(ROUNDS):
        pressure = (load / cap) ** POWER  # per resource, then gathered per entry
        cost_m = np.bincount(fm, weights=bytes_m * pressure[rm], minlength=n)
        cost_v = np.bincount(fv, weights=bytes_v * pressure[rv], minlength=n)
        x = x + ((cost_v < cost_m).astype(np.float64) - x) / (k + 2)
        load = load_of(x)
        candidates.append(x)
        scores.append(busiest(load))
    return candidates[int(np.argmin(scores))]
