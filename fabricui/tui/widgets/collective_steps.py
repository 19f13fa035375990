"""The steps of each collective algorithm on four GPUs, for the stepper: which GPU sends
which chunk to which at every step, and who holds what after it.

A teaching aid, not a cost model (the engine prices collectives): each algorithm is drawn
as NCCL runs it, at the smallest size that shows its shape.

- ring: reduce-scatter then all-gather around ``0 -> 1 -> 2 -> 3 -> 0`` (2(N-1) steps).
- tree: NCCL's double binary tree (``ncclGetDtree``): chunks A-B reduce up tree 0
  (``1, 3 -> 2 -> 0``) and come back down, C-D on the mirror tree rooted at GPU 1, so every
  GPU is a leaf in one tree and inside the other.
- nvls: the NVSwitch adds each chunk from every GPU (multimem ``ld_reduce``) and
  multicasts the sum (multimem ``st``): two steps through the switch.
- nvlstree: two nodes of two GPUs: the switch reduces inside each node, the nodes' head
  GPUs exchange over the network (a two-node tree), the switch multicasts.
- sharp: as nvls, with the InfiniBand switch reducing (SHARP).
- pat: NCCL's PAT for all-gather and reduce-scatter (one GPU per node): log2(N) steps at
  doubling (all-gather) or halving (reduce-scatter) distances, as Bruck's algorithm.
- p2p: every GPU sends each GPU its chunk directly (reduce-scatter), then the sums; an
  all-to-all sends every block straight to its GPU, a send/recv each buffer to the next
  GPU (nccl-tests' pattern).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: Operations the stepper can show.
STEPPER_OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "send_recv",
)
#: Point-to-point operations: drawn as direct sends when the algorithm has no picture.
P2P_OPS = ("all_to_all", "send_recv")
#: GPUs drawn.
RING_RANKS = 4
#: Chunk names.
CHUNKS = "ABCDEFGH"

State = tuple[tuple[frozenset[int], ...], ...]
"""state[rank][chunk]: the ranks whose contribution that rank holds for that chunk."""

Send = tuple[int, int, int]
"""(from rank, to rank, chunk) of one transfer."""


@dataclass(frozen=True)
class Step:
    """One step of a collective."""

    sends: tuple[Send, ...]
    """(from rank, to rank, chunk) of every transfer in the step."""
    state: State
    """Who holds what after the step."""
    phase: str
    """What the step does (``reduce-scatter``, ``switch reduces`` ...)."""
    via: str = ""
    """The switch the transfers go through (``NVSwitch``), or empty for GPU to GPU."""


def initial_state(op: str, n: int) -> State:
    """What each rank holds before ``op`` starts."""
    if op in ("all_reduce", "reduce_scatter", "reduce", *P2P_OPS):
        return tuple(tuple(frozenset({r}) for _ in range(n)) for r in range(n))
    if op == "all_gather":
        return tuple(
            tuple(frozenset({r}) if c == r else frozenset() for c in range(n)) for r in range(n)
        )
    if op == "broadcast":
        return tuple(
            tuple(frozenset({0}) if r == 0 else frozenset() for _ in range(n)) for r in range(n)
        )
    raise ValueError(f"the stepper shows {', '.join(STEPPER_OPS)} (got {op!r})")


class _Recorder:
    """Applies steps to a state and keeps them."""

    def __init__(self, op: str, n: int) -> None:
        self.n = n
        self.state = [list(row) for row in initial_state(op, n)]
        self.steps: list[Step] = []

    def record(self, sends: list[Send], phase: str, add: bool, via: str = "") -> None:
        """One step: each send adds the sender's chunk to the receiver's (``add``: a
        reduction) or replaces it (a copy)."""
        new = [list(row) for row in self.state]
        for src, dst, chunk in sends:
            held = self.state[src][chunk]
            new[dst][chunk] = (new[dst][chunk] | held) if add else held
        self.state = new
        self.steps.append(Step(tuple(sends), tuple(tuple(row) for row in new), phase, via))


def ring_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """Every step of the ring algorithm for ``op`` on ``n`` ranks (rank r sends to r+1).

    Reduce-scatter: at step s rank r adds its partial chunk ``r - s`` into rank r+1's;
    after n-1 steps rank r owns the full chunk ``r + 1``. All-gather: at step s rank r
    passes chunk ``r - s`` (r's own chunk first) on. All-reduce is a reduce-scatter then an
    all-gather of the reduced chunks (2(n-1) steps). Broadcast pipelines the root's n
    chunks down the chain 0 -> 1 -> ... -> n-1 (2n-2 steps); reduce pipelines them the
    other way round the ring, 1 -> 2 -> ... -> 0, adding as they go (2n-2 steps).

    Raises:
        ValueError: All-to-all and send/recv (point-to-point, no ring).
    """
    if op in P2P_OPS:
        raise ValueError(f"no ring picture for {op}")
    rec = _Recorder(op, n)
    if op in ("all_reduce", "reduce_scatter"):
        for s in range(n - 1):
            rec.record([(r, (r + 1) % n, (r - s) % n) for r in range(n)], "reduce-scatter", True)
    if op == "all_reduce":
        for s in range(n - 1):
            rec.record([(r, (r + 1) % n, (r + 1 - s) % n) for r in range(n)], "all-gather", False)
    if op == "all_gather":
        for s in range(n - 1):
            rec.record([(r, (r + 1) % n, (r - s) % n) for r in range(n)], "all-gather", False)
    if op == "broadcast":
        for s in range(2 * n - 2):
            sends = [(s - c, s - c + 1, c) for c in range(n) if 0 <= s - c < n - 1]
            rec.record(sends, "pipeline", False)
    if op == "reduce":
        chain = [(1 + i) % n for i in range(n)]  # the ring from the root's next to the root
        for s in range(2 * n - 2):
            sends = [(chain[s - c], chain[s - c + 1], c) for c in range(n) if 0 <= s - c < n - 1]
            rec.record(sends, "pipeline to GPU0", True)
    return rec.steps


#: NCCL's double binary tree on four ranks: (parent -> children) of tree 0 (ncclGetBtree:
#: 0 -> 2 -> 1, 3) and of its mirror, tree 1 (rank r there plays rank r - 1 of tree 0).
DOUBLE_TREE = (
    ({0: (2,), 2: (1, 3)}, (0, 1)),  # tree 0 carries chunks A, B; root GPU0
    ({1: (3,), 3: (2, 0)}, (2, 3)),  # tree 1 carries chunks C, D; root GPU1
)


def tree_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """All-reduce on the double binary tree: leaves to parents, parents to roots (the
    sums), then the same edges back down; broadcast: tree 0 down from GPU 0.

    Raises:
        ValueError: An operation NCCL does not run on trees here, or not four ranks.
    """
    if n != 4 or op not in ("all_reduce", "broadcast"):
        raise ValueError(f"no tree picture for {op} on {n} GPUs")
    rec = _Recorder(op, n)
    if op == "broadcast":
        children = DOUBLE_TREE[0][0]
        for parent in (0, 2):
            sends = [(parent, c, k) for c in children[parent] for k in range(n)]
            rec.record(sends, "down the tree", False)
        return rec.steps
    levels: list[list[tuple[int, int, tuple[int, ...]]]] = [[], []]  # (parent, child, chunks)
    for children, chunks in DOUBLE_TREE:
        root = next(p for p in children if all(p not in c for c in children.values()))
        for child in children[root]:
            levels[0].append((root, child, chunks))
            for grandchild in children.get(child, ()):
                levels[1].append((child, grandchild, chunks))
    for level in reversed(levels):  # reduce: the deepest edges first
        rec.record([(c, p, k) for p, c, ks in level for k in ks], "reduce up", True)
    for level in levels:  # broadcast the sums back down
        rec.record([(p, c, k) for p, c, ks in level for k in ks], "back down", False)
    return rec.steps


def switch_steps(op: str, n: int = RING_RANKS, via: str = "NVSwitch") -> list[Step]:
    """All-reduce through a reducing switch (NVLS, SHARP): GPU c receives chunk c summed
    over every GPU, then multicasts it to all; all-gather and reduce-scatter are one of
    those two steps.

    Raises:
        ValueError: Broadcast (a ring in NCCL).
    """
    if op not in ("all_reduce", "all_gather", "reduce_scatter"):
        raise ValueError(f"no {via} picture for {op}")
    rec = _Recorder(op, n)
    if op in ("all_reduce", "reduce_scatter"):
        sends = [(r, c, c) for c in range(n) for r in range(n) if r != c]
        rec.record(sends, "switch adds each chunk", True, via)
    if op in ("all_reduce", "all_gather"):
        sends = [(c, r, c) for c in range(n) for r in range(n) if r != c]
        rec.record(sends, "switch multicasts", False, via)
    return rec.steps


def nvls_tree_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """All-reduce on two nodes of two GPUs: the switch reduces A-B onto each node's first
    GPU and C-D onto its second, the two nodes' GPUs exchange their sums over the network,
    the switch multicasts them inside each node.

    Raises:
        ValueError: Not an all-reduce on four GPUs.
    """
    if n != 4 or op != "all_reduce":
        raise ValueError(f"no NVLS+tree picture for {op} on {n} GPUs")
    rec = _Recorder(op, n)
    heads = {0: 0, 1: 0, 2: 1, 3: 1}  # chunk -> which GPU of a node holds it
    nodes = ((0, 1), (2, 3))
    reduce_in = [
        (g, node[heads[k]], k)
        for node in nodes
        for g in node
        for k in range(n)
        if g != node[heads[k]]
    ]
    rec.record(reduce_in, "switch adds in nodes", True, "NVSwitch")
    across = [
        (a, b, k)
        for k in range(n)
        for a, b in ((0, 2), (2, 0), (1, 3), (3, 1))
        if heads[k] == a % 2
    ]
    rec.record(across, "heads swap across nodes", True)
    out = [(send[1], send[0], send[2]) for send in reduce_in]
    rec.record(out, "switch multicasts", False, "NVSwitch")
    return rec.steps


def pat_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """PAT (all-gather: GPU r sends everything it holds to r - d for d = 1, 2, ...;
    reduce-scatter: GPU r sends the partial chunks c with (c - r) mod N in [d, 2d) to
    r + d for d = N/2, ..., 1, so GPU r ends with chunk r); log2(N) steps.

    Raises:
        ValueError: Another operation (NCCL runs PAT for these two only).
    """
    if op not in ("all_gather", "reduce_scatter") or n & (n - 1):
        raise ValueError(f"no PAT picture for {op} on {n} GPUs")
    rec = _Recorder(op, n)
    if op == "all_gather":
        d = 1
        while d < n:
            held = [[c for c in range(n) if rec.state[r][c]] for r in range(n)]
            rec.record(
                [(r, (r - d) % n, c) for r in range(n) for c in held[r]], f"distance {d}", False
            )
            d *= 2
        return rec.steps
    d = n // 2
    while d >= 1:
        sends = [
            (r, (r + d) % n, c) for r in range(n) for c in range(n) if d <= (c - r) % n < 2 * d
        ]
        rec.record(sends, f"distance {d}", True)
        d //= 2
    return rec.steps


def p2p_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """Direct sends: each GPU sends chunk c straight to GPU c (reduce-scatter), then each
    GPU sends its sum to every other (all-gather); broadcast: the root to all at once;
    all-to-all: every block straight to its GPU (kept apart, not added); send/recv: each
    GPU's buffer to the next GPU.

    Raises:
        ValueError: Reduce (a ring in NCCL).
    """
    if op == "reduce":
        raise ValueError("no direct picture for reduce")
    rec = _Recorder(op, n)
    if op == "all_to_all":
        sends = [(r, c, c) for r in range(n) for c in range(n) if r != c]
        rec.record(sends, "each block to its GPU", True)
    if op == "send_recv":
        sends = [(r, (r + 1) % n, c) for r in range(n) for c in range(n)]
        rec.record(sends, "each GPU to the next", False)
    if op in ("all_reduce", "reduce_scatter"):
        rec.record(
            [(r, c, c) for c in range(n) for r in range(n) if r != c], "direct to owners", True
        )
    if op in ("all_reduce", "all_gather"):
        rec.record(
            [(c, r, c) for c in range(n) for r in range(n) if r != c], "direct to all", False
        )
    if op == "broadcast":
        rec.record([(0, r, c) for r in range(1, n) for c in range(n)], "root to all", False)
    return rec.steps


#: Each algorithm family the engine reports: (steps of an op, caption).
ALGORITHMS: dict[str, tuple[Callable[[str, int], list[Step]], str]] = {
    "ring": (ring_steps, "ring: each GPU sends 2(N-1)/N of the data"),
    "tree": (tree_steps, "double binary tree: A-B on one, C-D on its mirror"),
    "nvls": (switch_steps, "NVLS: the NVSwitch adds and multicasts: 2 steps"),
    "nvlstree": (nvls_tree_steps, "NVLS+tree: switch inside nodes, a tree across them"),
    "sharp": (
        lambda op, n: switch_steps(op, n, "IB switch"),
        "SHARP: the InfiniBand switches add and multicast",
    ),
    "pat": (pat_steps, "PAT: log2 N steps, distances doubling or halving"),
    "p2p": (p2p_steps, "direct: each chunk to its owner, then to all"),
}


#: Captions of the pictures an algorithm draws differently for some operations.
OP_CAPTIONS = {
    ("p2p", "all_to_all"): "direct: every block straight to its GPU",
    ("p2p", "send_recv"): "direct: each GPU's buffer to the next GPU",
    ("ring", "reduce"): "ring: each chunk round to GPU0, summed on the way",
    # all_reduce's 2(N-1)/N is a reduce-scatter then an all-gather: each is half of it.
    ("ring", "all_gather"): "ring: each GPU sends (N-1)/N of the data",
    ("ring", "reduce_scatter"): "ring: each GPU sends (N-1)/N, summing on the way",
    ("ring", "broadcast"): "ring: a chain from GPU0, each GPU passes it on once",
}


def algorithm_family(label: str) -> str:
    """``nvlstree/simple`` -> ``nvlstree`` (the engine's ``algorithm/protocol`` label)."""
    return label.split("/", 1)[0].strip().lower()


def collective_steps(op: str, algorithm: str, n: int = RING_RANKS) -> tuple[str, list[Step], str]:
    """(algorithm drawn, its steps, caption) for ``op``: the algorithm's own steps when it
    has a picture for ``op``, else the ring's (direct sends' for all-to-all and send/recv;
    the caption says which was asked)."""
    family = algorithm_family(algorithm) or "ring"
    entry = ALGORITHMS.get(family)
    if entry is not None:
        steps_of, caption = entry
        try:
            return family, steps_of(op, n), OP_CAPTIONS.get((family, op), caption)
        except ValueError:
            pass
    fallback = "p2p" if op in P2P_OPS else "ring"
    steps_of, caption = ALGORITHMS[fallback]
    caption = OP_CAPTIONS.get((fallback, op), caption)
    note = f"{family} has no {op} picture: the {fallback}" if family != fallback else caption
    return fallback, steps_of(op, n), note
