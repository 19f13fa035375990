"""A training run as published: the layout, batch and settings a run file states.

The ``run`` block of ``shared/data/training/runs.yaml`` (its README gives the schema):
what the paper or table states, normalized; ``None`` wherever the source leaves a
setting unstated, so that the model can say what it assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricui.model.records import ModelShape
from fabricui.model.topology import TopologySpec

#: Data-parallel strategies a run may name (``zero2``: Megatron's distributed optimizer;
#: ``zero3`` = FSDP full shard; ``none``: one replica).
RUN_DP_STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp", "none")
#: Recompute modes a run may name.
RUN_RECOMPUTE = ("none", "selective", "full")
#: Precisions a run may name.
RUN_PRECISIONS = ("bf16", "fp16", "fp8")
#: Attention kernels a run may name (an extension of the shared schema).
RUN_ATTENTION = ("flash", "unfused")


@dataclass(frozen=True)
class RunSpec:
    """The normalized ``run`` block of a run entry."""

    topology: TopologySpec
    """The cluster (a compact hardware block or a built-in topology id)."""
    tp: int
    """Tensor-parallel degree."""
    pp: int
    """Pipeline stages (layers need not divide evenly)."""
    dp: int
    """Data-parallel replicas."""
    global_batch: int
    """Sequences per optimizer step."""
    cp: int = 1
    """Context-parallel degree."""
    ep: int = 1
    """Expert-parallel degree (within dp)."""
    vpp: int | None = None
    """Interleaved model chunks per stage; None: not stated."""
    sp: bool | None = None
    """Sequence parallelism with TP; None: not stated."""
    dp_strategy: str | None = None
    """``RUN_DP_STRATEGIES`` (or a plugin's); None: not stated."""
    micro_batch: int | None = None
    """Sequences per micro-batch; None: not stated."""
    recompute: str | None = None
    """``RUN_RECOMPUTE``; None: not stated."""
    precision: str | None = None
    """``RUN_PRECISIONS``; None: not stated."""
    step_time_s: float | None = None
    """Measured seconds per optimizer step, when the run was measured."""
    seq_len: int | None = None
    """Tokens per sequence (default: the model's)."""
    attention: str | None = None
    """``RUN_ATTENTION``; None: the GPU generation's software default."""
    dp_overlap: bool | None = None
    """Gradient reduction overlapped with backward; None: not stated."""
    tp_overlap: bool | None = None
    """TP collectives overlapped with GEMMs; None: not stated."""
    ep_overlap: bool | None = None
    """Expert all-to-alls overlapped with expert GEMMs; None: not stated."""


@dataclass(frozen=True)
class RunEntry:
    """One run: its model, its run block, and where it was read."""

    id: str
    """Entry id."""
    model: ModelShape
    """The model (inline shape or an hwdb record)."""
    run: RunSpec
    """The run block."""
    quality: str = ""
    """``reference`` entries are scored; others are not."""
    origin: str = ""
    """``file:line`` of the entry, for messages."""
