"""HSDP: FSDP inside a shard group (one node), gradient all-reduce across the replicas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, StateShards, Strategy, hookimpl
from fabricui_strategies._shapes import deferred_sync, stage_param_bytes
from fabricui_strategies.zero import after_last_backward, fsdp_operations

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class HSDP(Strategy):
    """Hybrid sharded data parallel (FSDP ``HYBRID_SHARD``).

    The ``dp_shard`` data-parallel ranks of a shard group (``dp_intra``, one node) run
    FSDP's per-layer collectives; once per step each rank all-reduces its reduced gradient
    shard, ``params * dtype_bytes / (tp * pp * dp_shard)`` bytes, with the same shard of the
    other replicas (``dp_inter``), overlapped with backward (after the last micro-batch's
    backward, with its reduce-scatter, where the framework's pipeline defers FSDP's sync).
    ``layout.dp_shard == 0`` is read as ``dp`` (one shard group: plain FSDP).
    """

    name: ClassVar[str] = "hsdp"
    description: ClassVar[str] = "hybrid shard: FSDP within a node, all-reduce across nodes"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more data-parallel ranks (replicas or context-parallel ranks)."""
        return layout.dp * layout.cp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """FSDP on ``dp_intra`` plus the replica all-reduce on ``dp_inter``.

        Args:
            model: The model shape.
            layout: The layout (``dp_shard`` set by the engine).
        """
        shard = shard_size(layout)
        ops = fsdp_operations(self.name, "dp_intra", model, layout) if shard > 1 else []
        if layout.dp * layout.cp // shard > 1:
            reduce = CommOp(
                strategy=self.name,
                collective="all_reduce",
                group="dp_inter",
                size_bytes=stage_param_bytes(model, layout, grads=True) / shard,
                count=1,
                overlappable=True,
                note="gradient-shard all-reduce across replicas",
                scope="step",
                phase="backward",
            )
            ops.append(after_last_backward(reduce) if deferred_sync(layout) else reduce)
        return ops

    def state_shards(self, model: ModelShape, layout: Layout) -> StateShards:
        """Everything over the shard group; replicas hold their own copy."""
        shard = shard_size(layout)
        return StateShards(weights=shard, grads=shard, optimizer=shard)


def shard_size(layout: Layout) -> int:
    """Ranks of one shard group: ``layout.dp_shard``, or the whole data-parallel group
    (``dp * cp``) when it is not set."""
    return layout.dp_shard if layout.dp_shard > 0 else layout.dp * layout.cp


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register HSDP.

    Args:
        register: The host's callback.
    """
    register(HSDP())
