"""Typed requests of the one-shot commands (path, collective, traffic, serve, snapshot).

Apart from ``requests.py`` (catalog, topology, what-if, launch), which the explorer needs
before its first frame: each frozen dataclass costs about a millisecond to create at import,
and the explorer never asks these questions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fabricui.services.requests import (
    CatalogRequest,
    LaunchRequest,
    SnapshotTarget,
    TopologyRequest,
)


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
    group: str | None = None
    """Named group (``GROUPS``; None: all, or the job ``$SLURM_JOB_NODELIST`` names on an
    imported cluster)."""
    gpus: int | None = None
    """The first N GPUs instead of a named group."""
    algo: str = "auto"
    """``auto`` (NCCL's own pick per size, the fastest beside it) or an algorithm name
    (forced, as ``NCCL_ALGO`` would)."""
    hosts: str | None = None
    """A job's hosts on an imported cluster (Slurm hostlist): the group is the job's GPUs,
    compared with the same count packed (default ``$SLURM_JOB_NODELIST`` on such a
    cluster)."""
    nccl_version: str | None = None
    """NCCL release whose tuner is modelled (``2.21``; default: the newest modelled)."""
    nccl_env: tuple[tuple[str, str], ...] = ()
    """NCCL environment of the job (``NCCL_ALGO``, ``NCCL_PROTO``, channel bounds ...)."""
    single_process: bool = False
    """One process drives every GPU of a node (nccl-tests ``-g N``), not one per GPU."""
    gpus_per_thread: int | None = None
    """With ``single_process``, the GPUs each thread drives when fewer than a node's."""


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
    allowed_origins: tuple[str, ...] = ()
    """Origins (``scheme://host[:port]``) of other pages allowed to use the server, besides
    the one it serves."""
    token: bool = True
    """Whether every request must carry the per-run token (always off loopback)."""
    max_sessions: int = 4
    """Most explorers running at once (one per browser tab)."""
    max_terminal: tuple[int, int] = (500, 200)
    """Largest terminal a session runs at (columns, rows); larger requests are clamped."""


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
