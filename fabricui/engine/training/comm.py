"""What part of each operation's time the step waits for: exposure by scope and window.

An operation runs in every layer of every micro-batch (``layer``), once per micro-batch
(``microbatch``) or once per step (``step``) (``CommOp.scope``). What it can hide behind:

- ``layer``: overlappable operations hide behind their axis's window in that layer (CP's
  ring behind the attention core, PyTorch's ring attention's forward all-gather behind the
  first ring step's attention and its backward ring behind the attention's backward;
  FSDP's prefetched gathers and other overlappable operations behind the layer's
  compute); TP and EP collectives are on the critical path unless TP / EP overlap is
  switched on, then they hide behind the layer's GEMMs (TP only when its group sits in one
  node: the overlap runs over NVLink); EP's behind another micro-batch's pass as
  Megatron-Core's combined 1F1B schedule pairs them (``paired_ep_exposure``), where the
  MoE layer's compute is known;
- ``microbatch``: pipeline sends are on the critical path;
- ``step``: with DP overlap, overlappable operations (bucketed gradient reduction, ZeRO's
  parameter gather) hide behind one micro-batch's backward and forward; without it, and
  for non-overlappable ones, the step waits for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import Recipe
from fabricui.engine.training.userbuffers import Pairing, pairing_exposure_s
from fabricui.engine.types import CommOp

#: Breakdown category of each group axis.
CATEGORY = {
    "tp": "tp",
    "cp": "cp",
    "ep": "ep",
    "pp": "pp",
    "dp": "dp",
    "edp": "dp",
    "dp_intra": "dp",
    "dp_inter": "dp",
}
#: Categories of exposed communication, in report order.
CATEGORIES = ("tp", "cp", "pp", "dp", "ep")
#: SMs a bandwidth-bound NCCL collective holds while it runs beside compute: one thread
#: block per channel, 16 channels (the "16 coll channels" NCCL's INFO log reports on an
#: 8-GPU NVLink node with one NIC per GPU).
COLLECTIVE_SMS = 16


#: SMs Megatron-Core's flex dispatcher holds while it runs beside compute, by backend:
#: HybridEP's ``moe_hybridep_num_sms``, which Megatron-Bridge's performance scripts set
#: to 32 for every HybridEP run (``scripts/performance/utils/overrides.py`` at 21d102f5e
#: and 4ab94dfad; the GPT-OSS 120B full-iteration recipe sets the same 32,
#: ``perf_recipes/gpt_oss/common.py``), and DeepEP's ``moe_deepep_num_sms``, 20 unless
#: set (Megatron-LM ``transformer_config.py``, "historical default 20").
HYBRIDEP_SMS = 32
DEEPEP_SMS = 20
#: The compute of an MoE layer under EP overlap, in the order the compute stream runs it
#: for a pair of layers (one micro-batch's forward of a layer, another's backward of one)
#: (``TransformerLayerSchedulePlan.run``, Megatron-LM d98e8a64dd
#: ``models/common/model_chunk_schedule_plan.py``).
EP_COMPUTE = (
    "attention block forward",
    "experts' input gradients",
    "experts' weight gradients",
    "experts forward",
    "attention block input gradients",
    "attention block weight gradients",
)
#: Layer pairs the EP overlap schedule is run for to reach its steady period.
_PAIRS = 16


def collective_sm_share(sms: int | None) -> float:
    """Share of a GPU's SMs an overlapped collective takes from the compute beside it."""
    return min(1.0, COLLECTIVE_SMS / sms) if sms else 0.0


@dataclass(frozen=True)
class Windows:
    """Compute an operation can hide behind on the critical stage [s]."""

    gemm_s: float
    """GEMMs of one layer, one micro-batch, forward and backward."""
    expert_s: float
    """Expert GEMMs of one (MoE) layer, one micro-batch."""
    attention_s: float
    """Attention core of one layer, one micro-batch."""
    layer_s: float
    """One layer, one micro-batch, forward and backward."""
    microbatch_s: float
    """Forward and backward of one micro-batch on the stage."""
    layer_fwd_s: float = 0.0
    """One layer's forward, one micro-batch (0: a third of ``layer_s``)."""
    microbatch_fwd_s: float = 0.0
    """Forward of one micro-batch on the stage (0: a third of ``microbatch_s``)."""
    sm_share: float = 0.0
    """Share of the GPU's SMs a collective holds while it runs beside compute (NCCL runs
    one thread block per channel on an SM of its own): hidden communication slows the
    compute it overlaps by this share of its time."""
    ring_first_fwd_s: float = 0.0
    """Attention forward of the first of the ``cp`` ring steps (the rank's own chunk,
    ``1 / cp`` of the attention's work): the only compute PyTorch's ring attention hides
    its forward all-gather of keys and values behind."""
    attention_bwd_s: float = 0.0
    """Attention core of one layer, one micro-batch, backward."""
    tp_fused_s: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    """Per TP collective (``all_gather``, ``reduce_scatter``): the forward GEMMs each of a
    layer's calls is decomposed with under decomposed TP overlap, in layer order (the
    attention's, then the MLP's) [s]; empty: those calls hide behind ``gemm_s``."""
    tp_fused_recompute_s: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    """The same for the calls recomputation issues again: the recomputed GEMMs each is
    decomposed with [s] (a collective missing here: its recomputed calls are exposed)."""
    hbm_Bps: float = 0.0
    """The GPU's memory bandwidth [B/s], for the memory passes decomposed TP overlap and
    userbuffers' ring exchange add (0: none priced)."""
    tp_userbuffers: dict[str, tuple[Pairing, ...]] = dataclasses.field(default_factory=dict)
    """Per TP collective and pass (``forward:all_gather``, ``backward:reduce_scatter``...):
    the GEMM Transformer Engine's userbuffers overlaps each of a layer's calls with, and
    how (``userbuffers``); empty: those calls hide behind ``gemm_s``."""
    sms: int = 0
    """The GPU's SMs, for the SMs userbuffers' kernels take from the GEMMs (0: none)."""
    ep_compute_s: tuple[float, ...] = ()
    """Under EP overlap, an MoE layer's compute for one micro-batch in the pieces its
    schedule runs the all-to-alls beside (``EP_COMPUTE``) [s]; empty: EP hides behind
    ``expert_s``."""
    moe_share: float = 1.0
    """MoE layers over all layers (EP's per-layer time is averaged over all of them)."""
    ep_unpaired: float = 0.0
    """Share of the forward and of the backward passes EP overlap runs alone
    (``schedule.unpaired_share``): their all-to-alls are exposed."""
    ep_sm_share: float = 0.0
    """Share of the GPU's SMs the overlapped dispatch and combine kernels hold
    (``ep_overlap_sm_share``)."""

    def forward(self, scope: str) -> float:
        """The forward part of a layer's or a micro-batch's window."""
        total, fwd = (
            (self.layer_s, self.layer_fwd_s)
            if scope == "layer"
            else (self.microbatch_s, self.microbatch_fwd_s)
        )
        return fwd if fwd > 0 else total / 3.0

    def backward(self, scope: str) -> float:
        """The backward part (with any recomputation) of a layer's or a micro-batch's window."""
        total = self.layer_s if scope == "layer" else self.microbatch_s
        return max(0.0, total - self.forward(scope))


@dataclass(frozen=True)
class Exposure:
    """Exposed communication by category: per layer and micro-batch, per micro-batch, and
    per step [s]."""

    per_layer_s: dict[str, float]
    """Each layer, each micro-batch."""
    per_microbatch_s: dict[str, float]
    """Each micro-batch (once per stage)."""
    per_step_s: dict[str, float]
    """Once per step."""


def with_recompute(priced: Sequence[PricedOp], recipe: Recipe) -> list[PricedOp]:
    """Full recomputation issues forward collectives again: double their calls. PyTorch's
    op-level selective recomputation (``selective`` ``ops``) issues TP's forward
    all-gathers again: the policy saves the reduce-scatters' outputs, not the
    all-gathered inputs the recomputed projections read (``recomputes_again``)."""
    return [
        dataclasses.replace(p, count=p.op.count * 2) if recomputes_again(p.op, recipe) else p
        for p in priced
    ]


def recomputes_again(op: CommOp, recipe: Recipe) -> bool:
    """True when the recompute mode issues ``op`` again: every forward collective a
    strategy marks ``recomputed`` under full recomputation; under op-level selective
    recomputation TP's forward all-gathers (torchtitan's policy,
    ``parallelize_llama.py`` at 9dec370, saves ``reduce_scatter_tensor`` outputs and
    recomputes everything not in its list, the sequence-parallel all-gather of each
    norm's output included; the attention, whose output is saved, runs no ring again)."""
    if not op.recomputed:
        return False
    if recipe.recompute == "full":
        return True
    ops = recipe.recompute == "selective" and recipe.selective_kind == "ops"
    return ops and op.group == "tp" and op.collective == "all_gather"


def expose(
    priced: Sequence[PricedOp],
    recipe: Recipe,
    layers_per_stage: float,
    microbatches: int,
    windows: Windows,
    tp_in_node: bool = True,
) -> Exposure:
    """Exposed time of every category per layer, per micro-batch and per step.

    Layer scope: TP and EP collectives are exposed unless their overlap is on (then they
    hide behind the layer's GEMMs, EP's behind the other micro-batch's pass of the
    combined 1F1B schedule, ``paired_ep_exposure``, or without ``ep_compute_s`` behind the
    expert GEMMs; with ``tp_overlap_backward`` off, only the forward's TP collectives
    hide; decomposed TP overlap and Transformer Engine's userbuffers hide each behind its
    own GEMMs, ``decomposed_tp_exposure`` and ``userbuffers_tp_exposure``); CP's ring
    hides behind the attention core; other overlappable operations (FSDP's prefetched gathers and
    reductions) hide behind the pass they run in (``CommOp.phase``: a forward gather
    behind the layer's forward, a backward gather and the gradient reduce-scatter behind
    its backward), and one call of each per micro-batch cannot be prefetched (the first
    layer's gather, the last layer's reduction). Step scope, with DP overlap: the bucketed
    gradient reduction hides behind the last micro-batch's backward but its last bucket
    (the first layers' gradients) is exposed; the parameter gather behind the first
    forward, its first bucket exposed. What NCCL hides still takes ``sm_share`` of the
    compute it overlaps (TP overlap excepted: it runs on Transformer Engine's userbuffers).

    Args:
        priced: Operations with their per-call time; ``calls`` are per step per GPU.
        recipe: Which overlaps are on.
        layers_per_stage: Layers the strategies counted per stage (``layers / pp``).
        microbatches: Micro-batches per step.
        windows: Compute on the critical stage to hide behind.
        tp_in_node: The TP group sits in one node (TP overlap works over NVLink only).

    Returns:
        The exposure, every category present in each dict.
    """
    per_layer = {c: 0.0 for c in CATEGORIES}
    per_mb = {c: 0.0 for c in CATEGORIES}
    per_step = {c: 0.0 for c in CATEGORIES}
    hideable: dict[tuple[str, str], float] = {}
    exposed: dict[str, float] = {}
    step_hidden: dict[str, list[PricedOp]] = {}
    paired: dict[str, float] = {}
    mb = max(microbatches, 1)
    per_layer_calls = max(layers_per_stage, 1e-9) * mb
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        time_s = p.time_us * 1e-6
        scope = p.op.resolved_scope
        if scope == "layer":
            each = time_s / per_layer_calls
            if _paired_ep(p, recipe, windows):
                phase = "forward" if p.op.phase == "forward" else "backward"
                paired[phase] = paired.get(phase, 0.0) + each
            elif _decomposed(p, recipe, windows, tp_in_node):
                exposed[cat] = exposed.get(cat, 0.0) + decomposed_tp_exposure(
                    p, per_layer_calls, windows
                )
            elif _userbuffers(p, recipe, windows, tp_in_node):
                exposed[cat] = exposed.get(cat, 0.0) + userbuffers_tp_exposure(
                    p, per_layer_calls, windows
                )
            elif _hides_in_layer(p, recipe, tp_in_node):
                key = (cat, _layer_phase(p))
                hideable[key] = hideable.get(key, 0.0) + each
                if _prefetched(p):  # the first gather / the last reduction of each pass
                    per_mb[cat] = per_mb.get(cat, 0.0) + p.call_us * 1e-6
            else:
                exposed[cat] = exposed.get(cat, 0.0) + each
        elif scope == "microbatch":
            per_mb[cat] = per_mb.get(cat, 0.0) + time_s / mb
        elif p.op.overlappable and recipe.dp_overlap:
            step_hidden.setdefault(p.op.phase or "backward", []).append(p)
            per_step[cat] = per_step.get(cat, 0.0)
        else:
            per_step[cat] = per_step.get(cat, 0.0) + time_s
    for cat in {c for c, _ in hideable} | set(exposed):
        left = 0.0
        for (c, phase), total in hideable.items():
            if c != cat:
                continue
            window = _layer_window(cat, phase, recipe, windows, tp_in_node)
            # TP overlap runs on Transformer Engine's userbuffers (copy engines and a few
            # SMs of its own), not on NCCL channels beside the GEMMs: no SM share.
            share = 0.0 if cat == "tp" else windows.sm_share
            left += max(0.0, total - window) + share * min(total, window)
        per_layer[cat] = per_layer.get(cat, 0.0) + exposed.get(cat, 0.0) + left
    if paired:
        per_layer["ep"] += paired_ep_exposure(
            paired.get("forward", 0.0), paired.get("backward", 0.0), windows
        )
    _cap(priced, per_layer, per_mb, per_layer_calls, mb)
    for phase, ops in step_hidden.items():
        window = windows.forward("step") if phase == "forward" else windows.backward("step")
        total = sum(p.time_us for p in ops) * 1e-6
        tail = max(p.call_us for p in ops) * 1e-6
        left = max(tail, total - window) + windows.sm_share * min(total - tail, window)
        for p in ops:
            cat = CATEGORY.get(p.op.group, p.op.group)
            share = p.time_us * 1e-6 / total if total > 0 else 0.0
            per_step[cat] = per_step.get(cat, 0.0) + left * share
    return Exposure(per_layer, per_mb, per_step)


def _cap(
    priced: Sequence[PricedOp],
    per_layer: dict[str, float],
    per_mb: dict[str, float],
    per_layer_calls: float,
    microbatches: int,
) -> None:
    """Never more exposed than there is communication: a category's layer and micro-batch
    exposure together at most its layer and micro-batch operations' time (in place)."""
    layers = per_layer_calls / microbatches
    totals: dict[str, float] = {}
    for p in priced:
        if p.op.resolved_scope in ("layer", "microbatch"):
            cat = CATEGORY.get(p.op.group, p.op.group)
            totals[cat] = totals.get(cat, 0.0) + p.time_us * 1e-6 / microbatches
    for cat, total in totals.items():
        exposed = per_layer.get(cat, 0.0) * layers + per_mb.get(cat, 0.0)
        if exposed > total > 0:
            per_layer[cat] = per_layer.get(cat, 0.0) * total / exposed
            per_mb[cat] = per_mb.get(cat, 0.0) * total / exposed


def on_stage(priced: Sequence[PricedOp], layer_scale: float) -> list[PricedOp]:
    """The operations as the critical stage runs them: layer-scope calls scaled by its
    layers over the average stage's (strategies count ``layers / pp`` per stage)."""
    if layer_scale == 1.0:
        return list(priced)
    return [
        dataclasses.replace(p, count=p.calls * layer_scale) if p.op.resolved_scope == "layer" else p
        for p in priced
    ]


def _layer_phase(p: PricedOp) -> str:
    """The pass a layer-scope operation hides in: its phase, or the whole layer."""
    return p.op.phase if p.op.phase in ("forward", "backward") else ""


def _prefetched(p: PricedOp) -> bool:
    """A data-parallel operation of every layer that runs one layer ahead (FSDP's
    prefetched gather) or behind (its reduction): one call per pass is not hidden."""
    return p.op.group in ("dp", "edp", "dp_intra", "dp_inter") and p.op.overlappable


def _paired_ep(p: PricedOp, recipe: Recipe, windows: Windows) -> bool:
    """An EP all-to-all Megatron-Core's EP overlap schedules beside another micro-batch's
    pass (``paired_ep_exposure``)."""
    return p.op.group == "ep" and recipe.ep_overlap and bool(windows.ep_compute_s)


def _decomposed(p: PricedOp, recipe: Recipe, windows: Windows, tp_in_node: bool) -> bool:
    """A TP collective that decomposed TP overlap fuses with its GEMMs (forward pass)."""
    return (
        p.op.group == "tp"
        and recipe.tp_overlap
        and recipe.tp_overlap_decomposed
        and tp_in_node
        and p.op.phase == "forward"
        and p.op.collective in windows.tp_fused_s
    )


def decomposition_pass_bytes(collective: str, size_bytes: float, ranks: int) -> float:
    """Bytes through HBM a decomposed collective adds on the critical path, per call.

    PyTorch's ``fused_all_gather_matmul`` first copies the rank's shard into its
    symmetric-memory buffer and waits at a barrier before any GEMM starts (read and write
    the shard, ``size / ranks``); ``fused_matmul_reduce_scatter`` receives every rank's
    partial product of its rows and sums them after the pipeline (``torch.sum`` over the
    stacked partials: read ``size``, write ``size / ranks``), where NCCL's reduce-scatter
    reduces inside its own kernel (``torch/distributed/_symmetric_memory/__init__.py``,
    ``_pipelined_multi_all_gather_and_consume`` and ``_fused_matmul_reduce_scatter_impl``,
    pytorch/pytorch 006b161f; the same steps in the 2024 ``_pipelined_all_gather_and_consume``
    the async TP benchmark's June 2025 nightly descends from).

    Args:
        collective: ``all_gather`` or ``reduce_scatter``.
        size_bytes: The call's size in nccl-tests' convention (the gathered tensor; the
            tensor reduce-scattered).
        ranks: TP degree.

    Returns:
        Bytes (0 for another collective or a one-rank group).
    """
    if ranks <= 1:
        return 0.0
    if collective == "all_gather":
        return 2.0 * size_bytes / ranks
    if collective == "reduce_scatter":
        return size_bytes * (1.0 + 1.0 / ranks)
    return 0.0


def decomposed_tp_exposure(p: PricedOp, per_layer_calls: float, windows: Windows) -> float:
    """Exposed time of a forward TP collective under decomposed TP overlap, per layer and
    micro-batch [s].

    PyTorch's async TP (``torch._inductor`` ``micro_pipeline_tp`` pass) replaces
    ``all_gather -> matmul(s)`` with ``fused_all_gather_matmul`` (the GEMMs reading the
    gathered tensor: query, key and value, or gate and up) and ``matmul ->
    reduce_scatter`` with ``fused_matmul_reduce_scatter`` (the output or down projection),
    each GEMM cut into TP-degree row chunks computed while the next chunk moves: a
    collective hides behind its own GEMMs only, ``max(0, call - gemm)`` exposed per call,
    plus the decomposition's memory passes (``decomposition_pass_bytes``). Calls beyond a
    layer's forward ones are recomputed ones, decomposed with the recomputed GEMMs
    (``Windows.tp_fused_recompute_s``; exposed whole without any).

    Args:
        p: The priced operation (``calls`` per step per GPU).
        per_layer_calls: Layers per stage times micro-batches.
        windows: The fused GEMMs (``Windows.tp_fused_s``) and the memory bandwidth.
    """
    call_s = p.call_us * 1e-6
    calls = p.calls / per_layer_calls
    fused = windows.tp_fused_s[p.op.collective]
    forward_calls = min(calls, float(len(fused)))
    exposed = forward_calls / len(fused) * sum(max(0.0, call_s - w) for w in fused)
    again = calls - forward_calls
    if again > 0:
        recomputed = windows.tp_fused_recompute_s.get(p.op.collective, ())
        if recomputed:
            each = sum(max(0.0, call_s - w) for w in recomputed) / len(recomputed)
        else:
            each = call_s
        exposed += again * each
    if windows.hbm_Bps > 0:
        size = decomposition_pass_bytes(p.op.collective, p.op.size_bytes, len(p.ranks))
        exposed += calls * size / windows.hbm_Bps
    return exposed


def _userbuffers(p: PricedOp, recipe: Recipe, windows: Windows, tp_in_node: bool) -> bool:
    """A TP collective Transformer Engine's userbuffers overlaps with one GEMM."""
    return (
        p.op.group == "tp"
        and recipe.tp_overlap
        and bool(recipe.tp_userbuffers)
        and tp_in_node
        and userbuffers_key(p.op) in windows.tp_userbuffers
    )


def userbuffers_key(op: CommOp) -> str:
    """``Windows.tp_userbuffers``'s key of a TP operation: ``phase:collective``."""
    return f"{op.phase}:{op.collective}"


def userbuffers_tp_exposure(p: PricedOp, per_layer_calls: float, windows: Windows) -> float:
    """Exposed time of a TP collective under Transformer Engine's userbuffers, per layer
    and micro-batch [s].

    Each call hides behind the one GEMM it is paired with only, and costs what its method
    costs beside it (``userbuffers.pairing_exposure_s``). A layer's listed calls are its
    pairings in order; calls beyond them (full recomputation's forward again) repeat the
    pairings, and a pairing the strategies do not list (``Pairing.unlisted``) comes with
    each set of listed ones.

    Args:
        p: The priced operation (``calls`` per step per GPU).
        per_layer_calls: Layers per stage times micro-batches.
        windows: The pairings (``Windows.tp_userbuffers``), SMs and memory bandwidth.
    """
    pairings = windows.tp_userbuffers[userbuffers_key(p.op)]
    listed = sum(1 for x in pairings if not x.unlisted)
    if listed == 0:
        return 0.0
    sets = p.calls / per_layer_calls / listed
    each = sum(
        pairing_exposure_s(
            x,
            p.call_us * 1e-6,
            p.op.size_bytes,
            len(p.ranks),
            p.op.collective,
            windows.sms,
            windows.hbm_Bps,
        )
        for x in pairings
    )
    return sets * each


def ep_overlap_sm_share(moe_dispatch: str, sms: int | None, multi_node_domain: bool) -> float:
    """Share of a GPU's SMs the dispatch and combine take from the compute they overlap:
    NCCL's channels for the all-to-all dispatcher; for the flex one (``deepep``: its
    kernels run on SMs of their own) HybridEP's ``HYBRIDEP_SMS`` where the NVLink domain
    spans hosts (GB200 / GB300 NVL72, which only HybridEP supports: DeepEP runs on
    Ampere, Hopper, B200 and B300, Megatron-Bridge
    ``skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md``), else DeepEP's
    ``DEEPEP_SMS``."""
    if not sms:
        return 0.0
    if moe_dispatch != "deepep":
        held = COLLECTIVE_SMS
    else:
        held = HYBRIDEP_SMS if multi_node_domain else DEEPEP_SMS
    return min(1.0, held / sms)


def paired_layer_s(compute_s: Sequence[float], call_s: tuple[float, float]) -> float:
    """Steady period of one layer pair of Megatron-Core's combined 1F1B schedule [s].

    ``TransformerLayerSchedulePlan.run`` (Megatron-LM d98e8a64dd) issues, for the forward
    of layer ``l`` of micro-batch B and the backward of a layer of micro-batch A, the
    compute stream's attention block forward of B, A's expert input gradients, A's expert
    weight gradients (``delay_wgrad_compute``), B's experts, A's attention block input
    gradients and its weight gradients, and the communication stream's combine backward
    of A, dispatch forward of B, dispatch backward of A and combine forward of B. Each
    waits for what it reads: B's dispatch for its attention block, B's experts for its
    dispatch, B's combine for its experts, the next layer's attention block of B for that
    combine; A's expert gradients for its combine backward, its dispatch backward for
    them, its attention block for that dispatch, the next combine backward of A for its
    attention block's input gradients. Every operation starts when its stream is free and
    its input is ready; the period is taken between the middle and the last of
    ``_PAIRS`` pairs.

    Args:
        compute_s: The compute pieces of ``EP_COMPUTE`` [s].
        call_s: One forward and one backward all-to-all (dispatch or combine) [s].

    Returns:
        Time per layer pair once the schedule is steady [s].
    """
    block_f, exp_dgrad, exp_wgrad, exp_f, block_dgrad, block_wgrad = compute_s
    fwd_call, bwd_call = call_s
    comp = comm_free = 0.0
    combine_fwd_end = block_dgrad_end = 0.0
    starts = []
    for _ in range(_PAIRS):
        combine_bwd_end = max(comm_free, block_dgrad_end) + bwd_call
        block_f_start = max(comp, combine_fwd_end)
        starts.append(block_f_start)
        block_f_end = block_f_start + block_f
        dgrad_end = max(block_f_end, combine_bwd_end) + exp_dgrad
        dispatch_fwd_end = max(combine_bwd_end, block_f_end) + fwd_call
        wgrad_end = dgrad_end + exp_wgrad
        dispatch_bwd_end = max(dispatch_fwd_end, dgrad_end) + bwd_call
        exp_f_end = max(wgrad_end, dispatch_fwd_end) + exp_f
        combine_fwd_end = max(dispatch_bwd_end, exp_f_end) + fwd_call
        comm_free = combine_fwd_end
        block_dgrad_end = max(exp_f_end, dispatch_bwd_end) + block_dgrad
        comp = block_dgrad_end + block_wgrad
    half = _PAIRS // 2
    return (starts[-1] - starts[half - 1]) / (_PAIRS - half)


def paired_ep_exposure(forward_s: float, backward_s: float, windows: Windows) -> float:
    """Exposed EP time per layer and micro-batch under Megatron-Core's EP overlap [s].

    The combined 1F1B schedule runs one micro-batch's forward beside another's backward,
    layer by layer, the all-to-alls on a stream of their own (``paired_layer_s``): what
    the pair's period exceeds its compute by is exposed. The compute beside the
    all-to-alls loses ``ep_sm_share`` of its speed while they run: each piece is
    stretched by that share times the part of the compute the all-to-alls span (all of
    it once they take longer than it), so a schedule bound by its all-to-alls hides the
    slowdown under them. The passes the schedule runs
    alone (``ep_unpaired``: the first forward and the last backward, or the pipeline's
    warm-up and cool-down) expose their all-to-alls whole.

    Args:
        forward_s: The forward dispatch and combine, per layer (averaged over all layers)
            and micro-batch [s].
        backward_s: The same for the backward.
        windows: ``ep_compute_s``, ``moe_share``, ``ep_unpaired``, ``ep_sm_share``.

    Returns:
        Exposed time per layer (averaged over all layers) and micro-batch [s].
    """
    share = windows.moe_share
    if share <= 0:
        return forward_s + backward_s
    fwd_call, bwd_call = forward_s / share / 2.0, backward_s / share / 2.0
    calls = 2.0 * (fwd_call + bwd_call)
    compute = sum(windows.ep_compute_s)
    beside = min(1.0, calls / compute) if compute > 0 else 0.0
    slowed = [c * (1.0 + windows.ep_sm_share * beside) for c in windows.ep_compute_s]
    paired = max(0.0, paired_layer_s(slowed, (fwd_call, bwd_call)) - compute)
    unpaired = windows.ep_unpaired
    return share * (unpaired * calls + (1.0 - unpaired) * paired)


def _hides_in_layer(p: PricedOp, recipe: Recipe, tp_in_node: bool) -> bool:
    group = p.op.group
    if group == "tp" and recipe.tp_overlap and tp_in_node:
        return recipe.tp_overlap_backward or p.op.phase != "backward"
    if group == "ep" and recipe.ep_overlap:
        return True
    return p.op.overlappable


def _layer_window(
    category: str, phase: str, recipe: Recipe, windows: Windows, tp_in_node: bool
) -> float:
    if category == "tp":
        return windows.gemm_s if recipe.tp_overlap and tp_in_node else 0.0
    if category == "ep":
        return windows.expert_s if recipe.ep_overlap else 0.0
    if category == "cp":
        if recipe.cp_attention == "torch":
            return windows.ring_first_fwd_s if phase == "forward" else windows.attention_bwd_s
        return windows.attention_s
    if phase == "forward":
        return windows.forward("layer")
    if phase == "backward":
        return windows.backward("layer")
    return windows.layer_s


def spread(priced: Sequence[PricedOp], exposed_by_category_us: dict[str, float]) -> list[PricedOp]:
    """Each operation's share of its category's exposed time (in proportion to its time)."""
    totals: dict[str, float] = {}
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        totals[cat] = totals.get(cat, 0.0) + p.time_us
    out = []
    for p in priced:
        cat = CATEGORY.get(p.op.group, p.op.group)
        total = totals.get(cat, 0.0)
        share = p.time_us / total if total > 0 else 0.0
        out.append(dataclasses.replace(p, exposed_us=exposed_by_category_us.get(cat, 0.0) * share))
    return out
