"""Regenerate ``hwdb/recipes/megatron-bridge.yaml``: the settings NVIDIA's Megatron-Bridge
performance recipes set, per release of the performance summary.

Usage: python tools/perf_recipes.py [--repo DIR] [--out FILE]

``--repo`` is a clone (or bare mirror) of NVIDIA-NeMo/Megatron-Bridge; nothing is run from
it. The recipes are read statically (Python's ``ast``) at the commit each release's
summary was written at (``RELEASES``):

* 25.11 to 26.06: ``scripts/performance/configs/<family>/*workload_base_configs.py``, module
  constants ``<MODEL>_PRETRAIN_CONFIG_<GPU>_<PRECISION>[_V<n>|_BASE_CONFIG]`` built from
  ``WorkloadBaseConfig(...)`` and ``dataclasses.replace(...)``, applied as
  ``scripts/performance/utils/overrides.py`` ``set_workload_base_configs`` applies them
  (``moe_a2a_overlap`` -> EP overlap; a flex backend -> ``deepep``, none -> the all-to-all
  dispatcher; ``cuda_graph_impl`` / ``cuda_graph_scope``; ``recompute_modules``;
  ``fp8_dot_product_attention``).
* 26.08: ``src/megatron/bridge/perf_recipes/<family>/<gpu>/*.py``, functions
  ``<model>_pretrain_<n>gpu_<gpu>_<precision>[_<variant>]_config`` whose bodies set
  ``cfg.model.*``, ``cfg.comm_overlap`` and ``cfg.mixed_precision.*``, directly or through
  the family's helpers (followed through their imports, with their keyword arguments).

A setting the recipe does not set (left to the base model recipe) is not written: the
framework's own default stays. 25.09's summary ran YAML perf matrices that hold only
layouts and a CUDA-graph flag, and is not read.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: (release, commit the release's summary was written at). The holdout's notes cite the same.
RELEASES = (
    ("25.11", "97ad8cc6f"),
    ("26.02", "21b02e0cf"),  # tag v0.3.0
    ("26.02.01", "9c9dd8489"),  # tag v0.3.1, the patch container
    ("26.04.01", "21d102f5e"),
    ("26.06", "63b08b397"),
    ("26.08", "4ab94dfad"),
)
GITHUB = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob"
GPUS = ("h100", "b200", "b300", "gb200", "gb300", "vr200", "r100")
#: Precision words of the recipe names, as the recipes' ``compute_dtype`` spells them.
PRECISION_WORDS = {
    "BF16": "bf16",
    "FP8_CS": "fp8_cs",
    "FP8_MX": "fp8_mx",
    "FP8_DS": "fp8_ds",
    "NVFP4": "nvfp4",
    "bf16": "bf16",
    "fp8cs": "fp8_cs",
    "fp8mx": "fp8_mx",
    "fp8ds": "fp8_ds",
    "nvfp4": "nvfp4",
}
FP8_RECIPE = {"fp8_cs": "current", "fp8_mx": "mxfp8", "fp8_ds": "delayed"}

_OLD_NAME = re.compile(
    r"^(?P<model>[A-Z0-9_]+?)_PRETRAIN_CONFIG_(?P<gpu>[A-Z0-9]+)_"
    r"(?P<prec>BF16|FP8_CS|FP8_MX|FP8_DS|NVFP4)(?:_(?P<variant>V\d+)|_BASE_CONFIG)?$"
)
_NEW_NAME = re.compile(
    r"^(?P<model>[a-z0-9_]+?)_pretrain_(?P<n>\d+)gpu_(?P<gpu>[a-z0-9]+)_"
    r"(?P<prec>bf16|fp8cs|fp8mx|fp8ds|nvfp4)(?:_(?P<variant>[a-z0-9_]+))?_config$"
)


class Unknown:
    """A value the static reading cannot know (a call into the base recipes ...)."""


UNKNOWN = Unknown()


def git_show(repo: Path, commit: str, path: str) -> str | None:
    """A file's text at a commit, or None when it does not exist there."""
    done = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def git_files(repo: Path, commit: str, under: str) -> list[str]:
    """Every file path under a folder at a commit."""
    done = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit, "--", under],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def literal(node: ast.AST, env: dict[str, Any]) -> Any:
    """A node's value: a literal, a bound name, or ``UNKNOWN``."""
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = literal(node.operand, env)
        return UNKNOWN if inner is UNKNOWN else not inner
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


# --- 25.11 to 26.06: workload base configs -------------------------------------------------


def workload_defaults(source: str) -> dict[str, Any]:
    """``WorkloadBaseConfig``'s field defaults (its class body in ``utils/utils.py``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            return {
                item.target.id: literal(item.value, {}) if item.value else None
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    raise SystemExit("perf_recipes: no WorkloadBaseConfig in utils/utils.py")


def workload_constants(source: str, defaults: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The module's ``WorkloadBaseConfig`` constants, each as a dict of its fields."""
    known: dict[str, dict[str, Any]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        value = _workload_value(node.value, known, defaults)
        if value is not None:
            known[target.id] = value
    return known


def _workload_value(
    node: ast.AST, known: dict[str, dict[str, Any]], defaults: dict[str, Any]
) -> dict[str, Any] | None:
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    if node.func.id == "WorkloadBaseConfig":
        base = dict(defaults)
    elif node.func.id == "replace" and node.args:
        found = _workload_value(node.args[0], known, defaults)
        if found is None:
            return None
        base = dict(found)
    else:
        return None
    for keyword in node.keywords:
        if keyword.arg is not None:
            base[keyword.arg] = literal(keyword.value, {})
    return base


def workload_recipes(repo: Path, release: str, commit: str) -> list[dict[str, Any]]:
    """The pretraining recipes of a release whose summary ran workload base configs."""
    utils = git_show(repo, commit, "scripts/performance/utils/utils.py")
    if utils is None:
        return []
    defaults = workload_defaults(utils)
    backend_file = "src/megatron/bridge/training/flex_dispatcher_backend.py"
    gated = '"NVIDIA GB200"' in (git_show(repo, commit, backend_file) or "")
    out = []
    for path in git_files(repo, commit, "scripts/performance/configs"):
        if not path.endswith("workload_base_configs.py"):
            continue
        text = git_show(repo, commit, path) or ""
        for name, fields in workload_constants(text, defaults).items():
            match = _OLD_NAME.match(name)
            if match is None or match["gpu"].lower() not in GPUS:
                continue
            settings = workload_settings(fields, match["gpu"].lower() if gated else "")
            out.append(
                _entry(
                    release,
                    commit,
                    path,
                    name,
                    model=match["model"].lower(),
                    gpu=match["gpu"].lower(),
                    gpus=int(fields.get("num_gpus") or 1),
                    precision=PRECISION_WORDS[match["prec"]],
                    variant=(match["variant"] or "").lower(),
                    layout={
                        "global_batch": fields.get("global_batch_size"),
                        "tp": fields.get("tensor_model_parallel_size"),
                        "pp": fields.get("pipeline_model_parallel_size"),
                        "cp": fields.get("context_parallel_size"),
                        "ep": fields.get("expert_model_parallel_size"),
                    },
                    settings=settings,
                )
            )
    return out


#: GPUs each flex backend runs on where ``apply_flex_dispatcher_backend`` checks the device
#: (25.11 to 26.02.01); elsewhere it skips the backend and the recipe's dispatcher stays.
BACKEND_GPUS = {"deepep": ("h100", "b200", "b300"), "hybridep": ("gb200", "gb300")}


def workload_settings(fields: dict[str, Any], gated_gpu: str = "") -> dict[str, Any]:
    """Our run keys from a workload base config (``set_workload_base_configs``);
    ``gated_gpu``: the recipe's GPU when the release's backend checks the device."""
    out: dict[str, Any] = {}
    if isinstance(fields.get("moe_a2a_overlap"), bool):
        out["ep_overlap"] = fields["moe_a2a_overlap"]
    graph = cuda_graph_mode(fields.get("cuda_graph_impl"), fields.get("cuda_graph_scope"))
    if graph is not None:
        out["cuda_graph"] = graph
    if (fields.get("expert_model_parallel_size") or 1) > 1 or fields.get(
        "moe_flex_dispatcher_backend"
    ):
        backend = fields.get("moe_flex_dispatcher_backend")
        if gated_gpu and gated_gpu not in BACKEND_GPUS.get(str(backend), ()):
            backend = None
        out["moe_dispatch"] = "deepep" if backend in ("deepep", "hybridep") else "alltoall"
    modules = fields.get("recompute_modules")
    if isinstance(modules, list):
        out["recompute_modules"] = modules
    if isinstance(fields.get("fp8_dot_product_attention"), bool):
        out["fp8_attention"] = fields["fp8_dot_product_attention"]
    return out


def cuda_graph_mode(impl: Any, scope: Any) -> str | None:
    """``none``, ``partial`` or ``full_iteration`` from Megatron-Core's ``cuda_graph_impl``
    and ``cuda_graph_scope``; None when neither is set."""
    scopes = [scope] if isinstance(scope, str) else list(scope or [])
    if impl == "full_iteration" or "full_iteration" in scopes:
        return "full_iteration"
    if impl in ("transformer_engine", "local", "te"):
        return "partial"
    if impl == "none":
        return "none"
    return None


# --- 26.08: flat perf recipes --------------------------------------------------------------


@dataclass
class Module:
    """One file of the perf_recipes package: its functions and what it imports."""

    path: str
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Local name -> (module path, name there)."""


def load_modules(repo: Path, commit: str, root: str) -> dict[str, Module]:
    """Every module of the perf_recipes package at a commit, by file path."""
    modules = {}
    for path in git_files(repo, commit, root):
        if not path.endswith(".py"):
            continue
        tree = ast.parse(git_show(repo, commit, path) or "")
        module = Module(path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                module.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom) and node.module:
                file = "src/" + node.module.replace(".", "/") + ".py"
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = (file, alias.name)
        modules[path] = module
    return modules


class Reader:
    """Reads what a recipe function sets on ``cfg``, following helpers it calls."""

    def __init__(self, modules: dict[str, Module]) -> None:
        self.modules = modules

    def resolve(self, module: Module, name: str) -> tuple[Module, ast.FunctionDef] | None:
        if name in module.functions:
            return module, module.functions[name]
        if name in module.imports:
            file, real = module.imports[name]
            target = self.modules.get(file)
            if target is not None:
                return self.resolve(target, real)
        return None

    def run(self, module: Module, func: ast.FunctionDef, env: dict[str, Any], state: dict) -> None:
        for statement in func.body:
            self.statement(module, statement, env, state)

    def statement(self, module: Module, node: ast.stmt, env: dict[str, Any], state: dict) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign(module, target, node.value, env, state)
        elif isinstance(node, (ast.Expr, ast.Return)) and isinstance(node.value, ast.Call):
            self.call(module, node.value, env, state)
        elif isinstance(node, ast.If):
            test = literal(node.test, env)
            if test is UNKNOWN:
                return
            for inner in node.body if test else node.orelse:
                self.statement(module, inner, env, state)

    def assign(
        self, module: Module, target: ast.AST, value: ast.AST, env: dict[str, Any], state: dict
    ) -> None:
        path = _cfg_path(target)
        if path is None:
            if isinstance(target, ast.Name) and target.id == "cfg" and isinstance(value, ast.Call):
                self.call(module, value, env, state)
            return
        if path == "comm_overlap" and isinstance(value, ast.Call):
            for key in [k for k in state if k.startswith("comm_overlap.")]:
                del state[key]
            for keyword in value.keywords:
                if keyword.arg:
                    state[f"comm_overlap.{keyword.arg}"] = literal(keyword.value, env)
            return
        if path == "mixed_precision":
            state["mixed_precision.fp8_dot_product_attention"] = False
            return
        state[path] = literal(value, env)

    def call(self, module: Module, node: ast.Call, env: dict[str, Any], state: dict) -> None:
        """A helper called with ``cfg`` (or a recipe whose result becomes ``cfg``)."""
        if not isinstance(node.func, ast.Name):
            return
        found = self.resolve(module, node.func.id)
        if found is None:
            return
        where, func = found
        params = [a.arg for a in func.args.args]
        for arg in node.args:
            if isinstance(arg, ast.Call):  # f(other_recipe(), ...): the other recipe's cfg
                self.call(module, arg, env, state)
        passes_cfg = any(
            isinstance(a, ast.Call) or (isinstance(a, ast.Name) and a.id == "cfg")
            for a in node.args
        )
        if not passes_cfg and params:
            return
        bound: dict[str, Any] = {}
        defaults = func.args.defaults
        for name, default in zip(params[len(params) - len(defaults) :], defaults):
            bound[name] = literal(default, {})
        for name, default in zip([a.arg for a in func.args.kwonlyargs], func.args.kw_defaults):
            bound[name] = literal(default, {}) if default is not None else UNKNOWN
        for name, arg in zip(params, node.args):
            bound[name] = literal(arg, env)
        for keyword in node.keywords:
            if keyword.arg:
                bound[keyword.arg] = literal(keyword.value, env)
        self.run(where, func, bound, state)


def _cfg_path(node: ast.AST) -> str | None:
    """``cfg.model.x`` -> ``model.x``; None for anything not on ``cfg``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "cfg" and parts:
        return ".".join(reversed(parts))
    return None


def flat_recipes(repo: Path, release: str, commit: str) -> list[dict[str, Any]]:
    """The pretraining recipes of a release whose summary ran the flat perf recipes."""
    root = "src/megatron/bridge/perf_recipes"
    modules = load_modules(repo, commit, root)
    reader = Reader(modules)
    out = []
    for path, module in sorted(modules.items()):
        for name, func in module.functions.items():
            match = _NEW_NAME.match(name)
            if match is None or match["gpu"] not in GPUS:
                continue
            state: dict[str, Any] = {}
            reader.run(module, func, {}, state)
            out.append(
                _entry(
                    release,
                    commit,
                    path,
                    name,
                    model=match["model"],
                    gpu=match["gpu"],
                    gpus=int(match["n"]),
                    precision=PRECISION_WORDS[match["prec"]],
                    variant=match["variant"] or "",
                    layout={
                        "global_batch": state.get("train.global_batch_size"),
                        "tp": state.get("model.tensor_model_parallel_size"),
                        "pp": state.get("model.pipeline_model_parallel_size"),
                        "cp": state.get("model.context_parallel_size"),
                        "ep": state.get("model.expert_model_parallel_size"),
                    },
                    settings=flat_settings(state),
                )
            )
    return out


def flat_settings(state: dict[str, Any]) -> dict[str, Any]:
    """Our run keys from what a flat recipe sets."""
    out: dict[str, Any] = {}
    overlap = state.get("comm_overlap.overlap_moe_expert_parallel_comm")
    if isinstance(overlap, bool):
        out["ep_overlap"] = overlap
    elif (
        "comm_overlap.tp_comm_overlap" in state
        and (state.get("model.expert_model_parallel_size") or 1) > 1
    ):
        out["ep_overlap"] = False  # a fresh CommOverlapConfig: EP overlap off
    tp_overlap = state.get("comm_overlap.tp_comm_overlap")
    if isinstance(tp_overlap, bool):
        out["tp_overlap"] = tp_overlap
    graph = cuda_graph_mode(state.get("model.cuda_graph_impl"), state.get("model.cuda_graph_scope"))
    if graph is not None:
        out["cuda_graph"] = graph
    dispatcher = state.get("model.moe_token_dispatcher_type")
    if isinstance(dispatcher, str):
        out["moe_dispatch"] = "deepep" if dispatcher == "flex" else "alltoall"
    modules = state.get("model.recompute_modules")
    if isinstance(modules, list):
        out["recompute_modules"] = modules
    attention = state.get("mixed_precision.fp8_dot_product_attention")
    if isinstance(attention, bool):
        out["fp8_attention"] = attention
    return out


# --- output ---------------------------------------------------------------------------------


def _entry(
    release: str,
    commit: str,
    path: str,
    name: str,
    *,
    model: str,
    gpu: str,
    gpus: int,
    precision: str,
    variant: str,
    layout: dict[str, Any],
    settings: dict[str, Any],
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "release": release,
        "recipe": name,
        "model": model,
        "gpu": gpu,
        "gpus": gpus,
        "precision": precision,
    }
    if variant:
        entry["variant"] = variant
    for key, value in layout.items():
        if isinstance(value, int) and not isinstance(value, bool):
            entry[key] = value
    if precision in FP8_RECIPE:
        entry["fp8_recipe"] = FP8_RECIPE[precision]
    entry.update(settings)
    entry["source"] = f"{GITHUB}/{commit}/{path}"
    return entry


HEADER = """\
# Settings of NVIDIA's Megatron-Bridge performance recipes, per release of the performance
# summary: what a published row of that release ran when it does not say (docs/hwdb.md,
# "Performance recipes"). Generated by tools/perf_recipes.py from the recipes themselves
# (each entry's source, path@commit); regenerate, do not edit by hand.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument(
        "--repo",
        type=Path,
        default=Path("/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo"),
        help="Megatron-Bridge clone or mirror",
    )
    parser.add_argument(
        "--out", type=Path, default=here / "hwdb" / "recipes" / "megatron-bridge.yaml"
    )
    args = parser.parse_args(argv)
    entries = []
    for release, commit in RELEASES:
        found = workload_recipes(args.repo, release, commit) or flat_recipes(
            args.repo, release, commit
        )
        if not found:
            print(f"perf_recipes: no recipes found for {release} at {commit}", file=sys.stderr)
        entries += sorted(found, key=lambda e: (e["model"], e["gpu"], e["gpus"], e["recipe"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(
        {"perf_recipes": entries}, sort_keys=False, default_flow_style=None, width=100
    )
    args.out.write_text(HEADER + body)
    print(f"perf_recipes: {len(entries)} recipes -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
