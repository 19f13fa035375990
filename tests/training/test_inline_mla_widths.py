"""An inline model shape as published tables print DeepSeek-V3 (hidden size and heads, not
MLA's per-head widths) takes ``qk_head_dim`` and ``v_head_dim`` from the one hwdb model of
its geometry; a shape that states them, or ``head_dim``, keeps its own."""

from __future__ import annotations

import pytest
import yaml

from fabricui.hwdb.run_file import read_run_file

#: DeepSeek-V3 as the Automodel and Megatron-Bridge tables print it.
DSV3 = {
    "name": "DeepSeek-V3 671B (37B active)",
    "layers": 61,
    "hidden": 7168,
    "heads": 128,
    "kv_heads": 128,
    "ffn_hidden": 2048,
    "mlp": "swiglu",
    "experts": 256,
    "experts_per_token": 8,
    "moe_layers": 58,
    "shared_experts": 1,
    "dense_ffn_hidden": 18432,
    "seq_len": 4096,
    "vocab": 129280,
}


def run_file(tmp_path, model: dict):
    path = tmp_path / "run.yaml"
    entry = {
        "id": "dsv3",
        "model": model,
        "run": {"topology": "dgx-h100", "tp": 1, "pp": 1, "dp": 8, "ep": 8, "global_batch": 8},
    }
    path.write_text(yaml.safe_dump(entry, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, (192, 128)),  # deepseek-v3 in hwdb: qk_nope 128 + rope 64, v 128
        ({"qk_head_dim": 96, "v_head_dim": 64}, (96, 64)),
        ({"head_dim": 56}, (None, None)),
        ({"layers": 60}, (None, None)),  # no hwdb model of that geometry
    ],
)
def test_inline_shape_takes_mla_widths_of_its_geometry(tmp_path, catalog, changes, expected):
    model = read_run_file(run_file(tmp_path, {**DSV3, **changes}), catalog)[0].model
    assert (model.qk_head_dim, model.v_head_dim) == expected


def test_catalog_model_has_the_widths_the_inline_shape_takes(catalog):
    """The widths come from the record, not from the test: hwdb's deepseek-v3 states 192/128."""
    record = catalog.models["deepseek-v3"]
    assert (record.qk_head_dim, record.v_head_dim) == (192, 128)
