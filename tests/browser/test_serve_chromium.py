"""``fabricui serve`` in a real headless Chromium: the page opened at the URL the server
prints (with its token) runs the explorer with the launch options given to ``serve``, shows
the path and bottleneck the CLI computes, while a raw websocket from another origin or
without the token is refused; the server stops cleanly on SIGTERM, taking the explorer it
started with it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest

if TYPE_CHECKING:
    from conftest import Page  # tests/browser/conftest.py (fixture page)

pytestmark = pytest.mark.slow

#: The README's example pair (50 GB/s at the InfiniBand hop).
LAUNCH = ("-t", "dgx-h100-pod", "--src", "n0.g0", "--dst", "n3.g7")
#: Longest wait for the server to answer HTTP, and for the explorer's first frame [s]: a
#: cold start on a loaded 2-core machine.
START_TIMEOUT = 90.0
#: Longest wait for the server to stop after SIGTERM [s].
STOP_TIMEOUT = 30.0


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def app_env(home: Path) -> dict[str, str]:
    """The server's environment: no user settings, state or external plugins."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FABRICUI_", "XDG_"))}
    env.update(HOME=str(home), FABRICUI_LOAD_PLUGINS="", PYTHONUNBUFFERED="1")
    return env


async def wait_for_url(server: subprocess.Popen[bytes], log: Path) -> str:
    """The URL ``fabricui serve`` prints, once it answers 200 there."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"fabricui serve exited {server.returncode}:\n{log.read_text()[-3000:]}")
        printed = re.search(r"fabricui serve: open (\S+) in a browser", log.read_text())
        try:
            if printed:
                url = printed.group(1)
                with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
                    if response.status == 200:
                        return url
        except OSError:
            pass
        await asyncio.sleep(0.25)
    pytest.fail(f"fabricui serve did not print and answer its URL within {START_TIMEOUT:.0f} s")


async def refused_websocket(url: str, **headers: str) -> int:
    """The HTTP status that refused a raw websocket to ``url`` (fails if it opened)."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, headers=headers):
                pytest.fail(f"a websocket to {url} with {headers} was accepted")
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status
    raise AssertionError("unreachable")


async def wait_for_path(page: Page, title: str) -> str:
    """The page's screen once the path panel shows ``title`` with its bottleneck."""
    deadline = time.monotonic() + START_TIMEOUT
    screen = None
    while time.monotonic() < deadline:
        screen = await page.screen()
        if screen and title in screen and re.search(r"bottleneck\s+\S+ \S+ per direction", screen):
            return screen
        await asyncio.sleep(0.5)
    pytest.fail(f"the page never showed {title} and its bottleneck; last screen:\n{screen}")


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server, wait for it, then for every process it started to be gone.

    The server was started in its own session, so its process group holds the server and
    the explorers it ran; an empty group means nothing was left behind.
    """
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=STOP_TIMEOUT)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        try:
            os.killpg(server.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("the explorer outlived fabricui serve")


async def test_browser_shows_the_served_path(page: Page, tmp_path: Path, run_cli) -> None:
    """Chromium opens the token URL ``fabricui serve`` prints; its terminal shows n0.g0 ->
    n3.g7 with the bottleneck ``fabricui path`` reports. A raw websocket with another
    site's Origin (token or not), or with no token, is refused. SIGTERM stops the server
    (status 0) and its explorer."""
    status, out, _ = run_cli("path", *LAUNCH, "--json")
    assert status == 0
    expected = json.loads(out)
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "fabricui", "serve", "--port", str(port), *LAUNCH]
    with log.open("wb") as sink:
        server = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=app_env(home),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = await wait_for_url(server, log)
        served = f"http://127.0.0.1:{port}"
        token = re.fullmatch(rf"{served}/\?token=([0-9a-f]{{48}})", url)
        assert token, url
        websocket = f"ws://127.0.0.1:{port}/ws?token={token.group(1)}&width=80&height=24"
        assert await refused_websocket(websocket, Origin="http://evil.example") == 403
        assert await refused_websocket(websocket.replace(token.group(1), "")) == 403
        await page.open_terminal_page(url)
        try:
            screen = await wait_for_path(page, "n0.g0 -> n3.g7")
        except BaseException:
            await page.screenshot(tmp_path / "page.png")
            raise
        hops = re.search(r"(?:same|different) nodes?, (\d+) hops?", screen)
        assert hops and int(hops.group(1)) == len(expected["hops"]), screen
        bottleneck = re.search(r"bottleneck\s+([\d.]+) GB/s per direction", screen)
        assert bottleneck, screen
        assert float(bottleneck.group(1)) == expected["bottleneck_GBps"] == 50.0
        assert expected["bottleneck_link"].replace("->", " -> ") in screen
        stop(server)  # while the browser is still connected: the explorer must go too
        assert server.returncode == 0, log.read_text()[-3000:]
        printed = log.read_text(encoding="utf-8", errors="replace")
        assert "Traceback" not in printed
        assert token.group(1) not in printed.replace(url, "")  # the request log hides it
    finally:
        if server.poll() is None or _group_alive(server.pid):
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=STOP_TIMEOUT)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
