"""GPU ids: ``n<node>.g<gpu>`` (0-based), ``d<domain>.g<gpu>`` or a bare global rank; errors
name valid ranges.

A node is a host (server, compute tray). Where several hosts share one scale-up domain (the
18 trays of a GB200 NVL72 rack), ``d<domain>.g<k>`` names the k-th GPU of the domain, and
the per-rack form earlier versions used, ``n<domain>.g<k>`` with ``k`` beyond the host's
GPUs (``n0.g71``), is read the same way.
"""

from __future__ import annotations

import re

from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric

_GPU_RE = re.compile(r"^([nd])(\d+)\.g(\d+)$")


def _valid_range(fabric: Fabric) -> str:
    last_node, last_gpu = fabric.nodes - 1, fabric.gpus_per_node - 1
    text = (
        f"valid: n0..n{last_node} with g0..g{last_gpu} (n0.g0 .. n{last_node}.g{last_gpu}) "
        f"or ranks 0..{fabric.n_gpus - 1}"
    )
    if fabric.hosts_per_domain > 1:
        last_domain, last_k = fabric.domains - 1, fabric.gpus_per_domain - 1
        text += f", or d0..d{last_domain} with g0..g{last_k} (GPU k of a scale-up domain)"
    return text


def _domain_rank(fabric: Fabric, raw: str, domain: int, k: int) -> int:
    """Global rank of GPU ``k`` of scale-up domain ``domain``."""
    per = fabric.gpus_per_domain
    if domain < fabric.domains and k < per and domain * per + k < fabric.n_gpus:
        return domain * per + k
    raise EngineError(
        f"no GPU {raw} in {fabric.spec.id}: {fabric.domains} scale-up domain"
        f"{'s' if fabric.domains > 1 else ''} of {per} GPUs; {_valid_range(fabric)}"
    )


def parse_gpu_id(fabric: Fabric, text: str) -> int:
    """Turn ``n3.g7``, ``d0.g71`` or ``31`` into a global rank.

    Args:
        fabric: The fabric the id refers to.
        text: The id as the user typed it.

    Returns:
        The global rank ``node * gpus_per_node + gpu``.

    Raises:
        EngineError: Malformed or out of range; names the nearest valid ids.
    """
    raw = str(text).strip()
    name = fabric.spec.id
    if raw.lstrip("-").isdigit():
        rank = int(raw)
        if 0 <= rank < fabric.n_gpus:
            return rank
        nearest_rank = min(max(rank, 0), fabric.n_gpus - 1)
        raise EngineError(
            f"no GPU rank {rank} in {name} ({fabric.n_gpus} GPUs; nearest: {nearest_rank}, "
            f"{fabric.gpu_name(nearest_rank)}); {_valid_range(fabric)}"
        )
    match = _GPU_RE.match(raw.lower())
    if not match:
        raise EngineError(
            f"invalid GPU id {raw!r}: use n<node>.g<gpu> such as n0.g3, or a global rank; "
            f"{_valid_range(fabric)}"
        )
    form, node, gpu = match.group(1), int(match.group(2)), int(match.group(3))
    if form == "d":
        return _domain_rank(fabric, raw, node, gpu)
    if node < fabric.nodes and gpu < fabric.gpus_per_node:
        return node * fabric.gpus_per_node + gpu
    if fabric.hosts_per_domain > 1 and gpu >= fabric.gpus_per_node:
        # The per-rack form of a multi-host domain (n0.g71 on an NVL72 rack).
        return _domain_rank(fabric, raw, node, gpu)
    near_node = min(node, fabric.nodes - 1)
    near_gpu = min(gpu, fabric.gpus_per_node - 1)
    nearest = f"n{near_node}.g{near_gpu}"
    problem = []
    if node >= fabric.nodes:
        problem.append(f"{name} has {fabric.nodes} node{'s' if fabric.nodes > 1 else ''}")
    if gpu >= fabric.gpus_per_node:
        problem.append(f"{fabric.gpus_per_node} GPUs per node")
    raise EngineError(
        f"no GPU {raw} in {name}: {' and '.join(problem)} (nearest: {nearest}); "
        f"{_valid_range(fabric)}"
    )


def placement(fabric: Fabric, src: str, dst: str) -> str:
    """How two GPUs (canonical ``n<node>.g<gpu>`` names) sit: ``same node``, ``same
    domain d<k>`` (different hosts of one scale-up domain) or ``different nodes``."""
    a, b = _GPU_RE.match(src), _GPU_RE.match(dst)
    if a is None or b is None or a.group(1) != "n" or b.group(1) != "n":
        same = src.split(".")[0] == dst.split(".")[0]
        return "same node" if same else "different nodes"
    node_a, node_b = int(a.group(2)), int(b.group(2))
    if node_a == node_b:
        return "same node"
    per = fabric.hosts_per_domain
    if per > 1 and node_a // per == node_b // per:
        return f"same domain d{node_a // per}"
    return "different nodes"
