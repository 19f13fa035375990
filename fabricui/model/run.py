"""A training run as published: the layout, batch and settings a run file states.

The ``run`` block of ``shared/data/training/runs.yaml`` (its README gives the schema):
what the paper or table states, normalized; ``None`` wherever the source leaves a
setting unstated, so that the model can say what it assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fabricui.model.records import ModelShape
from fabricui.model.topology import TopologySpec
from fabricui.vocabulary import DP_STRATEGIES

#: Data-parallel strategies a run may name (``zero2``: Megatron's distributed optimizer;
#: ``zero3`` = FSDP full shard; ``none``: one replica).
RUN_DP_STRATEGIES = (*DP_STRATEGIES, "none")


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
    """``vocabulary.RECOMPUTE_MODES``; None: not stated."""
    precision: str | None = None
    """``vocabulary.PRECISIONS``; None: not stated."""
    step_time_s: float | None = None
    """Measured seconds per optimizer step, when the run was measured."""
    seq_len: int | None = None
    """Tokens per sequence (default: the model's)."""
    attention: str | None = None
    """``vocabulary.ATTENTION_CHOICES``; None: the GPU generation's software default."""
    dp_overlap: bool | None = None
    """Gradient reduction overlapped with backward; None: not stated."""
    tp_overlap: bool | None = None
    """TP collectives overlapped with GEMMs; None: not stated."""
    ep_overlap: bool | None = None
    """Expert all-to-alls overlapped with expert GEMMs; None: not stated."""
    framework: str | None = None
    """The framework whose defaults apply (an hwdb ``frameworks`` id); None: the one the
    entry's source names, else its GPU generation's."""
    power_W: float | None = None
    """Board power cap the GPUs ran at, below their own limit [W]; None: their limit."""
    fp8_recipe: str | None = None
    """FP8 scaling recipe (``vocabulary.FP8_RECIPES``); None: the framework's."""
    recompute_modules: tuple[str, ...] | None = None
    """Modules selective recomputation recomputes (``vocabulary.RECOMPUTE_MODULES``)."""
    compile: bool | None = None
    """torch.compile on (pointwise ops fused); None: the framework's kernels."""
    moe_dispatch: str | None = None
    """MoE dispatch (``vocabulary.MOE_DISPATCH``); None: the framework's."""
    moe_imbalance: float | None = None
    """Tokens of the most loaded expert over the mean; None: balanced (1)."""
    cuda_graph: str | None = None
    """CUDA graphs captured (``vocabulary.CUDA_GRAPH_MODES``); None: the framework's."""
    etp: int | None = None
    """Expert tensor-parallel degree; None: tp when the expert groups allow, else 1."""
    fsdp_reshard: bool | None = None
    """FSDP gathers the parameters again for backward; None: the framework's."""
    grad_reduce_bytes: float | None = None
    """Bytes per gradient element of the data-parallel reduction (4: FP32); None: the
    framework's."""
    fp8_attention: bool | None = None
    """Attention runs in FP8 too (Transformer Engine's ``fp8_dot_product_attention``);
    None: not stated (16-bit attention)."""
    domain_hosts: int | None = None
    """Hosts (trays) in use in each scale-up domain, when fewer than the topology's (a
    GB200 rack with 16 of its 18 trays in the job); None: whole domains."""


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
    source_text: str = ""
    """The entry's ``source`` wording (paper, URL, table), to recognise the framework of a
    run that does not name it."""
    precision_text: str = ""
    """The entry's own ``precision`` wording (``MXFP8 (table: MXFP8 ...)``), which can say
    more than the run block's ``precision`` (the FP8 recipe of a published row, whether it
    ran torch.compile)."""
    hardware_text: str = ""
    """The entry's own ``hardware`` wording (``H100 (96GB HBM2e, 500 W power limit)``),
    which can say more than the run block's topology (a power limit, a GPU variant)."""
    parallel_text: str = ""
    """The entry's own ``parallel`` wording, each key with its value (``async_tp: True``),
    which can say more than the run block's degrees (async TP on or off)."""
    places: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """``file:line: key path`` of each key of the run block (``dp_strategy`` ->
    ``runs.yaml:17: [0].run.dp_strategy``), for messages about a stated setting."""

    def at(self, key: str) -> str:
        """``file:line: key path`` of the run block's ``key`` (of the run block itself
        when the key is not stated)."""
        return self.places.get(key) or self.places.get("", self.origin)
