"""What the hardware database holds: the topologies, records by kind, one record with its
origin, and checking a database directory or a topology file."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError, EngineError, HwdbError
from fabricui.hwdb import default_hwdb_dir
from fabricui.hwdb.catalog import KINDS, is_record_document, unknown_id_message
from fabricui.hwdb.directory import comes_from, nothing_to_read
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import read_yaml
from fabricui.services.session import (
    admit_fabric,
    build_fabric_with_plugins,
    load_catalog_with_plugins,
)
from fabricui.services.session import load_catalog as load_service_catalog

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import TopologySpec

#: Record kinds counted by ``validate``, in the order they are listed.
COUNTED_KINDS = ("links", "gpus", "nics", "switches", "topologies", "models")


def topology_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """One row per topology, by id: ``id``, ``description``, ``gpu``, ``nodes``,
    ``gpus_per_node``, ``gpus``."""
    return [
        {
            "id": s.id,
            "description": s.description,
            "gpu": s.gpu,
            "nodes": s.nodes,
            "gpus_per_node": s.gpus_per_node,
            "gpus": s.n_gpus,
        }
        for s in sorted(catalog.topologies.values(), key=lambda s: s.id)
    ]


def record_kinds(kind: str | None) -> list[str]:
    """The record kinds ``kind`` names (all of them for None).

    Raises:
        ConfigError: An unknown kind (names the nearest ones).
    """
    if kind is None:
        return list(KINDS)
    if kind not in KINDS:
        raise ConfigError(unknown_id_message("record kind", kind, KINDS))
    return [kind]


def record_json(record: Any) -> dict[str, Any]:
    """A record's fields as JSON-ready values (tuples become lists; no origin)."""
    data = dataclasses.asdict(record)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in data.items() if k != "origin"}


#: Ids a text summary lists per kind before ``(+N more)``.
_LISTED = 6


@dataclass(frozen=True)
class Validation:
    """What ``hwdb validate`` checked."""

    target: Path
    """The directory or file checked."""
    counts: dict[str, int] | None = None
    """Records per kind in the database checked (with the target's records), when a
    directory or a record file was checked."""
    spec: TopologySpec | None = None
    """The topology, when a topology file was checked."""
    unavailable: int = 0
    """Topologies that need plugins that are not loaded."""
    holds: dict[str, int] | None = None
    """Records per kind the target itself holds (a directory or a record file); None for
    the built-in database."""
    replaces: dict[str, dict[str, list[str]]] = dataclasses.field(default_factory=dict)
    """Records of the target that replace one of the same id: where the replaced one came
    from (``built-in`` or a directory before it) -> kind -> ids."""

    def to_json(self) -> dict[str, Any]:
        """The ``hwdb validate --json`` object: ``ok``, ``target``, and ``topology`` (id,
        nodes, gpus_per_node, gpu) or ``counts`` (plus ``holds`` and ``replaces`` for a
        directory or record file)."""
        out: dict[str, Any] = {"ok": True, "target": str(self.target)}
        if self.spec is not None:
            s = self.spec
            out["topology"] = {
                "id": s.id,
                "nodes": s.nodes,
                "gpus_per_node": s.gpus_per_node,
                "gpu": s.gpu,
            }
        else:
            out["counts"] = dict(self.counts or {})
            out["unavailable_topologies"] = self.unavailable
            if self.holds is not None:
                out["holds"] = dict(self.holds)
                out["replaces"] = self.replaces
        return out

    def summary(self) -> str:
        """``ok: hwdb: 27 links, ...``, ``ok: DIR: holds 1 links; replaces built-in links:
        nvlink4; database: 36 links, ...`` or ``ok: FILE: topology ID, 2 x 8 h100-sxm``."""
        if self.spec is not None:
            s = self.spec
            return f"ok: {self.target}: topology {s.id}, {s.nodes} x {s.gpus_per_node} {s.gpu}"
        counts = ", ".join(_count(n, kind) for kind, n in (self.counts or {}).items())
        note = (
            f"; {self.unavailable} topologies need plugins that are not loaded"
            if self.unavailable
            else ""
        )
        if self.holds is None:
            return f"ok: {self.target}: {counts}{note}"
        holds = ", ".join(_count(n, kind) for kind, n in self.holds.items())
        replaced = "".join(
            f"; replaces {_from(source)}{kind}: {_listed(ids)}"
            for source, kinds in self.replaces.items()
            for kind, ids in kinds.items()
        )
        return f"ok: {self.target}: holds {holds}{replaced}; database: {counts}{note}"


def _from(source: str) -> str:
    return "built-in " if source == "built-in" else f"{source}'s "


def _listed(ids: list[str]) -> str:
    more = f" (+{len(ids) - _LISTED} more)" if len(ids) > _LISTED else ""
    return ", ".join(ids[:_LISTED]) + more


def validate(
    target: Path | None, hwdb_dirs: tuple[Path, ...] = (), catalog: Catalog | None = None
) -> Validation:
    """Check the built-in database (plus ``hwdb_dirs`` and a directory ``target``), one
    record file (``links:``, ``gpus:`` ... on top of that database), or one topology file
    against ``catalog``: a topology file passes only when its fabric builds, so every
    command that takes it accepts it.

    A directory or record file passes only when it holds records: one that holds none (a
    mistyped path, YAML in a subdirectory, an empty file) is an error. Its records are
    counted, and the ids it replaces are listed with where they came from.

    Raises:
        FabricError: The first problem, with file, line, key and value; or a directory or
            record file that holds no records.
    """
    if target is None:
        checked = load_catalog_with_plugins(hwdb_dirs)
        return Validation(
            default_hwdb_dir(), counts=_counts(checked), unavailable=len(checked.unavailable)
        )
    if target.is_dir():
        problem = nothing_to_read(target)
        if problem is not None:
            raise HwdbError(f"{target}: holds no records: {problem}")
        # The plugins' records are part of the database a directory is checked against.
        base = load_catalog_with_plugins(hwdb_dirs)
        checked = load_catalog_with_plugins([*hwdb_dirs, target])
        return _layer(target, base, checked, hwdb_dirs)

    doc = read_yaml(target)
    if is_record_document(doc.data):
        base = load_catalog_with_plugins(hwdb_dirs)
        checked = load_catalog_with_plugins(hwdb_dirs, record_files=[target])
        return _layer(target, base, checked, hwdb_dirs)
    catalog = catalog or load_service_catalog()
    spec = parse_topology(doc, catalog, default_id=target.stem)
    try:
        admit_fabric(spec, catalog)
        build_fabric_with_plugins(spec, catalog)
    except EngineError as exc:  # the builder names the spec; say which file it came from
        raise ConfigError(f"{target}: {exc}") from exc
    return Validation(target, spec=spec)


def _counts(catalog: Catalog) -> dict[str, int]:
    return {kind: len(catalog.table(kind)) for kind in COUNTED_KINDS}


def _layer(
    target: Path, base: Catalog, checked: Catalog, hwdb_dirs: tuple[Path, ...]
) -> Validation:
    """What ``target`` (a directory or record file) brings to ``base``, giving ``checked``.

    Raises:
        HwdbError: It holds no records.
    """
    holds: dict[str, int] = {}
    replaces: dict[str, dict[str, list[str]]] = {}
    for (kind, record_id), origin in sorted(checked.origins.items()):
        if not comes_from(origin, target):
            continue
        holds[kind] = holds.get(kind, 0) + 1
        before = base.origins.get((kind, record_id))
        if before is not None:
            source = next((str(d) for d in hwdb_dirs if comes_from(before, d)), "built-in")
            replaces.setdefault(source, {}).setdefault(kind, []).append(record_id)
    if not holds:
        what = "its *.yaml files are empty or hold" if target.is_dir() else "it holds"
        raise HwdbError(f"{target}: holds no records: {what} empty lists")
    order = [kind for kind in KINDS if kind in holds]
    return Validation(
        target,
        counts=_counts(checked),
        unavailable=len(checked.unavailable),
        holds={kind: holds[kind] for kind in order},
        replaces=replaces,
    )


def _count(n: int, kind: str) -> str:
    """``1 link``, ``2 links``, ``1 switch``, ``1 topology``: a count of records of
    ``kind`` (the database's plural kind names)."""
    if n != 1:
        return f"{n} {kind}"
    if kind.endswith("ies"):
        return f"1 {kind[:-3]}y"
    if kind.endswith(("ches", "shes", "sses", "xes")):
        return f"1 {kind[:-2]}"
    return f"1 {kind[:-1]}" if kind.endswith("s") else f"1 {kind}"
