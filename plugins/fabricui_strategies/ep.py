"""Expert parallelism: token dispatch and combine all-to-alls in every MoE layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui import hookimpl
from fabricui.api import CommOp, Layout, Strategy
from fabricui_strategies._shapes import micro_batch

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class ExpertParallel(Strategy):
    """EP: experts spread over ``ep`` ranks; each MoE layer dispatches tokens to their top-k
    experts and combines the results (2 all-to-alls in forward, 2 in backward).

    Bytes per all-to-all and rank: ``tokens * top_k * hidden * dtype_bytes`` for the
    micro-batch's ``b * s / cp`` tokens (balanced routing). On the critical path unless
    EP overlap is switched on (DualPipe-style); full recomputation repeats the forward ones.
    """

    name: ClassVar[str] = "ep"
    description: ClassVar[str] = "expert parallel: 2 all-to-alls per MoE layer fwd + 2 bwd"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs an MoE model and an EP degree above 1."""
        return model.experts > 0 and layout.ep > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """Dispatch + combine all-to-alls, forward and backward, per MoE layer and micro-batch.

        Args:
            model: The model shape.
            layout: The layout.
        """
        tokens = micro_batch(layout) * layout.seq_len / max(1, layout.cp)
        size = tokens * max(1, model.experts_per_token) * model.hidden * layout.dtype_bytes
        moe_layers = (model.moe_layers or model.layers) / layout.pp
        return [
            CommOp(
                strategy=self.name,
                collective="all_to_all",
                group="ep",
                size_bytes=size,
                count=2 * moe_layers * layout.microbatches,
                overlappable=False,
                note=f"token dispatch + combine, per MoE layer, {phase}",
                scope="layer",
                recomputed=phase == "forward",
            )
            for phase in ("forward", "backward")
        ]


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register EP.

    Args:
        register: The host's callback.
    """
    register(ExpertParallel())
