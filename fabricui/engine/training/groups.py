"""Process groups of a layout: which global ranks talk to which on each parallel axis."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.types import Layout
from fabricui.errors import EngineError

IntArray = npt.NDArray[np.int64]
Groups = dict[str, IntArray]

#: Group axes a layout defines (``dp_intra``/``dp_inter`` split ``dp`` for HSDP; ``edp``
#: holds the same experts).
AXES = ("tp", "cp", "ep", "edp", "pp", "dp", "dp_intra", "dp_inter")


def layout_groups(n_gpus: int, gpus_per_node: int, layout: Layout) -> Groups:
    """Process groups of a layout on ranks ``0 .. world-1``.

    Dense layers: ``rank = (((dp_outer * pp + pp_idx) * dp_inner + dp_idx) * cp + cp_idx)
    * tp + tp_idx``: TP innermost (on the fastest links), then CP, then ``dp_inner`` data-
    parallel replicas (``gcd(dp, ep)``: the replicas an expert-parallel group spans sit
    next to each other), PP, and the rest of DP outermost. The ``dp`` group of a rank is
    every rank that holds the same weights, i.e. with its (pp_idx, tp_idx): the data-
    parallel replicas and the context-parallel ranks (Megatron reduces gradients over
    both). ``dp_intra`` (HSDP's shard group) is ``layout.dp_shard`` consecutive members of
    a DP group, or when that is 0 the members on one node (1 when nodes hold uneven
    counts); ``dp_inter`` links the members at the same position of each shard group.

    Expert layers (Megatron-Core): the ``tp x cp x dp`` ranks of a pipeline stage, in rank
    order, are regrouped as ``edp x ep x etp`` with the expert-TP degree innermost: ``ep``
    is the expert-parallel group (it may span TP and CP ranks when ``etp < tp``) and
    ``edp`` the ranks that hold the same experts and reduce their gradients together.

    Args:
        n_gpus: GPUs of the fabric.
        gpus_per_node: GPUs per node.
        layout: The layout.

    Returns:
        For each axis in ``AXES``, its groups as rows of a (n_groups, size) array.

    Raises:
        EngineError: The layout needs more GPUs than there are, or ``ep``/``dp_shard``
            does not divide what it splits.
    """
    check_degrees(layout)
    if layout.world > n_gpus:
        raise EngineError(f"layout needs {layout.world} GPUs, the fabric has {n_gpus}")
    tp, cp, ep, pp, dp = layout.tp, layout.cp, layout.ep, layout.pp, layout.dp
    inner = math.gcd(dp, ep)
    grid = np.arange(layout.world).reshape(dp // inner, pp, inner, cp, tp)
    dp_groups = _rows(grid.transpose(1, 4, 0, 2, 3), dp * cp)
    shard = layout.dp_shard or _members_per_node(dp_groups, gpus_per_node)
    if dp_groups.shape[1] % shard:
        shard = 1
    stage = np.sort(_rows(grid.transpose(1, 0, 2, 3, 4), dp * cp * tp), axis=1)
    etp = layout.expert_tp
    experts = stage.reshape(pp, -1, ep, etp)
    return {
        "tp": _rows(grid, tp),
        "cp": _rows(grid.transpose(0, 1, 2, 4, 3), cp),
        "ep": _by_first(_rows(experts.transpose(0, 1, 3, 2), ep)),
        "edp": _by_first(_rows(experts.transpose(0, 3, 2, 1), experts.shape[1])),
        "pp": _rows(grid.transpose(0, 2, 3, 4, 1), pp),
        "dp": dp_groups,
        "dp_intra": dp_groups.reshape(-1, shard),
        "dp_inter": dp_groups.reshape(dp_groups.shape[0], -1, shard)
        .transpose(0, 2, 1)
        .reshape(-1, dp_groups.shape[1] // shard),
    }


def check_degrees(layout: Layout) -> None:
    """Raise unless every degree is a positive integer, the expert groups tile a pipeline
    stage's ``tp x cp x dp`` ranks and HSDP's shard divides DP.

    Raises:
        EngineError: Naming the first bad degree.
    """
    names = ("tp", "cp", "pp", "dp", "ep", "vpp", "microbatches", "global_batch", "seq_len")
    for name in names:
        value = getattr(layout, name)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise EngineError(f"{name} must be a positive integer (got {value!r})")
    if layout.etp < 0:
        raise EngineError(f"etp must be a positive integer (got {layout.etp!r})")
    stage = layout.tp * layout.cp * layout.dp
    if stage % (layout.expert_tp * layout.ep):
        raise EngineError(
            f"ep {layout.ep} x etp {layout.expert_tp} must divide tp x cp x dp = {stage} "
            "(the expert groups tile a pipeline stage's ranks)"
        )
    if layout.dp_shard < 0 or (layout.dp_shard and (layout.dp * layout.cp) % layout.dp_shard):
        raise EngineError(f"dp_shard {layout.dp_shard} must divide dp {layout.dp}")


def _rows(grid: npt.NDArray[Any], size: int) -> IntArray:
    """(n_groups, size) groups, one per row (iterating yields the groups)."""
    return np.ascontiguousarray(grid).reshape(-1, size).astype(np.int64)


def _by_first(groups: IntArray) -> IntArray:
    """Groups in the order of their first member (the first row holds rank 0)."""
    return groups[np.argsort(groups[:, 0], kind="stable")]


def _members_per_node(dp_groups: IntArray, gpus_per_node: int) -> int:
    """DP-group members per node when every group splits evenly into per-node runs, else 1."""
    first = dp_groups[0]
    shard = int(np.sum(first // gpus_per_node == first[0] // gpus_per_node))
    if dp_groups.shape[1] % shard:
        return 1
    nodes = dp_groups.reshape(dp_groups.shape[0], -1, shard) // gpus_per_node
    return shard if bool((nodes == nodes[:, :, :1]).all()) else 1
