"""Typed requests the service layer answers: what the CLI's options and the TUI's choices
become before anything is loaded, so that both ask the same question the same way."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.model import TopologySpec

#: Fastest NIC port a what-if may ask for [Gb/s] (well past any port built).
MAX_NIC_GBPS = 100_000.0
#: Most scale-up links a what-if may give a GPU or a GPU pair.
MAX_SCALEUP_LINKS = 1024
#: Groups of GPUs a collective can run on: every GPU, the GPUs of host (node) 0 (``node``
#: is the same), those of scale-up domain 0 (the hosts sharing an NVLink switch, e.g. an
#: NVL72 rack), or GPU 0 of every node.
GROUPS = ("all", "host", "node", "domain", "per-node")


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
            if not 0 < self.nic_gbps <= MAX_NIC_GBPS:
                raise ConfigError(
                    f"NIC rate must be within 0..{MAX_NIC_GBPS:g} Gb/s (got {self.nic_gbps:g})"
                )
            spec = dataclasses.replace(spec, net=dataclasses.replace(spec.net, gbps=self.nic_gbps))
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

    def label(self) -> str:
        """``h100-ib-cluster --nodes 128`` style label."""
        return self.topology if self.nodes is None else f"{self.topology} --nodes {self.nodes}"


@dataclass(frozen=True)
class PathRequest:
    """``fabricui path``: the route between two GPUs."""

    topology: TopologyRequest
    """Where."""
    src: str
    """Source GPU id (``n0.g3`` or a global rank)."""
    dst: str
    """Destination GPU id."""
    size_bytes: int | None = None
    """Message size for the transfer time [bytes]."""
    hosts: str | None = None
    """A job's hosts on an imported cluster (Slurm hostlist); ``src``/``dst`` are then job
    ranks or ``HOST.gK`` (default ``$SLURM_JOB_NODELIST`` on such a cluster)."""


@dataclass(frozen=True)
class CollectiveRequest:
    """``fabricui collective``: one operation over a group, per message size."""

    topology: TopologyRequest
    """Where."""
    op: str
    """Collective name, as nccl-tests names it."""
    size_bytes: tuple[int, ...]
    """Message sizes, nccl-tests convention [bytes]."""
    group: str = "all"
    """Named group (``GROUPS``)."""
    gpus: int | None = None
    """The first N GPUs instead of a named group."""
    algo: str = "auto"
    """``auto`` (the fastest per size) or an algorithm name."""
    hosts: str | None = None
    """A job's hosts on an imported cluster (Slurm hostlist): the group is the job's GPUs,
    compared with the same count packed (default ``$SLURM_JOB_NODELIST`` on such a
    cluster)."""


@dataclass(frozen=True)
class TrafficRequest:
    """``fabricui traffic``: max-min fair rates of a traffic pattern."""

    topology: TopologyRequest
    """Where."""
    pattern: str = "all_to_all"
    """Pattern name (``vocabulary.PATTERNS``)."""
    gpus: int | None = None
    """The first N GPUs (default: all)."""
    seed: int = 0
    """Seed of ``random-pairs``."""
    top: int = 10
    """How many of the busiest links to report."""
    hosts: str | None = None
    """A job's hosts on an imported cluster (Slurm hostlist): the pattern runs among the
    job's GPUs."""


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
class ServeRequest:
    """``fabricui serve``: the explorer in a browser, one explorer process per browser tab."""

    launch: LaunchRequest = field(default_factory=LaunchRequest)
    """What each explorer opens on (checked once before the server starts)."""
    catalog: CatalogRequest = field(default_factory=CatalogRequest)
    """The hardware database the explorers read."""
    explore_args: tuple[str, ...] = ("explore",)
    """The ``fabricui`` arguments each browser session runs (``explore`` and its options)."""
    host: str = "127.0.0.1"
    """Address the web server binds to (loopback unless the user widens it)."""
    port: int = 8000
    """TCP port of the web server."""
    public_url: str | None = None
    """Base URL the browser reaches the server at (a proxy or SSH tunnel); None: from
    ``host`` and ``port``."""


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
        """The SVG written beside a Markdown report (and linked from it), if any."""
        if self.format != "md" or self.path is None:
            return None
        return self.path.with_suffix(".svg")


@dataclass(frozen=True)
class SnapshotRequest:
    """``fabricui snapshot``: views rendered off-screen and written to files or stdout."""

    launch: LaunchRequest
    """The explorer's state to render (its ``view`` is ignored: see ``targets``)."""
    targets: tuple[SnapshotTarget, ...]
    """What to write."""
    directory: Path | None = None
    """The directory to create first (``--all``), if any."""
    force: bool = False
    """Replace existing files."""
    terminal_size: tuple[int, int] = (120, 40)
    """Terminal (columns, rows) to render at."""
