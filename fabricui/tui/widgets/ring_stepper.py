"""The collective stepper: how chunks move between four GPUs, step by step, for the
algorithm the collectives table shows (ring, tree, NVLS, NVLS+tree, SHARP, PAT, direct).

A teaching aid, not a cost model (``collective_steps`` draws each algorithm as NCCL runs
it); the engine prices collectives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

if TYPE_CHECKING:
    from textual.timer import Timer

from fabricui.tui.widgets.collective_steps import CHUNKS as CHUNKS
from fabricui.tui.widgets.collective_steps import RING_RANKS as RING_RANKS
from fabricui.tui.widgets.collective_steps import STEPPER_OPS as STEPPER_OPS
from fabricui.tui.widgets.collective_steps import Step as Step
from fabricui.tui.widgets.collective_steps import collective_steps
from fabricui.tui.widgets.collective_steps import initial_state as initial_state
from fabricui.tui.widgets.collective_steps import ring_steps as ring_steps


def cell_text(holders: frozenset[int], n: int) -> str:
    """``0+1``, ``all`` or ``-`` for a chunk held by those ranks' data."""
    if not holders:
        return "-"
    if len(holders) == n:
        return "all"
    return "+".join(str(r) for r in sorted(holders))


def chunk_list(chunks: list[int]) -> str:
    """``A``, ``A,B``, ``B-D`` (three or more in a row) or ``ACD`` (three or more with a
    gap: short enough that a GPU's line fits the 80-column layout) for chunk indices."""
    order = sorted(set(chunks))
    if len(order) > 2 and order[-1] - order[0] == len(order) - 1:
        return f"{CHUNKS[order[0]]}-{CHUNKS[order[-1]]}"
    return ("" if len(order) > 2 else ",").join(CHUNKS[c] for c in order)


def send_text(step: Step, rank: int, arrow: str, n: int = RING_RANKS) -> str:
    """What ``rank`` sends in ``step``: `` ↓ A to GPU1``, `` -> A,B to GPU1,3``, `` -> A to
    all``, `` -> B-D to owners`` (each chunk to the GPU that ends with it); empty when it
    sends nothing. Through a switch, the step's phase says so."""
    sends = [(dst, chunk) for src, dst, chunk in step.sends if src == rank]
    if not sends:
        return ""
    chunks = chunk_list([chunk for _, chunk in sends])
    targets = sorted({dst for dst, _ in sends})
    if len(targets) == n - 1 and len(targets) > 1:
        where = "owners" if all(dst == chunk for dst, chunk in sends) else "all"
    else:
        where = "GPU" + ",".join(str(t) for t in targets)
    return f" {arrow} {chunks} to {where}"


class RingStepper(Widget):
    """Four GPUs, their chunks, and the transfers of the current step of ``op`` on
    ``algorithm`` (the ring when that algorithm has no picture of ``op``).

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
    algorithm: reactive[str] = reactive("ring", init=False, layout=True)
    """The algorithm asked for (``nvls``, ``tree/ll``: the table's label)."""
    step: reactive[int] = reactive(0, init=False)
    """Steps taken (0: starting state)."""
    playing: reactive[bool] = reactive(False, init=False)
    """True while the stepper advances by itself."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.drawn, self._steps, self.caption = collective_steps("all_reduce", "ring")
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
        self._restart()

    def watch_algorithm(self) -> None:
        """Another algorithm: its steps, from the start."""
        self._restart()

    def _restart(self) -> None:
        drawn, steps, caption = collective_steps(self.op, self.algorithm)
        if (drawn, steps) == (self.drawn, self._steps):
            if caption != self.caption:  # the same picture, asked for by another name
                self.caption = caption
                self.refresh()
            return
        self.drawn, self._steps, self.caption = drawn, steps, caption
        self.playing = False
        self.step = 0
        self.refresh(layout=True)

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

    def _style(self, name: str) -> Style:
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
            f"{self.drawn} {self.op} {dot} step {self.step}/{self.total}{phase}",
            self._style("title"),
        )
        if self.playing:
            out.append("  (playing)", self._style("muted"))
        out.append("\n")
        received = {(dst, chunk) for _, dst, chunk in current.sends} if current else set()
        cell_w = max(len(cell_text(frozenset(range(n - 1)), n)), 3) + 3
        for rank in range(n):
            out.append(f"GPU{rank} ")
            for chunk in range(n):
                holders = state[rank][chunk]
                text = f"{CHUNKS[chunk]}:{cell_text(holders, n)}".ljust(cell_w)
                style: Style | None
                if (rank, chunk) in received:
                    style = self._style("fresh")
                elif len(holders) == n or (self.op == "broadcast" and holders):
                    style = self._style("done")
                else:
                    style = self._style("muted") if not holders else None
                out.append(text, style or "")
            arrow = "->" if self.drawn != "ring" else glyphs().down
            arrow = glyphs().wrap if self.drawn == "ring" and rank == n - 1 else arrow
            if current is not None:
                out.append(send_text(current, rank, arrow), self._style("fresh"))
            out.append("\n")
        out.append(self.caption, self._style("muted"))
        return out
