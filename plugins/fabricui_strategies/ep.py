"""Expert parallelism: token dispatch and combine all-to-alls in every MoE layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import micro_batch

if TYPE_CHECKING:
    from fabricui.api import ModelShape

#: Destination nodes a token may be routed to under node-limited routing (DeepSeek-V3:
#: each token's experts lie on at most 4 nodes, DeepSeek-V3 report Sec. 2.1.2).
NODE_LIMIT = 4


class ExpertParallel(Strategy):
    """EP: experts spread over ``ep`` ranks; each MoE layer dispatches tokens to their top-k
    experts and combines the results (2 all-to-alls in forward, 2 in backward).

    Bytes per all-to-all and rank, for the ``b * s * etp / (tp * cp)`` tokens a rank
    routes (sequence-split over the TP ranks an expert group spans): ``alltoall`` sends
    one copy per routed expert, ``tokens * top_k * h * dtype_bytes``; ``deepep`` (DeepEP,
    Megatron's flex dispatcher) sends one copy per destination scale-up domain and
    forwards it to the experts there over NVLink, ``tokens * D * h * dtype_bytes`` with
    ``D`` the expected number of distinct domains a token's ``top_k`` experts fall on
    (``N (1 - (1 - 1/N)^k)`` for ``N`` domains in the group, at most ``NODE_LIMIT``),
    plus the copies that stay in the sender's domain over NVLink. Routing imbalance
    (``Layout.moe_imbalance``) scales the busiest rank's share. On the critical path
    unless EP overlap is switched on (DualPipe-style); full recomputation repeats the
    forward ones. The engine prices ``deepep`` calls that cross nodes on DeepEP's own
    RDMA path, the others as NCCL's all-to-all (``fabricui.engine.training.deepep``).
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
        tokens = micro_batch(layout) * layout.seq_len * layout.expert_tp / (layout.tp * layout.cp)
        copies, how = dispatch_copies(model, layout)
        size = tokens * copies * model.hidden * layout.dtype_bytes * layout.moe_imbalance
        moe_layers = (model.moe_layers or model.layers) / layout.pp
        return [
            CommOp(
                strategy=self.name,
                collective="all_to_all",
                group="ep",
                size_bytes=size,
                count=2 * moe_layers * layout.microbatches,
                overlappable=False,
                note=f"token dispatch + combine ({how}), per MoE layer, {phase}",
                scope="layer",
                recomputed=phase == "forward",
                phase=phase,
            )
            for phase in ("forward", "backward")
        ]


def dispatch_copies(model: ModelShape, layout: Layout) -> tuple[float, str]:
    """Copies of each token an all-to-all carries, and how they are counted.

    ``alltoall``: one per routed expert. ``deepep``: one per distinct remote domain
    (bounded by ``NODE_LIMIT``) plus the local ones, with ``ep_local`` ranks per domain.
    """
    k = float(max(1, model.experts_per_token))
    if layout.moe_dispatch != "deepep" or layout.ep_local <= 0:
        return k, f"{k:g} copies per token"
    domains = max(1.0, layout.ep / layout.ep_local)
    if domains <= 1.0:
        return k, f"{k:g} copies per token over NVLink"
    distinct = domains * (1.0 - (1.0 - 1.0 / domains) ** k)
    distinct = min(distinct, float(NODE_LIMIT), k)
    return distinct, f"{distinct:.2g} copies per token, one per destination domain"


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register EP.

    Args:
        register: The host's callback.
    """
    register(ExpertParallel())
