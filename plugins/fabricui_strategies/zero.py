"""ZeRO-1, ZeRO-2 and ZeRO-3 / FSDP: sharded optimizer state, gradients and parameters."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, ClassVar

from fabricui.api import CommOp, Layout, StateShards, Strategy, hookimpl
from fabricui_strategies._shapes import (
    bucket_bytes,
    deferred_sync,
    gradient_operations,
    layer_expert_bytes,
    layer_param_bytes,
    n_buckets,
    stage_expert_bytes,
    stage_layers,
    stage_param_bytes,
)

if TYPE_CHECKING:
    from fabricui.api import ModelShape


class Zero1(Strategy):
    """ZeRO stage 1: optimizer state sharded over the data-parallel group.

    Once per step: the gradients are reduce-scattered (in 25 MiB buckets, overlapped with
    backward) so each rank owns the reduced shard it updates, then the updated parameters
    are all-gathered after the optimizer step (Megatron's distributed optimizer overlaps
    that gather with the next step's forward when DP overlap is on). Same volume as DDP's
    all-reduce.
    """

    name: ClassVar[str] = "zero1"
    description: ClassVar[str] = "ZeRO-1: optimizer state sharded; reduce-scatter + all-gather"
    stage: ClassVar[int] = 1

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more data-parallel ranks (replicas or context-parallel ranks)."""
        return layout.dp * layout.cp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """Reduce-scatter of the gradients and all-gather of the parameters, once per step.

        Args:
            model: The model shape.
            layout: The layout.
        """
        ops = gradient_operations(self.name, "reduce_scatter", model, layout)
        if self.stage >= 2 and deferred_sync(layout):
            ops = [after_last_backward(op) for op in ops]
        gathers = [("dp", stage_param_bytes(model, layout))]
        if layout.expert_dp > 1:
            gathers.append(("edp", stage_expert_bytes(model, layout)))
        bucket = bucket_bytes(layout, model) * layout.dtype_bytes / layout.wire_grad_bytes
        for group, size in gathers:
            if size <= 0:
                continue
            buckets = n_buckets(size, bucket)
            ops.append(
                CommOp(
                    strategy=self.name,
                    collective="all_gather",
                    group=group,
                    size_bytes=size / buckets,
                    count=buckets,
                    overlappable=True,
                    note="updated-parameter all-gather after the optimizer step"
                    + (" (experts)" if group == "edp" else ""),
                    scope="step",
                    phase="forward",
                )
            )
        return ops

    def state_shards(self, model: ModelShape, layout: Layout) -> StateShards:
        """Optimizer states over the data-parallel group, ``dp * cp`` ranks (ZeRO-2:
        gradients too)."""
        dp = max(1, layout.dp * layout.cp)
        return StateShards(grads=dp if self.stage >= 2 else 1, optimizer=dp)


class Zero2(Zero1):
    """ZeRO stage 2: gradients sharded too; same traffic as ZeRO-1 (memory differs).

    Under a framework whose pipeline defers FSDP's gradient sync
    (``Layout.pp_defers_fsdp_sync``: FSDP2 without resharding after forward, as torchtitan
    runs it with PP) the reduce-scatter runs after the last micro-batch's backward, with
    nothing left to hide behind.
    """

    name: ClassVar[str] = "zero2"
    description: ClassVar[str] = "ZeRO-2: gradients + optimizer state sharded"
    stage: ClassVar[int] = 2


class FSDP(Strategy):
    """ZeRO stage 3 / FSDP (full shard): parameters sharded, gathered layer by layer.

    Per layer and micro-batch: an all-gather of the layer's parameters before forward,
    another before backward, and a reduce-scatter of its gradients after backward, each of
    ``params_per_layer * dtype_bytes`` (the TP shard). With one micro-batch each GPU sends
    3 Psi (Psi: the parameter bytes), 1.5x DDP's all-reduce (2 Psi), as in the ZeRO paper;
    with gradient accumulation the collectives repeat for every micro-batch. Prefetching
    overlaps each with the previous layer's compute; at scale each gather is a ring over
    the whole data-parallel group, whose per-step latency the engine prices.
    """

    name: ClassVar[str] = "fsdp"
    description: ClassVar[str] = "ZeRO-3 / FSDP: per-layer all-gather fwd+bwd, reduce-scatter"
    group: ClassVar[str] = "dp"

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """Needs two or more data-parallel ranks (replicas or context-parallel ranks)."""
        return layout.dp * layout.cp > 1

    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """The three per-layer collectives, counted per step.

        Args:
            model: The model shape.
            layout: The layout.
        """
        return fsdp_operations(self.name, self.group, model, layout)

    def state_shards(self, model: ModelShape, layout: Layout) -> StateShards:
        """Everything over the data-parallel group, ``dp * cp`` ranks."""
        dp = max(1, layout.dp * layout.cp)
        return StateShards(weights=dp, grads=dp, optimizer=dp)


def fsdp_operations(strategy: str, group: str, model: ModelShape, layout: Layout) -> list[CommOp]:
    """FSDP's per-layer all-gather (forward), all-gather (backward, when parameters are
    resharded after forward) and reduce-scatter (backward), every micro-batch.

    Gathers move 16-bit parameters; the reduce-scatter moves gradients at the framework's
    width (``Layout.fsdp_reduce_bytes``: FP32 for PyTorch FSDP's default reduce dtype).
    Routed experts are sharded over ``edp`` like the rest over ``group``.

    Where the framework's pipeline defers the sync (``deferred_sync``: torch 2.6's
    pipeline stage turns FSDP2's resharding after backward and its gradient sync off until
    the last micro-batch), a layer stays gathered from its first backward on: of the
    forward and backward passes of the ``m`` micro-batches only those after a forward
    gather it (the first forward too), ``m + 1`` gathers a step, counted as every forward's
    and one backward's (the first stage's 1F1B order: ``m`` forwards, then the backwards);
    without resharding after forward, one gather a step. Those once a step hide behind one
    micro-batch's pass like ZeRO's gather (``scope`` ``step``). The reduce-scatter runs
    once, after the last micro-batch's backward, with nothing left to hide behind.

    Args:
        strategy: Name to put on the operations.
        group: Group axis that shards the parameters (``dp``, or ``dp_intra`` for HSDP).
        model: The model shape.
        layout: The layout.
    """
    layers = stage_layers(model, layout)
    count = layers * layout.microbatches
    deferred = deferred_sync(layout)
    reduce = layout.fsdp_reduce_bytes or layout.wire_grad_bytes
    shards = [(group, layer_param_bytes(model, layout), "")]
    if layout.expert_dp > 1 and layer_expert_bytes(model, layout) > 0:
        shards.append(("edp", layer_expert_bytes(model, layout), "experts' "))
    ops = []
    for axis, size, what in shards:
        forward = CommOp(
            strategy=strategy,
            collective="all_gather",
            group=axis,
            size_bytes=size,
            count=count,
            overlappable=True,
            note=f"{what}parameter all-gather per layer, forward",
            scope="layer",
            phase="forward",
        )
        if deferred and not layout.fsdp_reshard:
            forward = once_a_step(forward, layers)
        ops.append(forward)
        if layout.fsdp_reshard:
            backward = dataclasses.replace(
                forward, note=f"{what}parameter all-gather per layer, backward", phase="backward"
            )
            ops.append(once_a_step(backward, layers) if deferred else backward)
        width = "FP32 " if reduce >= 4 else ""
        scatter = dataclasses.replace(
            forward,
            collective="reduce_scatter",
            size_bytes=size * reduce / layout.dtype_bytes,
            count=count,
            note=f"{width}{what}gradient reduce-scatter per layer, backward",
            scope="layer",
            phase="backward",
        )
        if deferred:
            scatter = after_last_backward(dataclasses.replace(scatter, count=layers, scope="step"))
        ops.append(scatter)
    return ops


def once_a_step(op: CommOp, layers: float) -> CommOp:
    """A per-layer operation run once a step, ``layers`` calls (``scope`` ``step``)."""
    return dataclasses.replace(op, count=layers, scope="step", note=op.note + ", once a step")


def after_last_backward(op: CommOp) -> CommOp:
    """A gradient reduction run once after the last micro-batch's backward: nothing left
    to hide behind."""
    note = op.note.replace(", backward", "") + ", after the last micro-batch's backward"
    return dataclasses.replace(op, overlappable=False, note=note)


@hookimpl
def register_strategies(register: Callable[[Strategy], None]) -> None:
    """Register ZeRO-1, ZeRO-2 and FSDP (= ZeRO-3).

    Args:
        register: The host's callback.
    """
    register(Zero1())
    register(Zero2())
    register(FSDP())
