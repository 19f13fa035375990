"""A real headless Chromium driven over the DevTools protocol, and what its page shows.

Why the DevTools protocol rather than ``--dump-dom``: textual-serve draws the terminal with
xterm.js on a canvas, so the page's DOM holds no text. A script run before the page's own
(``Page.addScriptToEvaluateOnNewDocument``) keeps a reference to the xterm.js ``Terminal``
the page creates, and the test reads the rows that terminal draws. aiohttp, which
textual-serve needs anyway, is the websocket client, so no browser driver is installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp  # textual-serve's own dependency (the test extra has fabricui serve's)
import pytest

#: Chromium binaries looked for, Debian's first (``.ci/run`` installs package ``chromium``).
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Flags for a headless browser on a machine without a network (no background requests,
#: no sandbox as root) and with a fresh profile (``--user-data-dir`` is added per run).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1600,1000",
)
#: Longest wait for the browser to open its DevTools port [s].
START_TIMEOUT = 60.0

#: Runs before the page's scripts: textual-serve's page assigns ``this.terminal = new
#: Terminal(...)``; a setter on Object.prototype sees that assignment, keeps the terminal
#: in ``window.__fabricuiTerminal`` and then gets out of the way.
CAPTURE_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {
      value, writable: true, configurable: true, enumerable: true,
    });
    if (value && value.buffer && value.buffer.active) {
      window.__fabricuiTerminal = value;
      delete Object.prototype.terminal;
    }
  },
});
"""
#: The rows the terminal shows, as text (null until the page made its terminal).
READ_SCREEN = """(() => {
  const term = window.__fabricuiTerminal;
  if (!term) return null;
  const buffer = term.buffer.active, rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
})()"""


def find_chromium() -> str | None:
    """The first Chromium on PATH, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One browser tab, spoken to over its DevTools websocket."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        """The aiohttp websocket of the tab's DevTools target."""
        self._next_id = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are dropped).

        Raises:
            AssertionError: The browser answered with an error.
        """
        self._next_id += 1
        ident = self._next_id
        await self.socket.send_json({"id": ident, "method": method, "params": params})
        while True:
            message = await self.socket.receive_json()
            if message.get("id") == ident:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result", {})

    async def open_terminal_page(self, url: str) -> None:
        """Load textual-serve's page at ``url``, keeping a handle on its terminal."""
        await self.call("Page.enable")
        await self.call("Page.addScriptToEvaluateOnNewDocument", source=CAPTURE_TERMINAL)
        await self.call("Page.navigate", url=url)

    async def screen(self) -> str | None:
        """The text the page's terminal shows now (None before it exists)."""
        result = await self.call("Runtime.evaluate", expression=READ_SCREEN, returnByValue=True)
        return result.get("result", {}).get("value")

    async def screenshot(self, path: Path) -> None:
        """Save what the tab shows as a PNG (kept beside a failing test's files)."""
        import base64

        result = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(result["data"]))


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    """A tab of a fresh headless Chromium (skipped when no Chromium is installed)."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    with (tmp_path / "chromium.log").open("wb") as log:
        browser = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    try:
        port = await _devtools_port(profile / "DevToolsActivePort", browser)
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = json.loads(await response.text())
            (target,) = [t for t in targets if t.get("type") == "page"]
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                tab = Page(ws)
                yield tab
                await tab.call("Browser.close")
        browser.wait(timeout=30)
    finally:
        if browser.poll() is None:
            os.killpg(browser.pid, signal.SIGKILL)  # the browser and its helper processes
            browser.wait(timeout=30)


async def _devtools_port(port_file: Path, browser: subprocess.Popen[bytes]) -> int:
    """The port Chromium wrote to ``DevToolsActivePort`` once it listens."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if browser.poll() is not None:
            pytest.fail(f"chromium exited with status {browser.returncode} before listening")
        text = port_file.read_text(encoding="utf-8") if port_file.exists() else ""
        if text.strip():
            return int(text.split()[0])
        await asyncio.sleep(0.1)
    pytest.fail(f"chromium did not open its DevTools port within {START_TIMEOUT:.0f} s")
