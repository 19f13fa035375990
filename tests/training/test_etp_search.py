"""The layout search tries expert tensor-parallel degrees below TP (NVIDIA's Megatron-Bridge
MoE recipes all run ETP 1): offered only where Megatron-Core's rule ``ep x etp divides
tp x cp x dp`` holds, ranked by the same priced step, never for a dense model."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.groups import check_degrees
from fabricui.engine.training.recipe import era_recipe
from fabricui.engine.training.search import SearchSpace, candidate_layouts, search_layouts
from fabricui.engine.training.step import plan
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.plan import load_strategies
from fabricui.services.session import pricer

#: Mixtral 8x7B on 2 DGX H100 (16 GPUs), 16 sequences of 4,096 tokens, one micro-batch
#: size, no interleaving, CP or recompute: a space small enough to plan every candidate.
SPACE = SearchSpace(micro_batches=(1,), vpp_degrees=(1,), cp_degrees=(1,), recompute=("none",))


def fabric_of(catalog, topology, nodes=None):
    """A built fabric."""
    return build_fabric(resolve_topology(topology, catalog, nodes), catalog)


def test_expert_layouts_keep_megatrons_rule(catalog):
    """TP 4, CP 1, DP 2 of an 8-expert model: at ETP = TP (etp 0) EP lies within DP (1, 2);
    at ETP 2 the 8 ranks hold EP up to 4 (2 x 4 = 8); at ETP 1 up to 8. EP 8 at ETP 2
    (8 x 2 = 16 ranks) or at ETP = TP (8 does not divide DP 2) breaks the rule and is not
    offered; nor is EP 1 below ETP = TP (no experts to spread)."""
    model = catalog.models["mixtral-8x7b"]
    pairs = search_module._expert_layouts(model, 4, 1, 2)
    assert sorted(pairs) == sorted([(1, 0), (2, 0), (2, 1), (4, 1), (8, 1), (2, 2), (4, 2)])
    assert (8, 2) not in pairs and (8, 0) not in pairs


def test_every_candidate_tiles_its_stage(catalog):
    """Every MoE candidate passes the engine's own check (``groups.check_degrees``), ETP
    below TP appears only with TP above 1, and EP beyond DP only with ETP below TP."""
    model = catalog.models["mixtral-8x7b"]
    layouts = candidate_layouts(64, model, 64, 32768, SearchSpace())
    for lay in layouts:
        check_degrees(lay)
    smaller = [lay for lay in layouts if lay.expert_tp < lay.tp]
    assert smaller and all(lay.tp > 1 and lay.tp % lay.expert_tp == 0 for lay in smaller)
    assert {lay.expert_tp for lay in smaller} == {1, 2, 4, 8, 16}
    assert all(lay.dp % lay.ep == 0 for lay in layouts if lay.expert_tp == lay.tp)
    assert any(lay.ep > lay.dp for lay in smaller)


def test_dense_model_is_unchanged(catalog):
    """A dense model's candidates and search carry no expert TP (etp 0, as before)."""
    model = catalog.models["llama3-8b"]
    layouts = candidate_layouts(32, model, 32, 8192, SearchSpace())
    assert layouts and all(lay.etp == 0 and lay.ep == 1 for lay in layouts)
    fabric = fabric_of(catalog, "dgx-h100-pod")
    plans = search_layouts(
        fabric, model, load_strategies().values(), 32, 8192, top=3, evaluate=pricer(fabric)
    )
    assert plans and all(p.layout.etp == 0 for p in plans)


def test_etp1_wins_and_is_picked(catalog):
    """Mixtral 8x7B on 16 H100s (``SPACE``): the fastest layout is TP 4 x PP 2 x DP 2 at
    ETP 1 and EP 4 (the EP group spans the TP ranks: 2 whole experts per GPU, each rank
    dispatching its own quarter of the tokens). At ETP = TP 4 the same TP x PP x DP may only
    run EP 1 or 2 (EP within DP 2), each expert GEMM split 4 ways on all the tokens: both
    price slower. Planning every candidate in full finds nothing faster than the search."""
    fabric = fabric_of(catalog, "dgx-h100-pod", 2)
    model = catalog.models["mixtral-8x7b"]
    strategies = load_strategies()
    pool = list(strategies.values())
    evaluate = pricer(fabric)
    found = search_layouts(fabric, model, pool, 16, 4096, evaluate=evaluate, space=SPACE)
    best = found[0].layout
    assert (best.tp, best.pp, best.dp, best.ep, best.etp) == (4, 2, 2, 4, 1)
    everything = search_layouts(
        fabric, model, pool, 16, 4096, top=10_000, evaluate=evaluate, space=SPACE
    )
    assert [p.step_us for p in found[:3]] == pytest.approx([p.step_us for p in everything[:3]])
    at_tp = [
        p
        for p in everything
        if p.layout.etp == 0 and (p.layout.tp, p.layout.pp, p.layout.dp) == (4, 2, 2)
    ]
    assert {p.layout.ep for p in at_tp} == {1, 2}
    assert found[0].step_us < min(p.step_us for p in at_tp)


def test_moe_bounds_stay_below_the_plans(catalog):
    """Every MoE candidate's bound (the EP dispatch and combine, the dense parameters'
    DP traffic and the experts' on their own group included) is at most its plan's step."""
    fabric = fabric_of(catalog, "dgx-h100-pod", 2)
    model = catalog.models["mixtral-8x7b"]
    strategies = load_strategies()
    pool = list(strategies.values())
    space = SPACE
    layouts = candidate_layouts(fabric.n_gpus, model, 16, 4096, space)
    flavours = search_module._flavours(pool, space)
    evaluate = pricer(fabric)
    recipe = era_recipe(fabric.gpu.arch)
    candidates = search_module._bounds(
        fabric, model, layouts, recipe, [False] * len(layouts), flavours, space.recompute,
        evaluate, None, strategies["ep"],
    )  # fmt: skip
    assert any(c.layout.expert_tp < c.layout.tp for c in candidates)
    cache: dict = {}
    for cand in candidates:
        used = [strategies[n] for n in (cand.dp_flavour, "tp", "pp", "ep")]
        chosen = dataclasses.replace(recipe, recompute=cand.recompute)
        report = plan(fabric, model, cand.layout, used, evaluate=evaluate, recipe=chosen)
        refined = search_module._refined_s(cand, fabric, model, evaluate, recipe, cache)
        assert cand.bound_s * 1e6 <= report.step_us * (1 + 1e-9), cand.layout
        assert refined * 1e6 <= report.step_us * (1 + 1e-9), cand.layout


def test_search_output_shows_expert_tp(run_cli):
    """``plan --search`` adds an ``etp`` column when a listed layout's expert TP is not its
    TP, and ``--json`` each layout's ``expert_tp`` beside the ``etp`` it had (0: TP); a
    dense model's table has no such column."""
    argv = ("plan", "--search", "-t", "dgx-h100-pod", "--nodes", "2", "-m", "mixtral-8x7b")
    status, out, _ = run_cli(*argv, "--global-batch", "16", "--seq", "4096", "--top", "3")
    assert status == 0
    head = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert head.split()[6:8] == ["ep", "etp"]
    status, out, _ = run_cli(*argv, "--global-batch", "16", "--seq", "4096", "--top", "3", "--json")
    layout = json.loads(out)["plans"][0]["layout"]
    assert (layout["tp"], layout["ep"], layout["etp"], layout["expert_tp"]) == (2, 8, 1, 1)
    status, out, _ = run_cli("plan", "--search", "-t", "dgx-h100", "-m", "llama3-8b", "--top", "2")
    head = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    assert status == 0 and "etp" not in head.split()


def test_plan_prices_a_searched_expert_tp(run_cli):
    """``plan --etp`` prices the expert TP a search row shows (TP 4, EP 4 within DP 8 at ETP
    2, which the default would put at ETP = TP 4); a degree that breaks the tiling rule, or
    ``--etp`` beside ``--search``, is a one-line error."""
    argv = ("plan", "-t", "dgx-h100-pod", "-m", "mixtral-8x7b", "--tp", "4", "--ep", "4")
    status, out, _ = run_cli(*argv, "--etp", "2", "--json")
    layout = json.loads(out)["layout"]
    assert status == 0 and (layout["etp"], layout["expert_tp"], layout["dp"]) == (2, 2, 8)
    status, out, _ = run_cli(*argv, "--etp", "2")
    assert "(ep 4, etp 2, vpp 1)" in out.splitlines()[0]
    status, _, err = run_cli(*argv, "--etp", "3")
    assert status == 2 and "etp 3 must divide" in err and err.count("\n") == 1
    status, _, err = run_cli(
        "plan", "--search", "-t", "dgx-h100-pod", "-m", "mixtral-8x7b", "--etp", "1"
    )
    assert status == 2 and "--etp" in err and err.count("\n") == 1
