"""Context parallelism: ring attention passes each rank's keys and values around the ring."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, Strategy, hookimpl
from fabricui_strategies._shapes import kv_bytes, stage_layers

if TYPE_CHECKING:
    from fabricui.api import ModelShape

#: Bytes per element of the key and value gradients PyTorch's ring attention passes around
#: the ring (``accum_dtype = torch.float32``), over the 16-bit keys and values.
TORCH_GRAD_FACTOR = 2.0


class ContextParallel(Strategy):
    """CP (ring attention): the sequence is split over ``cp`` ranks.

    ``ring`` (Megatron's): in every layer each rank sends its chunk's keys and values to
    the next rank of the ring ``cp - 1`` times in forward, overlapped with attention over
    the chunk it holds; backward sends them again with their gradients (twice the bytes).
    Per step and rank: ``(cp - 1) * layers * micro-batches`` sends of ``kv_bytes`` forward
    and twice that backward; full recomputation repeats the forward ring.

    ``torch`` (PyTorch's ring attention as torchtitan runs it, ``Layout.cp_attention``):
    keys and values at the query heads (``kv_bytes(repeated=True)``) are all-gathered once
    in forward and again in backward (the 'allgather' rotate method); backward passes the
    key and value gradients in FP32 to the next rank after each of the ``cp`` steps, the
    last waited for at once (``ring_operations``).
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
        if layout.cp_attention == "torch":
            return torch_ring_operations(model, layout)
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


def torch_ring_operations(model: ModelShape, layout: Layout) -> list[CommOp]:
    """PyTorch's ring attention (torch 2.6.0 ``torch/distributed/tensor/experimental/
    _attention.py``, the December 2024 trunk torchtitan's CP benchmarks ran), per layer and
    micro-batch.

    torchtitan's default rotate method is ``allgather`` (``config_manager.py`` at 9dec370)
    and its attention repeats the key and value heads up to the query heads before
    ``scaled_dot_product_attention`` (``repeat_kv`` in ``models/llama/model.py`` at
    9dec370): the ring carries ``kv_bytes(repeated=True)`` per rank. Forward
    (``_templated_ring_attention``): one all-gather of them, issued before the first
    step's attention and waited for before the second (``_AllGatherRotater``); full
    recomputation repeats it. Backward (``_templated_ring_attention_backward``): the same
    all-gather, then after each of the ``cp`` steps the FP32 key and value gradients go to
    the next rank (``dkv_rotater``, an all-to-all); the last is waited for right after the
    loop, with nothing to hide behind.

    Args:
        model: The model shape.
        layout: The layout.
    """
    per_pass = stage_layers(model, layout) * layout.microbatches
    size = kv_bytes(model, layout, repeated=True)
    gathered, grads = layout.cp * size, TORCH_GRAD_FACTOR * size
    rows = (
        ("all_gather", gathered, per_pass, "forward", True, "keys and values all-gathered"),
        ("all_gather", gathered, per_pass, "backward", True, "keys and values all-gathered"),
        (
            "send_recv",
            grads,
            (layout.cp - 1) * per_pass,
            "backward",
            True,
            "FP32 key and value gradients to the next CP rank, per ring step",
        ),
        (
            "send_recv",
            grads,
            per_pass,
            "backward",
            False,
            "FP32 key and value gradients home after the last ring step",
        ),
    )
    return [
        CommOp(
            strategy="cp",
            collective=collective,
            group="cp",
            size_bytes=nbytes,
            count=count,
            overlappable=hidden,
            note=f"{what}, {phase}",
            scope="layer",
            recomputed=phase == "forward",
            phase=phase,
        )
        for collective, nbytes, count, phase, hidden, what in rows
    ]


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register CP.

    Args:
        register: The host's callback.
    """
    register(ContextParallel())
