"""Two-level (hierarchical) collectives: one NCCL call inside each node, one across nodes.

NCCL's own algorithms already mix the levels (a tree's chain inside a node, NVLS+tree); a
framework can also split a collective into separate calls on sub-communicators, as
Horovod's hierarchical all-reduce and DeepSpeed's and torch's two-dimensional process
groups do. An all-reduce is then a reduce-scatter inside each node, an all-reduce of each
GPU's ``1/ppn`` share across the nodes among the GPUs with the same local rank, and an
all-gather inside each node; an all-gather gathers across nodes first, a reduce-scatter
scatters inside the node first. Each call runs what NCCL's tuner picks for its group and
size, priced by the engine, one after the other (a framework waits for each before the
next). The GPUs of one local rank across nodes stand for all of them, as a plan prices one
group of each parallel axis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fabricui.engine.group import Group
from fabricui.engine.nccl.picks import Choice, Pick, sole_choice
from fabricui.engine.types import FloatArray
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.types import CollectiveAlgorithm

#: ``--algo`` name of the two-level composition.
HIERARCHICAL = "hierarchical"
#: Operations it splits into levels.
HIERARCHICAL_OPS = ("all_reduce", "all_gather", "reduce_scatter")


@dataclass(frozen=True)
class Stage:
    """One call of a two-level collective."""

    op: str
    """The collective of this call."""
    level: str
    """``node`` (the GPUs of one node) or ``network`` (one GPU of each node)."""
    share: float
    """Its size as a fraction of the whole collective's (nccl-tests convention)."""


def stages(op: str, ppn: int) -> tuple[Stage, ...]:
    """The calls of a two-level ``op`` over nodes of ``ppn`` GPUs, in order.

    All-reduce: reduce-scatter the buffer in the node, all-reduce each GPU's ``1/ppn`` across
    nodes, all-gather in the node. All-gather (size = the whole output): gather each node's
    chunks across nodes (``1/ppn`` of the output on each rail), then in the node.
    Reduce-scatter (size = the whole input): scatter in the node, then across nodes.

    Raises:
        EngineError: ``op`` has no two-level form (``HIERARCHICAL_OPS``).
    """
    _check_op(op)
    share = 1.0 / ppn
    if op == "all_reduce":
        return (
            Stage("reduce_scatter", "node", 1.0),
            Stage("all_reduce", "network", share),
            Stage("all_gather", "node", 1.0),
        )
    if op == "all_gather":
        return (Stage("all_gather", "network", share), Stage("all_gather", "node", 1.0))
    return (Stage("reduce_scatter", "node", 1.0), Stage("reduce_scatter", "network", share))


def _check_op(op: str) -> None:
    """Refuse an op without a two-level form.

    Raises:
        EngineError: It is not one of ``HIERARCHICAL_OPS``.
    """
    if op not in HIERARCHICAL_OPS:
        raise EngineError(
            f"{HIERARCHICAL} runs {', '.join(HIERARCHICAL_OPS)}, not {op} (its levels are the "
            "node's GPUs and one GPU of each node)"
        )


def hierarchical_choice(
    group: Group,
    op: str,
    sizes: FloatArray,
    algorithms: Sequence[CollectiveAlgorithm],
    price: Callable[[Group, str, FloatArray, list[CollectiveAlgorithm]], Choice],
) -> Choice:
    """``op`` as a two-level composition of calls on ``group``, per size: the pick whose
    time is its calls' (``price`` gives the pick a call runs: NCCL's), one after another.

    Raises:
        EngineError: The op has no two-level form, or the group is not several nodes of
            the same number of GPUs (at least two each).
    """
    _check_op(op)
    counts = {local.shape[0] for local in group.by_node}
    if group.n_nodes < 2 or len(counts) != 1 or min(counts) < 2:
        raise EngineError(
            f"{HIERARCHICAL} needs two or more nodes with the same number of GPUs, at least "
            f"two each (this group: {group.n} GPUs on {group.n_nodes} node(s))"
        )
    ppn = counts.pop()
    levels = stages(op, ppn)
    inner = [a for a in algorithms if a.name != HIERARCHICAL]

    def subgroup(ranks: npt.ArrayLike) -> Group:
        """The ranks as a group of their own, run as ``group`` runs (release, settings)."""
        return Group(
            group.fabric,
            ranks,
            router=group.router,
            single_process=group.single_process,
            library_version=group.library_version,
            nccl_env=group.nccl_env,
            gpus_per_thread=group.gpus_per_thread,
        )

    node = subgroup(group.by_node[0])
    rail = subgroup(np.stack(group.by_node)[:, 0])
    total = np.zeros(sizes.shape)
    network: Choice | None = None
    for stage in levels:
        on = node if stage.level == "node" else rail
        part = price(on, stage.op, sizes * stage.share, inner)
        total = total + part.nccl.time_us
        if stage.level == "network":
            network = part
    assert network is not None
    n = sizes.shape[0]
    pick = Pick(
        algorithm=(HIERARCHICAL,) * n,
        protocol=network.nccl.protocol,
        channels=(None,) * n,
        time_us=total,
    )
    library = network.library.split(" (")[0]
    calls = ", then ".join(
        f"{s.op.replace('_', '-')} {'in each node' if s.level == 'node' else 'across nodes'}"
        for s in levels
    )
    return sole_choice(f"{HIERARCHICAL}: {calls}, each {library}'s pick", pick)
