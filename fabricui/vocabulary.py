"""The words users type and the defaults every entry point shares (operations, traffic
patterns, protocols, the built-in default topology), importable without numpy."""

from __future__ import annotations

import re

#: The topology every entry point opens when none is named.
DEFAULT_TOPOLOGY = "dgx-h100-pod"
#: The model every entry point plans when none is named.
DEFAULT_MODEL = "llama3-70b"


#: Collective operations, named as nccl-tests names them.
OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
)

#: Traffic patterns ``fabricui traffic`` knows.
PATTERNS = ("all_to_all", "ring", "random-pairs")

#: NCCL protocols, fastest-latency first.
PROTOCOLS = ("ll", "ll128", "simple")

#: How a job's processes drive its GPUs, as nccl-tests measurements say it: one process per
#: GPU, or one process driving every GPU of its node (``-g N``).
LAUNCHES = ("process-per-gpu", "single-process")

#: The explorer's views, in key order (1-5), and what their titles and reports call them.
VIEW_TITLES = {
    "topology": "Topology",
    "pyramid": "Bandwidth pyramid",
    "collectives": "Collectives",
    "strategies": "Strategies",
    "plugins": "Plugins",
}
VIEWS = tuple(VIEW_TITLES)

#: Groups of GPUs a collective can run on: every GPU, the GPUs of host 0, those of
#: scale-up domain 0 (the hosts sharing an NVLink switch, e.g. an NVL72 rack), or GPU 0 of
#: every node.
GROUPS = ("all", "host", "domain", "per-node")
#: Other names of groups (``node`` is the host).
GROUP_ALIASES = {"node": "host"}

#: Data-parallel strategies users name (``--dp-strategy``, the explorer's layout words, run
#: files); a plugin may register more.
DP_STRATEGIES = ("ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp")
#: Other names of DP strategies: ZeRO-3 is FSDP, no sharding is DDP.
DP_ALIASES = {"zero3": "fsdp", "none": "ddp"}

#: Activation recomputation modes.
RECOMPUTE_MODES = ("none", "selective", "full")
#: Megatron-Core's recompute modules (``--recompute-modules``, a run's ``recompute_modules``).
RECOMPUTE_MODULES = (
    "core_attn",
    "mlp",
    "moe",
    "moe_act",
    "layernorm",
    "shared_experts",
    "mla_up_proj",
)
#: Those of them that exist only in MoE layers (a dense model's MLP is ``mlp``).
MOE_RECOMPUTE_MODULES = ("moe", "moe_act", "shared_experts")
#: Those that exist only with multi-head latent attention (a model with ``kv_lora_rank``).
MLA_RECOMPUTE_MODULES = ("mla_up_proj",)
#: Precisions of the training model (fp8 / fp4: the GEMMs in FP8 / NVFP4, the rest BF16).
PRECISIONS = ("bf16", "fp16", "fp8", "fp4")
#: Attention implementations a framework or a run names: fused kernels with a ``kernels``
#: record, and Megatron's unfused score matrix of 2021-22.
ATTENTION_IMPLS = ("cudnn", "fa2", "fa3", "fa4", "triton", "unfused")
#: What ``--attention`` and a run accept: ``flash`` (the framework's fused kernel) or one
#: of the implementations.
ATTENTION_CHOICES = ("flash", *ATTENTION_IMPLS)
#: FP8 scaling recipes: per-tensor delayed (amax history) or current scaling, 1x128 /
#: 128x128 block scaling (DeepSeek-V3), MXFP8 (32-element blocks, Blackwell), torchao's
#: per-row scaling (rowwise).
FP8_RECIPES = ("delayed", "current", "blockwise", "mxfp8", "rowwise")
#: Formats fused attention runs in under FP8 (a kernel record's ``fp8_*_scale`` keys):
#: per-tensor scales (``fp8``) or 32-element block scales (``mxfp8``).
FP8_ATTENTION_FORMATS = ("fp8", "mxfp8")
#: The format each FP8 recipe runs attention in: Transformer Engine's delayed and current
#: scaling per tensor, its MXFP8 recipe in MXFP8. The other recipes run no fused FP8
#: attention (Transformer Engine 2.17 disables it under block scaling and NVFP4; torchao's
#: rowwise scaling has none).
FP8_ATTENTION_FORMAT_OF = {"delayed": "fp8", "current": "fp8", "mxfp8": "mxfp8"}
#: MoE token dispatch: a copy per routed expert, or one per node (DeepEP).
MOE_DISPATCH = ("alltoall", "deepep")
#: How a framework's context parallelism runs attention: a ring that passes each chunk's
#: keys and values to the next rank every step (Megatron-Core, Transformer Engine), or
#: PyTorch's ring attention as torchtitan runs it (keys and values all-gathered, the steps
#: merged and the key and value gradients passed around in FP32).
CP_ATTENTION = ("ring", "torch")
#: Transformer Engine userbuffers configurations a framework's TP overlap runs with (``""``:
#: none; ``engine.training.userbuffers.CONFIGS``): Transformer Engine's defaults, or
#: Megatron-Bridge's per-model configs.
TP_USERBUFFERS = ("", "te", "megatron-bridge")
#: CUDA graphs a run captures: none, parts of each layer (Transformer Engine's graphs of
#: attention, router and preprocessing), or the whole iteration (Megatron-Core's
#: ``cuda_graph_impl = "full_iteration"``, with static expert capacity).
CUDA_GRAPH_MODES = ("none", "partial", "full_iteration")


def spelling_key(name: str) -> str:
    """What two spellings of one id share: lower case letters and digits, after a Hugging
    Face owner (``meta-llama/Llama-3-70B`` and ``llama3_70b`` both give ``llama370b``)."""
    return re.sub(r"[^a-z0-9]", "", str(name).rpartition("/")[2].lower())


def op_name(text: str) -> str | None:
    """The collective ``text`` names, whichever spelling users bring: ``all_reduce``,
    ``allreduce``, ``all-reduce``, ``AllReduce``, ``alltoall``, ``sendrecv`` ... (None for
    none)."""
    key = text.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    return _OP_KEYS.get(key)


_OP_KEYS = {op.replace("_", ""): op for op in OPS}


#: Every kind of hardware-database record (``fabricui hwdb list``), in display order.
HWDB_KINDS = ("links", "gpus", "nics", "switches", "topologies", "models", "frameworks", "kernels")


def record_kind_singular(kind: str) -> str:
    """One hardware-database record of ``kind`` as a message names it (``topologies`` ->
    ``topology``, ``switches`` -> ``switch``)."""
    return {"switches": "switch", "topologies": "topology"}.get(kind, kind.rstrip("s"))


def pick_label(library: str | None, release: bool = False) -> str:
    """A table's heading for the library's pick: ``NCCL's pick`` (``NCCL 2.30.7``; with
    ``release``, ``NCCL 2.30.7's pick``), ``RCCL's pick``; plain ``pick`` for a vendor's
    library named in lower case (``google``, ``aws``), whose tuner is not modelled."""
    named = (library or "NCCL").split(" (")[0]
    name = named.split()[0]
    if not name.isupper():
        return "pick"
    return f"{named if release else name}'s pick"
