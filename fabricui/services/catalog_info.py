"""What the hardware database holds: the topologies, records by kind, one record with its
origin, and checking a database directory or a topology file."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError, EngineError
from fabricui.hwdb import default_hwdb_dir
from fabricui.hwdb.catalog import KINDS, unknown_id_message
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


@dataclass(frozen=True)
class Validation:
    """What ``hwdb validate`` checked."""

    target: Path
    """The directory or file checked."""
    counts: dict[str, int] | None = None
    """Records per kind, when a database directory was checked."""
    spec: TopologySpec | None = None
    """The topology, when a topology file was checked."""
    unavailable: int = 0
    """Topologies that need plugins that are not loaded."""

    def to_json(self) -> dict[str, Any]:
        """The ``hwdb validate --json`` object: ``ok``, ``target``, and ``counts`` or
        ``topology`` (id, nodes, gpus_per_node, gpu)."""
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
        return out

    def summary(self) -> str:
        """``ok: hwdb: 27 links, ...`` or ``ok: FILE: topology ID, 2 x 8 h100-sxm``."""
        if self.spec is not None:
            s = self.spec
            return f"ok: {self.target}: topology {s.id}, {s.nodes} x {s.gpus_per_node} {s.gpu}"
        counts = ", ".join(f"{n} {kind}" for kind, n in (self.counts or {}).items())
        note = (
            f"; {self.unavailable} topologies need plugins that are not loaded"
            if self.unavailable
            else ""
        )
        return f"ok: {self.target}: {counts}{note}"


def validate(
    target: Path | None, hwdb_dirs: tuple[Path, ...] = (), catalog: Catalog | None = None
) -> Validation:
    """Check the built-in database (plus ``hwdb_dirs`` and a directory ``target``), or one
    topology file against ``catalog``: a file passes only when its fabric builds, so every
    command that takes it accepts it.

    Raises:
        FabricError: The first problem, with file, line, key and value.
    """
    if target is None or target.is_dir():
        # The plugins' records are part of the database a directory is checked against.
        extra = [*hwdb_dirs] + ([target] if target is not None else [])
        checked = load_catalog_with_plugins(extra)
        counts = {kind: len(checked.table(kind)) for kind in COUNTED_KINDS}
        return Validation(
            target or default_hwdb_dir(), counts=counts, unavailable=len(checked.unavailable)
        )

    catalog = catalog or load_service_catalog()
    spec = parse_topology(read_yaml(target), catalog, default_id=target.stem)
    try:
        admit_fabric(spec, catalog)
        build_fabric_with_plugins(spec, catalog)
    except EngineError as exc:  # the builder names the spec; say which file it came from
        raise ConfigError(f"{target}: {exc}") from exc
    return Validation(target, spec=spec)
