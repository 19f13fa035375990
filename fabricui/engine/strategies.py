"""Parallelism plans: place a layout's groups on a fabric, price its operations, rank layouts."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import numpy.typing as npt

from fabricui.engine.types import CollectiveAlgorithm, CommOp, Layout, Strategy
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.collectives import Prediction
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import ModelShape

IntArray = npt.NDArray[np.int64]
Groups = dict[str, IntArray]
Evaluate = Callable[..., "Prediction"]

#: Model FLOPs utilisation assumed for compute when none is given.
DEFAULT_MFU = 0.4
#: Group axes a layout defines (``dp_intra``/``dp_inter`` split ``dp`` for HSDP).
AXES = ("tp", "ep", "pp", "dp", "dp_intra", "dp_inter")
#: Strategies of the decision table, in the seed's order of discussion.
TABLE_STRATEGIES = ("ddp", "fsdp", "hsdp", "tp", "pp", "ep")
#: Largest group the decision table uses by default (the usual TP / EP degree).
TABLE_MAX_DEGREE = 8
#: Micro-batches per GPU in the decision table's reference step.
TABLE_MICROBATCHES = 8
#: Tokens per micro-batch (one sequence) in the decision table's reference step.
TABLE_SEQ = 4096
#: Top-k used to price EP for a dense model in the decision table (Mixtral-style top-2).
DENSE_EP_TOP_K = 2
#: Largest exposed communication, as a fraction of compute, the decision table calls OK.
OK_EXPOSED_FRACTION = 0.25
#: Up to this exposed fraction a cell is a plain "yes"; above it (and still OK) "marginal".
GOOD_EXPOSED_FRACTION = 0.10


# --- compute ---------------------------------------------------------------------------------


def model_flops_per_token(model: ModelShape, seq_len: int | None = None) -> float:
    """Training FLOPs per token (forward + backward): ``6 * N + 6 * L * s * h``.

    ``6 * N`` counts the matrix multiplies of the ``N`` active parameters (2 forward, 4
    backward, Kaplan et al.); ``6 * L * s * h`` is causal self-attention's score and
    value products (``12 * L * s * h`` in PaLM's count, halved for the causal mask).

    Args:
        model: The model shape (``active_params_B`` for MoE).
        seq_len: Tokens per sequence (default: the model's).
    """
    active = model.active_params_B if model.active_params_B is not None else model.params_B
    seq = model.seq_len if seq_len is None else seq_len
    return 6.0 * active * 1e9 + 6.0 * model.layers * seq * model.hidden


def compute_time_us(fabric: Fabric, model: ModelShape, layout: Layout, mfu: float) -> float:
    """One GPU's compute per step [us]: its share of the step's FLOPs at ``mfu`` x peak."""
    flops = layout.global_batch * layout.seq_len * model_flops_per_token(model, layout.seq_len)
    peak = fabric.gpu.bf16_dense_TFLOPS
    if peak is None:
        raise EngineError(
            f"{fabric.gpu.id} has no published BF16 peak (hwdb bf16_dense_TFLOPS: null); "
            "a plan needs one: give it in a --hwdb directory that overrides the GPU record"
        )
    flops_per_us = peak * 1e6 * mfu
    return flops / layout.world / flops_per_us


def pipeline_bubble_us(compute_us: float, stages: int, microbatches: int) -> float:
    """Idle time of a 1F1B pipeline [us]: ``compute * (p - 1) / m``.

    The bubble is then ``(p - 1) / (m + p - 1)`` of compute + bubble.
    """
    return compute_us * (stages - 1) / microbatches


# --- groups ----------------------------------------------------------------------------------


def layout_groups(n_gpus: int, gpus_per_node: int, layout: Layout) -> Groups:
    """Process groups of a layout on ranks ``0 .. world-1`` (Megatron order).

    ``rank = ((dp_outer * pp + pp_idx) * ep + ep_idx) * tp + tp_idx``: TP innermost (on
    the fastest links), then EP (carved out of DP: ``dp = dp_outer * ep``), PP, and DP
    outermost. The ``dp`` group of a rank is every rank with its (pp_idx, tp_idx).
    ``dp_intra`` (HSDP's shard group) is ``layout.dp_shard`` consecutive members of a DP
    group, or when that is 0 the members on one node (1 when nodes hold uneven counts);
    ``dp_inter`` links the members at the same position of each shard group.

    Args:
        n_gpus: GPUs of the fabric.
        gpus_per_node: GPUs per node.
        layout: The layout.

    Returns:
        For each axis in ``AXES``, the list of its groups (arrays of global ranks).

    Raises:
        EngineError: The layout needs more GPUs than there are, or ``ep``/``dp_shard``
            does not divide ``dp``.
    """
    _check_degrees(layout)
    if layout.world > n_gpus:
        raise EngineError(f"layout needs {layout.world} GPUs, the fabric has {n_gpus}")
    grid = np.arange(layout.world).reshape(layout.dp // layout.ep, layout.pp, layout.ep, layout.tp)
    dp_groups = _rows(grid.transpose(1, 3, 0, 2), layout.dp)
    shard = layout.dp_shard or _members_per_node(dp_groups, gpus_per_node)
    return {
        "tp": _rows(grid, layout.tp),
        "ep": _rows(grid.transpose(0, 1, 3, 2), layout.ep),
        "pp": _rows(grid.transpose(0, 2, 3, 1), layout.pp),
        "dp": dp_groups,
        "dp_intra": dp_groups.reshape(-1, shard),
        "dp_inter": dp_groups.reshape(dp_groups.shape[0], -1, shard)
        .transpose(0, 2, 1)
        .reshape(-1, dp_groups.shape[1] // shard),
    }


def _check_degrees(layout: Layout) -> None:
    for name in ("tp", "pp", "dp", "ep", "microbatches", "global_batch", "seq_len"):
        value = getattr(layout, name)
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise EngineError(f"{name} must be a positive integer (got {value!r})")
    if layout.dp % layout.ep:
        raise EngineError(f"ep {layout.ep} must divide dp {layout.dp} (EP is carved out of DP)")
    if layout.dp_shard < 0 or (layout.dp_shard and layout.dp % layout.dp_shard):
        raise EngineError(f"dp_shard {layout.dp_shard} must divide dp {layout.dp}")


def _rows(grid: npt.NDArray[Any], size: int) -> IntArray:
    """(n_groups, size) groups, one per row (iterating yields the groups)."""
    return np.ascontiguousarray(grid).reshape(-1, size).astype(np.int64)


def _members_per_node(dp_groups: list[IntArray], gpus_per_node: int) -> int:
    """DP-group members per node when every group splits evenly into per-node runs, else 1."""
    first = dp_groups[0]
    shard = int(np.sum(first // gpus_per_node == first[0] // gpus_per_node))
    if dp_groups.shape[1] % shard:
        return 1
    nodes = dp_groups.reshape(dp_groups.shape[0], -1, shard) // gpus_per_node
    return shard if bool((nodes == nodes[:, :, :1]).all()) else 1


# --- pricing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PricedOp:
    """One communication operation priced on its group."""

    op: CommOp
    """The operation as the strategy issued it."""
    ranks: tuple[int, ...]
    """Representative group it was priced on (first group of its axis)."""
    call_us: float
    """Predicted time of one call [us]."""
    algorithm: str
    """Algorithm/protocol the engine chose (``-`` for a one-rank group)."""
    exposed_us: float = 0.0
    """Part of ``time_us`` not hidden behind compute [us]."""

    @property
    def group_size(self) -> int:
        """Ranks in the group."""
        return len(self.ranks)

    @property
    def time_us(self) -> float:
        """Time per step: one call times the count [us]."""
        return self.call_us * self.op.count

    def to_json(self) -> dict[str, Any]:
        """One row of ``plan --json``'s ``operations``."""
        return {
            "strategy": self.op.strategy,
            "collective": self.op.collective,
            "group": self.op.group,
            "group_size": self.group_size,
            "size_bytes": self.op.size_bytes,
            "count": self.op.count,
            "overlappable": self.op.overlappable,
            "algorithm": self.algorithm,
            "call_us": self.call_us,
            "time_us": self.time_us,
            "exposed_us": self.exposed_us,
            "note": self.op.note,
        }


class Pricer:
    """Prices (collective, group, size) with an evaluate function, caching results.

    Args:
        fabric: The fabric.
        evaluate: ``evaluate(fabric, op, size_bytes, ranks=...)`` returning a Prediction
            (default: ``evaluate_collective`` over ``algorithms`` sharing one router).
        algorithms: Candidate collective algorithms for the default ``evaluate`` (default:
            the core ones; the service layer adds the plugins').
    """

    def __init__(
        self,
        fabric: Fabric,
        evaluate: Evaluate | None = None,
        algorithms: Sequence[CollectiveAlgorithm] | None = None,
    ) -> None:
        self.fabric = fabric
        self.evaluate = evaluate or _default_evaluate(fabric, algorithms)
        self._cache: dict[tuple[str, tuple[int, ...], float], tuple[float, str]] = {}

    def __call__(
        self, collective: str, ranks: tuple[int, ...], size_bytes: float
    ) -> tuple[float, str]:
        """(time of one call [us], algorithm) of ``collective`` on ``ranks``."""
        if len(ranks) < 2 or size_bytes <= 0:
            return 0.0, "-"
        key = (collective, ranks, float(size_bytes))
        if key not in self._cache:
            pred = self.evaluate(self.fabric, collective, [size_bytes], ranks=np.asarray(ranks))
            self._cache[key] = (float(pred.time_us[0]), str(pred.algorithm[0]))
        return self._cache[key]


def _default_evaluate(
    fabric: Fabric, algorithms: Sequence[CollectiveAlgorithm] | None = None
) -> Evaluate:
    from fabricui.engine.evaluate import evaluate_collective
    from fabricui.engine.routing import Router

    chosen = list(algorithms) if algorithms else None
    return functools.partial(evaluate_collective, algorithms=chosen, router=Router(fabric))


def price_operations(
    fabric: Fabric,
    ops: Sequence[CommOp],
    groups: Groups,
    evaluate: Evaluate | Pricer | None = None,
    overlap_us: float = 0.0,
) -> list[PricedOp]:
    """Price each operation on the first group of its axis and split off the exposed part.

    Overlappable operations share ``overlap_us`` of compute to hide behind: their exposed
    time is ``max(0, sum(their times) - overlap_us)``, split in proportion to their times.
    Non-overlappable operations are exposed in full.

    Args:
        fabric: The fabric.
        ops: Operations from the strategies.
        groups: Groups per axis (``layout_groups``).
        evaluate: ``evaluate_collective``-like function, or a ``Pricer`` to share a cache.
        overlap_us: Compute time overlappable operations can hide behind [us].

    Returns:
        The priced operations, in the order given.

    Raises:
        EngineError: An operation names an axis ``groups`` does not have.
    """
    pricer = evaluate if isinstance(evaluate, Pricer) else Pricer(fabric, evaluate)
    priced = []
    for op in ops:
        if op.group not in groups or len(groups[op.group]) == 0:
            raise EngineError(
                f"{op.strategy}: unknown process group {op.group!r} ({', '.join(AXES)})"
            )
        ranks = tuple(int(r) for r in groups[op.group][0])
        call_us, algorithm = pricer(op.collective, ranks, op.size_bytes)
        priced.append(PricedOp(op, ranks, call_us, algorithm))
    return _with_exposure(priced, overlap_us)


def _with_exposure(priced: list[PricedOp], overlap_us: float) -> list[PricedOp]:
    hidden_total = sum(p.time_us for p in priced if p.op.overlappable)
    left = max(0.0, hidden_total - max(0.0, overlap_us))
    share = left / hidden_total if hidden_total > 0 else 0.0
    return [
        dataclasses.replace(p, exposed_us=p.time_us * share if p.op.overlappable else p.time_us)
        for p in priced
    ]


# --- plans -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanReport:
    """A layout on a fabric: priced operations and the step breakdown (per GPU)."""

    topology: str
    """Topology id."""
    model: str
    """Model id."""
    layout: Layout
    """The layout (``dp_shard`` filled in)."""
    mfu: float
    """Fraction of the GPU's dense BF16 peak that compute runs at."""
    operations: tuple[PricedOp, ...]
    """Priced communication operations."""
    compute_us: float
    """Compute per step [us]."""
    bubble_us: float
    """Pipeline bubble per step [us]."""
    flops_per_token: float
    """Training FLOPs per token (``model_flops_per_token``)."""
    strategies: tuple[str, ...] = field(default=())
    """Strategies that applied to this layout."""
    memory_GB: float = 0.0
    """Estimated memory per GPU: model states plus activations [GB]."""
    memory_limit_GB: float = 0.0
    """Usable memory of the GPU (90% of its capacity) [GB]."""

    @property
    def fits(self) -> bool:
        """True when the estimated memory fits in the GPU."""
        return self.memory_GB <= self.memory_limit_GB

    @property
    def comm_us(self) -> float:
        """All communication per step, hidden or not [us]."""
        return sum(p.time_us for p in self.operations)

    @property
    def exposed_comm_us(self) -> float:
        """Communication not hidden behind compute [us]."""
        return sum(p.exposed_us for p in self.operations)

    @property
    def step_us(self) -> float:
        """Compute + exposed communication + bubble [us]."""
        return self.compute_us + self.exposed_comm_us + self.bubble_us

    @property
    def bubble_fraction(self) -> float:
        """Bubble / (compute + bubble): ``(p - 1) / (m + p - 1)``."""
        busy = self.compute_us + self.bubble_us
        return self.bubble_us / busy if busy > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The ``plan --json`` object."""
        layout = dataclasses.asdict(self.layout)
        return {
            "topology": self.topology,
            "model": self.model,
            "layout": {**layout, "world": self.layout.world},
            "strategies": list(self.strategies),
            "mfu": self.mfu,
            "flops_per_token": self.flops_per_token,
            "operations": [p.to_json() for p in self.operations],
            "compute_us": self.compute_us,
            "comm_us": self.comm_us,
            "exposed_comm_us": self.exposed_comm_us,
            "bubble_us": self.bubble_us,
            "bubble_fraction": self.bubble_fraction,
            "step_us": self.step_us,
            "memory_GB": self.memory_GB,
            "memory_limit_GB": self.memory_limit_GB,
            "fits": self.fits,
        }


#: Bytes per parameter of mixed-precision Adam: BF16 weights 2 + BF16 gradients 2 + FP32
#: master weights, momentum and variance 12 (ZeRO paper, section 3.1).
STATE_BYTES = {"weights": 2.0, "grads": 2.0, "optimizer": 12.0}
#: Activation bytes per token per layer per unit of hidden size with selective recompute of
#: attention, before tensor-parallel sharding (Korthikanti et al. 2022, "34 s b h").
ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34.0
#: Share of HBM usable by the job (allocator, CUDA context, NCCL buffers take the rest).
USABLE_MEMORY = 0.9


def memory_per_gpu_GB(model: ModelShape, layout: Layout, strategies: Iterable[str]) -> float:
    """Estimated memory per GPU: sharded model states plus in-flight activations [GB].

    Notes:
        states = params / (tp * pp) * (2 + 2 + 12) bytes, with the optimizer states divided
        by dp under ZeRO-1, optimizer + gradients under ZeRO-2, everything under FSDP (by
        the shard group under HSDP); activations = 34 * tokens * hidden * layers / (tp * pp)
        bytes per micro-batch, times the micro-batches in flight (pp under 1F1B).
    """
    names = set(strategies)
    params = model.params_B * 1e9 / (layout.tp * layout.pp)
    shard = layout.dp
    if "hsdp" in names:
        shard = max(1, layout.dp_shard or layout.dp)
    weights, grads, optim = (STATE_BYTES[k] for k in ("weights", "grads", "optimizer"))
    if names & {"fsdp", "hsdp"}:
        weights, grads, optim = weights / shard, grads / shard, optim / shard
    elif "zero2" in names:
        grads, optim = grads / shard, optim / shard
    elif "zero1" in names:
        optim = optim / shard
    states = params * (weights + grads + optim)
    sequences = layout.global_batch / max(1, layout.dp * layout.microbatches)
    tokens = sequences * layout.seq_len
    in_flight = min(layout.pp, layout.microbatches)
    activations = (
        ACTIVATION_BYTES_PER_TOKEN_HIDDEN
        * tokens
        * model.hidden
        * model.layers
        / (layout.tp * layout.pp)
        * in_flight
    )
    return (states + activations) / 1e9


def check_layout(fabric: Fabric, model: ModelShape, layout: Layout) -> None:
    """Refuse a layout the model or the fabric cannot run, with a one-line reason.

    Raises:
        EngineError: Too many GPUs, or a degree that does not divide what it splits.
    """
    _check_degrees(layout)
    if layout.world > fabric.n_gpus:
        raise EngineError(f"layout needs {layout.world} GPUs, {fabric.spec.id} has {fabric.n_gpus}")
    reasons = _shape_problems(model, layout)
    if reasons:
        raise EngineError(reasons[0])


def _shape_problems(model: ModelShape, layout: Layout) -> list[str]:
    """Why ``layout`` does not fit ``model`` (empty when it does)."""
    problems = []
    if model.heads % layout.tp:
        problems.append(
            f"tp {layout.tp} does not divide {model.id}'s {model.heads} attention heads"
        )
    if model.layers % layout.pp:
        problems.append(f"pp {layout.pp} does not divide {model.id}'s {model.layers} layers")
    if layout.ep > 1 and model.experts == 0:
        problems.append(f"{model.id} is dense (no experts): ep must be 1 (got {layout.ep})")
    elif layout.ep > 1 and model.experts % layout.ep:
        problems.append(f"ep {layout.ep} does not divide {model.id}'s {model.experts} experts")
    per_step = layout.dp * layout.microbatches
    if layout.global_batch % per_step:
        problems.append(
            f"global batch {layout.global_batch} is not a multiple of dp x microbatches "
            f"= {per_step}"
        )
    return problems


def plan(
    fabric: Fabric,
    model: ModelShape,
    layout: Layout,
    strategies: Iterable[Strategy],
    mfu: float = DEFAULT_MFU,
    evaluate: Evaluate | Pricer | None = None,
) -> PlanReport:
    """Map a layout onto the fabric and price one training step (per GPU).

    Strategies turn (model, layout) into operations; each is priced with the collective
    engine on the first group of its axis (``layout_groups``, Megatron order) and counted
    as many times per step as the strategy says. The step:

    - compute: ``global_batch * seq * model_flops_per_token / world`` FLOPs at ``mfu``
      times the GPU's dense BF16 peak;
    - exposed communication: overlappable operations share the step's compute to hide
      behind (optimistic and phase-blind); the excess and every non-overlappable
      operation are exposed;
    - bubble (PP): ``compute * (p - 1) / m``, i.e. ``(p - 1) / (m + p - 1)`` of
      compute + bubble;

    ``step = compute + exposed communication + bubble``.

    Args:
        fabric: The fabric (the layout uses its first ``layout.world`` GPUs).
        model: The model shape.
        layout: The layout; ``dp_shard`` 0 becomes the DP ranks that share a node.
        strategies: Strategies in use; those not ``applicable`` to the layout are skipped.
        mfu: Fraction of the GPU's dense BF16 peak compute runs at (0-1].
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.

    Returns:
        The plan report.

    Raises:
        EngineError: Invalid layout or MFU.
    """
    _check_mfu(mfu)
    check_layout(fabric, model, layout)
    groups = layout_groups(fabric.n_gpus, fabric.gpus_per_node, layout)
    layout = dataclasses.replace(layout, dp_shard=len(groups["dp_intra"][0]))
    used = [s for s in strategies if s.applicable(model, layout)]
    ops = [op for s in used for op in s.operations(model, layout)]
    compute_us = compute_time_us(fabric, model, layout, mfu)
    priced = price_operations(fabric, ops, groups, evaluate, overlap_us=compute_us)
    return PlanReport(
        topology=fabric.spec.id,
        model=model.id,
        layout=layout,
        mfu=mfu,
        operations=tuple(priced),
        compute_us=compute_us,
        bubble_us=pipeline_bubble_us(compute_us, layout.pp, layout.microbatches),
        flops_per_token=model_flops_per_token(model, layout.seq_len),
        strategies=tuple(s.name for s in used),
        memory_GB=memory_per_gpu_GB(model, layout, [s.name for s in used]),
        memory_limit_GB=fabric.gpu.memory_GB * USABLE_MEMORY,
    )


def _check_mfu(mfu: float) -> None:
    if not 0.0 < mfu <= 1.0:
        raise EngineError(f"mfu must be in (0, 1] (got {mfu})")


# --- search ----------------------------------------------------------------------------------


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def valid_layouts(n_gpus: int, model: ModelShape, global_batch: int, seq_len: int) -> list[Layout]:
    """Every (tp, pp, dp, ep, microbatches) with ``tp * pp * dp == n_gpus`` that fits.

    tp divides the attention heads, pp the layers, ep both dp and the experts (1 for a
    dense model), dp x microbatches the global batch; pipelines (pp > 1) need at least
    ``pp`` micro-batches (1F1B).
    """
    layouts = []
    for tp in _divisors(n_gpus):
        for pp in _divisors(n_gpus // tp):
            dp = n_gpus // (tp * pp)
            if model.heads % tp or model.layers % pp or global_batch % dp:
                continue
            eps = [e for e in _divisors(dp) if model.experts % e == 0] if model.experts else [1]
            for ep in eps:
                for m in _divisors(global_batch // dp):
                    if pp == 1 or m >= pp:
                        layouts.append(Layout(tp, pp, dp, ep, m, global_batch, seq_len))
    return layouts


def search_layouts(
    fabric: Fabric,
    model: ModelShape,
    strategies: Iterable[Strategy],
    global_batch: int,
    seq_len: int,
    top: int = 10,
    mfu: float = DEFAULT_MFU,
    evaluate: Evaluate | Pricer | None = None,
) -> list[PlanReport]:
    """Plan every valid layout on all the fabric's GPUs; the ``top`` fastest that fit in
    memory (``memory_per_gpu_GB``).

    Args:
        fabric: The fabric.
        model: The model shape.
        strategies: Strategies in use (as for ``plan``).
        global_batch: Sequences per optimizer step.
        seq_len: Tokens per sequence.
        top: How many plans to return.
        mfu: Fraction of peak compute runs at.
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.

    Returns:
        Plans sorted by step time (ties: smaller tp, pp, ep, microbatches first).

    Raises:
        EngineError: Bad batch, sequence or ``top``, or no valid layout.
    """
    _check_mfu(mfu)
    for name, value in (("global batch", global_batch), ("seq", seq_len), ("top", top)):
        if value < 1:
            raise EngineError(f"{name} must be at least 1 (got {value})")
    layouts = valid_layouts(fabric.n_gpus, model, global_batch, seq_len)
    if not layouts:
        raise EngineError(
            f"no valid layout of {model.id} on {fabric.n_gpus} GPUs with global batch "
            f"{global_batch}"
        )
    pricer = evaluate if isinstance(evaluate, Pricer) else Pricer(fabric, evaluate)
    chosen = list(strategies)
    plans = [plan(fabric, model, layout, chosen, mfu, pricer) for layout in layouts]
    fitting = [p for p in plans if p.fits]
    if not fitting:
        smallest = min(plans, key=lambda p: p.memory_GB)
        raise EngineError(
            f"no layout of {model.id} fits in {fabric.gpu.memory_GB:g} GB per GPU on "
            f"{fabric.n_gpus} GPUs (smallest needs {smallest.memory_GB:.0f} GB); add GPUs or "
            "use --dp-strategy fsdp"
        )
    plans = fitting
    plans.sort(
        key=lambda p: (p.step_us, p.layout.tp, p.layout.pp, p.layout.ep, p.layout.microbatches)
    )
    return plans[:top]


# --- decision table --------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionRow:
    """One strategy's communication per step with its group inside one node and across nodes."""

    name: str
    """Strategy name."""
    comm_us_intra: float | None
    """Communication per step, group within one node [us] (None: not possible)."""
    comm_us_inter: float | None
    """Communication per step, group spanning nodes [us] (None: one node only)."""
    exposed_us_intra: float | None
    """Part of ``comm_us_intra`` not hidden behind compute [us]."""
    exposed_us_inter: float | None
    """Part of ``comm_us_inter`` not hidden behind compute [us]."""
    step_us: float
    """Compute per step the communication is compared with [us]."""
    note: str = ""
    """How the row was built when it needed an assumption."""

    @property
    def intra_ok(self) -> bool | None:
        """Exposed intra-node communication is within ``OK_EXPOSED_FRACTION`` of compute."""
        return _ok(self.exposed_us_intra, self.step_us)

    @property
    def inter_ok(self) -> bool | None:
        """Exposed cross-node communication is within ``OK_EXPOSED_FRACTION`` of compute."""
        return _ok(self.exposed_us_inter, self.step_us)

    @property
    def intra_verdict(self) -> str:
        """``yes``, ``marginal``, ``no`` or ``-`` (not computed) for the intra-node cell."""
        return verdict(self.exposed_us_intra, self.step_us)

    @property
    def inter_verdict(self) -> str:
        """``yes``, ``marginal``, ``no`` or ``-`` (one node) for the cross-node cell."""
        return verdict(self.exposed_us_inter, self.step_us)

    def to_json(self) -> dict[str, Any]:
        """One entry of ``strategies --json``'s ``strategies``."""
        return {
            "name": self.name,
            "comm_us_intra": self.comm_us_intra,
            "comm_us_inter": self.comm_us_inter,
            "exposed_us_intra": self.exposed_us_intra,
            "exposed_us_inter": self.exposed_us_inter,
            "intra_ok": self.intra_ok,
            "inter_ok": self.inter_ok,
            "intra_verdict": self.intra_verdict,
            "inter_verdict": self.inter_verdict,
            "note": self.note,
        }


def _ok(exposed_us: float | None, step_us: float) -> bool | None:
    return None if exposed_us is None else exposed_us <= OK_EXPOSED_FRACTION * step_us


def verdict(exposed_us: float | None, step_us: float) -> str:
    """``yes`` (exposed <= 10 % of compute), ``marginal`` (<= 25 %), ``no``, or ``-``."""
    if exposed_us is None:
        return "-"
    if exposed_us <= GOOD_EXPOSED_FRACTION * step_us:
        return "yes"
    return "marginal" if exposed_us <= OK_EXPOSED_FRACTION * step_us else "no"


@dataclass(frozen=True)
class DecisionTable:
    """The seeds' decision table, computed on a fabric for one model."""

    topology: str
    """Topology id."""
    model: str
    """Model id."""
    step_us: float
    """Compute per GPU of the reference step [us]."""
    degree: int
    """Size of each strategy's group (``table_degree``)."""
    seq_len: int
    """Tokens per micro-batch of the reference step."""
    microbatches: int
    """Micro-batches per GPU of the reference step."""
    mfu: float
    """Fraction of peak compute runs at."""
    rows: tuple[DecisionRow, ...]
    """One row per strategy (``TABLE_STRATEGIES`` order)."""

    def to_json(self) -> dict[str, Any]:
        """The ``strategies --json`` object."""
        return {
            "model": self.model,
            "topology": self.topology,
            "step_us": self.step_us,
            "degree": self.degree,
            "seq_len": self.seq_len,
            "microbatches": self.microbatches,
            "mfu": self.mfu,
            "ok_exposed_fraction": OK_EXPOSED_FRACTION,
            "strategies": [row.to_json() for row in self.rows],
        }


@dataclass(frozen=True)
class _Case:
    """One strategy's reference layout and its groups inside a node and across nodes."""

    layout: Layout
    intra: Groups | None
    inter: Groups | None
    model: ModelShape
    note: str = ""


def decision_table(
    fabric: Fabric,
    model: ModelShape,
    strategies: Iterable[Strategy],
    seq_len: int = TABLE_SEQ,
    microbatches: int = TABLE_MICROBATCHES,
    mfu: float = DEFAULT_MFU,
    evaluate: Evaluate | Pricer | None = None,
    degree: int | None = None,
) -> DecisionTable:
    """For ddp, fsdp, hsdp, tp, pp and ep: communication per step inside a node vs across.

    Reference step: each strategy alone at degree ``d`` (default ``table_degree``: GPUs
    per node, at most 8 and at most the node count), the ``d`` GPUs running
    ``d * microbatches`` sequences of ``seq_len`` tokens, one sequence per micro-batch.
    Every GPU then computes ``microbatches * seq_len`` tokens' worth of the whole model:
    ``step_us``, the same line for every row (the PP bubble is left out; it is not
    communication). *intra*: the group is GPUs ``0..d-1`` of node 0; *inter*: GPU 0 of each
    of ``d`` nodes, so every member talks through its own NIC. HSDP shards over GPUs
    ``0..d-1`` of a node in both cases; its *inter* case adds a replica on every node. EP
    on a dense model is priced as if every MLP were a ``d``-expert top-2 MoE layer (same
    compute), as the row's note says.

    Rule: a cell is OK when the exposed communication (overlappable operations hidden
    behind the step's compute, as in ``plan``) is at most ``OK_EXPOSED_FRACTION`` (25 %) of
    the compute, i.e. the strategy keeps at least 80 % of compute-bound speed; ``verdict``
    calls it ``marginal`` above 10 %. The verdicts depend on tokens per micro-batch: FSDP's
    per-layer gathers cost the same whatever the batch, so longer micro-batches hide them
    (llama3-70b on dgx-h100-pod: cross-node FSDP is 1.5x compute at 4096 tokens, 0.72x at
    8192).

    Args:
        fabric: The fabric.
        model: The model shape.
        strategies: Available strategies; the table uses those named in ``TABLE_STRATEGIES``.
        seq_len: Tokens per micro-batch.
        microbatches: Micro-batches per GPU per step.
        mfu: Fraction of peak compute runs at.
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.
        degree: Group size (2 up to GPUs per node, and up to the node count when there
            is more than one node).

    Raises:
        EngineError: A needed strategy is missing, or the degree does not fit the fabric.
    """
    _check_mfu(mfu)
    if seq_len < 1 or microbatches < 1:
        raise EngineError(
            f"seq and microbatches must be at least 1 (got {seq_len}, {microbatches})"
        )
    degree = table_degree(fabric) if degree is None else degree
    _check_table_degree(fabric, degree)
    by_name = {s.name: s for s in strategies}
    missing = [name for name in TABLE_STRATEGIES if name not in by_name]
    if missing:
        raise EngineError(f"strategies not registered: {', '.join(missing)}")
    pricer = evaluate if isinstance(evaluate, Pricer) else Pricer(fabric, evaluate)
    base = Layout(microbatches=microbatches, seq_len=seq_len)
    rows = [
        _decision_row(fabric, by_name[name], _case(fabric, model, name, base, degree), pricer, mfu)
        for name in TABLE_STRATEGIES
    ]
    return DecisionTable(
        topology=fabric.spec.id,
        model=model.id,
        step_us=rows[0].step_us,
        degree=degree,
        seq_len=seq_len,
        microbatches=microbatches,
        mfu=mfu,
        rows=tuple(rows),
    )


def _case(fabric: Fabric, model: ModelShape, name: str, base: Layout, degree: int) -> _Case:
    """The reference layout of strategy ``name`` and its intra/inter groups."""
    if name == "hsdp":
        return _hsdp_case(fabric, model, base, degree)
    m = base.microbatches
    if name in ("tp", "pp"):
        layout = dataclasses.replace(
            base, **{name: degree}, microbatches=degree * m, global_batch=degree * m
        )
    else:
        ep = degree if name == "ep" else 1
        layout = dataclasses.replace(base, dp=degree, ep=ep, global_batch=degree * m)
    axis = "dp" if name in ("ddp", "fsdp") else name
    note, shape = "", model
    if name == "ep" and model.experts == 0:
        shape = _as_moe(model, degree)
        note = (
            f"{model.id} is dense: priced as if every MLP were a {degree}-expert top-"
            f"{DENSE_EP_TOP_K} MoE layer"
        )
    inter = _one_per_node(fabric, degree)
    return _Case(
        layout=layout,
        intra={axis: [np.arange(degree)]},
        inter=None if inter is None else {axis: [inter]},
        model=shape,
        note=note,
    )


def _hsdp_case(fabric: Fabric, model: ModelShape, base: Layout, degree: int) -> _Case:
    """HSDP: shard over ``degree`` GPUs of a node; *inter* adds one replica per node."""
    nodes, m = fabric.nodes, base.microbatches
    shard = np.arange(degree)
    intra = {"dp_intra": [shard], "dp_inter": [np.array([0])]}
    layout = dataclasses.replace(base, dp=degree, dp_shard=degree, global_batch=degree * m)
    if nodes < 2:
        return _Case(layout, intra, None, model)
    inter = {"dp_intra": [shard], "dp_inter": [np.arange(nodes) * fabric.gpus_per_node]}
    layout = dataclasses.replace(layout, dp=degree * nodes, global_batch=degree * nodes * m)
    return _Case(layout, intra, inter, model, "inter: shard in a node, replicate across nodes")


def table_degree(fabric: Fabric) -> int:
    """Default group size of the decision table: GPUs per node, at most 8 and, with more
    than one node, at most the node count (the cross-node group takes one GPU per node)."""
    degree = min(fabric.gpus_per_node, TABLE_MAX_DEGREE)
    return degree if fabric.nodes < 2 else min(degree, fabric.nodes)


def _check_table_degree(fabric: Fabric, degree: int) -> None:
    if fabric.gpus_per_node < 2:
        raise EngineError(f"{fabric.spec.id} has one GPU per node: no intra-node group to compare")
    top = fabric.gpus_per_node if fabric.nodes < 2 else min(fabric.gpus_per_node, fabric.nodes)
    if not 2 <= degree <= top:
        raise EngineError(
            f"degree must be 2..{top} on {fabric.spec.id} ({fabric.nodes} nodes x "
            f"{fabric.gpus_per_node} GPUs; got {degree})"
        )


def _one_per_node(fabric: Fabric, degree: int) -> IntArray | None:
    """GPU 0 of the first ``degree`` nodes, or None on one node."""
    if fabric.nodes < 2:
        return None
    return np.arange(degree, dtype=np.int64) * fabric.gpus_per_node


def _as_moe(model: ModelShape, experts: int) -> ModelShape:
    return dataclasses.replace(
        model,
        experts=experts,
        experts_per_token=DENSE_EP_TOP_K,
        moe_layers=model.layers,
        active_params_B=model.params_B,
    )


def _decision_row(
    fabric: Fabric, strategy: Strategy, case: _Case, pricer: Pricer, mfu: float
) -> DecisionRow:
    step_us = compute_time_us(fabric, case.model, case.layout, mfu)
    intra = _priced_case(fabric, strategy, case, case.intra, pricer, step_us)
    inter = _priced_case(fabric, strategy, case, case.inter, pricer, step_us)
    return DecisionRow(
        name=strategy.name,
        comm_us_intra=None if intra is None else intra[0],
        comm_us_inter=None if inter is None else inter[0],
        exposed_us_intra=None if intra is None else intra[1],
        exposed_us_inter=None if inter is None else inter[1],
        step_us=step_us,
        note=case.note,
    )


def _priced_case(
    fabric: Fabric,
    strategy: Strategy,
    case: _Case,
    groups: Groups | None,
    pricer: Pricer,
    step_us: float,
) -> tuple[float, float] | None:
    """(communication, exposed communication) per step [us], or None without groups."""
    if groups is None:
        return None
    layout = case.layout
    if strategy.name == "hsdp" and len(groups["dp_inter"][0]) == 1:
        layout = dataclasses.replace(layout, dp=layout.dp_shard)
    ops = strategy.operations(case.model, layout)
    priced = price_operations(fabric, ops, groups, pricer, overlap_us=step_us)
    return sum(p.time_us for p in priced), sum(p.exposed_us for p in priced)
