"""Each hook category collected once, however many threads ask for it at the same time.

The explorer's workers ask the plugin host for a category (its strategies, its link
generations) concurrently: the first thread to ask collects it (calls the plugins' hooks),
the others wait for its result, so no hook is called twice and no failure is recorded
twice. No lock is held while a category is collected: a hook (run in a thread of its own,
see ``budget``) that asks the host for another category collects it. One that asks for a
category whose collection waits on it (its own, or across categories: a cycle) is
refused at once instead of waiting for ever.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from fabricui.errors import PluginError


class Once:
    """Collects each category once: ``get(kind, results, collect)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Guards ``_running`` and ``_waits`` (never held while a category is collected)."""
        self._running: dict[str, threading.Event] = {}
        """Categories being collected -> set when their collection ends."""
        self._waits: list[tuple[str, str]] = []
        """(category, category its collection waits on), one pair per waiting thread."""
        self._local = threading.local()
        """``chain``: the categories whose collection the current thread works for,
        innermost last."""

    def chain(self) -> tuple[str, ...]:
        """The categories the current thread collects for (empty outside a collection)."""
        chain: tuple[str, ...] = getattr(self._local, "chain", ())
        return chain

    def carried(self, function: Callable[[], Any]) -> Callable[[], Any]:
        """``function`` to run in another thread (a hook's) as working for the current
        thread's collection, so a category it asks for is known to be waited on."""
        chain = self.chain()

        def run() -> Any:
            previous = self.chain()
            self._local.chain = chain
            try:
                return function()
            finally:
                self._local.chain = previous

        return run

    def get(self, kind: str, results: dict[str, Any], collect: Callable[[], Any]) -> Any:
        """``results[kind]``, collected first by ``collect`` (which stores it there) when
        no thread has; a thread collecting it already is waited for.

        Raises:
            PluginError: ``kind``'s collection waits on the current thread (a cycle).
        """
        while True:
            if kind in results:
                return results[kind]
            chain = self.chain()
            with self._lock:
                if kind in results:
                    return results[kind]
                done = self._running.get(kind)
                if done is not None and chain and self._waits_on(kind, chain[-1]):
                    raise PluginError(
                        f"asked the plugin host for {kind}, whose collection waits on this "
                        "call (a cycle)"
                    )
                edge = (chain[-1], kind) if chain else None
                if edge is not None:
                    self._waits.append(edge)
                mine = done is None
                if done is None:
                    done = self._running[kind] = threading.Event()
            try:
                if mine:
                    return self._collect(kind, chain, done, collect)
                done.wait()
            finally:
                if edge is not None:
                    with self._lock:
                        self._waits.remove(edge)
            # collected (or its collector raised: collected here, on the next turn)

    def _collect(
        self, kind: str, chain: tuple[str, ...], done: threading.Event, collect: Callable[[], Any]
    ) -> Any:
        self._local.chain = (*chain, kind)
        try:
            return collect()
        finally:
            self._local.chain = chain
            with self._lock:
                del self._running[kind]
            done.set()

    def _waits_on(self, kind: str, waiter: str) -> bool:
        """Whether ``kind``'s collection waits, through collections still running, on
        ``waiter``'s (a category the current thread collects for); under ``_lock``."""
        if waiter not in self._running:
            return False  # a hook abandoned past its budget: nothing waits on it
        seen: set[str] = set()
        todo = [kind]
        while todo:
            current = todo.pop()
            if current == waiter:
                return True
            if current in seen or current not in self._running:
                continue
            seen.add(current)
            todo += [waited for waiting, waited in self._waits if waiting == current]
        return False
