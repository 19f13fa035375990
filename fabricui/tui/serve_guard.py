"""textual-serve's web server with fabricui's guard in front: every request shows the run's
token and comes from the served origin and host name (``services.serve_access``), static
files are served but never their directories, and sessions are capped in number and in
terminal size.

Hooked in through textual-serve's own seams rather than a fork of it: ``_make_app`` gets
one aiohttp middleware, ``handle_websocket`` counts sessions, ``on_startup`` prints the URL
with its token, and the ``AppService`` class its websocket handler creates (looked up in
its module) clamps terminal sizes and reaps the explorer it started. textual-serve and
aiohttp are imported only when a server is made (they are the optional ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.services.serve_access import TOKEN_PARAMETER

if TYPE_CHECKING:
    from aiohttp import web

    from fabricui.services.serve_access import ServeAccess

#: How long a stopped session waits for its explorer to quit before killing it [s].
REAP_TIMEOUT_S = 10.0
#: How long a refused session stays open so that a browser shows why [s].
REFUSAL_LINGER_S = 30.0
#: The path of textual-serve's websocket (each browser session).
WEBSOCKET_PATH = "/ws"
#: The body of a 400 answer to a request of the websocket path that is no handshake.
NOT_A_WEBSOCKET = (
    "fabricui serve: /ws is the page's websocket (Upgrade: websocket); open the URL "
    "fabricui serve printed in a browser\n"
)

log = logging.getLogger("fabricui.serve")


@dataclass(frozen=True)
class SessionLimits:
    """How much of this machine browser sessions may take."""

    max_sessions: int
    """Explorers running at once; one more is refused in one line."""
    max_columns: int
    """Widest terminal a session runs at; a wider request is clamped."""
    max_rows: int
    """Tallest terminal a session runs at; a taller request is clamped."""

    def clamp(self, width: object, height: object) -> tuple[int, int]:
        """A requested terminal size within the limits (and at least 1x1); anything not a
        whole number counts as 1."""
        columns = width if isinstance(width, int) else 1
        rows = height if isinstance(height, int) else 1
        return (min(max(columns, 1), self.max_columns), min(max(rows, 1), self.max_rows))


def guarded_server_class() -> Any:
    """textual-serve's ``Server`` subclass that takes ``access`` and ``limits`` too.

    Raises:
        ImportError: textual-serve (or aiohttp) is not installed.
    """
    # ``import a.b``, not ``from a import b``: the latter finds an attribute the package
    # kept from an earlier import even where the module is gone (tests remove it).
    import textual_serve.server as served
    from aiohttp import WSCloseCode
    from textual_serve.app_service import AppService

    class GuardedServer(served.Server):
        """A textual-serve server that lets only its own page in, a few sessions at a time."""

        def __init__(
            self, command: str, *, access: ServeAccess, limits: SessionLimits, **options: Any
        ) -> None:
            super().__init__(command, **options)
            self.access = access
            """Token, origins and host names a request must show."""
            self.limits = limits
            """Sessions and terminal size."""
            self.sessions = 0
            """Sessions running now."""
            # The name textual-serve's websocket handler creates sessions with (a class
            # replaced on purpose, which the type checker would refuse).
            served.AppService = _app_service_class(AppService, limits)  # type: ignore[misc]

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(_guard(self.access, self.public_url))
            return app

        async def on_startup(self, app: web.Application) -> None:
            """Print where to point a browser: the URL with its token (one line); the
            request log shows the token as ``[token]``."""
            if self.access.token is not None:
                logging.getLogger("aiohttp.access").addFilter(_Redact(self.access.token))
            print(f"fabricui serve: open {self.url} in a browser (Ctrl+C stops)", flush=True)

        @property
        def url(self) -> str:
            """The page's URL, with the token when one is needed."""
            token = self.access.token
            return f"{self.public_url}/" + (f"?{TOKEN_PARAMETER}={token}" if token else "")

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """Run a session, unless as many as allowed run already."""
            if self.sessions >= self.limits.max_sessions:
                cap = self.limits.max_sessions
                return await _refuse_session(
                    request,
                    f"fabricui serve: {cap} session{'s' * (cap != 1)} already open "
                    f"(--max-sessions {cap}); close a tab and reload this one",
                    WSCloseCode.TRY_AGAIN_LATER,
                )
            self.sessions += 1
            try:
                response: web.WebSocketResponse = await super().handle_websocket(request)
                return response
            finally:
                self.sessions -= 1

    return GuardedServer


def _guard(access: ServeAccess, served_url: str) -> Any:
    """The aiohttp middleware that refuses, in one line (HTTP 403), requests that do not
    show the token or come from another origin or host name, answers 404 for a directory
    of static files and 400 for a request of the websocket that is no handshake (aiohttp
    would drop the connection); a page opened with the token gets it back as a cookie,
    so that its scripts, styles and websocket carry it."""
    from aiohttp import web

    secure = served_url.startswith("https:")

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.query.get(TOKEN_PARAMETER)
        tokens = (
            given,
            request.cookies.get(access.cookie_name),
            _authorization_token(request.headers.get("Authorization")),
        )
        refusal = access.refusal(request.headers.get("Host"), request.headers.get("Origin"), tokens)
        if refusal is not None:
            log.warning("refused %s %s: %s", request.method, request.path, refusal)
            return web.Response(status=403, text=f"fabricui serve: {refusal}\n")
        if _is_static_directory(request):
            raise web.HTTPNotFound(text="fabricui serve: no such file\n")
        if request.path == WEBSOCKET_PATH and not web.WebSocketResponse().can_prepare(request).ok:
            log.warning("refused %s %s: not a websocket handshake", request.method, request.path)
            return web.Response(status=400, text=NOT_A_WEBSOCKET)  # not a dropped connection
        response: web.StreamResponse = await handler(request)
        if access.token is not None and given == access.token and not response.prepared:
            response.set_cookie(
                access.cookie_name,
                access.token,
                path="/",
                httponly=True,
                samesite="Strict",
                secure=secure,
            )
        return response

    return guard


class _Redact(logging.Filter):
    """Replaces the token in log lines (request lines carry it in their query)."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = message.replace(self.secret, "[token]"), ()
        return True


def _authorization_token(header: str | None) -> str | None:
    """The token of an ``Authorization: token T`` (or ``Bearer T``) header, as Jupyter's."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() in ("token", "bearer") else None


def _is_static_directory(request: web.Request) -> bool:
    """Whether the request asks the static route for anything but a file (a listing)."""
    from aiohttp import web

    resource = request.match_info.route.resource
    if not isinstance(resource, web.StaticResource):
        return False
    directory = Path(resource.get_info()["directory"])
    name = request.match_info.get("filename", "")
    return not (directory / name).is_file()


async def _refuse_session(request: web.Request, line: str, code: int) -> web.WebSocketResponse:
    """Open the websocket only to write ``line`` on its terminal, then close it.

    It stays open a while (or until the browser leaves) so that the page shows the line
    rather than only "Session ended."
    """
    from aiohttp import web

    log.warning("%s", line)
    websocket = web.WebSocketResponse()
    await websocket.prepare(request)
    await websocket.send_bytes(f"{line}\r\n".encode())
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(_drain(websocket), REFUSAL_LINGER_S)
    await websocket.close(code=code, message=line.encode()[:120])
    return websocket


async def _drain(websocket: web.WebSocketResponse) -> None:
    """Read and drop what the client sends (the page's size and pings) until it leaves."""
    async for _ in websocket:
        pass


def _app_service_class(base: type[Any], limits: SessionLimits) -> type[Any]:
    """textual-serve's ``AppService`` (one session's explorer process), its terminal
    clamped to ``limits`` and its explorer reaped when the session stops."""

    class BoundedAppService(base):
        """A browser session whose explorer runs at a bounded size and is waited for.

        textual-serve leaves the finished process to the garbage collector; when the
        server is stopped with sessions open, that happens after the event loop closed
        and prints "Event loop is closed" tracebacks instead of exiting quietly.
        """

        async def start(self, width: int, height: int) -> None:
            await super().start(*limits.clamp(width, height))

        async def set_terminal_size(self, width: int, height: int) -> None:
            await super().set_terminal_size(*limits.clamp(width, height))

        async def stop(self) -> None:
            process = self._process
            try:
                await super().stop()
            finally:  # also when shutdown cancels the session midway
                if process is not None:
                    await _reap(process)

    return BoundedAppService


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Close the explorer's input and wait for it to exit (killed after a while).

    Closing its input comes first and is synchronous: a pipe left open would be closed by
    the garbage collector after the event loop is gone, which fails noisily.
    """
    if process.stdin is not None:
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), REAP_TIMEOUT_S)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
