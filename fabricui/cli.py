"""The command line: one parser for every command, and the dispatch that hands each
command's request to the layer that answers it. The only module that sees both the
commands (``fabricui.commands``) and the explorer (``fabricui.tui``)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any, Callable, NoReturn, TextIO, cast

from fabricui import __version__
from fabricui.commands import calibrate as calibrate_command
from fabricui.commands import collective as collective_command
from fabricui.commands import completion as completion_command
from fabricui.commands import doctor as doctor_command
from fabricui.commands import explore as explore_command
from fabricui.commands import export as export_command
from fabricui.commands import hwdb as hwdb_command
from fabricui.commands import import_cmd as import_command
from fabricui.commands import path as path_command
from fabricui.commands import place as place_command
from fabricui.commands import plan as plan_command
from fabricui.commands import plugins as plugins_command
from fabricui.commands import probe as probe_command
from fabricui.commands import serve as serve_command
from fabricui.commands import snapshot as snapshot_command
from fabricui.commands import strategies as strategies_command
from fabricui.commands import topologies as topologies_command
from fabricui.commands import traffic as traffic_command
from fabricui.commands.options import FREE_WORDS, add_global_options, catalog_request
from fabricui.errors import ConfigError, FabricError, one_line
from fabricui.files import os_error_line, shown_path
from fabricui.render.health import health_lines
from fabricui.render.output import safe_streams
from fabricui.render.terminal_fit import FitWriter
from fabricui.services.admission import ENV_MAX_MEMORY, memory_budget

#: Commands whose text is read on the terminal, fitted to its width there (``FitWriter``):
#: not those whose output is a file format (YAML, Markdown, SVG, shell scripts, man pages).
FITTED_COMMANDS = frozenset(
    {
        "path",
        "topologies",
        "hwdb",
        "collective",
        "plan",
        "strategies",
        "plugins",
        "traffic",
        "doctor",
        "calibrate",
        "place",
        "import",
        "probe",
    }
)

#: Exit status of a one-line error (anything the user typed, pointed at or asked for).
EXIT_USAGE = 2
#: Exit status after Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130
STDOUT_CLOSED = (
    "standard output is closed; give fabricui somewhere to print (a terminal, a file or a pipe)"
)
OUT_OF_MEMORY = (
    "not enough memory for this request (a memory limit or the machine's); "
    "ask for less: fewer --nodes, a smaller topology or fewer sizes"
)


#: Options given more than once with different values in the last parse, each said as
#: ``--nodes given twice (4, then 8): 8 is used`` (argparse keeps the last without a word).
_repeated_options: list[str] = []
#: The value each option's destination took in the current parse, by destination.
_given_options: dict[str, tuple[str, object]] = {}


class _StoreNoting(argparse._StoreAction):
    """``store`` that notes an option repeated with another value: a script appending
    ``--nodes 8`` to an alias holding ``--nodes 4`` still runs, and is told which won."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if option_string is not None:
            earlier = _given_options.get(self.dest)
            if earlier is not None and earlier[1] != values:
                _repeated_options.append(
                    f"{option_string} given twice ({_shown(earlier[1])}, then "
                    f"{_shown(values)}): {_shown(values)} is used"
                )
            _given_options[self.dest] = (option_string, values)
        super().__call__(parser, namespace, values, option_string)


def _shown(value: object) -> str:
    """An option's value as typed (a list of words joined by spaces)."""
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2), never a multi-line usage dump.

    The message names the command it is about (``path: ...``) but not the program:
    ``main`` prints every error after ``fabricui: error:`` once.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreNoting)
        self.register("action", "store", _StoreNoting)

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        prefix = f"{command}: " if command else ""
        raise ConfigError(f"{prefix}{message} (see {self.prog} --help)")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """Parse; words no parser took are reported by the command they follow, and
        options repeated with another value are kept for ``repeated_options``."""
        _repeated_options.clear()
        _given_options.clear()
        parsed, extras = self.parse_known_args(args, namespace)
        chosen = _chosen_parser(self, parsed)
        dest = getattr(chosen, FREE_WORDS, None)
        if dest and extras and not any(word.startswith("-") for word in extras):
            # A positional list split by options (`path n0.g3 --nodes 16 n12.g5`).
            setattr(parsed, dest, [*getattr(parsed, dest), *extras])
            extras = []
        if extras:
            chosen.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> _Parser:
    """The deepest command parser ``args`` went through (``hwdb list``), else ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            child = action.choices.get(getattr(args, action.dest, None) or "")
            if child is not None:
                return _chosen_parser(child, args)
    return parser  # type: ignore[return-value]


def _explore(args: argparse.Namespace) -> int:
    from fabricui.tui.launch import run_explorer  # textual and asyncio: only to explore

    return run_explorer(explore_command.launch_request(args), catalog_request(args))


def _serve(args: argparse.Namespace) -> int:
    from fabricui.tui.serve import run_server

    return run_server(serve_command.serve_request(args))


def _snapshot(args: argparse.Namespace) -> int:
    from fabricui.services.session import load_catalog
    from fabricui.tui.snapshot import run_snapshot

    request = snapshot_command.snapshot_request(args)
    written, stdout = run_snapshot(request, load_catalog(catalog_request(args)))
    sys.stdout.write(stdout)
    for path in written:
        print(f"wrote {shown_path(path)}", file=sys.stderr if stdout else sys.stdout)
    return 0


def _completion(args: argparse.Namespace) -> int:
    return completion_command.run(args, build_parser())


#: Each command: name -> (module adding its parser, function running it).
COMMANDS: dict[
    str, tuple[Callable[..., argparse.ArgumentParser], Callable[[argparse.Namespace], int]]
] = {
    "path": (path_command.add_parser, path_command.run),
    "topologies": (topologies_command.add_parser, topologies_command.run),
    "hwdb": (hwdb_command.add_parser, hwdb_command.run),
    "collective": (collective_command.add_parser, collective_command.run),
    "plan": (plan_command.add_parser, plan_command.run),
    "strategies": (strategies_command.add_parser, strategies_command.run),
    "plugins": (plugins_command.add_parser, plugins_command.run),
    "traffic": (traffic_command.add_parser, traffic_command.run),
    "doctor": (doctor_command.add_parser, doctor_command.run),
    "calibrate": (calibrate_command.add_parser, calibrate_command.run),
    "import": (import_command.add_parser, import_command.run),
    "probe": (probe_command.add_parser, probe_command.run),
    "place": (place_command.add_parser, place_command.run),
    "explore": (explore_command.add_parser, _explore),
    "snapshot": (snapshot_command.add_parser, _snapshot),
    "serve": (serve_command.add_parser, _serve),
    "export": (export_command.add_parser, export_command.run),
    "completion": (completion_command.add_parser, _completion),
    "man": (completion_command.add_man_parser, _completion),
}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used by tests and the docs)."""
    parser = _Parser(
        prog="fabricui",
        description="Explore GPU cluster fabrics: paths, bottlenecks and communication costs.",
    )
    parser.add_argument("--version", action="version", version=f"fabricui {__version__}")
    add_global_options(parser, top_level=True)
    parser.add_argument(
        "--json",
        action="store_true",
        dest="json_first",
        help="print JSON (the commands that print data; also accepted after the command)",
    )
    explore_command.add_launch_options(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for add_parser, _run in COMMANDS.values():
        add_parser(sub)
    for command_parser in command_parsers(parser):
        add_global_options(command_parser)
    return parser


def command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command's parser under ``parser`` (``hwdb list`` too), each once."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if all(child is not seen for seen in found):
                    found.append(child)
                    found += command_parsers(child)
    return found


def _json_first(args: argparse.Namespace) -> None:
    """``fabricui --json COMMAND``: the command's own ``--json``, when it has one.

    Raises:
        ConfigError: The command (or the explorer) prints no JSON.
    """
    if not args.json_first:
        return
    if not hasattr(args, "json"):  # only commands that print data declare --json
        what = f"fabricui {args.command}" if args.command else "the explorer"
        raise ConfigError(f"--json: {what} prints no JSON")
    args.json = True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status.

    0: done. 2: a one-line error on stderr: anything the user typed or pointed at (a
    missing file, a name over the file system's limit, a directory they cannot enter, a
    read-only file system, a request larger than memory allows), and standard output
    closed (``>&-``: the result could not be printed). 130: Ctrl-C. A reader that stops
    reading (``| head -1``) ends the output quietly with 0.
    """
    if sys.stdout is None:  # started with standard output closed: nowhere to print a result
        _error(STDOUT_CLOSED)
        return EXIT_USAGE
    parser = build_parser()
    originals = safe_streams()  # what commands print from their input cannot drive a terminal
    budget_before = os.environ.get(ENV_MAX_MEMORY)
    commanded = False  # a command ran: its --health overlays are said, even when it fails
    if sys.stderr is None:  # `2>&-`: warnings must not fall back to stdout (print's default)
        sys.stderr = cast(TextIO, _Discard())
    try:
        args = parser.parse_args(argv)
        for line in _repeated_options:
            print(f"fabricui: warning: {line}", file=sys.stderr)
        _json_first(args)
        if args.max_memory is not None:
            memory_budget(args.max_memory)  # checked here: one line for a bad value
            os.environ[ENV_MAX_MEMORY] = args.max_memory
        if args.command in (None, "explore", "serve"):  # bare `fabricui` opens the explorer
            sys.stdout, sys.stderr = originals  # they draw on the terminal themselves
            return _serve(args) if args.command == "serve" else _explore(args)
        if _fitted(args):
            _fit_to_terminal()
        from fabricui.plugins.process import command_scope

        with command_scope():  # a plugin's thread cannot print on stdout or end the process
            _report_health(quiet=True)  # only what this command overlays is reported
            commanded = True
            _report_load_warnings(quiet=True)
            status = COMMANDS[args.command][1](args)
            _report_health()
            _report_load_warnings()
            if args.command != "plugins":
                from fabricui.plugins import get_host

                get_host().report_failures(sys.stderr)
        return status
    except FabricError as exc:
        if commanded:  # what --health changed, then what it leaves impossible
            _report_health()
        _error(exc.message)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an OS error no command turned into a message: still one line
        _error(os_error_line(exc))
        return EXIT_USAGE
    except MemoryError:
        _error(OUT_OF_MEMORY)
        return EXIT_USAGE
    finally:
        with contextlib.suppress(OSError, ValueError):  # a line FitWriter holds; reader gone
            sys.stdout.flush()
        process = sys.modules.get("fabricui.plugins.process")
        if process is None:  # no plugin was loaded
            sys.stdout = originals[0]
        else:  # behind the router that keeps plugin threads' text off stdout, while they run
            process.restore_stdout(originals[0])
        sys.stderr = originals[1]
        if budget_before is None:
            os.environ.pop(ENV_MAX_MEMORY, None)
        else:
            os.environ[ENV_MAX_MEMORY] = budget_before


def _fitted(args: argparse.Namespace) -> bool:
    """Whether the command prints text for a person (fitted to a terminal), not JSON or a
    spec to copy (``import -o -`` prints YAML)."""
    if args.command not in FITTED_COMMANDS or getattr(args, "json", False):
        return False
    return str(getattr(args, "output", None)) != "-"


def _fit_to_terminal() -> None:
    """On a terminal, print text lines fitted to its width (``render.terminal_fit``); a
    pipe or a file gets them as written."""
    if sys.stdout.isatty():
        sys.stdout = FitWriter(sys.stdout, shutil.get_terminal_size().columns)


def _report_health(quiet: bool = False) -> None:
    """What ``--health`` changed in the fabric a command priced, on stderr (once each);
    ``quiet`` forgets what earlier work overlaid without saying it."""
    health = sys.modules.get("fabricui.services.health")
    if health is None:  # no command read a health file
        return
    if quiet:
        health.drain_applied()
        return

    seen: set[int] = set()
    for fabric in health.drain_applied():
        lines = health_lines(fabric)
        key = hash(tuple(lines))
        if key not in seen:
            seen.add(key)
            for line in lines:
                print(line, file=sys.stderr)


def _report_load_warnings(quiet: bool = False) -> None:
    """What loading found suspect, in one warning line each: a ``--hwdb`` directory whose
    files hold no records, a ``--calibration`` overlay fitted on another topology than the
    one priced or of links it does not use (its figures still apply); ``quiet`` forgets
    earlier ones without saying them."""
    session = sys.modules.get("fabricui.services.session")
    if session is None:  # nothing was loaded
        return
    for line in session.drain_load_warnings():
        if not quiet:
            print(f"fabricui: warning: {one_line(line)}", file=sys.stderr)


class _Discard(io.TextIOBase):
    """Standard error when it is closed: what is written goes nowhere."""

    def write(self, text: str) -> int:
        """Drop ``text``; returns its length."""
        return len(text)


def _error(message: str) -> None:
    """Print ``fabricui: error: MESSAGE`` as one line on stderr (nowhere when it is closed:
    ``print`` would fall back to stdout)."""
    if sys.stderr is not None:
        print(f"fabricui: error: {one_line(message)}", file=sys.stderr)


def run() -> NoReturn:
    """The ``fabricui`` program (console script, ``python -m fabricui``): ``main``, then an
    exit that neither a closed pipe nor a plugin can turn into a traceback or a hang.

    Standard output is flushed here, so that a reader gone away (``| head -1``) is noticed
    while it can still be handled (quietly, standard output pointed at ``/dev/null``), not
    in the interpreter's last flush, which prints an ``Exception ignored`` and exits 120.
    Then ``exit_process`` ends the program without waiting for threads a plugin started.
    """
    try:
        status = main()
    except SystemExit as exc:  # --help, --version
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    _flush_stdout()
    process = sys.modules.get("fabricui.plugins.process")
    if process is None:  # no plugin was loaded (--help, --version): nothing can hold the exit
        sys.exit(status)
    exit_process: Callable[[int], NoReturn] = process.exit_process
    exit_process(status)


def _flush_stdout() -> None:
    """Flush standard output; when its reader is gone, point it at ``/dev/null``."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        stream.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
    except (OSError, ValueError):
        pass
