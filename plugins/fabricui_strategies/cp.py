"""Context parallelism: ring attention passes each rank's keys and values around the ring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import kv_bytes, stage_layers

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class ContextParallel(Strategy):
    """CP (Megatron's ring attention): the sequence is split over ``cp`` ranks.

    In every layer each rank sends its chunk's keys and values to the next rank of the
    ring ``cp - 1`` times in forward, overlapped with attention over the chunk it holds;
    backward sends them again with their gradients (twice the bytes). Per step and rank:
    ``(cp - 1) * layers * micro-batches`` sends of ``kv_bytes`` forward and twice that
    backward; full recomputation repeats the forward ring.
    """

    name: ClassVar[str] = "cp"
    description: ClassVar[str] = "context parallel (ring attention): KV passed around the ring"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs a CP degree above 1."""
        return layout.cp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """The forward and backward ring steps, per layer and micro-batch.

        Args:
            model: The model shape.
            layout: The layout.
        """
        steps = (layout.cp - 1) * stage_layers(model, layout) * layout.microbatches
        size = kv_bytes(model, layout)
        return [
            CommOp(
                strategy=self.name,
                collective="send_recv",
                group="cp",
                size_bytes=size * factor,
                count=steps,
                overlappable=True,
                note=f"{what} to the next CP rank, per ring step, {phase}",
                scope="layer",
                recomputed=phase == "forward",
                phase=phase,
            )
            for phase, what, factor in (
                ("forward", "keys and values", 1),
                ("backward", "keys, values and their gradients", 2),
            )
        ]


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register CP.

    Args:
        register: The host's callback.
    """
    register(ContextParallel())
