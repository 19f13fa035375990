"""``fabricui serve``: the explorer's launch options plus where to listen, turned into the
serve request the TUI's web server runs (``fabricui.cli`` hands it over).

Each browser tab runs its own ``fabricui explore`` process with exactly the launch options
given here, so the command line is rebuilt from what the user typed rather than from the
parsed request: options left out stay left out (bare ``explore`` reopens the last session).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fabricui.commands.explore import add_launch_options, launch_request
from fabricui.commands.options import catalog_request, command_line_hwdb
from fabricui.commands.snapshot import parse_terminal_size
from fabricui.errors import ConfigError
from fabricui.services.command_requests import ServeRequest

#: Port ``fabricui serve`` listens on unless told otherwise.
DEFAULT_PORT = 8000
#: Address it binds to unless told otherwise: this machine only.
DEFAULT_HOST = "127.0.0.1"
#: Explorers running at once unless told otherwise (each is a Python process of its own).
DEFAULT_MAX_SESSIONS = 4
#: Largest terminal a session runs at unless told otherwise: a 4K screen at a small font.
DEFAULT_MAX_TERMINAL = "500x200"

DESCRIPTION = (
    "Serve the explorer to a web browser (textual-serve; pip install 'fabricui[serve]'). "
    "Every browser tab runs its own `fabricui explore` with the launch options given here. "
    f"Binds to {DEFAULT_HOST} unless --host says otherwise; reach it from another machine "
    f"through an SSH tunnel (ssh -L {DEFAULT_PORT}:{DEFAULT_HOST}:{DEFAULT_PORT} HOST). "
    "Prints the URL to open: it carries a random token that every request must show, and "
    "pages of other sites are refused."
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "serve", help="open the explorer in a web browser", description=DESCRIPTION
    )
    add_launch_options(parser)
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"TCP port to listen on (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to bind to (default: {DEFAULT_HOST}, this machine only; anything "
        "else lets whoever reaches the port run the explorer as you)",
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the address browsers use, when it is not http://HOST:PORT (a proxy, or an SSH "
        "tunnel to another local port)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also let pages of ORIGIN (scheme://host[:port]) use the server, e.g. a proxy "
        "in front of it (repeatable)",
    )
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="do not require the URL's token (loopback only: every user of this machine "
        "can then run the explorer as you)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"most browser tabs served at once (default: {DEFAULT_MAX_SESSIONS})",
    )
    parser.add_argument(
        "--max-terminal",
        default=DEFAULT_MAX_TERMINAL,
        metavar="COLSxROWS",
        help=f"largest terminal a tab runs at; bigger windows are drawn at this size "
        f"(default: {DEFAULT_MAX_TERMINAL})",
    )
    return parser


def serve_request(args: argparse.Namespace) -> ServeRequest:
    """The serve request of the parsed options.

    Args:
        args: Parsed arguments of ``fabricui serve`` (with the top-level options).

    Raises:
        ConfigError: A port out of range, an empty host, a public URL that is not http(s),
            an origin that is not one, ``--no-token`` off loopback, a session cap below 1,
            a terminal cap out of range, or a bad launch option (view, size).
    """
    from fabricui.services.serve_access import is_loopback, normalize_origin  # hashlib

    launch = launch_request(args)
    port = args.port
    if not 1 <= port <= 65535:
        raise ConfigError(f"--port must be within 1..65535 (got {port})")
    host = args.host.strip()
    if not host:
        raise ConfigError("--host must name an address (127.0.0.1 for this machine only)")
    public_url = args.public_url
    if public_url is not None:
        public_url = public_url.rstrip("/")
        if not public_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"--public-url must start with http:// or https:// (got {public_url!r})"
            )
    origins = tuple(normalize_origin(origin) for origin in args.allow_origin)
    if args.no_token and not is_loopback(host):
        raise ConfigError(
            f"--no-token is for loopback only: on {host} the token is what keeps others out"
        )
    if args.max_sessions < 1:
        raise ConfigError(f"--max-sessions must be at least 1 (got {args.max_sessions})")
    return ServeRequest(
        launch=launch,
        catalog=catalog_request(args),
        explore_args=tuple(explore_args(args)),
        host=host,
        port=port,
        public_url=public_url,
        allowed_origins=origins,
        token=not args.no_token,
        max_sessions=args.max_sessions,
        max_terminal=parse_terminal_size(args.max_terminal, "--max-terminal"),
    )


def explore_args(args: argparse.Namespace) -> list[str]:
    """The ``fabricui`` arguments that open the explorer as ``args`` asks.

    The options are those ``add_launch_options`` declares, read from its own parser, so an
    option added to the explorer is passed on without a change here. File paths become
    absolute, so that the explorer finds them whatever directory it starts in.

    Args:
        args: Parsed arguments; every attribute is optional.

    Returns:
        Global options (``--hwdb``, ``--calibration``), then ``explore`` and its options.
    """
    words: list[str] = []
    for directory in command_line_hwdb(args):
        words += ["--hwdb", str(Path(directory).resolve())]
    calibration = getattr(args, "calibration", None)
    if calibration is not None:
        words += ["--calibration", str(Path(calibration).resolve())]
    words.append("explore")
    for action in launch_actions():
        value = getattr(args, action.dest, None)
        if value is None or value is argparse.SUPPRESS or value is False:
            continue
        flag = next(o for o in action.option_strings if o.startswith("--"))
        if action.nargs == 0:  # a switch such as --ascii
            words.append(flag)
            continue
        for item in value if isinstance(value, list) else [value]:  # --health is repeatable
            text = str(item)
            if action.dest in ("topology", "health", "jobs") and Path(text).is_file():
                text = str(Path(text).resolve())
            words += [flag, text]
    return words


def launch_actions() -> list[argparse.Action]:
    """The options ``fabricui explore`` takes, in its order (one argparse action each)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_launch_options(parser)
    return [action for action in parser._actions if action.option_strings]
