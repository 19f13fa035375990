"""textual-serve's web server with fabricui's guard in front: every request shows the run's
token and comes from the served origin and host name (``services.serve_access``), static
files are served but never their directories, and sessions are capped in number and in
terminal size.

Hooked in through textual-serve's own seams rather than a fork of it: ``_make_app`` gets
one aiohttp middleware, ``handle_websocket`` counts sessions, ``on_startup`` prints the URL
with its token, ``on_shutdown`` closes the sessions' websockets (a stopped server does not
wait for open tabs), and the ``AppService`` class its websocket handler creates (looked up in
its module) clamps terminal sizes and reaps the explorer it started. ``serve`` runs the
app on aiohttp's own runner with a request handler of fabricui's: a malformed request is
answered and logged in one line, and connections are capped in number and in how long
they take to send a request (the log itself is set up by ``serve_log``).
textual-serve and aiohttp are imported only when a server is made (they are the optional
``serve`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.services.serve_access import TOKEN_PARAMETER
from fabricui.tui.serve_log import configure_logging, exception_line

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.web_request import BaseRequest

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

#: How long a connection may take to send a request's line and headers, and stay idle
#: between requests, before it is closed [s] (aiohttp's keep-alive timer, which runs from
#: the connection's start).
REQUEST_TIMEOUT_S = 15.0
#: Connections a session may need besides its websocket (a browser opens about six).
CONNECTIONS_PER_SESSION = 8
#: Connections kept open whatever the session cap (a page loading while sessions run).
SPARE_CONNECTIONS = 16
#: What the server calls itself in ``Server:`` (no version to look vulnerabilities up by).
SERVER_NAME = "fabricui"
#: Headers every answer carries: no other page may frame this one (clickjacking), a file
#: is what its type says, and no URL (with its token) leaves in a ``Referer``. Only
#: ``frame-ancestors`` is restricted: the page's own scripts and websocket are untouched.
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: The name of the request key marking a request whose refusal was logged already.
LOGGED = "fabricui.serve.logged"

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

    @property
    def max_connections(self) -> int:
        """Connections open at once: enough for every session's page, then refused."""
        return SPARE_CONNECTIONS + CONNECTIONS_PER_SESSION * self.max_sessions


def guarded_server_class() -> Any:
    """textual-serve's ``Server`` subclass that takes ``access`` and ``limits`` too.

    Raises:
        ImportError: textual-serve (or aiohttp) is not installed.
    """
    # ``import a.b``, not ``from a import b``: the latter finds an attribute the package
    # kept from an earlier import even where the module is gone (tests remove it).
    import textual_serve.server as served
    from aiohttp import WSCloseCode, WSMsgType, web
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
            self.websockets: set[web.WebSocketResponse] = set()
            """The websockets of the sessions running now (closed when the server stops)."""
            # The name textual-serve's websocket handler creates sessions with (a class
            # replaced on purpose, which the type checker would refuse).
            served.AppService = _app_service_class(AppService, limits)  # type: ignore[misc]

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(_guard(self.access, self.public_url))
            app.on_response_prepare.append(_add_security_headers)
            return app

        def initialize_logging(self) -> None:
            """One line per record on stderr, the token shown as ``[token]``, tracebacks
            without their local variables (textual-serve shows them, token included)."""
            configure_logging(sys.stderr, self.access.token, debug=self.debug)

        def serve(self, debug: bool = False) -> None:
            """Serve until SIGINT or SIGTERM, through ``runner``'s guarded connections.

            Raises:
                OSError: The address cannot be listened on.
            """
            self.debug = debug
            self.initialize_logging()
            with contextlib.suppress(KeyboardInterrupt):  # where signals cannot be caught
                asyncio.run(self._serve_until_stopped())

        async def _serve_until_stopped(self) -> None:
            stopped = asyncio.Event()
            loop = asyncio.get_running_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError):  # Windows
                    loop.add_signal_handler(number, stopped.set)
            runner = self.runner(await self._make_app())
            await runner.setup()
            try:
                await web.TCPSite(runner, self.host, self.port).start()
                await stopped.wait()
            finally:
                await runner.cleanup()

        def runner(self, app: web.Application) -> web.AppRunner:
            """aiohttp's runner of ``app`` with fabricui's request handler (``serve``
            starts one; tests start theirs)."""
            return guarded_runner(app, self.limits)

        async def on_startup(self, app: web.Application) -> None:
            """Print where to point a browser: the URL with its token (one line); the
            log shows the token as ``[token]``."""
            print(f"fabricui serve: open {self.url} in a browser (Ctrl+C stops)", flush=True)

        async def on_shutdown(self, app: web.Application) -> None:
            """Close every session's websocket ("going away"), which ends the session and
            reaps its explorer: aiohttp's graceful shutdown would otherwise wait for each
            session to end by itself (about 20 s with a browser still connected)."""
            await asyncio.gather(
                *(
                    websocket.close(code=WSCloseCode.GOING_AWAY, message=b"fabricui serve stopped")
                    for websocket in list(self.websockets)
                ),
                return_exceptions=True,
            )

        async def handle_download(self, request: web.Request) -> web.StreamResponse:
            """A file the explorer offers the browser (a saved view), once."""
            try:
                response: web.StreamResponse = await super().handle_download(request)
            except web.HTTPNotFound:
                raise web.HTTPNotFound(text="fabricui serve: no such download\n") from None
            return response

        async def _process_messages(
            self, websocket: web.WebSocketResponse, app_service: AppService
        ) -> None:
            """textual-serve's loop over the page's messages, each checked first: a
            malformed one ends the session with one line in the log (textual-serve would
            log a traceback with the message in it)."""
            self.websockets.add(websocket)
            try:
                await self._check_messages(websocket, app_service)
            finally:
                self.websockets.discard(websocket)

        async def _check_messages(
            self, websocket: web.WebSocketResponse, app_service: AppService
        ) -> None:
            async for message in websocket:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    kind, data = _envelope(message.data)
                except ValueError as exc:
                    log.warning("bad message from the browser: %s; session closed", exc)
                    await websocket.close(code=WSCloseCode.UNSUPPORTED_DATA, message=b"bad message")
                    return
                if kind == "stdin":
                    await app_service.send_bytes(data.encode("utf-8"))
                elif kind == "resize":
                    await app_service.set_terminal_size(data.get("width"), data.get("height"))
                elif kind == "ping":
                    await websocket.send_json(["pong", data])
                elif kind == "blur":
                    await app_service.blur()
                elif kind == "focus":
                    await app_service.focus()

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
    so that its scripts, styles and websocket carry it. The page asked for under another
    loopback name than the served URL's is sent there (307): its scripts and websocket
    are addressed to that URL, and the cookie is kept per host name. aiohttp's own error
    answers (404, 405) are one line too."""
    from aiohttp import web

    secure = served_url.startswith("https:")
    served_host = served_url.split("://", 1)[1].lower()

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        started = getattr(request.protocol, "request_started", None)
        if started is not None:
            started()
        if request.version >= (1, 1) and "Host" not in request.headers:
            # aiohttp from 3.14 refuses this before the middleware (handle_error)
            return _bad_request(request, "no Host header")
        given = request.query.get(TOKEN_PARAMETER)
        tokens = (
            given,
            request.cookies.get(access.cookie_name),
            _authorization_token(request.headers.get("Authorization")),
        )
        refusal = access.refusal(request.headers.get("Host"), request.headers.get("Origin"), tokens)
        if refusal is not None:
            return _refuse(request, 403, refusal, f"fabricui serve: {refusal}\n")
        host = (request.headers.get("Host") or "").strip().lower()
        if request.path == "/" and host in access.aliases and _same_port(host, served_host):
            raise web.HTTPTemporaryRedirect(served_url + request.path_qs)
        if _is_static_directory(request):
            raise web.HTTPNotFound(text="fabricui serve: no such file\n")
        if request.path == WEBSOCKET_PATH and not web.WebSocketResponse().can_prepare(request).ok:
            # an answer, not a dropped connection
            return _refuse(request, 400, "not a websocket handshake", NOT_A_WEBSOCKET)
        try:
            response: web.StreamResponse = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400 or (exc.text or "").startswith("fabricui serve:"):
                raise
            return _one_line_error(exc)  # aiohttp's own: 404: Not Found, 405, ...
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


def _refuse(request: web.Request, status: int, why: str, body: str) -> web.Response:
    """The one-line answer to a refused request, logged in one line (no access line)."""
    from aiohttp import web

    log.warning("refused %s %s from %s: %s", request.method, request.path, request.remote, why)
    request[_logged_key()] = True
    return web.Response(status=status, text=body)


def _bad_request(request: web.Request, reason: str) -> web.Response:
    """The one-line 400 answer to a malformed request, logged in one line, as
    ``GuardedRequestHandler.handle_error`` answers the ones aiohttp refuses itself."""
    from aiohttp import web

    log.warning("bad request from %s: %s", request.remote, reason)
    request[_logged_key()] = True
    response = web.Response(status=400, text=f"fabricui serve: bad request: {reason}\n")
    response.force_close()
    return response


@functools.cache
def _logged_key() -> Any:
    """The request key of ``LOGGED``: a typed ``web.RequestKey`` where aiohttp has them
    (3.12 and later warn about plain strings)."""
    from aiohttp import web

    key_type = getattr(web, "RequestKey", None)
    return LOGGED if key_type is None else key_type(LOGGED, bool)


def _one_line_error(exc: web.HTTPException) -> web.Response:
    """aiohttp's own error answer (``404: Not Found``) as one ``fabricui serve:`` line, its
    ``Allow`` header (of a 405) kept."""
    from aiohttp import web

    allow = {name: value for name, value in exc.headers.items() if name.lower() == "allow"}
    text = f"fabricui serve: {exc.reason.lower()}\n"
    return web.Response(status=exc.status, text=text, headers=allow)


def _same_port(host: str, other: str) -> bool:
    """Whether two ``host[:port]`` headers name the same port (a missing one is 80)."""

    def port(value: str) -> str:
        head, _, tail = value.rpartition(":")
        return tail if head and not tail.endswith("]") else "80"

    return port(host) == port(other)


async def _add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: ``SECURITY_HEADERS`` and a ``Server:`` without versions."""
    response.headers.update(SECURITY_HEADERS)
    response.headers["Server"] = SERVER_NAME


def _envelope(text: str) -> tuple[str, Any]:
    """The kind and data of a message from the page (``["stdin", "q"]``).

    Raises:
        ValueError: Not what textual-serve's page sends, in a few words (never the message).
    """
    try:
        envelope = json.loads(text)
    except ValueError:
        raise ValueError(f"not JSON ({len(text)} characters)") from None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        raise ValueError("not a [kind, data] list")
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and not isinstance(data, str):
        raise ValueError("stdin without text")
    if kind == "resize" and not isinstance(data, dict):
        raise ValueError("resize without a size")
    return kind, data


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


def guarded_runner(app: web.Application, limits: SessionLimits) -> web.AppRunner:
    """aiohttp's runner of ``app`` whose connections are guarded: at most
    ``limits.max_connections`` open (one more is answered 503 and closed), each closed when
    it takes ``REQUEST_TIMEOUT_S`` to send a request, and a malformed request answered and
    logged in one line that does not repeat it (aiohttp answers with the request line and
    logs a traceback).

    Args:
        app: The application to serve.
        limits: Its sessions' limits (the connection cap follows the session cap).
    """
    from aiohttp import http_exceptions, web

    class GuardedRequestHandler(web.RequestHandler):
        """aiohttp's connection handler, with one-line answers to malformed requests, closed
        when no request arrives in ``REQUEST_TIMEOUT_S`` (``request_timer``)."""

        request_timer: asyncio.TimerHandle | None = None

        def __init__(self, server: GuardedWebServer, **options: Any) -> None:
            super().__init__(server, **options)
            self.counted_by = server
            """The server that counts this connection until it is lost."""
            self.requested = False
            """Whether a whole request (line and headers) has arrived on it."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            # Our own timer: aiohttp's keep-alive timer only covers the wait for a first
            # request from aiohttp 3.14 on (Python 3.9 installs 3.13).
            self.request_timer = asyncio.get_running_loop().call_later(
                REQUEST_TIMEOUT_S, self.close_unless_requested
            )

        def request_started(self) -> None:
            """A request's line and headers arrived (the guard middleware says so)."""
            self.requested = True
            if self.request_timer is not None:
                self.request_timer.cancel()

        def close_unless_requested(self) -> None:
            if not self.requested:
                self.force_close()

        def connection_lost(self, exc: BaseException | None) -> None:
            if self.request_timer is not None:
                self.request_timer.cancel()
            super().connection_lost(exc)
            self.counted_by.open -= 1

        def handle_error(
            self,
            request: BaseRequest,
            status: int = 500,
            exc: BaseException | None = None,
            message: str | None = None,
        ) -> web.StreamResponse:
            if status >= 500:
                log.error(
                    "error answering %s %s: %s",
                    request.method,
                    request.path,
                    exception_line(exc),
                    exc_info=exc,
                )
                text = "fabricui serve: internal error (see the server's log)"
            else:
                reason = _bad_request_reason(exc, http_exceptions)
                log.warning("bad request from %s: %s", request.remote, reason)
                text = f"fabricui serve: bad request: {reason}"
            request[_logged_key()] = True
            if request.writer.output_size > 0:  # as aiohttp: an answer was under way
                raise ConnectionError("an answer was sent already")
            headers = {**SECURITY_HEADERS, "Server": SERVER_NAME}
            response = web.Response(status=status, text=f"{text}\n", headers=headers)
            response.force_close()
            return response

        def log_access(self, request: BaseRequest, *args: Any) -> None:
            if not request.get(_logged_key()):  # a refusal is logged in its own line
                super().log_access(request, *args)

    class GuardedWebServer(web.Server):
        """aiohttp's server (the factory of connection handlers), capped in connections.

        It counts the handlers it made rather than aiohttp's connections: a burst of
        connections is accepted in one go, before any is registered there.
        """

        def __init__(self, handler: Any, **options: Any) -> None:
            super().__init__(handler, **options)
            self.open = 0
            """Connections open now (handlers made and not yet lost)."""
            self.full = False
            """Whether the last connection was refused (one log line per burst)."""

        def __call__(self) -> Any:
            if self.open >= limits.max_connections:
                if not self.full:
                    log.warning(
                        "%d connections open, the most this server keeps: refusing more "
                        "until some close",
                        limits.max_connections,
                    )
                self.full = True
                return _Overloaded()
            self.full = False
            self.open += 1
            return GuardedRequestHandler(
                self, loop=asyncio.get_running_loop(), keepalive_timeout=REQUEST_TIMEOUT_S
            )

    class GuardedRunner(web.AppRunner):
        """aiohttp's application runner, serving through ``GuardedWebServer``."""

        async def _make_server(self) -> web.Server:
            made = await super()._make_server()  # starts the app up
            return GuardedWebServer(
                made.request_handler,
                request_factory=made.request_factory,
                handler_cancellation=made.handler_cancellation,
            )

    return GuardedRunner(app)


class _Overloaded(asyncio.Protocol):
    """A connection beyond the cap: answered 503 in one line, then closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        body = b"fabricui serve: too many connections open; try again later\n"
        head = [
            "HTTP/1.1 503 Service Unavailable",
            "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(body)}",
            "Connection: close",
            f"Server: {SERVER_NAME}",
            *(f"{name}: {value}" for name, value in SECURITY_HEADERS.items()),
        ]
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        transport.close()


def _bad_request_reason(exc: BaseException | None, http_exceptions: Any) -> str:
    """What is wrong with a request aiohttp could not parse, in a few words that do not
    repeat it (aiohttp's message quotes the request line or header, token included)."""
    kinds = (
        (http_exceptions.LineTooLong, "a request line or header is too long"),
        (http_exceptions.BadHttpMethod, "not an HTTP method"),
        (http_exceptions.InvalidURLError, "not a URL"),
        (http_exceptions.InvalidHeader, "a malformed header"),
        (http_exceptions.BadStatusLine, "a malformed request line"),
    )
    for kind, reason in kinds:
        if isinstance(exc, kind):
            return reason
    text = getattr(exc, "message", None) or str(exc or "")
    first = text.splitlines()[0] if text.strip() else "malformed"
    for quote in (":", "b'", 'b"', "bytearray("):  # llhttp's "what: quoted data"
        first = first.split(quote, 1)[0]
    first = first.strip().rstrip(".")[:80] or "malformed"
    return first[:1].lower() + first[1:]
