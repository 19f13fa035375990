"""A run entry's own ``hardware`` wording, read where its run block is silent: the power
limit the GPUs ran at and the GPU variant (torchtitan's H100 rows ran on 96 GB HBM2e hosts
at 500 W; their run blocks can only say ``h100-sxm``)."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.services.hardware_wording import (
    gpu_variant,
    hardware_from_wording,
    named_memory,
    stated_power_cap_W,
)
from fabricui.services.plan_runs import price_entry
from tests.services._entries import llama3_8b_entry
from tests.services._entries import read_entry as read

#: The shared data's wording of torchtitan's H100 hosts.
TORCHTITAN = {
    "gpu": "H100 (96GB HBM2e, 500 W power limit)",
    "gpus": 8,
    "interconnect": "8 H100 per host on NVLink; these H100s have 96 GB HBM2e (2.4 TB/s) "
    "and ran at the default 500 W power limit (stated)",
}


@pytest.mark.parametrize(
    "text",
    [
        "H100 (96GB HBM2e, 500 W power limit)",
        "ran at the default 500 W power limit",
        "a power limit of 500 W",
        "H100s capped: 500W power cap",
        "power cap: 500 watts",
    ],
)
def test_a_limit_next_to_its_watts_is_the_cap(text):
    """Each phrasing of a limit the run ran at gives the cap."""
    assert stated_power_cap_W(text) == 500.0


@pytest.mark.parametrize(
    "text",
    [
        "H100-SXM5-80GB (DGX-H100, 8 GPUs per node)",
        "H100 SXM (700 W TDP)",
        "the board's maximum power limit of 700 W",
        "rated 700 W power limit",
        "power limit (not stated), 700 W board",  # watts not next to the words
        "500 W power limit on some hosts, 450 W power limit on others",  # two limits
        "",
    ],
)
def test_wording_without_a_run_limit_gives_no_cap(text):
    """No limit, a TDP or a datasheet maximum, watts away from the words, or two different
    limits: no cap."""
    assert stated_power_cap_W(text) is None


def test_memory_named_once_each():
    """Sizes and types as written, each once; a size without its type is not memory."""
    text = "H100 (96GB HBM2e) ... these H100s have 96 GB HBM2e; H100-SXM5-80GB"
    assert named_memory(text) == [(96.0, "HBM2e")]


def test_the_one_variant_of_the_same_compute(catalog):
    """96GB HBM2e on an h100-sxm run: the HBM2e record of the same GH100 compute."""
    assert gpu_variant(catalog, "h100-sxm", TORCHTITAN["gpu"]) == (
        "h100-sxm-hbm2e",
        "96GB HBM2e",
    )


def test_no_variant_when_the_gpu_already_has_the_memory(catalog):
    """A run block GPU that already matches wins; a wording without a memory type, or one
    no record of the same compute has, changes nothing."""
    assert gpu_variant(catalog, "h100-sxm-hbm2e", TORCHTITAN["gpu"]) is None
    assert gpu_variant(catalog, "a100-sxm4-80gb", "A100 SXM4 80GB HBM2e") is None
    assert gpu_variant(catalog, "h100-sxm", "H100-SXM5-80GB (DGX-H100)") is None
    assert gpu_variant(catalog, "h100-sxm", "H100 (64GB HBM2e)") is None
    # 96GB HBM3 is the GH200's, whose name says so; not an HBM2e record
    assert gpu_variant(catalog, "h100-sxm", "96GB HBM3")[0] == "gh200"


def test_no_variant_when_several_records_match(catalog):
    """Two records of the same compute with the memory named: none is chosen."""
    twin = dataclasses.replace(catalog.gpus["h100-sxm-hbm2e"], id="h100-sxm-hbm2e-twin")
    gpus = {**catalog.gpus, twin.id: twin}
    assert gpu_variant(dataclasses.replace(catalog, gpus=gpus), "h100-sxm", "96GB HBM2e") is None


def test_no_variant_of_another_compute(catalog):
    """A record with the memory named but another BF16 peak is not a variant."""
    slower = dataclasses.replace(catalog.gpus["h100-sxm-hbm2e"], bf16_dense_TFLOPS=900.0)
    gpus = {**catalog.gpus, "h100-sxm-hbm2e": slower}
    assert gpu_variant(dataclasses.replace(catalog, gpus=gpus), "h100-sxm", "96GB HBM2e") is None


def entry_yaml(run: dict, hardware: dict | None = TORCHTITAN) -> dict:
    """torchtitan's Llama 3 8B FSDP row on 8 GPUs with ``run`` changes and its hardware wording."""
    base = {"dp_strategy": "zero3", "step_time_s": 2.843}
    return llama3_8b_entry({**base, **run}, hardware=hardware)


def test_the_entry_keeps_its_hardware_wording(tmp_path, catalog):
    """``hardware_text``: the words of the ``hardware`` block."""
    entry = read(tmp_path, catalog, entry_yaml({}))
    assert "500 W power limit" in entry.hardware_text and "96GB HBM2e" in entry.hardware_text
    assert read(tmp_path, catalog, entry_yaml({}, hardware=None)).hardware_text == ""


def test_a_stated_power_cap_and_gpu_win(tmp_path, catalog):
    """A stated ``power_W`` and a run block GPU that already matches are kept, no note."""
    stated = entry_yaml({"power_W": 600})
    stated["run"]["topology"]["gpu"] = "h100-sxm-hbm2e"
    entry = read(tmp_path, catalog, stated)
    assert hardware_from_wording(entry, catalog) == (entry, [])


def test_a_priced_entry_takes_the_wording(tmp_path, catalog):
    """End to end: the entry is priced on the 96 GB HBM2e part capped at 500 W (slower than
    as the run block alone says), its fabric built on that part, and the plan says both;
    the result keeps the entry as read."""
    entry = read(tmp_path, catalog, entry_yaml({}))
    plain = price_entry(read(tmp_path, catalog, entry_yaml({}, hardware=None)), catalog)
    priced = price_entry(entry, catalog)
    assert priced.entry == entry and priced.entry.run.power_W is None
    assert priced.fabric.gpu.id == "h100-sxm-hbm2e" and priced.fabric.gpu.memory_GB == 96.0
    assert priced.fabric.spec.gpu == "h100-sxm-hbm2e"
    assert plain.fabric.gpu.id == "h100-sxm"
    notes = priced.report.assumptions
    assert "power cap 500 W from the entry's hardware wording" in notes
    assert "GPU h100-sxm-hbm2e from the entry's hardware wording (96GB HBM2e)" in notes
    assert not any("hardware wording" in note for note in plain.report.assumptions)
    assert priced.report.step_us > plain.report.step_us * 1.05
    capped = price_entry(read(tmp_path, catalog, entry_yaml({"power_W": 700})), catalog)
    assert "power cap 500 W from the entry's hardware wording" not in capped.report.assumptions
    assert capped.report.step_us < priced.report.step_us
