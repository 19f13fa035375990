"""An empty ``-t``/``--topology`` (an unset shell variable) is one line, exit 2, for every
command that takes it, never the default topology priced silently."""

from __future__ import annotations

import pytest

COMMANDS = [
    ("path", "0", "1"),
    ("collective", "all_reduce", "1G"),
    ("plan",),
    ("traffic",),
    ("place",),
    ("export",),
    ("snapshot",),
    ("doctor",),
    ("calibrate", "results.txt"),
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
@pytest.mark.parametrize("flag", ["-t", "--topology"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_topology_is_refused(run_cli, argv, flag, value):
    """After the command, either spelling, empty or blank."""
    status, out, err = run_cli(*argv, flag, value)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "empty topology id" in err


def test_an_empty_topology_before_the_command_is_refused(run_cli):
    """``fabricui -t '' path 0 1`` and ``--topology=`` alike."""
    for argv in (("-t", "", "path", "0", "1"), ("--topology=", "path", "0", "1")):
        status, out, err = run_cli(*argv)
        assert status == 2 and out == "" and "empty topology id" in err, argv
