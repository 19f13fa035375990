"""Process groups of a layout: which global ranks talk to which on each parallel axis."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.types import Layout
from fabricui.errors import EngineError

IntArray = npt.NDArray[np.int64]
Groups = dict[str, IntArray]

#: Group axes a layout defines (``dp_intra``/``dp_inter`` split ``dp`` for HSDP).
AXES = ("tp", "cp", "ep", "pp", "dp", "dp_intra", "dp_inter")


def layout_groups(n_gpus: int, gpus_per_node: int, layout: Layout) -> Groups:
    """Process groups of a layout on ranks ``0 .. world-1`` (Megatron order).

    ``rank = (((dp_outer * pp + pp_idx) * ep + ep_idx) * cp + cp_idx) * tp + tp_idx``: TP
    innermost (on the fastest links), then CP, then EP (carved out of DP:
    ``dp = dp_outer * ep``), PP, and DP outermost. The ``dp`` group of a rank is every rank
    that holds the same weights, i.e. with its (pp_idx, tp_idx): the data-parallel
    replicas and the context-parallel ranks (Megatron reduces gradients over both).
    ``dp_intra`` (HSDP's shard group) is ``layout.dp_shard`` consecutive members of a DP
    group, or when that is 0 the members on one node (1 when nodes hold uneven counts);
    ``dp_inter`` links the members at the same position of each shard group.

    Args:
        n_gpus: GPUs of the fabric.
        gpus_per_node: GPUs per node.
        layout: The layout.

    Returns:
        For each axis in ``AXES``, its groups as rows of a (n_groups, size) array.

    Raises:
        EngineError: The layout needs more GPUs than there are, or ``ep``/``dp_shard``
            does not divide ``dp``.
    """
    check_degrees(layout)
    if layout.world > n_gpus:
        raise EngineError(f"layout needs {layout.world} GPUs, the fabric has {n_gpus}")
    tp, cp, ep, pp, dp = layout.tp, layout.cp, layout.ep, layout.pp, layout.dp
    grid = np.arange(layout.world).reshape(dp // ep, pp, ep, cp, tp)
    dp_groups = _rows(grid.transpose(1, 4, 0, 2, 3), dp * cp)
    shard = layout.dp_shard or _members_per_node(dp_groups, gpus_per_node)
    if dp_groups.shape[1] % shard:
        shard = 1
    return {
        "tp": _rows(grid, tp),
        "cp": _rows(grid.transpose(0, 1, 2, 4, 3), cp),
        "ep": _rows(grid.transpose(0, 1, 3, 4, 2), ep),
        "pp": _rows(grid.transpose(0, 2, 3, 4, 1), pp),
        "dp": dp_groups,
        "dp_intra": dp_groups.reshape(-1, shard),
        "dp_inter": dp_groups.reshape(dp_groups.shape[0], -1, shard)
        .transpose(0, 2, 1)
        .reshape(-1, dp_groups.shape[1] // shard),
    }


def check_degrees(layout: Layout) -> None:
    """Raise unless every degree is a positive integer and EP and HSDP's shard divide DP.

    Raises:
        EngineError: Naming the first bad degree.
    """
    names = ("tp", "cp", "pp", "dp", "ep", "vpp", "microbatches", "global_batch", "seq_len")
    for name in names:
        value = getattr(layout, name)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise EngineError(f"{name} must be a positive integer (got {value!r})")
    if layout.dp % layout.ep:
        raise EngineError(f"ep {layout.ep} must divide dp {layout.dp} (EP is carved out of DP)")
    if layout.dp_shard < 0 or (layout.dp_shard and (layout.dp * layout.cp) % layout.dp_shard):
        raise EngineError(f"dp_shard {layout.dp_shard} must divide dp {layout.dp}")


def _rows(grid: npt.NDArray[Any], size: int) -> IntArray:
    """(n_groups, size) groups, one per row (iterating yields the groups)."""
    return np.ascontiguousarray(grid).reshape(-1, size).astype(np.int64)


def _members_per_node(dp_groups: IntArray, gpus_per_node: int) -> int:
    """DP-group members per node when every group splits evenly into per-node runs, else 1."""
    first = dp_groups[0]
    shard = int(np.sum(first // gpus_per_node == first[0] // gpus_per_node))
    if dp_groups.shape[1] % shard:
        return 1
    nodes = dp_groups.reshape(dp_groups.shape[0], -1, shard) // gpus_per_node
    return shard if bool((nodes == nodes[:, :, :1]).all()) else 1
