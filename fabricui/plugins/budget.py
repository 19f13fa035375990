"""How long plugin code may run: the time budget of one call, the thread that enforces it,
and the watchdog for plugin code that holds the interpreter lock.

A budget is enforced by running the call in a daemon thread and waiting for it at most the
budget; past it the call is abandoned (Python cannot stop a thread) and the plugin skipped.
That wait needs the interpreter lock. Plugin code that never releases it (one long
C-level operation such as ``7**(7**11)``, a regular expression backtracking, a C extension's
busy loop) freezes every thread, the budget's included, until it ends. For that case only,
a call made from the main thread with a budget also arms ``faulthandler``'s watchdog
(``watchdog``; ``process.call_plugin`` does), which
runs without the lock: if the call is still running ``watchdog_s(budget)`` seconds later,
it writes the stack of every thread on standard error (the plugin's file and line first
among them, after a ``Timeout (0:00:11)!`` line) and ends the process with status 1. There
is no gentler way out of a frozen interpreter, and it beats hanging for hours.
"""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable

from fabricui.errors import PluginError

#: Environment variable: the time budget of one plugin call [s] (0 or less: no limit).
ENV_TIMEOUT = "FABRICUI_PLUGIN_TIMEOUT_S"
#: Time a plugin's hook (or a call into what it registered) may take [s] before it is skipped.
DEFAULT_TIMEOUT_S = 5.0
#: Extra time past the budget before the watchdog ends a frozen process [s] (see
#: ``watchdog_s``).
WATCHDOG_GRACE_S = 6.0

_watchdog_armed = False
"""Whether a call on the main thread has armed the watchdog (calls nest)."""


def timeout_s() -> float | None:
    """The time budget of one plugin call, from ``FABRICUI_PLUGIN_TIMEOUT_S`` [s].

    Returns:
        ``DEFAULT_TIMEOUT_S`` when unset or not a number; None (no limit) for 0 or less.
    """
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S
    if math.isnan(value):
        return DEFAULT_TIMEOUT_S
    return value if 0 < value < math.inf else None


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
    The caller waits for it in a way a signal interrupts, so Ctrl-C reaches the caller's
    thread (as ``KeyboardInterrupt``) and never the plugin code, which cannot swallow it.

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
    worker.join(seconds)
    if worker.is_alive():
        raise PluginTimeout(f"took longer than {seconds:g} s ({ENV_TIMEOUT}); abandoned")
    if "error" in box:
        raise box["error"]
    return box["result"]


@contextlib.contextmanager
def watchdog(seconds: float | None) -> Iterator[None]:
    """Arm ``faulthandler``'s watchdog around a call with budget ``seconds`` made on the main
    thread (see the module); nested calls keep the outer one's."""
    global _watchdog_armed
    stream = sys.__stderr__
    if (
        seconds is None
        or _watchdog_armed
        or threading.current_thread() is not threading.main_thread()
        or stream is None
    ):
        yield
        return
    try:
        faulthandler.dump_traceback_later(watchdog_s(seconds), exit=True, file=stream)
    except (OSError, ValueError, RuntimeError):  # no usable stderr descriptor
        yield
        return
    _watchdog_armed = True
    try:
        yield
    finally:
        _watchdog_armed = False
        faulthandler.cancel_dump_traceback_later()
