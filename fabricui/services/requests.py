"""Typed requests the service layer answers: what the CLI's options and the TUI's choices
become before anything is loaded, so that both ask the same question the same way."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.bounds import NIC_PORT_GBPS, checked
from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY, GROUP_ALIASES, GROUPS

if TYPE_CHECKING:
    from fabricui.model import TopologySpec

#: Most scale-up links a what-if may give a GPU or a GPU pair.
MAX_SCALEUP_LINKS = 1024
#: Group names a request accepts (``vocabulary.GROUPS`` and their other names).
GROUP_CHOICES = (*GROUPS, *GROUP_ALIASES)
#: A group of the first N GPUs (global ranks 0..N-1, as ``--gpus N`` picks them): ``gpus:N``.
FIRST_GPUS = "gpus:"


def first_gpus(group: str) -> int | None:
    """N of a ``gpus:N`` group; None for a named group.

    Raises:
        ConfigError: ``gpus:`` without a whole number of at least two GPUs after it (a
            group of one GPU has no collective).
    """
    if not group.startswith(FIRST_GPUS):
        return None
    text = group[len(FIRST_GPUS) :]
    if not text.isdecimal() or len(text) > 9 or int(text) < 2:
        raise ConfigError(
            f"group {group!r}: write gpus:N, N a whole number of GPUs, at least 2 (gpus:16)"
        )
    return int(text)


def check_group(group: str) -> str:
    """``group`` when it is one: a name of ``GROUP_CHOICES`` or ``gpus:N``.

    Raises:
        ConfigError: Another name, or a malformed ``gpus:N``.
    """
    if group in GROUP_CHOICES or first_gpus(group) is not None:
        return group
    raise ConfigError(
        f"unknown group {group!r} (one of {', '.join(GROUPS)}, or gpus:N for the first N GPUs)"
    )


@dataclass(frozen=True)
class CatalogRequest:
    """Which hardware database: the built-in one plus plugins, user directories and a
    calibration overlay."""

    hwdb_dirs: tuple[Path, ...] = ()
    """User ``--hwdb DIR`` directories, applied after the built-in and plugin records."""
    calibration: Path | None = None
    """A ``fabricui calibrate`` overlay whose link figures replace the database's."""


@dataclass(frozen=True)
class WhatIf:
    """ "What if the links were different": changes to a topology spec's link figures."""

    nic_gbps: float | None = None
    """Port rate of every NIC [Gb/s] (``net.gbps``)."""
    scaleup_links: int | None = None
    """Scale-up links per GPU (NVSwitch) or per GPU pair (mesh)."""

    def label(self) -> str:
        """``NIC 200 Gb/s, 9 scale-up links``."""
        parts = []
        if self.nic_gbps is not None:
            parts.append(f"NIC {self.nic_gbps:g} Gb/s")
        if self.scaleup_links is not None:
            parts.append(f"{self.scaleup_links} scale-up links")
        return ", ".join(parts)

    def apply(self, spec: TopologySpec) -> TopologySpec:
        """The spec with these overrides.

        Raises:
            ConfigError: A knob the topology does not have (no network, no scale-up links),
                or a value out of range.
        """
        if self.nic_gbps is not None:
            if spec.net is None:
                raise ConfigError(f"topology {spec.id} has no network: no NIC rate to set")
            gbps = checked(self.nic_gbps, NIC_PORT_GBPS, "what-if")
            spec = dataclasses.replace(spec, net=dataclasses.replace(spec.net, gbps=gbps))
        if self.scaleup_links is not None:
            if not 1 <= self.scaleup_links <= MAX_SCALEUP_LINKS:
                raise ConfigError(
                    f"scale-up links must be within 1..{MAX_SCALEUP_LINKS} "
                    f"(got {self.scaleup_links})"
                )
            intra = spec.intra
            if intra.fabric == "nvswitch":
                intra = dataclasses.replace(intra, links_per_gpu=self.scaleup_links)
            elif intra.fabric == "mesh":
                intra = dataclasses.replace(intra, links_per_pair=self.scaleup_links)
            else:
                raise ConfigError(
                    f"topology {spec.id} has no scale-up links ({intra.fabric} inside a node)"
                )
            spec = dataclasses.replace(spec, intra=intra)
        return spec


@dataclass(frozen=True)
class TopologyRequest:
    """A topology to load: an id or a YAML path, an optional node count and link changes."""

    topology: str = DEFAULT_TOPOLOGY
    """Built-in topology id or a topology YAML file path."""
    nodes: int | None = None
    """``--nodes N``: rescale the topology."""
    what_if: WhatIf | None = None
    """Link changes applied to the spec before it is built."""
    health: tuple[str, ...] = ()
    """Health files (``--health``): state and counter outputs applied to the built fabric,
    which is then priced as it is (down links removed, degraded ones at their trained rate)."""

    def label(self) -> str:
        """``h100-ib-cluster --nodes 128`` style label."""
        text = self.topology if self.nodes is None else f"{self.topology} --nodes {self.nodes}"
        return text + (" (as it is)" if self.health else "")


@dataclass(frozen=True)
class LaunchRequest:
    """What the explorer opens on: shared by ``fabricui``/``explore``, ``snapshot`` and the
    app itself."""

    topology: TopologyRequest | None = None
    """The topology shown first; None: none named (``fabricui`` alone), so the explorer
    reopens the last session's, the built-in default the first time."""
    view: str = "topology"
    """The view shown first."""
    src: str | None = None
    """Source GPU shown first."""
    dst: str | None = None
    """Destination GPU shown first."""
    message_size: int | None = None
    """Message size of the path panel [bytes]."""
    options: tuple[tuple[str, str], ...] = ()
    """View options taken when each view first draws: ``op``, ``group``, ``sizes``
    (collectives), ``model``, ``layout``, ``search`` (strategies)."""
    ascii: bool | None = None
    """Draw with plain ASCII (None: when the terminal's locale is not UTF-8)."""

    @property
    def topology_or_default(self) -> TopologyRequest:
        """The topology named, else the built-in default."""
        return self.topology or TopologyRequest()

    def is_default(self) -> bool:
        """Nothing asked beyond the defaults (the explorer may start before loading); the
        default topology named with ``-t`` is no more than that."""
        return self.topology in (None, TopologyRequest()) and self == LaunchRequest(
            self.topology, view=self.view, message_size=self.message_size, ascii=self.ascii
        )


#: Formats ``fabricui snapshot`` writes: a Markdown report, the screen as SVG, as text.
SNAPSHOT_FORMATS = ("md", "svg", "txt")


@dataclass(frozen=True)
class SnapshotTarget:
    """One view to write in one format."""

    view: str
    """View id."""
    format: str
    """``md``, ``svg`` or ``txt``."""
    path: Path | None
    """The file, or None for standard output."""

    @property
    def image_path(self) -> Path | None:
        """The fabric's diagram written beside a Markdown report and linked from it
        (``report.md`` -> ``report-fabric.svg``); None for the plugins view, which is not
        about a fabric."""
        if self.format != "md" or self.path is None or self.view == "plugins":
            return None
        return self.path.with_name(f"{self.path.stem}-fabric.svg")
