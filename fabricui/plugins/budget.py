"""How long plugin code may run: the time budget of one call, the thread that enforces it,
and the watchdog for plugin code that holds the interpreter lock.

A budget is enforced by running the call in a daemon thread and waiting for it at most the
budget; past it the call is abandoned (Python cannot stop a thread) and the plugin skipped.
That wait needs the interpreter lock. Plugin code that never releases it (one long C-level
operation such as ``7**(7**11)``, a regular expression backtracking, a C extension's busy
loop) freezes every thread, the budget's included, until it ends. For that case only, a
call made from the main thread with a budget also has ``faulthandler``'s watchdog armed
(``watchdog``, which ``process.call_plugin`` uses); it runs without the lock. If the call
is still running ``watchdog_s(budget)`` seconds later (a little sooner within a
``batch``), it writes the stack of every thread on standard error (a ``Timeout
(0:00:11)!`` line, then the stacks, the plugin's file and line among them) and ends the
process with status 1. There is no gentler way out of a frozen interpreter, and it beats
hanging for hours.
"""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

from fabricui.errors import PluginError

#: Environment variable: the time budget of one plugin call [s] (0 or less: no limit).
ENV_TIMEOUT = "FABRICUI_PLUGIN_TIMEOUT_S"
#: Time a plugin's hook (or a call into what it registered) may take [s] before it is skipped.
DEFAULT_TIMEOUT_S = 5.0
#: Longest budget [s] (a day); a longer one means no limit, as 0 and ``inf`` do.
MAX_TIMEOUT_S = 86_400.0
#: Extra time past the budget before the watchdog ends a frozen process [s] (see
#: ``watchdog_s``).
WATCHDOG_GRACE_S = 6.0
#: Longest single wait for a plugin call [s]: how late the caller may notice a signal the
#: kernel delivered to another thread (see ``call_with_budget``).
WAIT_SLICE_S = 0.1

_watch_depth = 0
"""Open ``watchdog`` and ``batch`` scopes on the main thread (the watchdog is disarmed when
the last one closes)."""
_armed_until: float | None = None
"""When the armed watchdog fires (``time.monotonic()``), or None when it is not armed."""


def timeout_s() -> float | None:
    """The time budget of one plugin call, from ``FABRICUI_PLUGIN_TIMEOUT_S`` [s].

    Returns:
        ``DEFAULT_TIMEOUT_S`` when unset or not a number; None (no limit) for 0 or less,
        and for more than ``MAX_TIMEOUT_S`` (a budget longer than any run is none: a
        thread cannot be waited for 10^10 s).
    """
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S
    if math.isnan(value):
        return DEFAULT_TIMEOUT_S
    return value if 0 < value <= MAX_TIMEOUT_S else None


def watchdog_s(budget: float) -> float:
    """How long a call with ``budget`` may freeze the interpreter before the process ends:
    the budget plus ``WATCHDOG_GRACE_S`` [s] (11 s for the default budget)."""
    return budget + WATCHDOG_GRACE_S


class PluginTimeout(PluginError):
    """A plugin call ran past its time budget (it is abandoned, still running, in a thread)."""


def call_with_budget(
    function: Callable[[], Any], seconds: float | None, thread: bool = False
) -> Any:
    """``function()``, abandoned when it takes longer than ``seconds``.

    The call runs in a daemon thread, so a hook that sleeps or loops forever cannot hold
    the app (nor its exit); Python cannot stop the thread, so it is left to finish alone.
    The caller waits for it in slices (``WAIT_SLICE_S``), so Ctrl-C reaches the caller's
    thread (as ``KeyboardInterrupt``) and never the plugin code, which cannot swallow it:
    the kernel may hand the signal to any thread, and one that lands on the worker only
    sets Python's flag, which a caller blocked in one endless ``join()`` would never see.

    Args:
        function: What to call.
        seconds: The budget; None for no limit.
        thread: Run in a thread even without a budget (for Ctrl-C); with neither,
            ``function`` is called directly.

    Returns:
        What ``function`` returned.

    Raises:
        PluginTimeout: It did not return within ``seconds``.
        BaseException: Whatever ``function`` raised.
    """
    if seconds is None and not thread:
        return function()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = function()
        except BaseException as exc:  # handed to the caller's thread as it is
            box["error"] = exc

    worker = threading.Thread(target=target, name="fabricui-plugin-call", daemon=True)
    worker.start()
    deadline = None if seconds is None else time.monotonic() + seconds
    while worker.is_alive():
        left = WAIT_SLICE_S if deadline is None else deadline - time.monotonic()
        if left <= 0:
            break
        worker.join(min(left, WAIT_SLICE_S))  # returns at once when the call ends
    if worker.is_alive():
        raise PluginTimeout(f"took longer than {seconds:g} s ({ENV_TIMEOUT}); abandoned")
    if "error" in box:
        raise box["error"]
    return box["result"]


@contextlib.contextmanager
def watchdog(seconds: float | None) -> Iterator[None]:
    """Have ``faulthandler``'s watchdog armed around a call with budget ``seconds`` made on
    the main thread (see the module).

    Arming and disarming start and stop a thread (about 0.3 ms), so within a ``batch`` of
    calls the watchdog stays armed and is re-armed only when less than the call's budget
    and half the grace is left: a frozen call ends the process between ``seconds`` plus
    half the grace and ``watchdog_s(seconds)`` after it started.
    """
    global _armed_until
    stderr = sys.__stderr__
    if seconds is None or stderr is None or not _watchable():
        yield
        return
    needed = time.monotonic() + seconds + WATCHDOG_GRACE_S / 2
    if _armed_until is None or _armed_until < needed:
        try:
            faulthandler.dump_traceback_later(watchdog_s(seconds), exit=True, file=stderr)
        except (OSError, ValueError, RuntimeError):  # no usable stderr descriptor
            yield
            return
        _armed_until = time.monotonic() + watchdog_s(seconds)
    with _watch_scope():
        yield


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Calls into plugins made one after another on the main thread (loading every plugin,
    calling one hook of each): the watchdog stays armed from one to the next."""
    if not _watchable():
        yield
        return
    with _watch_scope():
        yield


def _watchable() -> bool:
    """Whether a watchdog may end this process now: on the main thread, with a stderr."""
    return threading.current_thread() is threading.main_thread() and sys.__stderr__ is not None


@contextlib.contextmanager
def _watch_scope() -> Iterator[None]:
    global _watch_depth, _armed_until
    _watch_depth += 1
    try:
        yield
    finally:
        _watch_depth -= 1
        if _watch_depth == 0 and _armed_until is not None:
            faulthandler.cancel_dump_traceback_later()
            _armed_until = None
