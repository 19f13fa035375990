"""Attention in FP8 (Transformer Engine's ``fp8_dot_product_attention``): the kernel
record's FP8-over-16-bit factors by format, head dim and window, applied by hand; the run
key ``fp8_attention`` and ``plan --fp8-attention`` carried to the pricing; what has no
FP8 figure priced in 16-bit and said; the holdout rows whose config turns it on."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabricui.cli import main
from fabricui.engine.training.device import Device, fp8_attention_tables, make_device
from fabricui.engine.training.kernels import flash_attention_times_s
from fabricui.engine.training.layer import layer_cost
from fabricui.engine.training.recipe import Recipe, RecipeChoices, resolve_recipe
from fabricui.engine.training.shape import geometry
from fabricui.errors import HwdbError
from fabricui.hwdb import Catalog
from fabricui.hwdb.run_file import read_run_file
from fabricui.services.plan_runs import run_choices
from tests.unit._records import load_kernel

HOLDOUT = Path(__file__).parents[2] / "benchmarks" / "data" / "training_holdout.yaml"

#: A round device: 100 TFLOP/s 16-bit peak, causal attention at 0.5 forward and 0.4
#: backward, windows of 128 at 0.1 / 0.05 and 1024 at 0.4 / 0.2; in FP8 the forward runs
#: 1.5x at head dim 128 and 2x at 256, the backward as in 16-bit, a 128-token window's
#: forward 1.2x and its backward with no FP8 figure.
TOY = Device(
    name="toy",
    peak_flops=100e12,
    half_flops=100e12,
    gemm_efficiency=0.5,
    gemm_overhead_s=0.0,
    sms=None,
    attention_efficiency=0.5,
    attention_bwd_efficiency=0.4,
    attention_window_fwd=((128.0, 0.1), (1024.0, 0.4)),
    attention_window_bwd=((128.0, 0.05), (1024.0, 0.2)),
    attention_fp8_fwd=((128.0, 1.5), (256.0, 2.0)),
    attention_fp8_bwd=((128.0, 1.0),),
    attention_fp8_window_fwd=((128.0, 1.2),),
    hbm_Bps=1e12,
    memory_bytes=80e9,
    gemm_input_bytes=1.0,
)
#: The same device with attention in 16-bit.
HALF = dataclasses.replace(
    TOY, attention_fp8_fwd=(), attention_fp8_bwd=(), attention_fp8_window_fwd=()
)


def test_causal_fp8_by_hand():
    """1e12 forward FLOPs: 16-bit 1e12 / (1e14 x 0.5) = 20 ms forward and 2.5e12 / (1e14 x
    0.4) = 62.5 ms backward; FP8 at head dim 128 runs the forward 1.5x (13.33 ms), at
    2^7.5 half way in log2 to 256 1.75x, above 256 the 2x of 256 (nearest held); the
    backward's factor is 1 everywhere. Arrays broadcast, NaN gives NaN."""
    fwd, bwd = flash_attention_times_s(HALF, 1e12, 0.0, 128)
    assert (float(fwd), float(bwd)) == pytest.approx((0.02, 0.0625))
    fwd, bwd = flash_attention_times_s(TOY, 1e12, 0.0, 128)
    assert (float(fwd), float(bwd)) == pytest.approx((0.02 / 1.5, 0.0625))
    fwd, _ = flash_attention_times_s(TOY, 1e12, 0.0, 2**7.5)
    assert float(fwd) == pytest.approx(0.02 / 1.75)
    fwd, _ = flash_attention_times_s(TOY, 1e12, 0.0, np.array([64.0, 512.0]))
    np.testing.assert_allclose(fwd, [0.02 / 1.5, 0.02 / 2.0])
    fwd, _ = flash_attention_times_s(TOY, 1e12, 0.0, np.nan)
    assert np.isnan(fwd)


def test_windowed_fp8_by_hand():
    """A 128-token window: forward 1e12 / (1e14 x 0.1 x 1.2) = 83.3 ms; the backward has
    no FP8 window figure, so 2.5e12 / (1e14 x 0.05) = 0.5 s as in 16-bit; the causal
    head-dim factors do not apply to it."""
    fwd, bwd = flash_attention_times_s(TOY, 1e12, 0.0, 128, window=128)
    assert (float(fwd), float(bwd)) == pytest.approx((1e12 / (1e14 * 0.1 * 1.2), 0.5))
    fwd, bwd = flash_attention_times_s(HALF, 1e12, 0.0, 128, window=128)
    assert (float(fwd), float(bwd)) == pytest.approx((0.1, 0.5))


def test_the_recipe_picks_the_format(catalog):
    """The shipped cuDNN Blackwell record: MXFP8 under the mxfp8 recipe, per-tensor FP8
    under delayed and current; the forward and backward tables by head dim, the window
    forward by window, and no window backward (none measured)."""
    kernel = catalog.kernels["cudnn-blackwell"]
    notes: list[str] = []
    mx = fp8_attention_tables(kernel, "mxfp8", notes)
    assert mx[0] == ((128.0, 1.296), (192.0, 1.475))
    assert mx[1] == ((128.0, 0.972), (192.0, 1.316))
    assert mx[2] == ((128.0, 1.077),) and mx[3] == ()
    assert notes == []
    for recipe in ("delayed", "current"):
        tensor = fp8_attention_tables(kernel, recipe, notes)
        assert tensor[0] == ((128.0, 1.431), (192.0, 1.613))
        assert tensor[2] == ((128.0, 1.145), (1024.0, 1.115))
    assert fp8_attention_tables(kernel, None, notes) == ((), (), (), ())
    assert notes == []


def test_what_has_no_fp8_figure_is_priced_in_16_bit_and_said(catalog):
    """A recipe under which no fused FP8 attention runs, a kernel with no figure for the
    format, and (for a model with sliding windows) the missing window backward: each is
    one note, and the tables it lacks stay empty."""
    blackwell, hopper = catalog.kernels["cudnn-blackwell"], catalog.kernels["cudnn-hopper"]
    notes: list[str] = []
    assert fp8_attention_tables(blackwell, "blockwise", notes) == ((), (), (), ())
    assert fp8_attention_tables(hopper, "current", notes) == ((), (), (), ())
    assert fp8_attention_tables(None, "mxfp8", notes) == ((), (), (), ())
    fp8_attention_tables(blackwell, "mxfp8", notes, windowed=True)
    assert notes == [
        "FP8 attention under the blockwise recipe: no fused FP8 attention runs under it "
        "(Transformer Engine's runs under delayed, current and MXFP8 scaling): priced in 16-bit",
        "cudnn-hopper has no fp8 attention figure in hwdb: priced in 16-bit",
        "the GPU's attention figure has no mxfp8 attention figure in hwdb: priced in 16-bit",
        "cudnn-blackwell has no mxfp8 figure in hwdb for the sliding-window backward: "
        "priced in 16-bit",
    ]


def test_a_gpt_oss_windowed_layer_on_gb200(catalog):
    """gpt-oss-120b's 128-token window layer on a GB200 under MXFP8 attention, micro-batch
    4 of 4096 tokens, EP 64: the forward at the BF16 window figure 0.0678 times MXFP8's
    1.077, the backward at 0.0776 (no FP8 window backward figure), on 4 b a s w d FLOPs
    at the 2,500 TFLOP/s 16-bit peak, the fill at 4096 against 8192 (half_seq 262) and the
    sustained clock."""
    gpu = catalog.gpus["gb200"]
    kernel = catalog.kernels["cudnn-blackwell"]
    device, _ = make_device(gpu, "fp8", kernel, fp8_attention="mxfp8")
    geo = geometry(catalog.models["gpt-oss-120b"])
    cost = layer_cost(device, geo, 1, 1, 64, 4, 4096, 0, moe=True, windowed=True)
    fill = (4096 / (4096 + 262)) / (8192 / (8192 + 262))
    rate = 2500e12 * gpu.sustained_efficiency * fill
    band = 4 * 4 * 64 * 4096 * 128 * 64
    assert float(cost.attn_fwd_s) == pytest.approx(band / (rate * 0.0678 * 1.077))
    assert float(cost.attn_bwd_s) == pytest.approx(2.5 * band / (rate * 0.0776))


def test_the_recipe_carries_the_setting(catalog):
    """Stated, FP8 attention runs under the recipe's FP8 scaling (nvfp4 under fp4); under a
    16-bit precision it is not used; unstated it is off, with no note (the frameworks'
    default)."""
    core = catalog.frameworks["megatron-core"]
    on = RecipeChoices(precision="fp8", fp8_recipe="mxfp8", fp8_attention=True)
    recipe, notes = resolve_recipe(on, "blackwell", core)
    assert recipe.fp8_attention and recipe.fp8_attention_recipe == "mxfp8"
    assert not any("FP8 attention" in n for n in notes)
    era, _ = resolve_recipe(on, "blackwell")
    assert era.fp8_attention_recipe == "mxfp8"
    assert Recipe(precision="fp4", fp8_attention=True).fp8_attention_recipe == "nvfp4"
    assert Recipe(precision="bf16", fp8_attention=True).fp8_attention_recipe is None
    plain, _ = resolve_recipe(RecipeChoices(precision="fp8"), "blackwell", core)
    assert not plain.fp8_attention and plain.fp8_attention_recipe is None


def load(tmp_path: Path, tables: str) -> Catalog:
    """The database with one cudnn blackwell kernel record holding ``tables``."""
    return load_kernel(tmp_path, tables, "cudnn", "blackwell")


def test_fp8_tables_load(tmp_path):
    """Formats to head dims (or windows) to factors, as given; none by default."""
    catalog = load(
        tmp_path,
        "  fp8_fwd_scale: {mxfp8: {128: 1.3}, fp8: {128: 1.4, 192: 1.6}}\n"
        "  fp8_window_bwd_scale: {fp8: {128: 0.9}}",
    )
    kernel = catalog.kernels["test-kernel"]
    assert kernel.fp8_fwd_scale == {"mxfp8": {128: 1.3}, "fp8": {128: 1.4, 192: 1.6}}
    assert kernel.fp8_window_bwd_scale == {"fp8": {128: 0.9}}
    assert kernel.fp8_bwd_scale == kernel.fp8_window_fwd_scale == {}


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ("  fp8_fwd_scale: {fp16: {128: 1.2}}", r"fp8_fwd_scale\.fp16: must be one of fp8, mxfp8"),
        ("  fp8_bwd_scale: {mxfp8: {128: 5}}", r"fp8_bwd_scale\.mxfp8\.128: FP8 factor must be"),
        ("  fp8_fwd_scale: {mxfp8: {4: 1.2}}", r"fp8_fwd_scale\.mxfp8\.4: head dim must be"),
        ("  fp8_window_fwd_scale: {fp8: {0: 1.2}}", r"fp8_window_fwd_scale\.fp8\.0: window must"),
        ("  fp8_fwd_scale: {mxfp8: 1.2}", r"fp8_fwd_scale\.mxfp8: expected a mapping"),
    ],
)
def test_a_bad_fp8_table_is_one_line(tmp_path, tables, message):
    """Each bad table is one error line naming the file and the key."""
    with pytest.raises(HwdbError) as caught:
        load(tmp_path, tables)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'kernels.yaml'}:")
    assert re.search(message, text), text


#: A small run on a GB200 rack: Llama 3 8B, DP 72 with FSDP, MXFP8.
RUN = {
    "id": "toy",
    "model": "llama3-8b",
    "run": {
        "topology": "gb200-nvl72",
        "tp": 1,
        "pp": 1,
        "dp": 72,
        "dp_strategy": "fsdp",
        "global_batch": 72,
        "precision": "fp8",
        "fp8_recipe": "mxfp8",
    },
}


def write(tmp_path: Path, **changes: object) -> Path:
    """RUN with its run block changed, as a file."""
    path = tmp_path / "run.yaml"
    data = {**RUN, "run": {**RUN["run"], **changes}}
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_a_run_file_states_it(tmp_path, catalog):
    """``fp8_attention: true`` is read and carried to the recipe choices; unstated is None."""
    (entry,) = read_run_file(write(tmp_path, fp8_attention=True), catalog)
    assert entry.run.fp8_attention is True and run_choices(entry.run).fp8_attention is True
    (plain,) = read_run_file(write(tmp_path), catalog)
    assert plain.run.fp8_attention is None


def test_a_bad_value_is_one_line_naming_file_line_and_key(tmp_path, run_cli):
    """Exit 2, one line on stderr with the file, its line and the key."""
    path = write(tmp_path, fp8_attention="yes")
    status, out, err = run_cli("plan", "--run", str(path))
    line = err.strip()
    assert status == 2 and out == ""
    assert "\n" not in line and f"{path}:" in line and "run.fp8_attention" in line, line
    assert "expected true, false or null" in line


def test_the_run_file_and_the_command_line_price_it(tmp_path, run_cli):
    """On a GB200 with MXFP8, attention in FP8 shortens compute (Llama 3 8B, head dim
    128: forward 1.296x, backward 0.972x), says the format on the throughput line and sets
    the recipe's JSON key; the command line's --fp8-attention prices as the run file."""
    results = {}
    for name, path in (("off", write(tmp_path)), ("on", tmp_path / "on.yaml")):
        if name == "on":
            path.write_text(write(tmp_path, fp8_attention=True).read_text(), encoding="utf-8")
        status, out, _ = run_cli("plan", "--run", str(path), "--json")
        assert status == 0
        results[name] = json.loads(out)["plan"]
    off, on = results["off"], results["on"]
    assert on["recipe"]["fp8_attention"] is True and off["recipe"]["fp8_attention"] is False
    assert on["compute_us"] < off["compute_us"]
    argv = ["plan", "-m", "llama3-8b", "-t", "gb200-nvl72", "--tp", "1", "--dp", "72"]
    argv += ["--dp-strategy", "fsdp", "--precision", "fp8", "--fp8-recipe", "mxfp8"]
    status, out, _ = run_cli(*argv, "--fp8-attention", "--json")
    assert status == 0 and json.loads(out)["compute_us"] == pytest.approx(on["compute_us"])
    status, out, _ = run_cli(*argv, "--fp8-attention")
    assert status == 0 and "cudnn mxfp8 attention" in out


def test_under_16_bit_the_setting_is_said_unused(run_cli):
    """--fp8-attention with a 16-bit precision prices as without it and says so."""
    argv = ["plan", "-m", "llama3-8b", "-t", "gb200-nvl72", "--tp", "1", "--dp", "72"]
    argv += ["--dp-strategy", "fsdp", "--precision", "bf16"]
    _, plain, _ = run_cli(*argv, "--json")
    status, out, _ = run_cli(*argv, "--fp8-attention", "--json")
    assert status == 0
    assert json.loads(out)["compute_us"] == pytest.approx(json.loads(plain)["compute_us"])
    notes = json.loads(out)["assumptions"]
    assert any("FP8 attention not used: precision bf16" in n for n in notes)


def test_the_plan_help_lists_it(capsys):
    """The precision options include --fp8-attention."""
    with pytest.raises(SystemExit) as done:
        main(["plan", "--help"])
    assert done.value.code == 0 and "--fp8-attention" in capsys.readouterr().out


#: Rows whose cited recipe or workload config sets fp8_dot_product_attention True.
FP8_ATTENTION = {
    "mbridge2608_gptoss120b_64xgb300_mxfp8",
    "mbridge2608_gptoss120b_64xgb200_mxfp8",
    "mbridge2608_qwen3_30b_8xgb300_mxfp8",
    "mbridge2608_qwen3_30b_8xgb200_mxfp8",
    "mbridge2608_qwen3_235b_256xgb300_mxfp8",
    "mbridge2608_qwen3_235b_256xgb200_mxfp8",
    "mbridge2608_dsv3_256xgb300_mxfp8",
    "mbridge2606_dsv3_256xgb300_mxfp8_gbs15360",
    "mbridge2606_qwen3_30b_8xb300_mxfp8",
}


def test_the_holdout_states_it_where_the_config_sets_it(catalog):
    """Exactly the rows whose config turns FP8 attention on state it, each with a dated
    note naming the config (DeepSeek-V3 on GB200 at 26.08 leaves it off)."""
    raw = {row["id"]: row for row in yaml.safe_load(HOLDOUT.read_text(encoding="utf-8"))}
    entries = read_run_file(HOLDOUT, catalog)
    assert {e.id for e in entries if e.run.fp8_attention} == FP8_ATTENTION
    assert not any(e.run.fp8_attention is False for e in entries)
    for entry_id in FP8_ATTENTION:
        note = raw[entry_id]["note"]
        assert "stated 2026-11-30 from " in note and "(fp8_attention true)" in note, entry_id
