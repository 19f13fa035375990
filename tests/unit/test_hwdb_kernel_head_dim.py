"""A kernel record's head-dimension tables (``fwd_head_dim_scale``, ``bwd_head_dim_scale``):
read as whole-number head dims to factors, and each bad table is one error naming the file,
line and key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabricui.errors import HwdbError
from fabricui.hwdb import Catalog
from tests.unit._records import load_kernel


def load(tmp_path: Path, tables: str) -> Catalog:
    """The database with one fa3 hopper kernel record holding ``tables``."""
    return load_kernel(tmp_path, tables, "fa3", "hopper")


def test_tables_load_as_head_dims_to_factors(tmp_path):
    """Flow or block mappings of head dim to factor load as given; no table is empty."""
    catalog = load(
        tmp_path,
        "  fwd_head_dim_scale: {64: 0.7, 128: 1.0, 256: 1.05}\n"
        "  bwd_head_dim_scale:\n    64: 0.8\n    128: 1\n",
    )
    kernel = catalog.kernels["test-kernel"]
    assert kernel.fwd_head_dim_scale == {64: 0.7, 128: 1.0, 256: 1.05}
    assert kernel.bwd_head_dim_scale == {64: 0.8, 128: 1.0}
    plain = load(tmp_path, "").kernels["test-kernel"]
    assert plain.fwd_head_dim_scale == plain.bwd_head_dim_scale == {}


def test_the_shipped_tables_hold_128_at_one(catalog):
    """Every shipped kernel table lists head dim 128 at 1.0, and every kernel's note says
    how its head-dim figures were read, or that it has none."""
    for kernel in catalog.kernels.values():
        for table in (kernel.fwd_head_dim_scale, kernel.bwd_head_dim_scale):
            assert not table or table[128] == 1.0, kernel.id
        assert "Head dim" in kernel.note or "head dim" in kernel.note, kernel.id


@pytest.mark.parametrize(
    ("tables", "line", "message"),
    [
        (
            "  fwd_head_dim_scale: [64, 128]",
            7,
            r"fwd_head_dim_scale: expected a mapping of whole number: number",
        ),
        (
            "  fwd_head_dim_scale:\n    128: 1.0\n    wide: 0.9",
            9,
            r"fwd_head_dim_scale\.wide: expected a whole number as the key \(got 'wide'\)",
        ),
        (
            "  bwd_head_dim_scale:\n    128: 1.0\n    64: fast",
            9,
            r"bwd_head_dim_scale\.64: expected a number \(float\)",
        ),
        (
            "  fwd_head_dim_scale:\n    128: 1.0\n    64: 3.5",
            9,
            r"fwd_head_dim_scale\.64: head-dim factor must be between 0\.1 and 2",
        ),
        (
            "  fwd_head_dim_scale:\n    128: 1.0\n    4: 0.5",
            9,
            r"fwd_head_dim_scale\.4: head dim must be between 8 and 1024",
        ),
        (
            "  fwd_head_dim_scale: {64: 0.7, 256: 1.1}",
            7,
            r"fwd_head_dim_scale: must hold 128: 1\.0 .*got none",
        ),
        (
            "  bwd_head_dim_scale: {64: 0.7, 128: 0.9}",
            7,
            r"bwd_head_dim_scale: must hold 128: 1\.0 .*got 0\.9",
        ),
    ],
)
def test_a_bad_table_names_file_line_and_key(tmp_path, tables, line, message):
    """Each bad table is one line: ``kernels.yaml:<line>: kernels[0].<field>...: why``."""
    with pytest.raises(HwdbError) as caught:
        load(tmp_path, tables)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'kernels.yaml'}:{line}: kernels[0].")
    assert re.search(message, text), text
