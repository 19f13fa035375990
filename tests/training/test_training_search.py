"""The layout search: what it varies, that it finds what practitioners run (TP inside the
NVLink domain), that every result fits, and that its bounds never drop a better plan."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.search import SearchSpace, candidate_layouts, search_layouts
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.plan import load_strategies
from fabricui.services.session import pricer


def fabric_of(catalog, topology, nodes=None):
    """A built fabric."""
    return build_fabric(resolve_topology(topology, catalog, nodes), catalog)


def tp_in_node(report) -> bool:
    """The layout's TP group sits in one 8-GPU node."""
    return report.layout.tp <= 8 and 8 % report.layout.tp == 0


def test_candidates_cover_every_axis(catalog):
    """Candidates vary tp, cp, pp (uneven too), vpp, dp, ep and the micro-batch, and keep to
    the rules: pp at most the layers, pipelines with enough micro-batches, ep dividing the
    experts and, at ETP = TP, dp (below it, ``ep x etp`` divides ``tp x cp x dp``)."""
    model = catalog.models["mixtral-8x7b"]
    layouts = candidate_layouts(64, model, 64, 32768, SearchSpace())
    for axis in ("tp", "cp", "pp", "vpp", "dp", "ep", "microbatches"):
        assert len({getattr(lay, axis) for lay in layouts}) > 1, axis
    assert all(lay.tp * lay.cp * lay.pp * lay.dp == 64 for lay in layouts)
    assert all(lay.pp == 1 or lay.microbatches >= lay.pp for lay in layouts)
    assert all(model.experts % lay.ep == 0 for lay in layouts)
    assert all(lay.dp % lay.ep == 0 for lay in layouts if lay.expert_tp == lay.tp)
    assert all((lay.tp * lay.cp * lay.dp) % (lay.ep * lay.expert_tp) == 0 for lay in layouts)


def test_llama3_70b_on_the_pod_keeps_tp_in_the_node(catalog):
    """dgx-h100-pod: the top 3 keep TP inside the 8-GPU NVLink domain, all fit, sorted."""
    fabric = fabric_of(catalog, "dgx-h100-pod")
    plans = search_layouts(
        fabric,
        catalog.models["llama3-70b"],
        load_strategies().values(),
        32,
        8192,
        evaluate=pricer(fabric),
    )
    assert all(tp_in_node(p) for p in plans[:3])
    assert all(p.fits for p in plans)
    steps = [p.step_us for p in plans]
    assert steps == sorted(steps)


def test_llama3_405b_on_16k_gpus_keeps_tp_in_the_node(catalog):
    """h100-ib-cluster --nodes 2048, Meta's global batch: the top 3 keep TP within a node."""
    fabric = fabric_of(catalog, "h100-ib-cluster", 2048)
    plans = search_layouts(
        fabric,
        catalog.models["llama3-405b"],
        load_strategies().values(),
        2048,
        8192,
        evaluate=pricer(fabric),
    )
    assert len(plans) == 10 and all(tp_in_node(p) for p in plans[:3])
    assert all(p.fits for p in plans)
    assert "TP8 inside the NVLink domain" in plans[0].reasons()


def test_bounds_do_not_drop_a_better_plan(catalog, monkeypatch):
    """Planning every candidate in full finds no layout faster than the search's top 3."""
    fabric = fabric_of(catalog, "dgx-h100-pod", 2)
    model = catalog.models["llama3-8b"]
    strategies = list(load_strategies().values())
    space = SearchSpace(micro_batches=(1,), vpp_degrees=(1,), cp_degrees=(1, 2))
    found = search_layouts(
        fabric, model, strategies, 16, 8192, evaluate=pricer(fabric), space=space
    )
    everything = search_layouts(
        fabric, model, strategies, 16, 8192, top=10_000, evaluate=pricer(fabric), space=space
    )
    assert [p.step_us for p in found[:3]] == pytest.approx([p.step_us for p in everything[:3]])


def test_fixed_dp_strategy_and_recompute(catalog):
    """A chosen DP strategy (plugin-style: only it given) and recompute mode are kept."""
    fabric = fabric_of(catalog, "dgx-h100-pod")
    strategies = load_strategies()
    pool = [strategies[n] for n in ("fsdp", "tp", "pp", "ep", "cp")]
    space = SearchSpace(dp_flavours=("fsdp",), recompute=("selective",))
    plans = search_layouts(
        fabric, catalog.models["llama3-70b"], pool, 32, 8192, evaluate=pricer(fabric), space=space
    )
    assert plans and all(p.strategies[0] == "fsdp" for p in plans if p.layout.dp > 1)
    assert all(p.recipe.recompute == "selective" for p in plans)


def test_nothing_fits_is_one_line(catalog):
    """A model too big for the fabric even fully sharded is an EngineError naming it."""
    from fabricui.errors import EngineError

    fabric = fabric_of(catalog, "dgx-h100")
    with pytest.raises(EngineError, match="no layout of llama3-405b fits") as info:
        search_layouts(fabric, catalog.models["llama3-405b"], load_strategies().values(), 8, 8192)
    assert "\n" not in str(info.value)


def test_search_module_documents_its_spaces():
    """The tried degrees are module constants (what the docs promise)."""
    assert search_module.DP_FLAVOURS == ("ddp", "zero1", "zero2", "fsdp")
    assert dataclasses.fields(SearchSpace)


@pytest.mark.parametrize("framework", ["torchtitan", "megatron-core"])
def test_cp_bounds_stay_below_the_plans(catalog, framework):
    """Llama 3 8B on 16 H100s with 32k sequences: every context-parallel candidate's bound
    (CP priced from the CP strategy's own operations: PyTorch's all-gathered ring for
    torchtitan, Megatron's ring for Megatron-Core, each against the windows a plan gives
    it) is at most the step its plan prices, and the search finds what planning every
    candidate finds."""
    from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
    from fabricui.engine.training.step import plan

    fabric = fabric_of(catalog, "dgx-h100-pod", 2)
    model = catalog.models["llama3-8b"]
    strategies = load_strategies()
    pool = list(strategies.values())
    recipe, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks[framework])
    space = SearchSpace(micro_batches=(1,), vpp_degrees=(1,))
    layouts = candidate_layouts(fabric.n_gpus, model, 16, 32768, space)
    flavours = search_module._flavours(pool, space)
    evaluate = pricer(fabric)
    candidates = search_module._bounds(
        fabric, model, layouts, recipe, [False] * len(layouts), flavours, space.recompute,
        evaluate, strategies["cp"],
    )  # fmt: skip
    ring = [c for c in candidates if c.layout.cp > 1]
    assert ring
    for cand in ring:
        used = [strategies[n] for n in (cand.dp_flavour, "tp", "pp", "cp")]
        chosen = dataclasses.replace(recipe, recompute=cand.recompute)
        report = plan(fabric, model, cand.layout, used, evaluate=evaluate, recipe=chosen)
        assert cand.bound_s * 1e6 <= report.step_us * (1 + 1e-9), cand.layout
    found = search_layouts(
        fabric, model, pool, 16, 32768, evaluate=evaluate, recipe=recipe, space=space
    )
    everything = search_layouts(
        fabric, model, pool, 16, 32768, top=10_000, evaluate=evaluate, recipe=recipe, space=space
    )
    assert [p.step_us for p in found[:3]] == pytest.approx([p.step_us for p in everything[:3]])
