"""Typed requests the service layer answers: what the CLI's options and the TUI's choices
become before anything is loaded, so that both ask the same question the same way."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.bounds import NIC_PORT_GBPS, checked
from fabricui.errors import ConfigError
from fabricui.vocabulary import (
    DEFAULT_TOPOLOGY,
    DP_STRATEGIES,
    GROUP_ALIASES,
    GROUPS,
    RECOMPUTE_MODES,
)

if TYPE_CHECKING:
    from fabricui.model import TopologySpec

#: Most scale-up links a what-if may give a GPU or a GPU pair.
MAX_SCALEUP_LINKS = 1024
#: Group names a request accepts (``vocabulary.GROUPS`` and their other names).
GROUP_CHOICES = (*GROUPS, *GROUP_ALIASES)


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

    topology: TopologyRequest = field(default_factory=TopologyRequest)
    """The topology shown first."""
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

    def is_default(self) -> bool:
        """Nothing asked beyond the defaults (the explorer may start before loading)."""
        return self == LaunchRequest(
            view=self.view, message_size=self.message_size, ascii=self.ascii
        )


@dataclass(frozen=True)
class LayoutChoice:
    """What the strategies view asks the engine to plan (the ``fabricui plan`` options)."""

    tp: int = 1
    """Tensor-parallel degree."""
    pp: int = 1
    """Pipeline stages."""
    ep: int = 1
    """Expert-parallel degree."""
    dp_strategy: str = "ddp"
    """How the data-parallel dimension communicates (``DP_STRATEGIES``)."""
    cp: int = 1
    """Context-parallel degree."""
    recompute: str | None = None
    """Activation recomputation (None: the default, none)."""

    def label(self) -> str:
        """``tp8 pp1 ep1 ddp`` (``cp2`` and the recompute mode when set)."""
        text = f"tp{self.tp} pp{self.pp} ep{self.ep} {self.dp_strategy}"
        if self.cp > 1:
            text = f"tp{self.tp} cp{self.cp} pp{self.pp} ep{self.ep} {self.dp_strategy}"
        return text + (f" {self.recompute}" if self.recompute else "")


#: A degree word of a layout: ``tp8``, ``pp=2``.
_LAYOUT_WORD = re.compile(r"^(tp|pp|ep|cp)=?(\d+)$")


def parse_layout(text: str, current: LayoutChoice) -> LayoutChoice:
    """``tp8 pp2 ep1 cp2 fsdp selective`` (any order, ``tp=8`` too) -> a layout choice.

    Raises:
        ConfigError: An unknown word or a degree below 1.
    """
    values: dict[str, object] = {}
    for word in text.lower().replace(",", " ").split():
        match = _LAYOUT_WORD.match(word)
        if match:
            degree = int(match.group(2))
            if degree < 1:
                raise ConfigError(f"{match.group(1)} must be at least 1 (got {degree})")
            values[match.group(1)] = degree
        elif word in DP_STRATEGIES:
            values["dp_strategy"] = word
        elif word in RECOMPUTE_MODES:
            values["recompute"] = word
        else:
            raise ConfigError(
                f"unknown word {word!r}: use tpN ppN epN cpN, one of "
                f"{', '.join(DP_STRATEGIES)} and a recompute mode ({', '.join(RECOMPUTE_MODES)})"
            )
    return dataclasses.replace(current, **values)  # type: ignore[arg-type]
