"""A count above ``PLAN_COUNT_MAX`` is refused in one wording (``above_plan_count_max``),
whether a flag (``plan_count``) or a model shape's key (``hwdb.shapes``) states it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from fabricui.bounds import PLAN_COUNT_MAX, above_plan_count_max, plan_count
from fabricui.errors import ConfigError
from fabricui.hwdb.shapes import shape_problem
from fabricui.model import ModelShape

SHAPE = ModelShape(
    id="tiny",
    name="Tiny",
    params_B=0.1,
    layers=4,
    hidden=512,
    ffn_hidden=2048,
    heads=8,
    kv_heads=8,
    vocab=32000,
    seq_len=2048,
    source="test",
)


def test_the_words_above_the_bound_and_none_up_to_it() -> None:
    assert above_plan_count_max(PLAN_COUNT_MAX) is None
    assert above_plan_count_max(1) is None
    assert above_plan_count_max(PLAN_COUNT_MAX + 1) == "must be at most 2147483648 (got 2147483649)"


def test_a_flag_and_a_shape_say_the_same_words() -> None:
    huge = 10**12
    words = "must be at most 2147483648 (got 1000000000000)"
    with pytest.raises(ConfigError, match=rf"^--seq {re.escape(words)}$"):
        plan_count("--seq", huge)
    assert shape_problem(dataclasses.replace(SHAPE, seq_len=huge)) == ("seq_len", words)
    assert shape_problem(dataclasses.replace(SHAPE, seq_len=PLAN_COUNT_MAX)) is None
    assert plan_count("--seq", PLAN_COUNT_MAX) == PLAN_COUNT_MAX
