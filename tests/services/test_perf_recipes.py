"""A published Megatron-Bridge run takes its release's performance recipe for what it leaves
unstated: hand-made recipes and rows, and the shipped recipes on a stripped holdout row."""

from __future__ import annotations

from pathlib import Path

from fabricui.hwdb.perf_recipes import load_perf_recipes
from fabricui.hwdb.run_file import parse_runs, read_run_file
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.model.perf_recipe import PerfRecipe
from fabricui.services.perf_recipes import (
    find_recipe,
    recipe_choices,
    recipe_etp,
    recipe_precisions,
)
from fabricui.services.plan_runs import price_entry, run_choices

ROW = """
- id: row
  source:
    paper: NVIDIA Megatron-Bridge performance summary (26.08 NeMo container)
    table: "'26.08 NeMo Container' pre-training, Qwen3_30B_a3B, DGX-GB300, 8 GPUs, MXFP8 row"
  precision: 'MXFP8 (table: MXFP8)'
  model: {name: Qwen3-30B-A3B, layers: 48, hidden: 2048, heads: 32, kv_heads: 4,
          head_dim: 128, ffn_hidden: 768, experts: 128, experts_per_token: 8,
          moe_layers: 48, seq_len: 4096, vocab: 151936, mlp: swiglu}
  run:
    topology: {gpu: gb300, nodes: 2, gpus_per_node: 4,
               intra: {fabric: nvswitch, link: nvlink5, hosts_per_domain: 18},
               net: {link: ib-xdr, gbps: 800, nics_per_node: 4}}
    tp: 1
    pp: 1
    dp: 8
    ep: 8
    global_batch: 512
    micro_batch: 8
    recompute: selective
    precision: fp8
"""


def recipe(**changes: object) -> PerfRecipe:
    """The 26.08 Qwen3-30B GB300 MXFP8 recipe, as made by hand."""
    fields: dict = dict(
        release="26.08",
        recipe="qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config",
        model="qwen3_30b_a3b",
        gpu="gb300",
        gpus=8,
        precision="fp8_mx",
        source="perf_recipes/qwen/gb300/qwen3_moe.py@4ab94dfad",
        global_batch=512,
        tp=1,
        pp=1,
        cp=1,
        ep=8,
        fp8_recipe="mxfp8",
        ep_overlap=True,
        cuda_graph="full_iteration",
        moe_dispatch="deepep",
        fp8_attention=True,
        recompute_modules=("moe_act", "mla_up_proj", "no_such_module"),
    )
    fields.update(changes)
    return PerfRecipe(**fields)  # type: ignore[arg-type]


def entry(catalog, text: str = ROW):
    """The one entry of a run file's text."""
    return parse_runs(parse_yaml(text, "row.yaml"), catalog)[0]


def test_a_row_stating_nothing_takes_the_recipes_settings(catalog):
    row = entry(catalog)
    core = catalog.frameworks["megatron-core"]
    choices, notes = recipe_choices(row, run_choices(row.run), core, [recipe()])
    assert choices.ep_overlap is True
    assert choices.cuda_graph == "full_iteration"
    assert choices.moe_dispatch == "deepep"
    assert choices.fp8_recipe == "mxfp8"
    assert choices.fp8_attention is True
    # Only the modules the model has: no MLA here, and unknown words dropped.
    assert choices.recompute_modules == ("moe_act",)
    where = "from Megatron-Bridge 26.08 recipe qwen3_30b_a3b gb300 8 fp8_mx"
    assert f"EP overlap not stated: on ({where})" in notes
    assert f"FP8 recipe not stated: mxfp8 ({where})" in notes


def test_a_stated_key_wins(catalog):
    row = entry(catalog, ROW + "    ep_overlap: false\n    cuda_graph: partial\n")
    core = catalog.frameworks["megatron-core"]
    choices, notes = recipe_choices(row, run_choices(row.run), core, [recipe()])
    assert choices.ep_overlap is False
    assert choices.cuda_graph == "partial"
    assert choices.moe_dispatch == "deepep"
    assert not any(n.startswith(("EP overlap", "CUDA graphs")) for n in notes)


def test_no_matching_recipe_keeps_the_defaults_and_says_so(catalog):
    row = entry(catalog)
    core = catalog.frameworks["megatron-core"]
    stated = run_choices(row.run)
    for other in (
        recipe(gpus=16),
        recipe(gpu="gb200"),
        recipe(release="26.06"),
        recipe(precision="bf16"),
        recipe(model="qwen3_235b_a22b"),
    ):
        choices, notes = recipe_choices(row, stated, core, [other])
        assert choices == stated
        assert notes == [
            "no Megatron-Bridge 26.08 performance recipe for this model, GPU, GPU count and "
            "precision: megatron-core's defaults"
        ]


def test_other_frameworks_and_unnamed_releases_take_nothing(catalog):
    row = entry(catalog)
    stated = run_choices(row.run)
    other = catalog.frameworks["megatron-lm"]
    assert recipe_choices(row, stated, other, [recipe()]) == (stated, [])
    plain = entry(catalog, ROW.replace("(26.08 NeMo container)", "").replace("'26.08 ", "'"))
    core = catalog.frameworks["megatron-core"]
    assert recipe_choices(plain, stated, core, [recipe()]) == (stated, [])


def test_the_global_batch_then_the_layout_pick_between_variants(catalog):
    row = entry(catalog)
    main, big = recipe(), recipe(variant="large_scale", global_batch=4096, ep_overlap=False)
    assert find_recipe(row, [big, main]) is main
    other_layout = recipe(variant="v1", ep=4, ep_overlap=False)
    assert find_recipe(row, [other_layout, main]) is main
    # Alone, a recipe of another batch still is the release's recipe for the row.
    assert find_recipe(row, [big]) is big


def test_a_count_no_recipe_names_takes_the_one_the_script_runs_at_any_count(catalog):
    """25.11's perf script runs its one config for a model, GPU and precision at any GPU
    count (scaling the batch): an 8-GPU row takes the 64-GPU config, and says so."""
    row = entry(catalog)
    core = catalog.frameworks["megatron-core"]
    anywhere = recipe(gpus=64, any_count=True, global_batch=4096)
    assert find_recipe(row, [anywhere]) is anywhere
    choices, notes = recipe_choices(row, run_choices(row.run), core, [anywhere])
    assert choices.ep_overlap is True
    where = "from Megatron-Bridge 26.08 recipe qwen3_30b_a3b gb300 64 fp8_mx, run at 8 GPUs"
    assert f"EP overlap not stated: on ({where})" in notes


def test_a_recipe_of_the_rows_own_count_wins_over_the_any_count_one(catalog):
    row = entry(catalog)
    exact, anywhere = recipe(), recipe(gpus=64, any_count=True, ep_overlap=False)
    assert find_recipe(row, [anywhere, exact]) is exact
    # Not the script's choice at other counts: no recipe (the exact rule).
    assert find_recipe(row, [recipe(gpus=64)]) is None
    # Another model's, GPU's or precision's any-count recipe is not the row's.
    for other in (
        recipe(gpus=64, any_count=True, model="qwen3_235b_a22b"),
        recipe(gpus=64, any_count=True, gpu="gb200"),
        recipe(gpus=64, any_count=True, precision="bf16"),
        recipe(gpus=64, any_count=True, release="26.06"),
    ):
        assert find_recipe(row, [other]) is None


HOLDOUT_ROW = """
- id: row
  source:
    paper: NVIDIA Megatron-Bridge performance summary (25.11 NeMo container)
    table: "'25.11 NeMo Container' pre-training, Qwen3_235B_a22B, DGX-GB200, 256 GPUs, BF16"
  precision: bf16
  model: {name: Qwen3-235B-A22B, layers: 94, hidden: 4096, heads: 64, kv_heads: 4,
          head_dim: 128, ffn_hidden: 1536, experts: 128, experts_per_token: 8,
          moe_layers: 94, seq_len: 4096, vocab: 151936, mlp: swiglu}
  run:
    topology: {gpu: gb200, nodes: 64, gpus_per_node: 4,
               intra: {fabric: nvswitch, link: nvlink5, hosts_per_domain: 18},
               net: {link: ib-ndr, gbps: 400, nics_per_node: 4}}
    tp: 1
    pp: 8
    dp: 32
    ep: 32
    global_batch: 8192
    micro_batch: 1
    precision: bf16
"""


def test_the_shipped_25_11_config_runs_at_a_count_it_does_not_name(catalog):
    """256 GB200 GPUs, while 25.11's Qwen3-235B GB200 BF16 config is for 64: the row ran
    that config (its perf script scales the batch) with the layout the row states."""
    row = entry(catalog, HOLDOUT_ROW)
    found = find_recipe(row, load_perf_recipes())
    assert found is not None
    assert (found.recipe, found.gpus) == (
        "QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_BF16_BASE_CONFIG",
        64,
    )
    core = catalog.frameworks["megatron-core"]
    _, notes = recipe_choices(row, run_choices(row.run), core, load_perf_recipes())
    assert any(
        "(from Megatron-Bridge 25.11 recipe qwen3_235b_a22b gb200 64 bf16, run at 256 GPUs)" in n
        for n in notes
    )


def test_every_fp8_recipe_the_text_names_is_a_candidate(catalog):
    """A footnote naming another granularity (MXFP8 on Blackwell) beside the row's own
    current scaling: the GPU's recipes tell them apart."""
    text = "fp8 (footnote: 32x32 MXFP8 on GB200/B200; the matrix entry is fp8_cs)"
    assert recipe_precisions("fp8", text) == ("fp8_mx", "fp8_cs")
    row = entry(catalog, ROW.replace("'MXFP8 (table: MXFP8)'", repr(text)))
    current = recipe(precision="fp8_cs", fp8_recipe="current")
    assert find_recipe(row, [current]) is current
    assert find_recipe(row, [current, recipe()]).precision == "fp8_mx"


def test_the_recipes_gradient_reduce_overlap_is_taken(catalog):
    row = entry(catalog)
    core = catalog.frameworks["megatron-core"]
    choices, notes = recipe_choices(row, run_choices(row.run), core, [recipe(dp_overlap=False)])
    assert choices.dp_overlap is False
    where = "from Megatron-Bridge 26.08 recipe qwen3_30b_a3b gb300 8 fp8_mx"
    assert f"DP overlap not stated: off ({where})" in notes
    stated = entry(catalog, ROW + "    dp_overlap: true\n")
    choices, _ = recipe_choices(stated, run_choices(stated.run), core, [recipe(dp_overlap=False)])
    assert choices.dp_overlap is True


def test_the_published_precision_text_names_the_fp8_recipe():
    assert recipe_precisions("fp8", "MXFP8 (table: MXFP8)") == ("fp8_mx",)
    assert recipe_precisions("fp8", "fp8 current scaling (table: FP8-CS)") == ("fp8_cs",)
    assert recipe_precisions("fp8", "fp8")[0] == "fp8_cs"
    assert recipe_precisions("bf16", "bf16") == ("bf16",)
    assert recipe_precisions(None, "NVFP4 (table: NVFP4)") == ("nvfp4",)
    assert recipe_precisions(None, "") == ()


def test_a_priced_row_says_which_recipe_its_settings_came_from(catalog):
    """The shipped recipes: a row of the 26.08 table stating only the published schema is
    priced with its recipe's whole-iteration graph and EP overlap, and says so."""
    assert any(r.release == "26.08" for r in load_perf_recipes())
    result = price_entry(entry(catalog), catalog)
    recipe_ = result.report.recipe
    assert (recipe_.ep_overlap, recipe_.cuda_graph, recipe_.fp8_recipe) == (
        True,
        "full_iteration",
        "mxfp8",
    )
    assert any(
        "from Megatron-Bridge 26.08 recipe qwen3_30b_a3b gb300 8 fp8_mx" in note
        for note in result.report.assumptions
    )


def test_every_shipped_recipe_names_its_file_at_a_commit():
    for item in load_perf_recipes():
        assert "/blob/" in item.source and item.source.endswith(".py"), item


def test_at_most_one_shipped_recipe_per_model_gpu_and_precision_runs_at_any_count():
    """And none of 25.09, whose run script skips its perf matrix at a count it does not
    list."""
    seen: set = set()
    for item in load_perf_recipes():
        if item.any_count:
            key = (item.release, item.model, item.gpu, item.precision)
            assert key not in seen, item
            seen.add(key)
            assert item.release != "25.09", item
    assert {key[0] for key in seen} >= {"25.11", "26.02", "26.06", "26.08"}


#: The hand-made row at TP 2 (4 replicas, EP 4): its recipe's ETP 1 differs from TP.
TP2_ROW = ROW.replace("    tp: 1\n", "    tp: 2\n").replace(
    "    dp: 8\n    ep: 8\n", "    dp: 4\n    ep: 4\n"
)


def test_an_unstated_expert_tp_is_the_recipes(catalog):
    row = entry(catalog, TP2_ROW)
    etp, notes = recipe_etp(row, [recipe(etp=1)])
    assert etp == 1
    assert notes == [
        "etp not stated: 1 (from Megatron-Bridge 26.08 recipe qwen3_30b_a3b gb300 8 fp8_mx)"
    ]
    # The recipe leaving it (Megatron-Core's ETP = TP): nothing taken, nothing said.
    assert recipe_etp(row, [recipe()]) == (None, [])


def test_a_stated_expert_tp_wins(catalog):
    row = entry(catalog, TP2_ROW + "    etp: 2\n")
    assert recipe_etp(row, [recipe(etp=1)]) == (None, [])
    # Priced with the shipped recipes (26.08's sets ETP 1): the row's own, then the recipe's.
    assert price_entry(row, catalog).report.layout.expert_tp == 2
    assert price_entry(entry(catalog, TP2_ROW), catalog).report.layout.expert_tp == 1


def test_an_expert_tp_the_layout_cannot_hold_is_not_taken_and_said(catalog):
    """etp x ep must divide tp x cp x dp, as a run file's etp: 2 x 8 does not divide 8."""
    row = entry(catalog)
    etp, notes = recipe_etp(row, [recipe(etp=2)])
    assert etp is None
    (note,) = notes
    assert note.startswith("etp not stated: the recipe's 2 (from Megatron-Bridge 26.08")
    assert "etp x ep = 16 must divide tp x cp x dp = 8" in note


def test_no_recipe_or_no_release_takes_no_expert_tp(catalog):
    row = entry(catalog, TP2_ROW)
    assert recipe_etp(row, [recipe(etp=1, gpu="gb200")]) == (None, [])
    plain = entry(catalog, TP2_ROW.replace("(26.08 NeMo container)", "").replace("'26.08 ", "'"))
    assert recipe_etp(plain, [recipe(etp=1)]) == (None, [])


DSV3 = "mbridge2509_dsv3_1024xh100_fp8cs"


def test_the_shipped_25_09_deepseek_v3_row_runs_its_configs_expert_tp(catalog):
    """The holdout's 1024-GPU H100 DeepSeek-V3 row (TP 2, EP 64) states the published
    schema only; its 25.09 perf-matrix entry sets etp 1, and the plan runs it."""
    holdout = Path(__file__).parents[2] / "benchmarks" / "data" / "training_holdout.yaml"
    (row,) = [e for e in read_run_file(holdout, catalog) if e.id == DSV3]
    assert (row.run.tp, row.run.ep, row.run.etp) == (2, 64, None)
    etp, notes = recipe_etp(row, load_perf_recipes())
    assert etp == 1
    assert notes == [
        "etp not stated: 1 (from Megatron-Bridge 25.09 recipe deepseek_v3 h100 1024 fp8_cs)"
    ]
    report = price_entry(row, catalog).report
    assert report.layout.expert_tp == 1
    assert notes[0] in report.assumptions
