"""Place a Slurm job on a cluster: which GPUs its hosts hold, what fabric it spans.

``$SLURM_JOB_NODELIST`` (or ``--hosts``) says where a job landed, in Slurm hostlist syntax;
an imported cluster spec (``fabricui import ibnetdiscover ... -o``) says which fabric node
and which GPUs each host is (a generated topology's hosts are ``n0``, ``n1`` ..., as its
GPUs are named). ``place_job`` joins them: the job's global ranks in hostlist order, and
how much of the fabric it spans (leaf switches its NICs are cabled to, spine switches above
those leaves, NVLink domains / Slurm blocks, and the highest tier its traffic must climb).
A host the cluster does not know is a one-line error naming the nearest known hosts.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.routing import Router
from fabricui.errors import ConfigError
from fabricui.fabric.fabric import NETWORK_SWITCHES, DeviceKind, Fabric
from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import compress, expand, natural_key
from fabricui.services.requests import check_group, first_gpus

#: Environment variable Slurm sets to the job's hosts.
NODELIST_ENV = "SLURM_JOB_NODELIST"
#: Most unknown hosts named in one error line.
_SHOW_UNKNOWN = 3


@dataclass(frozen=True)
class JobPlacement:
    """A job's hosts on a fabric and what they span."""

    topology: str
    """The fabric's topology id."""
    hosts: tuple[str, ...]
    """The job's hosts, in hostlist order (each once)."""
    ranks: npt.NDArray[np.int64]
    """(n_job_gpus,) global ranks of the hosts' GPUs: job rank i is ``ranks[i]``."""
    gpus_per_host: int
    """GPUs each host holds."""
    nodes: tuple[int, ...]
    """Scale-up domains the job uses: fabric nodes, or the NVLink domains the nodes share
    (``intra.hosts_per_domain``)."""
    blocks: tuple[str, ...]
    """Names of the blocks / NVLink domains spanned (from the cluster spec; ``n<node>`` or
    ``d<domain>`` when it names none)."""
    leaves: tuple[str, ...]
    """Leaf switches the job's GPU NICs are cabled to."""
    spines: tuple[str, ...]
    """Spine switches cabled to those leaves."""
    top_tier: str
    """Highest tier the job's traffic must climb: ``node`` (one node, no network),
    ``leaf`` (one leaf, or one a rail where PXN moves cross-rail traffic over NVLink),
    ``spine`` (a spine reaches every leaf of the job) or ``core``;
    ``node`` also when every host is in one NVLink domain. On a torus ``torus``; on a
    dragonfly ``router`` (one router), ``group`` (its local links) or ``global``."""

    def rank_of(self, text: str) -> int:
        """The global rank of a job GPU given as a job rank (``5``) or ``HOST.gK``.

        Raises:
            ConfigError: Not a job rank or GPU of the job's hosts.
        """
        raw = str(text).strip()
        if raw.isdigit():
            index = int(raw)
            if index < len(self.ranks):
                return int(self.ranks[index])
            raise ConfigError(
                f"job rank {index} out of range: the job has {len(self.ranks)} GPUs "
                f"(ranks 0..{len(self.ranks) - 1}, or HOST.gK such as {self.hosts[0]}.g0)"
            )
        host, sep, gpu = raw.rpartition(".g")
        if sep and host in self.hosts and gpu.isdigit() and int(gpu) < self.gpus_per_host:
            return int(self.ranks[self.hosts.index(host) * self.gpus_per_host + int(gpu)])
        raise ConfigError(
            f"{raw!r} is no GPU of the job: give a job rank 0..{len(self.ranks) - 1} or "
            f"HOST.gK with K < {self.gpus_per_host} (e.g. {self.hosts[0]}.g0)"
        )

    def to_json(self) -> dict[str, Any]:
        """Hosts (as a hostlist too), ranks and what the job spans."""
        return {
            "topology": self.topology,
            "hostlist": compress(self.hosts),
            "hosts": list(self.hosts),
            "gpus_per_host": self.gpus_per_host,
            "ranks": [int(r) for r in self.ranks],
            "nodes": len(self.nodes),
            "blocks": list(self.blocks),
            "leaves": list(self.leaves),
            "spines": list(self.spines),
            "top_tier": self.top_tier,
        }

    def summary(self) -> str:
        """One line: hosts, GPUs, and the leaves, spines and blocks spanned."""
        return (
            f"job on {len(self.hosts)} host(s) {compress(self.hosts)}: {len(self.ranks)} GPUs, "
            f"{len(self.leaves)} leaf, {len(self.spines)} spine switch(es), "
            f"{len(self.blocks)} block(s); traffic climbs to the {self.top_tier}"
        )


def expand_hosts(text: str) -> list[str]:
    """The hosts of a Slurm hostlist (``node[001-064,100]``), each once, in order.

    Raises:
        ConfigError: A malformed or oversized hostlist.
    """
    try:
        return list(dict.fromkeys(expand(text)))
    except ParseError as exc:
        raise ConfigError(exc.message) from None


def hostlist(names: Iterable[str]) -> str:
    """Host names as one Slurm hostlist (``node[001-003]``)."""
    return compress(names)


def _nearest(name: str, known: list[str], count: int = 3) -> list[str]:
    """Known hosts closest to ``name``: same stem and width by number, else by spelling."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem) :]
    if digits and len(digits) <= 9:
        target = int(digits)
        same = [
            k
            for k in known
            if k.startswith(stem)
            and k[len(stem) :].isdigit()
            and len(k[len(stem) :]) == len(digits)
            and len(k) - len(stem) <= 9
        ]
        if same:
            same.sort(key=lambda k: (abs(int(k[len(stem) :]) - target), k))
            return same[:count]
    return difflib.get_close_matches(name, known, n=count, cutoff=0.4)


def unknown_hosts(unknown: list[str], known: list[str]) -> str:
    """``a, b, c and 2 more (nearest to a: ...)``: the hosts an option names that a fabric
    lacks, as every option taking host names lists them."""
    near = _nearest(unknown[0], known)
    more = len(unknown) - _SHOW_UNKNOWN
    shown = ", ".join(unknown[:_SHOW_UNKNOWN]) + (f" and {more} more" if more > 0 else "")
    return shown + (f" (nearest to {unknown[0]}: {', '.join(near)})" if near else "")


def _switch_of_nics(fabric: Fabric) -> dict[int, int]:
    """NIC device -> the network switch its cable goes to."""
    kinds = fabric.dev_kind
    src, dst = fabric.link_src, fabric.link_dst
    mask = (kinds[src] == DeviceKind.NIC) & np.isin(kinds[dst], NETWORK_SWITCHES)
    out: dict[int, int] = {}
    for nic, switch in zip(src[mask].tolist(), dst[mask].tolist()):
        out.setdefault(int(nic), int(switch))
    return out


def place_job(
    fabric: Fabric, hosts: str | None = None, env: Mapping[str, str] | None = None
) -> JobPlacement:
    """Place a job given by a Slurm hostlist on a fabric (``Fabric.host_layout`` names its
    hosts).

    Args:
        fabric: The fabric.
        hosts: Slurm hostlist (``node[001-064,100]``); default ``$SLURM_JOB_NODELIST``.
        env: Environment to read the default from (default ``os.environ``).

    Returns:
        The job's ranks and what it spans.

    Raises:
        ConfigError: No hostlist, a malformed or oversized one, or unknown hosts (the
            nearest known names in the message).
    """
    environ = os.environ if env is None else env
    source = "--hosts"
    if hosts is None:
        hosts = environ.get(NODELIST_ENV)
        source = f"${NODELIST_ENV}"
        if not hosts:
            raise ConfigError(f"no --hosts given and ${NODELIST_ENV} is not set")
    cluster = fabric.spec.cluster
    names, per_node = fabric.host_layout
    try:
        wanted = list(dict.fromkeys(expand(hosts)))
    except ParseError as exc:
        raise ConfigError(f"{source}: {exc.message}") from None
    index = {name: i for i, name in enumerate(names) if name is not None}
    unknown = [name for name in wanted if name not in index]
    if unknown:
        shown = unknown_hosts(unknown, list(index))
        raise ConfigError(f"{source}: {len(unknown)} host(s) not in {fabric.spec.id}: {shown}")
    g = fabric.gpus_per_node
    per_host = g // per_node
    host_ids = np.asarray([index[name] for name in wanted], dtype=np.int64)
    node, slot = host_ids // per_node, host_ids % per_node
    first = node * g + slot * per_host
    ranks = (first[:, None] + np.arange(per_host, dtype=np.int64)[None, :]).reshape(-1)
    domain = fabric.hosts_per_domain
    nodes = tuple(sorted({int(n) // domain for n in node}))
    if cluster is not None and cluster.blocks:
        blocks = tuple(dict.fromkeys(cluster.blocks[int(n)] for n in sorted(set(node.tolist()))))
    else:
        blocks = tuple(f"d{n}" if domain > 1 else f"n{n}" for n in nodes)
    switch_of = _switch_of_nics(fabric)
    leaf_devs = sorted(
        {switch_of[nic] for nic in fabric.gpu_nic[ranks].tolist() if nic >= 0 and nic in switch_of}
    )
    spine_devs = _spines_above(fabric, leaf_devs)
    # With PXN (a rail-optimized fat-tree), cross-rail traffic moves over NVLink first: a job
    # with one leaf per rail stays below the leaves, as `place` counts it.
    per_rail: dict[int, set[int]] = {}
    for nic in fabric.gpu_nic[ranks].tolist():
        if nic >= 0 and nic in switch_of:
            per_rail.setdefault(int(fabric.dev_index[nic]), set()).add(switch_of[nic])
    rails_apart = Router.for_fabric(fabric).proxy is not None and all(
        len(leaves) == 1 for leaves in per_rail.values()
    )
    top = _top_tier(fabric, nodes, leaf_devs, rails_apart)
    return JobPlacement(
        topology=fabric.spec.id,
        hosts=tuple(wanted),
        ranks=ranks,
        gpus_per_host=per_host,
        nodes=nodes,
        blocks=blocks,
        leaves=tuple(sorted((fabric.device_name(d) for d in leaf_devs), key=natural_key)),
        spines=tuple(sorted((fabric.device_name(d) for d in spine_devs), key=natural_key)),
        top_tier=top,
    )


def placeable_ranks(fabric: Fabric) -> npt.NDArray[np.int64]:
    """Global ranks of GPUs on real hosts: all of them, but for an imported cluster whose
    partial NVLink domains have empty slots (modelled trays without a host, never placed
    on and without network cables) only those of named hosts."""
    cluster = fabric.spec.cluster
    every = np.arange(fabric.n_gpus, dtype=np.int64)
    if cluster is None or all(h.name is not None for h in cluster.hosts):
        return every
    per_host = fabric.gpus_per_node // cluster.hosts_per_node
    named = np.asarray([h.name is not None for h in cluster.hosts], dtype=bool)
    return every[np.repeat(named, per_host)]


def _neighbours(fabric: Fabric, devices: list[int], kind: DeviceKind) -> dict[int, set[int]]:
    """For each device in ``devices``: its neighbours of ``kind``."""
    wanted = np.zeros(fabric.n_devices, dtype=bool)
    wanted[devices] = True
    src, dst = fabric.link_src, fabric.link_dst
    mask = wanted[src] & (fabric.dev_kind[dst] == kind)
    out: dict[int, set[int]] = {d: set() for d in devices}
    for a, b in zip(src[mask].tolist(), dst[mask].tolist()):
        out[int(a)].add(int(b))
    return out


def _spines_above(fabric: Fabric, leaves: list[int]) -> list[int]:
    """Spine switches cabled to any of ``leaves``."""
    if not leaves:
        return []
    above = _neighbours(fabric, leaves, DeviceKind.SPINE)
    return sorted(set().union(*above.values()))


def _top_tier(
    fabric: Fabric, nodes: tuple[int, ...], leaves: list[int], one_leaf_per_rail: bool = False
) -> str:
    """``node``, ``leaf``, ``spine`` or ``core``; ``torus`` on a torus; ``router``, ``group``
    or ``global`` on a dragonfly (see ``JobPlacement.top_tier``)."""
    if len(nodes) <= 1:
        return "node"
    if fabric.torus is not None:
        return "torus"
    if fabric.dragonfly is not None:  # its routers are the leaves: one, one group, or more
        if len(leaves) <= 1:
            return "router"
        per_group = fabric.dragonfly.routers_per_group
        groups = {int(fabric.dev_index[leaf]) // per_group for leaf in leaves}
        return "group" if len(groups) == 1 else "global"
    if len(leaves) <= 1 or one_leaf_per_rail:
        return "leaf"
    above = _neighbours(fabric, leaves, DeviceKind.SPINE)
    shared = set.intersection(*above.values()) if above else set()
    if shared:
        return "spine"
    has_core = bool((fabric.dev_kind == DeviceKind.CORE).any())
    return "core" if has_core else "spine"


def group_ranks(
    fabric: Fabric, group: str = "all", gpus: int | None = None
) -> npt.NDArray[np.int64]:
    """Global ranks of a named group, or of the first ``gpus`` GPUs.

    Args:
        fabric: The fabric.
        group: ``all``, ``node`` (the GPUs of node 0), ``per-node`` (GPU 0 of every node),
            ``domain``, or ``gpus:N`` (the first N GPUs).
        gpus: The first N GPUs instead of a named group.

    Raises:
        ConfigError: ``gpus`` out of range, or an unknown group.
    """
    # An imported cluster's empty NVLink-domain slots hold no host: never in a group.
    placeable = placeable_ranks(fabric)
    first = first_gpus(group) if gpus is None else None
    if gpus is not None:
        if not 1 <= gpus <= placeable.shape[0]:
            raise ConfigError(f"--gpus must be within 1..{placeable.shape[0]} (got {gpus})")
        return placeable[:gpus]
    if first is not None:
        if first > placeable.shape[0]:
            raise ConfigError(f"group {group}: {fabric.spec.id} has {placeable.shape[0]} GPUs")
        return placeable[:first]
    g = fabric.gpus_per_node
    if group in ("node", "host"):
        return np.arange(g, dtype=np.int64)
    if group == "domain":
        return np.arange(min(fabric.gpus_per_domain, fabric.n_gpus), dtype=np.int64)
    if group == "per-node":
        return placeable[placeable % g == 0]
    check_group(group)  # every other name is "all"; an unknown one says which there are
    return placeable


def job_of(fabric: Fabric, hosts: str | None, from_environment: bool = True) -> JobPlacement | None:
    """The job placed on ``fabric`` by ``hosts`` (or, with ``from_environment``,
    ``$SLURM_JOB_NODELIST`` when the fabric is an imported cluster with host names), else
    None.

    Raises:
        ConfigError: Unknown hosts (named with the nearest known ones).
    """
    cluster = fabric.spec.cluster
    listed = from_environment and bool(os.environ.get(NODELIST_ENV))
    if hosts or (cluster is not None and cluster.hosts and listed):
        return place_job(fabric, hosts)
    return None
