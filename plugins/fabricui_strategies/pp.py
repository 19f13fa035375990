"""Pipeline parallelism (1F1B): activation send/recv between stages, and the bubble."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui import hookimpl
from fabricui.engine.types import CommOp, Layout, Strategy
from fabricui_strategies._shapes import activation_bytes

if TYPE_CHECKING:
    from fabricui.model import ModelShape


def bubble_fraction(p: int, m: int) -> float:
    """Idle fraction of a 1F1B / GPipe pipeline step: ``(p - 1) / (m + p - 1)``.

    Args:
        p: Pipeline stages.
        m: Micro-batches per step.
    """
    return (p - 1) / (m + p - 1)


class PipelineParallel(Strategy):
    """1F1B pipeline: each micro-batch's activations cross every stage boundary forward and
    their gradients cross it backward, ``b * s * h * dtype_bytes`` each (point to point,
    overlappable with the other micro-batches' compute). The bubble is not communication;
    the engine adds it with ``bubble_fraction``.
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
                size_bytes=activation_bytes(model, layout),
                count=layout.microbatches,
                overlappable=True,
                note=f"{what} to the {where} stage, per micro-batch",
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
