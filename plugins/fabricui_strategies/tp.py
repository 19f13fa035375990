"""Megatron tensor parallelism, with or without sequence parallelism."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import activation_bytes, stage_layers

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class TensorParallel(Strategy):
    """Megatron TP: two all-reduces per layer in forward (attention, MLP), two in backward.

    Each is the micro-batch's hidden state on this context-parallel rank,
    ``b * (s / cp) * h * dtype_bytes``; they sit on the critical path (the engine hides
    them behind the layer's GEMMs only when TP communication overlap is switched on).
    80 layers: 2 x 2 x 80 = 320 per micro-batch. Full activation recomputation runs the
    forward ones again (``recomputed``).
    """

    name: ClassVar[str] = "tp"
    description: ClassVar[str] = "tensor parallel: 2 all-reduces per layer fwd + 2 bwd"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs a TP degree above 1."""
        return layout.tp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """Forward and backward all-reduces, per layer of the stage and micro-batch.

        Args:
            model: The model shape.
            layout: The layout.
        """
        return [
            self._op(collective, phase, model, layout)
            for phase in ("forward", "backward")
            for collective in self.collectives()
        ]

    def collectives(self) -> tuple[str, ...]:
        """What replaces each of the two all-reduces per layer and pass."""
        return ("all_reduce",)

    def _op(self, collective: str, phase: str, model: ModelShape, layout: Layout) -> CommOp:
        return CommOp(
            strategy=self.name,
            collective=collective,
            group="tp",
            size_bytes=activation_bytes(model, layout),
            count=2 * stage_layers(model, layout) * layout.microbatches,
            overlappable=False,
            note=f"activation {collective.replace('_', '-')}, 2 per layer, {phase}",
            scope="layer",
            recomputed=phase == "forward",
            phase=phase,
        )


class SequenceParallelTP(TensorParallel):
    """TP with sequence parallelism: each all-reduce becomes a reduce-scatter + all-gather.

    Same bytes on the wire (Korthikanti et al. 2022); activations outside the TP regions
    are split along the sequence, which saves memory and the norm and dropout work each
    rank repeats, not traffic. (Megatron gathers the sequence-split input again in the
    backward pass for the weight gradients, overlapped with the input-gradient GEMM; not
    listed.)
    """

    name: ClassVar[str] = "tp-sp"
    description: ClassVar[str] = "tensor + sequence parallel: all-gather + reduce-scatter"

    def collectives(self) -> tuple[str, ...]:
        """An all-gather and a reduce-scatter for each all-reduce."""
        return ("all_gather", "reduce_scatter")


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register TP and TP with sequence parallelism.

    Args:
        register: The host's callback.
    """
    register(TensorParallel())
    register(SequenceParallelTP())
