"""Pipeline parallelism (1F1B): activation send/recv between stages, and the bubble."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import activation_bytes

if TYPE_CHECKING:
    from fabricui.api import ModelShape


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """Idle fraction of a 1F1B / GPipe pipeline step: ``(p - 1) / (m + p - 1)``; with ``v``
    interleaved chunks per stage ``((p - 1) / v) / (m + (p - 1) / v)``.

    Args:
        p: Pipeline stages.
        m: Micro-batches per step.
        v: Model chunks per stage (interleaved schedule).
    """
    idle = (p - 1) / v
    return idle / (m + idle)


class PipelineParallel(Strategy):
    """1F1B pipeline: each micro-batch's activations cross every stage boundary forward and
    their gradients cross it backward, ``b * (s / cp) * h * dtype_bytes`` each, point to
    point. With TP each rank sends its ``1 / tp`` share (Megatron's scatter-gather; with
    sequence parallelism the tensor is already split). The interleaved schedule crosses a
    boundary per model chunk: ``vpp`` times per micro-batch. The bubble is not
    communication; the engine adds it from the schedule.
    """

    name: ClassVar[str] = "pp"
    description: ClassVar[str] = "pipeline parallel (1F1B): send/recv per micro-batch per stage"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more stages."""
        return layout.pp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """Forward activation and backward gradient send/recv, once per micro-batch.

        Args:
            model: The model shape.
            layout: The layout.
        """
        return [
            CommOp(
                strategy=self.name,
                collective="send_recv",
                group="pp",
                size_bytes=activation_bytes(model, layout) / layout.tp,
                count=layout.microbatches * max(1, layout.vpp),
                overlappable=True,
                note=f"{what} to the {where} stage, per micro-batch",
                scope="microbatch",
            )
            for what, where in (("activations", "next"), ("activation gradients", "previous"))
        ]


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register PP.

    Args:
        register: The host's callback.
    """
    register(PipelineParallel())
