"""``fabricui serve`` against malformed and greedy clients at the HTTP level: raw sockets
and a raw websocket client talk to the guarded app served through its own runner (the
one ``serve`` starts) on a loopback port, whose sessions run a stand-in explorer; the log
goes through ``configure_logging`` into a string."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("textual_serve")

from aiohttp import web  # noqa: E402

from fabricui.services.serve_access import ServeAccess  # noqa: E402
from fabricui.tui import serve_guard  # noqa: E402
from fabricui.tui.serve_guard import (  # noqa: E402
    SECURITY_HEADERS,
    SessionLimits,
    guarded_server_class,
)
from fabricui.tui.serve_log import configure_logging  # noqa: E402

TOKEN = "5a5a5a5a0f0f0f0f" * 3
ROOT = Path(__file__).parents[2]

#: A stand-in for ``fabricui explore`` under textual-serve: the prelude, one data packet
#: with its terminal size, then it reads until told to quit.
FAKE_EXPLORER = r"""
import json, os, sys
out, inp = sys.stdout.buffer, sys.stdin.buffer
out.write(b"__GANGLION__\n")
payload = f"size {os.environ['COLUMNS']}x{os.environ['ROWS']}".encode()
out.write(b"D" + len(payload).to_bytes(4, "big") + payload)
out.flush()
while kind := inp.read(1):
    payload = inp.read(int.from_bytes(inp.read(4), "big"))
    if kind == b"M" and json.loads(payload).get("type") == "quit":
        break
"""


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """A guarded server on a loopback port, and its log."""

    def __init__(self, port: int, log: io.StringIO) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.log = log

    def raw(self, request: bytes, timeout: float = 5.0) -> bytes:
        """Send ``request`` on a connection of its own; what came back until it closed."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer

    def get(self, target: str, host: str | None = None, *headers: str) -> bytes:
        """A well-formed ``GET target`` (Connection: close), with ``Host`` and ``headers``."""
        lines = [f"GET {target} HTTP/1.1", f"Host: {host or f'127.0.0.1:{self.port}'}"]
        lines += [*headers, "Connection: close"]
        return self.raw(("\r\n".join(lines) + "\r\n\r\n").encode())

    def log_lines(self) -> list[str]:
        return self.log.getvalue().splitlines()


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def headers_of(answer: bytes) -> dict[str, str]:
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return {name.lower(): value for name, _, value in (line.partition(": ") for line in head)}


def body_of(answer: bytes) -> str:
    return answer.split(b"\r\n\r\n", 1)[1].decode()


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """The process's log configured as ``serve`` does (to a non-terminal), restored after."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    stream = io.StringIO()
    configure_logging(stream, TOKEN)
    try:
        yield stream
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


def _guarded_server(tmp_path: Path) -> tuple[Any, int, str]:
    """The guarded server of a fake explorer on a free loopback port (one session, so at
    most 24 connections), its port and URL."""
    script = tmp_path / "explorer.py"
    script.write_text(FAKE_EXPLORER)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = guarded_server_class()(
        shlex.join([sys.executable, str(script)]),
        host="127.0.0.1",
        port=port,
        public_url=url,
        access=ServeAccess.of(url, ("127.0.0.1", port), (), TOKEN),
        limits=SessionLimits(max_sessions=1, max_columns=100, max_rows=30),
    )
    return server, port, url


@pytest.fixture
async def served(tmp_path: Path, log_stream: io.StringIO) -> AsyncIterator[Served]:
    """The guarded app through its own runner: one session, so at most 24 connections."""
    server, port, url = _guarded_server(tmp_path)
    runner = server.runner(await server._make_app())
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        yield Served(port, log_stream)
    finally:
        await runner.cleanup()


def _long(text: str) -> str:
    return text + "a" * 9000


@pytest.mark.parametrize(
    ("name", "request_text"),
    [
        ("no Host", "GET / HTTP/1.1\r\n\r\n"),
        ("bad method", f"FOO /?token={TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n"),
        ("control character", "GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nX-A: a\x01b\r\n\r\n"),
        (
            "long URL",
            _long(f"GET /?token={TOKEN}&x=") + " HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
        ),
        (
            "long Cookie",
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nAuthorization: Bearer {TOKEN}\r\n"
            + _long("Cookie: x=")
            + "\r\n\r\n",
        ),
    ],
)
async def test_a_malformed_request_is_one_line(served: Served, name: str, request_text: str):
    """Each malformed request is answered 400 in one line that does not repeat it (nor the
    token), with the security headers, and logged in one line without a traceback."""
    request = request_text.replace("PORT", str(served.port)).encode()
    answer = await asyncio.to_thread(served.raw, request)
    assert status_of(answer) == 400, answer[:300]
    body = body_of(answer)
    assert body.startswith("fabricui serve: bad request: ") and body.count("\n") == 1, body
    assert TOKEN not in body and len(body) < 120
    assert headers_of(answer)["x-frame-options"] == "DENY"
    await asyncio.sleep(0.1)
    lines = served.log_lines()
    assert len(lines) == 1 and "WARNING bad request from 127.0.0.1: " in lines[0], lines
    assert TOKEN not in served.log.getvalue() and "Traceback" not in served.log.getvalue()


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("{not json", "not JSON (9 characters)"),
        ('["stdin", 5]', "stdin without text"),
        ('["resize", []]', "resize without a size"),
        ("[]", "not a [kind, data] list"),
    ],
)
async def test_a_bad_websocket_message_ends_the_session_in_one_line(
    served: Served, message: str, reason: str
):
    """A message the page would never send closes the session (1003) and logs one line
    that names what was wrong, not the message."""
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"{served.base}/ws?token={TOKEN}", headers={"Origin": served.base}) as ws,
    ):
        assert (await ws.receive(timeout=10)).data == b"size 80x24"
        await ws.send_str(message)
        closing = await ws.receive(timeout=10)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert ws.close_code == aiohttp.WSCloseCode.UNSUPPORTED_DATA
    await asyncio.sleep(0.2)
    text = served.log.getvalue()
    bad = [line for line in text.splitlines() if "bad message" in line]
    assert bad == [bad[0]] and bad[0].endswith(
        f"bad message from the browser: {reason}; session closed"
    )
    assert "Traceback" not in text and "Error" not in text


async def test_a_well_formed_session_still_runs(served: Served):
    """Resize and ping messages pass the check (pong answered)."""
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"{served.base}/ws?token={TOKEN}", headers={"Origin": served.base}) as ws,
    ):
        assert (await ws.receive(timeout=10)).data == b"size 80x24"
        await ws.send_str(json.dumps(["resize", {"width": 90, "height": 20}]))
        await ws.send_str(json.dumps(["ping", "now"]))
        assert json.loads((await ws.receive(timeout=10)).data) == ["pong", "now"]
    assert "bad message" not in served.log.getvalue()


async def test_connections_are_capped_and_answered_503(served: Served):
    """Beyond 24 open connections (one session) more are answered 503 in one line and
    closed, logged once; once they close, requests are served again."""
    sockets = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(40)]
    try:
        for sock in sockets:
            sock.sendall(b"GET / HTTP/1.1\r\n")  # half a request
        await asyncio.sleep(0.5)
        refused = 0
        for sock in sockets:
            sock.settimeout(0.05)
            try:
                answer = await asyncio.to_thread(sock.recv, 1000)
            except socket.timeout:
                continue
            assert status_of(answer) == 503 and body_of(answer).count("\n") == 1
            assert headers_of(answer)["server"] == "fabricui"
            refused += 1
        assert 40 - 24 - 2 <= refused <= 40 - 24
    finally:
        for sock in sockets:
            sock.close()
    await asyncio.sleep(0.5)
    answer = await asyncio.to_thread(served.get, f"/?token={TOKEN}")
    assert status_of(answer) == 200
    assert sum("connections open" in line for line in served.log_lines()) == 1


async def test_a_half_sent_request_is_closed_in_time(
    served: Served, monkeypatch: pytest.MonkeyPatch
):
    """A connection that does not finish its request is closed after REQUEST_TIMEOUT_S."""
    monkeypatch.setattr(serve_guard, "REQUEST_TIMEOUT_S", 0.5)

    def wait_for_close() -> float:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0")
            start = time.monotonic()
            assert sock.recv(100) == b""
            return time.monotonic() - start

    assert await asyncio.to_thread(wait_for_close) < 3


@pytest.mark.parametrize("host", ["localhost:PORT", "[::1]:PORT"])
async def test_loopback_names_are_accepted(served: Served, host: str):
    """Bound to 127.0.0.1, ``localhost`` and ``[::1]`` are this machine: the page is sent
    to the served URL (its scripts and websocket use it), other files are served."""
    host = host.replace("PORT", str(served.port))
    answer = await asyncio.to_thread(served.get, f"/?token={TOKEN}", host)
    assert status_of(answer) == 307
    assert headers_of(answer)["location"] == f"{served.base}/?token={TOKEN}"
    answer = await asyncio.to_thread(
        served.get, "/static/js/textual.js", host, f"Authorization: Bearer {TOKEN}"
    )
    assert status_of(answer) == 200
    origin = f"http://{host}"
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"{served.base}/ws?token={TOKEN}", headers={"Origin": origin}) as ws,
    ):
        assert (await ws.receive(timeout=10)).data == b"size 80x24"


async def test_other_names_are_still_refused(served: Served):
    """DNS rebinding: any other name, even one resolving to loopback, is refused."""
    answer = await asyncio.to_thread(served.get, f"/?token={TOKEN}", f"evil.example:{served.port}")
    assert status_of(answer) == 403


def test_loopback_names_only_when_bound_to_loopback():
    """Bound to every address, ``localhost`` is not added (nor another origin)."""
    access = ServeAccess.of("http://box.example:8000", ("0.0.0.0", 8000), (), TOKEN)
    assert access.refusal("localhost:8000", None, (TOKEN,)) is not None
    loopback = ServeAccess.of("http://127.0.0.1:8000", ("127.0.0.1", 8000), (), TOKEN)
    assert loopback.refusal("localhost:8000", "http://localhost:8000", (TOKEN,)) is None
    assert loopback.refusal("localhost:8001", None, (TOKEN,)) is not None


@pytest.mark.parametrize(
    ("target", "status", "body"),
    [
        (f"/download/nope?token={TOKEN}", 404, "fabricui serve: no such download\n"),
        (f"/nothing?token={TOKEN}", 404, "fabricui serve: not found\n"),
        ("/", 403, None),
        (f"/?token={TOKEN}", 200, None),
        (f"/static/js/textual.js?token={TOKEN}", 200, None),
    ],
)
async def test_every_answer_has_the_security_headers(
    served: Served, target: str, status: int, body: str | None
):
    """Page, script, refusals and aiohttp's own 404 carry the security headers and no
    aiohttp version; errors are one ``fabricui serve:`` line."""
    answer = await asyncio.to_thread(served.get, target)
    assert status_of(answer) == status
    headers = headers_of(answer)
    for name, value in SECURITY_HEADERS.items():
        assert headers[name.lower()] == value
    assert headers["server"] == "fabricui"
    if body is not None:
        assert body_of(answer) == body
    if status >= 400:
        assert body_of(answer).startswith("fabricui serve: ")


async def test_a_refusal_is_one_log_line(served: Served):
    """A refused request is one line in the log (no access line beside it), its token
    masked; an answered one is one access line."""
    await asyncio.to_thread(served.get, f"/?token={TOKEN}", f"evil.example:{served.port}")
    await asyncio.to_thread(served.get, f"/?token={TOKEN}")
    await asyncio.sleep(0.1)
    lines = served.log_lines()
    assert len(lines) == 2, lines
    assert "refused GET / from 127.0.0.1: this server answers to" in lines[0]
    assert '"GET /?token=[token] HTTP/1.1" 200' in lines[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_log_masks_the_token_everywhere():
    """Any logger's record (aiohttp's, textual-serve's), its arguments and its traceback
    show ``[token]``; in a file each record is one line, a traceback its last line; on a
    terminal a traceback shows no local variables."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        for stream in (io.StringIO(), _Terminal()):
            configure_logging(stream, TOKEN)
            secret_local = f"/?token={TOKEN}"  # noqa: F841 (what Rich would show)
            try:
                raise ValueError(f"bad URL {secret_local}\nsecond line")
            except ValueError:
                logging.getLogger("aiohttp.server").exception("failed %s", TOKEN)
            logging.getLogger("textual-serve").warning("x" * 300)
            text = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # Rich's colours
            assert TOKEN not in text and "[token]" in text
            assert "secret_local =" not in text and "locals" not in text
            if not isinstance(stream, _Terminal):
                lines = text.splitlines()
                assert len(lines) == 2 and "ValueError: bad URL /?token=[token]" in lines[0]
                assert "Traceback" not in text and lines[1].endswith("x" * 300)
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a process group")
def test_fabricui_serve_logs_one_line_per_bad_request(tmp_path: Path):
    """The real command: the URL on stdout, a malformed request carrying the token one
    log line on stderr (no traceback, token masked); SIGINT stops it."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins")])}
    with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
        server = subprocess.Popen(
            [sys.executable, "-m", "fabricui", "serve", "--port", str(port)],
            stdout=out,
            stderr=err,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            while "token=" not in (tmp_path / "out").read_text():
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.1)
            token = (tmp_path / "out").read_text().split("token=")[1].split()[0]
            request = f"FOO /?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
            answer = Served(port, io.StringIO()).raw(request.encode())
            assert status_of(answer) == 400 and token not in body_of(answer)
        finally:
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=20) == 0
    log = (tmp_path / "err").read_text()
    assert log.count("\n") == 1 and "bad request from 127.0.0.1: not an HTTP method" in log
    assert token not in log


async def test_stopping_the_server_closes_its_sessions_at_once(tmp_path: Path, log_stream):
    """With a browser still connected, the runner's cleanup (what SIGTERM runs) closes the
    session's websocket as going away and reaps its explorer at once, instead of aiohttp's
    graceful wait for the session to end by itself (about 20 s)."""
    server, port, url = _guarded_server(tmp_path)
    runner = server.runner(await server._make_app())
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"{url}/ws?token={TOKEN}", headers={"Origin": url})
            assert (await ws.receive(timeout=10)).data == b"size 80x24"
            closing = asyncio.create_task(ws.receive(timeout=60))  # the browser keeps reading
            start = time.monotonic()
            await runner.cleanup()
            stopped_s = time.monotonic() - start
            message = await closing
            await ws.close()
    finally:
        await runner.cleanup()
    assert stopped_s < 8.0, f"the server took {stopped_s:.1f} s to stop"
    assert message.type == aiohttp.WSMsgType.CLOSE, message
    assert message.data == aiohttp.WSCloseCode.GOING_AWAY
    assert server.sessions == 0 and not server.websockets
    assert "Traceback" not in log_stream.getvalue()
