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
  ``fp8_dot_product_attention``; ``expert_tensor_parallel_size`` -> ``etp``, left out where
  None: Megatron-Core's ETP = TP).
* 26.08: ``src/megatron/bridge/perf_recipes/<family>/<gpu>/*.py``, functions
  ``<model>_pretrain_<n>gpu_<gpu>_<precision>[_<variant>]_config`` whose bodies set
  ``cfg.model.*``, ``cfg.comm_overlap`` and ``cfg.mixed_precision.*``, directly or through
  the family's helpers (followed through their imports, with their keyword arguments).
* 25.09: ``scripts/performance/run_script.py``'s ``main`` for each entry of the YAML perf
  matrices (``configs/<name>/<name>_<size>_llm_pretrain.yaml``: GPU, GPU count,
  precision), which builds the base recipe, sets its per-model settings, merges the YAML's
  ``ConfigContainer`` and applies the matrix entry (layout, CUDA graphs).

Where a release's perf script runs a config at a GPU count no config names, scaling its
global batch to that count (25.11 to 26.08: ``set_post_overrides``), the config it loads
then for a model, GPU and precision is marked ``any_count`` (``mark_any_count``): 25.11's
one ``_BASE_CONFIG``; 26.02 to 26.06 the default ``--config_variant`` (v2, else v1, else
the unversioned config: ``get_workload_base_config``); 26.08 the suffix-less recipe of
``_DEFAULT_GPU_COUNT_OVERRIDES``' count, else of the largest count
(``_select_default_recipe_name``). 25.09's ``run_script.py`` skips the perf matrix at a
count it does not list: nothing is marked.

Beside the perf recipe's own settings, the whole entry point is run statically
(``Interpreter``): the base model recipe (``src/megatron/bridge/recipes``) with its model
provider's and configs' dataclass defaults, then the perf recipe and the script's own
steps, in the order the script applies them, so what the base recipe sets (TP overlap,
gradient-reduce overlap, the MoE dispatcher, recompute modules, CUDA graphs) is read
where the perf recipe leaves it. What depends on the device or lies outside the
repository (Megatron-Core's defaults) is not known and not written: the framework's own
default stays.
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
    ("25.09", "fa0315ae2"),
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
            settings = merge_settings(
                workload_settings(fields, match["gpu"].lower() if gated else ""),
                perf_entry_settings(repo, commit, path, match, fields),
            )
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
    return mark_any_count(out, workload_choice(workload_load_order(repo, commit)))


def perf_entry_settings(
    repo: Path, commit: str, path: str, match: re.Match[str], fields: dict[str, Any]
) -> dict[str, Any]:
    """What the perf script's ``<model>_pretrain_config_<gpu>`` builds for a workload
    config: the base model recipe, then the script's own settings around
    ``set_workload_base_configs`` (``config_settings``)."""
    interp = Interpreter(repo, commit)
    constant = Obj(fields)
    interp.intercept["get_workload_base_config"] = lambda *_, **__: constant
    function = f"{match['model'].lower()}_pretrain_config_{match['gpu'].lower()}"
    kwargs: dict[str, Any] = {"precision": PRECISION_WORDS[match["prec"]]}
    if match["variant"]:
        kwargs["config_variant"] = match["variant"].lower()
    folder = path.rsplit("/", 1)[0]
    for file in git_files(repo, commit, folder):
        if file.endswith(".py") and interp.lookup(file, function) is not None:
            return entry_point_settings(interp, file, function, [], kwargs)
    return {}


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
    etp = expert_tp(fields.get("expert_tensor_parallel_size"))
    if etp is not None:
        out["etp"] = etp
    return out


def expert_tp(value: Any) -> int | None:
    """An expert tensor-parallel size a config sets; None where it leaves Megatron-Core's
    default (ETP = TP) or the value is not known."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


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
                    settings=merge_settings(
                        flat_settings(state),
                        entry_point_settings(Interpreter(repo, commit), path, name, [], {}),
                    ),
                )
            )
    return mark_any_count(out, flat_choice(flat_default_counts(repo, commit)))


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
    etp = expert_tp(state.get("model.expert_tensor_parallel_size"))
    if etp is not None:
        out["etp"] = etp
    return out


# --- the whole perf entry point: base recipe, perf recipe, script --------------------------


class Obj(dict):
    """A config object being built: the attributes set on it so far."""


class Opaque(Obj):
    """What a call outside the repository returns: attributes set on it are tracked, the
    rest (and its truth, and comparisons with it) are unknown."""


_MISSING = object()
_MAYBE = object()
#: Parsed files, by (repository, commit, path): many entry points share them.
_TREES: dict[tuple[str, str, str], ast.Module | None] = {}
_PINNED = ("args",)


class Interpreter:
    """Runs a perf entry point statically, following the functions and dataclasses of the
    repository it calls: the base model recipe, its model provider's and configs' field
    defaults, the perf helpers. What cannot be known (devices, files, loops, calls outside
    the repository) is ``UNKNOWN``; a branch whose test is unknown marks what it sets as
    ``UNKNOWN`` rather than guess."""

    def __init__(self, repo: Path, commit: str, scripts: str = "scripts/performance") -> None:
        self.repo, self.commit, self.scripts = repo, commit, scripts
        self.intercept: dict[str, Any] = {}
        """Names answered by the caller (what the script reads from files or the CLI)."""
        self.reading: set[tuple[str, str]] = set()
        self.depth = 0
        self.taint = 0

    # modules and names

    def tree(self, path: str) -> ast.Module | None:
        key = (str(self.repo), self.commit, path)
        if key not in _TREES:
            text = git_show(self.repo, self.commit, path)
            try:
                _TREES[key] = ast.parse(text) if text is not None else None
            except SyntaxError:
                _TREES[key] = None
        return _TREES[key]

    def module_file(self, here: str, module: str | None, level: int) -> str | None:
        parts = (module or "").split(".") if module else []
        if level:
            base = here.rsplit("/", level)[0]
            roots = [base]
        else:
            roots = ["src", self.scripts]
        for root in roots:
            stem = "/".join([root, *parts]) if parts else root
            for path in (f"{stem}.py", f"{stem}/__init__.py"):
                if self.tree(path) is not None:
                    return path
        return None

    def lookup(self, path: str, name: str, seen: int = 0) -> tuple[str, ast.AST] | None:
        """The definition (function, class or module-level value) a name has in a file."""
        tree = self.tree(path)
        if tree is None or seen > 8:
            return None
        found: tuple[str, ast.AST] | None = None
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                found = (path, node)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                found = (path, node.value)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name or alias.name == "*":
                        file = self.module_file(path, node.module, node.level)
                        if file is None:
                            continue
                        inner = self.lookup(
                            file, alias.name if alias.name != "*" else name, seen + 1
                        )
                        if inner is not None:
                            found = inner
        return found

    def global_value(self, path: str, name: str) -> Any:
        if name in self.intercept:
            return self.intercept[name]
        found = self.lookup(path, name)
        if found is None:
            return UNKNOWN
        where, node = found
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return ("def", where, node)
        key = (where, name)
        if key in self.reading:  # a module constant built from itself
            return UNKNOWN
        self.reading.add(key)
        try:
            return self.value(node, {}, where)
        finally:
            self.reading.discard(key)

    # calls

    def call(self, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if callable(target):
            return target(*args, **kwargs)
        if not (isinstance(target, tuple) and target and target[0] == "def"):
            return Opaque(kwargs)  # outside the repository: only what it is given
        _, where, node = target
        if self.depth > 40:
            return UNKNOWN
        self.depth += 1
        try:
            if isinstance(node, ast.ClassDef):
                return self.construct(where, node, args, kwargs)
            return self.run_function(where, node, args, kwargs)
        finally:
            self.depth -= 1

    def construct(self, where: str, node: ast.ClassDef, args: list, kwargs: dict) -> Obj:
        """A dataclass instance: its fields' defaults (bases first), then the arguments."""
        out = Obj()
        for base in node.bases:
            if isinstance(base, ast.Name):
                found = self.global_value(where, base.id)
                if isinstance(found, tuple) and isinstance(found[2], ast.ClassDef):
                    out.update(self.construct(found[1], found[2], [], {}))
        names = []
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.append(item.target.id)
                if item.value is not None:
                    out[item.target.id] = self.value(item.value, {}, where)
        for name, value in zip(names, args):
            out[name] = value
        out.update(kwargs)
        return out

    def run_function(self, where: str, node: ast.FunctionDef, args: list, kwargs: dict) -> Any:
        spec = node.args
        params = [a.arg for a in spec.posonlyargs + spec.args]
        env: dict[str, Any] = {}
        for name, default in zip(params[len(params) - len(spec.defaults) :], spec.defaults):
            env[name] = self.value(default, {}, where)
        for arg, kw_default in zip(spec.kwonlyargs, spec.kw_defaults):
            env[arg.arg] = UNKNOWN if kw_default is None else self.value(kw_default, {}, where)
        for name, value in zip(params, args):
            env[name] = value
        extra: dict[str, Any] = {}
        for name, value in kwargs.items():
            if name in params or name in [a.arg for a in spec.kwonlyargs]:
                env[name] = value
            else:
                extra[name] = value
        if spec.kwarg is not None:
            env[spec.kwarg.arg] = extra
        result = self.block(node.body, env, where)
        return UNKNOWN if result in (_MISSING, _MAYBE) else result

    # statements

    def block(self, body: list[ast.stmt], env: dict[str, Any], where: str) -> Any:
        """Runs statements; the returned value, or ``_MISSING`` when none returned."""
        maybe = 0
        try:
            for node in body:
                done = self.statement(node, env, where)
                if done is _MAYBE:
                    # A branch that may have returned: the rest may not run.
                    maybe += 1
                    self.taint += 1
                elif done is not _MISSING:
                    return done
            return _MAYBE if maybe else _MISSING
        finally:
            self.taint -= maybe

    def statement(self, node: ast.stmt, env: dict[str, Any], where: str) -> Any:
        if isinstance(node, ast.Return):
            value = self.value(node.value, env, where) if node.value is not None else None
            return UNKNOWN if self.taint else value
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None:
                return _MISSING
            value = self.value(node.value, env, where)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self.store(target, value, env, where)
        elif isinstance(node, ast.AugAssign):
            self.store(node.target, UNKNOWN, env, where)
        elif isinstance(node, ast.Expr):
            self.value(node.value, env, where)
        elif isinstance(node, ast.If):
            test = self.truth(self.value(node.test, env, where))
            if test is UNKNOWN:
                self.taint += 1
                try:
                    returned = [self.block(b, env, where) for b in (node.body, node.orelse)]
                finally:
                    self.taint -= 1
                if any(r is not _MISSING for r in returned):
                    return _MAYBE
            else:
                return self.block(node.body if test else node.orelse, env, where)
        elif isinstance(node, (ast.With, ast.Try)):
            return self.block(node.body, env, where)
        elif isinstance(node, ast.Raise):
            return UNKNOWN
        return _MISSING

    def store(self, target: ast.AST, value: Any, env: dict[str, Any], where: str) -> None:
        if self.taint:
            value = UNKNOWN
        if isinstance(target, ast.Name):
            if target.id not in _PINNED:
                env[target.id] = value
        elif isinstance(target, ast.Attribute):
            owner = self.value(target.value, env, where)
            if isinstance(owner, Obj):
                owner[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self.store(item, UNKNOWN, env, where)

    # expressions

    @staticmethod
    def truth(value: Any) -> Any:
        if value is UNKNOWN or isinstance(value, Opaque):
            return UNKNOWN
        if isinstance(value, tuple) and value and value[0] == "def":
            return UNKNOWN
        if isinstance(value, Obj):
            return True
        try:
            return bool(value)
        except Exception:  # noqa: BLE001 - an odd value reads as unknown
            return UNKNOWN

    def value(self, node: ast.AST | None, env: dict[str, Any], where: str) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return self.global_value(where, node.id) if where else UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, env, where) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values):
                inner = self.value(item, env, where)
                if key is None:
                    if not isinstance(inner, dict):
                        return UNKNOWN
                    out.update(inner)
                else:
                    out[self.value(key, env, where)] = inner
            return out
        if isinstance(node, ast.Attribute):
            owner = self.value(node.value, env, where)
            if isinstance(owner, Obj):
                return owner.get(node.attr, UNKNOWN)
            if type(owner) is dict and node.attr == "get":
                return owner.get
            if isinstance(owner, str) and node.attr == "lower":
                return owner.lower
            if isinstance(owner, str) and node.attr == "upper":
                return owner.upper
            return UNKNOWN
        if isinstance(node, ast.UnaryOp):
            inner = self.value(node.operand, env, where)
            if isinstance(node.op, ast.Not):
                test = self.truth(inner)
                return UNKNOWN if test is UNKNOWN else not test
            if isinstance(node.op, ast.USub) and isinstance(inner, (int, float)):
                return -inner
            return UNKNOWN
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node, env, where)
        if isinstance(node, ast.Compare):
            return self.compare(node, env, where)
        if isinstance(node, ast.IfExp):
            test = self.truth(self.value(node.test, env, where))
            if test is UNKNOWN:
                return UNKNOWN
            return self.value(node.body if test else node.orelse, env, where)
        if isinstance(node, ast.Call):
            return self.call_node(node, env, where)
        if isinstance(node, ast.Subscript):
            owner = self.value(node.value, env, where)
            key = self.value(node.slice, env, where)
            if type(owner) in (dict, list, tuple) and key is not UNKNOWN:
                try:
                    return owner[key]
                except (KeyError, IndexError, TypeError):
                    return UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                inner = self.value(
                    part.value if isinstance(part, ast.FormattedValue) else part, env, where
                )
                if inner is UNKNOWN or isinstance(inner, (Obj, tuple)):
                    return UNKNOWN
                parts.append(str(inner))
            return "".join(parts)
        return UNKNOWN

    def bool_op(self, node: ast.BoolOp, env: dict[str, Any], where: str) -> Any:
        is_and = isinstance(node.op, ast.And)
        unknown = False
        last: Any = None
        for item in node.values:
            last = self.value(item, env, where)
            test = self.truth(last)
            if test is UNKNOWN:
                unknown = True
            elif test is not is_and:
                return last
        return UNKNOWN if unknown else last

    def compare(self, node: ast.Compare, env: dict[str, Any], where: str) -> Any:
        left = self.value(node.left, env, where)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node, env, where)
            if any(v is UNKNOWN or isinstance(v, Opaque) for v in (left, right)):
                return UNKNOWN
            try:
                if isinstance(op, ast.Eq):
                    ok = left == right
                elif isinstance(op, ast.NotEq):
                    ok = left != right
                elif isinstance(op, ast.Is):
                    ok = left is right
                elif isinstance(op, ast.IsNot):
                    ok = left is not right
                elif isinstance(op, ast.In):
                    ok = left in right
                elif isinstance(op, ast.NotIn):
                    ok = left not in right
                elif isinstance(op, ast.Gt):
                    ok = left > right
                elif isinstance(op, ast.GtE):
                    ok = left >= right
                elif isinstance(op, ast.Lt):
                    ok = left < right
                elif isinstance(op, ast.LtE):
                    ok = left <= right
                else:
                    return UNKNOWN
            except TypeError:
                return UNKNOWN
            if not ok:
                return False
            left = right
        return True

    def call_node(self, node: ast.Call, env: dict[str, Any], where: str) -> Any:
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                return UNKNOWN
            args.append(self.value(arg, env, where))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            inner = self.value(keyword.value, env, where)
            if keyword.arg is None:
                if not isinstance(inner, dict):
                    return UNKNOWN
                kwargs.update(inner)
            else:
                kwargs[keyword.arg] = inner
        func = node.func
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2:
            return _isinstance(args[0], node.args[1])
        if isinstance(func, ast.Name) and func.id not in env:
            builtin = _BUILTINS.get(func.id)
            if builtin is not None:
                return builtin(*args, **kwargs)
        target = self.value(func, env, where)
        if self.taint and isinstance(target, tuple):
            # A helper called on a branch that may not run: what it sets is unknown.
            result = self.call(target, args, kwargs)
            return UNKNOWN if not isinstance(result, Obj) else result
        return self.call(target, args, kwargs)


def _replace(obj: Any = UNKNOWN, **changes: Any) -> Any:
    if not isinstance(obj, Obj):
        return UNKNOWN
    out = Obj(obj)
    out.update(changes)
    return out


def _hasattr(obj: Any = UNKNOWN, name: Any = None, *_: Any) -> Any:
    if isinstance(obj, dict) and (name in obj or hasattr(dict, str(name))):
        return True
    return UNKNOWN


_TYPES = {"str": str, "list": list, "dict": dict, "bool": bool, "int": int, "float": float}


def _isinstance(value: Any, kinds: ast.AST) -> Any:
    """``isinstance`` against built-in types named in the source; else unknown."""
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    if value is UNKNOWN or isinstance(value, (Obj, tuple)):
        return UNKNOWN
    types = []
    for name in names:
        if not (isinstance(name, ast.Name) and name.id in _TYPES):
            return UNKNOWN
        types.append(_TYPES[name.id])
    return isinstance(value, tuple(types))


def _bool(value: Any = False) -> Any:
    return Interpreter.truth(value)


_BUILTINS: dict[str, Any] = {
    "replace": _replace,
    "hasattr": _hasattr,
    "bool": _bool,
    "int": lambda v=0, *_: v if isinstance(v, int) else UNKNOWN,
    # A missing attribute may be a default outside the repository (Megatron-Core's).
    "getattr": lambda obj=UNKNOWN, name=None, *_: (
        obj.get(name, UNKNOWN) if isinstance(obj, Obj) else UNKNOWN
    ),
}


def config_settings(cfg: Any) -> dict[str, Any]:
    """Our run keys from a built config (``ConfigContainer``) where it sets them."""
    if not isinstance(cfg, Obj):
        return {}
    model = cfg.get("model")
    model = model if isinstance(model, Obj) else Obj()
    overlap = cfg.get("comm_overlap")
    overlap = overlap if isinstance(overlap, Obj) else Obj()
    ddp = cfg.get("ddp")
    ddp = ddp if isinstance(ddp, Obj) else Obj()
    mixed = cfg.get("mixed_precision")
    mixed = mixed if isinstance(mixed, Obj) else Obj()
    out: dict[str, Any] = {}
    if isinstance(overlap.get("tp_comm_overlap"), bool):
        out["tp_overlap"] = overlap["tp_comm_overlap"]
    grads = overlap.get("overlap_grad_reduce")
    if not isinstance(grads, bool):
        grads = ddp.get("overlap_grad_reduce")
    if isinstance(grads, bool):
        out["dp_overlap"] = grads
    if isinstance(overlap.get("overlap_moe_expert_parallel_comm"), bool):
        out["ep_overlap"] = overlap["overlap_moe_expert_parallel_comm"]
    impl = model.get("cuda_graph_impl")
    graph = cuda_graph_mode(
        impl if impl is not UNKNOWN else None,
        model.get("cuda_graph_scope") if model.get("cuda_graph_scope") is not UNKNOWN else None,
    )
    if graph is None and isinstance(model.get("enable_cuda_graph"), bool):
        graph = "partial" if model["enable_cuda_graph"] else "none"
    if graph is not None and UNKNOWN not in (impl, model.get("cuda_graph_scope")):
        out["cuda_graph"] = graph
    dispatcher = model.get("moe_token_dispatcher_type")
    if isinstance(dispatcher, str):
        out["moe_dispatch"] = "deepep" if dispatcher == "flex" else "alltoall"
    modules = model.get("recompute_modules")
    selective = model.get("recompute_granularity") == "selective"
    if selective and isinstance(modules, list) and all(isinstance(m, str) for m in modules):
        out["recompute_modules"] = modules
    if isinstance(mixed.get("fp8_dot_product_attention"), bool):
        out["fp8_attention"] = mixed["fp8_dot_product_attention"]
    etp = expert_tp(model.get("expert_tensor_parallel_size"))
    if etp is not None:
        out["etp"] = etp
    return out


def merge_settings(recipe: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The perf recipe's own settings, then what its whole entry point builds (which
    applies them in the order the script does, so later steps win) where it knows.

    One exception: an entry point that leaves ``cuda_graph_impl`` ``none`` and clears the
    ``full_iteration`` scope the recipe set reads as no graphs, but Megatron-Core promotes
    that scope to a whole-iteration graph (the perf recipes' ``_benchmark_common`` says so),
    and when it does depends on Megatron-Core: the recipe's whole-iteration graph stays."""
    out = {**recipe, **entry}
    if recipe.get("cuda_graph") == "full_iteration" and entry.get("cuda_graph") == "none":
        out["cuda_graph"] = "full_iteration"
    return out


def entry_point_settings(
    interp: Interpreter, path: str, function: str, args: list[Any], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Our run keys from what a perf entry point builds (``config_settings``)."""
    found = interp.lookup(path, function)
    if found is None or not isinstance(found[1], ast.FunctionDef):
        return {}
    return config_settings(interp.call(("def", *found), args, kwargs))


# --- 25.09: YAML perf matrices under run_script.py ----------------------------------------


def _deep_merge(*items: Any) -> Any:
    """OmegaConf.merge on plain mappings (what is not a mapping is left out)."""
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or isinstance(item, Obj):
            continue
        for key, value in item.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = _deep_merge(out[key], value)
            else:
                out[key] = value
    return out


def _apply_overrides(recipe: Any, overrides: Any, *_: Any) -> None:
    """``apply_overrides``: a mapping's values set on the config, nested by attribute."""
    if not isinstance(recipe, Obj) or not isinstance(overrides, dict):
        return
    for key, value in overrides.items():
        inner = recipe.get(key)
        if isinstance(value, dict) and isinstance(inner, Obj):
            _apply_overrides(inner, value)
        elif not isinstance(value, dict):
            recipe[key] = value


def matrix_recipes(repo: Path, release: str, commit: str) -> list[dict[str, Any]]:
    """The pretraining runs of a release whose summary ran ``run_script.py`` with a YAML
    file per model (``configs/<name>/<name>_<size>_llm_pretrain.yaml``): the base recipe
    the script builds, the YAML's overrides, then its ``perf_matrix`` entry for the GPU,
    GPU count and precision."""
    script = "scripts/performance/run_script.py"
    if git_show(repo, commit, script) is None:
        return []
    out = []
    for path in git_files(repo, commit, "scripts/performance/configs"):
        if not path.endswith("_llm_pretrain.yaml"):
            continue
        family = path.split("/")[-2]
        model = path.rsplit("/", 1)[1][: -len("_llm_pretrain.yaml")]
        if not model.startswith(family + "_"):
            continue
        root = yaml.safe_load(git_show(repo, commit, path) or "") or {}
        for gpu, block in sorted((root.get("perf_matrix") or {}).items()):
            if gpu not in GPUS:
                continue
            for count_key, preset in sorted((block or {}).items()):
                gpus = int(count_key.rsplit("_", 1)[1])
                for dtype in preset or {}:
                    if dtype == "common" or dtype not in PRECISION_WORDS.values():
                        continue
                    merged = _deep_merge(preset.get("common") or {}, preset.get(dtype) or {})
                    settings = matrix_settings(
                        repo, commit, path, family, model[len(family) + 1 :], gpu, gpus, dtype
                    )
                    if (merged.get("ep") or 1) > 1:
                        # The MoE model providers' own dispatcher (alltoall) where the
                        # recipe does not choose one.
                        settings.setdefault("moe_dispatch", "alltoall")
                    out.append(
                        _entry(
                            release,
                            commit,
                            script,
                            f"{path.rsplit('/', 1)[1]} perf_matrix.{gpu}.{count_key}.{dtype}",
                            model=model,
                            gpu=gpu,
                            gpus=gpus,
                            precision=dtype,
                            variant="",
                            layout={
                                "global_batch": merged.get("gbs"),
                                "tp": merged.get("tp", 1),
                                "pp": merged.get("pp", 1),
                                "cp": merged.get("cp", 1),
                                "ep": merged.get("ep", 1),
                            },
                            settings=settings,
                        )
                    )
    return out


def matrix_settings(
    repo: Path,
    commit: str,
    yaml_path: str,
    name: str,
    size: str,
    gpu: str,
    gpus: int,
    dtype: str,
) -> dict[str, Any]:
    """What ``run_script.py``'s ``main`` builds for one perf-matrix entry."""
    interp = Interpreter(repo, commit)
    built: list[Any] = []
    root = yaml.safe_load(git_show(repo, commit, yaml_path) or "") or {}
    omegaconf = Obj(
        load=lambda *_: root,
        merge=_deep_merge,
        create=lambda value=None, *_: value if value is not None else {},
        to_container=lambda value=None, **_: value,
        is_dict=lambda value=None: isinstance(value, dict),
    )
    interp.intercept.update(
        OmegaConf=omegaconf,
        apply_overrides=_apply_overrides,
        pretrain=lambda config=None, **_: built.append(config),
        parse_cli_args=lambda *_: UNKNOWN,
    )
    compute, _, recipe = dtype.partition("_")
    args = Obj(
        model_name=name,
        model_size=size,
        gpu=gpu,
        num_gpus=gpus,
        gpus_per_node=UNKNOWN,
        compute_dtype=compute,
        fp8_recipe=recipe or "cs",
        use_tokendrop=None,
        config_file=yaml_path,
    )
    found = interp.lookup("scripts/performance/run_script.py", "main")
    if found is None or not isinstance(found[1], ast.FunctionDef):
        return {}
    where, main = found
    assert isinstance(main, ast.FunctionDef)
    interp.block(main.body, {"args": args}, where)
    return config_settings(built[-1]) if built else {}


# --- a GPU count no recipe names -----------------------------------------------------------

#: Picks, from the recipes of one (model, GPU, precision), the one the perf script loads at a
#: GPU count none of them names; None: it loads none of them (or refuses).
Choice = Any


def mark_any_count(entries: list[dict[str, Any]], choose: Choice) -> list[dict[str, Any]]:
    """``entries`` with ``any_count: true`` on the one recipe per model, GPU and precision
    that ``choose`` (a release's perf script) runs at a GPU count no recipe names."""
    if choose is None:
        return entries
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault((entry["model"], entry["gpu"], entry["precision"]), []).append(entry)
    chosen = set()
    for group in groups.values():
        found = choose(group)
        if found is not None:
            chosen.add(id(found))
    return [_with_any_count(e) if id(e) in chosen else e for e in entries]


def _with_any_count(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        out[key] = value
        if key == "gpus":
            out["any_count"] = True
    return out


def workload_load_order(repo: Path, commit: str) -> tuple[str, ...]:
    """The name endings ``get_workload_base_config`` tries, in order, for a run naming no
    variant, when the release's ``set_post_overrides`` runs the config at any GPU count
    (scaling its global batch by ``gbs_scaling_factor``); empty when it does not."""
    scripts = "scripts/performance"
    overrides = git_show(repo, commit, f"{scripts}/utils/overrides.py") or ""
    if "gbs_scaling_factor * num_gpus" not in overrides:
        return ()
    utils = git_show(repo, commit, f"{scripts}/utils/utils.py") or ""
    if '"_BASE_CONFIG"' in utils:  # 25.11: one config per model, GPU and precision
        return ("_BASE_CONFIG",)
    parser = git_show(repo, commit, f"{scripts}/argument_parser.py") or ""
    default = argument_default(parser, "--config_variant")
    if not isinstance(default, str) or not default:
        return ()
    order = [f"_{default.upper()}"]
    if default.lower() == "v2":  # "If default v2 is unavailable, fall back to v1"
        order.append("_V1")
    return (*order, "")  # then the non-versioned name


def argument_default(source: str, flag: str) -> Any:
    """The ``default=`` of ``add_argument(..., flag, ...)`` in a parser's source; None."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and any(isinstance(a, ast.Constant) and a.value == flag for a in node.args)
        ):
            for keyword in node.keywords:
                if keyword.arg == "default":
                    value = literal(keyword.value, {})
                    return None if value is UNKNOWN else value
    return None


def workload_choice(order: tuple[str, ...]) -> Choice:
    """The config ``get_workload_base_config`` loads: the first name ending of ``order``
    that a config of the group has."""
    if not order:
        return None

    def choose(group: list[dict[str, Any]]) -> dict[str, Any] | None:
        by_ending = {_workload_ending(e): e for e in group}
        return next((by_ending[end] for end in order if end in by_ending), None)

    return choose


def _workload_ending(entry: dict[str, Any]) -> str:
    """``_V2``, ``_BASE_CONFIG`` or empty: what follows the precision in a config's name."""
    match = _OLD_NAME.match(entry["recipe"])
    if match is None:
        return "?"
    return entry["recipe"][match.end("prec") :]


def flat_default_counts(repo: Path, commit: str) -> dict[tuple, int] | None:
    """``_DEFAULT_GPU_COUNT_OVERRIDES`` of a release whose run script, asked for a GPU count
    no flat recipe names, loads the default recipe and scales its batch; None when it
    does not (no ``_select_default_recipe_name``)."""
    utils = git_show(repo, commit, "scripts/performance/utils/utils.py") or ""
    script = git_show(repo, commit, "scripts/performance/run_script.py") or ""
    if "_select_default_recipe_name" not in utils or "PerfRecipeNotFoundError" not in script:
        return None
    for node in ast.parse(utils).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_DEFAULT_GPU_COUNT_OVERRIDES" for t in node.targets
        ):
            value = literal(node.value, {})
            return value if isinstance(value, dict) else None
    return {}


def flat_choice(overrides: dict[tuple, int] | None) -> Choice:
    """The flat recipe ``_select_default_recipe_name`` loads: among the suffix-less recipes,
    the override's GPU count (none when no recipe has it: the script refuses), else the
    largest."""
    if overrides is None:
        return None

    def choose(group: list[dict[str, Any]]) -> dict[str, Any] | None:
        plain = sorted((e for e in group if not e.get("variant")), key=lambda e: e["gpus"])
        if not plain:
            return None
        first = plain[0]
        key = (first["model"], "pretrain", first["gpu"], first["precision"].replace("_", ""), None)
        count = overrides.get(key)
        if count is None:
            return plain[-1]
        return next((e for e in plain if e["gpus"] == count), None)

    return choose


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
        found = (
            workload_recipes(args.repo, release, commit)
            or flat_recipes(args.repo, release, commit)
            or matrix_recipes(args.repo, release, commit)
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
