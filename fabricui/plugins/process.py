"""What plugin code may not do to the fabricui process: write on its standard output, end it,
keep it alive after its work is done, or hide the user's Ctrl-C.

Plugin code runs inside ``running(name)`` (the host wraps every import, hook call and call
into what a plugin registered in it; the command line wraps a whole command in
``command_scope``). While any such scope is open:

- ``sys.stdout`` is a router: what a plugin's thread writes goes to standard error, each line
  prefixed ``plugin NAME:``, so ``--json`` output stays valid JSON; what fabricui writes
  passes through untouched.
- ``os._exit`` called from a plugin's thread raises ``PluginExit`` (a ``SystemExit``) instead
  of ending the process, so the plugin is named and skipped.
- ``atexit.register`` called from a plugin's thread registers the handler wrapped in the
  plugin time budget: at exit it runs in a daemon thread, is abandoned with one named line
  when it overruns, and an error in it is one named line.
- On the main thread a SIGINT handler counts signals, so a ``KeyboardInterrupt`` can be told
  apart: one that follows a real SIGINT (Ctrl-C) is the user's and stops fabricui; one a
  plugin raised itself is the plugin's failure (``as_plugin_error``).

A thread is a plugin's when it runs plugin code for the host (``run_as``, which
``call_plugin`` uses on the thread it starts for the call) or was started by a plugin's
thread (``threading.Thread.start`` notes who started it while the guards are installed).
``exit_process`` ends the program without waiting for plugin threads that are not daemons.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Callable, NoReturn, TextIO

from fabricui.errors import PluginError, exception_line
from fabricui.plugins.budget import PluginTimeout, call_with_budget, timeout_s, watchdog
from fabricui.streams import StreamWrapper

#: The real ``os._exit``, for ``exit_process`` (plugin code only ever sees the guarded one).
_real_exit = os._exit
_pid = os.getpid()
"""This process: a child a plugin forked (``multiprocessing``) ends with the real
``os._exit``, or it would run on in the plugin's code after its work."""
_real_register = atexit.register
_real_unregister = atexit.unregister
_real_start = threading.Thread.start

_local = threading.local()
"""``plugin``: the name of the plugin whose code the current thread runs, if any."""
_owners: weakref.WeakKeyDictionary[threading.Thread, str] = weakref.WeakKeyDictionary()
"""Threads that run plugin code, or that plugin code started: thread -> plugin name."""
_lock = threading.RLock()
_depth = 0
"""How many scopes are open (the guards are installed while it is above 0)."""
_command = 0
"""How many ``command_scope`` are open: then stdout belongs to the main thread alone."""
_saved: dict[str, Any] = {}
_sigints = 0
"""SIGINTs received while the counting handler was installed."""
_wrapped: dict[Any, Callable[[], None]] = {}
"""atexit handlers plugins registered -> the budgeted wrapper registered in their place."""


class PluginExit(SystemExit):
    """Raised in plugin code in place of ``os._exit``: a plugin may not end the process."""

    def __str__(self) -> str:
        return f"called os._exit({self.code!r})"


class PluginAborted(PluginError):
    """Plugin code raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
    ``GeneratorExit``, its own ``KeyboardInterrupt``, a custom one): reported as
    ``Type: message`` and handled as any other plugin failure."""


# --- who runs what ---------------------------------------------------------------------------


def run_as(name: str, function: Callable[[], Any]) -> Any:
    """``function()`` on the current thread as plugin ``name``'s code (also in a thread
    started to run it: ``running`` holds the guards on the thread that waits)."""
    thread = threading.current_thread()
    if thread is not threading.main_thread():
        _owners.setdefault(thread, name)
    previous = getattr(_local, "plugin", None)
    _local.plugin = name
    try:
        return function()
    finally:
        _local.plugin = previous


def call_plugin(
    function: Callable[[], Any], seconds: float | None, owner: str, isolate: bool = True
) -> Any:
    """``function()`` as plugin ``owner``'s code: contained (``running``), within ``seconds``
    (``budget.call_with_budget``) and, on the main thread, under the watchdog.

    Args:
        function: The plugin code to run.
        seconds: The budget [s]; None for no limit (no watchdog).
        owner: The plugin's name.
        isolate: Run it in a thread of its own even without a budget, so that Ctrl-C
            never lands in plugin code.

    Returns:
        What ``function`` returned.

    Raises:
        PluginTimeout: It did not return within ``seconds``.
        BaseException: Whatever ``function`` raised (see ``as_plugin_error``).
    """
    with running(owner), watchdog(seconds):
        return call_with_budget(lambda: run_as(owner, function), seconds, thread=isolate)


def owner(thread: threading.Thread | None = None) -> str | None:
    """The plugin whose code ``thread`` (default: the current one) runs or which started it.

    In a ``command_scope`` every thread but the main one counts as a plugin's (the command
    line starts none of its own): one no scope identified is named by its thread name.
    """
    thread = thread or threading.current_thread()
    if thread is threading.current_thread():
        name = getattr(_local, "plugin", None)
        if name is not None:
            return str(name)
    name = _owners.get(thread)
    if name is None and _command and thread is not threading.main_thread():
        return f"(thread {thread.name})"
    return name


@contextlib.contextmanager
def running(name: str) -> Iterator[None]:
    """Run plugin ``name``'s code on this thread, with the guards installed.

    Args:
        name: The plugin's name, for what it prints and for what goes wrong.
    """
    previous = getattr(_local, "plugin", None)
    _install()
    _local.plugin = name
    try:
        yield
    finally:
        _local.plugin = previous
        _flush_partial(name)
        _uninstall()


@contextlib.contextmanager
def command_scope() -> Iterator[None]:
    """The guards for a whole command-line run: plugin threads still running after the hook
    that started them (abandoned past their budget, or their own) cannot write on stdout
    nor end the process while the command prints its result."""
    global _command
    _install()
    with _lock:
        _command += 1
    try:
        yield
    finally:
        with _lock:
            _command -= 1
        _uninstall()


def _start(self: threading.Thread) -> None:
    """``Thread.start`` while the guards are installed: a thread a plugin's thread starts is
    that plugin's too (what it prints, whether it may end the process, who left it)."""
    name = owner()
    if name is not None and self not in _owners:
        _owners[self] = name
    _real_start(self)


# --- Ctrl-C ----------------------------------------------------------------------------------


def sigints() -> int:
    """How many SIGINTs arrived so far (while the counting handler was installed); take it
    before running plugin code and pass it to ``as_plugin_error``."""
    return _sigints


def _on_sigint(signum: int, frame: Any) -> None:
    """Python's default SIGINT behaviour (raise ``KeyboardInterrupt``), counted."""
    global _sigints
    _sigints += 1
    raise KeyboardInterrupt


def as_plugin_error(exc: BaseException, mark: int) -> Exception:
    """What plugin code raised, as the ``Exception`` to record against the plugin.

    Args:
        exc: What the plugin code raised (or what its budget thread handed back).
        mark: ``sigints()`` taken before the plugin code started.

    Returns:
        ``exc`` when it is an ``Exception``, else a ``PluginAborted`` naming it.

    Raises:
        KeyboardInterrupt: ``exc`` itself, when a SIGINT arrived since ``mark``: the user
            pressed Ctrl-C (or someone sent SIGINT), which stops fabricui whatever was
            running.
    """
    if isinstance(exc, KeyboardInterrupt) and _sigints != mark:
        raise exc
    if isinstance(exc, Exception):
        return exc
    error = PluginAborted(str(exc) if isinstance(exc, PluginExit) else exception_line(exc))
    error.__cause__ = exc
    return error


# --- installing and removing the guards -----------------------------------------------------


def _install() -> None:
    global _depth
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        _saved.clear()
        stdout = sys.stdout
        if stdout is not None and not isinstance(stdout, _Router):
            router = _Router(stdout)
            sys.stdout = router
            _saved["stdout"] = router
        os._exit = _guarded_exit
        atexit.register = _register  # type: ignore[assignment]
        atexit.unregister = _unregister
        threading.Thread.start = _start  # type: ignore[method-assign]
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, TypeError):
                if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                    signal.signal(signal.SIGINT, _on_sigint)
                    _saved["sigint"] = True


def _uninstall() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth > 0:
            return
        router: _Router | None = _saved.pop("stdout", None)
        # Otherwise someone replaced it meanwhile (theirs now), or plugin threads outlive the
        # command: they still print until the process ends, so their text stays off stdout.
        if router is not None and sys.stdout is router and not _plugin_threads_alive():
            sys.stdout = router.stream
        os._exit = _real_exit
        atexit.register = _real_register
        atexit.unregister = _real_unregister
        threading.Thread.start = _real_start  # type: ignore[method-assign]
        if _saved.pop("sigint", False) and threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, TypeError):
                if signal.getsignal(signal.SIGINT) is _on_sigint:
                    signal.signal(signal.SIGINT, signal.default_int_handler)


# --- standard output -------------------------------------------------------------------------

_partial: dict[str, str] = {}
"""Plugin name -> the start of a line it has not finished yet."""


class _Router(StreamWrapper):
    """``sys.stdout`` while plugin code may run: plugin threads' text goes to stderr, named."""

    def write(self, text: str) -> int:
        """Write ``text``: on stdout for fabricui, on stderr with a prefix for a plugin."""
        name = owner()
        if name is None:
            return self.stream.write(text)
        with _lock:
            lines = (_partial.pop(name, "") + text).split("\n")
            if lines[-1]:
                _partial[name] = lines[-1]
        _to_stderr(name, lines[:-1])
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def restore_stdout(stream: TextIO) -> None:
    """Make ``stream`` standard output again (the command line's own, after a command);
    while plugin threads outlive the command, behind the router kept for them, so that what
    they print until the process ends still goes to standard error."""
    current = sys.stdout
    if isinstance(current, _Router) and _plugin_threads_alive():
        current.stream = stream
    else:
        sys.stdout = stream


def warn(line: str, stream: TextIO | None = None) -> None:
    """Write one line on ``stream`` (default standard error); nothing when it is closed.

    Never ``print(..., file=sys.stderr)`` where stderr may be closed (``2>&-``): print
    then falls back to standard output, in the middle of the command's result.
    """
    out = stream if stream is not None else sys.stderr
    if out is None:
        return
    with contextlib.suppress(BaseException):
        out.write(line + "\n")


def _to_stderr(name: str, lines: list[str]) -> None:
    """Write a plugin's complete lines on standard error, each as ``plugin NAME: line``."""
    stream = sys.stderr
    if stream is None or not lines:
        return
    with contextlib.suppress(OSError, ValueError):
        stream.write("".join(f"plugin {name}: {line}\n" for line in lines))


def _flush_partial(name: str) -> None:
    """A line a plugin left unfinished when its scope closed: written as it is."""
    with _lock:
        rest = _partial.pop(name, "")
    if rest:
        _to_stderr(name, [rest])


# --- ending the process ----------------------------------------------------------------------


def _guarded_exit(status: int) -> NoReturn:
    """``os._exit`` as plugin code sees it: raises ``PluginExit`` in a plugin's thread."""
    name = owner()
    if name is None or os.getpid() != _pid:
        _real_exit(status)
    if getattr(_local, "plugin", None) is None:
        # A thread the plugin started itself: no host call is waiting to record this.
        _to_stderr(name, [f"called os._exit({status!r}); ignored, its thread ends"])
    raise PluginExit(status)


def leftover_threads() -> list[tuple[str, threading.Thread]]:
    """Plugin threads that are not daemons and still run, with the plugin of each."""
    return [
        (_owners[thread], thread)
        for thread in threading.enumerate()
        if thread in _owners and not thread.daemon and thread.is_alive()
    ]


def _plugin_threads_alive() -> bool:
    """Threads a plugin started, or abandoned plugin calls, are still running."""
    return bool(leftover_threads() or _busy_plugin_threads())


def _busy_plugin_threads() -> list[threading.Thread]:
    """Daemon threads still running plugin code (calls abandoned past their budget, or
    interrupted by Ctrl-C). Not ``is_alive()``: after a ``join`` that Ctrl-C interrupted,
    Python 3.11 may report the joined thread stopped while it still runs."""
    return [t for t in threading.enumerate() if t.daemon and t in _owners]


def exit_process(status: int, stream: TextIO | None = None) -> NoReturn:
    """End the program with ``status`` without waiting for plugin threads.

    Python waits for every thread that is not a daemon before it exits, so a plugin's
    endless thread would keep ``fabricui`` running forever; and a daemon thread caught
    writing on stderr while the interpreter shuts down aborts the process ("Fatal Python
    error: could not acquire lock ... possibly due to daemon threads", SIGABRT). So when
    plugin threads are still running, those that are not daemons are named in one line
    each, the atexit handlers run (plugins' ones within their budget), the streams are
    flushed and the process ends with ``os._exit(status)``, skipping the interpreter's
    shutdown; otherwise it is a normal ``sys.exit``.

    Args:
        status: The exit status.
        stream: Where to name the threads (default ``sys.stderr``).
    """
    leftovers = leftover_threads()
    if not leftovers and not _busy_plugin_threads():
        sys.exit(status)
    # The process ends below without waiting for plugin threads; a collection started in one
    # of them meanwhile (3.13 runs it when a signal wakes the thread) crashed CPython 3.13.0.
    gc.disable()
    for name, thread in leftovers:
        warn(
            f"fabricui: plugin {name} left thread {thread.name!r} running; "
            "exiting without waiting for it",
            stream,
        )
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is not None:
        with contextlib.suppress(BaseException):
            run_exitfuncs()
    for each in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            if each is not None:
                each.flush()
    _real_exit(status)


# --- atexit ----------------------------------------------------------------------------------


def _register(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """``atexit.register`` as plugin code sees it: a plugin's handler is budgeted."""
    name = owner()
    if name is None:
        return _real_register(function, *args, **kwargs)
    wrapper = _AtExit(name, function, args, kwargs)
    with _lock:
        _wrapped[function] = wrapper
    _real_register(wrapper)
    return function


def _unregister(function: Callable[..., Any]) -> None:
    """``atexit.unregister`` that also finds the wrapper ``_register`` put in its place."""
    with _lock:
        wrapper = _wrapped.pop(function, None)
    if wrapper is not None:
        _real_unregister(wrapper)
    _real_unregister(function)


class _AtExit:
    """A plugin's atexit handler, run at exit in a daemon thread within the plugin budget."""

    def __init__(
        self, name: str, function: Callable[..., Any], args: tuple[Any, ...], kwargs: Any
    ) -> None:
        self.name = name
        self.function = function
        self.args = args
        self.kwargs = kwargs

    def __call__(self) -> None:
        label = getattr(self.function, "__qualname__", None) or repr(self.function)
        try:
            with running(self.name):
                call_with_budget(
                    lambda: run_as(self.name, lambda: self.function(*self.args, **self.kwargs)),
                    timeout_s(),
                    thread=True,
                )
        except PluginTimeout as exc:
            problem = exc.message
        except BaseException as exc:  # nothing a handler does may reach the interpreter
            problem = exception_line(exc)
        else:
            return
        warn(f"fabricui: plugin {self.name}: atexit handler {label}: {problem}")
