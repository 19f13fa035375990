"""GPU ids: ``n<node>.g<gpu>`` (0-based) or a bare global rank; errors name valid ranges."""

from __future__ import annotations

import re

from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric

_GPU_RE = re.compile(r"^n(\d+)\.g(\d+)$")


def _valid_range(fabric: Fabric) -> str:
    last_node, last_gpu = fabric.nodes - 1, fabric.gpus_per_node - 1
    return (
        f"valid: n0..n{last_node} with g0..g{last_gpu} (n0.g0 .. n{last_node}.g{last_gpu}) "
        f"or ranks 0..{fabric.n_gpus - 1}"
    )


def parse_gpu_id(fabric: Fabric, text: str) -> int:
    """Turn ``n3.g7`` or ``31`` into a global rank.

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
        nearest = min(max(rank, 0), fabric.n_gpus - 1)
        raise EngineError(
            f"no GPU rank {rank} in {name} ({fabric.n_gpus} GPUs; nearest: {nearest}, "
            f"{fabric.gpu_name(nearest)}); {_valid_range(fabric)}"
        )
    match = _GPU_RE.match(raw.lower())
    if not match:
        raise EngineError(
            f"invalid GPU id {raw!r}: use n<node>.g<gpu> such as n0.g3, or a global rank; "
            f"{_valid_range(fabric)}"
        )
    node, gpu = int(match.group(1)), int(match.group(2))
    if node < fabric.nodes and gpu < fabric.gpus_per_node:
        return node * fabric.gpus_per_node + gpu
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
