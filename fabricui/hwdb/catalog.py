"""The catalog: every record of the hardware database, loaded from YAML and cross-checked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricui.errors import HwdbError, unknown_id_message
from fabricui.hwdb.schema import check_choice, check_range, convert_record
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import YamlDocument, read_yaml
from fabricui.model import GpuSpec, LinkGeneration, ModelShape, NicSpec, SwitchSpec, TopologySpec
from fabricui.model.records import LINK_FAMILIES, MLP_KINDS, TIERS
from fabricui.vocabulary import PROTOCOLS

#: Top-level list keys of a record file and the record each holds.
RECORD_KINDS: dict[str, type] = {
    "links": LinkGeneration,
    "gpus": GpuSpec,
    "nics": NicSpec,
    "switches": SwitchSpec,
    "models": ModelShape,
}

#: Every kind ``fabricui hwdb list`` knows, in display order.
KINDS = ("links", "gpus", "nics", "switches", "topologies", "models")


def default_hwdb_dir() -> Path:
    """The built-in database: shipped inside the wheel, or the checkout's ``hwdb/``."""
    packaged = Path(__file__).resolve().parent.parent / "_hwdb"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "hwdb"


@dataclass
class Catalog:
    """All hardware records by kind and id, plus the file each came from."""

    links: dict[str, LinkGeneration] = field(default_factory=dict)
    gpus: dict[str, GpuSpec] = field(default_factory=dict)
    nics: dict[str, NicSpec] = field(default_factory=dict)
    switches: dict[str, SwitchSpec] = field(default_factory=dict)
    models: dict[str, ModelShape] = field(default_factory=dict)
    topologies: dict[str, TopologySpec] = field(default_factory=dict)
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, id) -> ``file:line`` the record was read from."""

    def table(self, kind: str) -> dict[str, Any]:
        """The records of one kind (``links``, ``gpus`` ... ``topologies``)."""
        if kind not in KINDS:
            raise HwdbError(unknown_id_message("record kind", kind, KINDS))
        table: dict[str, Any] = getattr(self, kind)
        return table

    def get(self, kind: str, record_id: str) -> Any:
        """One record, or an error naming the nearest valid ids."""
        table = self.table(kind)
        if record_id not in table:
            raise HwdbError(unknown_id_message(kind.rstrip("s"), record_id, table))
        return table[record_id]

    def find(self, record_id: str) -> tuple[str, Any]:
        """Look an id up in every kind; returns (kind, record)."""
        for kind in KINDS:
            table = self.table(kind)
            if record_id in table:
                return kind, table[record_id]
        every = [i for kind in KINDS for i in self.table(kind)]
        raise HwdbError(unknown_id_message("hwdb id", record_id, every))


def _check_record(doc: YamlDocument, path: tuple, kind: str, record: Any) -> None:
    """Range and vocabulary checks that types alone do not catch."""
    if not str(record.source).strip():
        raise HwdbError(f"{doc.where((*path, 'source'))}: {kind}: 'source' must not be empty")
    if kind == "links":
        check_choice(doc, (*path, "family"), record.family, LINK_FAMILIES)
        check_choice(doc, (*path, "tier"), record.tier, TIERS)
        check_range(doc, (*path, "efficiency"), record.efficiency, 0.01, 1.0, "efficiency")
    if kind == "models" and record.mlp:
        check_choice(doc, (*path, "mlp"), record.mlp, MLP_KINDS)
    if kind == "gpus":
        for name in ("gemm_efficiency", "attention_efficiency", "hbm_efficiency"):
            value = getattr(record, name)
            if value is not None:
                check_range(doc, (*path, name), value, 0.01, 1.0, "efficiency")
        if record.sms is not None:
            check_range(doc, (*path, "sms"), record.sms, 1, 100000, "SM count")
    for key in getattr(record, "sources", {}):
        if not hasattr(record, key):
            raise HwdbError(
                f"{doc.where((*path, 'sources', key))}: sources.{key}: no such field in {kind}"
            )


def _load_record_file(
    doc: YamlDocument, catalog: Catalog, seen: dict[tuple[str, str], str]
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
            record = convert_record(doc, path, RECORD_KINDS[kind], item)
            _check_record(doc, path, kind, record)
            key = (kind, record.id)
            if key in seen:
                raise HwdbError(
                    f"{doc.where((*path, 'id'))}: {kind}[{index}].id: duplicate id "
                    f"{record.id!r} (first defined at {seen[key]})"
                )
            seen[key] = doc.where(path)
            table[record.id] = record
            catalog.origins[key] = doc.where(path)


def _check_references(catalog: Catalog) -> None:
    """Every id a record names must exist (GPU links, NIC links ...)."""
    for gpu in catalog.gpus.values():
        for attr in ("pcie", "scaleup_link"):
            ref = getattr(gpu, attr)
            if ref is not None and ref not in catalog.links:
                where = catalog.origins[("gpus", gpu.id)]
                msg = unknown_id_message("link", ref, catalog.links)
                raise HwdbError(f"{where}: gpus.{gpu.id}.{attr}: {msg}")
    for nic in catalog.nics.values():
        for attr in ("link", "pcie"):
            ref = getattr(nic, attr)
            if ref not in catalog.links:
                where = catalog.origins[("nics", nic.id)]
                msg = unknown_id_message("link", ref, catalog.links)
                raise HwdbError(f"{where}: nics.{nic.id}.{attr}: {msg}")
        where = catalog.origins.get(("nics", nic.id), "nics")
        for protocol in nic.protocols:
            if protocol not in PROTOCOLS:
                raise HwdbError(
                    f"{where}: nics.{nic.id}.protocols: unknown protocol {protocol!r} "
                    f"(one of {', '.join(PROTOCOLS)})"
                )
        for gpu_id in nic.gpus:
            if gpu_id not in catalog.gpus:
                msg = unknown_id_message("GPU", gpu_id, catalog.gpus)
                raise HwdbError(f"{where}: nics.{nic.id}.gpus: {msg}")


def load_catalog(
    dirs: Iterable[Path] | None = None,
    extra_links: dict[str, tuple[LinkGeneration, str]] | None = None,
) -> Catalog:
    """Load the hardware database.

    Args:
        dirs: Database directories, later ones adding or overriding records of earlier
            ones. Default: the built-in database only.
        extra_links: Link generations registered by plugins: id -> (record, origin). They
            do not override records of the same id read from YAML.

    Returns:
        The validated catalog.

    Raises:
        HwdbError: A file is malformed, a record invalid, or an id duplicated in one
            directory or unknown.
    """
    catalog = Catalog()
    directories = list(dirs) if dirs is not None else [default_hwdb_dir()]
    topology_docs: list[YamlDocument] = []
    for directory in directories:
        if not directory.is_dir():
            raise HwdbError(f"{directory}: hardware database directory not found")
        seen: dict[tuple[str, str], str] = {}
        for path in sorted(directory.glob("*.yaml")):
            _load_record_file(read_yaml(path), catalog, seen)
        topology_docs += [read_yaml(p) for p in sorted((directory / "topologies").glob("*.yaml"))]
    for link_id, (link, origin) in (extra_links or {}).items():
        if link_id not in catalog.links:
            catalog.links[link_id] = link
            catalog.origins[("links", link_id)] = origin
    _check_references(catalog)
    for doc in topology_docs:
        # A later directory's topology overrides a built-in one of the same id.
        spec = parse_topology(doc, catalog, default_id=Path(doc.origin).stem)
        catalog.topologies[spec.id] = spec
        catalog.origins[("topologies", spec.id)] = doc.origin
    return catalog
