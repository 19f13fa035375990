"""Layout search: every tp x cp x pp x vpp x ep x expert tp x micro-batch x DP strategy x
recompute on all the fabric's GPUs, ranked by step time under the memory limit. An MoE
model's expert TP is TP (Megatron-Core's default) or, with TP above 1, any smaller divisor
of it (Megatron-Bridge's MoE recipes run 1), its expert-parallel group then spanning TP
and CP ranks too.

Two stages. (1) Every candidate's compute, bubble, optimizer step and memory come from
the same functions a plan uses, vectorized with numpy over all candidates, plus the
critical-path communication every plan has (TP collectives, pipeline sends, the CP
strategy's own operations beyond the attention windows a plan gives them, EP's dispatch
and combine when nothing overlaps them) priced on the same groups; the data-parallel
traffic is priced on a proxy group at least as fast as the real one (same members per
node, adjacent nodes), the spread experts' on their own group. That is a lower bound of the
candidate's step. For each layout only the cheapest
way to fit is kept: the least sharding (DDP, then ZeRO-1, ZeRO-2, FSDP: the same traffic
or more) at each recompute level, and no heavier recompute once DDP or ZeRO-1/2 fits.
(2) Candidates are planned in full (``step.plan``: every strategy's operations priced on
the fabric) in order of their bound, until the next bound is slower than the ``top``-th
best plan found.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.training import deepep, schedule
from fabricui.engine.training.device import make_device
from fabricui.engine.training.layer import (
    LayerCost,
    embedding_cost,
    layer_cost,
    output_layer_cost,
)
from fabricui.engine.training.memory import (
    WEIGHT_BYTES,
    activation_bytes,
    adam_step_bytes,
    expert_shards,
    held_shards,
    logits_bytes,
    ring_attention_bytes,
    stage_expert_params,
    stage_params,
)
from fabricui.engine.training.pricing import Pricer, PricerLike, as_pricer
from fabricui.engine.training.recipe import Recipe, era_recipe
from fabricui.engine.training.shape import Geometry, geometry
from fabricui.engine.training.step import (
    USABLE_MEMORY,
    PlanReport,
    plan,
    ranks_per_domain,
    with_software,
)
from fabricui.engine.types import CommOp, Layout, Strategy
from fabricui.errors import EngineError
from fabricui.vocabulary import RECOMPUTE_MODES

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy.typing as npt

    from fabricui.engine.training.device import Device
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import ModelShape

#: Data-parallel flavours the search tries, least sharded (and least traffic) first.
DP_FLAVOURS = ("ddp", "zero1", "zero2", "fsdp")
#: Context-parallel degrees tried (each must leave at least ``MIN_CP_TOKENS`` per rank).
CP_DEGREES = (1, 2, 4, 8, 16)
#: Fewest tokens of a sequence one context-parallel rank may hold.
MIN_CP_TOKENS = 1024
#: Micro-batch sizes tried (sequences).
MICRO_BATCHES = (1, 2, 4)
#: Interleaved chunks per stage tried.
VPP_DEGREES = (1, 2, 4)


@dataclass(frozen=True)
class SearchSpace:
    """What the search varies; None: every value it knows."""

    dp_flavours: tuple[str, ...] | None = None
    """DP strategies to try (a subset of ``DP_FLAVOURS`` or plugin names)."""
    recompute: tuple[str, ...] = RECOMPUTE_MODES
    """Recompute modes to try."""
    micro_batches: tuple[int, ...] = MICRO_BATCHES
    """Micro-batch sizes to try."""
    cp_degrees: tuple[int, ...] = CP_DEGREES
    """CP degrees to try."""
    vpp_degrees: tuple[int, ...] = VPP_DEGREES
    """Interleaving degrees to try."""
    max_tp: int | None = None
    """Largest TP degree (default: the attention heads)."""


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def candidate_layouts(
    n_gpus: int, model: ModelShape, global_batch: int, seq_len: int, space: SearchSpace
) -> list[Layout]:
    """Every layout of the search space that uses all ``n_gpus`` and the model allows.

    tp divides the heads, cp the sequence (``seq_len / cp >= MIN_CP_TOKENS``), pp is at
    most the layers (uneven stages are fine), dp x micro-batch divides the global batch,
    ep divides the experts (1 for a dense model) and, with its expert TP, the stage
    (``_expert_layouts``); a pipeline needs at least ``pp`` micro-batches; interleaving
    needs ``pp * vpp`` layers and micro-batches divisible by ``pp`` (Megatron's rule).
    """
    layouts = []
    max_tp = space.max_tp or model.heads
    for tp in _divisors(n_gpus):
        if tp > max_tp or model.heads % tp:
            continue
        for cp in space.cp_degrees:
            if (n_gpus // tp) % cp or seq_len % cp or (cp > 1 and seq_len // cp < MIN_CP_TOKENS):
                continue
            rest = n_gpus // (tp * cp)
            for pp in _divisors(rest):
                dp = rest // pp
                if pp > model.layers or global_batch % dp:
                    continue
                experts = _expert_layouts(model, tp, cp, dp)
                for b in space.micro_batches:
                    if (global_batch // dp) % b:
                        continue
                    m = global_batch // (dp * b)
                    if pp > 1 and m < pp:
                        continue  # 1F1B needs a micro-batch per stage in flight
                    for vpp in space.vpp_degrees:
                        if vpp > 1 and (pp == 1 or m % pp or pp * vpp > model.layers):
                            continue
                        for ep, etp in experts:
                            layouts.append(
                                Layout(
                                    tp=tp,
                                    pp=pp,
                                    dp=dp,
                                    ep=ep,
                                    microbatches=m,
                                    global_batch=global_batch,
                                    seq_len=seq_len,
                                    cp=cp,
                                    vpp=vpp,
                                    etp=etp,
                                )
                            )
    return layouts


def _expert_layouts(model: ModelShape, tp: int, cp: int, dp: int) -> list[tuple[int, int]]:
    """(ep, etp) pairs of a ``tp x cp x dp`` stage (etp 0: ``tp``, Megatron-Core's default).

    At ``etp = tp`` the expert-parallel group lies within DP (``ep`` divides ``dp``). A
    smaller expert TP (a divisor of ``tp``; NVIDIA's Megatron-Bridge MoE recipes run 1)
    frees TP and CP ranks for the expert-parallel group, as Megatron-Core allows: ``ep x
    etp`` divides ``tp x cp x dp``. ``ep`` divides the experts; a dense model has ep 1.
    """
    if not model.experts:
        return [(1, 0)]
    pairs = [(e, 0) for e in _divisors(dp) if model.experts % e == 0]
    for etp in _divisors(tp)[:-1]:
        pairs += [(e, etp) for e in _divisors(tp * cp * dp // etp)[1:] if model.experts % e == 0]
    return pairs


@dataclass(frozen=True)
class _Candidate:
    bound_s: float
    """Lower bound of the step without data-parallel traffic [s]."""
    layout: Layout
    recompute: str
    dp_flavour: str
    layer_s: float
    """One layer's forward and backward (FSDP's gathers hide behind it) [s]."""
    tau_s: float
    """The slowest stage's micro-batch [s]."""
    most_layers: int
    """Layers of the stage with the most."""


def _refined_s(
    cand: _Candidate, fabric: Fabric, model: ModelShape, pricer: Pricer, recipe: Recipe, cache: dict
) -> float:
    """The candidate's bound with its data-parallel traffic on the proxy group added."""
    dp_layer, dp_step = _dp_lower_s(
        fabric, model, [cand.layout], cand.dp_flavour, pricer, cache, recipe.pp_defers_fsdp_sync
    )
    extra = max(0.0, float(dp_layer[0]) - cand.layer_s) * cand.most_layers
    window = cand.tau_s if recipe.dp_overlap else 0.0
    return cand.bound_s + cand.layout.microbatches * extra + max(0.0, float(dp_step[0]) - window)


def _critical_comm_s(
    fabric: Fabric,
    geo: Geometry,
    layouts: Sequence[Layout],
    arr: dict[str, np.ndarray],
    b: np.ndarray,
    sp: np.ndarray,
    pricer: Pricer,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Critical-path communication every plan has: TP collectives per layer and micro-batch
    (forward, backward, and the forward's all-gathers alone), and pipeline sends per
    micro-batch [s].

    The same operations and groups the built-in TP and PP strategies give a plan (TP: the
    first ``tp`` ranks; PP: ranks ``tp * cp * gcd(dp, ep)`` apart, as ``groups.groups``
    lays them out), priced with the same pricer, so the bound stays below the plan.

    Returns:
        (TP forward per layer, TP backward per layer, TP forward all-gathers per layer,
        PP per micro-batch), per candidate.
    """
    hidden = float(geo.hidden)
    act = b * arr["seq_len"] / arr["cp"] * hidden * 2.0
    tp_f = np.zeros(len(layouts))
    tp_b = np.zeros(len(layouts))
    tp_ag = np.zeros(len(layouts))
    pp_mb = np.zeros(len(layouts))
    for tp in sorted(set(arr["tp"].astype(int))):
        if tp < 2:
            continue
        ranks = tuple(range(tp))
        for flag in (0.0, 1.0):
            mask = (arr["tp"] == tp) & (sp == flag)
            if not mask.any():
                continue
            collectives = ("all_gather", "reduce_scatter") if flag else ("all_reduce",)
            sizes = act[mask]
            total = np.zeros(int(mask.sum()))
            for collective in collectives:
                pricer.prime(collective, ranks, sizes.tolist())
                calls = np.array([pricer(collective, ranks, x)[0] for x in sizes])
                total += calls
                if collective == "all_gather":
                    tp_ag[mask] = 2 * calls * 1e-6
            tp_f[mask] = 2 * total * 1e-6
            tp_b[mask] = 2 * total * 1e-6
    inner = np.gcd(arr["dp"].astype(int), arr["ep"].astype(int))
    stride = arr["tp"].astype(int) * arr["cp"].astype(int) * inner
    for key in sorted(set(zip(stride.tolist(), arr["pp"].astype(int).tolist()))):
        step, pp = key
        if pp < 2 or step * pp > fabric.n_gpus:
            continue
        mask = (stride == step) & (arr["pp"] == pp)
        ranks = tuple(range(0, step * pp, step))
        sizes = act[mask] / arr["tp"][mask]
        pricer.prime("send_recv", ranks, sizes.tolist())
        call = np.array([pricer("send_recv", ranks, x)[0] for x in sizes]) * 1e-6
        pp_mb[mask] = 2 * call * arr["vpp"][mask]
    return tp_f, tp_b, tp_ag, pp_mb


#: CP operations per layer and micro-batch [s], by (phase, hidden, recomputed).
RingComm = dict[tuple[str, bool, bool], np.ndarray]


def _ring_comm_s(
    model: ModelShape,
    layouts: Sequence[Layout],
    recipe: Recipe,
    cp: Strategy | None,
    pricer: Pricer,
) -> RingComm:
    """CP's operations per layer and micro-batch [s], keyed by (phase, hidden, recomputed):
    the CP strategy's own operations for each candidate, as ``step.plan`` gets them (the
    layout with the framework's ``cp_attention``, ``step.with_software``), priced with the
    same pricer on its group (ranks ``tp`` apart). Empty without a CP strategy."""
    out: RingComm = {}
    if cp is None:
        return out
    ops_of: dict[tuple[int, int, float, int], tuple[tuple[int, ...], float, list[CommOp]]] = {}
    for lay in layouts:
        key = (lay.tp, lay.cp, lay.micro_batch, lay.seq_len)
        if lay.cp < 2 or key in ops_of:
            continue
        shaped = with_software(lay, recipe)
        ops = cp.operations(model, shaped) if cp.applicable(model, shaped) else []
        ops = [op for op in ops if op.group == "cp" and op.resolved_scope == "layer"]
        calls = model.layers / lay.pp * lay.microbatches  # comm.expose's calls per layer
        ops_of[key] = (tuple(range(0, lay.tp * lay.cp, lay.tp)), calls, ops)
    wanted: dict[tuple[str, tuple[int, ...]], list[float]] = {}
    for ranks, _, ops in ops_of.values():
        for op in ops:
            wanted.setdefault((op.collective, ranks), []).append(op.size_bytes)
    for (collective, ranks), sizes in wanted.items():
        pricer.prime(collective, ranks, sizes)
    per_key: dict[tuple[int, int, float, int], list[tuple[tuple[str, bool, bool], float]]] = {}
    for key, (ranks, calls, ops) in ops_of.items():
        per_key[key] = [
            (
                (op.phase, op.overlappable, op.recomputed),
                pricer(op.collective, ranks, op.size_bytes)[0] * 1e-6 * op.count / calls,
            )
            for op in ops
        ]
    for i, lay in enumerate(layouts):
        for kind, seconds in per_key.get((lay.tp, lay.cp, lay.micro_batch, lay.seq_len), []):
            out.setdefault(kind, np.zeros(len(layouts)))[i] += seconds
    return out


def _ep_key(lay: Layout) -> tuple[int, ...]:
    """What a layout's EP operations and their first group depend on."""
    return (lay.tp, lay.cp, lay.dp, lay.pp, lay.ep, lay.expert_tp, lay.microbatches)


def _ep_comm_s(
    model: ModelShape,
    layouts: Sequence[Layout],
    recipe: Recipe,
    ep: Strategy | None,
    pricer: Pricer,
) -> tuple[np.ndarray, np.ndarray]:
    """EP's dispatch and combine per layer and micro-batch [s], (forward, backward): the EP
    strategy's own operations for each candidate (the layout with the framework's
    software, ``step.with_software``), priced with the same pricer on its first expert-
    parallel group (``groups.groups``: ranks ``etp`` apart among a stage's), DeepEP's calls
    across nodes on its RDMA path as the plan reprices them (``deepep.on_rdma``). Only
    where the plan exposes them whole (no EP overlap); 0 elsewhere (no bound)."""
    fwd = np.zeros(len(layouts))
    bwd = np.zeros(len(layouts))
    if ep is None or recipe.ep_overlap:
        return fwd, bwd
    domain = pricer.fabric.gpus_per_domain
    found: dict[tuple[int, ...], tuple[tuple[int, ...], list[tuple[str, float, float]]]] = {}
    for lay in layouts:
        key = _ep_key(lay)
        if lay.ep < 2 or key in found:
            continue
        first = _first_ep_group(lay)
        shaped = dataclasses.replace(
            with_software(lay, recipe), ep_local=ranks_per_domain(np.asarray(first), domain)
        )
        ops = ep.operations(model, shaped) if ep.applicable(model, shaped) else []
        calls = model.layers / lay.pp * lay.microbatches  # comm.expose's calls per layer
        found[key] = (
            first,
            [
                (op.phase, op.size_bytes, op.count / calls)
                for op in ops
                if op.group == "ep" and op.resolved_scope == "layer"
            ],
        )
    wanted: dict[tuple[int, ...], list[float]] = {}
    for ranks, kinds in found.values():
        wanted.setdefault(ranks, []).extend(size for _, size, _ in kinds)
    on_rdma: dict[tuple[int, ...], bool] = {}
    rdma_us: dict[tuple[tuple[int, ...], float], float] = {}
    for ranks, sizes in wanted.items():
        on_rdma[ranks] = recipe.moe_dispatch == "deepep" and deepep.on_rdma_path(
            pricer.group(ranks)
        )
        if not on_rdma[ranks]:
            pricer.prime("all_to_all", ranks, sizes)
    for i, lay in enumerate(layouts):
        key = _ep_key(lay)
        if key not in found:
            continue
        ranks, kinds = found[key]
        for phase, size, per_layer in kinds:
            if on_rdma[ranks]:
                if (ranks, size) not in rdma_us:
                    rdma_us[(ranks, size)] = deepep.call_us(pricer.group(ranks), size)
                call = rdma_us[(ranks, size)]
            else:
                call = pricer("all_to_all", ranks, size)[0]
            seconds = call * 1e-6 * per_layer
            if phase == "forward":
                fwd[i] += seconds
            else:
                bwd[i] += seconds
    return fwd, bwd


def _ring_exposed_s(
    ring: RingComm, attn_f: np.ndarray, attn_b: np.ndarray, cp: np.ndarray, mode: str,
    recipe: Recipe,
) -> np.ndarray:  # fmt: skip
    """CP's exposed time per layer and micro-batch [s], as ``comm.expose`` computes it for
    a plan less the SM share the hidden part takes (at least 0: the bound stays below the
    plan). Full recompute issues the recomputed operations twice; what is not hidden is
    exposed; what is hidden shows beyond its pass's window (``comm._layer_window``: the whole
    attention core for Megatron's ring; for PyTorch's, the first ring step's attention
    forward (``1 / c`` of it) in forward, the attention backward otherwise)."""
    exposed = np.zeros(len(cp))
    hidden: dict[str, np.ndarray] = {}
    for (phase, overlappable, recomputed), seconds in ring.items():
        seconds = seconds * (2.0 if recomputed and mode == "full" else 1.0)
        if not overlappable:
            exposed = exposed + seconds
            continue
        phase = phase if phase in ("forward", "backward") else ""
        hidden[phase] = hidden.get(phase, 0.0) + seconds
    for phase, seconds in hidden.items():
        if recipe.cp_attention == "torch":
            window = attn_f / np.maximum(cp, 1.0) if phase == "forward" else attn_b
        else:
            window = attn_f + attn_b
        exposed = exposed + np.maximum(0.0, seconds - window)
    return exposed


#: Gradient bucket of DDP and ZeRO (PyTorch's ``bucket_cap_mb=25``) [bytes].
BUCKET_BYTES = 25 * 2**20


def _proxy_dp_group(fabric: Fabric, lay: Layout) -> tuple[int, ...]:
    """A data-parallel group as fast as the layout's own or faster: the same members per
    node at the same local positions (rails), on adjacent nodes (which on a fat-tree share
    leaves at least as often as the real group's, farther apart)."""
    g = fabric.gpus_per_node
    tp, cp, pp, dp = lay.tp, lay.cp, lay.pp, lay.dp
    ep = math.gcd(dp, lay.ep)  # the replicas next to each other (``groups.groups``)
    members = (
        (np.arange(dp // ep)[:, None, None] * (pp * ep * cp * tp))
        + (np.arange(ep)[None, :, None] * (cp * tp))
        + (np.arange(cp)[None, None, :] * tp)
    ).ravel()
    local = sorted(int(x) for x in members[members < g])
    n = members.size
    if not local or n % len(local) or (n // len(local)) * g > fabric.n_gpus:
        return tuple(np.sort(members).tolist())
    nodes = np.arange(n // len(local))[:, None] * g
    return tuple((nodes + np.asarray(local)[None, :]).ravel().tolist())


def _dp_lower_s(
    fabric: Fabric,
    model: ModelShape,
    layouts: Sequence[Layout],
    flavour: str,
    pricer: Pricer,
    cache: dict[tuple[str, int, int, int, int, int, int], tuple[float, float]],
    deferred: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower bounds of a DP flavour's communication: (per layer and micro-batch, per step)
    [s], on the proxy group (``_proxy_dp_group``), with the built-in strategies' operations
    (DDP: bucketed all-reduce; ZeRO-1/2: bucketed reduce-scatter and a gather; FSDP: two
    gathers and a reduce-scatter per layer; on a pipeline whose framework defers FSDP's
    sync (``deferred``), its reduce-scatters, once a step), of the parameters every DP
    replica reduces; an MoE model's spread routed experts on their first expert data-
    parallel group (``_expert_dp_group``), as the strategies reduce them. Other flavours:
    0 (no bound)."""
    per_layer = np.zeros(len(layouts))
    per_step = np.zeros(len(layouts))
    if flavour not in DP_FLAVOURS:
        return per_layer, per_step
    total = model.params_B * 1e9
    geo = geometry(model)
    routed = float(geo.moe_layers * geo.experts * geo.expert_params) if model.experts else 0.0
    for i, lay in enumerate(layouts):
        if lay.dp * lay.cp < 2:
            continue
        key = (flavour, lay.tp, lay.cp, lay.pp, lay.ep, lay.dp, lay.expert_tp)
        if key not in cache:
            # Spread routed experts reduce over their own group (the ranks holding the
            # same experts), the other parameters over the DP group.
            spread = routed if lay.ep > 1 else 0.0
            dense = _dp_calls_s(
                flavour, pricer, _proxy_dp_group(fabric, lay), (total - spread) * 2 / lay.tp,
                model.layers, lay.pp, deferred,
            )  # fmt: skip
            # The experts' gradients in one call: frameworks bucket them by parameter
            # count (fewer, larger calls than PyTorch DDP's 25 MiB).
            experts = _dp_calls_s(
                flavour, pricer, _expert_dp_group(lay), spread * 2 / (lay.ep * lay.expert_tp),
                model.layers, lay.pp, deferred, float("inf"),
            )  # fmt: skip
            cache[key] = (dense[0] + experts[0], dense[1] + experts[1])
        per_layer[i], per_step[i] = cache[key]
    return per_layer, per_step


def _dp_calls_s(
    flavour: str,
    pricer: Pricer,
    ranks: tuple[int, ...],
    model_bytes: float,
    layers: int,
    pp: int,
    deferred: bool,
    bucket_bytes: float = BUCKET_BYTES,
) -> tuple[float, float]:
    """(per layer and micro-batch, per step) [s] of a built-in DP flavour's operations on
    ``ranks`` for ``model_bytes`` of parameters per GPU of the whole model (``1 / pp`` of
    them on a stage, ``1 / layers`` in a layer), the gradients in ``bucket_bytes`` calls."""
    if len(ranks) < 2 or model_bytes <= 0:
        return 0.0, 0.0
    stage = model_bytes / pp
    layer = model_bytes / layers
    buckets = max(1, -int(-stage // bucket_bytes))
    if flavour == "fsdp":
        gather = pricer("all_gather", ranks, layer)[0]
        scatter = pricer("reduce_scatter", ranks, layer)[0]
        if deferred and pp > 1:
            return 0.0, layers / pp * scatter * 1e-6
        return (2 * gather + scatter) * 1e-6, 0.0
    if flavour == "ddp":
        return 0.0, buckets * pricer("all_reduce", ranks, stage / buckets)[0] * 1e-6
    scatter = buckets * pricer("reduce_scatter", ranks, stage / buckets)[0]
    return 0.0, (scatter + pricer("all_gather", ranks, stage)[0]) * 1e-6


def _expert_dp_group(lay: Layout) -> tuple[int, ...]:
    """The first expert data-parallel group (``groups.groups``' ``edp``): the ranks of the
    first stage, in order, ``ep x etp`` apart."""
    inner = math.gcd(lay.dp, lay.ep)
    grid = np.arange(lay.world).reshape(lay.dp // inner, lay.pp, inner, lay.cp, lay.tp)
    return tuple(np.sort(grid[:, 0].ravel())[:: lay.ep * lay.expert_tp].tolist())


def _first_ep_group(lay: Layout) -> tuple[int, ...]:
    """The first expert-parallel group (``groups.groups``' ``ep``): the ranks of the first
    stage, in order, ``etp`` apart."""
    inner = math.gcd(lay.dp, lay.ep)
    grid = np.arange(lay.world).reshape(lay.dp // inner, lay.pp, inner, lay.cp, lay.tp)
    return tuple(np.sort(grid[:, 0].ravel())[: lay.ep * lay.expert_tp : lay.expert_tp].tolist())


def _bounds(
    fabric: Fabric,
    model: ModelShape,
    layouts: Sequence[Layout],
    recipe: Recipe,
    sequence_parallel: Sequence[bool],
    flavours: Sequence[Strategy],
    recompute_modes: Sequence[str],
    pricer: Pricer,
    cp: Strategy | None = None,
    ep: Strategy | None = None,
) -> list[_Candidate]:
    """Stage one: lower bounds and memory of every candidate, the cheapest fit per layout.

    For each recompute mode (lightest first) and DP flavour (least sharded first), a
    layout that fits in memory keeps its first fit; once DDP or ZeRO-1/2 fits, heavier
    recompute modes only add time and the layout is settled.
    """
    geo = geometry(model)
    device, _ = make_device(
        fabric.gpu,
        recipe.precision,
        recipe.attention_kernel,
        recipe.power_W,
        recipe.compute_efficiency,
        recipe.fp8_attention_recipe,
    )
    cols = _Columns.of(layouts, sequence_parallel)
    times = _mode_free_times(fabric, model, geo, device, layouts, cols, recipe, pricer, cp, ep)
    stages = _StageSplit.of(model, cols.arr["pp"])
    limit = fabric.gpu.memory_GB * 1e9 * USABLE_MEMORY
    most_layers = np.maximum(np.maximum(stages.first, stages.last), stages.middle)
    shard_cache: dict[tuple[str, int, int], tuple[int, int, int]] = {}
    best: dict[tuple[int, str], _Candidate] = {}
    settled = np.zeros(len(layouts), dtype=bool)
    for mode in recompute_modes:
        pipe, tau_max = _pipeline_s(mode, model, recipe, cols, times, stages)
        memory = _StageMemory.of(mode, geo, recipe, cols, stages)
        for flavour in flavours:
            mem, opt_s = _fit(flavour, model, layouts, recipe, device, memory, shard_cache)
            for i in np.flatnonzero((mem <= limit) & ~settled).tolist():
                if (i, mode) not in best:
                    best[(i, mode)] = _Candidate(
                        float(pipe[i] + opt_s[i]),
                        layouts[i],
                        mode,
                        flavour.name,
                        float(times.fb[i]),
                        float(tau_max[i]),
                        int(most_layers[i]),
                    )
        # A layout that fits with DDP or ZeRO-1/2 (the same traffic) gains nothing from
        # recomputing more: heavier recompute modes only add time.
        for i in range(len(layouts)):
            cand = best.get((i, mode))
            if cand is not None and cand.dp_flavour in ("ddp", "zero1", "zero2"):
                settled[i] = True
    return list(best.values())


@dataclass(frozen=True)
class _Columns:
    """The candidates' layouts as columns (one entry per candidate)."""

    arr: dict[str, np.ndarray]
    """Float columns: tp, cp, pp, dp, ep, vpp, microbatches, seq_len, etp (the expert TP)."""
    b: np.ndarray
    """Sequences per micro-batch."""
    sp: np.ndarray
    """1.0 where TP runs with sequence parallelism."""

    @classmethod
    def of(cls, layouts: Sequence[Layout], sequence_parallel: Sequence[bool]) -> _Columns:
        """The columns of ``layouts``."""
        arr = {
            name: np.array([getattr(lay, name) for lay in layouts], dtype=np.float64)
            for name in ("tp", "cp", "pp", "dp", "ep", "vpp", "microbatches", "seq_len")
        }
        arr["etp"] = np.array([lay.expert_tp for lay in layouts], dtype=np.float64)
        b = np.array([lay.micro_batch for lay in layouts])
        return cls(arr, b, np.array(sequence_parallel, dtype=np.float64))


@dataclass(frozen=True)
class _ModeFreeTimes:
    """Per-candidate times that do not depend on the recompute mode [s]."""

    parts: list[tuple[float, LayerCost]]
    """The layer kinds (dense/MoE, full/windowed attention) and their shares."""
    fb: np.ndarray
    """Mean layer's forward and backward, one micro-batch."""
    gemm: np.ndarray
    """Its GEMMs (what TP communication can hide behind)."""
    attn_f: np.ndarray
    """Its attention core, forward (what CP's ring hides behind)."""
    attn_b: np.ndarray
    """Its attention core, backward."""
    tp_f: np.ndarray
    """TP collectives per layer, forward."""
    tp_b: np.ndarray
    """TP collectives per layer, backward."""
    tp_ag: np.ndarray
    """TP's forward all-gathers per layer (what op-level selective recompute issues
    again, ``comm.recomputes_again``)."""
    pp_mb: np.ndarray
    """Pipeline sends per micro-batch."""
    ring: RingComm
    """CP's operations per layer (``_ring_comm_s``)."""
    ep_f: np.ndarray
    """EP's dispatch and combine per layer, forward (``_ep_comm_s``)."""
    ep_b: np.ndarray
    """EP's dispatch and combine per layer, backward."""
    tp_in_node: np.ndarray
    """The TP group fits one NVLink (scale-up) domain: a node, or an NVL72 rack."""
    out_s: np.ndarray
    """Output layer and loss, forward and backward."""
    emb_s: np.ndarray
    """Embedding, forward and backward."""


def _mode_free_times(
    fabric: Fabric,
    model: ModelShape,
    geo: Geometry,
    device: Device,
    layouts: Sequence[Layout],
    cols: _Columns,
    recipe: Recipe,
    pricer: Pricer,
    cp: Strategy | None = None,
    ep: Strategy | None = None,
) -> _ModeFreeTimes:
    """The mean layer of every candidate (dense and MoE, windowed and full attention in
    their proportions), its critical-path communication (CP's from the ``cp`` strategy),
    the output layer and the embedding."""
    arr, b, sp = cols.arr, cols.b, cols.sp
    moe_share = geo.moe_layers / geo.layers
    win_share = geo.window_layers / geo.layers
    parts = []
    for moe, ms in ((False, 1 - moe_share), (True, moe_share)):
        for windowed, ws in ((False, 1 - win_share), (True, win_share)):
            if ms * ws > 0:
                cost = layer_cost(
                    device,
                    geo,
                    arr["tp"],
                    arr["cp"],
                    arr["ep"],
                    b,
                    arr["seq_len"],
                    sp,
                    recipe.attention,
                    moe=moe,
                    windowed=windowed,
                    kernels=recipe.kernels,
                    imbalance=recipe.moe_imbalance,
                    etp=arr["etp"],
                )
                parts.append((ms * ws, cost))
    fb = np.add.reduce([w * (c.fwd_s + c.bwd_s) for w, c in parts])
    gemm = sum(w * (c.gemm_fwd_s + c.gemm_bwd_s) for w, c in parts)
    tp_f, tp_b, tp_ag, pp_mb = _critical_comm_s(fabric, geo, layouts, arr, b, sp, pricer)
    domain = fabric.gpus_per_domain
    tp_in_node = (arr["tp"] <= domain) & (domain % arr["tp"] == 0)
    attn_f = sum(w * c.attn_fwd_s for w, c in parts)
    attn_b = sum(w * c.attn_bwd_s for w, c in parts)
    ring = _ring_comm_s(model, layouts, recipe, cp, pricer)
    ep_f, ep_b = _ep_comm_s(model, layouts, recipe, ep, pricer)
    out = output_layer_cost(device, geo, arr["tp"], arr["cp"], b, arr["seq_len"], recipe.loss)
    emb = embedding_cost(device, geo, arr["cp"], b, arr["seq_len"])
    return _ModeFreeTimes(
        parts=parts,
        fb=fb,
        gemm=np.asarray(gemm),
        attn_f=np.asarray(attn_f),
        attn_b=np.asarray(attn_b),
        tp_f=tp_f,
        tp_b=tp_b,
        tp_ag=tp_ag,
        pp_mb=pp_mb,
        ring=ring,
        ep_f=ep_f,
        ep_b=ep_b,
        tp_in_node=tp_in_node,
        out_s=out.fwd_s + out.bwd_s,
        emb_s=emb.fwd_s + emb.bwd_s,
    )


@dataclass(frozen=True)
class _StageSplit:
    """Layers of each candidate's first, last and largest middle pipeline stage."""

    first: np.ndarray
    """Layers of the first stage."""
    last: np.ndarray
    """Layers of the last stage."""
    middle: np.ndarray
    """Layers of the largest middle stage (0 without one)."""
    single: np.ndarray
    """No pipeline: the first stage is the last."""

    @classmethod
    def of(cls, model: ModelShape, pp: np.ndarray) -> _StageSplit:
        """The stages ``schedule.stage_layers`` gives each candidate's ``pp``."""
        split = {int(p): schedule.stage_layers(model.layers, int(p)) for p in set(pp)}
        return cls(
            first=np.array([split[int(p)][0] for p in pp], dtype=np.float64),
            last=np.array([split[int(p)][-1] for p in pp], dtype=np.float64),
            middle=np.array([max(split[int(p)][1:-1] or [0]) for p in pp], dtype=np.float64),
            single=pp == 1,
        )


def _pipeline_s(
    mode: str,
    model: ModelShape,
    recipe: Recipe,
    cols: _Columns,
    times: _ModeFreeTimes,
    stages: _StageSplit,
) -> tuple[np.ndarray, np.ndarray]:
    """(pipeline per step, slowest stage's micro-batch) [s] under a recompute mode: each
    layer's compute, recompute and the TP and CP communication its overlap leaves exposed,
    the stages' micro-batches and the schedule ``m * max(tau) + (sum(tau) - max(tau)) / v``."""
    t = times
    rec = sum(
        w * c.recompute_s(mode, recipe.selective, recipe.recompute_modules) for w, c in t.parts
    )
    tp_comm = t.tp_f * (2.0 if mode == "full" else 1.0) + t.tp_b
    if mode == "selective" and recipe.selective_kind == "ops":
        tp_comm = tp_comm + t.tp_ag
    if recipe.tp_overlap:
        tp_comm = np.where(t.tp_in_node, np.maximum(0.0, tp_comm - t.gemm), tp_comm)
    cp_comm = _ring_exposed_s(t.ring, t.attn_f, t.attn_b, cols.arr["cp"], mode, recipe)
    ep_comm = t.ep_f * (2.0 if mode == "full" else 1.0) + t.ep_b
    per_layer = t.fb + rec + tp_comm + cp_comm + ep_comm
    single = stages.single
    tau0 = stages.first * per_layer + t.emb_s + np.where(single, t.out_s, 0.0) + t.pp_mb
    taul = np.where(single, tau0, stages.last * per_layer + t.out_s + t.pp_mb)
    taum = stages.middle * per_layer + t.pp_mb
    tau_max = np.maximum(np.maximum(tau0, taul), taum)
    total = model.layers * per_layer + t.emb_s + t.out_s
    pipe = cols.arr["microbatches"] * tau_max + (total - tau_max) / cols.arr["vpp"]
    return pipe, tau_max


@dataclass(frozen=True)
class _StageMemory:
    """Activations [bytes] and parameters of the first, last and largest middle stage."""

    acts0: np.ndarray
    """First stage's activations (and PyTorch's ring attention's buffers)."""
    actsl: np.ndarray
    """Last stage's activations and logits (and the ring's buffers)."""
    actsm: np.ndarray
    """Middle stage's activations (and the ring's buffers)."""
    params0: np.ndarray
    """First stage's parameters (embedding; the output layer too without a pipeline)."""
    paramsl: np.ndarray
    """Last stage's parameters (output layer)."""
    paramsm: np.ndarray
    """Middle stage's parameters."""
    experts0: np.ndarray
    """Routed-expert parameters among the first stage's."""
    expertsl: np.ndarray
    """Routed-expert parameters among the last stage's."""
    expertsm: np.ndarray
    """Routed-expert parameters among the middle stage's."""

    @classmethod
    def of(
        cls, mode: str, geo: Geometry, recipe: Recipe, cols: _Columns, stages: _StageSplit
    ) -> _StageMemory:
        """What each stage holds under a recompute mode (the micro-batches in flight on
        it, ``schedule.in_flight``)."""
        arr, b, sp = cols.arr, cols.b, cols.sp

        def stage_acts(layers: np.ndarray, stage_of: Callable[[int], int]) -> np.ndarray:
            """Activation bytes of a stage holding ``layers``, ``stage_of(pp)`` its index."""
            flight = np.array(
                [
                    schedule.in_flight(int(p), int(mm), int(v), stage_of(int(p)))
                    for p, mm, v in zip(arr["pp"], arr["microbatches"], arr["vpp"])
                ],
                dtype=np.float64,
            )
            return activation_bytes(
                geo, layers, flight, arr["tp"], arr["cp"], b, arr["seq_len"], sp, mode,
                recipe.attention, recipe.kv_repeated, recipe.selective_kind,
                recipe.passes == "eager", recipe.recompute_modules, recipe.unfused_clamp,
                arr["etp"],
            )  # fmt: skip

        logits = logits_bytes(geo, arr["tp"], arr["cp"], b, arr["seq_len"], recipe.loss)
        ring = np.zeros(len(b))
        if recipe.cp_attention == "torch":  # as the plan adds it (step._ring_buffers)
            eager = recipe.passes == "eager"
            ring = ring_attention_bytes(geo, arr["tp"], arr["cp"], b, arr["seq_len"], eager)
        tp, ep, etp = arr["tp"], arr["ep"], arr["etp"]
        params_single = stage_params(geo, stages.first, tp, ep, True, True, etp)
        return cls(
            acts0=stage_acts(stages.first, lambda p: 0) + ring,
            actsl=stage_acts(stages.last, lambda p: p - 1) + logits + ring,
            actsm=stage_acts(stages.middle, lambda p: 1) + ring,
            params0=np.where(
                stages.single,
                params_single,
                stage_params(geo, stages.first, tp, ep, True, False, etp),
            ),
            paramsl=np.where(
                stages.single,
                params_single,
                stage_params(geo, stages.last, tp, ep, False, True, etp),
            ),
            paramsm=stage_params(geo, stages.middle, tp, ep, False, False, etp),
            experts0=stage_expert_params(geo, stages.first, ep, etp),
            expertsl=stage_expert_params(geo, stages.last, ep, etp),
            expertsm=stage_expert_params(geo, stages.middle, ep, etp),
        )


def _fit(
    flavour: Strategy,
    model: ModelShape,
    layouts: Sequence[Layout],
    recipe: Recipe,
    device: Device,
    memory: _StageMemory,
    shard_cache: dict[tuple[str, int, int], tuple[int, int, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """(memory of the most loaded stage [bytes], optimizer step [s]) of every candidate
    under a DP flavour's sharding of weights, gradients and optimizer states (the weights
    and gradients a framework that defers FSDP's sync under PP holds unsharded, as the
    plan counts them: ``memory.held_shards``)."""
    w, g, o = _shard_arrays(flavour, model, layouts, shard_cache)
    dp_ranks = np.array([lay.dp * lay.cp for lay in layouts], dtype=np.float64)
    edp = np.array([lay.expert_dp for lay in layouts], dtype=np.float64)
    pp = np.array([lay.pp for lay in layouts], dtype=np.float64)
    grad = recipe.grad_bytes
    w, g, held_grad = held_shards(
        w, g, grad, recipe.fsdp_reduce_bytes, pp, recipe.pp_defers_fsdp_sync
    )
    ew, eg, eo = (expert_shards(x, dp_ranks, edp) for x in (w, g, o))
    opt = recipe.optimizer_bytes
    per_param = WEIGHT_BYTES / w + held_grad / g + opt / o
    per_expert = WEIGHT_BYTES / ew + held_grad / eg + opt / eo

    def states(params: np.ndarray, experts: np.ndarray) -> np.ndarray:
        return (params - experts) * per_param + experts * per_expert

    mem = np.maximum(
        np.maximum(
            states(memory.params0, memory.experts0) + memory.acts0,
            states(memory.paramsl, memory.expertsl) + memory.actsl,
        ),
        states(memory.paramsm, memory.expertsm) + memory.actsm,
    )
    updated = np.maximum(
        (memory.params0 - memory.experts0) / o + memory.experts0 / eo,
        (memory.paramsl - memory.expertsl) / o + memory.expertsl / eo,
    )
    return mem, updated * (adam_step_bytes(opt) + grad) / device.hbm_Bps


def _shard_arrays(
    flavour: Strategy,
    model: ModelShape,
    layouts: Sequence[Layout],
    cache: dict[tuple[str, int, int], tuple[int, int, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, grads, optimizer) shard counts of every layout under a DP flavour."""
    out = np.ones((len(layouts), 3))
    for i, lay in enumerate(layouts):
        key = (flavour.name, lay.dp, lay.cp)
        if key not in cache:
            shards = flavour.state_shards(model, lay)
            cache[key] = (shards.weights, shards.grads, shards.optimizer)
        out[i] = cache[key]
    return out[:, 0], out[:, 1], out[:, 2]


def search_layouts(
    fabric: Fabric,
    model: ModelShape,
    strategies: Iterable[Strategy],
    global_batch: int,
    seq_len: int,
    top: int = 10,
    mfu: float | None = None,
    evaluate: PricerLike = None,
    recipe: Recipe | None = None,
    sequence_parallel: bool | None = None,
    space: SearchSpace | None = None,
    ranks: npt.NDArray[np.int64] | None = None,
) -> list[PlanReport]:
    """The ``top`` fastest layouts of ``model`` on all the fabric's GPUs (or a job's,
    ``ranks``) that fit in memory.

    Args:
        fabric: The fabric.
        model: The model shape.
        strategies: The strategies to plan with: the DP flavours among them are the ones
            tried (``DP_FLAVOURS`` order; one of them: it is fixed), TP (``tp`` or ``tp-sp``),
            PP, EP and CP are used where they apply, any other strategy is added to every
            plan.
        global_batch: Sequences per optimizer step.
        seq_len: Tokens per sequence.
        top: How many plans to return.
        mfu: Legacy fixed MFU (every candidate planned in full; slow on large fabrics).
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.
        recipe: Precision, attention kernel and overlaps (recompute is searched).
        sequence_parallel: Use SP with TP (default: when ``tp-sp`` is among the strategies).
        space: What to vary (default: everything).
        ranks: The GPUs of a job (whole hosts): layouts use exactly these, and each plan
            kept is priced on them; the pruning bounds are the first GPUs' (packed), which
            are no slower than the job's.

    Returns:
        Plans sorted by step time (ties: smaller tp, pp, cp, more micro-batches).

    Raises:
        EngineError: Bad batch, sequence or ``top``, no valid layout, or none that fits.
    """
    for name, value in (("global batch", global_batch), ("seq", seq_len), ("top", top)):
        if value < 1:
            raise EngineError(f"{name} must be at least 1 (got {value})")
    recipe = recipe or era_recipe(fabric.gpu.arch)
    if mfu is not None:
        recipe = dataclasses.replace(recipe, mfu=mfu)
    space = space or SearchSpace()
    pool = list(strategies)
    by_name = {s.name: s for s in pool}
    flavours = _flavours(pool, space)
    if not flavours:
        raise EngineError("no data-parallel strategy to search with (ddp, zero1, zero2, fsdp)")
    flavour_names = {f.name for f in flavours} | set(DP_FLAVOURS) | {"hsdp"}
    core = {"tp", "tp-sp", "pp", "ep", "cp"}
    extras = [s for s in pool if s.name not in core and s.name not in flavour_names]
    if sequence_parallel is None:
        sequence_parallel = "tp-sp" in by_name and "tp" not in by_name
    tp_strategy = by_name.get("tp-sp" if sequence_parallel else "tp") or by_name.get("tp")
    parallel = [
        s for s in (tp_strategy, by_name.get("pp"), by_name.get("ep"), by_name.get("cp")) if s
    ]
    n_gpus = fabric.n_gpus if ranks is None else len(ranks)
    layouts = candidate_layouts(n_gpus, model, global_batch, seq_len, space)
    if not layouts:
        raise EngineError(
            f"no valid layout of {model.id} on {n_gpus} GPUs with global batch {global_batch}"
        )
    modes = space.recompute if recipe.mfu is None else (recipe.recompute,)
    sp_flags = [bool(sequence_parallel) and lay.tp > 1 for lay in layouts]
    pricer = as_pricer(fabric, evaluate)
    candidates = _bounds(
        fabric, model, layouts, recipe, sp_flags, flavours, modes, pricer, by_name.get("cp"),
        by_name.get("ep"),
    )  # fmt: skip
    if not candidates:
        raise EngineError(
            f"no layout of {model.id} fits in {fabric.gpu.memory_GB:g} GB per GPU on "
            f"{n_gpus} GPUs, even with FSDP and full recomputation; add GPUs"
        )
    queue = [(c.bound_s, _tie(c.layout), i, False) for i, c in enumerate(candidates)]
    heapq.heapify(queue)
    dp_cache: dict[tuple[str, int, int, int, int, int, int], tuple[float, float]] = {}
    kept: list[tuple[float, int, PlanReport]] = []
    while queue:
        bound_s, tie, index, refined = heapq.heappop(queue)
        if len(kept) >= top and bound_s * 1e6 > -kept[0][0]:
            break
        cand = candidates[index]
        if not refined:
            better = _refined_s(cand, fabric, model, pricer, recipe, dp_cache)
            heapq.heappush(queue, (max(better, bound_s), tie, index, True))
            continue
        chosen = [by_name[cand.dp_flavour], *parallel, *extras]
        report = plan(
            fabric,
            model,
            cand.layout,
            chosen,
            evaluate=pricer,
            recipe=dataclasses.replace(recipe, recompute=cand.recompute),
            ranks=ranks,
        )
        if not report.fits:
            continue
        item = (-report.step_us, -index, report)
        if len(kept) < top:
            heapq.heappush(kept, item)
        elif item > kept[0]:
            heapq.heapreplace(kept, item)
    reports = [r for _, _, r in kept]
    reports.sort(key=lambda r: (r.step_us, _tie(r.layout)))
    return reports


def _tie(layout: Layout) -> tuple[int, ...]:
    return (
        layout.tp, layout.pp, layout.cp, layout.ep, -layout.microbatches, layout.vpp,
        -layout.expert_tp,
    )  # fmt: skip


def _flavours(pool: Sequence[Strategy], space: SearchSpace) -> list[Strategy]:
    """The DP strategies to try, least sharded first; a plugin's DP flavour counts too when
    it is the only one given."""
    names = space.dp_flavours
    known = [s for name in DP_FLAVOURS for s in pool if s.name == name]
    if names is not None:
        chosen = [s for s in pool if s.name in names]
        order = {n: i for i, n in enumerate(DP_FLAVOURS)}
        return sorted(chosen, key=lambda s: order.get(s.name, -1))
    return known
