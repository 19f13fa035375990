"""DDP: bucketed gradient all-reduce over the data-parallel group, overlapped with backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import gradient_operations

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class DDP(Strategy):
    """PyTorch DDP: one gradient all-reduce per step, in 25 MiB buckets.

    With gradient accumulation (``no_sync``) the all-reduce runs once per optimizer step,
    during the last micro-batch's backward; each GPU reduces the gradients of its TP x PP
    shard at the framework's wire width (``Layout.wire_grad_bytes``: 4 for FP32
    gradients), in 25 MiB buckets or Megatron's ``bucket_params``. An MoE model's routed
    experts reduce over the ranks that hold the same experts (``edp``), the rest over
    ``dp``.
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
        return gradient_operations(self.name, "all_reduce", model, layout)


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register DDP.

    Args:
        register: The host's callback.
    """
    register(DDP())
