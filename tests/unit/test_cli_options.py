"""One parser: global options before or after the command, $FABRICUI_HWDB and the settings
file's hwdb directories, errors printed once, and the renamed flags' old spellings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fabricui.cli import build_parser, command_parsers

MINI_HWDB = Path(__file__).parents[1] / "data" / "hwdb" / "mini"
PATH = ["path", "-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n1.g0"]


@pytest.mark.parametrize(
    "argv",
    [
        [*PATH, "--json", "--hwdb", str(MINI_HWDB)],
        ["--json", *PATH],
        ["--hwdb", str(MINI_HWDB), "--json", *PATH],
        [*PATH, "--max-memory", "4G", "--json"],
    ],
    ids=["hwdb-after", "json-first", "both-first", "max-memory-after"],
)
def test_global_options_before_or_after_the_command(run_cli, argv):
    """`path ... --json --hwdb DIR` and `fabricui --json path ...` print the same path."""
    status, out, err = run_cli(*argv)
    assert (status, err) == (0, "")
    assert json.loads(out)["src"] == "n0.g0"


def test_hwdb_before_and_after_add_up(tmp_path):
    """--hwdb before and after the command: both directories, in the order typed."""
    args = build_parser().parse_args(["--hwdb", "a", *PATH, "--hwdb", "b"])
    from fabricui.commands.options import command_line_hwdb

    assert command_line_hwdb(args) == (Path("a"), Path("b"))


def test_every_command_takes_the_global_options():
    """Each command's parser (nested ones too) declares --hwdb, --calibration, --max-memory."""
    for parser in command_parsers(build_parser()):
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert {"--hwdb", "--calibration", "--max-memory"} <= flags, parser.prog


def test_json_first_on_a_command_without_json_is_one_line(run_cli):
    """`fabricui --json snapshot ...` says the command prints no JSON (exit 2)."""
    status, out, err = run_cli("--json", "snapshot", "topology", "-o", "-")
    assert (status, out) == (2, "")
    assert err == "fabricui: error: --json: fabricui snapshot prints no JSON\n"


def test_env_hwdb_adds_a_directory(run_cli, monkeypatch):
    """$FABRICUI_HWDB names directories (os.pathsep-separated) as --hwdb does."""
    monkeypatch.setenv("FABRICUI_HWDB", f"{MINI_HWDB}{__import__('os').pathsep}")
    status, out, _ = run_cli("topologies", "--json")
    assert status == 0 and "pcie-box" in {t["id"] for t in json.loads(out)}
    monkeypatch.setenv("FABRICUI_HWDB", "/no/such/dir")
    status, _, err = run_cli("topologies")
    assert status == 2 and "$FABRICUI_HWDB: /no/such/dir is not a directory" in err


def test_settings_hwdb_key(run_cli, monkeypatch, tmp_path):
    """The settings file's hwdb: (relative to the file) adds directories; a bad value is
    an error with file, line and key (it would change what the command computes)."""
    config = tmp_path / "config.yaml"
    (tmp_path / "vendor").symlink_to(MINI_HWDB)
    config.write_text("hwdb: [vendor]\n")
    monkeypatch.setenv("FABRICUI_CONFIG", str(config))
    status, out, _ = run_cli("topologies", "--json")
    assert status == 0 and "pcie-box" in {t["id"] for t in json.loads(out)}
    config.write_text("theme: nord\nhwdb: 3\n")
    status, _, err = run_cli("topologies")
    assert status == 2 and f"error: {config}:2: hwdb: expected a directory" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["place"], "fabricui: error: place: the following arguments are required: N"),
        (["path", "--src", "0"], "fabricui: error: path: give the two GPUs"),
        (["--bogus"], "fabricui: error: unrecognized arguments: --bogus (see fabricui --help)"),
        (["collective", "--size", "1G"], "fabricui: error: collective: give the operation"),
        (["hwdb", "list", "--frob"], "fabricui: error: hwdb list: unrecognized arguments"),
    ],
)
def test_errors_name_the_program_once(run_cli, argv, expected):
    """'fabricui: error:' once, then the command the error is about."""
    status, _, err = run_cli(*argv)
    assert status == 2 and err.startswith(expected)
    assert err.count("fabricui:") == 1


def test_renamed_flags_keep_their_old_spelling():
    """snapshot --sweep (as collective) with --sizes its old name; --terminal-size with --size."""
    parser = build_parser()
    new = parser.parse_args(
        ["snapshot", "collectives", "--sweep", "1G", "--terminal-size", "90x30"]
    )
    old = parser.parse_args(["snapshot", "collectives", "--sizes", "1G", "--size", "90x30"])
    assert (new.sizes, new.terminal_size) == (old.sizes, old.terminal_size) == ("1G", "90x30")


def test_snapshot_size_that_is_a_message_size_says_so(run_cli):
    """`snapshot topology --size 1G` points at --message-size."""
    status, _, err = run_cli("snapshot", "topology", "--size", "1G", "-o", "-")
    assert status == 2 and "(a message size is --message-size)" in err


def test_max_memory_help_states_the_real_default():
    """--max-memory's help names the budget admission control uses."""
    from fabricui.services.admission import DEFAULT_BUDGET_BYTES
    from fabricui.units import format_bytes

    help_text = build_parser().format_help()
    assert f"default {format_bytes(DEFAULT_BUDGET_BYTES)}" in " ".join(help_text.split())


@pytest.mark.parametrize(
    ("size", "text"),
    [(2**30, "1G"), (65536, "64K"), (8, "8"), (10**6, "1000000"), (3 * 2**40, "3T")],
)
def test_size_argument_reads_back_exactly(size, text):
    """Sizes are written as typed (binary suffixes) and parse back to the same bytes."""
    from fabricui.units import parse_size, size_argument

    assert size_argument(size) == text and parse_size(text) == size


def test_reproduce_command_prints_the_report_with_a_human_size():
    """The report's command has no -o and writes the message size as 1G."""
    from fabricui.services.reports import reproduce_command
    from fabricui.services.requests import LaunchRequest, TopologyRequest

    launch = LaunchRequest(
        TopologyRequest("dgx-h100"), "topology", "n0.g0", "n0.g1", 2**30, (("sizes", "8:1G"),)
    )
    command = reproduce_command(launch, "topology")
    assert command == (
        "fabricui snapshot topology -t dgx-h100 --src n0.g0 --dst n0.g1 --message-size 1G "
        "--sweep 8:1G"
    )


def test_reproduce_command_keeps_the_fabric_as_it_is():
    """A view of the fabric as it is reports with its --health files, or it would print
    the fabric as built."""
    from fabricui.services.reports import reproduce_command
    from fabricui.services.requests import LaunchRequest, TopologyRequest

    launch = LaunchRequest(TopologyRequest("dgx-h100-pod", health=("links.txt", "n 1.txt")))
    assert reproduce_command(launch, "collectives") == (
        "fabricui snapshot collectives --health links.txt --health 'n 1.txt'"
    )


def test_help_speaks_of_the_product_not_its_history():
    """No command's --help calls a flag an old name or speaks of earlier versions; snapshot's
    --group lists every group it takes, as collective does."""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {name: sub.format_help() for name, sub in commands.choices.items()}
    for name, text in helps.items():
        flat = " ".join(text.split()).lower()
        for word in ("old name", "earlier version", "no longer", "formerly"):
            assert word not in flat, f"{name} --help: {word!r}"
    (group,) = [a for a in commands.choices["snapshot"]._actions if "--group" in a.option_strings]
    assert group.help.startswith("collectives view: all, host (or node), domain or per-node")


def test_an_option_repeated_with_another_value_is_said(run_cli):
    """`--nodes 4 ... --nodes 8` (an alias with an appended option) runs with the last value,
    as argparse does, and says so in one warning line; the same value twice says nothing."""
    status, out, err = run_cli(*PATH, "--nodes", "4", "--json", "--nodes", "8")
    assert status == 0
    assert err == "fabricui: warning: --nodes given twice (4, then 8): 8 is used\n"
    assert json.loads(out)["src"] == "n0.g0"
    status, _out, err = run_cli("--max-memory", "4G", *PATH, "--max-memory", "4G", "--json")
    assert (status, err) == (0, "")
