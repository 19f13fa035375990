"""fabricui-powersgd: bytes per step checked by hand, and the plugin working inside fabricui."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json

import pytest
from fabricui_powersgd import (
    PowerSGD,
    PowerSGDRank4,
    compresses,
    mlp_matrices,
    powersgd_traffic,
)

from fabricui.api import Layout, ModelShape

#: A toy gated (SwiGLU) decoder: 2 layers, hidden 64, 4 heads of 16, ffn 256, vocab 1000.
#: Parameters: per layer q, k, v, o 4 x 64 x 64 = 16384, MLP 3 x 64 x 256 = 49152, norms
#: 2 x 64 = 128, so 65664; x 2 layers = 131328; embedding + head 2 x 1000 x 64 = 128000;
#: final norm 64. Total 259392.
TOY = ModelShape(
    id="toy",
    name="Toy",
    params_B=259392e-9,
    layers=2,
    hidden=64,
    ffn_hidden=256,
    heads=4,
    kv_heads=4,
    vocab=1000,
    seq_len=128,
    source="hand-made for this test",
)


def installed() -> bool:
    """True when the package is pip-installed (its entry point exists)."""
    try:
        importlib.metadata.distribution("fabricui-powersgd")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_toy_bytes_per_step_by_hand():
    """Rank 4, BF16, dp 4, no TP/PP: 29312 B of P, 11264 B of Q, 640 B uncompressed.

    Rank r' = 4 everywhere, and every matrix compresses (64 x 64: 4096 > 2 x 4 x 128;
    1000 x 64: 64000 > 2 x 4 x 1064). P has n x 4 elements, Q m x 4:

    - q, k, v, o (64 x 64): P 256, Q 256 each -> P 1024, Q 1024 per layer
    - gate, up (256 x 64): P 1024, Q 256 each -> P 2048, Q 512 per layer
    - down (64 x 256): P 256, Q 1024
    - per layer P 3328, Q 2560; 2 layers: P 6656, Q 5120
    - embedding, head (1000 x 64): P 4000, Q 256 each -> P 8000, Q 512
    - total P 14656, Q 5632 elements; x 2 bytes = 29312 and 11264 bytes
    - uncompressed: norms 2 x 2 x 64 + 64 = 320 elements = 640 bytes

    Plain DDP would send 259392 x 2 = 518784 bytes: 41216 bytes is 12.6x less. The whole
    gradient fits one 25 MiB bucket, so each all-reduce runs once.
    """
    layout = Layout(dp=4, global_batch=4, seq_len=128)
    assert mlp_matrices(TOY) == 3
    traffic = powersgd_traffic(TOY, layout, rank=4)
    assert (traffic.p_elements, traffic.q_elements) == (14656, 5632)
    assert traffic.uncompressed_elements == 320
    assert traffic.gradient_elements == 259392
    ops = PowerSGDRank4().operations(TOY, layout)
    assert [(op.note.split(" (")[0], op.size_bytes, op.count) for op in ops] == [
        ("PowerSGD P", 29312, 1),
        ("PowerSGD Q", 11264, 1),
        ("uncompressed: norm weights and matrices not worth compressing", 640, 1),
    ]
    assert {(op.collective, op.group, op.overlappable) for op in ops} == {
        ("all_reduce", "dp", True)
    }
    assert sum(op.size_bytes * op.count for op in ops) == 41216


def test_memory_by_hand():
    """Rank 4, BF16: the error feedback holds all 259392 gradient elements (518784 bytes);
    P and Q hold 14656 + 5632 elements (40576 bytes)."""
    terms = PowerSGDRank4().memory(TOY, Layout(dp=4, global_batch=4, seq_len=128))
    assert [(t.what, t.size_bytes) for t in terms] == [
        ("error feedback", 518784),
        ("P and Q", 40576),
    ]


def test_rank_1_is_a_quarter_of_rank_4_here():
    """No matrix of the toy is narrower than 4, so rank 1 sends exactly a quarter of P and Q."""
    layout = Layout(dp=4)
    one, four = powersgd_traffic(TOY, layout, 1), powersgd_traffic(TOY, layout, 4)
    assert (one.p_elements * 4, one.q_elements * 4) == (four.p_elements, four.q_elements)
    assert PowerSGD().operations(TOY, layout)[0].size_bytes == 3664 * 2


def test_small_matrices_are_not_compressed():
    """PyTorch's rule n m > 2 r (n + m): 8 x 8 at rank 4 stays uncompressed, at rank 1 not."""
    assert not compresses(8, 8, 4)
    assert compresses(8, 8, 1)


def test_tensor_parallel_shards_the_matrices():
    """With tp 2 each GPU compresses its shards: P and Q shrink, the norms do not."""
    full = powersgd_traffic(TOY, Layout(dp=4), 4)
    half = powersgd_traffic(TOY, Layout(tp=2, dp=4), 4)
    assert half.gradient_elements < full.gradient_elements
    assert half.p_elements + half.q_elements < full.p_elements + full.q_elements


def test_not_applicable_without_dp_or_to_moe():
    """One replica, or an MoE model: the strategy is skipped."""
    assert not PowerSGD().applicable(TOY, Layout(tp=2))
    moe = dataclasses.replace(TOY, experts=8, experts_per_token=2)
    assert not PowerSGD().applicable(moe, Layout(dp=4))
    assert PowerSGD().applicable(TOY, Layout(dp=4))


def test_gpt3_mlp_has_two_matrices_llama_three():
    """The MLP shape is read off params_B: GPT-3's 2 x h x 4h, Llama 3's gated 3 matrices."""
    from fabricui.api import load_catalog

    models = load_catalog().models
    assert mlp_matrices(models["gpt3-175b"]) == 2
    assert mlp_matrices(models["llama3-70b"]) == 3


@pytest.mark.skipif(not installed(), reason="pip install the plugin first")
def test_plugin_host_loads_it():
    """fabricui's plugin host loads the entry point: status ok, both strategies."""
    from fabricui.api import plugin_host

    rows = {row["name"]: row for row in plugin_host().describe()}
    assert rows["powersgd"]["status"] == "ok", rows["powersgd"]["error"]
    assert rows["powersgd"]["contributes"] == {"strategies": ["powersgd", "powersgd-r4"]}


@pytest.mark.skipif(not installed(), reason="pip install the plugin first")
def test_fabricui_plan_prices_it(capsys: pytest.CaptureFixture[str]):
    """``fabricui plan --dp-strategy powersgd`` prices P and Q on the real dp group."""
    from fabricui.api import run_cli as main

    argv = ["plan", "-m", "llama3-8b", "-t", "dgx-h100-pod", "--tp", "8"]
    assert main([*argv, "--dp-strategy", "powersgd", "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["operations"]
    mine = [op for op in ops if op["strategy"] == "powersgd"]
    assert len(mine) == 3 and not any(op["strategy"] == "ddp" for op in ops)
    assert all(op["group"] == "dp" and op["call_us"] > 0 for op in mine)
