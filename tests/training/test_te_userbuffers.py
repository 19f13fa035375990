"""Transformer Engine's userbuffers: each TP collective hides behind the one GEMM it is
paired with, and costs what its method (ring exchange, pipeline, bulk) costs beside it."""

from __future__ import annotations

import pytest

from fabricui.engine.training import comm, userbuffers
from fabricui.engine.training.pricing import PricedOp
from fabricui.engine.training.recipe import Recipe, resolve_recipe
from fabricui.engine.training.userbuffers import Method, Pairing, pairing_exposure_s
from fabricui.engine.types import CommOp
from fabricui.errors import HwdbError
from fabricui.model.choices import RecipeChoices

US = 1e-6


def _op(collective: str, phase: str, count: float, call_us: float, size: float = 8e6):
    return PricedOp(
        CommOp("tp-sp", collective, "tp", size, count, False, scope="layer", phase=phase),
        tuple(range(4)),
        call_us,
        "ring",
    )


def _windows(**kw) -> comm.Windows:
    return comm.Windows(
        gemm_s=1.0, expert_s=0.0, attention_s=0.0, layer_s=1.0, microbatch_s=1.0, **kw
    )


def _exposed_us(method: Method, gemm_us: float, call_us: float, **kw) -> float:
    args = {"size_bytes": 0.0, "ranks": 4, "collective": "all_gather", "sms": 128, "hbm_Bps": 0.0}
    args.update(kw)
    pairing = Pairing(gemm_us * US, method)
    return pairing_exposure_s(pairing, call_us * US, **args) / US


def test_ring_exchange_hides_behind_all_chunks_but_the_last():
    """TP 4, a 120 us gather beside a 100 us GEMM: the transfers overlap the first three
    chunks' GEMMs (75 us), 45 us exposed; an 80 us one exposes 5 us, a 70 us one none. The
    copy engines take no SMs."""
    ring = Method("ring_exchange")
    assert _exposed_us(ring, 100.0, 120.0) == pytest.approx(45.0)
    assert _exposed_us(ring, 100.0, 80.0) == pytest.approx(5.0)
    assert _exposed_us(ring, 100.0, 70.0) == pytest.approx(0.0)


def test_ring_exchange_reduce_scatter_sums_the_partials_after_the_ring():
    """TP 4, one-SM margin on 128 SMs: the 100 us GEMM runs on 127 SMs (100.787 us, 0.787
    exposed), the 90 us reduce-scatter hides behind 3/4 of it (75.59 us: 14.41 exposed),
    and the 4 received partials of a 100 MB tensor are summed after it (read 100 MB,
    write 25 MB at 2.5 TB/s: 50 us): 65.2 us."""
    ring = Method("ring_exchange", comm_sms=1, sm_margin=True)
    got = _exposed_us(
        ring, 100.0, 90.0, size_bytes=100e6, collective="reduce_scatter", hbm_Bps=2.5e12
    )
    slowed = 100.0 * 128 / 127
    assert got == pytest.approx(slowed - 100.0 + (90.0 - 0.75 * slowed) + 50.0)
    assert got == pytest.approx(65.197, abs=1e-3)


def test_pipeline_exposes_the_last_chunk_and_the_slower_steps():
    """4 chunks, a 200 us reduce-scatter beside a 100 us GEMM. With a 16-SM margin on 128
    SMs the GEMM takes 114.29 us: chunks of 28.57 us, 50 us of communication each: 28.57 +
    3 x 50 + 50 = 228.57 us, 128.57 exposed. Without the margin: 25 + 150 + 50 = 225 us
    (125 exposed) and the kernel's 16 SMs slow the 100 us it overlaps by 1/8: 137.5 us. A
    40 us one with margin exposes the GEMM's slowdown and its last chunk: 14.29 + 10."""
    margin = Method("pipeline", comm_sms=16, sm_margin=True, splits=4)
    shared = Method("pipeline", comm_sms=16, sm_margin=False, splits=4)
    assert _exposed_us(margin, 100.0, 200.0) == pytest.approx(128.571, abs=1e-3)
    assert _exposed_us(shared, 100.0, 200.0) == pytest.approx(137.5)
    assert _exposed_us(margin, 100.0, 40.0) == pytest.approx(24.286, abs=1e-3)


def test_bulk_runs_beside_the_whole_gemm():
    """A bulk collective on 4 of 128 SMs beside a 100 us GEMM, no margin: 60 us of it is
    hidden but slows the GEMM by 4/128 of 60 us (1.875 us); 150 us exposes 50 us plus
    4/128 of the 100 us overlapped (3.125 us)."""
    bulk = Method("bulk", comm_sms=4)
    assert _exposed_us(bulk, 100.0, 60.0) == pytest.approx(1.875)
    assert _exposed_us(bulk, 100.0, 150.0) == pytest.approx(53.125)
    assert _exposed_us(bulk, 100.0, 150.0, sms=None) == pytest.approx(50.0)


def test_fp8_gathers_move_half_the_bytes():
    """A gather in an FP8 buffer moves half the priced 16-bit call: 120 us becomes 60,
    hidden behind 3/4 of a 100 us GEMM."""
    pairing = Pairing(100 * US, Method("ring_exchange"), bytes_scale=0.5)
    assert pairing_exposure_s(pairing, 120 * US, 0.0, 4, "all_gather", 128, 0.0) == 0.0


def test_methods_of_the_configs():
    """Megatron-Bridge pipelines the projection's reduce-scatter on 24 SMs with margin in
    BF16 and ring-exchanges it in FP8; Transformer Engine 1.x's defaults pipeline it on 16
    SMs without margin; the gathers are ring exchanges in every config."""
    bf16 = userbuffers.method_for("megatron-bridge", "proj_fprop", "bf16")
    assert (bf16.kind, bf16.comm_sms, bf16.sm_margin, bf16.splits) == ("pipeline", 24, True, 4)
    fp8 = userbuffers.method_for("megatron-bridge", "proj_fprop", "fp8")
    assert (fp8.kind, fp8.comm_sms, fp8.sm_margin) == ("ring_exchange", 1, True)
    te = userbuffers.method_for("te", "proj_fprop", "fp8")
    assert (te.kind, te.comm_sms, te.sm_margin) == ("pipeline", 16, False)
    for config in userbuffers.CONFIGS:
        assert userbuffers.method_for(config, "qkv_fprop", "bf16").kind == "ring_exchange"


def test_expose_pairs_each_call_with_its_gemm():
    """2 layers x 1 micro-batch, TP 4, ring exchange on 128 SMs. Forward gathers of 120 us
    beside QKV and FC1 GEMMs of 100 and 200 us: 45 + 0 us a layer. Backward gathers of 120
    us beside 100 us input-gradient GEMMs (45 us each) plus the unlisted gather of the
    norm output beside a 40 us GEMM (90 us): 180 us a layer. Full recomputation's
    forward calls repeat the pairings: 90 us. Without userbuffers the layer's 1 s of GEMMs
    hides everything."""
    ring = Method("ring_exchange")
    paired = {
        "forward:all_gather": (Pairing(100 * US, ring), Pairing(200 * US, ring)),
        "backward:all_gather": (
            Pairing(100 * US, ring),
            Pairing(100 * US, ring),
            Pairing(40 * US, ring, unlisted=True),
        ),
    }
    windows = _windows(tp_userbuffers=paired, sms=128)
    ub = Recipe(tp_overlap=True, tp_userbuffers="te")
    forward = _op("all_gather", "forward", count=4, call_us=120.0)
    backward = _op("all_gather", "backward", count=4, call_us=120.0)
    assert comm.userbuffers_tp_exposure(forward, 2.0, windows) == pytest.approx(45 * US)
    assert comm.userbuffers_tp_exposure(backward, 2.0, windows) == pytest.approx(180 * US)
    again = _op("all_gather", "forward", count=8, call_us=120.0)
    assert comm.userbuffers_tp_exposure(again, 2.0, windows) == pytest.approx(90 * US)
    got = comm.expose([forward, backward], ub, 2, 1, windows)
    assert got.per_layer_s["tp"] == pytest.approx(225 * US)
    whole = comm.expose([forward, backward], Recipe(tp_overlap=True), 2, 1, windows)
    assert whole.per_layer_s["tp"] == pytest.approx(0.0)
    # off the NVLink domain nothing overlaps: 4 calls of 120 us a layer
    off_node = comm.expose([forward, backward], ub, 2, 1, windows, tp_in_node=False)
    assert off_node.per_layer_s["tp"] == pytest.approx(480 * US)


def test_pairings_of_a_megatron_layer(catalog):
    """Llama 3 70B at TP 4, 8192 tokens, BF16 under Megatron-Bridge's config: forward,
    the gathers go with QKV (2048 + 2 x 256 columns) and FC1 (2 x 7168), the reduce-scatters
    with the projection (inner 2048) and FC2 (inner 7168); backward, the gathers with the
    projection's and FC2's input gradients and, unlisted, QKV's and FC1's; the
    reduce-scatters with QKV's and FC1's weight gradients. Nothing without sequence
    parallelism, userbuffers or TP, or for MoE models."""
    import dataclasses

    from fabricui.engine.training.device import make_device
    from fabricui.engine.training.kernels import gemm_time_s
    from fabricui.engine.training.shape import geometry
    from fabricui.engine.training.step import _tp_userbuffers
    from fabricui.engine.types import Layout

    device, _ = make_device(catalog.gpus["h100-sxm"], "bf16")
    geo = geometry(catalog.models["llama3-70b"])
    layout = Layout(tp=4, seq_len=8192, global_batch=1)
    recipe = Recipe(tp_overlap=True, tp_userbuffers="megatron-bridge")

    def gemm(m: float, n: float, k: float) -> float:
        return float(gemm_time_s(device, m, n, k))

    got = _tp_userbuffers(device, geo, layout, recipe, sp=True)
    qkv, fc1 = (2048 + 2 * 256, 8192), (2 * 7168, 8192)
    proj, fc2 = (8192, 2048), (8192, 7168)

    def times(key: str) -> list[float]:
        return [p.gemm_s for p in got[key]]

    assert times("forward:all_gather") == pytest.approx([gemm(8192, *qkv), gemm(8192, *fc1)])
    assert times("forward:reduce_scatter") == pytest.approx([gemm(8192, *proj), gemm(8192, *fc2)])
    assert times("backward:all_gather") == pytest.approx(
        [
            gemm(8192, proj[1], proj[0]),
            gemm(8192, fc2[1], fc2[0]),
            gemm(8192, qkv[1], qkv[0]),
            gemm(8192, fc1[1], fc1[0]),
        ]
    )
    assert [p.unlisted for p in got["backward:all_gather"]] == [False, False, True, True]
    assert times("backward:reduce_scatter") == pytest.approx(
        [gemm(qkv[1], qkv[0], 8192), gemm(fc1[1], fc1[0], 8192)]
    )
    assert [p.method.kind for p in got["forward:reduce_scatter"]] == ["pipeline", "pipeline"]
    assert all(p.bytes_scale == 1.0 for pairs in got.values() for p in pairs)
    fp8_device, _ = make_device(catalog.gpus["h100-sxm"], "fp8")
    fp8 = _tp_userbuffers(
        fp8_device, geo, layout, dataclasses.replace(recipe, precision="fp8"), sp=True
    )
    assert [p.bytes_scale for p in fp8["backward:all_gather"]] == [0.5] * 4
    assert [p.bytes_scale for p in fp8["forward:reduce_scatter"]] == [1.0, 1.0]
    assert [p.method.kind for p in fp8["forward:reduce_scatter"]] == ["ring_exchange"] * 2
    assert _tp_userbuffers(device, geo, layout, recipe, sp=False) == {}
    no_ub = dataclasses.replace(recipe, tp_userbuffers="")
    assert _tp_userbuffers(device, geo, layout, no_ub, sp=True) == {}
    one = dataclasses.replace(layout, tp=1)
    assert _tp_userbuffers(device, geo, one, recipe, sp=True) == {}
    moe = geometry(catalog.models["mixtral-8x7b"])
    assert _tp_userbuffers(device, moe, layout, recipe, sp=True) == {}


def test_megatron_frameworks_run_userbuffers(catalog):
    """Megatron-Core (Megatron-Bridge's recipes) and Megatron-LM's own scripts overlap TP
    on Transformer Engine's userbuffers; torchtitan does not."""
    core, _ = resolve_recipe(RecipeChoices(), "hopper", catalog.frameworks["megatron-core"])
    mlm, _ = resolve_recipe(
        RecipeChoices(tp_overlap=True), "hopper", catalog.frameworks["megatron-lm"]
    )
    titan, _ = resolve_recipe(
        RecipeChoices(tp_overlap=True), "hopper", catalog.frameworks["torchtitan"]
    )
    assert core.tp_userbuffers == "megatron-bridge"
    assert mlm.tp_userbuffers == "te"
    assert titan.tp_userbuffers == ""


def test_an_unknown_userbuffers_config_is_refused(tmp_path):
    """A framework record naming a userbuffers configuration fabricui does not know gets
    a one-line error naming the file, the key and the choices."""
    from fabricui.hwdb import load_catalog, shipped_hwdb_dirs

    (tmp_path / "frameworks.yaml").write_text(
        "frameworks:\n"
        "  - id: my-framework\n"
        "    name: My framework\n"
        "    tp_userbuffers: nccl\n"
        "    source: https://example.com\n"
    )
    with pytest.raises(HwdbError, match=r"frameworks.yaml:4: .*tp_userbuffers.*megatron-bridge"):
        load_catalog([*shipped_hwdb_dirs(), tmp_path])
