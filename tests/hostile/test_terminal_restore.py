"""The explorer gives the terminal back whatever signal ends it and whenever: run on a
pseudo-terminal of the test's own, signalled the moment it takes the screen (before its
first view is composed) or once it shows its first view; afterwards the terminal's modes
are those it had before, and every screen mode the explorer set (alternate screen, hidden
cursor, mouse reports) is reset in what it wrote. With standard error sent to a file it
still draws on the terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from _hostile import command, environment

#: The DEC private modes a terminal starts with set (cursor shown, line wrap); every
#: other mode the explorer sets must end reset.
ON_BY_DEFAULT = {"25", "7"}
#: Longest a run may take [s] (a cold start on a loaded 2-core machine).
TIMEOUT_S = 60.0
#: What the first view shows once drawn (the topology's name).
FIRST_VIEW = b"dgx-h100"
#: What the explorer writes when it takes the screen (the alternate screen on).
TAKES_SCREEN = b"\x1b[?1049h"


@dataclass
class Ended:
    """How the explorer ended, and what it left of the terminal."""

    status: int
    output: bytes
    modes_restored: bool
    modes_left: dict[str, str]


def run_signalled(tmp_path: Path, signum: int, moment: bytes, stderr: Path | None) -> Ended:
    """Run the explorer on a new 80x24 pseudo-terminal, send ``signum`` once its output
    holds ``moment``, and collect what it wrote until it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    before = termios.tcgetattr(slave)
    env = environment(tmp_path, FABRICUI_LOAD_PLUGINS="", TERM="xterm-256color")
    err = stderr.open("wb") if stderr is not None else slave
    try:
        process = subprocess.Popen(
            command("explore", "-t", "dgx-h100"),
            stdin=slave,
            stdout=slave,
            stderr=err,
            env=env,
            start_new_session=True,
        )
    finally:
        if stderr is not None:
            err.close()
    output, signalled = b"", False
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while process.poll() is None or select.select([master], [], [], 0.05)[0]:
            if time.monotonic() > deadline:
                pytest.fail(f"still running after {TIMEOUT_S:.0f} s; wrote {output[-300:]!r}")
            if select.select([master], [], [], 0.02)[0]:
                try:
                    output += os.read(master, 1 << 16)
                except OSError:  # EIO: the explorer closed its end
                    break
            if not signalled and moment in output:
                process.send_signal(signum)
                signalled = True
        status = process.wait(timeout=TIMEOUT_S)
        after = termios.tcgetattr(slave)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
        os.close(slave)
    assert signalled, f"the explorer exited ({process.returncode}) before {moment!r}"
    modes: dict[str, str] = {}
    for match in re.finditer(rb"\x1b\[\?([\d;]+)([hl])", output):
        for mode in match.group(1).decode().split(";"):
            modes[mode] = match.group(2).decode()
    left = {m: s for m, s in modes.items() if (s == "h") != (m in ON_BY_DEFAULT)}
    return Ended(status, output, before == after, left)


def assert_restored(ended: Ended, signum: int) -> None:
    """Exit status 128+N, the terminal's modes as before, every screen mode reset."""
    assert ended.status == 128 + signum, ended.output[-500:]
    assert ended.modes_restored, "the terminal was left in raw mode"
    assert not ended.modes_left, f"screen modes left on: {ended.modes_left}"
    pushed = ended.output.rfind(b"\x1b[>")  # the kitty keyboard protocol, if it was asked
    assert ended.output.rfind(b"\x1b[<u") > pushed, "keyboard protocol left on"
    assert b"Traceback" not in ended.output


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_the_explorer_takes_the_screen(tmp_path: Path, name: str):
    """The window the issue found broken: the signal lands as the alternate screen goes
    on, before the first view exists; the terminal is still given back."""
    signum = getattr(signal, name)
    assert_restored(run_signalled(tmp_path, signum, TAKES_SCREEN, None), signum)


@pytest.mark.slow  # the path that held before; ~1.5 s per signal
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_once_the_first_view_shows(tmp_path: Path, name: str):
    """Signalled once the first view is drawn: the explorer exits like ``q``."""
    signum = getattr(signal, name)
    assert_restored(run_signalled(tmp_path, signum, FIRST_VIEW, None), signum)


def test_stderr_to_a_file_still_draws_on_the_terminal(tmp_path: Path):
    """``fabricui 2>e.log``: the first view appears on the terminal (standard output),
    the log stays free of escape codes, and SIGINT then restores the terminal."""
    log = tmp_path / "e.log"
    ended = run_signalled(tmp_path, signal.SIGINT, FIRST_VIEW, log)
    assert_restored(ended, signal.SIGINT)
    assert FIRST_VIEW in ended.output
    assert b"\x1b" not in log.read_bytes()


def test_an_explorer_without_a_terminal_says_why(tmp_path: Path):
    """Neither standard output nor standard error a terminal: one line, status 2."""
    result = subprocess.run(
        command("explore", "-t", "dgx-h100"),
        env=environment(tmp_path, FABRICUI_LOAD_PLUGINS=""),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("fabricui: error: the explorer needs a terminal")
    assert result.stderr.count("\n") == 1


def test_a_driver_that_cannot_stop_still_leaves_the_screen_reset():
    """A signal that lands while the main thread holds the lock of the driver's output queue
    would block the driver's own restore for ever: the watchdog writes the reset sequences
    straight to the terminal and ends the process with 128+N."""
    script = (
        "import os, sys, threading\n"
        "from fabricui.tui import terminal\n"
        "class Driver:\n"
        "    def stop_application_mode(self):\n"
        "        threading.Event().wait()  # the queue's lock is never released\n"
        "class App:\n"
        "    _driver = Driver()\n"
        "guard = terminal.TerminalGuard(App(), 0)\n"
        "guard.saved = None\n"
        "guard.out_fd = int(sys.argv[1])\n"
        "guard.restore_and_exit(15)\n"
    )
    read_end, write_end = os.pipe()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", script, str(write_end)],
        pass_fds=(write_end,),
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    os.close(write_end)
    written = os.read(read_end, 4096)
    os.close(read_end)
    from fabricui.tui.terminal import RESET_SEQUENCES, RESTORE_TIMEOUT_S

    assert proc.returncode == 128 + 15, proc.stderr
    assert written == RESET_SEQUENCES.encode()
    assert time.monotonic() - started < RESTORE_TIMEOUT_S + 20
