"""The catalog: every record of the hardware database, loaded from YAML and cross-checked."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from fabricui.errors import HwdbError, unknown_id_message
from fabricui.hwdb.plugin_dirs import NeedsPluginError, Withheld, builtin_plugin_dirs, withheld_ids
from fabricui.hwdb.schema import check_choice, check_one_line, check_range, convert_record
from fabricui.hwdb.shapes import shape_problem
from fabricui.hwdb.tables import KINDS as KINDS
from fabricui.hwdb.tables import Catalog as Catalog
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument, format_path, read_yaml
from fabricui.model import (
    FrameworkSpec,
    GpuSpec,
    KernelSpec,
    LinkGeneration,
    ModelShape,
    NicSpec,
    SwitchSpec,
    TopologySpec,
)
from fabricui.model.records import (
    ATTENTION_REF_HEAD_DIM,
    LOSS_STYLES,
    MLP_KINDS,
    PASS_STYLES,
    SELECTIVE_KINDS,
    TIERS,
)
from fabricui.model.topology import SWITCHED_LAYOUTS
from fabricui.vocabulary import (
    ATTENTION_IMPLS,
    CP_ATTENTION,
    FP8_ATTENTION_FORMATS,
    FP8_RECIPES,
    MOE_DISPATCH,
    PROTOCOLS,
    TP_USERBUFFERS,
)

#: Top-level list keys of a record file and the record each holds.
RECORD_KINDS: dict[str, type] = {
    "links": LinkGeneration,
    "gpus": GpuSpec,
    "nics": NicSpec,
    "switches": SwitchSpec,
    "models": ModelShape,
    "frameworks": FrameworkSpec,
    "kernels": KernelSpec,
}

#: Where a NIC record may sit (``NicSpec.attach``).
NIC_ATTACH = ("host", "gpu")


def is_record_document(data: object) -> bool:
    """True when a YAML document is a record file (``links:``, ``gpus:`` ... at its top
    level) rather than a topology file: it names a record kind and no topology field."""
    if not isinstance(data, dict):
        return False
    topology_keys = {f.name for f in dataclasses.fields(TopologySpec)} | {"hardware", "cluster"}
    return any(key in RECORD_KINDS for key in data) and not any(
        key in topology_keys for key in data
    )


def default_hwdb_dir() -> Path:
    """The built-in database: shipped inside the wheel, or the checkout's ``hwdb/``."""
    packaged = Path(__file__).resolve().parent.parent / "_hwdb"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "hwdb"


def shipped_hwdb_dirs() -> list[Path]:
    """The database fabricui ships: the core directory, then the ``hwdb/`` directory of each
    built-in plugin (their link generations, NICs and switches), in plugin load order."""
    return [default_hwdb_dir(), *(path for _, path in builtin_plugin_dirs())]


def _check_record(
    doc: YamlDocument,
    path: tuple,
    kind: str,
    record: Any,
    families: Collection[str] | None,
    builtin: bool = True,
) -> None:
    """Range and vocabulary checks that types alone do not catch."""
    for key in ("id", "name"):
        check_one_line(doc, (*path, key), getattr(record, key, None), f"the {key}")
    if not str(record.source).strip():
        raise HwdbError(f"{doc.where((*path, 'source'))}: {kind}: 'source' must not be empty")
    if kind == "links":
        _check_family(doc, path, record.family, families, builtin)
        check_choice(doc, (*path, "tier"), record.tier, TIERS)
        check_range(doc, (*path, "efficiency"), record.efficiency, 0.01, 1.0, "efficiency")
        if record.layout is not None:
            check_choice(doc, (*path, "layout"), record.layout, SWITCHED_LAYOUTS)
    if kind == "nics":
        check_range(
            doc, (*path, "nccl_latency_us"), record.nccl_latency_us, 0.0, 1e4, "latency [us]"
        )
        if record.efficiency is not None:
            check_range(doc, (*path, "efficiency"), record.efficiency, 0.01, 1.0, "efficiency")
    if kind == "models" and record.mlp:
        check_choice(doc, (*path, "mlp"), record.mlp, MLP_KINDS)
    if kind == "models":
        wrong = shape_problem(record)
        if wrong is not None:
            key, why = wrong
            where = (*path, key)
            raise HwdbError(f"{doc.where(where)}: {format_path(where)}: {why}")
    if kind == "frameworks":
        check_choice(doc, (*path, "attention"), record.attention, ATTENTION_IMPLS)
        check_choice(doc, (*path, "passes"), record.passes, PASS_STYLES)
        check_choice(doc, (*path, "loss"), record.loss, LOSS_STYLES)
        check_choice(doc, (*path, "fp8_recipe"), record.fp8_recipe, FP8_RECIPES)
        check_choice(doc, (*path, "moe_dispatch"), record.moe_dispatch, MOE_DISPATCH)
        check_choice(doc, (*path, "cp_attention"), record.cp_attention, CP_ATTENTION)
        check_choice(doc, (*path, "tp_userbuffers"), record.tp_userbuffers, TP_USERBUFFERS)
        check_choice(doc, (*path, "selective"), record.selective, SELECTIVE_KINDS)
        check_range(
            doc, (*path, "compute_efficiency"), record.compute_efficiency, 0.1, 1.0, "efficiency"
        )
        if record.years and (len(record.years) != 2 or record.years[0] > record.years[1]):
            raise HwdbError(
                f"{doc.where((*path, 'years'))}: frameworks.{record.id}.years: expected "
                f"[first, last] (got {list(record.years)})"
            )
        for name in ("grad_reduce_bytes", "fsdp_reduce_bytes", "grad_bytes"):
            check_range(doc, (*path, name), getattr(record, name), 1.0, 4.0, "bytes per element")
        check_range(
            doc,
            (*path, "optimizer_bytes"),
            record.optimizer_bytes,
            0.0,
            16.0,
            "bytes per parameter",
        )
    if kind == "kernels":
        check_choice(doc, (*path, "impl"), record.impl, ATTENTION_IMPLS)
        for name in ("fwd_efficiency", "bwd_efficiency"):
            check_range(doc, (*path, name), getattr(record, name), 0.01, 1.0, "efficiency")
        for name in ("fwd_head_dim_scale", "bwd_head_dim_scale"):
            _check_head_dim_scale(doc, (*path, name), getattr(record, name))
        for name in ("window_fwd_efficiency", "window_bwd_efficiency"):
            for window, value in getattr(record, name).items():
                where = (*path, name, str(window))
                check_range(doc, where, window, *WINDOW_RANGE, "window")
                check_range(doc, where, value, 0.01, 1.0, "efficiency")
        if bool(record.window_fwd_efficiency) != bool(record.window_bwd_efficiency):
            raise HwdbError(
                f"{doc.where(path)}: {format_path(path)}: window_fwd_efficiency and "
                "window_bwd_efficiency go together (give both or neither)"
            )
        _check_fp8_attention(doc, path, record)
    if kind == "gpus":
        for name in (
            "gemm_efficiency",
            "attention_efficiency",
            "hbm_efficiency",
            "fp8_gemm_efficiency",
        ):
            value = getattr(record, name)
            if value is not None:
                check_range(doc, (*path, name), value, 0.01, 1.0, "efficiency")
        if record.sms is not None:
            check_range(doc, (*path, "sms"), record.sms, 1, 100000, "SM count")
    for protocol in getattr(record, "protocols", ()):
        if protocol not in PROTOCOLS:
            raise HwdbError(
                f"{doc.where((*path, 'protocols'))}: {kind}.{record.id}.protocols: unknown "
                f"protocol {protocol!r} (one of {', '.join(PROTOCOLS)})"
            )
    for key in getattr(record, "sources", {}):
        if not hasattr(record, key):
            raise HwdbError(
                f"{doc.where((*path, 'sources', key))}: sources.{key}: no such field in {kind}"
            )


#: Sliding windows a kernel's window table may list [tokens].
WINDOW_RANGE = (1, 1 << 20)
#: Head dimensions a kernel's head-dimension table may list, and the factors it may give.
HEAD_DIM_RANGE = (8, 1024)
HEAD_DIM_SCALE_RANGE = (0.1, 2.0)


def _check_head_dim_scale(doc: YamlDocument, path: tuple, table: dict[int, float]) -> None:
    """A kernel's head-dimension table: head dims and factors in range, and, when it lists
    any, the head dim its efficiencies are quoted at (``ATTENTION_REF_HEAD_DIM``) at 1.0."""
    for head_dim, factor in table.items():
        where = (*path, str(head_dim))
        check_range(doc, where, head_dim, *HEAD_DIM_RANGE, "head dim")
        check_range(doc, where, factor, *HEAD_DIM_SCALE_RANGE, "head-dim factor")
    if table and table.get(ATTENTION_REF_HEAD_DIM) != 1.0:
        raise HwdbError(
            f"{doc.where(path)}: {format_path(path)}: must hold {ATTENTION_REF_HEAD_DIM}: 1.0 "
            f"(the head dim the efficiencies are quoted at; got "
            f"{table.get(ATTENTION_REF_HEAD_DIM, 'none')})"
        )


#: FP8 attention throughput over 16-bit a kernel record may state.
FP8_ATTENTION_SCALE_RANGE = (0.1, 4.0)


def _check_fp8_attention(doc: YamlDocument, path: tuple, record: KernelSpec) -> None:
    """A kernel's FP8 attention tables: known formats, head dims or windows and factors in
    range."""
    for name, keys, what in (
        ("fp8_fwd_scale", HEAD_DIM_RANGE, "head dim"),
        ("fp8_bwd_scale", HEAD_DIM_RANGE, "head dim"),
        ("fp8_window_fwd_scale", WINDOW_RANGE, "window"),
        ("fp8_window_bwd_scale", WINDOW_RANGE, "window"),
    ):
        for form, table in getattr(record, name).items():
            check_choice(doc, (*path, name, form), form, FP8_ATTENTION_FORMATS)
            for key, factor in table.items():
                where = (*path, name, form, str(key))
                check_range(doc, where, key, *keys, what)
                check_range(doc, where, factor, *FP8_ATTENTION_SCALE_RANGE, "FP8 factor")


#: A link family a vendor's or user's directory may declare in YAML alone (a scale-up link
#: with no code): lowercase letters, digits and dashes.
_NEW_FAMILY = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


def _check_family(
    doc: YamlDocument,
    path: tuple,
    family: str,
    families: Collection[str] | None,
    builtin: bool = True,
) -> None:
    """A link's family must be declared by a loaded plugin (or be a core family); outside
    the database fabricui ships, a directory may name a new one (a vendor's link in YAML)."""
    if not family.strip():
        raise HwdbError(f"{doc.where((*path, 'family'))}: {path[0]}[{path[1]}].family: empty")
    if families is None or family in families:
        return
    if not builtin and _NEW_FAMILY.match(family):
        return
    raise HwdbError(
        f"{doc.where((*path, 'family'))}: {path[0]}[{path[1]}].family: {family!r} is not "
        f"declared by any loaded plugin (declared: {', '.join(sorted(families))}; a plugin "
        "declares its families with register_interconnects)"
    )


def _load_record_file(
    doc: YamlDocument,
    catalog: Catalog,
    seen: dict[tuple[str, str], str],
    families: Collection[str] | None,
    builtin: bool = True,
) -> None:
    if doc.data is None:
        return
    if not isinstance(doc.data, dict):
        raise HwdbError(
            f"{doc.where(())}: expected a mapping with any of {', '.join(RECORD_KINDS)}"
        )
    for kind, items in doc.data.items():
        if kind not in RECORD_KINDS:
            raise HwdbError(
                f"{doc.where((kind,))}: {kind}: unknown section (known: {', '.join(RECORD_KINDS)})"
            )
        if not isinstance(items, list):
            raise HwdbError(f"{doc.where((kind,))}: {kind}: expected a list of records")
        table = catalog.table(kind)
        for index, item in enumerate(items):
            path = (kind, index)
            # One of RECORD_KINDS' classes: every one has an ``id`` (read below).
            record: Any = convert_record(doc, path, RECORD_KINDS[kind], item)
            _check_record(doc, path, kind, record, families, builtin)
            key = (kind, record.id)
            if key in seen:
                raise HwdbError(
                    f"{doc.where((*path, 'id'))}: {kind}[{index}].id: duplicate id "
                    f"{record.id!r} (first defined at {seen[key]})"
                )
            seen[key] = doc.where(path)
            table[record.id] = record
            catalog.origins[key] = doc.where(path)


def _missing(catalog: Catalog, kind: str, ref: str | None) -> str | None:
    """Why a referenced id is absent: the withheld reason, "" when it is simply unknown,
    None when it is present (or no reference)."""
    if ref is None or ref in catalog.table(kind):
        return None
    return catalog.withheld.get((kind, ref), "")


def _withhold(catalog: Catalog, kind: str, record_id: str, ref: str, reason: str) -> None:
    """Move a record whose required reference is withheld out of its table: it needs that
    plugin too (an H100 needs the pcie plugin's pcie5, a NIC its link's plugin)."""
    del catalog.table(kind)[record_id]
    catalog.withheld[(kind, record_id)] = f"needs link {ref}, which {reason}"


def _check_references(catalog: Catalog) -> None:
    """Every id a record names must exist (GPU links, NIC links ...), or be withheld: a
    required one (a GPU's host link, a NIC's links) then withholds the record as well, an
    optional one (a GPU's scale-up link) is checked where a topology uses it."""
    for gpu in list(catalog.gpus.values()):
        where = catalog.origins[("gpus", gpu.id)]
        for attr in ("pcie", "scaleup_link"):
            ref = getattr(gpu, attr)
            reason = _missing(catalog, "links", ref)
            if reason is None:
                continue
            if not reason:
                msg = unknown_id_message("link", ref, catalog.links)
                raise HwdbError(f"{where}: gpus.{gpu.id}.{attr}: {msg}")
            if attr == "pcie":
                _withhold(catalog, "gpus", gpu.id, ref, reason)
                break
    for nic in list(catalog.nics.values()):
        where = catalog.origins.get(("nics", nic.id), "nics")
        withheld = False
        for attr in ("link", "pcie"):
            ref = getattr(nic, attr)
            reason = _missing(catalog, "links", ref)
            if reason is None:
                continue
            if not reason:
                msg = unknown_id_message("link", ref, catalog.links)
                raise HwdbError(f"{where}: nics.{nic.id}.{attr}: {msg}")
            _withhold(catalog, "nics", nic.id, ref, reason)
            withheld = True
            break
        if withheld:
            continue
        if nic.attach not in NIC_ATTACH:
            raise HwdbError(
                f"{where}: nics.{nic.id}.attach: must be one of {', '.join(NIC_ATTACH)} "
                f"(got {nic.attach!r})"
            )
        for protocol in nic.protocols:
            if protocol not in PROTOCOLS:
                raise HwdbError(
                    f"{where}: nics.{nic.id}.protocols: unknown protocol {protocol!r} "
                    f"(one of {', '.join(PROTOCOLS)})"
                )
        for gpu_id in nic.gpus:
            if _missing(catalog, "gpus", gpu_id) == "":
                msg = unknown_id_message("GPU", gpu_id, catalog.gpus)
                raise HwdbError(f"{where}: nics.{nic.id}.gpus: {msg}")


def load_catalog(
    dirs: Iterable[Path] | None = None,
    extra_links: dict[str, tuple[LinkGeneration, str]] | None = None,
    families: Collection[str] | None = None,
    withheld: Iterable[Withheld] = (),
    record_files: Iterable[Path] = (),
) -> Catalog:
    """Load the hardware database.

    Args:
        dirs: Database directories, later ones adding or overriding records of earlier
            ones. Default: the database fabricui ships (``shipped_hwdb_dirs``: the core
            directory and every built-in plugin's records, whatever plugins are disabled;
            ``fabricui.services.session.load_catalog_with_plugins`` follows the plugin host).
        extra_links: Link generations registered by plugins: id -> (record, origin). They
            do not override records of the same id read from YAML.
        families: Link families a YAML link record may name (the core's and those the
            loaded plugins declare); None accepts any.
        withheld: hwdb directories of plugins that are not loaded. Their records stay out,
            but a record or topology that names one of their ids is withheld too (or, for a
            user's topology file, refused) with a message naming the plugin to enable.
        record_files: Single record files (``links:``, ``gpus:`` ...) read after ``dirs``,
            as one more directory would be (``hwdb validate FILE``).

    Returns:
        The validated catalog. Built-in topologies that need a withheld record are listed
        in ``unavailable`` instead of ``topologies``.

    Raises:
        HwdbError: A file is malformed, a record invalid, or an id duplicated in one
            directory or unknown.
    """
    catalog = Catalog()
    directories = list(dirs) if dirs is not None else shipped_hwdb_dirs()
    topology_docs: list[YamlDocument] = []
    shipped = {d.resolve() for d in shipped_hwdb_dirs()}
    for directory in directories:
        if not directory.is_dir():
            if directory.exists():
                raise HwdbError(
                    f"{directory}: a file, not a directory: a hardware database (--hwdb) is a "
                    "directory of *.yaml records (check one file with `fabricui hwdb validate "
                    f"{directory}`)"
                )
            raise HwdbError(f"{directory}: hardware database directory not found")
        seen: dict[tuple[str, str], str] = {}
        builtin = directory.resolve() in shipped
        for path in sorted(directory.glob("*.yaml")):
            _load_record_file(read_yaml(path), catalog, seen, families, builtin)
        # Held until the records are in; their lines are needed only for a message.
        topology_docs += [
            read_yaml(p, keep_nodes=False)
            for p in sorted((directory / "topologies").glob("*.yaml"))
        ]
    files_seen: dict[tuple[str, str], str] = {}
    for path in record_files:
        _load_record_file(read_yaml(path), catalog, files_seen, families, builtin=False)
    for link_id, (link, origin) in (extra_links or {}).items():
        if link_id not in catalog.links:
            catalog.links[link_id] = link
            catalog.origins[("links", link_id)] = origin
    catalog.withheld = {
        key: reason
        for key, reason in withheld_ids(list(withheld)).items()
        if key[1] not in catalog.table(key[0])
    }
    _check_references(catalog)
    for doc in topology_docs:
        default_id = Path(doc.origin).stem
        try:
            spec = parse_topology(doc, catalog, default_id=default_id)
        except NeedsPluginError as exc:
            data = doc.data if isinstance(doc.data, dict) else {}
            topology_id = str(data.get("id") or default_id)
            catalog.unavailable[topology_id] = f"topology {topology_id}: {exc.message}"
            catalog.topologies.pop(topology_id, None)
            continue
        # A later directory's topology overrides a built-in one of the same id.
        catalog.topologies[spec.id] = spec
        catalog.origins[("topologies", spec.id)] = doc.origin
        catalog.unavailable.pop(spec.id, None)
    return catalog
