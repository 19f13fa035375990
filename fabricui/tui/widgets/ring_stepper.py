"""A step-by-step ring: how chunks move around a small ring for the classic collectives.

This is a teaching aid, not a cost model: it shows which rank sends
which chunk at each step of the textbook ring algorithm; the engine prices collectives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

if TYPE_CHECKING:
    from textual.timer import Timer

#: Operations the stepper can show.
STEPPER_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
#: Ranks on the ring.
RING_RANKS = 4
#: Chunk names.
CHUNKS = "ABCDEFGH"

State = tuple[tuple[frozenset[int], ...], ...]
"""state[rank][chunk]: the ranks whose contribution that rank holds for that chunk."""


@dataclass(frozen=True)
class Step:
    """One step of a ring collective."""

    sends: tuple[tuple[int, int, int], ...]
    """(from rank, to rank, chunk) of every transfer in the step."""
    state: State
    """Who holds what after the step."""
    phase: str
    """``reduce-scatter``, ``all-gather`` or ``pipeline``."""


def initial_state(op: str, n: int) -> State:
    """What each rank holds before ``op`` starts."""
    if op in ("all_reduce", "reduce_scatter"):
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


def ring_steps(op: str, n: int = RING_RANKS) -> list[Step]:
    """Every step of the ring algorithm for ``op`` on ``n`` ranks (rank r sends to r+1).

    Reduce-scatter: at step s rank r adds its partial chunk ``r - s`` into rank r+1's;
    after n-1 steps rank r owns the full chunk ``r + 1``. All-gather: at step s rank r
    passes chunk ``r - s`` (r's own chunk first) on. All-reduce is a reduce-scatter then an
    all-gather of the reduced chunks (2(n-1) steps). Broadcast pipelines the root's n
    chunks down the chain 0 -> 1 -> ... -> n-1 (2n-2 steps).
    """
    state = [list(row) for row in initial_state(op, n)]
    steps: list[Step] = []

    def record(sends: list[tuple[int, int, int]], phase: str, add: bool) -> None:
        new = [list(row) for row in state]
        for src, dst, chunk in sends:
            new[dst][chunk] = (state[dst][chunk] | state[src][chunk]) if add else state[src][chunk]
        state[:] = new
        steps.append(Step(tuple(sends), tuple(tuple(row) for row in new), phase))

    if op in ("all_reduce", "reduce_scatter"):
        for s in range(n - 1):
            record([(r, (r + 1) % n, (r - s) % n) for r in range(n)], "reduce-scatter", True)
    if op == "all_reduce":
        for s in range(n - 1):
            record([(r, (r + 1) % n, (r + 1 - s) % n) for r in range(n)], "all-gather", False)
    if op == "all_gather":
        for s in range(n - 1):
            record([(r, (r + 1) % n, (r - s) % n) for r in range(n)], "all-gather", False)
    if op == "broadcast":
        for s in range(2 * n - 2):
            sends = [(s - c, s - c + 1, c) for c in range(n) if 0 <= s - c < n - 1]
            record(sends, "pipeline", False)
    return steps


def cell_text(holders: frozenset[int], n: int) -> str:
    """``0+1``, ``all`` or ``-`` for a chunk held by those ranks' data."""
    if not holders:
        return "-"
    if len(holders) == n:
        return "all"
    return "+".join(str(r) for r in sorted(holders))


#: What each op does, one line under the ring.
CAPTIONS = {
    "all_reduce": "reduce-scatter + all-gather: sends 2(N-1)/N of data",
    "all_gather": "each GPU passes on what it got last; sends (N-1)/N",
    "reduce_scatter": "partial sums go round; GPU r ends with chunk r+1",
    "broadcast": "the root's chunks stream down the chain 0->1->2->3",
}


class RingStepper(Widget):
    """Four GPUs on a ring, their chunks, and the transfers of the current step.

    ``step`` 0 is the starting state; each later step shows who sent what to whom. The
    stepper only animates when asked (``play``), and stops at the last step.
    """

    DEFAULT_CSS = """
    RingStepper { height: auto; padding: 0 1; }
    RingStepper > .ring-stepper--title { color: $primary; text-style: bold; }
    RingStepper > .ring-stepper--fresh { color: $warning; text-style: bold; }
    RingStepper > .ring-stepper--done { color: $success; }
    RingStepper > .ring-stepper--muted { color: $text-muted; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "ring-stepper--title",
        "ring-stepper--fresh",
        "ring-stepper--done",
        "ring-stepper--muted",
    }
    """Tones of the title, chunks just received, complete chunks and captions."""

    op: reactive[str] = reactive("all_reduce", init=False, layout=True)
    """The collective shown."""
    step: reactive[int] = reactive(0, init=False)
    """Steps taken (0: starting state)."""
    playing: reactive[bool] = reactive(False, init=False)
    """True while the stepper advances by itself."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self._steps = ring_steps("all_reduce")
        self._timer: Timer | None = None

    @property
    def total(self) -> int:
        """Number of steps of the current op."""
        return len(self._steps)

    def validate_op(self, op: str) -> str:
        """Ops the stepper cannot show fall back to all-reduce."""
        return op if op in STEPPER_OPS else "all_reduce"

    def watch_op(self) -> None:
        """New op: recompute the steps and start over."""
        self._steps = ring_steps(self.op)
        self.playing = False
        self.step = 0

    def validate_step(self, step: int) -> int:
        """Keep the step within 0..total."""
        return max(0, min(step, self.total))

    def watch_playing(self, playing: bool) -> None:
        """Start or stop the timer (no timer runs while paused)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if playing:
            if self.step >= self.total:
                self.step = 0
            self._timer = self.set_interval(0.8, self._tick)

    def _tick(self) -> None:
        if self.step >= self.total:
            self.playing = False
            return
        self.step += 1
        if self.step >= self.total:
            self.playing = False

    def _style(self, name: str):  # type: ignore[no-untyped-def]
        return self.get_component_rich_style(f"ring-stepper--{name}", partial=True)

    def render(self) -> Text:
        """The ring at the current step."""
        n = RING_RANKS
        state = initial_state(self.op, n) if self.step == 0 else self._steps[self.step - 1].state
        current = self._steps[self.step - 1] if self.step else None
        out = Text(no_wrap=True, overflow="ellipsis")
        dot = glyphs().dot
        phase = f" {dot} {current.phase}" if current else f" {dot} start"
        out.append(
            f"ring {self.op} {dot} step {self.step}/{self.total}{phase}", self._style("title")
        )
        if self.playing:
            out.append("  (playing)", self._style("muted"))
        out.append("\n")
        received = {(dst, chunk) for _, dst, chunk in current.sends} if current else set()
        sends = {src: (dst, chunk) for src, dst, chunk in current.sends} if current else {}
        cell_w = max(len(cell_text(frozenset(range(n - 1)), n)), 3) + 3
        for rank in range(n):
            out.append(f"GPU{rank} ")
            for chunk in range(n):
                holders = state[rank][chunk]
                text = f"{CHUNKS[chunk]}:{cell_text(holders, n)}".ljust(cell_w)
                if (rank, chunk) in received:
                    style = self._style("fresh")
                elif len(holders) == n or (self.op == "broadcast" and holders):
                    style = self._style("done")
                else:
                    style = self._style("muted") if not holders else None
                out.append(text, style or "")
            arrow = glyphs().down if rank < n - 1 else glyphs().wrap
            if rank in sends:
                dst, chunk = sends[rank]
                out.append(f" {arrow} {CHUNKS[chunk]} to GPU{dst}", self._style("fresh"))
            out.append("\n")
        out.append(CAPTIONS[self.op], self._style("muted"))
        return out
