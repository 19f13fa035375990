"""One training step of a layout on a fabric: compute, exposed communication, bubble,
optimizer, memory, and every assumption made.

The step (per GPU of the slowest pipeline stage):

- each stage's micro-batch time ``tau_i``: its layers' forward and backward (``layer.py``),
  the embedding on the first stage and the output layer and loss on the last, the
  recomputation the recipe asks for, the exposed per-layer communication (TP, CP, EP,
  FSDP gathers) and the pipeline sends (``comm.py``);
- the pipeline: ``m * max(tau) + (sum(tau) - max(tau)) / v`` (``schedule.py``); the part
  beyond ``m * max(tau)`` is the bubble;
- then the exposed once-per-step communication (gradient reduction, parameter gathers)
  and the optimizer step (Adam reads and writes each local parameter's states once,
  memory-bound).

With ``Recipe.mfu`` set the compute is instead ``step FLOPs / world`` at that fraction of
the peak, the pipeline even and the overlappable communication hidden behind the whole
compute (the model before the kernel model; kept for ``--mfu``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.training import comm, deepep, schedule, userbuffers
from fabricui.engine.training.device import Device, make_device
from fabricui.engine.training.flops import model_flops_per_token
from fabricui.engine.training.groups import check_degrees, layout_groups
from fabricui.engine.training.kernels import gemm_time_s, linear_times_s
from fabricui.engine.training.layer import (
    Kernels,
    LayerCost,
    embedding_cost,
    layer_cost,
    output_layer_cost,
)
from fabricui.engine.training.legacy import compute_time_us, legacy_flops_per_token
from fabricui.engine.training.memory import (
    MemoryReport,
    activation_bytes,
    adam_step_bytes,
    expert_shards,
    grad_accumulation_bytes,
    held_shards,
    logits_bytes,
    ring_attention_bytes,
    stage_expert_params,
    stage_params,
    states_bytes,
    sync_deferred,
)
from fabricui.engine.training.pricing import (
    PricedOp,
    PricerLike,
    as_pricer,
    price_calls,
    with_shared_window,
)
from fabricui.engine.training.recipe import Recipe, era_recipe
from fabricui.engine.training.shape import Geometry, geometry
from fabricui.engine.types import Layout, StateShards, Strategy
from fabricui.errors import EngineError

if TYPE_CHECKING:
    import numpy.typing as npt

    from fabricui.fabric.fabric import Fabric
    from fabricui.model import ModelShape

#: Share of HBM usable by the job (allocator, CUDA context, NCCL buffers take the rest).
USABLE_MEMORY = 0.9


@dataclass(frozen=True)
class PlanReport:
    """A layout on a fabric: priced operations and the step breakdown (per GPU of the
    slowest stage). Times in microseconds."""

    topology: str
    """Topology id."""
    model: str
    """Model id."""
    layout: Layout
    """The layout (``dp_shard`` filled in)."""
    mfu: float
    """Model FLOPs utilisation achieved: model FLOPs per GPU per second over the peak."""
    operations: tuple[PricedOp, ...]
    """Priced communication operations."""
    compute_us: float
    """Forward and backward compute per step [us]."""
    bubble_us: float
    """Pipeline bubble per step [us]."""
    flops_per_token: float
    """Model FLOPs per token (causal attention; ``flops.model_flops_per_token``)."""
    strategies: tuple[str, ...] = field(default=())
    """Strategies that applied to this layout."""
    memory_GB: float = 0.0
    """Estimated memory of the most loaded GPU [GB]."""
    memory_limit_GB: float = 0.0
    """Usable memory of the GPU (90% of its capacity) [GB]."""
    recompute_us: float = 0.0
    """Recomputed forward work per step [us]."""
    optimizer_us: float = 0.0
    """Optimizer step [us]."""
    exposed_us: dict[str, float] = field(default_factory=dict)
    """Exposed communication per category (``tp``, ``cp``, ``pp``, ``dp``, ``ep``) [us]."""
    tflops_per_gpu: float = 0.0
    """Model TFLOP/s per GPU achieved."""
    peak_tflops: float = 0.0
    """The GPU's dense peak at the GEMM precision [TFLOP/s]."""
    memory: MemoryReport | None = None
    """Memory breakdown of the most loaded GPU."""
    recipe: Recipe = field(default_factory=Recipe)
    """Recompute, precision, attention kernel and overlaps used."""
    assumptions: tuple[str, ...] = field(default=())
    """Everything assumed where the request left a setting unstated."""
    stage_layers: tuple[int, ...] = field(default=())
    """Transformer layers of each pipeline stage."""
    critical_stage: int = 0
    """The slowest stage (its GPU is the one reported)."""
    gpus_per_node: int = 0
    """GPUs per node (host) of the fabric."""
    gpus_per_domain: int = 0
    """GPUs of the fabric's NVLink (scale-up) domain: the node's, or an NVL72 rack's."""
    compute_mfu: float | None = None
    """The fixed MFU compute ran at (``--mfu``), or None for the kernel model."""

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
        """Compute + recompute + exposed communication + bubble + optimizer [us]."""
        return (
            self.compute_us
            + self.recompute_us
            + self.exposed_comm_us
            + self.bubble_us
            + self.optimizer_us
        )

    @property
    def bubble_fraction(self) -> float:
        """Bubble / (compute + recompute + bubble), the pipeline's idle share:
        ``(p - 1) / (v m + p - 1)`` for even stages without communication
        (``schedule.bubble_fraction``). Not a share of the step: see
        ``bubble_fraction_of_step``."""
        busy = self.compute_us + self.recompute_us + self.bubble_us
        return self.bubble_us / busy if busy > 0 else 0.0

    @property
    def bubble_fraction_of_step(self) -> float:
        """Bubble / step, the share every other part of ``breakdown`` is given as."""
        return self.bubble_us / self.step_us if self.step_us > 0 else 0.0

    def breakdown(self) -> dict[str, float]:
        """The step's parts [us]: compute, recompute, exposed TP/CP/PP/DP/EP, bubble,
        optimizer (they add up to ``step_us``)."""
        parts = {"compute": self.compute_us, "recompute": self.recompute_us}
        exposed = dict(self.exposed_us)
        for cat in comm.CATEGORIES:
            parts[f"{cat}_exposed"] = exposed.pop(cat, 0.0)
        for cat, value in exposed.items():
            parts[f"{cat}_exposed"] = value
        parts["bubble"] = self.bubble_us
        parts["optimizer"] = self.optimizer_us
        return parts

    def reasons(self) -> list[str]:
        """Why this layout is fast (or what holds it back), short phrases for rankings."""
        lay = self.layout
        out = []
        if lay.tp > 1:
            reach = self._reach(lay.tp)
            out.append(f"TP{lay.tp} {reach or 'inside the NVLink domain'}")
        if lay.cp > 1:
            reach = self._reach(lay.tp * lay.cp)
            out.append(f"CP{lay.cp} ring {reach}" if reach else f"CP{lay.cp} in the NVLink domain")
        if lay.pp > 1:  # a share of the step, as the exposed communication beside it
            out.append(f"bubble {self.bubble_fraction_of_step:.0%}")
        exposed = self.exposed_comm_us / self.step_us if self.step_us else 0.0
        out.append(f"exposed comm {exposed:.0%}")
        sharding = [s for s in self.strategies if s in ("zero1", "zero2", "fsdp", "hsdp")]
        if sharding:
            out.append(f"{sharding[0]} fits {self.memory_GB:.0f}/{self.memory_limit_GB:.0f} GB")
        if self.recipe.recompute != "none":
            out.append(f"{self.recipe.recompute} recompute")
        return out

    def _reach(self, span: int) -> str:
        """Where groups of ``span`` consecutive ranks reach beyond one scale-up domain:
        empty when each sits inside one; across domains (``nodes`` where a domain is one
        host); or some of them across, when the span fits a domain but does not divide it
        (16 in a 72-GPU rack: ranks 64-79 straddle two)."""
        domain = self.gpus_per_domain or self.gpus_per_node
        across = "across NVLink domains" if domain > self.gpus_per_node > 0 else "across nodes"
        if not domain or span > domain:
            return across
        return "" if domain % span == 0 else f"(some groups {across})"

    def to_json(self) -> dict[str, Any]:
        """The ``plan --json`` object."""
        layout = dataclasses.asdict(self.layout)
        return {
            "topology": self.topology,
            "model": self.model,
            "layout": {**layout, "world": self.layout.world, "expert_tp": self.layout.expert_tp},
            "strategies": list(self.strategies),
            "recipe": {
                **dataclasses.asdict(self.recipe),
                "attention_kernel": (
                    self.recipe.attention_kernel.id if self.recipe.attention_kernel else None
                ),
            },
            "mfu": self.mfu,
            "compute_mfu": self.compute_mfu,
            "tflops_per_gpu": self.tflops_per_gpu,
            "peak_tflops": self.peak_tflops,
            "flops_per_token": self.flops_per_token,
            "operations": [p.to_json() for p in self.operations],
            "compute_us": self.compute_us,
            "recompute_us": self.recompute_us,
            "comm_us": self.comm_us,
            "exposed_comm_us": self.exposed_comm_us,
            "exposed_us": dict(self.exposed_us),
            "bubble_us": self.bubble_us,
            "bubble_fraction": self.bubble_fraction,
            "bubble_fraction_of_step": self.bubble_fraction_of_step,
            "optimizer_us": self.optimizer_us,
            "step_us": self.step_us,
            "step_s": self.step_us * 1e-6,
            "breakdown_us": self.breakdown(),
            "stage_layers": list(self.stage_layers),
            "critical_stage": self.critical_stage,
            "memory_GB": self.memory_GB,
            "memory_limit_GB": self.memory_limit_GB,
            "memory": None if self.memory is None else self.memory.to_json(),
            "fits": self.fits,
            "reasons": self.reasons(),
            "assumptions": list(self.assumptions),
        }


def check_layout(
    fabric: Fabric, model: ModelShape, layout: Layout, n_gpus: int | None = None
) -> None:
    """Refuse a layout the model or the fabric (or the job's ``n_gpus`` of it) cannot run,
    with a one-line reason.

    Raises:
        EngineError: Too many GPUs, or a degree that does not fit what it splits.
    """
    check_degrees(layout)
    n = fabric.n_gpus if n_gpus is None else n_gpus
    if layout.world > n:
        where = fabric.spec.id if n_gpus is None else f"the job (on {fabric.spec.id})"
        raise EngineError(f"layout needs {layout.world} GPUs, {where} has {n}")
    problems = shape_problems(model, layout)
    if problems:
        raise EngineError(problems[0])


def shape_problems(model: ModelShape, layout: Layout) -> list[str]:
    """Why ``layout`` does not fit ``model`` (empty when it does)."""
    problems = []
    if model.heads % layout.tp:
        problems.append(
            f"tp {layout.tp} does not divide {model.id}'s {model.heads} attention heads"
        )
    if layout.pp > model.layers:
        problems.append(f"pp {layout.pp} exceeds {model.id}'s {model.layers} layers")
    elif layout.vpp > 1 and layout.pp * layout.vpp > model.layers:
        problems.append(
            f"pp {layout.pp} x vpp {layout.vpp} exceeds {model.id}'s {model.layers} layers"
        )
    if layout.vpp > 1 and layout.pp == 1:
        problems.append(f"vpp {layout.vpp} needs a pipeline (pp > 1)")
    elif layout.vpp > 1 and layout.microbatches < layout.pp:
        problems.append(
            f"interleaving (vpp {layout.vpp}) needs at least pp = {layout.pp} micro-batches "
            f"(got {layout.microbatches}), as Megatron-Core's schedule does"
        )
    if layout.seq_len % layout.cp:
        problems.append(f"cp {layout.cp} does not divide the sequence of {layout.seq_len} tokens")
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


def sharding(strategies: Iterable[Strategy], model: ModelShape, layout: Layout) -> StateShards:
    """The most sharded division of each state any of the strategies applies."""
    weights = grads = optimizer = 1
    for strategy in strategies:
        shards = strategy.state_shards(model, layout)
        weights = max(weights, shards.weights)
        grads = max(grads, shards.grads)
        optimizer = max(optimizer, shards.optimizer)
    return StateShards(weights, grads, optimizer)


def average_layer(
    device: Device,
    geo: Geometry,
    layout: Layout,
    sequence_parallel: bool,
    attention: str,
    kernels: Kernels | None = None,
    imbalance: float = 1.0,
    moe_only: bool = False,
) -> LayerCost:
    """The mean layer of the model (dense and MoE, windowed and full attention mixed in
    their proportions) for one micro-batch; ``moe_only``: the mean MoE layer (windowed and
    full attention mixed)."""
    parts = []
    moe_share = geo.moe_layers / geo.layers
    win_share = geo.window_layers / geo.layers
    for moe, m_share in ((False, 1 - moe_share), (True, moe_share)):
        if moe_only:
            m_share = 1.0 if moe else 0.0
        for windowed, w_share in ((False, 1 - win_share), (True, win_share)):
            weight = m_share * w_share
            if weight <= 0:
                continue
            cost = layer_cost(
                device,
                geo,
                layout.tp,
                layout.cp,
                layout.ep,
                layout.micro_batch,
                layout.seq_len,
                1.0 if sequence_parallel else 0.0,
                attention,
                moe=moe,
                windowed=windowed,
                kernels=kernels,
                imbalance=imbalance,
                etp=layout.expert_tp,
            )
            parts.append((weight, cost))
    return _mix(parts)


def with_software(layout: Layout, recipe: Recipe) -> Layout:
    """The layout with what the framework decides about its communication: gradient
    width and buckets, FSDP's resharding, reduce width and sync under PP, MoE dispatch and
    imbalance, context parallelism's attention."""
    return dataclasses.replace(
        layout,
        grad_reduce_bytes=recipe.grad_reduce_bytes,
        bucket_params=recipe.bucket_params,
        fsdp_reshard=recipe.fsdp_reshard,
        fsdp_reduce_bytes=recipe.fsdp_reduce_bytes,
        pp_defers_fsdp_sync=recipe.pp_defers_fsdp_sync,
        moe_dispatch=recipe.moe_dispatch,
        moe_imbalance=recipe.moe_imbalance,
        cp_attention=recipe.cp_attention,
    )


def ranks_per_domain(group: npt.NDArray[np.int64], gpus_per_domain: int) -> int:
    """Members of ``group`` in the scale-up domain of its first member."""
    members = np.asarray(group)
    if members.size == 0 or gpus_per_domain <= 0:
        return 0
    return int(np.sum(members // gpus_per_domain == members[0] // gpus_per_domain))


def _mix(parts: Sequence[tuple[float, LayerCost]]) -> LayerCost:
    names = [f.name for f in dataclasses.fields(LayerCost)]
    values: dict[str, Any] = {
        n: sum(w * np.asarray(getattr(c, n), dtype=np.float64) for w, c in parts) for n in names
    }
    return LayerCost(**values)


def _f(x: Any) -> float:
    return float(np.asarray(x))


def plan(
    fabric: Fabric,
    model: ModelShape,
    layout: Layout,
    strategies: Iterable[Strategy],
    mfu: float | None = None,
    evaluate: PricerLike = None,
    recipe: Recipe | None = None,
    assumptions: Sequence[str] = (),
    ranks: npt.NDArray[np.int64] | None = None,
) -> PlanReport:
    """Map a layout onto the fabric and price one training step (module docstring).

    Args:
        fabric: The fabric (the layout uses its first ``layout.world`` GPUs, or of
            ``ranks``).
        model: The model shape.
        layout: The layout; ``dp_shard`` 0 becomes the DP ranks that share a node.
        strategies: Strategies in use; those not ``applicable`` to the layout are skipped.
            TP with sequence parallelism (``tp-sp``) among them means SP.
        mfu: Legacy: compute at this fraction of the dense peak (overrides ``recipe.mfu``).
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.
        recipe: Recompute, precision, attention kernel, overlaps (default: the defaults of
            the GPU generation's software, ``recipe.era_recipe``).
        assumptions: What the caller already assumed (carried into the report).
        ranks: The GPUs a job holds (job rank i is GPU ``ranks[i]``, whole hosts in the
            job's order), None: the fabric's GPUs in order.

    Returns:
        The plan report.

    Raises:
        EngineError: Invalid layout, recipe or MFU.
    """
    recipe = recipe or era_recipe(fabric.gpu.arch)
    if mfu is not None:
        recipe = dataclasses.replace(recipe, mfu=mfu)
    layout, groups = _place(fabric, model, layout, recipe, ranks)
    used = [s for s in strategies if s.applicable(model, layout)]
    names = [s.name for s in used]
    ops = [op for s in used for op in s.operations(model, layout)]
    pricer = as_pricer(fabric, evaluate)
    priced = price_calls(fabric, ops, groups, pricer)
    if layout.moe_dispatch == "deepep":  # DeepEP's kernels across nodes, not NCCL's
        priced = deepep.on_rdma(priced, pricer.group)
    priced = comm.with_recompute(priced, recipe)
    geo = geometry(model)
    device, device_notes = make_device(
        fabric.gpu,
        recipe.precision,
        recipe.attention_kernel,
        recipe.power_W,
        recipe.compute_efficiency,
        recipe.fp8_attention_recipe,
        windowed=geo.window_layers > 0,
    )
    notes = [*assumptions, *device_notes]
    sp = "tp-sp" in names
    stages = schedule.stage_layers(model.layers, layout.pp)
    if recipe.mfu is not None:
        return _legacy_plan(fabric, model, layout, recipe, used, priced, geo, device, stages, notes)
    shards = sharding(used, model, layout)
    notes += _deferral_notes(recipe, layout, shards)
    work = _stage_work(
        device, geo, layout, recipe, stages, sp, _accumulated(recipe, layout, shards)
    )
    m, p = layout.microbatches, layout.pp
    exposure = comm.expose(
        priced,
        recipe,
        model.layers / p,
        m,
        _windows(
            work,
            geo,
            device,
            layout.cp,
            _tp_fused(device, geo, layout, recipe),
            _tp_userbuffers(device, geo, layout, recipe, sp),
            schedule.unpaired_share(p, m),
            recipe.moe_dispatch,
            fabric.gpus_per_domain > fabric.gpus_per_node,
        ),
        _tp_in_domain(fabric, groups),
    )
    pipe = _pipeline(work, exposure, stages, layout)
    crit = pipe.critical_stage
    exposed_us = _exposed_us(exposure, stages[crit], m)
    memory, updated_params = _memory(geo, model, layout, recipe, used, shards, stages, sp)
    adam_bytes = adam_step_bytes(recipe.optimizer_bytes) + recipe.grad_bytes
    optimizer_s = updated_params * adam_bytes / device.hbm_Bps
    operations = comm.spread(comm.on_stage(priced, stages[crit] * p / model.layers), exposed_us)
    step_s = pipe.pipeline_s + sum(exposure.per_step_s.values()) + optimizer_s
    flops_token = model_flops_per_token(geo, layout.seq_len)
    tflops, mfu = _throughput(flops_token, layout, step_s, device)
    return PlanReport(
        topology=fabric.spec.id,
        model=model.id,
        layout=layout,
        mfu=mfu,
        operations=tuple(operations),
        compute_us=m * work.compute_s[crit] * 1e6,
        bubble_us=pipe.bubble_s * 1e6,
        flops_per_token=flops_token,
        strategies=tuple(names),
        memory_GB=memory.total_GB,
        memory_limit_GB=fabric.gpu.memory_GB * USABLE_MEMORY,
        recompute_us=m * work.recompute_s[crit] * 1e6,
        optimizer_us=optimizer_s * 1e6,
        exposed_us={cat: exposed_us.get(cat, 0.0) for cat in comm.CATEGORIES},
        tflops_per_gpu=tflops,
        peak_tflops=device.peak_flops / 1e12,
        memory=memory,
        recipe=recipe,
        assumptions=tuple(notes),
        stage_layers=tuple(stages),
        critical_stage=crit,
        gpus_per_node=fabric.gpus_per_node,
        gpus_per_domain=fabric.gpus_per_domain,
    )


def _throughput(
    flops_per_token: float, layout: Layout, step: float, device: Device, unit_s: float = 1.0
) -> tuple[float, float]:
    """Model TFLOP/s per GPU and MFU of a step that takes ``step`` units of ``unit_s`` seconds.

    The kernel model times the step in seconds, the ``--mfu`` one in microseconds (``unit_s``
    1e-6); dividing in the caller's unit rather than converting it first keeps both reports'
    figures free of an extra rounding.
    """
    per_gpu = flops_per_token * layout.global_batch * layout.seq_len / layout.world
    tflops = per_gpu / step / (1e12 * unit_s)
    return tflops, tflops * 1e12 / device.peak_flops


def _place(
    fabric: Fabric,
    model: ModelShape,
    layout: Layout,
    recipe: Recipe,
    ranks: npt.NDArray[np.int64] | None,
) -> tuple[Layout, dict[str, npt.NDArray[np.int64]]]:
    """The checked layout with the software's choices and what its groups hold (DP ranks
    sharing a node, EP ranks sharing a domain), and its process groups as fabric GPUs.

    Raises:
        EngineError: The layout does not fit the model or the GPUs.
    """
    n_gpus = fabric.n_gpus if ranks is None else len(ranks)
    check_layout(fabric, model, layout, None if ranks is None else n_gpus)
    layout = with_software(layout, recipe)
    groups = layout_groups(n_gpus, fabric.gpus_per_node, layout)
    if ranks is not None:  # job ranks -> the fabric's GPUs
        groups = {axis: np.asarray(ranks)[g] for axis, g in groups.items()}
    layout = dataclasses.replace(
        layout,
        dp_shard=len(groups["dp_intra"][0]),
        ep_local=ranks_per_domain(groups["ep"][0], fabric.gpus_per_domain),
    )
    return layout, groups


@dataclass(frozen=True)
class _StageWork:
    """One micro-batch's compute on each pipeline stage [s]."""

    layer: LayerCost
    """The mean layer."""
    compute_s: list[float]
    """Forward and backward of each stage (embedding on the first, output on the last)."""
    recompute_s: list[float]
    """Recomputed forward of each stage."""
    forward_s: list[float]
    """Forward of each stage."""
    layer_recompute_s: float
    """Recomputed forward of one layer."""
    moe_layer: LayerCost | None = None
    """The mean MoE layer (None for a dense model)."""


def _stage_work(
    device: Device,
    geo: Geometry,
    layout: Layout,
    recipe: Recipe,
    stages: Sequence[int],
    sp: bool,
    accumulate_bytes: float = 0.0,
) -> _StageWork:
    """Each stage's compute for one micro-batch: its layers, plus the embedding on the
    first stage and the output layer and loss on the last, and ``accumulate_bytes`` per
    parameter of the stage through HBM where FSDP adds up deferred gradients
    (``memory.grad_accumulation_bytes``)."""
    layer = average_layer(
        device, geo, layout, sp, recipe.attention, recipe.kernels, recipe.moe_imbalance
    )
    out = output_layer_cost(
        device, geo, layout.tp, layout.cp, layout.micro_batch, layout.seq_len, recipe.loss
    )
    emb = embedding_cost(device, geo, layout.cp, layout.micro_batch, layout.seq_len)
    layer_recompute = _f(
        layer.recompute_s(recipe.recompute, recipe.selective, recipe.recompute_modules)
    )
    moe_layer = None
    if geo.moe_layers:
        moe_layer = average_layer(
            device,
            geo,
            layout,
            sp,
            recipe.attention,
            recipe.kernels,
            recipe.moe_imbalance,
            moe_only=True,
        )
    compute, recompute, forward = [], [], []
    for i, n in enumerate(stages):
        work = n * (_f(layer.fwd_s) + _f(layer.bwd_s))
        fwd = n * _f(layer.fwd_s)
        if i == 0:
            work += _f(emb.fwd_s) + _f(emb.bwd_s)
            fwd += _f(emb.fwd_s)
        if i == layout.pp - 1:
            work += _f(out.fwd_s) + _f(out.bwd_s)
            fwd += _f(out.fwd_s)
        if accumulate_bytes > 0:
            params = stage_params(
                geo, n, layout.tp, layout.ep, i == 0, i == layout.pp - 1, layout.expert_tp
            )
            work += _f(params) * accumulate_bytes / device.hbm_Bps
        compute.append(work)
        forward.append(fwd)
        recompute.append(n * layer_recompute)
    return _StageWork(layer, compute, recompute, forward, layer_recompute, moe_layer)


def _accumulated(recipe: Recipe, layout: Layout, shards: StateShards) -> float:
    """Bytes per parameter per micro-batch FSDP's post-backward moves adding up gradients
    it holds unsharded (``memory.held_shards``); 0 where it does not hold them."""
    if not sync_deferred(shards.grads, layout.pp, recipe.pp_defers_fsdp_sync):
        return 0.0
    return grad_accumulation_bytes(layout.microbatches, recipe.fsdp_reduce_bytes)


def _deferral_notes(recipe: Recipe, layout: Layout, shards: StateShards) -> list[str]:
    """What a plan says where the framework's pipeline defers FSDP's sync."""
    if not sync_deferred(shards.grads, layout.pp, recipe.pp_defers_fsdp_sync):
        return []
    return [
        f"{recipe.framework or 'the framework'}'s pipeline keeps each stage's parameters "
        f"gathered and its gradients whole ({recipe.fsdp_reduce_bytes:g} bytes each) through "
        "the micro-batches and reduce-scatters them after the last backward (PyTorch's "
        "pipeline stage defers FSDP's sync)"
    ]


def _windows(
    work: _StageWork,
    geo: Geometry,
    device: Device,
    cp: int = 1,
    tp_fused: tuple[dict[str, tuple[float, ...]], dict[str, tuple[float, ...]]] = ({}, {}),
    tp_userbuffers: dict[str, tuple[userbuffers.Pairing, ...]] | None = None,
    ep_unpaired: float = 0.0,
    moe_dispatch: str = "alltoall",
    multi_node_domain: bool = False,
) -> comm.Windows:
    """The compute each kind of communication can hide behind on the critical stage
    (``tp_fused``: the GEMMs decomposed TP overlap fuses each TP collective with, forward
    and recomputed, ``_tp_fused``; ``tp_userbuffers``: the GEMM userbuffers pairs each
    with, ``_tp_userbuffers``; ``ep_unpaired``: the share of passes EP overlap runs
    alone, ``schedule.unpaired_share``; ``moe_dispatch``: the MoE dispatcher;
    ``multi_node_domain``: the NVLink domain spans hosts)."""
    paired = tp_userbuffers or {}
    layer = work.layer
    moe_share = geo.moe_layers / geo.layers
    return comm.Windows(
        gemm_s=_f(layer.gemm_fwd_s + layer.gemm_bwd_s),
        expert_s=moe_share * _f(layer.gemm_fwd_s + layer.gemm_bwd_s),
        attention_s=_f(layer.attn_fwd_s + layer.attn_bwd_s),
        layer_s=_f(layer.fwd_s + layer.bwd_s) + work.layer_recompute_s,
        microbatch_s=max(work.compute_s) + max(work.recompute_s),
        layer_fwd_s=_f(layer.fwd_s),
        microbatch_fwd_s=max(work.forward_s),
        sm_share=comm.collective_sm_share(device.sms),
        ring_first_fwd_s=_f(layer.attn_fwd_s) / max(cp, 1),
        attention_bwd_s=_f(layer.attn_bwd_s),
        tp_fused_s=tp_fused[0],
        tp_fused_recompute_s=tp_fused[1],
        hbm_Bps=device.hbm_Bps if tp_fused[0] or paired else 0.0,
        tp_userbuffers=paired,
        sms=device.sms or 0,
        ep_compute_s=_ep_compute(work.moe_layer),
        moe_share=moe_share,
        ep_unpaired=ep_unpaired,
        ep_sm_share=comm.ep_overlap_sm_share(moe_dispatch, device.sms, multi_node_domain),
    )


def _ep_compute(moe: LayerCost | None) -> tuple[float, ...]:
    """The mean MoE layer's compute in the pieces EP overlap schedules the all-to-alls
    beside (``comm.EP_COMPUTE``) [s] (empty for a dense model): the attention block's
    forward (everything but the routed experts and the host's wait: attention, router,
    shared experts), the routed experts' input and weight gradients (half their backward
    GEMMs each), their forward, and the attention block's backward split into its input
    gradients and its weight gradients (half its GEMMs' backward)."""
    if moe is None:
        return ()
    host = _f(moe.host_s)
    experts_f, experts_b = _f(moe.moe_mlp_fwd_s), _f(moe.moe_mlp_bwd_s)
    block_f = max(0.0, _f(moe.fwd_s) - host - experts_f)
    block_b = max(0.0, _f(moe.bwd_s) - host - experts_b)
    block_wgrad = min(block_b, 0.5 * max(0.0, _f(moe.gemm_bwd_s) - experts_b))
    return (
        block_f,
        0.5 * experts_b,
        0.5 * experts_b,
        experts_f,
        block_b - block_wgrad,
        block_wgrad,
    )


def _tp_fused(
    device: Device, geo: Geometry, layout: Layout, recipe: Recipe
) -> tuple[dict[str, tuple[float, ...]], dict[str, tuple[float, ...]]]:
    """The forward GEMMs decomposed TP overlap fuses each sequence-parallel TP collective
    of a layer with, and the recomputed ones it fuses the recomputed calls with [s]
    (``comm.decomposed_tp_exposure``); empty without decomposed overlap, and for MoE and
    MLA layers (their collectives hide behind the layer's GEMMs as before).

    torchtitan's TP plan (``parallelize_llama.py`` ``apply_tp`` at 820504e, the async TP
    benchmark's commit) all-gathers each norm's output for the query, key and value
    projections and for the MLP's gate and up projections, and reduce-scatters the
    output of the attention output projection and of the down projection: the all-gathers
    fuse with the first and the reduce-scatters with the second, in that order. Op-level
    selective recomputation runs the all-gathers again for the projections its policy
    recomputes (the key projection and the up projection ``w3``: ``ops_recomputed_gemm_s``);
    full recomputation reruns the whole forward, each collective with its GEMMs.
    """
    if not (recipe.tp_overlap and recipe.tp_overlap_decomposed and layout.tp > 1):
        return {}, {}
    if geo.moe_layers or geo.mla:
        return {}, {}
    tokens, h, q, kv, ffn = _tp_rank_widths(geo, layout)
    separate = recipe.separate_projections

    def fwd(n: float, k: float) -> float:
        return _f(linear_times_s(device, tokens, n, k)[0])

    kv_f = fwd(kv, h)
    qkv = fwd(q, h) + 2 * kv_f if separate else fwd(q + 2 * kv, h)
    split_up = separate and geo.gated
    one_up = fwd(ffn, h)
    up = 2 * one_up if split_up else fwd((2.0 if geo.gated else 1.0) * ffn, h)
    out, down = fwd(h, q), fwd(h, ffn)
    forward: dict[str, tuple[float, ...]] = {
        "all_gather": (qkv, up),
        "reduce_scatter": (out, down),
    }
    again: dict[str, tuple[float, ...]] = {}
    if recipe.recompute == "full":
        again = dict(forward)
    elif recipe.recompute == "selective" and recipe.selective_kind == "ops":
        again = {"all_gather": (kv_f if separate else 0.0, one_up if split_up else 0.0)}
    return forward, again


def _tp_rank_widths(geo: Geometry, layout: Layout) -> tuple[float, float, float, float, float]:
    """A dense layer's GEMM sizes on one TP rank: tokens of a micro-batch (over CP), the
    hidden size, and the query (attention output), key/value and MLP widths the rank
    holds (at least one key/value head each)."""
    t = float(layout.tp)
    tokens = layout.micro_batch * layout.seq_len / layout.cp
    kv = max(geo.kv_heads / t, 1.0) * geo.head_dim
    return tokens, float(geo.hidden), geo.out_width / t, kv, geo.dense_ffn / t


def _tp_userbuffers(
    device: Device, geo: Geometry, layout: Layout, recipe: Recipe, sp: bool
) -> dict[str, tuple[userbuffers.Pairing, ...]]:
    """The GEMM Transformer Engine's userbuffers overlaps each sequence-parallel TP
    collective of a layer with, and how (``userbuffers``, ``comm.userbuffers_tp_exposure``);
    empty without userbuffers or sequence parallelism (the overlap needs it), and for MoE and
    MLA layers (their collectives hide behind the layer's GEMMs).

    Megatron's layer is a ``LayerNormLinear`` for the fused QKV projection, a ``Linear``
    for the attention's output projection, a ``LayerNormMLP``-like pair of FC1 (gate and up
    together) and FC2: forward, the all-gathers go with QKV and FC1 and the reduce-scatters
    with the projection and FC2; backward, the output gradient's all-gathers with the
    projection's and FC2's input-gradient GEMMs, the norm outputs gathered again with
    QKV's and FC1's input-gradient GEMMs, and those input gradients' reduce-scatters with
    QKV's and FC1's weight-gradient GEMMs.
    """
    config = recipe.tp_userbuffers
    if not (recipe.tp_overlap and config and sp and layout.tp > 1):
        return {}
    if geo.moe_layers or geo.mla:
        return {}
    tokens, h, q, kv, ffn = _tp_rank_widths(geo, layout)
    up = (2.0 if geo.gated else 1.0) * ffn
    # (GEMM name, output features n, input features k) of the layer's linear layers.
    shapes = {"qkv": (q + 2 * kv, h), "proj": (h, q), "fc1": (up, h), "fc2": (h, ffn)}

    def pair(gemm: str, pass_: str, unlisted: bool = False) -> userbuffers.Pairing:
        n, k = shapes[gemm]
        if pass_ == "fprop":
            time_s = gemm_time_s(device, tokens, n, k)
        elif pass_ == "dgrad":
            time_s = gemm_time_s(device, tokens, k, n)
        else:
            time_s = gemm_time_s(device, k, n, tokens)
        name = f"{gemm}_{pass_}"
        fp8 = recipe.precision == "fp8" and name in userbuffers.FP8_GATHERED
        return userbuffers.Pairing(
            gemm_s=_f(time_s),
            method=userbuffers.method_for(config, name, recipe.precision),
            bytes_scale=0.5 if fp8 else 1.0,
            unlisted=unlisted,
        )

    return {
        "forward:all_gather": (pair("qkv", "fprop"), pair("fc1", "fprop")),
        "forward:reduce_scatter": (pair("proj", "fprop"), pair("fc2", "fprop")),
        "backward:all_gather": (
            pair("proj", "dgrad"),
            pair("fc2", "dgrad"),
            pair("qkv", "dgrad", unlisted=True),
            pair("fc1", "dgrad", unlisted=True),
        ),
        "backward:reduce_scatter": (pair("qkv", "wgrad"), pair("fc1", "wgrad")),
    }


def _tp_in_domain(fabric: Fabric, groups: dict[str, npt.NDArray[np.int64]]) -> bool:
    """True when the first TP group sits in one NVLink (scale-up) domain, where TP's
    communication can overlap its GEMMs."""
    tp_nodes = groups["tp"][0] // fabric.gpus_per_domain
    return bool((tp_nodes == tp_nodes[0]).all())


@dataclass(frozen=True)
class _Pipeline:
    """The pipeline of one step [s]."""

    critical_stage: int
    """The slowest stage."""
    pipeline_s: float
    """All micro-batches through every stage."""
    bubble_s: float
    """The part beyond the critical stage's own micro-batches."""


def _pipeline(
    work: _StageWork, exposure: comm.Exposure, stages: Sequence[int], layout: Layout
) -> _Pipeline:
    """Each stage's micro-batch time ``tau`` (compute, recompute and exposed per-layer and
    per-micro-batch communication) through the schedule (``schedule.pipeline_time_s``)."""
    per_layer_comm = sum(exposure.per_layer_s.values())
    per_mb_comm = sum(exposure.per_microbatch_s.values())
    tau = [
        c + r + n * per_layer_comm + per_mb_comm
        for c, r, n in zip(work.compute_s, work.recompute_s, stages)
    ]
    crit = int(np.argmax(tau))
    pipeline_s = schedule.pipeline_time_s(tau, layout.microbatches, layout.vpp)
    return _Pipeline(crit, pipeline_s, pipeline_s - layout.microbatches * tau[crit])


def _exposed_us(exposure: comm.Exposure, layers: int, microbatches: int) -> dict[str, float]:
    """Exposed communication per category over a step of the critical stage, which holds
    ``layers`` layers [us]."""
    return {
        cat: 1e6
        * (
            microbatches
            * (
                layers * exposure.per_layer_s.get(cat, 0.0)
                + exposure.per_microbatch_s.get(cat, 0.0)
            )
            + exposure.per_step_s.get(cat, 0.0)
        )
        for cat in set(exposure.per_layer_s) | set(exposure.per_step_s)
    }


def _memory(
    geo: Geometry,
    model: ModelShape,
    layout: Layout,
    recipe: Recipe,
    used: Sequence[Strategy],
    shards: StateShards,
    stages: Sequence[int],
    sp: bool,
) -> tuple[MemoryReport, float]:
    """The most loaded stage's memory, and the most parameters one GPU's optimizer updates
    (its shard of the largest stage); PyTorch's ring attention adds its buffers on every
    stage (``memory.ring_attention_bytes``); a framework that defers FSDP's gradient sync
    under PP holds the stage's weights and gradients unsharded (``memory.held_shards``)."""
    extra = tuple(
        (f"{t.strategy}: {t.what}", t.size_bytes) for s in used for t in s.memory(model, layout)
    )
    ring = _ring_buffers(geo, layout, recipe)
    if ring > 0:
        extra += (("cp: ring attention buffers", ring),)
    p = layout.pp
    layers = np.asarray(stages, dtype=np.float64)
    index = np.arange(p)
    first = index == 0
    last = index == p - 1
    params = stage_params(geo, layers, layout.tp, layout.ep, False, False, layout.expert_tp)
    params = params + np.where(first, geo.embedding_params / layout.tp, 0.0)
    params = params + np.where(last, geo.embedding_params / layout.tp + geo.hidden, 0.0)
    experts = stage_expert_params(geo, layers, layout.ep, layout.expert_tp)
    dp_ranks, edp = layout.dp * layout.cp, layout.expert_dp
    held_w, held_g, grad_bytes = held_shards(
        shards.weights,
        shards.grads,
        recipe.grad_bytes,
        recipe.fsdp_reduce_bytes,
        p,
        recipe.pp_defers_fsdp_sync,
    )
    held = StateShards(int(held_w), int(held_g), shards.optimizer)
    weights, grads, optimizer = states_bytes(
        params, held, _f(grad_bytes), experts, dp_ranks, edp, recipe.optimizer_bytes
    )
    updated = (params - experts) / shards.optimizer + experts / expert_shards(
        shards.optimizer, dp_ranks, edp
    )
    flight = np.array([schedule.in_flight(p, layout.microbatches, layout.vpp, i) for i in range(p)])
    acts = activation_bytes(
        geo,
        layers,
        flight,
        layout.tp,
        layout.cp,
        layout.micro_batch,
        layout.seq_len,
        1.0 if sp else 0.0,
        recipe.recompute,
        recipe.attention,
        recipe.kv_repeated,
        recipe.selective_kind,
        recipe.passes == "eager",
        recipe.recompute_modules,
        recipe.unfused_clamp,
        layout.expert_tp,
    )
    loss = logits_bytes(geo, layout.tp, layout.cp, layout.micro_batch, layout.seq_len, recipe.loss)
    logits = np.where(last, _f(loss), 0.0)
    totals = weights + grads + optimizer + acts + logits
    i = int(np.argmax(totals))
    report = MemoryReport(
        _f(weights[i]), _f(grads[i]), _f(optimizer[i]), _f(acts[i]), _f(logits[i]), extra, i
    )
    return report, float(updated.max())


def _ring_buffers(geo: Geometry, layout: Layout, recipe: Recipe) -> float:
    """PyTorch's ring attention's buffers during one layer's backward [bytes]; 0 for other
    CP attention (``cp_attention`` ``ring``) and without CP."""
    if recipe.cp_attention != "torch":
        return 0.0
    return _f(
        ring_attention_bytes(
            geo,
            layout.tp,
            layout.cp,
            layout.micro_batch,
            layout.seq_len,
            eager=recipe.passes == "eager",
        )
    )


def _legacy_plan(
    fabric: Fabric,
    model: ModelShape,
    layout: Layout,
    recipe: Recipe,
    used: Sequence[Strategy],
    priced: Sequence[PricedOp],
    geo: Geometry,
    device: Device,
    stages: Sequence[int],
    notes: list[str],
) -> PlanReport:
    """The fixed-MFU step: even stages, one shared overlap window (``--mfu``)."""
    assert recipe.mfu is not None
    compute_us = compute_time_us(fabric, model, layout, recipe.mfu)
    bubble_us = compute_us * (layout.pp - 1) / (layout.vpp * layout.microbatches)
    operations = with_shared_window(list(priced), compute_us)
    shards = sharding(used, model, layout)
    notes = [*notes, *_deferral_notes(recipe, layout, shards)]
    sp = any(s.name == "tp-sp" for s in used)
    memory, _ = _memory(geo, model, layout, recipe, used, shards, stages, sp)
    exposed: dict[str, float] = {cat: 0.0 for cat in comm.CATEGORIES}
    for p in operations:
        cat = comm.CATEGORY.get(p.op.group, p.op.group)
        exposed[cat] = exposed.get(cat, 0.0) + p.exposed_us
    step_us = compute_us + bubble_us + sum(p.exposed_us for p in operations)
    flops_token = model_flops_per_token(geo, layout.seq_len)
    tflops, mfu = _throughput(flops_token, layout, step_us, device, unit_s=1e-6)
    return PlanReport(
        topology=fabric.spec.id,
        model=model.id,
        layout=layout,
        mfu=mfu,
        operations=tuple(operations),
        compute_us=compute_us,
        bubble_us=bubble_us,
        flops_per_token=legacy_flops_per_token(model, layout.seq_len),
        strategies=tuple(s.name for s in used),
        memory_GB=memory.total_GB,
        memory_limit_GB=fabric.gpu.memory_GB * USABLE_MEMORY,
        exposed_us=exposed,
        tflops_per_gpu=tflops,
        peak_tflops=device.peak_flops / 1e12,
        memory=memory,
        recipe=recipe,
        assumptions=(
            *notes,
            f"compute at a fixed {recipe.mfu:.0%} of peak (--mfu), no kernel model",
        ),
        stage_layers=tuple(stages),
        gpus_per_node=fabric.gpus_per_node,
        gpus_per_domain=fabric.gpus_per_domain,
        compute_mfu=recipe.mfu,
    )
