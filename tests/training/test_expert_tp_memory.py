"""What Megatron-Core's routed experts keep for backward under an expert tensor-parallel
degree ``etp`` other than TP: each of the ``etp`` ranks runs the routed copies its group
all-gathers (``T k etp / t``, the time model's count) at ``1 / etp`` of each expert's inner
width, and ``linear_fc1`` saves those copies at the full hidden width. Each figure checked
by hand."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training.memory import (
    activation_bytes,
    layer_activation_bytes,
    routed_bytes_per_token,
)
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.types import Layout
from tests.training.test_expert_kernels import MOE

MiB = 2**20
TOKENS = 4096


def _layer(tp, etp, recompute="none", modules=()):
    """One ``MOE`` layer (h 1024, f 1024 gated, top-2), one sequence of 4,096 tokens,
    sequence parallel, as Megatron-Core runs MoE under TP."""
    return float(
        layer_activation_bytes(
            MOE, tp, 1, 1, TOKENS, 1.0, recompute, "flash", modules=modules, etp=etp
        )
    )


def test_routed_bytes_per_token_by_hand():
    """Top-2 of h 1024, f 1024 gated: 2 x (2 x 1024 x etp + 6 x 1024) bytes per token."""
    assert float(routed_bytes_per_token(MOE, 1)) == 2 * (2048 + 6144)
    assert float(routed_bytes_per_token(MOE, 2)) == 2 * (4096 + 6144)


@pytest.mark.parametrize(("etp", "mib"), [(1, 64.0), (2, 72.0)])
def test_layer_at_tp2_by_hand(etp, mib):
    """TP 2 with SP: norm and block inputs 8h / 2 = 4,096 bytes a token, Q K V O
    (4 x 1024 + 4 x 1024) / 2 = 4,096, 4,096 tokens: 32 MiB. The routed experts, ETP 1:
    2,048 tokens x 2 copies = 4,096 copies a rank: fc1's input 4,096 x 1,024 x 2 B = 8 MiB,
    its output (gate and up, 2,048 wide) 16 MiB, the activation's output 8 MiB: 32 MiB,
    64 MiB the layer. ETP 2: the 2 ranks' copies gathered, 8,192, at half of each expert:
    fc1's input 16 MiB, its output 16 MiB, the activation's output 8 MiB: 40 MiB, 72 MiB."""
    assert _layer(2, etp) / MiB == pytest.approx(mib)


def test_default_is_tp():
    """Without ``etp`` the experts are split over the TP ranks (Megatron-Core's default)."""
    assert _layer(2, None) == _layer(2, 2)
    assert _layer(1, None) == _layer(1, 1)


def test_inner_tensors_do_not_depend_on_etp():
    """At TP 4 each expert-TP rank more adds its 4,096 x 2 / 4 = 2,048 copies at the hidden
    width only (2,048 x 1,024 x 2 B = 4 MiB); the inner tensors stay 1 / 4 of all copies."""
    assert _layer(4, 2) - _layer(4, 1) == pytest.approx(4 * MiB)
    assert _layer(4, 4) - _layer(4, 2) == pytest.approx(8 * MiB)


def test_recomputing_the_moe_block_drops_the_gathered_copies():
    """``recompute_modules`` ``moe`` keeps none of the routed experts' tensors at any ETP;
    ``moe_act`` drops the activation's output (8 MiB at TP 2) and keeps the gathered
    copies; full recompute rebuilds one layer with them (4 layers, 3 in flight)."""
    assert _layer(2, 2, "selective", ("moe",)) == _layer(2, 1, "selective", ("moe",))
    act = _layer(2, 2, "selective", ("moe_act",))
    assert _layer(2, 2) - act == pytest.approx(8 * MiB)
    assert act - _layer(2, 1, "selective", ("moe_act",)) == pytest.approx(8 * MiB)

    def stage(etp, recompute):
        return float(activation_bytes(MOE, 4, 3, 2, 1, 1, TOKENS, 1.0, recompute, etp=etp))

    assert stage(2, "none") - stage(1, "none") == pytest.approx(12 * 8 * MiB)
    assert stage(2, "full") - stage(1, "full") == pytest.approx(8 * MiB)


def test_plan_counts_the_layouts_etp(catalog):
    """Mixtral 8x7B (h 4096, top-2, 32 MoE layers) on 8 H100s, TP 2, EP 4, one 4,096-token
    sequence per micro-batch, no recompute: ETP 2 gathers the other TP rank's 4,096 copies,
    4,096 x 4,096 x 2 B = 32 MiB more a layer, 1,024 MiB over 32 layers; ETP 2 is what a
    layout without ``etp`` runs."""
    from fabricui.engine.training.step import plan
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.plan import load_strategies
    from fabricui.services.session import pricer

    fabric = build_fabric(resolve_topology("dgx-h100-pod", catalog, 1), catalog)
    model = catalog.models["mixtral-8x7b"]
    strategies = load_strategies()
    recipe, _ = resolve_recipe(
        RecipeChoices(recompute="none"), "hopper", catalog.frameworks["megatron-core"]
    )
    used = [strategies[n] for n in ("ddp", "tp", "ep")]
    evaluate = pricer(fabric)
    base = Layout(tp=2, dp=4, ep=4, global_batch=4, microbatches=1, seq_len=4096)
    acts = {
        etp: plan(
            fabric, model, dataclasses.replace(base, etp=etp), used, evaluate=evaluate,
            recipe=recipe,
        ).memory.activations_bytes
        for etp in (0, 1, 2)
    }  # fmt: skip
    assert (acts[2] - acts[1]) / MiB == pytest.approx(32 * 32.0)
    assert acts[0] == acts[2]
