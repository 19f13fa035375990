"""``tools/perf_recipes.py`` reads what a perf entry point builds, base model recipe first:
a tiny Megatron-Bridge-shaped repository, committed in a temporary git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools.perf_recipes import (
    Obj,
    argument_default,
    config_settings,
    flat_choice,
    flat_default_counts,
    flat_settings,
    mark_any_count,
    matrix_recipes,
    merge_settings,
    workload_choice,
    workload_load_order,
    workload_recipes,
    workload_settings,
)

FILES = {
    "src/megatron/bridge/training/comm_overlap.py": """
from dataclasses import dataclass
from typing import Optional


@dataclass
class CommOverlapConfig:
    tp_comm_overlap: bool
    overlap_grad_reduce: Optional[bool] = None
    overlap_moe_expert_parallel_comm: Optional[bool] = None
""",
    "src/megatron/bridge/models/provider.py": """
from dataclasses import dataclass
from typing import Optional

from megatron.core.transformer import TransformerConfig


@dataclass
class BaseProvider(TransformerConfig):
    moe_token_dispatcher_type: str = "alltoall"


@dataclass
class MoEProvider(BaseProvider):
    num_moe_experts: int = 64
    recompute_granularity: Optional[str] = None
""",
    "src/megatron/bridge/recipes/moe.py": """
from megatron.bridge.models.provider import MoEProvider
from megatron.bridge.training.comm_overlap import CommOverlapConfig
from megatron.bridge.training.config import ConfigContainer, DistributedDataParallelConfig


def _common(enable_deepep: bool = False, comm_overlap_config=None, **kwargs):
    model = MoEProvider(recompute_granularity="selective")
    model.recompute_modules = ["mla_up_proj"]
    model.expert_tensor_parallel_size = 1
    if enable_deepep:
        model.moe_token_dispatcher_type = "flex"
    cfg = ConfigContainer(
        model=model,
        ddp=DistributedDataParallelConfig(overlap_grad_reduce=True),
        comm_overlap=comm_overlap_config,
    )
    if cfg.comm_overlap is None:
        cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)
    return cfg


def moe_pretrain_config(**user_kwargs):
    recommended = {"enable_deepep": False}
    return _common(**{**recommended, **user_kwargs})
""",
    "scripts/performance/utils/utils.py": """
from dataclasses import dataclass
from typing import Optional


@dataclass
class WorkloadBaseConfig:
    num_gpus: int = 1
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    global_batch_size: int = 1
    moe_a2a_overlap: Optional[bool] = False
    moe_flex_dispatcher_backend: Optional[str] = None
    cuda_graph_impl: Optional[str] = None
    cuda_graph_scope: Optional[str] = None
    recompute_modules: Optional[list] = None
    expert_tensor_parallel_size: Optional[int] = None


def get_workload_base_config(**kwargs):
    return None
""",
    "scripts/performance/utils/overrides.py": """
def set_workload_base_configs(cfg, settings):
    cfg.model.expert_model_parallel_size = settings.expert_model_parallel_size
    cfg.model.expert_tensor_parallel_size = settings.expert_tensor_parallel_size
    if settings.moe_a2a_overlap:
        cfg.comm_overlap.overlap_moe_expert_parallel_comm = True
    if settings.cuda_graph_impl is not None:
        cfg.model.cuda_graph_impl = settings.cuda_graph_impl
    return cfg
""",
    "scripts/performance/configs/moe/moe_workload_base_configs.py": """
from utils.utils import WorkloadBaseConfig

MOE_16B_PRETRAIN_CONFIG_H100_BF16 = WorkloadBaseConfig(
    num_gpus=16,
    pipeline_model_parallel_size=2,
    expert_model_parallel_size=8,
    global_batch_size=512,
    moe_a2a_overlap=True,
)
""",
    "scripts/performance/configs/moe/moe_llm_pretrain.py": """
import torch
from utils.overrides import set_workload_base_configs
from utils.utils import get_workload_base_config

from megatron.bridge.recipes.moe import moe_pretrain_config


def _flex_on_hopper(cfg):
    if not torch.cuda.get_device_properties(0).major in [9]:
        return
    cfg.model.moe_token_dispatcher_type = "flex"


def moe_16b_pretrain_config_h100(precision="bf16", mock=True, config_variant="v1"):
    base_cfg = get_workload_base_config(model_recipe_name="moe_16b", gpu="h100")
    cfg = moe_pretrain_config()
    set_workload_base_configs(cfg, base_cfg)
    cfg.comm_overlap.overlap_grad_reduce = False
    _flex_on_hopper(cfg)
    return cfg
""",
    "scripts/performance/run_script.py": """
from argument_parser import parse_cli_args
from omegaconf import OmegaConf
from utils.helpers import apply_perf_matrix_overrides

from megatron.bridge.recipes.moe import moe_pretrain_config
from megatron.bridge.training.pretrain import pretrain
from megatron.bridge.training.utils.omegaconf_utils import apply_overrides


def main():
    args, cli_overrides = parse_cli_args()
    if args.model_name == "moe" and args.model_size == "16b":
        recipe = moe_pretrain_config(enable_deepep=bool(args.gpu.lower() in ["h100"]))
        if args.gpu.lower() in ["h100"]:
            recipe.comm_overlap.overlap_moe_expert_parallel_comm = True
    else:
        raise ValueError("unknown model")
    yaml_root = OmegaConf.load(args.config_file)
    apply_overrides(recipe, OmegaConf.to_container(yaml_root["ConfigContainer"]), {})
    apply_perf_matrix_overrides(yaml_root, recipe, args, {})
    pretrain(config=recipe)
""",
    "scripts/performance/utils/helpers.py": """
from omegaconf import OmegaConf


def apply_perf_matrix_overrides(yaml_root, recipe, args, excluded_fields):
    preset = yaml_root.get("perf_matrix")[args.gpu][f"num_gpus_{args.num_gpus}"]
    dtype = args.compute_dtype if args.compute_dtype == "bf16" else f"fp8_{args.fp8_recipe}"
    merged = OmegaConf.merge(preset.get("common") or {}, preset.get(dtype) or {})
    recipe.model.enable_cuda_graph = merged.get("cuda_graphs", False)
    recipe.model.expert_tensor_parallel_size = merged.get("etp", None)
""",
    "scripts/performance/configs/moe/moe_16b_llm_pretrain.yaml": """
ConfigContainer:
  model:
    recompute_modules: [mla_up_proj, mlp]
perf_matrix:
  h100:
    num_gpus_16:
      common: {gbs: 512, tp: 1, pp: 2, ep: 8, etp: 1, cuda_graphs: false}
      bf16:
      fp8_cs: {cuda_graphs: true}
      fp8_ss:
  b200:
    num_gpus_8:
      common: {gbs: 256, tp: 1, pp: 1, ep: 8}
      bf16:
""",
}


def committed(root: Path, files: dict[str, str]) -> Path:
    """``files`` written under ``root`` and committed there."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text.lstrip())
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "recipes"], check=True)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files above, committed."""
    return committed(tmp_path_factory.mktemp("bridge"), FILES)


def settings(entry: dict) -> dict:
    keep = ("tp_overlap", "dp_overlap", "ep_overlap", "cuda_graph", "moe_dispatch")
    return {k: entry[k] for k in (*keep, "recompute_modules") if k in entry}


def test_a_workload_config_takes_what_its_base_recipe_and_script_set(repo: Path):
    """The base recipe's fallback CommOverlapConfig (TP overlap off) and its recompute
    modules, the script's gradient-reduce overlap set after the workload config, the
    workload's all-to-all overlap; the device-checked dispatcher is not known, so the
    workload's own reading (no backend: all-to-all) stays."""
    (entry,) = workload_recipes(repo, "26.02", "HEAD")
    assert entry["recipe"] == "MOE_16B_PRETRAIN_CONFIG_H100_BF16"
    assert (entry["gpus"], entry["pp"], entry["ep"], entry["global_batch"]) == (16, 2, 8, 512)
    assert settings(entry) == {
        "tp_overlap": False,
        "dp_overlap": False,
        "ep_overlap": True,
        "moe_dispatch": "alltoall",
        "recompute_modules": ["mla_up_proj"],
    }
    assert entry["source"].endswith("/scripts/performance/configs/moe/moe_workload_base_configs.py")


def test_a_yaml_perf_matrix_entry_takes_the_run_script_then_the_yaml(repo: Path):
    """25.09's shape: run_script.py's branch for the model and GPU (DeepEP and all-to-all
    overlap on H100 only), the YAML's ConfigContainer, then the matrix entry's CUDA graphs;
    a precision outside the recipes' (fp8_ss) is left out."""
    found = {(e["gpu"], e["precision"]): e for e in matrix_recipes(repo, "25.09", "HEAD")}
    assert set(found) == {("h100", "bf16"), ("h100", "fp8_cs"), ("b200", "bf16")}
    h100 = found["h100", "bf16"]
    assert (h100["model"], h100["gpus"], h100["pp"], h100["ep"]) == ("moe_16b", 16, 2, 8)
    assert settings(h100) == {
        "tp_overlap": False,
        "dp_overlap": True,
        "ep_overlap": True,
        "cuda_graph": "none",
        "moe_dispatch": "deepep",
        "recompute_modules": ["mla_up_proj", "mlp"],
    }
    assert found["h100", "fp8_cs"]["cuda_graph"] == "partial"
    assert found["h100", "fp8_cs"]["fp8_recipe"] == "current"
    b200 = found["b200", "bf16"]
    assert b200["moe_dispatch"] == "alltoall"
    assert "ep_overlap" not in b200
    assert h100["source"].endswith("/scripts/performance/run_script.py")
    assert h100["recipe"] == "moe_16b_llm_pretrain.yaml perf_matrix.h100.num_gpus_16.bf16"


def test_the_expert_tensor_parallel_size_is_read_where_the_script_sets_it(repo: Path):
    """The script sets the workload config's ETP over the base recipe's: a config leaving
    it None runs Megatron-Core's default (ETP = TP), so none is written; 25.09's matrix
    entry sets its own (``etp``)."""
    (entry,) = workload_recipes(repo, "26.02", "HEAD")
    assert "etp" not in entry
    found = {(e["gpu"], e["precision"]): e for e in matrix_recipes(repo, "25.09", "HEAD")}
    assert found["h100", "bf16"]["etp"] == 1
    assert "etp" not in found["b200", "bf16"]
    assert workload_settings({"expert_tensor_parallel_size": 1})["etp"] == 1
    for unset in (None, True, 0):
        assert "etp" not in workload_settings({"expert_tensor_parallel_size": unset})
    built = Obj(model=Obj(expert_tensor_parallel_size=2))
    assert config_settings(built)["etp"] == 2
    assert "etp" not in config_settings(Obj(model=Obj(expert_tensor_parallel_size=None)))
    assert flat_settings({"model.expert_tensor_parallel_size": 1})["etp"] == 1


def test_the_entry_point_wins_but_a_cleared_whole_iteration_scope_stays():
    recipe = {"cuda_graph": "full_iteration", "ep_overlap": False, "moe_dispatch": "deepep"}
    entry = {"cuda_graph": "none", "ep_overlap": True, "moe_dispatch": "alltoall"}
    assert merge_settings(recipe, entry) == {
        "cuda_graph": "full_iteration",
        "ep_overlap": True,
        "moe_dispatch": "alltoall",
    }
    assert merge_settings({"cuda_graph": "partial"}, {"cuda_graph": "none"}) == {
        "cuda_graph": "none"
    }


# --- the recipe a perf script runs at a GPU count no recipe names ----------------------------

SCALING = """
def set_post_overrides(recipe, num_gpus, workload_base_config, user_gbs=None):
    if user_gbs is None and num_gpus != workload_base_config.num_gpus:
        recipe.train.global_batch_size = int(workload_base_config.gbs_scaling_factor * num_gpus)
    return recipe
"""
PARSER = """
def parse_cli_args(parser):
    parser.add_argument("-ng", "--num_gpus", type=int, required=True)
    parser.add_argument("-cv", "--config_variant", type=str, default="v2")
"""


@pytest.mark.parametrize(
    ("files", "order"),
    [
        # 25.11: the one _BASE_CONFIG, whatever the count
        (
            {
                "utils/overrides.py": SCALING,
                "utils/utils.py": 'name = name.upper() + "_BASE_CONFIG"\n',
            },
            ("_BASE_CONFIG",),
        ),
        # 26.02 to 26.06: --config_variant's default v2, then v1, then no version
        (
            {"utils/overrides.py": SCALING, "utils/utils.py": "", "argument_parser.py": PARSER},
            ("_V2", "_V1", ""),
        ),
        (
            {
                "utils/overrides.py": SCALING,
                "utils/utils.py": "",
                "argument_parser.py": PARSER.replace('"v2"', '"v1"'),
            },
            ("_V1", ""),
        ),
        # A script that does not scale the batch to the count: nothing
        ({"utils/overrides.py": "def set_post_overrides(recipe):\n    return recipe\n"}, ()),
        ({}, ()),
    ],
)
def test_the_configs_a_workload_script_loads_at_any_count(tmp_path: Path, files, order):
    root = committed(
        tmp_path, {f"scripts/performance/{k}": v for k, v in files.items()} or {"x": ""}
    )
    assert workload_load_order(root, "HEAD") == order


def test_an_arguments_default_is_read_from_the_parser():
    assert argument_default(PARSER, "--config_variant") == "v2"
    assert argument_default(PARSER, "--num_gpus") is None
    assert argument_default(PARSER, "--nothing") is None


def config(name: str, gpus: int, **more: object) -> dict:
    model, rest = name.split("_PRETRAIN_CONFIG_")
    gpu, prec = rest.split("_", 1)
    prec = prec.removesuffix("_BASE_CONFIG").removesuffix("_V1").removesuffix("_V2")
    return {
        "recipe": name,
        "model": model.lower(),
        "gpu": gpu.lower(),
        "gpus": gpus,
        "precision": prec.lower(),
        **more,
    }


def marked(entries: list[dict]) -> list[str]:
    return [e["recipe"] for e in entries if e.get("any_count")]


def test_the_script_default_variant_is_marked_once_per_model_gpu_and_precision():
    entries = [
        config("Q_PRETRAIN_CONFIG_GB200_BF16_V1", 64, variant="v1"),
        config("Q_PRETRAIN_CONFIG_GB200_BF16_V2", 256, variant="v2"),
        config("Q_PRETRAIN_CONFIG_GB200_FP8_MX_V1", 64, variant="v1"),
        config("Q_PRETRAIN_CONFIG_B200_BF16", 8),
    ]
    out = mark_any_count(entries, workload_choice(("_V2", "_V1", "")))
    assert marked(out) == [
        "Q_PRETRAIN_CONFIG_GB200_BF16_V2",
        "Q_PRETRAIN_CONFIG_GB200_FP8_MX_V1",
        "Q_PRETRAIN_CONFIG_B200_BF16",
    ]
    # The key sits beside the GPU count; nothing else changes.
    assert list(out[1])[:5] == ["recipe", "model", "gpu", "gpus", "any_count"]
    assert [{k: v for k, v in e.items() if k != "any_count"} for e in out] == entries
    assert marked(mark_any_count(entries, workload_choice(()))) == []
    base = [config("Q_PRETRAIN_CONFIG_GB200_BF16_BASE_CONFIG", 64)]
    assert marked(mark_any_count(base, workload_choice(("_BASE_CONFIG",)))) == [base[0]["recipe"]]


FLAT_UTILS = """
_DEFAULT_GPU_COUNT_OVERRIDES = {
    ("llama3_8b", "pretrain", "b200", "fp8cs", None): 8,
    ("llama3_8b", "pretrain", "gb200", "bf16", None): 16,
}


def _select_default_recipe_name(matches):
    return matches[-1][1]
"""


def flat(model: str, gpus: int, gpu: str, precision: str, variant: str = "") -> dict:
    name = f"{model}_pretrain_{gpus}gpu_{gpu}_{precision.replace('_', '')}"
    return {
        "recipe": f"{name}{'_' + variant if variant else ''}_config",
        "model": model,
        "gpu": gpu,
        "gpus": gpus,
        "precision": precision,
        **({"variant": variant} if variant else {}),
    }


def test_the_flat_default_is_the_overrides_count_else_the_largest(tmp_path: Path):
    root = committed(
        tmp_path,
        {
            "scripts/performance/utils/utils.py": FLAT_UTILS,
            "scripts/performance/run_script.py": "from utils.utils import PerfRecipeNotFoundError",
        },
    )
    overrides = flat_default_counts(root, "HEAD")
    assert overrides == {
        ("llama3_8b", "pretrain", "b200", "fp8cs", None): 8,
        ("llama3_8b", "pretrain", "gb200", "bf16", None): 16,
    }
    entries = [
        flat("llama3_8b", 8, "b200", "fp8_cs"),
        flat("llama3_8b", 64, "b200", "fp8_cs"),
        flat("llama3_8b", 8, "h100", "bf16"),
        flat("llama3_8b", 64, "h100", "bf16"),
        flat("llama3_8b", 128, "h100", "bf16", "large_scale"),
        # The override names a count no recipe has: the script refuses, nothing is marked.
        flat("llama3_8b", 8, "gb200", "bf16"),
    ]
    assert marked(mark_any_count(entries, flat_choice(overrides))) == [
        "llama3_8b_pretrain_8gpu_b200_fp8cs_config",
        "llama3_8b_pretrain_64gpu_h100_bf16_config",
    ]
    assert marked(mark_any_count(entries, flat_choice(None))) == []


def test_a_script_without_a_default_flat_recipe_marks_nothing(tmp_path: Path):
    root = committed(tmp_path, {"scripts/performance/run_script.py": "def main():\n    pass\n"})
    assert flat_default_counts(root, "HEAD") is None
