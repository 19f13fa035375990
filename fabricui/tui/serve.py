"""Serving the explorer to a web browser with textual-serve: check the request, then run a
web server whose every browser session is a ``fabricui explore`` process.

textual-serve is an optional extra (``fabricui[serve]``): it brings aiohttp and a web
terminal that a login node running the explorer over SSH does not need.
"""

from __future__ import annotations

import ipaddress
import shlex
import socket
import sys
from typing import Any

from fabricui.errors import ConfigError, one_line
from fabricui.services.command_requests import ServeRequest
from fabricui.services.requests import CatalogRequest
from fabricui.services.serve_access import ServeAccess, is_loopback, new_token
from fabricui.tui.launch import check_launch
from fabricui.tui.serve_guard import SessionLimits, guarded_server_class

#: How to install what ``fabricui serve`` needs.
INSTALL_HINT = "pip install 'fabricui[serve]'"


def run_server(request: ServeRequest) -> int:
    """Check the request, then serve the explorer until interrupted; returns 0.

    A typo in the launch options is one line on stderr (exit status 2) before anything
    listens, rather than an error in every browser tab later.

    Args:
        request: What to serve and where.

    Raises:
        ConfigError: textual-serve is missing, the port cannot be bound, or a launch
            option is wrong (topology, GPU id, view).
    """
    server_class = _server_class()
    if not request.launch.is_default() or request.catalog != CatalogRequest():
        from fabricui.services.session import load_catalog

        check_launch(request.launch, load_catalog(request.catalog))
    check_bindable(request.host, request.port)
    url = public_url(request)
    if not is_loopback(request.host):
        print(
            f"fabricui: warning: serving on {request.host}:{request.port}, not loopback: "
            "whoever gets the URL with its token runs the explorer as you, and plain http "
            "shows the token to the network (an SSH tunnel to loopback does not)",
            file=sys.stderr,
        )
    access = ServeAccess.of(
        url,
        (request.host, request.port),
        request.allowed_origins,
        token=new_token() if request.token else None,
    )
    server = server_class(
        explorer_command(request.explore_args),
        host=request.host,
        port=request.port,
        title="fabricui",
        public_url=url,
        access=access,
        limits=SessionLimits(request.max_sessions, *request.max_terminal),
    )
    try:
        server.serve()
    except OSError as exc:  # the port was taken between the check and the bind
        raise ConfigError(f"cannot serve on {request.host}:{request.port}: {_reason(exc)}") from exc
    return 0


def _server_class() -> Any:
    """textual-serve's ``Server`` with fabricui's guard in front of it.

    Raises:
        ConfigError: textual-serve (or what it needs) is not installed.
    """
    try:
        return guarded_server_class()
    except ImportError as exc:
        raise ConfigError(
            f"fabricui serve needs the serve extra ({one_line(exc)}): {INSTALL_HINT}"
        ) from exc


def explorer_command(explore_args: tuple[str, ...]) -> str:
    """The shell command each browser session runs: this interpreter's fabricui.

    ``python -m fabricui`` rather than a ``fabricui`` found on PATH, so that the explorer
    is the one serving it even from a virtual environment that is not activated.

    Args:
        explore_args: ``explore`` and its options.
    """
    return shlex.join([sys.executable, "-m", "fabricui", *explore_args])


def public_url(request: ServeRequest) -> str:
    """The base URL the page tells the browser to connect its websocket to.

    A wildcard address (``0.0.0.0``, ``::``) is where the server listens, not where a
    browser can reach it: this machine's name stands in for it.
    """
    if request.public_url is not None:
        return request.public_url
    host = request.host
    if _is_wildcard(host):
        host = socket.getfqdn()
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{request.port}"


def check_bindable(host: str, port: int) -> None:
    """Fail early, in one line, when the server could not listen there.

    Raises:
        ConfigError: The port is taken, the address is not this machine's, or the host
            name does not resolve.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot serve on {host}:{port}: {_reason(exc)}") from exc
    family, _, _, _, address = infos[0]
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # The server sets SO_REUSEADDR too: a port in TIME_WAIT is not "in use".
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot serve on {host}:{port}: {_reason(exc)}") from exc


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _reason(exc: BaseException) -> str:
    """An OS error's reason without its errno prefix (``address already in use``)."""
    text = getattr(exc, "strerror", None) or str(exc)
    return one_line(text).lower()
