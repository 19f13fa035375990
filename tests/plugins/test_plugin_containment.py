"""Plugin code cannot corrupt fabricui's output or take over its process: prints go to stderr
under the plugin's name, every ``BaseException`` (exit(), os._exit(), its own Ctrl-C,
GeneratorExit, a custom one) fails only the plugin, atexit handlers are budgeted and threads
it leaves behind are named. The real Ctrl-C and the end-to-end runs are in tests/hostile."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from fabricui import hookimpl
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.types import CollectiveAlgorithm, Interconnect
from fabricui.errors import FabricError, PluginError
from fabricui.fabric import build_fabric
from fabricui.hwdb import load_catalog
from fabricui.hwdb.resolve import resolve_topology
from fabricui.plugins import PluginHost, budget, get_host, process
from fabricui.plugins import host as plugins_module


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Only the test's own plugins, a short budget, a fresh host before and after."""
    for name in ("FABRICUI_LOAD_PLUGINS", "FABRICUI_DISABLE_PLUGINS", "FABRICUI_STRICT_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FABRICUI_PLUGIN_TIMEOUT_S", "0.5")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(plugins_module, "entry_points", lambda: [])
    get_host.cache_clear()
    yield
    get_host.cache_clear()


def file_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **sources: str) -> PluginHost:
    """A host loading single-file plugins ``name.py`` with the given sources."""
    directory = tmp_path / "plugins"
    directory.mkdir()
    for name, source in sources.items():
        (directory / f"{name}.py").write_text(source)
    monkeypatch.setenv(plugins_module.ENV_PLUGINS_DIR, str(directory))
    return PluginHost(builtins=False)


def status(host: PluginHost, name: str) -> tuple[str, str | None]:
    row = next(r for r in host.describe() if r["name"] == name)
    return row["status"], row["error"]


def make_plugin(name: str, **hooks: Callable[..., Any]) -> object:
    attrs: dict[str, Any] = {"__name__": name}
    for hook, function in hooks.items():
        attrs[hook] = staticmethod(hookimpl(function))
    return type(name.title(), (), attrs)()


class Custom(BaseException):
    """What a plugin might raise that is not an ``Exception``."""


def raising(exc: BaseException) -> Callable[..., Any]:
    def hook(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return hook


def exiting(*args: Any, **kwargs: Any) -> Any:
    os._exit(7)


#: (what the plugin does, the error it is recorded with)
MISDEEDS = [
    (raising(KeyboardInterrupt("mine")), "KeyboardInterrupt: mine"),
    (raising(SystemExit(3)), "SystemExit: 3"),
    (raising(GeneratorExit()), "GeneratorExit"),
    (raising(Custom("odd")), "Custom: odd"),
    (exiting, "called os._exit(7)"),
]
IDS = ["KeyboardInterrupt", "SystemExit", "GeneratorExit", "custom", "os._exit"]


def guards_are_off() -> None:
    """Nothing of the containment is left installed once plugin code has run, but the
    stdout router while a plugin's thread still runs (it may print until the process ends)."""
    assert os._exit is process._real_exit
    assert atexit.register is process._real_register
    assert threading.Thread.start is process._real_start
    assert not isinstance(sys.stdout, process._Router) or process._plugin_threads_alive()
    assert signal.getsignal(signal.SIGINT) is not process._on_sigint
    assert process._depth == 0


# --- what plugins print ----------------------------------------------------------------------

LOUD = """\
print("hello from import")
from fabricui import hookimpl
from fabricui.engine.types import Interconnect


@hookimpl
def register_interconnects(register):
    print("in the hook", end="")
    print(", still", flush=True)
    print("unfinished", end="")
    register(Interconnect("loudnet", ("loudnet",)))
"""


def test_prints_go_to_stderr_named(monkeypatch, tmp_path, capsys):
    """At import and in hooks, a plugin's prints are stderr lines ``plugin NAME: ...``."""
    host = file_plugins(monkeypatch, tmp_path, loud=LOUD)
    assert list(host.interconnects()) == ["loudnet"]
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "plugin loud: hello from import",
        "plugin loud: in the hook, still",
        "plugin loud: unfinished",
    ]
    guards_are_off()


def test_a_plugin_thread_outliving_its_command_still_prints_on_stderr(capsys):
    """A thread a plugin started prints after the command's guards are lifted and the command
    line has put its own stdout back (``cli.main``), before the process ends: its text still
    goes to stderr, named, never after the command's result on stdout."""
    go, done = threading.Event(), threading.Event()

    def late() -> None:
        go.wait(5)
        print("late line")
        done.set()

    own = sys.stdout
    thread = threading.Thread(target=late, name="late", daemon=True)
    with process.command_scope():
        with process.running("lingerer"):  # the plugin's code starts its thread
            thread.start()
        print("the result")
    process.restore_stdout(own)
    assert isinstance(sys.stdout, process._Router)
    go.set()
    assert done.wait(5)
    thread.join(5)
    out, err = capsys.readouterr()
    assert out == "the result\n"
    assert err.splitlines() == ["plugin lingerer: late line"]
    process.restore_stdout(own)  # the thread has ended: the router goes (with no other left)
    guards_are_off()


class Chatty(CollectiveAlgorithm):
    name = "chatty"
    ops = ("all_reduce",)

    def applicable(self, group: Any, op: str) -> bool:
        print("asked")
        return True

    def time_us(self, group: Any, op: str, size_bytes: Any, protocol: str) -> Any:
        print("pricing", size_bytes)
        return np.asarray(size_bytes, dtype=float) + 1e9


def test_prints_when_called_by_the_engine_go_to_stderr(capsys):
    """A registered algorithm printing each time the engine prices it: stderr, named."""
    host = PluginHost(load_external=False, builtins=False)
    host.register(
        make_plugin("chatty", register_collective_algorithms=lambda register: register(Chatty())),
        name="chatty",
    )
    catalog = load_catalog()
    fabric = build_fabric(resolve_topology("dgx-h100", catalog), catalog)
    evaluate_collective(
        fabric, "all_reduce", [1024], algorithms=list(host.collective_algorithms().values())
    )
    out, err = capsys.readouterr()
    assert out == ""
    assert "plugin chatty: asked" in err.splitlines()
    guards_are_off()


# --- BaseException, at import, in a hook and when called ------------------------------------


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("raise KeyboardInterrupt('mine')", "KeyboardInterrupt: mine"),
        ("raise SystemExit(3)", "SystemExit: 3"),
        ("raise GeneratorExit", "GeneratorExit"),
        ("class Odd(BaseException):\n    pass\nraise Odd('odd')", "Odd: odd"),
        ("import os\nos._exit(7)", "called os._exit(7)"),
    ],
    ids=IDS,
)
def test_import_raising_any_base_exception_is_named_and_skipped(
    monkeypatch, tmp_path, source: str, error: str
):
    """The plugin is skipped with its error; its neighbour loads; the process goes on."""
    good = "from fabricui import hookimpl\nfrom fabricui.engine.types import Interconnect\n"
    good += "@hookimpl\ndef register_interconnects(register):\n"
    good += "    register(Interconnect('fine', ('fine',)))\n"
    host = file_plugins(monkeypatch, tmp_path, bad=source, good=good)
    assert status(host, "bad") == ("failed", error)
    assert list(host.interconnects()) == ["fine"]
    guards_are_off()


@pytest.mark.parametrize(("misdeed", "error"), MISDEEDS, ids=IDS)
def test_hook_raising_any_base_exception_is_named_and_skipped(misdeed, error: str):
    """Same in a hook: its contributions are dropped, a good plugin's kept."""
    host = PluginHost(load_external=False, builtins=False)
    host.register(make_plugin("bad", register_interconnects=misdeed), name="bad")
    host.register(
        make_plugin(
            "good", register_interconnects=lambda register: register(Interconnect("ok", ("ok",)))
        ),
        name="good",
    )
    assert list(host.interconnects()) == ["ok"]
    assert status(host, "bad") == ("failed", f"register_interconnects: {error}")
    guards_are_off()


@pytest.mark.parametrize(("misdeed", "error"), MISDEEDS, ids=IDS)
def test_call_raising_any_base_exception_is_named_and_skipped(misdeed, error: str):
    """An algorithm whose ``time_us`` ends that way: priced without it, plugin failed."""
    algorithm = type("Bad", (Chatty,), {"name": "bad", "time_us": misdeed})()
    host = PluginHost(load_external=False, builtins=False)
    host.register(
        make_plugin("bad", register_collective_algorithms=lambda register: register(algorithm)),
        name="bad",
    )
    catalog = load_catalog()
    fabric = build_fabric(resolve_topology("dgx-h100", catalog), catalog)
    with pytest.raises(FabricError, match="plugin bad: collective algorithm 'bad' skipped"):
        evaluate_collective(
            fabric,
            "all_reduce",
            [1024],
            algorithms=list(host.collective_algorithms().values()),
            algo="bad",
        )
    state, message = status(host, "bad")
    assert state == "failed" and message == f"collective algorithm 'bad': time_us: {error}"
    guards_are_off()


def test_importer_calling_exit_is_one_error_naming_it():
    """An importer's ``parse`` calling ``os._exit``: the import is one PluginError line."""
    host = PluginHost(load_external=False, builtins=False)
    host.register(
        make_plugin("quitter", register_importers=lambda register: register("q", exiting)),
        name="quitter",
    )
    with pytest.raises(PluginError, match=r"plugin quitter: importer 'q': parse called os._exit"):
        host.importers()["q"]("text")
    guards_are_off()


def test_the_users_ctrl_c_is_not_the_plugins():
    """A ``KeyboardInterrupt`` after a SIGINT arrived is re-raised (the user's Ctrl-C);
    without one it is the plugin's failure."""
    mark = process.sigints()
    error = process.as_plugin_error(KeyboardInterrupt(), mark)
    assert isinstance(error, process.PluginAborted)
    assert error.message == "KeyboardInterrupt"
    process._sigints += 1  # what the counting handler does on SIGINT
    try:
        with pytest.raises(KeyboardInterrupt):
            process.as_plugin_error(KeyboardInterrupt(), mark)
    finally:
        process._sigints -= 1


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX thread signals")
@pytest.mark.parametrize("seconds", [None, 30.0], ids=["no-budget", "budget"])
def test_a_ctrl_c_the_kernel_hands_to_the_plugins_thread_still_stops_the_caller(seconds):
    """The kernel delivers a process's SIGINT to any thread that does not block it. Landing
    on the plugin's thread, it only sets Python's flag; the caller's wait must still end
    (in one ``WAIT_SLICE_S``) with ``KeyboardInterrupt`` on the caller's thread."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Python runs signal handlers on the main thread only")

    def signalled_then_slow() -> None:
        time.sleep(0.3)  # the caller is in its wait by then
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(3)

    # Python's own handler, also when the tests run as a background job (SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        start = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            budget.call_with_budget(signalled_then_slow, seconds, thread=True)
        assert time.perf_counter() - start < 2
    finally:
        signal.signal(signal.SIGINT, previous)


# --- atexit handlers and threads ---------------------------------------------------------------

ATEXIT = """\
import atexit, time

def slow():
    time.sleep(30)

def broken():
    raise RuntimeError("at exit")

atexit.register(slow)
atexit.register(broken)
"""


def test_atexit_handlers_of_plugins_are_budgeted(monkeypatch, tmp_path, capsys):
    """Registered in the plugin's name and wrapped: at exit a sleeping one is abandoned
    after the budget, a raising one is one line; neither can hold or crash the exit."""
    file_plugins(monkeypatch, tmp_path, ender=ATEXIT)
    wrappers = {f.__name__: w for f, w in process._wrapped.items() if w.name == "ender"}
    try:
        assert set(wrappers) == {"slow", "broken"}
        start = time.perf_counter()
        wrappers["slow"]()
        assert time.perf_counter() - start < 3
        wrappers["broken"]()
        err = capsys.readouterr().err.splitlines()
        assert err == [
            "fabricui: plugin ender: atexit handler slow: took longer than 0.5 s "
            "(FABRICUI_PLUGIN_TIMEOUT_S); abandoned",
            "fabricui: plugin ender: atexit handler broken: RuntimeError: at exit",
        ]
    finally:
        for function in [f for f, w in list(process._wrapped.items()) if w.name == "ender"]:
            process._unregister(function)  # not at this test process's exit
    guards_are_off()


THREADS = """\
import threading
stop = threading.Event()


def start_another():
    threading.Thread(target=stop.wait, name="grandchild", daemon=False).start()
    stop.wait()


threading.Thread(target=start_another, name="lingering", daemon=False).start()
"""


def test_threads_a_plugin_leaves_running_are_named(monkeypatch, tmp_path):
    """Threads that are not daemons, started at import and by those threads: the plugin's,
    so ``exit_process`` would name them and not wait for them (the exit itself is run end
    to end in tests/hostile). A thread fabricui starts is nobody's."""
    with process.command_scope():  # the guards stay on while the command runs
        own = threading.Thread(target=time.sleep, args=(0.5,), name="fabricui's own")
        own.start()
        file_plugins(monkeypatch, tmp_path, lingerer=THREADS)
        module = sys.modules["fabricui_file_plugin_lingerer"]
        try:
            deadline = time.monotonic() + 5
            while len(process.leftover_threads()) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            found = sorted((name, t.name) for name, t in process.leftover_threads())
            assert found == [("lingerer", "grandchild"), ("lingerer", "lingering")]
        finally:
            module.stop.set()
            own.join()
    for thread in threading.enumerate():
        if thread.name in ("lingering", "grandchild"):
            thread.join(5)
    assert process.leftover_threads() == []


# --- the watchdog for plugin code that holds the interpreter lock -----------------------------


class FakeFaulthandler:
    """Counts arming and disarming instead of starting faulthandler's thread."""

    def __init__(self) -> None:
        self.armed: list[float] = []
        self.cancelled = 0

    def dump_traceback_later(self, timeout: float, **options: Any) -> None:
        assert options["exit"] is True
        self.armed.append(timeout)

    def cancel_dump_traceback_later(self) -> None:
        self.cancelled += 1


@pytest.fixture
def fake_faulthandler(monkeypatch: pytest.MonkeyPatch) -> FakeFaulthandler:
    from fabricui.plugins import budget

    fake = FakeFaulthandler()
    monkeypatch.setattr(budget, "faulthandler", fake)
    return fake


def test_watchdog_arms_around_a_call_on_the_main_thread(fake_faulthandler):
    """Armed at budget plus grace for the call, disarmed after; none without a budget."""
    from fabricui.plugins import budget

    process.call_plugin(lambda: None, 2.0, "p")
    assert fake_faulthandler.armed == [2.0 + budget.WATCHDOG_GRACE_S]
    assert fake_faulthandler.cancelled == 1
    process.call_plugin(lambda: None, None, "p")
    assert len(fake_faulthandler.armed) == 1


def test_watchdog_stays_armed_through_a_batch(fake_faulthandler):
    """Calls one after another in a batch arm it once (arming costs a thread) and it is
    disarmed when the batch ends, before fabricui's own work goes on."""
    from fabricui.plugins import budget

    with budget.batch():
        for _ in range(20):
            process.call_plugin(lambda: None, 2.0, "p")
        assert len(fake_faulthandler.armed) == 1 and fake_faulthandler.cancelled == 0
    assert fake_faulthandler.cancelled == 1


def test_watchdog_is_rearmed_when_too_little_time_is_left(fake_faulthandler, monkeypatch):
    """A batch running longer than half the grace re-arms before the next call."""
    from fabricui.plugins import budget

    clock = [1000.0]
    monkeypatch.setattr(budget.time, "monotonic", lambda: clock[0])
    with budget.batch():
        process.call_plugin(lambda: None, 2.0, "p")
        clock[0] += budget.WATCHDOG_GRACE_S / 2 + 0.1
        process.call_plugin(lambda: None, 2.0, "p")
    assert len(fake_faulthandler.armed) == 2


def test_watchdog_never_arms_off_the_main_thread(fake_faulthandler):
    """In the explorer plugins load in a worker: ending the process there would leave the
    terminal raw, so no watchdog."""
    worker = threading.Thread(target=lambda: process.call_plugin(lambda: None, 2.0, "p"))
    worker.start()
    worker.join()
    assert fake_faulthandler.armed == []
