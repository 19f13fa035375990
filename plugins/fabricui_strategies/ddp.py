"""DDP: bucketed gradient all-reduce over the data-parallel group, overlapped with backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui import hookimpl
from fabricui.api import CommOp, Layout, Strategy
from fabricui_strategies._shapes import bucketed_gradients, stage_param_bytes

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class DDP(Strategy):
    """PyTorch DDP: one gradient all-reduce per step, in 25 MiB buckets.

    With gradient accumulation (``no_sync``) the all-reduce runs once per optimizer step,
    during the last micro-batch's backward; each GPU reduces the gradients of its TP x PP
    shard, ``dtype_bytes * params / (tp * pp)`` bytes (2 * params for BF16 without TP/PP).
    For MoE models every parameter is counted on the ``dp`` group (expert gradients really
    reduce over ``dp / ep``; a stated simplification).
    """

    name: ClassVar[str] = "ddp"
    description: ClassVar[str] = "data parallel: bucketed gradient all-reduce, overlapped"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more data-parallel ranks (replicas or context-parallel ranks)."""
        return layout.dp * layout.cp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """One all-reduce per bucket per step.

        Args:
            model: The model shape.
            layout: The layout.
        """
        return [bucketed_gradients(self.name, "all_reduce", stage_param_bytes(model, layout))]


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register DDP.

    Args:
        register: The host's callback.
    """
    register(DDP())
