"""The performance recipes file: a bad entry is one line naming the file, line and field."""

from __future__ import annotations

import pytest

from fabricui.errors import HwdbError
from fabricui.hwdb.perf_recipes import parse_perf_recipes
from fabricui.hwdb.yamlfile import parse_yaml

GOOD = """\
perf_recipes:
- release: '26.08'
  recipe: qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config
  model: qwen3_30b_a3b
  gpu: gb300
  gpus: 8
  precision: fp8_mx
  cuda_graph: full_iteration
  recompute_modules: [moe_act]
  source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/4ab94dfad/x.py
"""


def parse(text: str):
    return parse_perf_recipes(parse_yaml(text, "recipes.yaml"))


def test_a_good_entry_reads():
    (recipe,) = parse(GOOD)
    assert recipe.label == "qwen3_30b_a3b gb300 8 fp8_mx"
    assert recipe.recompute_modules == ("moe_act",)
    assert recipe.ep_overlap is None
    assert recipe.any_count is False
    assert recipe.etp is None


def test_an_expert_tensor_parallel_size_reads():
    (recipe,) = parse(GOOD.replace("  gpus: 8\n", "  gpus: 8\n  etp: 1\n"))
    assert recipe.etp == 1


def test_the_recipe_a_script_runs_at_any_count_reads():
    (recipe,) = parse(GOOD.replace("  gpus: 8\n", "  gpus: 8\n  any_count: true\n"))
    assert recipe.any_count is True


@pytest.mark.parametrize(
    ("old", "new", "line", "words"),
    [
        ("  cuda_graph: full_iteration", "  cuda_graph: sometimes", 8, "cuda_graph"),
        ("  precision: fp8_mx", "  precision: fp9", 7, "precision"),
        ("  gpus: 8", "  gpus: eight", 6, "gpus"),
        ("  gpus: 8", "  gpus: 8\n  any_count: maybe", 7, "any_count"),
        ("  gpus: 8", "  gpus: 8\n  speed: 3", 7, "speed"),
        ("  gpus: 8", "  gpus: 8\n  etp: 0", 7, "etp"),
        ("  gpus: 8", "  gpus: 8\n  etp: one", 7, "etp"),
        ("release: '26.08'", "release: soon", 2, "release"),
        ("  model: qwen3_30b_a3b", "  model: Qwen3 30B", 4, "model"),
    ],
)
def test_a_bad_entry_is_one_line_naming_file_line_and_field(old, new, line, words):
    with pytest.raises(HwdbError) as caught:
        parse(GOOD.replace(old, new))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"recipes.yaml:{line}:")
    assert words in message


def test_another_top_level_key_is_refused():
    with pytest.raises(HwdbError, match=r"recipes.yaml:1: expected one key, perf_recipes"):
        parse("recipes:\n- {}\n")
