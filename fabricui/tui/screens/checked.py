"""The base of a dialog whose text is checked before it closes, the check run off the event
loop: a check that prices (NCCL settings on 32,768 GPUs, about a second) or reads a large
file never freezes the screen.

A check that answers within ``CHECK_WAIT_S`` is answered in the same key press, as if it
ran on the event loop (no "checking..." flashes by); a slower one says "checking..." and
answers when it is done, while the screen draws and takes keys. The check runs on a thread
of its own: it may read the app's state but changes none of the app's, and routes on the
fabric's shared router (``LoadedFabric.router``, whose caches a prediction's worker fills)
only holding ``LoadedFabric.lock`` (``LoadedFabric.check_collective``): a check asked while a
prediction routes waits for it, then reuses what it routed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future, wait
from typing import Callable

from fabricui.errors import FabricError
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.modal import Modal

log = logging.getLogger(__name__)

#: ``check(text)``: an error line for text that cannot be taken, else None.
Check = Callable[[str], "str | None"]

#: How long a submit waits for its check before it says "checking..." and lets the check
#: answer later [s]: the screen is never still for longer (three frames at 60 per second).
CHECK_WAIT_S = 0.05


def start_check(check: Check, text: str) -> Future[str | None]:
    """Run ``check(text)`` on a thread of its own.

    Returns:
        Its answer once done: the error line, or None. A ``FabricError`` it raises is its
        message; any other error is logged and said in one line (never a traceback).
    """
    answer: Future[str | None] = Future()
    # Running from the start: the dialog closed (its wait cancelled) cannot cancel it.
    answer.set_running_or_notify_cancel()

    def run() -> None:
        try:
            answer.set_result(check(text))
        except FabricError as exc:
            answer.set_result(exc.message)
        except Exception as exc:
            log.error("prompt check of %r failed: %r", text[:80], exc)
            answer.set_result(f"cannot check it: {type(exc).__name__}: {exc}")

    # A daemon: a check stuck on a slow disk never holds the program open at exit.
    threading.Thread(target=run, name="fabricui-check", daemon=True).start()
    return answer


class CheckedModal(Modal["str | None"]):
    """A dialog that closes with a text once ``check`` finds nothing wrong with it.

    ``submit`` checks; while the check runs, another submit does nothing and escape closes
    the dialog (the check's answer is then dropped). A subclass says the answer
    (``show_refusal``, ``show_checking``).
    """

    def __init__(self, check: Check | None = None) -> None:
        super().__init__()
        self.check = check
        """Returns an error line for text that cannot be taken, else None (run off the
        event loop: see the module's docstring)."""
        self._checking: str | None = None
        """The text whose check runs, None when none does."""

    @property
    def is_checking(self) -> bool:
        """A check runs: the dialog waits for its answer."""
        return self._checking is not None

    def submit(self, text: str, again: Callable[[], str]) -> None:
        """Close with ``text`` once checked, or say why not.

        Args:
            text: The text to check and close with.
            again: What this submit would give now: a text changed while its check ran is
                neither taken nor refused by that check (the next submit checks it).
        """
        if self.is_checking:  # a second enter while the first is checked
            return
        if self.check is None:
            self.dismiss(text)
            return
        answer = start_check(self.check, text)
        if wait([answer], timeout=CHECK_WAIT_S).done:
            self._answered(text, answer.result())
            return
        self._checking = text
        self.show_checking(f"checking{glyphs().ellipsis}")
        self.run_worker(
            self._await_answer(text, again, answer),
            group="check",
            exclusive=True,
            exit_on_error=False,
            description="check",
        )

    async def _await_answer(
        self, text: str, again: Callable[[], str], answer: Future[str | None]
    ) -> None:
        """Take the answer of a check that outlasted ``CHECK_WAIT_S`` (cancelled with the
        dialog: escape drops it)."""
        error = await asyncio.wrap_future(answer)
        self._checking = None
        if again() != text:  # edited meanwhile: this answer is not about what is typed
            self.show_refusal("")
            return
        self._answered(text, error)

    def _answered(self, text: str, error: str | None) -> None:
        if error:
            self.show_refusal(error)
        else:
            self.dismiss(text)

    def show_checking(self, line: str) -> None:
        """Say that the check runs (``line``)."""
        self.show_refusal(line)

    def show_refusal(self, error: str) -> None:
        """Say why the text is refused (empty: nothing to say)."""
        raise NotImplementedError

    def action_cancel(self) -> None:
        """Close without a value (a check running is dropped)."""
        self.dismiss(None)
