"""What plugins contribute to the engine: interconnects, builders, algorithms, strategies.

These are the objects a plugin passes to ``register(...)`` in its hooks; the plugin host
checks each against the classes here before the engine uses it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from fabricui.engine.group import Group
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import ModelShape, TopologySpec

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Interconnect:
    """An interconnect family a plugin provides (its link data lives in hwdb or is registered)."""

    name: str
    """Plugin-facing name (``nvlink``, ``infiniband``)."""
    families: tuple[str, ...]
    """Link families (``LinkGeneration.family``) this interconnect covers."""
    description: str = ""
    """One line for ``fabricui plugins``."""


@dataclass(frozen=True)
class TopologyBuilder:
    """A named way to turn a topology spec into a fabric (``builder:`` key of a spec)."""

    name: str
    """Id used by ``builder:`` in a topology spec."""
    build: Callable[[TopologySpec, Catalog], Fabric]
    """The builder function."""
    description: str = ""
    """One line for ``fabricui plugins``."""


class CollectiveAlgorithm(ABC):
    """A way to run collectives on a group, priced per protocol, vectorized over sizes."""

    name: ClassVar[str]
    """Id used by ``--algo`` (``ring``, ``tree``, ``nvls``, ``sharp``)."""
    ops: ClassVar[tuple[str, ...]]
    """Operations it implements (subset of ``OPS``)."""
    protocols: ClassVar[tuple[str, ...]] = ("simple",)
    """Protocols it can use (``ll``, ``ll128``, ``simple``)."""
    description: ClassVar[str] = ""
    """One line for ``fabricui plugins``."""

    @abstractmethod
    def applicable(self, group: Group, op: str) -> bool:
        """True when this algorithm can run ``op`` on ``group`` (hardware, size limits)."""

    @abstractmethod
    def time_us(self, group: Group, op: str, size_bytes: FloatArray, protocol: str) -> FloatArray:
        """Predicted time [us] of ``op`` for each size (nccl-tests size convention)."""


@dataclass(frozen=True)
class Layout:
    """How a job is split: parallel degrees and batch shape."""

    tp: int = 1
    """Tensor-parallel degree (innermost)."""
    pp: int = 1
    """Pipeline stages."""
    dp: int = 1
    """Data-parallel replicas (outermost)."""
    ep: int = 1
    """Expert-parallel degree (within the data-parallel dimension for MoE layers)."""
    microbatches: int = 1
    """Micro-batches per step per pipeline."""
    global_batch: int = 1
    """Sequences per optimizer step over the whole job."""
    seq_len: int = 4096
    """Tokens per sequence."""
    dtype_bytes: int = 2
    """Bytes per parameter / activation element (BF16 = 2)."""
    dp_shard: int = 0
    """HSDP shard-group size: data-parallel ranks that shard the model between them, the
    rest replicate it (0: not set; the engine sets it to the data-parallel ranks that share
    a node)."""
    cp: int = 1
    """Context-parallel degree: each sequence is split over ``cp`` ranks (ring attention),
    between TP and EP in rank order."""
    vpp: int = 1
    """Model chunks per pipeline stage (interleaved 1F1B; 1: plain 1F1B)."""
    grad_reduce_bytes: float = 0.0
    """Bytes per gradient element the data-parallel reduction moves (4: FP32 gradients, as
    Megatron-LM reduces them under BF16); 0: ``dtype_bytes``."""
    bucket_params: float = 0.0
    """Parameters per gradient bucket (Megatron: ``max(40M, 1M x dp)``); 0: PyTorch DDP's
    25 MiB buckets; negative: one transformer layer's (PyTorch FSDP's unit)."""
    fsdp_reshard: bool = True
    """FSDP / ZeRO-3 frees the gathered parameters after forward and gathers them again for
    backward (``reshard_after_forward``)."""
    fsdp_reduce_bytes: float = 0.0
    """Bytes per gradient element of FSDP's reduce-scatter; 0: ``grad_reduce_bytes``."""
    pp_defers_fsdp_sync: bool = False
    """With ``pp > 1``, a strategy that shards gradients keeps them unsharded and the
    parameters gathered through the step's micro-batches, and reduce-scatters once, after
    the last micro-batch's backward (PyTorch's pipelining with FSDP2, as torchtitan runs
    it)."""
    etp: int = 0
    """Expert tensor-parallel degree (Megatron-Core's ``expert_tensor_parallel_size``): the
    experts of an MoE layer are split over ``etp x ep`` of the ``tp x cp x dp`` ranks of a
    pipeline stage; 0: ``tp``."""
    ep_local: int = 0
    """Expert-parallel ranks that share a scale-up domain (the engine sets it: dispatch
    within the domain crosses NVLink, not the network); 0: unknown (all remote)."""
    moe_dispatch: str = "alltoall"
    """MoE dispatch: ``alltoall`` (one copy of a token per routed expert) or ``deepep``
    (one copy per destination domain, forwarded there over NVLink, as DeepEP does)."""
    moe_imbalance: float = 1.0
    """Tokens of the most loaded expert over the mean (1: balanced routing)."""
    cp_attention: str = "ring"
    """How context parallelism moves keys and values: ``ring`` (each ring step sends the
    chunk's keys and values to the next rank) or ``torch`` (PyTorch's ring attention as
    torchtitan runs it: an all-gather of keys and values at the query heads, the key and
    value gradients passed around the ring in FP32)."""

    @property
    def world(self) -> int:
        """GPUs the layout needs: ``tp * cp * pp * dp``."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def micro_batch(self) -> float:
        """Sequences per micro-batch: ``global_batch / (dp * microbatches)``."""
        return self.global_batch / (self.dp * self.microbatches)

    @property
    def wire_grad_bytes(self) -> float:
        """Bytes per gradient element of the data-parallel reduction."""
        return self.grad_reduce_bytes or float(self.dtype_bytes)

    @property
    def expert_tp(self) -> int:
        """Expert tensor-parallel degree (``etp``, or ``tp`` when unset)."""
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        """Ranks that hold the same experts and reduce their gradients together:
        ``tp x cp x dp / (etp x ep)`` (Megatron-Core's expert data-parallel group)."""
        return max(1, (self.tp * self.cp * self.dp) // (self.expert_tp * self.ep))


@dataclass(frozen=True)
class CommOp:
    """One kind of communication a strategy does each training step."""

    strategy: str
    """Strategy that issues it (``ddp``, ``tp``)."""
    collective: str
    """Operation (one of ``OPS``)."""
    group: str
    """Process-group axis it runs on: ``tp``, ``pp``, ``dp``, ``ep``, ``dp_intra``, ``dp_inter``."""
    size_bytes: float
    """Bytes per call, in nccl-tests' size convention for ``collective``."""
    count: float
    """Calls per training step (per GPU)."""
    overlappable: bool
    """True when it can hide behind compute (e.g. DDP's bucketed all-reduce in backward)."""
    note: str = ""
    """What it is, for the operation table (``gradient all-reduce, 25 MB buckets``)."""
    scope: str = ""
    """When it runs, which decides what compute it can hide behind: ``layer`` (in every
    layer, every micro-batch: TP, CP, EP, FSDP gathers), ``microbatch`` (once per
    micro-batch: pipeline sends) or ``step`` (once per optimizer step: gradient
    reduction). Empty: by its group (``SCOPES_BY_GROUP``)."""
    recomputed: bool = False
    """True when full activation recomputation issues it again (forward-pass collectives)."""
    phase: str = ""
    """``forward`` or ``backward`` when the operation runs in one pass only: it can hide
    only behind that pass's compute (a gradient reduction behind backward, a parameter
    gather behind forward); empty: either."""

    @property
    def resolved_scope(self) -> str:
        """``scope``, or the default of its group."""
        return self.scope or SCOPES_BY_GROUP.get(self.group, "step")


#: When an operation on each group runs, unless it says otherwise (``CommOp.scope``).
SCOPES_BY_GROUP = {
    "tp": "layer",
    "cp": "layer",
    "ep": "layer",
    "pp": "microbatch",
    "dp": "step",
    "edp": "step",
    "dp_intra": "step",
    "dp_inter": "step",
}


@dataclass(frozen=True)
class StateShards:
    """Ranks each kind of model state is divided over by a data-parallel strategy."""

    weights: int = 1
    """Ranks sharing the 16-bit weights (ZeRO-3 / FSDP: the data-parallel group)."""
    grads: int = 1
    """Ranks sharing the gradients (ZeRO-2 and up)."""
    optimizer: int = 1
    """Ranks sharing the optimizer states (ZeRO-1 and up)."""


@dataclass(frozen=True)
class MemoryTerm:
    """Memory a strategy adds on every GPU (a compression buffer, a copy of the gradients)."""

    strategy: str
    """Strategy that adds it."""
    what: str
    """What it is, for the memory breakdown."""
    size_bytes: float
    """Bytes per GPU."""


class Strategy(ABC):
    """A parallelism strategy: turns (model, layout) into communication operations.

    Strategies never compute times; the engine prices their operations on the fabric.
    """

    name: ClassVar[str]
    """Id (``ddp``, ``fsdp``, ``hsdp``, ``tp``, ``pp``, ``ep``)."""
    description: ClassVar[str] = ""
    """One line for ``fabricui plugins``."""

    @abstractmethod
    def operations(self, model: ModelShape, layout: Layout) -> list[CommOp]:
        """The communication this strategy adds per training step for ``layout``."""

    def applicable(self, model: ModelShape, layout: Layout) -> bool:
        """False when the layout does not use this strategy (e.g. tp == 1 for TP)."""
        return True

    def state_shards(self, model: ModelShape, layout: Layout) -> StateShards:
        """How this strategy divides the model states over ranks (default: it does not;
        ZeRO and FSDP override this)."""
        return StateShards()

    def memory(self, model: ModelShape, layout: Layout) -> list[MemoryTerm]:
        """Memory this strategy adds per GPU beyond the model states and activations
        (default: none)."""
        return []
