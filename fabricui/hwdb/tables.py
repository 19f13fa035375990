"""The catalog's tables: every hardware record by kind and id, where each came from and
what is withheld (a disabled plugin's records). No loading here (``catalog`` loads), so a
module that only reads records needs nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fabricui.errors import ConfigError, HwdbError, unknown_id_message
from fabricui.hwdb.plugin_dirs import NeedsPluginError
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
from fabricui.vocabulary import HWDB_KINDS, spelling_key
from fabricui.vocabulary import record_kind_singular as singular


def spelled_id(text: str, ids: Iterable[str]) -> str | None:
    """The one id ``text`` spells the way people write model names: any case, with or
    without dashes, dots or underscores, after a Hugging Face owner (``meta-llama/
    Llama-3-70B`` and ``llama3_70b`` are ``llama3-70b``); None when none or several do."""

    wanted = spelling_key(text)
    found = [i for i in ids if spelling_key(i) == wanted] if wanted else []
    return found[0] if len(found) == 1 else None


#: Every kind ``fabricui hwdb list`` knows, in display order.
KINDS = HWDB_KINDS


@dataclass(frozen=True)
class AppliedCalibration:
    """What a catalog keeps of the calibration overlay applied to it."""

    origin: str
    """The overlay's file name."""
    topology: str | None
    """Topology it was fitted on (None: it does not say)."""
    links: tuple[str, ...]
    """Link generations it calibrates."""


@dataclass
class Catalog:
    """All hardware records by kind and id, plus the file each came from."""

    links: dict[str, LinkGeneration] = field(default_factory=dict)
    gpus: dict[str, GpuSpec] = field(default_factory=dict)
    nics: dict[str, NicSpec] = field(default_factory=dict)
    switches: dict[str, SwitchSpec] = field(default_factory=dict)
    models: dict[str, ModelShape] = field(default_factory=dict)
    frameworks: dict[str, FrameworkSpec] = field(default_factory=dict)
    kernels: dict[str, KernelSpec] = field(default_factory=dict)
    topologies: dict[str, TopologySpec] = field(default_factory=dict)
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, id) -> ``file:line`` the record was read from."""
    withheld: dict[tuple[str, str], str] = field(default_factory=dict)
    """(kind, id) -> why it is missing, as the phrase after ``<kind> <id>`` in a message:
    ``comes from plugin nvlink (disabled by FABRICUI_DISABLE_PLUGINS)``, or for a record
    that needs such an id, ``needs link pcie5, which comes from plugin pcie (...)``."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Topology id -> one-line reason, for topologies that need a withheld record."""
    calibration: AppliedCalibration | None = None
    """The calibration overlay applied (``--calibration FILE``), if any: kept so that a
    fabric built from the catalog can say when it was fitted on another topology."""

    def model(self, model_id: str) -> ModelShape:
        """A model by its id or a spelling of it (``spelled_id``: ``Llama-3-70B``).

        Raises:
            ConfigError: No model is spelled so (names the nearest ids).
        """
        spelled = self.spelled("models", model_id)
        if spelled is None:
            raise ConfigError(unknown_id_message("model", model_id, self.models))
        return self.models[spelled]

    def spelled(self, kind: str, text: str) -> str | None:
        """The id of ``kind`` that ``text`` is or spells (``spelled_id``), else None."""
        table = self.table(kind)
        return text if text in table else spelled_id(text, table)

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
            reason = self.withheld.get((kind, record_id))
            if reason is not None:
                raise NeedsPluginError(f"{singular(kind)} {record_id} {reason}")
            raise HwdbError(unknown_id_message(singular(kind), record_id, table))
        return table[record_id]

    def find(self, record_id: str) -> tuple[str, Any]:
        """Look an id, or the one id of any kind it spells (``spelled_id``: ``H100-SXM``,
        ``Llama-3-70B``), up in every kind; returns (kind, record)."""
        for kind in KINDS:
            table = self.table(kind)
            if record_id in table:
                return kind, table[record_id]
        for (kind, withheld_id), reason in self.withheld.items():
            if withheld_id == record_id:
                raise NeedsPluginError(f"{singular(kind)} {record_id} {reason}")
        every = [i for kind in KINDS for i in self.table(kind)]
        spelled = spelled_id(record_id, every)
        if spelled is not None:
            return self.find(spelled)
        raise HwdbError(unknown_id_message("hwdb id", record_id, every))
