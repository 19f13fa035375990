"""PyTorch's ring attention as torchtitan runs it, each formula checked by hand: the FP32
merges beside the kernels, the all-gathered keys and values at the query heads, the FP32
gradient ring, and what its communication can hide behind."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fabricui_strategies.cp import ContextParallel

from fabricui.engine.training import comm
from fabricui.engine.training.layer import Kernels, LayerCost, layer_cost
from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import Recipe, RecipeChoices, resolve_recipe
from fabricui.engine.training.ring import ring_merge_bytes
from fabricui.engine.training.shape import geometry
from fabricui.engine.training.step import _StageWork, _windows
from fabricui.engine.types import CommOp, Layout
from fabricui.errors import EngineError
from tests.training._devices import ROUND
from tests.training._models import llama3_8b_widths

#: Llama 3 8B's widths: h 4096, 32 heads of 128 of which 8 key/value heads.
LLAMA3_8B = llama3_8b_widths()


def test_ring_merge_bytes_by_hand():
    """CP 4, 1,000 tokens of width 512 (512,000 elements). Forward: the merge reads four
    16-bit partial outputs and writes one, 10 bytes an element: 5.12 MB. Backward: the
    query gradient's sum the same 10; each of the key and value gradients 6 at the first
    step, 10 at each of the three others, 6 to bring it home: 42, twice: 84; 94 in all,
    48.128 MB. At CP 2: 6 forward, 6 + 2 x (6 + 10 + 6) = 50 backward; CP 1 runs no ring."""
    fwd, bwd = ring_merge_bytes(1000.0, 512.0, 4.0)
    assert (float(fwd), float(bwd)) == pytest.approx((5.12e6, 48.128e6))
    fwd, bwd = ring_merge_bytes(np.array([1000.0, 1000.0]), 512.0, np.array([1.0, 2.0]))
    assert fwd.tolist() == pytest.approx([0.0, 6 * 512e3])
    assert bwd.tolist() == pytest.approx([0.0, 50 * 512e3])


def test_torch_ring_adds_its_merges_to_the_attention_core():
    """Llama 3 8B widths, TP 1, CP 4, 8,000 tokens: each rank holds 2,000 tokens of width
    4,096 (8.192 M elements). At 1 TB/s the merges add 10 x 8.192 MB = 81.92 us to the
    attention's forward and 94 x 8.192 MB = 770.048 us to its backward; nothing else moves,
    and at CP 1 nothing at all."""
    geo = geometry(LLAMA3_8B)
    torch_ring = Kernels(cp_attention="torch")
    plain = layer_cost(ROUND, geo, 1, 4, 1, 1, 8000, 0, kernels=Kernels())
    ring = layer_cost(ROUND, geo, 1, 4, 1, 1, 8000, 0, kernels=torch_ring)
    assert float(ring.attn_fwd_s - plain.attn_fwd_s) * 1e6 == pytest.approx(81.92)
    assert float(ring.attn_bwd_s - plain.attn_bwd_s) * 1e6 == pytest.approx(770.048)
    for name in ("gemm_fwd_s", "gemm_bwd_s", "elem_fwd_s", "elem_bwd_s", "flops_fwd"):
        assert float(getattr(ring, name)) == pytest.approx(float(getattr(plain, name)))
    one = layer_cost(ROUND, geo, 1, 1, 1, 1, 8000, 0, kernels=torch_ring)
    none = layer_cost(ROUND, geo, 1, 1, 1, 1, 8000, 0, kernels=Kernels())
    assert float(one.attn_fwd_s) == float(none.attn_fwd_s)
    assert float(one.attn_bwd_s) == float(none.attn_bwd_s)


def test_torch_ring_gathers_keys_and_values_at_the_query_heads():
    """TP 2, CP 4, PP 2, 4 micro-batches of one 8,192-token sequence: 2,048 tokens a rank,
    16 query heads of 128 a TP rank. Keys and values repeated to them are 2 x 2,048 x 16 x
    128 x 2 = 16 MiB; each pass all-gathers 4 x 16 MiB in each of 16 layers x 4 micro-batches
    (64 calls, forward recomputed), backward sends 32 MiB of FP32 gradients after each of
    the 4 steps: 3 x 64 hidden, 64 waited for. Megatron's ring sends the 4 key/value heads
    of a TP rank, 4 MiB, 3 x 64 times a pass."""
    layout = Layout(tp=2, cp=4, pp=2, dp=1, microbatches=4, global_batch=4, seq_len=8192)
    torch_layout = dataclasses.replace(layout, cp_attention="torch")
    torch_ops = ContextParallel().operations(LLAMA3_8B, torch_layout)
    mib = 2**20
    got = [
        (o.collective, o.size_bytes / mib, o.count, o.phase, o.overlappable, o.recomputed)
        for o in torch_ops
    ]
    assert got == [
        ("all_gather", 64.0, 64, "forward", True, True),
        ("all_gather", 64.0, 64, "backward", True, False),
        ("send_recv", 32.0, 192, "backward", True, False),
        ("send_recv", 32.0, 64, "backward", False, False),
    ]
    ring_ops = ContextParallel().operations(LLAMA3_8B, layout)
    assert [(o.size_bytes / mib, o.count) for o in ring_ops] == [(4.0, 192), (8.0, 192)]


def _op(collective: str, count: int, hidden: bool, phase: str, call_us: float) -> PricedOp:
    op = CommOp("cp", collective, "cp", 1.0, count, hidden, scope="layer", phase=phase)
    return PricedOp(op, (0, 1), call_us, "ring")


def test_torch_ring_hides_its_forward_gather_behind_the_first_step_only():
    """Per layer and micro-batch (2 layers x 2 micro-batches, 4 calls each): a 2 us forward
    all-gather against the first ring step's 1 us of attention leaves 1 us; 2.5 us of
    backward sends hide behind 3 us of backward attention; the last 0.5 us send is exposed:
    1.5 us. Megatron's ring hides both passes behind the whole 10 us attention: 0.5 us."""
    ops = [
        _op("all_gather", 4, True, "forward", 2.0),
        _op("send_recv", 4, True, "backward", 2.5),
        _op("send_recv", 4, False, "backward", 0.5),
    ]
    windows = comm.Windows(
        gemm_s=1,
        expert_s=0,
        attention_s=10e-6,
        layer_s=1,
        microbatch_s=1,
        ring_first_fwd_s=1e-6,
        attention_bwd_s=3e-6,
    )
    torch_ring = comm.expose(ops, Recipe(cp_attention="torch"), 2, 2, windows)
    assert torch_ring.per_layer_s["cp"] == pytest.approx(1.5e-6)
    assert comm.expose(ops, Recipe(), 2, 2, windows).per_layer_s["cp"] == pytest.approx(0.5e-6)


def test_the_first_ring_step_is_a_cp_th_of_the_attention_forward():
    """A layer with 8 ms of attention forward and 20 ms backward at CP 4: the forward
    all-gather hides behind 2 ms, the backward ring behind 20 ms."""
    zero = np.asarray(0.0)
    layer = LayerCost(
        gemm_fwd_s=zero,
        gemm_bwd_s=zero,
        attn_fwd_s=np.asarray(8e-3),
        attn_bwd_s=np.asarray(20e-3),
        elem_fwd_s=zero,
        elem_bwd_s=zero,
        flops_fwd=zero,
    )
    work = _StageWork(layer, [28e-3], [0.0], [8e-3], 0.0)
    windows = _windows(work, geometry(LLAMA3_8B), ROUND, 4)
    assert (windows.ring_first_fwd_s, windows.attention_bwd_s) == pytest.approx((2e-3, 20e-3))


def test_torchtitan_runs_pytorch_s_ring_attention(catalog):
    """torchtitan's profile prices PyTorch's ring attention, Megatron-Core's its own ring;
    a recipe refuses any other kind."""
    titan, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["torchtitan"])
    core, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["megatron-core"])
    assert (titan.cp_attention, titan.kernels.cp_attention) == ("torch", "torch")
    assert (core.cp_attention, core.kernels.cp_attention) == ("ring", "ring")
    with pytest.raises(EngineError, match="cp attention must be one of ring, torch"):
        Recipe(cp_attention="ulysses")


def test_plans_count_the_ring_s_buffers(catalog):
    """Llama 3 8B on 8 H100s, CP 2 x DP 4, 16,384-token sequences: each rank holds 8,192
    tokens of the 4,096-wide queries (32 Mi elements). torchtitan's ring attention adds
    (4 x 2 + 24) = 32 bytes an element compiled, 1 GiB, and 12 more eager (its default),
    1.375 GiB; Megatron-Core's ring adds nothing."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies

    fabric = build_fabric(resolve_topology("dgx-h100", catalog), catalog)
    strategies = load_strategies()
    used = [strategies[n] for n in ("ddp", "cp")]
    layout = Layout(cp=2, dp=4, microbatches=1, global_batch=4, seq_len=16384)
    model = catalog.models["llama3-8b"]
    titan = catalog.frameworks["torchtitan"]
    gib = 2**30

    def ring_gib(choices: RecipeChoices, framework) -> list[float]:
        recipe, _ = resolve_recipe(choices, "hopper", framework)
        memory = plan(fabric, model, layout, used, recipe=recipe).memory
        assert memory is not None
        return [size / gib for what, size in memory.extra if what == "cp: ring attention buffers"]

    assert ring_gib(RecipeChoices(passes="compiled"), titan) == pytest.approx([1.0])
    assert ring_gib(RecipeChoices(), titan) == pytest.approx([1.375])
    assert ring_gib(RecipeChoices(), catalog.frameworks["megatron-core"]) == []
