"""Calibration overlays: fitted link figures (efficiency, latency) that replace the
database's, written by ``fabricui calibrate`` and read by ``--calibration FILE``::

    topology: dgx-h100-pod          # what it was fitted on (warned when applied elsewhere)
    fitted_on: [allreduce.txt]
    links:
      ib-ndr: {efficiency: 0.23, lat_us: 0.4}

``apply_overlay`` replaces those figures of the catalog's link records, so every command
that loads the catalog through the service layer predicts with them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from fabricui.errors import HwdbError, unknown_key_message
from fabricui.files import write_text
from fabricui.hwdb.catalog import unknown_id_message
from fabricui.hwdb.schema import show
from fabricui.hwdb.tables import AppliedCalibration
from fabricui.hwdb.yamlfile import YamlDocument, format_path, read_yaml

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog

#: Fields of a link entry in an overlay and their allowed range.
OVERLAY_FIELDS = {"efficiency": (0.01, 1.0), "lat_us": (0.0, 1000.0)}
#: Top-level keys of an overlay.
OVERLAY_KEYS = ("topology", "fitted_on", "links", "constants")


@dataclass(frozen=True)
class LinkCalibration:
    """Fitted figures of one link generation (None: keep the database's)."""

    efficiency: float | None = None
    """Achievable fraction of the line rate (0.01-1)."""
    lat_us: float | None = None
    """Per-hop latency [us]."""


@dataclass(frozen=True)
class CalibrationOverlay:
    """A calibration overlay: link figures that replace the database's."""

    links: dict[str, LinkCalibration]
    """Link generation id -> figures."""
    topology: str | None = None
    """Topology the figures were fitted on (applied to another, a warning says so)."""
    fitted_on: tuple[str, ...] = ()
    """Result files the fit used (informative)."""
    origin: str = "<overlay>"
    """File name for messages."""
    where: dict[str, str] = field(default_factory=dict)
    """Link id -> ``file:line`` of its entry."""


# --- overlay -------------------------------------------------------------------------------


def _fail(doc: YamlDocument, path: tuple, problem: str) -> HwdbError:
    return HwdbError(f"{doc.where(path)}: {format_path(path)}: {problem}")


def _scalar(value: Any) -> bool:
    """True for text or a number (what ``str()`` turns into a short name)."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def parse_overlay(doc: YamlDocument) -> CalibrationOverlay:
    """Check an overlay document and convert it.

    Args:
        doc: The parsed YAML.

    Returns:
        The overlay.

    Raises:
        HwdbError: Unknown keys, a missing ``links`` mapping, a figure that is not a number
            or out of range, or model constants (not supported yet), naming file and line.
    """
    data = doc.data
    if not isinstance(data, dict):
        raise HwdbError(
            f"{doc.where(())}: expected a calibration overlay mapping with 'links' "
            f"(got {type(data).__name__})"
        )
    for key in data:
        if key not in OVERLAY_KEYS:
            raise _fail(doc, (key,), unknown_key_message(str(key), OVERLAY_KEYS))
    constants = data.get("constants")
    if constants not in (None, {}):
        raise _fail(
            doc,
            ("constants",),
            "model constants cannot be overridden by an overlay yet; remove the key "
            "(only links are applied)",
        )
    links = data.get("links")
    if not isinstance(links, dict) or not links:
        raise _fail(doc, ("links",), "expected a mapping of link generation -> figures")
    out: dict[str, LinkCalibration] = {}
    where: dict[str, str] = {}
    for link_id, figures in links.items():
        path = ("links", link_id)
        if not isinstance(figures, dict) or not figures:
            raise _fail(doc, path, "expected a mapping with efficiency and/or lat_us")
        values: dict[str, float] = {}
        for name, value in figures.items():
            if name not in OVERLAY_FIELDS:
                raise _fail(
                    doc, (*path, name), f"unknown field (known: {', '.join(OVERLAY_FIELDS)})"
                )
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _fail(doc, (*path, name), f"expected a number (got {show(value)})")
            low, high = OVERLAY_FIELDS[name]
            if not (low <= value <= high) or (isinstance(value, float) and math.isnan(value)):
                raise _fail(doc, (*path, name), f"{show(value)} is outside {low}..{high}")
            values[name] = float(value)
        out[str(link_id)] = LinkCalibration(**values)
        where[str(link_id)] = doc.where(path)
    fitted_on = data.get("fitted_on") or []
    if not isinstance(fitted_on, list) or not all(_scalar(f) for f in fitted_on):
        raise _fail(doc, ("fitted_on",), "expected a list of file names")
    topology = data.get("topology")
    if topology is not None and not _scalar(topology):
        raise _fail(doc, ("topology",), f"expected a topology id (got {show(topology)})")
    return CalibrationOverlay(
        links=out,
        topology=None if topology is None else str(topology),
        fitted_on=tuple(str(f) for f in fitted_on),
        origin=doc.origin,
        where=where,
    )


def read_overlay(path: Path | str) -> CalibrationOverlay:
    """Read a calibration overlay file (``--calibration FILE``).

    Raises:
        HwdbError: Missing or malformed file (file:line).
    """
    return parse_overlay(read_yaml(Path(path)))


def apply_overlay(catalog: Catalog, overlay: CalibrationOverlay) -> Catalog:
    """A catalog whose link records carry the overlay's figures (a fitted efficiency also
    replaces the adapters' own, ``NicSpec.efficiency``, on that link).

    Args:
        catalog: The ``Catalog``.
        overlay: The overlay.

    Returns:
        A new catalog (other record tables shared with ``catalog``); ``origins`` of changed
        links name the overlay.

    Raises:
        HwdbError: The overlay names a link generation the catalog does not have.
    """
    links = dict(catalog.links)
    nics = dict(catalog.nics)
    origins = dict(catalog.origins)
    for link_id, figures in overlay.links.items():
        if link_id not in links:
            raise HwdbError(
                f"{overlay.where.get(link_id, overlay.origin)}: links.{link_id}: "
                + unknown_id_message("link", link_id, links)
            )
        changes = {k: v for k, v in dataclasses.asdict(figures).items() if v is not None}
        links[link_id] = dataclasses.replace(links[link_id], **changes)
        if figures.efficiency is not None:  # the fitted figure is what this network carries
            for nic in catalog.nics.values():
                if nic.link == link_id and nic.efficiency is not None:
                    nics[nic.id] = dataclasses.replace(nic, efficiency=None)
        key = ("links", link_id)
        origins[key] = f"{origins.get(key, '?')}, calibrated by {overlay.where[link_id]}"
    applied = AppliedCalibration(overlay.origin, overlay.topology, tuple(overlay.links))
    return dataclasses.replace(
        catalog, links=links, nics=nics, origins=origins, calibration=applied
    )


def overlay_mismatch(
    overlay: AppliedCalibration, topology: str, generations: Iterable[str]
) -> str | None:
    """Why an overlay may not describe the topology it is applied to, in one line, or None:
    it was fitted on another topology (its figures are that cluster's), or none of the links
    it calibrates occur in the fabric (it changes nothing).

    Args:
        overlay: The overlay applied (``Catalog.calibration``).
        topology: Id of the topology in use.
        generations: Link generation ids of its fabric.

    Returns:
        The warning line (without a ``warning:`` prefix), or None.
    """
    links = ", ".join(overlay.links)
    used = set(generations)
    if not any(link in used for link in overlay.links):
        return (
            f"{overlay.origin}: calibrates {links}, which {topology} does not use: "
            "the overlay changes nothing here"
        )
    if overlay.topology is not None and overlay.topology != topology:
        return (
            f"{overlay.origin}: fitted on {overlay.topology}, applied to {topology}: its "
            f"{links} figures are {overlay.topology}'s and may not hold here"
        )
    return None


def overlay_yaml(overlay: CalibrationOverlay, comments: Sequence[str] = ()) -> str:
    """The overlay as YAML text, with ``comments`` as ``#`` lines on top.

    Args:
        overlay: The overlay.
        comments: Lines to put first (without ``#``).

    Returns:
        YAML text that ``parse_overlay`` reads back to the same figures.
    """
    data: dict[str, Any] = {}
    if overlay.topology is not None:
        data["topology"] = overlay.topology
    data["fitted_on"] = list(overlay.fitted_on)
    data["links"] = {
        link_id: {k: round(v, 6) for k, v in dataclasses.asdict(f).items() if v is not None}
        for link_id, f in overlay.links.items()
    }
    # Each line break of a comment starts another ``#`` line: a file name holding a newline
    # must not end the comment and put its rest into the YAML.
    head = "".join(f"# {part}\n" for line in comments for part in line.splitlines() or [""])
    body: str = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    return head + body


def write_overlay(path: Path, text: str, force: bool = False) -> None:
    """Write an overlay atomically (a temporary file renamed over the target).

    Args:
        path: Target file.
        text: The YAML text.
        force: Replace an existing file.

    Raises:
        ConfigError: The file exists and ``force`` is False, or it cannot be written.
    """
    write_text(path, text, force=force)
