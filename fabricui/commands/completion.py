"""``fabricui completion bash|zsh|fish`` and ``fabricui man``: shell completion and the man
page, both generated from the argument parser itself, so neither can drift from it."""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import replace
from typing import Any

from fabricui import __version__
from fabricui.commands.options import catalog
from fabricui.render import shell
from fabricui.render.shell import CliCommand, CliOption, CliPositional

#: Shells ``completion`` writes for.
SHELLS = ("bash", "zsh", "fish")
#: Metavars whose value is a file or a directory name.
_FILE_METAVARS = frozenset({"FILE", "LOG", "YAML", "PATH", "NODE", "OUT", "NAMES"})
_DIR_METAVARS = frozenset({"DIR"})


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``completion``.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "completion",
        help="print a shell completion script (subcommands, options, topology ids)",
        description="bash: source <(fabricui completion bash); zsh: source <(fabricui "
        "completion zsh) after compinit; fish: fabricui completion fish | source",
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help=", ".join(SHELLS))
    return parser


def add_man_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``man``.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "man", help="print the man page (roff): fabricui man > fabricui.1; man ./fabricui.1"
    )
    return parser


def describe(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> CliCommand:
    """The command tree of ``parser``: every command's options and positionals.

    Args:
        parser: The program's parser (or a command's).
        words: The words naming ``parser`` after the program.
    """
    options: list[CliOption] = []
    positionals: list[CliPositional] = []
    subcommands: list[CliCommand] = []
    helps: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen: list[argparse.ArgumentParser] = []
            for name, child in action.choices.items():
                if any(child is s for s in seen):
                    continue  # an alias
                seen.append(child)
                sub = describe(child, (*words, name))
                subcommands.append(
                    CliCommand(
                        sub.words,
                        helps.get(name, ""),
                        sub.usage,
                        sub.options,
                        sub.positionals,
                        sub.subcommands,
                    )
                )
            continue
        if action.help == argparse.SUPPRESS:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        hint = getattr(action, "completes", None)
        if isinstance(hint, tuple):
            choices = hint
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        if action.option_strings:
            takes = action.nargs != 0
            flags = tuple(sorted(action.option_strings, key=lambda f: (not f.startswith("--"), f)))
            options.append(
                CliOption(
                    flags,
                    _help(action),
                    takes,
                    metavar or (action.dest.upper() if takes else ""),
                    choices,
                    _completes(action, metavar) if takes else "",
                )
            )
        else:
            positionals.append(
                CliPositional(
                    metavar or action.dest,
                    _help(action),
                    choices,
                    hint
                    if isinstance(hint, str)
                    else ("file" if (metavar or action.dest).upper() in _FILE_METAVARS else ""),
                )
            )
    usage = " ".join(parser.format_usage().split()).removeprefix("usage: ")
    return CliCommand(
        words,
        parser.description or "",
        usage,
        tuple(options),
        tuple(positionals),
        tuple(subcommands),
    )


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(default)" in text:
        text = text.replace("%(default)s", str(action.default))
    return " ".join(text.split())


def _completes(action: argparse.Action, metavar: str) -> str:
    """What a value completes to: topology ids, a kind of catalog or plugin ids the
    parser names (``completes(action, "algorithm")``), a file, a directory, or nothing."""
    hint = getattr(action, "completes", None)
    if isinstance(hint, str):
        return hint
    if action.dest in ("topology", "model"):
        return action.dest
    name = (metavar or action.dest).upper()
    if name in _DIR_METAVARS or action.dest in ("hwdb", "hwdb_after"):
        return "dir"
    if name in _FILE_METAVARS or action.dest in ("output", "calibration", "run"):
        return "file"
    return ""


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the completion script or the man page; returns 0."""
    program = describe(parser)
    if args.command == "man":
        today = datetime.date.today().isoformat()
        sys.stdout.write(shell.man_page(program, __version__, today, MAN_SECTIONS))
        return 0

    loaded = catalog(args)
    from fabricui.services.session import algorithm_choices

    ids = {
        "topology": sorted(loaded.topologies),
        "model": sorted(loaded.models),
        "framework": sorted(loaded.frameworks),
        "algorithm": algorithm_choices(),  # calibrate --algo
        "collective_algorithm": algorithm_choices(hierarchical=True),
    }
    write = {"bash": shell.bash_script, "zsh": shell.zsh_script, "fish": shell.fish_script}
    sys.stdout.write(write[args.shell](_with_ids(program, ids), ids))
    return 0


def _with_ids(command: CliCommand, ids: dict[str, list[str]]) -> CliCommand:
    """``command`` with each positional that completes to catalog ids (``plan MODEL``)
    listing them as its choices, as every shell's script completes positionals, and each
    option that completes to ids other than topologies and models (which the scripts
    complete themselves, topology files too) listing them as its choices
    (``collective --algo``: ring, tree, nvls ...)."""
    positionals = tuple(
        replace(p, choices=tuple(ids[p.completes])) if p.completes in ids else p
        for p in command.positionals
    )
    options = tuple(
        replace(o, choices=tuple(ids[o.completes]), completes="")
        if o.completes in ids and o.completes not in ("topology", "model")
        else o
        for o in command.options
    )
    subcommands = tuple(_with_ids(sub, ids) for sub in command.subcommands)
    return replace(command, options=options, positionals=positionals, subcommands=subcommands)


#: The man page's sections after the commands.
MAN_SECTIONS = [
    (
        "Environment",
        "FABRICUI_HWDB: extra hardware-database directories, separated by colons (after the "
        "settings file's hwdb: and before --hwdb).\n\n"
        "FABRICUI_CONFIG: another settings file than $XDG_CONFIG_HOME/fabricui/config.yaml.\n\n"
        "FABRICUI_MAX_MEMORY: the memory a request may use (as --max-memory).\n\n"
        "FABRICUI_LOAD_PLUGINS, FABRICUI_DISABLE_PLUGINS, FABRICUI_STRICT_PLUGINS, "
        "FABRICUI_PLUGINS_DIR, FABRICUI_PLUGIN_TIMEOUT_S: which plugins load and how "
        "failures are handled.\n\n"
        "SLURM_JOB_NODELIST: a job's hosts on an imported cluster (as --hosts).\n\n"
        "NO_COLOR: the explorer draws without colours (the bottleneck is still marked).",
    ),
    (
        "Files",
        "$XDG_CONFIG_HOME/fabricui/config.yaml: settings (theme, keymap, hwdb directories); "
        "only read. A wrong hwdb: is an error (status 2), any other problem a warning.\n\n"
        "$XDG_STATE_HOME/fabricui/state.yaml: what the explorer remembers between runs.\n\n"
        "~/.config/fabricui/plugins/: single-file plugins.",
    ),
    (
        "Exit status",
        "0 done (also when the reader of a pipe went away); 2 a one-line error (input, "
        "files, memory, closed standard output); 130 Ctrl-C; 128+N the explorer ended by "
        "signal N; 1 when doctor --fail-on finds what it was told to fail on, or when a "
        "plugin froze the interpreter and the watchdog ended the process.",
    ),
]
