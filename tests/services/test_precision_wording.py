"""A run entry's own ``precision`` and ``parallel`` wording, read where its run block is
silent: torch.compile, the FP8 recipe and async TP (a published row states them in words,
its run block only the published keys)."""

from __future__ import annotations

import pytest

from fabricui.services.plan_runs import price_entry
from fabricui.services.precision_wording import (
    settings_from_wording,
    stated_async_tp,
    stated_compile,
    stated_fp8_recipe,
)
from tests.services._entries import llama3_8b_entry
from tests.services._entries import read_entry as read


@pytest.mark.parametrize(
    ("text", "on"),
    [
        ("bf16, torch.compile", True),
        ("float8 rowwise (torchao), torch.compile", True),
        ("bf16 (torch_compile: true)", True),
        ("compile: True", True),
        ("bf16, no compile", False),
        ("bf16, without torch.compile", False),
        ("bf16, no torch.compile", False),
        ("bf16, torch.compile off", False),
        ("compile: false", False),
    ],
)
def test_compile_phrasings(text, on):
    """Each phrasing of torch.compile on or off."""
    assert stated_compile(text) is on


@pytest.mark.parametrize(
    "text",
    [
        "bf16",
        "amp_bf16 (Composer AMP, FSDP mixed_precision DEFAULT)",
        "figures compiled from the table",  # not torch.compile
        "torch.compile in the 405B config, no compile in the 8B one",  # both
        "",
    ],
)
def test_no_compile_setting_from_silent_unrelated_or_contradicting_wording(text):
    assert stated_compile(text) is None


@pytest.mark.parametrize(
    ("text", "recipe"),
    [
        ("float8 rowwise (torchao), torch.compile", "rowwise"),
        ("float8 row-wise", "rowwise"),
        ("float8 tensorwise (torchao), torch.compile", "current"),
        (
            "float8 (torchao Float8Linear, dynamic tensorwise scaling at @9dec370), torch.compile",
            "current",
        ),
        (
            "float8 (torchao Float8Linear via --model.converters float8, recipe not set = "
            "tensorwise; enable_fsdp_float8_all_gather)",
            "current",
        ),
        ("fp8 current scaling (table: FP8-CS)", "current"),
        (
            "amp_fp8: TransformerEngine FP8 (TE default recipe = delayed scaling, not stated "
            "in the README)",
            "delayed",
        ),
    ],
)
def test_fp8_recipe_phrasings(text, recipe):
    """torchao's tensorwise scaling is the engine's ``current`` (``FP8_RECIPES``)."""
    assert stated_fp8_recipe(text) == recipe


@pytest.mark.parametrize(
    "text",
    [
        "fp8 (table heading: 'pre-training performance ... at FP8 precision'; recipe not stated)",
        "MXFP8 (table: MXFP8; block-scaled FP8, recipe fp8_mx)",  # the performance recipes'
        "fp8 (its footnote says the parenthesized values use 32x32 MXFP8 on GB200, 128x128 "
        "block-wise on H100, so the main value is per-tensor FP8; fp8_cs, current scaling)",
        "float8 rowwise, tensorwise on the output layer",  # two recipes
        "float8, not rowwise",  # negated
        "fp8 with delayed wgrad compute",  # unrelated delay
        "bf16",
    ],
)
def test_no_fp8_recipe_from_silent_negated_unrelated_or_two_recipes(text):
    assert stated_fp8_recipe(text) is None


@pytest.mark.parametrize(
    ("text", "on"),
    [
        ("tp: 8; sp: TP uses torchtitan's sequence-parallel plan; async_tp: True", True),
        ("tp: 8; async_tp: False", False),
        ("TP 8 with async TP", True),
        ("TP 8 (AsyncTP)", True),
        ("--parallelism.enable_async_tensor_parallel", True),
        ("enable_async_tensor_parallel = false", False),
        ("TP 8, vanilla TP", False),
        ("TP 8, async TP off", False),
        ("TP 8, no async TP", False),
        ("sp: not stated (--tp-comm-overlap, stated, requires sequence parallelism)", True),
    ],
)
def test_async_tp_phrasings(text, on):
    """Each phrasing of async TP (or Megatron's TP comm overlap) on or off."""
    assert stated_async_tp(text) is on


@pytest.mark.parametrize(
    "text",
    [
        "tp: 8; pp: 1; sp: TP uses torchtitan's sequence-parallel plan",
        "asynchronous checkpointing",  # not TP
        "async TP on the 70B rows, vanilla TP on the 8B ones",  # both
        "",
    ],
)
def test_no_async_tp_from_silent_unrelated_or_contradicting_wording(text):
    assert stated_async_tp(text) is None


def entry_yaml(run: dict, precision: str | None = None, parallel: object = None) -> dict:
    """A torchtitan entry (Llama 3 8B, TP 8 in FP8 on 8 H100s) with ``run`` changes and wording."""
    base = {"tp": 8, "dp": 1, "global_batch": 8, "micro_batch": 1, "precision": "fp8"}
    return llama3_8b_entry(
        {**base, **run},
        source={"paper": "torchtitan performance benchmarks (PyTorch team)"},
        precision=precision,
        parallel=parallel,
    )


WORDING = {
    "precision": "float8 rowwise (torchao), torch.compile",
    "parallel": {"tp": 8, "sp": "TP uses torchtitan's sequence-parallel plan", "async_tp": True},
}


def test_the_entry_keeps_its_parallel_wording_with_its_keys(tmp_path, catalog):
    """``parallel_text``: each key of the ``parallel`` block with its value."""
    entry = read(tmp_path, catalog, entry_yaml({}, **WORDING))
    assert "async_tp: True" in entry.parallel_text and "tp: 8" in entry.parallel_text
    assert read(tmp_path, catalog, entry_yaml({}, parallel="TP 8, AsyncTP")).parallel_text == (
        "TP 8, AsyncTP"
    )
    assert read(tmp_path, catalog, entry_yaml({})).parallel_text == ""


def test_the_wording_fills_what_the_run_block_leaves_unstated(tmp_path, catalog):
    entry = read(tmp_path, catalog, entry_yaml({}, **WORDING))
    taken, notes = settings_from_wording(entry)
    run = taken.run
    assert (run.compile, run.fp8_recipe, run.tp_overlap) == (True, "rowwise", True)
    assert notes == [
        "compile: on, from the entry's precision wording (\"float8 rowwise (torchao), "
        'torch.compile")',
        "fp8_recipe: rowwise, from the entry's precision wording (\"float8 rowwise (torchao), "
        'torch.compile")',
        "tp_overlap: on, from the entry's parallel wording (\"tp: 8; sp: TP uses torchtitan's "
        'sequence-parallel plan; async_tp: True")',
    ]


def test_stated_run_keys_win(tmp_path, catalog):
    """Each key the run block states is kept, and no note is added for it."""
    stated = {"compile": False, "fp8_recipe": "delayed", "tp_overlap": False}
    entry = read(tmp_path, catalog, entry_yaml(stated, **WORDING))
    assert settings_from_wording(entry) == (entry, [])


def test_settings_that_do_not_apply_are_not_taken(tmp_path, catalog):
    """No FP8 recipe for a BF16 run, no TP overlap without TP."""
    data = entry_yaml({"precision": "bf16", "tp": 1, "dp": 8}, **WORDING)
    taken, notes = settings_from_wording(read(tmp_path, catalog, data))
    assert (taken.run.compile, taken.run.fp8_recipe, taken.run.tp_overlap) == (True, None, None)
    assert len(notes) == 1


def test_a_priced_entry_takes_the_wording(tmp_path, catalog):
    """End to end: the entry's wording prices compiled, rowwise, async TP passes (as the
    same settings stated in the run block do), the plan says so, and the result keeps the
    entry as read."""
    entry = read(tmp_path, catalog, entry_yaml({}, **WORDING))
    plain = price_entry(read(tmp_path, catalog, entry_yaml({})), catalog)
    priced = price_entry(entry, catalog)
    stated = price_entry(
        read(
            tmp_path,
            catalog,
            entry_yaml({"compile": True, "fp8_recipe": "rowwise", "tp_overlap": True}),
        ),
        catalog,
    )
    assert priced.entry == entry and priced.entry.run.compile is None
    assert priced.report.step_us == pytest.approx(stated.report.step_us)
    assert priced.report.step_us != pytest.approx(plain.report.step_us)
    notes = priced.report.assumptions
    assert sum("wording" in note for note in notes) == 3
    assert not any("wording" in note for note in plain.report.assumptions)
