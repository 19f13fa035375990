"""The ``fabricui`` process against misbehaving plugins and odd standard streams: its JSON
stays JSON, it ends promptly with a sensible status and never with a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _hostile import Run, command, environment, no_traceback, run

PATH_JSON = ("path", "-t", "dgx-h100", "--src", "0", "--dst", "1", "--json")

#: Plugins that misbehave in every way a plugin may try on the process.
MISBEHAVING = {
    "loud": """\
print("hello from import")
from fabricui import hookimpl
from fabricui.engine.types import Interconnect


@hookimpl
def register_interconnects(register):
    print("in the hook")
    register(Interconnect("loudnet", ("loudnet",)))
""",
    "interrupter": "raise KeyboardInterrupt('not the user')\n",
    "generator": "raise GeneratorExit\n",
    "custom": "class Odd(BaseException):\n    pass\n\n\nraise Odd('odd')\n",
    "quitter": "import sys\nsys.exit(4)\n",
    "exiter": "import os\nos._exit(7)\n",
    "lingerer": """\
import threading, time


def forever():
    while True:
        time.sleep(0.1)


def chatty():
    for _ in range(50):
        print("from a thread")
        time.sleep(0.02)


threading.Thread(target=forever, name="forever", daemon=False).start()
threading.Thread(target=chatty, name="chatty", daemon=False).start()
""",
    "ender": """\
import atexit, time


@atexit.register
def slow():
    time.sleep(60)


@atexit.register
def broken():
    raise RuntimeError("at exit")
""",
}


def plugin_dir(tmp_path: Path, plugins: dict[str, str]) -> Path:
    directory = tmp_path / "plugins"
    directory.mkdir()
    for name, source in plugins.items():
        (directory / f"{name}.py").write_text(source)
    return directory


def test_misbehaving_plugins_cannot_corrupt_json_or_hold_the_process(tmp_path: Path):
    """Issue #16's 'done when': with plugins that print, raise every kind of BaseException,
    call exit() and os._exit(), leave threads running and sleep in atexit, ``path --json``
    prints valid JSON, names each plugin on stderr and exits 0 within its budgets."""
    env = environment(
        tmp_path,
        FABRICUI_PLUGINS_DIR=str(plugin_dir(tmp_path, MISBEHAVING)),
        # 3 s, not 1: under a loaded CI the well-behaved part of a plugin must not overrun.
        FABRICUI_PLUGIN_TIMEOUT_S="3",
    )
    result = run(command(*PATH_JSON), env, timeout=30)
    no_traceback(result)
    assert result.status == 0, result.err
    assert json.loads(result.out)["src"] == "n0.g0"
    lines = result.err_lines
    assert all(line.startswith(("plugin ", "fabricui: plugin ")) for line in lines), lines
    assert "plugin loud: hello from import" in lines
    assert "plugin loud: in the hook" in lines
    for expected in (
        "fabricui: plugin interrupter skipped: KeyboardInterrupt: not the user",
        "fabricui: plugin generator skipped: GeneratorExit",
        "fabricui: plugin custom skipped: Odd: odd",
        "fabricui: plugin quitter skipped: SystemExit: 4",
        "fabricui: plugin exiter skipped: called os._exit(7)",
        "fabricui: plugin lingerer left thread 'forever' running; exiting without waiting for it",
        "fabricui: plugin ender: atexit handler broken: RuntimeError: at exit",
        "fabricui: plugin ender: atexit handler slow: took longer than 3 s "
        "(FABRICUI_PLUGIN_TIMEOUT_S); abandoned",
    ):
        assert expected in lines, result.err
    assert all(
        line == "plugin lingerer: from a thread"
        for line in lines
        if "thread" in line and line.startswith("plugin lingerer")
    )
    assert result.seconds < 15


#: Runs a command with SIGINT's default action, as a shell starts a foreground job: when
#: the tests themselves run as a background job (``.ci/run &``), SIGINT is ignored, that
#: disposition is inherited, and a Ctrl-C would never reach the process (as POSIX wants).
AS_IN_THE_FOREGROUND = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
)


@pytest.mark.parametrize("budget", ["30", "0"], ids=["budget", "no-budget"])
def test_a_real_ctrl_c_stops_fabricui_even_inside_a_plugin(tmp_path: Path, budget: str):
    """SIGINT while a plugin's import sleeps (and would swallow KeyboardInterrupt): exit
    130 at once, quietly. The plugin code runs in a thread of its own, so the interrupt
    reaches fabricui's main thread and never the plugin (also with no budget)."""
    sleepy = (
        "import time\nprint('ready', flush=True)\n"
        "try:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    time.sleep(30)\n"
    )
    env = environment(
        tmp_path,
        FABRICUI_PLUGINS_DIR=str(plugin_dir(tmp_path, {"sleepy": sleepy})),
        FABRICUI_PLUGIN_TIMEOUT_S=budget,
        PYTHONFAULTHANDLER="1",
    )
    process = subprocess.Popen(
        [*AS_IN_THE_FOREGROUND, *command(*PATH_JSON)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr.readline() == "plugin sleepy: ready\n"
        start = time.perf_counter()
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # where is it stuck? (faulthandler's dump)
            process.send_signal(signal.SIGABRT)
            out, err = process.communicate(timeout=10)
            pytest.fail(f"still running 10 s after SIGINT; its threads:\n{err}")
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert time.perf_counter() - start < 5
    assert out == "" and "Traceback" not in err


def test_a_plugin_holding_the_interpreter_lock_ends_in_bounded_time(tmp_path: Path):
    """The documented limit: ``sum(range(10**13))`` at import never lets another thread run,
    so no budget can abandon it; the watchdog ends the process (status 1) once the budget
    and its grace are past, naming the plugin file. Grace shortened here to 1 s."""
    plugin = plugin_dir(tmp_path, {"hog": "x = sum(range(10**13))\n"}) / "hog.py"
    env = environment(tmp_path, FABRICUI_PLUGINS_DIR=str(plugin.parent))
    env["FABRICUI_PLUGIN_TIMEOUT_S"] = "0.5"
    script = (
        "import fabricui.plugins.budget as b; b.WATCHDOG_GRACE_S = 1.0\n"
        "from fabricui.cli import run; import sys; sys.argv[1:] = "
        f"{list(PATH_JSON)!r}; run()"
    )
    result = run([sys.executable, "-c", script], env, timeout=30)
    assert result.status == 1
    assert result.out == ""
    assert result.err.startswith("Timeout (0:00:01")
    assert f'File "{plugin}", line 1 in <module>' in result.err
    assert result.seconds < 15


# --- standard streams ----------------------------------------------------------------------


def test_stdout_closed_is_one_line_exit_2(env: dict[str, str]):
    """``fabricui ... >&-``: the result cannot be printed; one line says so (status 2)."""
    result = run(command(*PATH_JSON), env, preexec_fn=lambda: os.close(1))
    no_traceback(result)
    assert result.status == 2
    assert result.err_lines == [
        "fabricui: error: standard output is closed; give fabricui somewhere to print "
        "(a terminal, a file or a pipe)"
    ]


@pytest.mark.parametrize(
    ("argv", "status", "error"),
    [
        (PATH_JSON, 0, None),
        (("import", "nccl-xml", "-"), 2, "fabricui: error: <stdin>: no standard input"),
        ((), 2, "fabricui: error: the explorer needs a terminal"),
    ],
    ids=["command", "stdin-input", "explorer"],
)
def test_stdin_closed(env: dict[str, str], argv, status: int, error: str | None):
    """``fabricui ... <&-``: commands that do not read stdin work; reading it (``-``) or
    the explorer is one line, status 2."""
    result = run(command(*argv), env, preexec_fn=lambda: os.close(0))
    no_traceback(result)
    assert result.status == status
    if error is None:
        assert json.loads(result.out) and result.err == ""
    else:
        [line] = result.err_lines
        assert line.startswith(error)


def test_stderr_closed_keeps_warnings_off_stdout(tmp_path: Path):
    """``2>&-`` with a plugin that prints and one that fails: stdout is still only JSON
    (``print(file=None)`` would have put the warnings there)."""
    plugins = {"loud": MISBEHAVING["loud"], "quitter": MISBEHAVING["quitter"]}
    env = environment(tmp_path, FABRICUI_PLUGINS_DIR=str(plugin_dir(tmp_path, plugins)))
    result = run(command(*PATH_JSON), env, preexec_fn=lambda: os.close(2))
    assert result.status == 0
    assert json.loads(result.out)["src"] == "n0.g0"


@pytest.mark.parametrize(
    "argv", [("topologies",), ("hwdb", "list"), PATH_JSON, ("--help",)], ids=lambda a: a[0]
)
def test_reader_gone_is_quiet_exit_0(env: dict[str, str], argv: tuple[str, ...]):
    """``fabricui ... | head -1`` where head is gone before fabricui writes: no
    ``BrokenPipeError``, no ``Exception ignored``, status 0 (the reader chose to stop)."""
    process = subprocess.Popen(
        command(*argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    process.stdout.close()
    err = process.stderr.read()
    process.stderr.close()
    status = process.wait(timeout=60)
    no_traceback(Run(status, "", err, 0.0))
    assert status == 0 and err == ""


def test_reader_gone_after_one_line(env: dict[str, str]):
    """The reader takes one line and leaves while fabricui still writes (``| head -1``)."""
    process = subprocess.Popen(
        command("hwdb", "list"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == 0 and err == ""
