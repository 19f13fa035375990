"""PyTorch's op-level selective checkpointing as torchtitan runs it (``selective`` ``ops``):
what each layer keeps, what one layer rebuilds while its backward runs, the GEMMs and TP
all-gathers it recomputes, and the memory of torchtitan's eager FP32 cross entropy, each
figure checked by hand on Llama 3 8B (h 4,096, 32 query heads and 8 key/value heads of
128, gated f 14,336, vocabulary 128,256)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.comm import recomputes_again, with_recompute
from fabricui.engine.training.device import make_device
from fabricui.engine.training.kernels import linear_times_s
from fabricui.engine.training.layer import Kernels, layer_cost
from fabricui.engine.training.memory import (
    activation_bytes,
    layer_activation_bytes,
    logits_bytes,
    ops_saved_bytes_per_token,
)
from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.search import SearchSpace, candidate_layouts
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import CommOp, Layout

GiB = 2**30


@pytest.fixture
def geo(catalog):
    """Llama 3 8B's geometry."""
    return geometry(catalog.models["llama3-8b"])


def test_saved_bytes_per_token_by_hand(geo):
    """TP 1, compiled: the block's input 2h = 8,192, wq's output 2q = 8,192, wv's 2kv =
    2,048, the attention output 2q = 8,192 and its FP32 log-sum-exp 4 x 32 = 128, w1's
    output 2f = 28,672: 55,424 bytes a token. Eagerly w2's output (2h = 8,192) stays in the
    policy's cache too: 63,616. TP 8 with sequence parallelism, compiled: 8,192 / 8 +
    (16,384 + 2,048 + 128) / 8 + the attention's reduce-scatter 8,192 / 8 + 28,672 / 8 =
    1,024 + 2,320 + 1,024 + 3,584 = 7,952; eagerly w2's partial sums on all tokens (8,192)
    and their reduce-scatter (1,024) more: 17,168. Without sequence parallelism the
    input is whole and no reduce-scatter is saved: 8,192 + 2,320 + 3,584 = 14,096."""
    assert float(ops_saved_bytes_per_token(geo, 1, 0.0)) == 55424
    assert float(ops_saved_bytes_per_token(geo, 1, 0.0, eager=True)) == 63616
    assert float(ops_saved_bytes_per_token(geo, 8, 1.0)) == 7952
    assert float(ops_saved_bytes_per_token(geo, 8, 1.0, eager=True)) == 17168
    assert float(ops_saved_bytes_per_token(geo, 8, 0.0)) == 14096
    both = ops_saved_bytes_per_token(geo, np.array([1.0, 8.0]), np.array([0.0, 1.0]))
    assert both.tolist() == [55424, 7952]


def test_layer_keeps_the_saved_set_and_megatron_selective_is_unchanged(geo):
    """One 8,192-token sequence, TP 1: op-level selective keeps 55,424 x 8,192 bytes
    (433 MiB); the attention-core kind keeps the no-recompute set without scores, K and V
    at their own width, as before: 139,264 bytes a token (1,088 MiB)."""
    ops = layer_activation_bytes(geo, 1, 1, 1, 8192, 0.0, "selective", "flash", True, "ops")
    assert float(ops) / 2**20 == pytest.approx(433.0)
    core = layer_activation_bytes(geo, 1, 1, 1, 8192, 0.0, "selective", "flash", True)
    assert float(core) / 2**20 == pytest.approx(1088.0)


def test_stage_adds_what_one_layer_rebuilds(geo):
    """torchtitan's 8-GPU FSDP row (32 layers, two 8,192-token sequences, TP 1, compiled,
    keys and values repeated): 32 x 55,424 bytes a token kept, plus what one layer's
    backward rebuilds beyond its own 55,424: the no-recompute set at the query width
    (151,552) less 55,424 = 96,128. (32 x 55,424 + 96,128) x 16,384 = 30.63 GB =
    28.53 GiB, against 68.0 GiB for the attention-core kind (32 x 139,264 x 16,384)."""
    ops = activation_bytes(geo, 32, 1, 1, 1, 2, 8192, 0.0, "selective", "flash", True, "ops")
    assert float(ops) == pytest.approx((32 * 55424 + 96128) * 16384)
    assert float(ops) / GiB == pytest.approx(28.53, abs=0.01)
    core = activation_bytes(geo, 32, 1, 1, 1, 2, 8192, 0.0, "selective", "flash", True)
    assert float(core) == pytest.approx(32 * 139264 * 16384)


def test_eager_cross_entropy_bytes(geo):
    """Two 8,192-token sequences, TP 1: 16,384 x 128,256 logits, 12 bytes each at the
    eager loss's backward (23.49 GiB), against 6 for the other losses; TP 8 with
    loss_parallel, sixteen sequences (70B's row): 131,072 x 16,032 logits at 16 bytes
    (31.31 GiB)."""
    eager = logits_bytes(geo, 1, 1, 2, 8192, "eager")
    assert float(eager) == 16384 * 128256 * 12
    assert float(eager) / GiB == pytest.approx(23.49, abs=0.01)
    assert float(logits_bytes(geo, 1, 1, 2, 8192)) == 16384 * 128256 * 6
    assert float(logits_bytes(geo, 1, 1, 2, 8192, "fused")) == 16384 * 128256 * 6
    tp8 = logits_bytes(geo, 8, 1, 16, 8192, "eager")
    assert float(tp8) == 131072 * 16032 * 16
    assert float(tp8) / GiB == pytest.approx(31.31, abs=0.01)
    both = logits_bytes(geo, np.array([1.0, 8.0]), 1, 1, 8192, "eager")
    assert both.tolist() == [8192 * 128256 * 12, 8192 * 16032 * 16]


def test_recomputed_gemms(catalog, geo):
    """Separate projections (wq, wk, wv, wo, w1, w3, w2): the policy recomputes wk, wo and
    w3, 19,456 of 53,248 weights a token (37%, not half); compiled with TP 8 and sequence
    parallelism the saved reduce-scatter output spares wo (wk and w3); eagerly wo runs
    again. Recompute time is the memory-bound passes plus those GEMMs."""
    device, _ = make_device(catalog.gpus["h100-sxm"], "bf16")
    tokens = 8192.0

    def cost(tp, sp, passes):
        kernels = Kernels(passes=passes, separate_projections=True)
        return layer_cost(device, geo, tp, 1, 1, 1, 8192, sp, kernels=kernels)

    kv, _ = linear_times_s(device, tokens, 1024.0, 4096.0)
    out, _ = linear_times_s(device, tokens, 4096.0, 4096.0)
    up, _ = linear_times_s(device, tokens, 14336.0, 4096.0)
    one = cost(1, 0.0, "compiled")
    assert float(one.ops_gemm_fwd_s) == pytest.approx(float(kv + out + up))
    assert float(one.recompute_s("selective", "ops")) == pytest.approx(
        float(one.elem_fwd_s + kv + out + up)
    )
    share = (1024 + 4096 + 14336) / (2 * 4096 + 2 * 1024 + 3 * 14336)
    assert share == pytest.approx(0.3654, abs=1e-4)
    kv8, _ = linear_times_s(device, tokens, 128.0, 4096.0)
    out8, _ = linear_times_s(device, tokens, 4096.0, 512.0)
    up8, _ = linear_times_s(device, tokens, 1792.0, 4096.0)
    assert float(cost(8, 1.0, "compiled").ops_gemm_fwd_s) == pytest.approx(float(kv8 + up8))
    eager = cost(8, 1.0, "eager").ops_gemm_fwd_s
    assert float(eager) == pytest.approx(float(kv8 + out8 + up8))
    assert float(cost(1, 0.0, "fused").recompute_s("selective")) == pytest.approx(
        float(cost(1, 0.0, "fused").attn_fwd_s)
    )


def test_fused_projections_recompute_every_second_matmul(catalog, geo):
    """qkv, wo, w13, w2: wo and w2 are the second and fourth matmuls; compiled, w2's output
    is not needed by backward and it is not run again."""
    device, _ = make_device(catalog.gpus["h100-sxm"], "bf16")
    out, _ = linear_times_s(device, 8192.0, 4096.0, 4096.0)
    down, _ = linear_times_s(device, 8192.0, 4096.0, 14336.0)
    eager = layer_cost(device, geo, 1, 1, 1, 1, 8192, 0.0, kernels=Kernels(passes="eager"))
    compiled = layer_cost(device, geo, 1, 1, 1, 1, 8192, 0.0, kernels=Kernels(passes="compiled"))
    assert float(eager.ops_gemm_fwd_s) == pytest.approx(float(out + down))
    assert float(compiled.ops_gemm_fwd_s) == pytest.approx(float(out))


def _priced(collective: str, group: str, phase: str) -> PricedOp:
    op = CommOp(
        strategy=group, collective=collective, group=group, size_bytes=1.0, count=4,
        overlappable=False, recomputed=phase == "forward", phase=phase,
    )  # fmt: skip
    return PricedOp(op=op, ranks=(0, 1), call_us=1.0, algorithm="ring")


def test_op_selective_issues_tp_forward_all_gathers_again(catalog):
    """Under op-level selective recompute TP's forward all-gathers run again (4 -> 8 calls);
    its reduce-scatters (outputs saved), backward collectives and CP's forward ring (the
    attention is saved) do not. Megatron's selective repeats none; full repeats every
    forward collective."""
    titan, _ = resolve_recipe(
        RecipeChoices(recompute="selective"), "hopper", catalog.frameworks["torchtitan"]
    )
    core, _ = resolve_recipe(
        RecipeChoices(recompute="selective"), "hopper", catalog.frameworks["megatron-core"]
    )
    ops = [
        _priced("all_gather", "tp", "forward"),
        _priced("reduce_scatter", "tp", "forward"),
        _priced("all_gather", "tp", "backward"),
        _priced("all_gather", "cp", "forward"),
    ]
    assert [p.calls for p in with_recompute(ops, titan)] == [8, 4, 4, 4]
    assert [p.calls for p in with_recompute(ops, core)] == [4, 4, 4, 4]
    full = dataclasses.replace(titan, recompute="full")
    assert [p.calls for p in with_recompute(ops, full)] == [8, 8, 4, 8]
    modules = dataclasses.replace(titan, recompute_modules=("core_attn",))
    assert modules.selective_kind == "attention"
    assert not recomputes_again(ops[0].op, modules)


def test_plan_and_search_count_op_selective_alike(catalog):
    """Llama 3 8B on 8 H100s, TP 1, DP 8, two 8,192-token sequences per GPU, torchtitan
    compiled, selective: the plan's activations are the 28.53 GiB above and its loss the
    eager 23.49 GiB, and the layout search's fit check counts the same."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    fabric = build_fabric(resolve_topology("dgx-h100-pod", catalog, 1), catalog)
    model = catalog.models["llama3-8b"]
    strategies = load_strategies()
    titan, _ = resolve_recipe(
        RecipeChoices(recompute="selective", passes="compiled"),
        "hopper",
        catalog.frameworks["torchtitan"],
    )
    layout = Layout(tp=1, pp=1, dp=8, global_batch=16, microbatches=1, seq_len=8192)
    used = [strategies[n] for n in ("fsdp", "tp", "pp")]
    memory = plan(fabric, model, layout, used, evaluate=pricer(fabric), recipe=titan).memory
    assert memory.activations_bytes / GiB == pytest.approx(28.53, abs=0.01)
    assert memory.logits_bytes / GiB == pytest.approx(23.49, abs=0.01)
    space = SearchSpace(micro_batches=(2,), vpp_degrees=(1,), cp_degrees=(1,))
    layouts = [
        lay for lay in candidate_layouts(8, model, 16, 8192, space) if (lay.tp, lay.pp) == (1, 1)
    ]
    assert layouts
    cols = search_module._Columns.of(layouts, [False] * len(layouts))
    stages = search_module._StageSplit.of(model, cols.arr["pp"])
    fit = search_module._StageMemory.of("selective", geometry(model), titan, cols, stages)
    expected = memory.activations_bytes + memory.logits_bytes
    assert fit.actsl.tolist() == pytest.approx([expected] * len(layouts))


def test_tp_bounds_stay_below_the_plans_under_op_selective(catalog):
    """Llama 3 8B on 16 H100s, torchtitan compiled, selective: every TP candidate's bound
    (its TP forward all-gathers counted twice, as the plan issues them) is at most the
    step its plan prices."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    fabric = build_fabric(resolve_topology("dgx-h100-pod", catalog, 2), catalog)
    model = catalog.models["llama3-8b"]
    strategies = load_strategies()
    recipe, _ = resolve_recipe(
        RecipeChoices(recompute="selective", passes="compiled"),
        "hopper",
        catalog.frameworks["torchtitan"],
    )
    space = SearchSpace(micro_batches=(1,), vpp_degrees=(1,), cp_degrees=(1,))
    layouts = [
        lay for lay in candidate_layouts(16, model, 16, 8192, space) if lay.tp > 1 and lay.pp == 1
    ]
    assert layouts
    evaluate = pricer(fabric)
    candidates = search_module._bounds(
        fabric, model, layouts, recipe, [True] * len(layouts),
        search_module._flavours(list(strategies.values()), space), ("selective",), evaluate,
    )  # fmt: skip
    assert candidates
    for cand in candidates:
        used = [strategies[n] for n in (cand.dp_flavour, "tp-sp", "pp")]
        report = plan(fabric, model, cand.layout, used, evaluate=evaluate, recipe=recipe)
        assert cand.bound_s * 1e6 <= report.step_us * (1 + 1e-9), cand.layout
