"""PyTorch's op-level selective checkpointing as torchtitan runs it (``selective`` ``ops``):
what each layer keeps, what one layer rebuilds while its backward runs, and the memory of
torchtitan's eager FP32 cross entropy, each figure checked by hand on Llama 3 8B (h 4,096,
32 query heads and 8 key/value heads of 128, gated f 14,336, vocabulary 128,256)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.training import search as search_module
from fabricui.engine.training.memory import (
    activation_bytes,
    layer_activation_bytes,
    logits_bytes,
    ops_saved_bytes_per_token,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.search import SearchSpace, candidate_layouts
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout

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
