"""The decision table: each strategy alone, its group inside one node vs across nodes.

A "node" of the table is a scale-up domain: a server, or every host of a rack that shares
one NVLink switch (GB200 NVL72), where a group across the rack's hosts still runs over
NVLink and the question a user asks is whether it survives across racks.

The reference step is priced with the same kernel model as a plan (``layer.py``): one
GPU runs ``microbatches`` micro-batches of one ``seq_len`` sequence of the whole model
(forward and backward, no recomputation). Every row compares its communication with that
compute. A strategy that does not apply to the model (EP on a dense model) is a row that
says so, with no figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.training.device import make_device
from fabricui.engine.training.flops import model_flops_per_token
from fabricui.engine.training.groups import Groups, IntArray
from fabricui.engine.training.layer import embedding_cost, output_layer_cost
from fabricui.engine.training.legacy import DEFAULT_MFU, compute_time_us
from fabricui.engine.training.pricing import Pricer, PricerLike, as_pricer, price_operations
from fabricui.engine.training.recipe import Recipe, era_recipe
from fabricui.engine.training.shape import geometry
from fabricui.engine.training.step import average_layer
from fabricui.engine.types import Layout, Strategy
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric
    from fabricui.model import ModelShape

#: Strategies of the decision table, in the seed's order of discussion.
TABLE_STRATEGIES = ("ddp", "fsdp", "hsdp", "tp", "pp", "ep")
#: Largest group the decision table uses by default (the usual TP / EP degree).
TABLE_MAX_DEGREE = 8
#: Micro-batches per GPU in the decision table's reference step.
TABLE_MICROBATCHES = 8
#: Tokens per micro-batch (one sequence) in the decision table's reference step.
TABLE_SEQ = 4096
#: Kept for callers of the first table, which priced EP on a dense model as top-2 MoE.
DENSE_EP_TOP_K = 2
#: Largest exposed communication, as a fraction of compute, the decision table calls OK.
OK_EXPOSED_FRACTION = 0.25
#: Up to this exposed fraction a cell is a plain "yes"; above it (and still OK) "marginal".
GOOD_EXPOSED_FRACTION = 0.10
#: Verdict of a strategy that does not apply to the model.
NOT_APPLICABLE = "n/a"


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
    """How the row was built when it needed an assumption, or why it does not apply."""
    applies: bool = True
    """False when the strategy does not apply to the model (EP on a dense model)."""

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
        """``yes``, ``marginal``, ``no``, ``n/a`` (does not apply) or ``-`` (not computed)."""
        return NOT_APPLICABLE if not self.applies else verdict(self.exposed_us_intra, self.step_us)

    @property
    def inter_verdict(self) -> str:
        """``yes``, ``marginal``, ``no``, ``n/a`` (does not apply) or ``-`` (one node)."""
        return NOT_APPLICABLE if not self.applies else verdict(self.exposed_us_inter, self.step_us)

    def to_json(self) -> dict[str, Any]:
        """One entry of ``strategies --json``'s ``strategies``."""
        return {
            "name": self.name,
            "applies": self.applies,
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


def _a(noun: str) -> str:
    """``noun`` with its indefinite article (``an NVLink domain``)."""
    return f"{'an' if noun.startswith(('NV', 'a', 'e', 'i', 'o', 'u')) else 'a'} {noun}"


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
    """Which parallelism survives this fabric: each strategy alone, its communication per
    step inside a node and across nodes against the compute it can hide behind."""

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
    """Model FLOPs utilisation of the reference step's compute."""
    rows: tuple[DecisionRow, ...]
    """One row per strategy (``TABLE_STRATEGIES`` order)."""
    compute_basis: str = ""
    """How the reference step's compute was priced (for the caption)."""
    missing: tuple[str, ...] = ()
    """Strategies of ``TABLE_STRATEGIES`` no loaded plugin registers (disabled or broken):
    left out of ``rows``."""
    unit: str = "node"
    """What *intra* stays inside and *inter* spans: ``node``, or ``NVLink domain`` where a
    domain spans hosts (``table_unit``)."""

    @property
    def span(self) -> str:
        """What the two columns compare: ``within a node and across nodes``."""
        return f"within {_a(self.unit)} and across {self.unit}s"

    @property
    def groups(self) -> str:
        """The caption's subject: ``each strategy alone on 8 GPUs``, naming the span where
        the table's node is not a server (an NVL72 rack's NVLink domain)."""
        alone = f"each strategy alone on {self.degree} GPUs"
        return alone if self.unit == "node" else f"{alone} {self.span}"

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
            "compute_basis": self.compute_basis,
            "ok_exposed_fraction": OK_EXPOSED_FRACTION,
            "strategies": [row.to_json() for row in self.rows],
            "missing": list(self.missing),
            "unit": self.unit,
        }


@dataclass(frozen=True)
class _Case:
    """One strategy's reference layout and its groups inside a node and across nodes."""

    layout: Layout
    intra: Groups | None
    inter: Groups | None
    note: str = ""
    applies: bool = True


def reference_compute_us(
    fabric: Fabric, model: ModelShape, seq_len: int, microbatches: int, recipe: Recipe | None = None
) -> tuple[float, float]:
    """Compute of the reference step on one GPU [us], and its MFU.

    The whole model (every layer, the embedding, the output layer and loss), forward and
    backward, for ``microbatches`` micro-batches of one ``seq_len`` sequence, priced with
    the kernel model (``plan``'s); recomputation is not part of it.
    """
    recipe = recipe or era_recipe(fabric.gpu.arch)
    geo = geometry(model)
    device, _ = make_device(
        fabric.gpu,
        recipe.precision,
        recipe.attention_kernel,
        recipe.power_W,
        recipe.compute_efficiency,
        recipe.fp8_attention_recipe,
    )
    layout = Layout(microbatches=microbatches, global_batch=microbatches, seq_len=seq_len)
    layer = average_layer(
        device, geo, layout, False, recipe.attention, recipe.kernels, recipe.moe_imbalance
    )
    out = output_layer_cost(device, geo, 1, 1, 1, seq_len, recipe.loss)
    emb = embedding_cost(device, geo, 1, 1, seq_len)
    per_mb = (
        model.layers * (layer.fwd_s + layer.bwd_s) + out.fwd_s + out.bwd_s + emb.fwd_s + emb.bwd_s
    )
    step_s = float(np.asarray(per_mb)) * microbatches

    flops = model_flops_per_token(geo, seq_len) * seq_len * microbatches
    return step_s * 1e6, flops / step_s / device.peak_flops


def decision_table(
    fabric: Fabric,
    model: ModelShape,
    strategies: Iterable[Strategy],
    seq_len: int = TABLE_SEQ,
    microbatches: int = TABLE_MICROBATCHES,
    mfu: float | None = None,
    evaluate: PricerLike = None,
    degree: int | None = None,
    recipe: Recipe | None = None,
) -> DecisionTable:
    """For ddp, fsdp, hsdp, tp, pp and ep: communication per step inside a node vs across.

    Reference step: each strategy alone at degree ``d`` (default ``table_degree``: GPUs
    per node, at most 8 and at most the node count), the ``d`` GPUs running
    ``d * microbatches`` sequences of ``seq_len`` tokens, one sequence per micro-batch.
    Every GPU then computes ``microbatches * seq_len`` tokens' worth of the whole model:
    ``step_us`` (``reference_compute_us``; at ``mfu`` of peak when given), the same line for
    every row (the PP bubble is left out; it is not communication). *intra*: the group is
    GPUs ``0..d-1`` of node 0; *inter*: GPU 0 of each of ``d`` nodes, so every member talks
    through its own NIC. A node is a scale-up domain (``table_unit``: an NVL72 rack's hosts
    together). HSDP shards over GPUs ``0..d-1`` of a node in both cases; its
    *inter* case adds a replica on every node. EP on a dense model does not apply: its row
    says so and has no figures.

    Rule: a cell is OK when the exposed communication (overlappable operations hidden
    behind the step's compute) is at most ``OK_EXPOSED_FRACTION`` (25 %) of the compute;
    ``verdict`` calls it ``marginal`` above 10 %. The verdicts depend on tokens per
    micro-batch: FSDP's per-layer gathers cost the same whatever the batch, so longer
    micro-batches hide them.

    Args:
        fabric: The fabric.
        model: The model shape.
        strategies: Available strategies; the table uses those named in ``TABLE_STRATEGIES``.
        seq_len: Tokens per micro-batch.
        microbatches: Micro-batches per GPU per step.
        mfu: Price the compute at this fraction of peak instead of the kernel model.
        evaluate: ``evaluate_collective``-like function or a shared ``Pricer``.
        degree: Group size (2 up to GPUs per node, and up to the node count when there
            is more than one node).
        recipe: Precision, attention kernel and overlaps (default: the GPU generation's
            software defaults, ``recipe.era_recipe``); TP (EP) operations hide behind the
            compute when TP (EP) overlap is on.

    Raises:
        EngineError: None of the table's strategies is registered, or the degree does not
            fit the fabric.
    """
    if seq_len < 1 or microbatches < 1:
        raise EngineError(
            f"seq and microbatches must be at least 1 (got {seq_len}, {microbatches})"
        )
    if mfu is not None and not 0.0 < mfu <= 1.0:
        raise EngineError(f"mfu must be in (0, 1] (got {mfu})")
    degree = table_degree(fabric) if degree is None else degree
    _check_table_degree(fabric, degree)
    by_name = {s.name: s for s in strategies}
    present = [name for name in TABLE_STRATEGIES if name in by_name]
    if not present:
        raise EngineError(f"no strategy registered of {', '.join(TABLE_STRATEGIES)}")
    pricer = as_pricer(fabric, evaluate)
    recipe = recipe or era_recipe(fabric.gpu.arch)
    base = Layout(microbatches=microbatches, seq_len=seq_len)
    if mfu is None:
        step_us, achieved = reference_compute_us(fabric, model, seq_len, microbatches, recipe)
        basis = f"kernel model ({fabric.gpu.id}), {achieved:.0%} MFU"
    else:
        reference = dataclasses.replace(base, global_batch=microbatches)
        step_us, achieved = compute_time_us(fabric, model, reference, mfu), mfu
        basis = f"fixed {mfu:.0%} MFU"
    rows = [
        _decision_row(
            fabric,
            model,
            by_name[name],
            _case(fabric, model, name, base, degree),
            pricer,
            step_us,
            _hidden_axes(recipe),
        )
        for name in present
    ]
    return DecisionTable(
        topology=fabric.spec.id,
        model=model.id,
        step_us=step_us,
        degree=degree,
        seq_len=seq_len,
        microbatches=microbatches,
        mfu=achieved,
        rows=tuple(rows),
        compute_basis=basis,
        missing=tuple(name for name in TABLE_STRATEGIES if name not in by_name),
        unit=table_unit(fabric)[2],
    )


def _case(fabric: Fabric, model: ModelShape, name: str, base: Layout, degree: int) -> _Case:
    """The reference layout of strategy ``name`` and its intra/inter groups."""
    if name == "hsdp":
        return _hsdp_case(fabric, base, degree)
    m = base.microbatches
    if name in ("tp", "pp"):
        scaled = dataclasses.replace(base, microbatches=degree * m, global_batch=degree * m)
        if name == "tp":
            layout = dataclasses.replace(scaled, tp=degree)
        else:
            layout = dataclasses.replace(scaled, pp=degree)
    else:
        ep = degree if name == "ep" else 1
        layout = dataclasses.replace(base, dp=degree, ep=ep, global_batch=degree * m)
    axis = "dp" if name in ("ddp", "fsdp") else name
    if name == "ep" and model.experts == 0:
        return _Case(
            layout, None, None, f"{model.id} is dense (no experts): EP does not apply", False
        )
    inter = _one_per_node(fabric, degree)
    # Without EP every replica holds every expert: expert gradients reduce over the DP group.
    axes = (axis, "edp") if axis == "dp" else (axis,)
    return _Case(
        layout=layout,
        intra={a: np.arange(degree)[None, :] for a in axes},
        inter=None if inter is None else {a: inter[None, :] for a in axes},
    )


def _hsdp_case(fabric: Fabric, base: Layout, degree: int) -> _Case:
    """HSDP: shard over ``degree`` GPUs of a node; *inter* adds one replica per node."""
    per_unit, units, unit = table_unit(fabric)
    m = base.microbatches
    shard = np.arange(degree)[None, :]
    intra = {"dp_intra": shard, "dp_inter": np.array([[0]])}
    layout = dataclasses.replace(base, dp=degree, dp_shard=degree, global_batch=degree * m)
    if units < 2:
        return _Case(layout, intra, None)
    inter = {"dp_intra": shard, "dp_inter": (np.arange(units) * per_unit)[None, :]}
    layout = dataclasses.replace(layout, dp=degree * units, global_batch=degree * units * m)
    return _Case(layout, intra, inter, f"inter: shard in {_a(unit)}, replicate across {unit}s")


def table_unit(fabric: Fabric) -> tuple[int, int, str]:
    """(GPUs per unit, units, name) of the table's "node": the scale-up domain, so that
    on an NVL72 rack *intra* is a group over NVLink and *inter* one across racks."""
    if fabric.gpus_per_domain > fabric.gpus_per_node:
        link = fabric.spec.intra.link or ""
        family = "NVLink" if link.startswith("nvlink") else "scale-up"
        return fabric.gpus_per_domain, fabric.domains, f"{family} domain"
    return fabric.gpus_per_node, fabric.nodes, "node"


def table_degree(fabric: Fabric) -> int:
    """Default group size of the decision table: GPUs per node (scale-up domain), at most
    8 and, with more than one, at most their count (the cross-node group takes one GPU per
    node)."""
    per_unit, units, _ = table_unit(fabric)
    degree = min(per_unit, TABLE_MAX_DEGREE)
    return degree if units < 2 else min(degree, units)


def _check_table_degree(fabric: Fabric, degree: int) -> None:
    per_unit, units, unit = table_unit(fabric)
    if per_unit < 2:
        raise EngineError(f"{fabric.spec.id} has one GPU per node: no intra-node group to compare")
    top = per_unit if units < 2 else min(per_unit, units)
    if not 2 <= degree <= top:
        raise EngineError(
            f"degree must be 2..{top} on {fabric.spec.id} ({units} {unit}s x "
            f"{per_unit} GPUs; got {degree})"
        )


def _one_per_node(fabric: Fabric, degree: int) -> IntArray | None:
    """GPU 0 of the first ``degree`` nodes (scale-up domains), or None on one."""
    per_unit, units, _ = table_unit(fabric)
    if units < 2:
        return None
    return np.arange(degree, dtype=np.int64) * per_unit


def _hidden_axes(recipe: Recipe) -> frozenset[str]:
    """Axes whose critical-path collectives the recipe overlaps with compute."""
    return frozenset(
        axis for axis, on in (("tp", recipe.tp_overlap), ("ep", recipe.ep_overlap)) if on
    )


def _decision_row(
    fabric: Fabric,
    model: ModelShape,
    strategy: Strategy,
    case: _Case,
    pricer: Pricer,
    step_us: float,
    hidden: frozenset[str] = frozenset(),
) -> DecisionRow:
    if not case.applies:
        return DecisionRow(strategy.name, None, None, None, None, step_us, case.note, False)
    intra = _priced_case(fabric, model, strategy, case, case.intra, pricer, step_us, hidden)
    inter = _priced_case(fabric, model, strategy, case, case.inter, pricer, step_us, hidden)
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
    model: ModelShape,
    strategy: Strategy,
    case: _Case,
    groups: Groups | None,
    pricer: Pricer,
    step_us: float,
    hidden: frozenset[str] = frozenset(),
) -> tuple[float, float] | None:
    """(communication, exposed communication) per step [us], or None without groups.

    Operations on an axis in ``hidden`` (TP with TP overlap on) count as overlappable when
    their group sits in one NVLink domain (a node, or an NVL72 rack's hosts): TP overlap
    (Transformer Engine's userbuffers) works over NVLink, not across the network."""
    if groups is None:
        return None
    layout = case.layout
    if strategy.name == "hsdp" and len(groups["dp_inter"][0]) == 1:
        layout = dataclasses.replace(layout, dp=layout.dp_shard)
    domain = fabric.gpus_per_domain
    one_node = {
        axis: bool(np.all(np.asarray(g)[0] // domain == np.asarray(g)[0][0] // domain))
        for axis, g in groups.items()
    }
    ops = [
        dataclasses.replace(op, overlappable=True)
        if op.group in hidden and one_node.get(op.group, False)
        else op
        for op in strategy.operations(model, layout)
    ]
    priced = price_operations(fabric, ops, groups, pricer, overlap_us=step_us)
    return sum(p.time_us for p in priced), sum(p.exposed_us for p in priced)


__all__ = [
    "DEFAULT_MFU",
    "DENSE_EP_TOP_K",
    "GOOD_EXPOSED_FRACTION",
    "NOT_APPLICABLE",
    "OK_EXPOSED_FRACTION",
    "TABLE_MAX_DEGREE",
    "TABLE_MICROBATCHES",
    "TABLE_SEQ",
    "TABLE_STRATEGIES",
    "DecisionRow",
    "DecisionTable",
    "decision_table",
    "reference_compute_us",
    "table_degree",
    "verdict",
]
