"""Memory per GPU against the figures Korthikanti et al. 2022 publish (Figure 1: model
states and activations per GPU for 22B, 175B, 530B and 1T GPT models on A100s), and the
sharding of each DP strategy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fabricui_strategies import ddp, zero

from fabricui.engine.training import schedule
from fabricui.engine.training.memory import (
    activation_bytes,
    layer_activation_bytes,
    ring_attention_bytes,
    stage_params,
    states_bytes,
)
from fabricui.engine.training.shape import geometry
from fabricui.engine.types import Layout, StateShards
from fabricui.model import ModelShape

GiB = 2**30


def gpt(layers: int, hidden: int, heads: int) -> ModelShape:
    """A Megatron GPT of Korthikanti et al.'s Table 3 (s = 2048, V = 51200, ffn = 4h)."""
    return ModelShape(
        id=f"gpt-{layers}x{hidden}",
        name="GPT",
        params_B=0.0,
        layers=layers,
        hidden=hidden,
        ffn_hidden=4 * hidden,
        heads=heads,
        kv_heads=heads,
        vocab=51200,
        seq_len=2048,
        source="https://arxiv.org/abs/2205.05198",
        mlp="gelu",
    )


#: Korthikanti et al. 2022, Figure 1 (GiB per GPU): (model, tp, pp, vpp, micro-batch,
#: parameters + optimizer, activations without recompute or SP, with SP + selective).
FIGURE_1 = [
    (gpt(48, 6144, 64), 8, 1, 1, 4, 45.5625, 59.25, 9.5625),
    (gpt(96, 12288, 96), 8, 8, 3, 1, 45.5625, 66.84375, 12.3515625),
    (gpt(105, 20480, 128), 8, 35, 3, 1, 31.640625, 114.0234375, 23.076171875),
    (gpt(128, 25600, 160), 8, 64, 1, 1, 32.958984375, 131.25, 26.5625),
]


@pytest.mark.parametrize(("model", "tp", "pp", "vpp", "b", "states", "none", "seqsel"), FIGURE_1)
def test_korthikanti_figure_1(model, tp, pp, vpp, b, states, none, seqsel):
    """Model states (18 bytes per parameter: 16-bit weights, FP32 gradients, FP32 master and
    Adam moments) within 3 %; activations of the first stage with its in-flight
    micro-batches (Table 2's equations) within 3 %, without and with SP + selective."""
    geo = geometry(model)
    per_stage = geo.layers / pp
    params = float(stage_params(geo, per_stage, tp, 1, False, False))
    got_states = sum(float(x) for x in states_bytes(params, StateShards())) / GiB
    assert got_states == pytest.approx(states, rel=0.03)
    flight = schedule.in_flight(pp, 10_000, vpp, 0)
    for sp, mode, expected in ((0.0, "none", none), (1.0, "selective", seqsel)):
        acts = activation_bytes(geo, per_stage, flight, tp, 1, b, 2048, sp, mode, "unfused")
        assert float(acts) / GiB == pytest.approx(expected, rel=0.03), mode


def test_activation_equations_by_hand():
    """GPT 175B, t = 8, b = 1, s = 2048 per layer: s b h (10 + 24 / t + 5 a s / (h t)) bytes
    without SP; s b h 34 / t with SP and selective recompute; 2 s b h / t with full
    recompute and SP."""
    geo = geometry(gpt(96, 12288, 96))
    sbh = 2048 * 12288
    none = layer_activation_bytes(geo, 8, 1, 1, 2048, 0.0, "none", "unfused")
    assert float(none) == pytest.approx(sbh * (10 + 24 / 8 + 5 * 96 * 2048 / (12288 * 8)))
    sel = layer_activation_bytes(geo, 8, 1, 1, 2048, 1.0, "selective", "unfused")
    assert float(sel) == pytest.approx(sbh * 34 / 8)
    full = layer_activation_bytes(geo, 8, 1, 1, 2048, 1.0, "full", "unfused")
    assert float(full) == pytest.approx(2 * sbh / 8)


def test_context_parallelism_splits_the_sequence():
    """CP 4 keeps a quarter of the tokens per GPU (and of the score matrix's rows)."""
    geo = geometry(gpt(96, 12288, 96))
    one = layer_activation_bytes(geo, 8, 1, 1, 2048, 1.0, "selective", "flash")
    four = layer_activation_bytes(geo, 8, 4, 1, 2048, 1.0, "selective", "flash")
    assert float(four) == pytest.approx(float(one) / 4)


def test_dp_strategies_shard_states():
    """DDP shards nothing, ZeRO-1 the optimizer, ZeRO-2 the gradients too, FSDP everything,
    over the data-parallel ranks (dp x cp: CP ranks hold the same weights)."""
    model = gpt(96, 12288, 96)
    layout = Layout(dp=8, cp=2)
    assert ddp.DDP().state_shards(model, layout) == StateShards()
    assert zero.Zero1().state_shards(model, layout) == StateShards(1, 1, 16)
    assert zero.Zero2().state_shards(model, layout) == StateShards(1, 16, 16)
    assert zero.FSDP().state_shards(model, layout) == StateShards(16, 16, 16)
    weights, grads, optimizer = states_bytes(1e9, StateShards(1, 16, 16))
    assert (float(weights), float(grads), float(optimizer)) == pytest.approx(
        (2e9, 4e9 / 16, 12e9 / 16)
    )


def test_first_and_last_stage_hold_the_embeddings():
    """The first stage holds the input embedding, the last the output layer (untied)."""
    geo = geometry(gpt(96, 12288, 96))
    middle = float(stage_params(geo, 12, 8, 1, False, False))
    first = float(stage_params(geo, 12, 8, 1, True, False))
    last = float(stage_params(geo, 12, 8, 1, False, True))
    assert first - middle == pytest.approx(51200 * 12288 / 8)
    assert last - middle == pytest.approx(51200 * 12288 / 8 + 12288)


def test_in_flight_micro_batches():
    """1F1B: stage i holds p - i micro-batches (at most m); interleaved: the first stage
    p (1 + (p - 1) / (p v))."""
    assert [schedule.in_flight(4, 100, 1, i) for i in range(4)] == [4, 3, 2, 1]
    assert schedule.in_flight(4, 2, 1, 0) == 2
    assert schedule.in_flight(8, 100, 3, 0) == pytest.approx(8 * (1 + 7 / 24))


def test_full_recompute_needs_less_memory(catalog):
    """Full < selective < none for the same layout."""
    geo = geometry(dataclasses.replace(catalog.models["llama3-70b"]))
    sizes = [
        float(layer_activation_bytes(geo, 8, 1, 1, 8192, 1.0, mode, "flash"))
        for mode in ("full", "selective", "none")
    ]
    assert sizes[0] < sizes[1] <= sizes[2]


def test_ring_attention_buffers_by_hand(catalog):
    """Llama 3 8B (32 query heads of 128), TP 2, CP 4, one 8,192-token sequence: the rank
    holds 2,048 tokens of 16 heads x 128 = 2,048 wide, 4 Mi elements. Compiled: 4 x 4 = 16
    bytes an element of all-gathered 16-bit keys and values, 4 of their concatenation, 4 of
    FP32 query gradient, 8 + 8 of FP32 key and value gradients sent and arriving: 40 bytes,
    160 MiB. Eager adds the zero-filled FP32 key and value gradients (8) and the contiguous
    copies of the keys and values (4): 52 bytes, 208 MiB. CP 1 runs no ring."""
    geo = geometry(catalog.models["llama3-8b"])
    mib = 2**20
    assert float(ring_attention_bytes(geo, 2, 4, 1, 8192)) / mib == pytest.approx(160.0)
    assert float(ring_attention_bytes(geo, 2, 4, 1, 8192, eager=True)) / mib == pytest.approx(208.0)
    sizes = ring_attention_bytes(geo, 2, np.array([1.0, 2.0]), 1, 8192)
    # CP 2: 4,096 tokens x 2,048 = 8 Mi elements x (8 + 24) bytes = 256 MiB.
    assert (sizes / mib).tolist() == pytest.approx([0.0, 256.0])
