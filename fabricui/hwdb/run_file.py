"""Read training-run files: one entry, or a list of entries, of the shared runs schema.

An entry has an ``id``, a ``model`` (an hwdb model id or the shape inline), a ``run`` block
(the normalized layout: ``fabricui.model.run.RunSpec``) and optionally the source's own
wording (``source``, ``hardware``, ``parallel``, ``batch`` ...), which is kept as prose:
the run block is what is priced, and only what it leaves unstated is taken from the prose
(``source``: the framework and release; ``precision``: the FP8 recipe and torch.compile,
``parallel``: async TP, ``services.precision_wording``; ``hardware``: a power limit and a
GPU variant, ``services.hardware_wording``). Unknown keys, wrong types,
impossible degrees and unknown hardware are errors naming the file, line and key path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from fabricui.bounds import (
    ELEMENT_BYTES,
    MOE_IMBALANCE,
    PLAN_COUNT_MAX,
    POWER_CAP_W,
    Range,
    between,
    real,
)
from fabricui.errors import HwdbError, unknown_id_message, unknown_key_message
from fabricui.hwdb.schema import check_one_line, show
from fabricui.hwdb.shapes import shape_problem
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import KeyPath, YamlDocument, format_path, read_yaml
from fabricui.model import ModelShape
from fabricui.model.records import MLP_KINDS
from fabricui.model.run import RUN_DP_STRATEGIES, RunEntry, RunSpec
from fabricui.vocabulary import (
    ATTENTION_CHOICES,
    CUDA_GRAPH_MODES,
    FP8_RECIPES,
    MLA_RECOMPUTE_MODULES,
    MOE_DISPATCH,
    MOE_RECOMPUTE_MODULES,
    PRECISIONS,
    RECOMPUTE_MODES,
    RECOMPUTE_MODULES,
)

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog

#: Entry keys that hold the source's own wording (kept as prose; see the module docstring
#: for what is read from it).
PROSE_KEYS = (
    "source",
    "hardware",
    "parallel",
    "batch",
    "recompute",
    "precision",
    "measured",
    "derived",
    "verified",
    "in_scope",
    "why_out_of_scope",
    "note",
)
#: Keys of an entry.
ENTRY_KEYS = ("id", "model", "run", "quality", *PROSE_KEYS)
#: Multi-head latent attention's widths an inline shape may state (``ModelShape``).
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim")
#: Keys of an inline model shape.
MODEL_KEYS = (
    "id",
    "name",
    "params_B",
    "active_params_B",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "qk_head_dim",
    "v_head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "ffn_hidden",
    "mlp",
    "experts",
    "experts_per_token",
    "moe_layers",
    "shared_experts",
    "dense_ffn_hidden",
    "seq_len",
    "vocab",
    "attention",
    "dropout",
    "rotary",
    "expert_bias",
    "activation_clamp",
    "rope_yarn_factor",
    "source",
    "note",
)
#: The run-block keys of the shared data's published entry schema
#: (``shared/data/training/README.md``, "Entry schema"): all an unseen published row states.
PUBLISHED_RUN_KEYS = (
    "topology",
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "vpp",
    "sp",
    "dp_strategy",
    "global_batch",
    "micro_batch",
    "recompute",
    "precision",
    "step_time_s",
)
#: Keys of a run block: the published ones and the settings a run file may add.
RUN_KEYS = (
    *PUBLISHED_RUN_KEYS,
    "seq_len",
    "attention",
    "dp_overlap",
    "tp_overlap",
    "ep_overlap",
    "framework",
    "power_W",
    "fp8_recipe",
    "recompute_modules",
    "compile",
    "moe_dispatch",
    "moe_imbalance",
    "cuda_graph",
    "etp",
    "fsdp_reshard",
    "grad_reduce_bytes",
    "domain_hosts",
    "fp8_attention",
)
#: Largest degree, batch or sequence a run may state (``bounds.PLAN_COUNT_MAX``, as the
#: plan options).
MAX_COUNT = PLAN_COUNT_MAX


def _fail(doc: YamlDocument, path: KeyPath, problem: str) -> HwdbError:
    return HwdbError(f"{doc.where(path)}: {format_path(path)}: {problem}")


def _mapping(
    doc: YamlDocument, path: KeyPath, data: Any, keys: tuple[str, ...], what: str
) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(doc, path, f"expected a mapping ({what}), got {show(data)}")
    for key in data:
        if key not in keys:
            raise _fail(doc, (*path, str(key)), unknown_key_message(str(key), keys))
    return data


@overload
def _int(doc: YamlDocument, path: KeyPath, value: Any, optional: Literal[False] = False) -> int: ...
@overload
def _int(doc: YamlDocument, path: KeyPath, value: Any, optional: bool) -> int | None: ...
def _int(doc: YamlDocument, path: KeyPath, value: Any, optional: bool = False) -> int | None:
    """A whole number from 1 to ``MAX_COUNT``; None for a missing ``optional`` one."""
    if value is None and optional:
        return None
    number = real(value)
    if number is None or not number.is_integer():
        raise _fail(doc, path, f"expected a whole number, got {show(value)}")
    number = int(number)
    if not 1 <= number <= MAX_COUNT:
        raise _fail(doc, path, f"must be between 1 and {MAX_COUNT} (got {number})")
    return number


def _float(doc: YamlDocument, path: KeyPath, value: Any, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    number = real(value)
    if number is None:
        raise _fail(doc, path, f"expected a finite number, got {show(value)}")
    if not 0 < number < 1e30:
        raise _fail(doc, path, f"must be a positive number (got {show(value)})")
    return number


def _ranged(doc: YamlDocument, path: KeyPath, value: Any, bound: Range) -> float | None:
    """A number within ``bound`` (what the plan's own option takes), or None when unset."""
    if value is None:
        return None
    wrong = between(value, bound)
    if wrong is not None:
        raise _fail(doc, path, wrong)
    return float(value)


def _choice(doc: YamlDocument, path: KeyPath, value: Any, choices: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in choices:
        raise _fail(doc, path, f"must be one of {', '.join(choices)} (got {show(value)})")
    return value


def _flag(doc: YamlDocument, path: KeyPath, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise _fail(doc, path, f"expected true, false or null, got {show(value)}")


def read_run_file(path: Path, catalog: Catalog) -> list[RunEntry]:
    """The entries of a run file (a mapping: one entry; a list: several).

    Args:
        path: The YAML file.
        catalog: The hardware database (GPU, link and model ids).

    Returns:
        The entries, in file order.

    Raises:
        HwdbError: The file cannot be read or an entry is malformed (file, line, key).
    """
    return parse_runs(read_yaml(path), catalog)


def parse_runs(doc: YamlDocument, catalog: Catalog) -> list[RunEntry]:
    """The entries of a parsed run document (see ``read_run_file``).

    Raises:
        HwdbError: A malformed entry.
    """
    data = doc.data
    if isinstance(data, dict):
        return [parse_entry(doc, (), data, catalog)]
    if isinstance(data, list) and data:
        entries = [parse_entry(doc, (i,), item, catalog) for i, item in enumerate(data)]
        _check_unique_ids(doc, entries)
        return entries
    raise HwdbError(f"{doc.where(())}: expected a run entry (with a run block) or a list of them")


def _check_unique_ids(doc: YamlDocument, entries: list[RunEntry]) -> None:
    """Refuse an id two entries share (results are reported and scored by id), naming
    both entries' lines."""
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry.id in first:
            raise _fail(
                doc,
                (i, "id"),
                f"{entry.id!r} is also the id of entry [{first[entry.id]}] "
                f"(line {doc.line_of((first[entry.id],))}); ids must differ",
            )
        first[entry.id] = i


def parse_entry(doc: YamlDocument, path: KeyPath, data: Any, catalog: Catalog) -> RunEntry:
    """One entry. An inline shape without ``params_B`` gets 0 (the service layer counts
    its parameters from the shape).

    Raises:
        HwdbError: Naming the first problem's file, line and key path.
    """
    entry = _mapping(doc, path, data, ENTRY_KEYS, "a run entry: id, model, run")
    if "run" not in entry:
        raise _fail(doc, path, "missing required key 'run'")
    if "model" not in entry:
        raise _fail(doc, path, "missing required key 'model'")
    check_one_line(doc, (*path, "id"), entry.get("id"), "a run id")
    entry_id = str(entry.get("id") or (Path(doc.origin).stem if not path else f"entry{path[-1]}"))
    quality = entry.get("quality") or ""
    if not isinstance(quality, str):
        raise _fail(doc, (*path, "quality"), f"expected text, got {show(quality)}")
    model = _model(doc, (*path, "model"), entry["model"], catalog, entry_id)
    run = _run(doc, (*path, "run"), entry["run"], catalog, model)
    places = {str(key): _place(doc, (*path, "run", str(key))) for key in entry["run"]}
    places[""] = _place(doc, (*path, "run"))
    return RunEntry(
        entry_id,
        model,
        run,
        quality,
        doc.where(path),
        _prose(entry.get("source")),
        places=places,
        precision_text=_prose(entry.get("precision")),
        hardware_text=_prose(entry.get("hardware")),
        parallel_text=_prose(entry.get("parallel"), keyed=True),
    )


def _place(doc: YamlDocument, path: KeyPath) -> str:
    """``file:line: key path``, as every message about a key starts."""
    return f"{doc.where(path)}: {format_path(path)}"


def _prose(value: Any, keyed: bool = False) -> str:
    """The words of a prose block (text, or a mapping / list of them), at most 4,000
    characters: enough to name a framework and a year. ``keyed``: each mapping value after
    its key (``async_tp: True``), for blocks whose keys say what a value is about."""
    if isinstance(value, dict) and keyed:
        text = "; ".join(f"{k}: {_prose(v, keyed)}" for k, v in value.items())
    elif isinstance(value, dict):
        text = " ".join(_prose(v) for v in value.values())
    elif isinstance(value, list):
        text = " ".join(_prose(v, keyed) for v in value)
    elif value is None:
        text = ""
    else:
        text = str(value)
    return text[:4000]


def _model(
    doc: YamlDocument, path: KeyPath, data: Any, catalog: Catalog, entry_id: str
) -> ModelShape:
    if isinstance(data, str):
        spelled = catalog.spelled("models", data)
        if spelled is None:
            raise _fail(doc, path, unknown_id_message("model", data, catalog.models))
        return catalog.models[spelled]
    shape = _mapping(doc, path, data, MODEL_KEYS, "a model id or shape")
    for key in ("id", "name"):
        check_one_line(doc, (*path, key), shape.get(key), f"a model {key}")
    for key in ("layers", "hidden", "heads", "ffn_hidden", "seq_len", "vocab"):
        if key not in shape:
            raise _fail(doc, path, f"missing required key '{key}'")
    ints: dict[str, int] = {}
    for key in ("layers", "hidden", "heads", "ffn_hidden", "seq_len", "vocab"):
        ints[key] = _int(doc, (*path, key), shape[key])
    for key in (
        "kv_heads",
        "head_dim",
        "qk_head_dim",
        "v_head_dim",
        *MLA_KEYS,
        "experts",
        "experts_per_token",
        "moe_layers",
        "shared_experts",
        "dense_ffn_hidden",
    ):
        value = shape.get(key)
        if value not in (None, 0):
            ints[key] = _int(doc, (*path, key), value)
    mlp = _mlp(doc, (*path, "mlp"), shape.get("mlp"))
    window, window_layers = _attention(
        doc, (*path, "attention"), shape.get("attention"), ints["layers"]
    )
    dropout = _flag(doc, (*path, "dropout"), shape.get("dropout"))
    rotary = _flag(doc, (*path, "rotary"), shape.get("rotary"))
    expert_bias = _flag(doc, (*path, "expert_bias"), shape.get("expert_bias"))
    clamp = _float(doc, (*path, "activation_clamp"), shape.get("activation_clamp"), optional=True)
    yarn = _float(doc, (*path, "rope_yarn_factor"), shape.get("rope_yarn_factor"), optional=True)
    params = _float(doc, (*path, "params_B"), shape.get("params_B"), optional=True)
    active = _float(doc, (*path, "active_params_B"), shape.get("active_params_B"), optional=True)
    kv_heads = ints.get("kv_heads") or ints["heads"]
    experts = ints.get("experts", 0)
    named = _named_model(catalog, shape, ints["hidden"], experts)
    same = None if "head_dim" in ints else _same_hwdb_model(catalog, ints, experts)
    mla = _mla_widths(ints, same)
    model = ModelShape(
        id=str(shape.get("id") or entry_id),
        name=str(shape.get("name") or entry_id),
        params_B=params or 0.0,
        layers=ints["layers"],
        hidden=ints["hidden"],
        ffn_hidden=ints["ffn_hidden"],
        heads=ints["heads"],
        kv_heads=kv_heads,
        vocab=ints["vocab"],
        seq_len=ints["seq_len"],
        source=str(shape.get("source") or doc.origin),
        experts=experts,
        experts_per_token=ints.get("experts_per_token", 0) if experts else 0,
        active_params_B=active,
        moe_layers=ints.get("moe_layers", 0) if experts else 0,
        head_dim=ints.get("head_dim"),
        qk_head_dim=ints.get("qk_head_dim", same.qk_head_dim if same else None),
        v_head_dim=ints.get("v_head_dim", same.v_head_dim if same else None),
        q_lora_rank=mla["q_lora_rank"],
        kv_lora_rank=mla["kv_lora_rank"],
        qk_rope_head_dim=mla["qk_rope_head_dim"],
        mlp=mlp,
        shared_experts=ints.get("shared_experts", 0) if experts else 0,
        dense_ffn_hidden=ints.get("dense_ffn_hidden"),
        sliding_window=window,
        window_layers=window_layers,
        dropout=dropout,
        rotary=rotary,
        expert_bias=_named_expert_bias(catalog, shape, experts)
        if expert_bias is None
        else expert_bias,
        activation_clamp=(named.activation_clamp if named else 0.0) if clamp is None else clamp,
        rope_yarn_factor=(named.rope_yarn_factor if named else 0.0) if yarn is None else yarn,
    )
    wrong = shape_problem(model)
    if wrong is not None:
        raise _fail(doc, (*path, wrong[0]), wrong[1])
    return model


def _same_hwdb_model(catalog: Catalog, ints: dict[str, int], experts: int) -> ModelShape | None:
    """The one hwdb model with an inline shape's geometry (layers, hidden, heads, MLP width,
    experts), whose attention widths (``qk_head_dim``, ``v_head_dim``, MLA's latent widths)
    the shape takes when it states neither them nor ``head_dim``: a published table prints
    DeepSeek-V3's hidden size and heads, not MLA's per-head widths, which hidden / heads
    (56) is not. None when no model or several have that geometry."""
    geometry = (ints["layers"], ints["hidden"], ints["heads"], ints["ffn_hidden"], experts)
    found = [
        model
        for model in catalog.models.values()
        if (model.layers, model.hidden, model.heads, model.ffn_hidden, model.experts) == geometry
    ]
    return found[0] if len(found) == 1 else None


def _mla_widths(ints: dict[str, int], same: ModelShape | None) -> dict[str, int | None]:
    """MLA's latent widths (``MLA_KEYS``) of an inline shape: all as it states them when it
    states any, else the hwdb model's of its geometry (``_same_hwdb_model``): a published
    table prints neither."""
    if any(key in ints for key in MLA_KEYS) or same is None:
        return {key: ints.get(key) for key in MLA_KEYS}
    return {key: getattr(same, key) for key in MLA_KEYS}


def _named_model(
    catalog: Catalog, shape: dict[str, Any], hidden: int, experts: int
) -> ModelShape | None:
    """The hwdb model an inline shape's ``name`` (or ``id``) spells, when it has the shape's
    width and experts: what the shape takes for the activation clamp and YaRN factor it
    does not state (a published table prints a model's widths, not those); else None."""
    for key in ("name", "id"):
        text = shape.get(key)
        spelled = catalog.spelled("models", str(text)) if isinstance(text, str) else None
        if spelled is None:
            continue
        model = catalog.models[spelled]
        if (model.hidden, model.experts) == (hidden, experts):
            return model
    return None


def _named_expert_bias(catalog: Catalog, shape: dict[str, Any], experts: int) -> bool:
    """``expert_bias`` of an inline MoE shape that does not state it: the hwdb model's that
    its ``name`` (or ``id``) spells, when that model has as many experts (a published table
    prints a model's widths, not whether its experts carry biases), else False."""
    if not experts:
        return False
    for key in ("name", "id"):
        text = shape.get(key)
        spelled = catalog.spelled("models", str(text)) if isinstance(text, str) else None
        if spelled is not None and catalog.models[spelled].experts == experts:
            return catalog.models[spelled].expert_bias
    return False


def _mlp(doc: YamlDocument, path: KeyPath, value: Any) -> str:
    """``swiglu`` or ``gelu``; the source's wording may follow (``swiglu (per expert)``)."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.split():
        raise _fail(doc, path, f"expected one of {', '.join(MLP_KINDS)}, got {show(value)}")
    kind = value.split()[0].lower()
    if kind not in MLP_KINDS:
        raise _fail(doc, path, f"expected one of {', '.join(MLP_KINDS)}, got {show(value)}")
    return kind


_WINDOW = re.compile(r"(\d+)[- ]token sliding|sliding(?: window)?[: =]+(\d+)", re.IGNORECASE)


def _attention(doc: YamlDocument, path: KeyPath, value: Any, layers: int) -> tuple[int, int]:
    """(window, windowed layers) of ``full``, ``sliding: N`` or the source's wording
    (``alternating full / 128-token sliding window``: every other layer)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("full", "causal")):
        return 0, 0
    if not isinstance(value, str):
        raise _fail(
            doc,
            path,
            f"expected full, 'sliding: N' or 'alternating ... N-token sliding window', "
            f"got {show(value)}",
        )
    match = _WINDOW.search(value)
    if match is None:
        raise _fail(doc, path, f"no window size in {show(value)} (write 'sliding: N' or full)")
    window = int(match.group(1) or match.group(2))
    windowed = layers // 2 if "alternat" in value.lower() else layers
    return window, windowed


def _run(
    doc: YamlDocument, path: KeyPath, data: Any, catalog: Catalog, model: ModelShape
) -> RunSpec:
    block = _mapping(doc, path, data, RUN_KEYS, "a run block")
    for key in ("topology", "tp", "pp", "dp", "global_batch"):
        if key not in block:
            raise _fail(doc, path, f"missing required key '{key}'")
    topo = block["topology"]
    tpath = (*path, "topology")
    if isinstance(topo, str):
        if topo not in catalog.topologies:
            raise _fail(doc, tpath, unknown_id_message("topology", topo, catalog.topologies))
        spec = catalog.topologies[topo]
    else:
        spec = parse_topology(doc, catalog, f"{Path(doc.origin).stem}-topology", at=tpath)
    deg = {key: _int(doc, (*path, key), block[key]) for key in ("tp", "pp", "dp", "global_batch")}
    for key in ("cp", "ep"):
        deg[key] = _int(doc, (*path, key), block.get(key), optional=True) or 1
    vpp = _int(doc, (*path, "vpp"), block.get("vpp"), optional=True)
    micro = _int(doc, (*path, "micro_batch"), block.get("micro_batch"), optional=True)
    seq = _int(doc, (*path, "seq_len"), block.get("seq_len"), optional=True)
    run = RunSpec(
        topology=spec,
        tp=int(deg["tp"] or 1),
        pp=int(deg["pp"] or 1),
        dp=int(deg["dp"] or 1),
        global_batch=int(deg["global_batch"] or 1),
        cp=int(deg["cp"]),
        ep=int(deg["ep"]),
        vpp=vpp,
        sp=_flag(doc, (*path, "sp"), block.get("sp")),
        dp_strategy=_strategy(doc, (*path, "dp_strategy"), block.get("dp_strategy")),
        micro_batch=micro,
        recompute=_choice(doc, (*path, "recompute"), block.get("recompute"), RECOMPUTE_MODES),
        precision=_choice(doc, (*path, "precision"), block.get("precision"), PRECISIONS),
        step_time_s=_float(doc, (*path, "step_time_s"), block.get("step_time_s"), optional=True),
        seq_len=seq,
        attention=_choice(doc, (*path, "attention"), block.get("attention"), ATTENTION_CHOICES),
        dp_overlap=_flag(doc, (*path, "dp_overlap"), block.get("dp_overlap")),
        tp_overlap=_flag(doc, (*path, "tp_overlap"), block.get("tp_overlap")),
        ep_overlap=_flag(doc, (*path, "ep_overlap"), block.get("ep_overlap")),
        framework=_framework(doc, (*path, "framework"), block.get("framework"), catalog),
        power_W=_ranged(doc, (*path, "power_W"), block.get("power_W"), POWER_CAP_W),
        fp8_recipe=_choice(doc, (*path, "fp8_recipe"), block.get("fp8_recipe"), FP8_RECIPES),
        recompute_modules=_modules(
            doc, (*path, "recompute_modules"), block.get("recompute_modules")
        ),
        compile=_flag(doc, (*path, "compile"), block.get("compile")),
        moe_dispatch=_choice(doc, (*path, "moe_dispatch"), block.get("moe_dispatch"), MOE_DISPATCH),
        moe_imbalance=_ranged(
            doc, (*path, "moe_imbalance"), block.get("moe_imbalance"), MOE_IMBALANCE
        ),
        cuda_graph=_choice(doc, (*path, "cuda_graph"), block.get("cuda_graph"), CUDA_GRAPH_MODES),
        etp=_int(doc, (*path, "etp"), block.get("etp"), optional=True),
        fsdp_reshard=_flag(doc, (*path, "fsdp_reshard"), block.get("fsdp_reshard")),
        grad_reduce_bytes=_ranged(
            doc, (*path, "grad_reduce_bytes"), block.get("grad_reduce_bytes"), ELEMENT_BYTES
        ),
        domain_hosts=_int(doc, (*path, "domain_hosts"), block.get("domain_hosts"), optional=True),
        fp8_attention=_flag(doc, (*path, "fp8_attention"), block.get("fp8_attention")),
    )
    _check_degrees(doc, path, run, model)
    return run


def _framework(doc: YamlDocument, path: KeyPath, value: Any, catalog: Catalog) -> str | None:
    """A framework id of the database."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in catalog.frameworks:
        raise _fail(doc, path, unknown_id_message("framework", str(value), catalog.frameworks))
    return value


def _modules(doc: YamlDocument, path: KeyPath, value: Any) -> tuple[str, ...] | None:
    """A list of recompute modules."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise _fail(
            doc, path, f"expected a list of {', '.join(RECOMPUTE_MODULES)}, got {show(value)}"
        )
    return tuple(
        str(_choice(doc, (*path, i), item, RECOMPUTE_MODULES)) for i, item in enumerate(value)
    )


def _strategy(doc: YamlDocument, path: KeyPath, value: Any) -> str | None:
    """A DP strategy name: the shared vocabulary, or any other name (a plugin's, checked
    against the registered strategies when the run is priced)."""
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
        raise _fail(
            doc,
            path,
            f"expected one of {', '.join(RUN_DP_STRATEGIES)} or a plugin's, got {show(value)}",
        )
    return value


def _check_degrees(doc: YamlDocument, path: KeyPath, run: RunSpec, model: ModelShape) -> None:
    """Degrees the model, the batch and the cluster allow."""
    if model.heads % run.tp:
        raise _fail(
            doc,
            (*path, "tp"),
            f"{run.tp} does not divide the model's {model.heads} attention heads",
        )
    if run.pp > model.layers:
        raise _fail(doc, (*path, "pp"), f"{run.pp} stages for {model.layers} layers")
    if run.vpp and run.vpp > 1 and run.pp == 1:
        raise _fail(doc, (*path, "vpp"), f"{run.vpp} model chunks need a pipeline (pp > 1)")
    if run.vpp and run.vpp > 1 and run.pp * run.vpp > model.layers:
        raise _fail(
            doc, (*path, "vpp"), f"pp x vpp = {run.pp * run.vpp} chunks for {model.layers} layers"
        )
    stage = run.tp * run.cp * run.dp
    if run.ep > 1 and not model.experts:
        dense = f"{model.id} is dense (no experts): give 1"
        raise _fail(doc, (*path, "ep"), f"{run.ep} must divide the experts, but {dense}")
    if run.ep > 1 and (model.experts % run.ep or stage % run.ep):
        raise _fail(
            doc,
            (*path, "ep"),
            f"{run.ep} must divide the experts ({model.experts}) and tp x cp x dp ({stage}): "
            "expert groups are formed from a pipeline stage's ranks",
        )
    if run.etp and stage % (run.etp * run.ep):
        raise _fail(
            doc, (*path, "etp"), f"etp x ep = {run.etp * run.ep} must divide tp x cp x dp ({stage})"
        )
    gpus = run.topology.nodes * run.topology.gpus_per_node
    world = run.tp * run.pp * run.dp * run.cp
    if world > gpus:
        raise _fail(
            doc, (*path, "dp"), f"tp x pp x dp x cp = {world} GPUs, the topology has {gpus}"
        )
    seq = run.seq_len or model.seq_len
    if seq % run.cp:
        raise _fail(doc, (*path, "cp"), f"{run.cp} does not divide the sequence of {seq} tokens")
    moe_only = [m for m in run.recompute_modules or () if m in MOE_RECOMPUTE_MODULES]
    if moe_only and not model.experts:
        raise _fail(
            doc,
            (*path, "recompute_modules"),
            f"{moe_only[0]}: {model.id} is dense (no MoE layers); its MLP is recomputed by 'mlp'",
        )
    mla_only = [m for m in run.recompute_modules or () if m in MLA_RECOMPUTE_MODULES]
    if mla_only and not model.kv_lora_rank:
        raise _fail(
            doc,
            (*path, "recompute_modules"),
            f"{mla_only[0]}: {model.id} has no multi-head latent attention (no kv_lora_rank)",
        )
    micro = run.micro_batch or 1
    microbatches = run.global_batch // (run.dp * micro)
    if run.vpp and run.vpp > 1 and 0 < microbatches < run.pp:
        raise _fail(
            doc,
            (*path, "vpp"),
            f"interleaving needs at least pp = {run.pp} micro-batches a step "
            f"(global_batch / (dp x micro_batch) = {microbatches})",
        )
    if run.global_batch % (run.dp * micro):
        raise _fail(
            doc,
            (*path, "global_batch"),
            f"{run.global_batch} is not a multiple of dp x micro_batch = {run.dp * micro}",
        )
