"""Each hook category collected once, however many threads ask for it at the same time.

The explorer's workers ask the plugin host for a category (its strategies, its link
generations) concurrently: the first thread to ask collects it (calls the plugins' hooks),
the others wait for its result, so no hook is called twice and no failure is recorded
twice. No lock is held while a category is collected: a hook (run in a thread of its own,
see ``budget``) may ask the host for another category (third-party hook code can call
anything, ``fabricui.api.load_catalog()`` among it). A request that would wait on itself
(its own category, or two collections waiting on each other) is refused at once: it would
wait for ever with no time budget, and the whole budget with one.

Cycles are found as ``importlib`` finds them between module locks: a blocked thread waits
on one other thread (the collector of the category it asked for, or the hook thread a
collector runs), so a request is a cycle when that chain of waits, from the category's
collector, comes back to the asking thread. A collector stops waiting on a hook it
abandons past its budget, so that hook's own waits no longer count for anyone else.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Callable

from fabricui.errors import PluginError

_MISSING = object()


class Once:
    """Collects each category once: ``get(kind, results, collect)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Guards ``_running`` and ``_waits`` (never held while a category is collected)."""
        self._running: dict[str, tuple[threading.Thread, threading.Event]] = {}
        """Categories being collected -> (the collecting thread, set when it ends)."""
        self._waits: dict[threading.Thread, threading.Thread] = {}
        """Blocked thread -> the thread it waits on. Never a cycle: each wait is added
        only after checking it closes none (or, for a hook thread, before it can wait)."""

    def get(self, kind: str, results: dict[str, Any], collect: Callable[[], Any]) -> Any:
        """``results[kind]``, collected first by ``collect`` when no thread has; a thread
        collecting it already is waited for.

        ``collect`` returns the result and stores it in ``results``, or not (a stale one,
        see ``PluginHost.register``): its thread gets it all the same, the threads that
        waited for it collect again.

        Raises:
            PluginError: ``kind``'s collection waits on the current thread (a cycle).
        """
        me = threading.current_thread()
        while True:
            with self._lock:
                found = results.get(kind, _MISSING)
                if found is not _MISSING:
                    return found
                running = self._running.get(kind)
                if running is None:
                    done = threading.Event()
                    self._running[kind] = (me, done)
                elif self._waits_on(running[0], me):
                    raise PluginError(
                        f"asked the plugin host for {kind}, whose collection waits on this "
                        "call (a cycle)"
                    )
                else:
                    self._waits[me] = running[0]
            if running is None:
                try:
                    return collect()
                finally:
                    with self._lock:
                        del self._running[kind]
                    done.set()
            try:
                running[1].wait()
            finally:
                with self._lock:
                    del self._waits[me]
            # collected (or not kept, or its collector raised): looked up again

    @contextlib.contextmanager
    def hook_thread(self, function: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
        """``function`` wrapped to run in a hook's thread: inside the block the current
        thread waits on that one (a category the hook asks for whose collection waits on
        this thread is a cycle); past it (the hook returned or was abandoned) no longer."""
        waiter = threading.current_thread()
        waiting = [True]

        def run() -> Any:
            with self._lock:
                if waiting and threading.current_thread() is not waiter:
                    self._waits[waiter] = threading.current_thread()
            return function()

        try:
            yield run
        finally:
            with self._lock:
                waiting.clear()  # a hook thread that starts late waits on no one
                self._waits.pop(waiter, None)

    def _waits_on(self, thread: threading.Thread, me: threading.Thread) -> bool:
        """Whether ``thread`` waits on ``me``, directly or through threads it waits on;
        under ``_lock``."""
        current: threading.Thread | None = thread
        while current is not None:
            if current is me:
                return True
            current = self._waits.get(current)
        return False
