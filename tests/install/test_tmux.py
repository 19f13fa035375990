"""The installed explorer in a real terminal: tmux drives it locally and over SSH on loopback.

Pilot tests run the app in-process on a fake driver; here the wheel's own ``fabricui`` script
runs under a pseudo-terminal (tmux), optionally behind ``ssh -tt``, and the test reads what a
user would see with ``capture-pane``: keys select two GPUs, the bottleneck on screen is the
CLI's, views switch, ``S`` saves a snapshot, ``q`` quits with status 0.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

import pytest

if TYPE_CHECKING:
    from conftest import InstalledVenv  # tests/install/conftest.py (fixture installed_venv)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

T = TypeVar("T")

#: Terminal size of the pane [columns, rows] (the size the snapshots use).
COLUMNS, ROWS = 120, 40
#: Longest wait for the first frame [s]: a cold start on a loaded 2-core machine.
START_TIMEOUT = 90.0
#: Longest wait for the screen to answer a key [s].
KEY_TIMEOUT = 45.0
#: Environment of the app: no external plugins, whatever other install tests added to the
#: shared venv (a failing one would put a warning toast over the path panel).
APP_ENV = {"FABRICUI_LOAD_PLUGINS": "", "NO_COLOR": "1"}

#: Units on screen, as multiples of GB/s and of microseconds.
BANDWIDTH_UNITS = {"MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3}
TIME_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class PanelFigures:
    """What the path panel shows for one pair, in the CLI's units."""

    title: str
    """``n0.g2 -> n0.g5``."""
    hops: int
    """Number of hops."""
    bottleneck_GBps: float
    """Bottleneck bandwidth [GB/s]."""
    latency_us: float
    """Path latency [us]."""
    transfer_us: float
    """Transfer time of the panel's message size [us]."""


def read_panel(screen: str, src: str, dst: str) -> PanelFigures | None:
    """The path panel's figures for ``src -> dst``, or None while another path is shown."""
    title = f"{src} -> {dst}"
    if title not in screen:
        return None
    hops = re.search(r"(?:same|different) nodes?, (\d+) hops?", screen)
    bottleneck = re.search(r"bottleneck\s+([\d.]+) (MB/s|GB/s|TB/s) per direction", screen)
    latency = re.search(r"latency\s+([\d.]+) (ns|us|ms|s)\b", screen)
    transfer = re.search(r"transfer\s+([\d.]+) (ns|us|ms|s)\b", screen)
    if not (hops and bottleneck and latency and transfer):
        return None
    return PanelFigures(
        title=title,
        hops=int(hops.group(1)),
        bottleneck_GBps=float(bottleneck.group(1)) * BANDWIDTH_UNITS[bottleneck.group(2)],
        latency_us=float(latency.group(1)) * TIME_UNITS[latency.group(2)],
        transfer_us=float(transfer.group(1)) * TIME_UNITS[transfer.group(2)],
    )


class Pane:
    """One tmux server on its own socket, running one command in a COLUMNS x ROWS pane."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.socket = f"fabricui-test-{os.getpid()}-{name}-{uuid.uuid4().hex[:8]}"
        """Socket name (``tmux -L``): a private server, never the user's."""
        self.env = env
        """Environment of the tmux server, and so of the pane."""
        self.status_file: Path | None = None
        """Where the pane's shell writes the command's exit status."""
        self.socket_path: Path | None = None
        """The server's socket file (tmux leaves it behind; ``close`` removes it)."""

    def tmux(self, *args: str) -> str:
        """Run a tmux command against this server; its stdout."""
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", os.devnull, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if proc.returncode != 0:
            pytest.fail(f"tmux {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def start(self, command: str, cwd: Path, status_file: Path) -> None:
        """Run ``command`` (a shell line) in a new detached session; the pane stays after exit."""
        self.status_file = status_file
        line = f"{command}; echo $? > {shlex.quote(str(status_file))}"
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(COLUMNS),
            "-y",
            str(ROWS),
            "-c",
            str(cwd),
            line,
            ";",
            "set-option",
            "-w",
            "-t",
            "main",
            "remain-on-exit",
            "on",
        )
        self.socket_path = Path(self.tmux("display-message", "-p", "#{socket_path}").strip())

    def capture(self) -> str:
        """The visible screen as text."""
        return self.tmux("capture-pane", "-p", "-t", "main")

    def send(self, *keys: str) -> None:
        """Press keys (tmux key names: ``Right``, ``s``, ``]`` ...)."""
        self.tmux("send-keys", "-t", "main", *keys)

    def exit_status(self) -> str | None:
        """The command's exit status once it has ended, else None."""
        assert self.status_file is not None
        if not self.status_file.exists():
            return None
        return self.status_file.read_text().strip() or None

    def wait_for(
        self,
        what: str,
        found: Callable[[str], T | None],
        timeout: float = KEY_TIMEOUT,
        stable: bool = False,
    ) -> T:
        """Poll the screen until ``found(screen)`` returns something; return it.

        Args:
            what: What is awaited, for the failure message.
            found: Returns a value when the screen shows what is awaited, else None.
            timeout: Longest wait [s].
            stable: Also require the same value on two captures in a row, so that a frame
                tmux has only half received is never read.

        Raises:
            pytest.fail.Exception: Timeout, or the command ended first; the message holds the
                last screen.
        """
        deadline = time.monotonic() + timeout
        previous: T | None = None
        screen = ""
        while True:
            screen = self.capture()
            value = found(screen)
            if value is not None and (not stable or value == previous):
                return value
            previous = value
            status = self.exit_status()
            if status is not None:
                pytest.fail(f"fabricui ended (status {status}) waiting for {what}:\n{screen}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"timed out after {timeout:.0f} s waiting for {what}; screen:\n{screen}"
                )
            time.sleep(0.1)

    def wait_for_text(self, text: str, timeout: float = KEY_TIMEOUT) -> str:
        """Poll until ``text`` is on screen; return the screen."""
        return self.wait_for(repr(text), lambda s: s if text in s else None, timeout)

    def close(self) -> None:
        """Stop the server and everything in it (idempotent)."""
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"],
            env=self.env,
            capture_output=True,
            timeout=30,
        )
        if self.socket_path is not None and self.socket_path.name == self.socket:
            self.socket_path.unlink(missing_ok=True)


@dataclass(frozen=True)
class SshServer:
    """An sshd on 127.0.0.1 that lets the current user in with a throwaway key."""

    port: int
    key: Path
    user: str

    def command(self, remote: str) -> list[str]:
        """``ssh -tt`` running the shell line ``remote`` on the server."""
        return [
            "ssh",
            "-tt",
            "-F",
            os.devnull,
            "-e",
            "none",
            "-p",
            str(self.port),
            "-i",
            str(self.key),
            "-l",
            self.user,
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=30",
            "127.0.0.1",
            remote,
        ]


def free_port() -> int:
    """A TCP port nobody listens on at the moment."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_sshd() -> str | None:
    """The sshd binary (Debian puts it in /usr/sbin, which users' PATH may lack)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/sbin"])
    return shutil.which("sshd", path=path)


@pytest.fixture(scope="module")
def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """An sshd on loopback with its own host key, user key and config; skips when impossible."""
    sshd = find_sshd()
    if sshd is None:
        pytest.skip("sshd is not installed (Debian: apt-get install openssh-server)")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
        # sshd running as root insists on its privilege-separation directory, which the
        # system service normally creates at boot.
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        except OSError as exc:
            pytest.skip(f"sshd cannot start: cannot create /run/sshd ({exc})")
    import pwd  # POSIX only, like sshd itself

    base = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "user_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)],
            check=True,
            capture_output=True,
            timeout=30,
        )
    (base / "authorized_keys").write_text((base / "user_key.pub").read_text())
    port = free_port()
    config = base / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\n"
        f"Port {port}\n"
        f"HostKey {base / 'host_key'}\n"
        f"AuthorizedKeysFile {base / 'authorized_keys'}\n"
        f"PidFile {base / 'sshd.pid'}\n"
        "StrictModes no\n"
        "UsePAM no\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
    )
    log_path = base / "sshd.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        server = SshServer(port, base / "user_key", pwd.getpwuid(os.getuid()).pw_name)
        deadline = time.monotonic() + 30
        while "Server listening" not in log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"sshd did not start: {log_path.read_text().strip()}")
            time.sleep(0.05)
        check = subprocess.run(
            server.command("true"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check.returncode != 0:
            pytest.skip(
                f"cannot log in over ssh to 127.0.0.1:{port}: {check.stderr.strip()}\n"
                f"sshd: {log_path.read_text().strip()}"
            )
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def cli_path(venv: InstalledVenv, src: str, dst: str) -> dict[str, object]:
    """``fabricui path --json`` of the installed CLI for a pair at 1 GiB (the panel's size)."""
    proc = subprocess.run(
        [str(venv.bin("fabricui")), "path", "--src", src, "--dst", dst, "--size", "1G", "--json"],
        cwd=venv.workdir,
        env={**venv.env(), **APP_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def cli_paths(installed_venv: InstalledVenv) -> dict[tuple[str, str], dict[str, object]]:
    """The CLI's reports for the pairs the scenario selects (shared by both transports)."""
    pairs = [("n0.g2", "n0.g5"), ("n0.g2", "n2.g5")]
    return {pair: cli_path(installed_venv, *pair) for pair in pairs}


def check_panel(panel: PanelFigures, report: dict[str, object]) -> None:
    """The screen's figures are the CLI's, to the precision shown (3 significant digits)."""
    assert panel.hops == len(report["hops"])  # type: ignore[arg-type]
    assert panel.bottleneck_GBps == pytest.approx(report["bottleneck_GBps"], rel=5e-3)
    assert panel.latency_us == pytest.approx(report["latency_us"], rel=5e-3)
    assert panel.transfer_us == pytest.approx(report["transfer_us"], rel=5e-3)


@pytest.mark.parametrize("transport", ["local", "ssh"])
def test_explorer_in_a_real_terminal(
    transport: str,
    installed_venv: InstalledVenv,
    cli_paths: dict[tuple[str, str], dict[str, object]],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """Keys pick two GPUs, the panel's bottleneck is the CLI's, views switch, S saves, q quits."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    # A private server even when the tests themselves run inside tmux.
    env = {k: v for k, v in installed_venv.env().items() if not k.startswith("TMUX")}
    env.update(APP_ENV)
    app = shlex.join(
        [
            "env",
            f"HOME={env['HOME']}",
            *(f"{key}={value}" for key, value in APP_ENV.items()),
            *(["TERM=xterm-256color"] if transport == "ssh" else []),
            str(installed_venv.bin("fabricui")),
        ]
    )
    if transport == "ssh":
        server: SshServer = request.getfixturevalue("ssh_server")
        # The remote shell starts in the user's home: move to the test's directory first, so
        # the snapshot lands there.
        command = shlex.join(server.command(f"cd {shlex.quote(str(cwd))} && exec {app}"))
    else:
        command = app
    pane = Pane(transport, env)
    request.addfinalizer(pane.close)
    pane.start(command, cwd, tmp_path / "status")

    # The fabric loads after the first paint; the default pair is routed when it is ready.
    pane.wait_for_text("n0.g0 -> n3.g7", timeout=START_TIMEOUT)

    # Source: two GPUs right of n0.g0. Destination: three further right, same node (NVLink).
    pane.send("Right", "Right", "s")
    pane.wait_for_text("n0.g2 -> n3.g7")
    pane.send("Right", "Right", "Right", "d")
    panel = pane.wait_for(
        "the path n0.g2 -> n0.g5", lambda s: read_panel(s, "n0.g2", "n0.g5"), stable=True
    )
    check_panel(panel, cli_paths[("n0.g2", "n0.g5")])
    assert panel.bottleneck_GBps == 450.0  # NVLink 4, 18 links

    # The same GPU two nodes on: the path leaves through the NIC, whose link is the bottleneck.
    pane.send("]", "]", "d")
    panel = pane.wait_for(
        "the path n0.g2 -> n2.g5", lambda s: read_panel(s, "n0.g2", "n2.g5"), stable=True
    )
    check_panel(panel, cli_paths[("n0.g2", "n2.g5")])
    assert panel.bottleneck_GBps == 50.0  # one 400G NDR port

    def header_shows(title: str) -> Callable[[str], str | None]:
        return lambda s: s if title in s.split("\n", 1)[0] else None

    pane.send("2")
    pane.wait_for("the pyramid view", header_shows("Bandwidth pyramid"))
    pane.send("3")
    table = re.compile(r"^\s*8 B\s+[\d.]+ (ns|us|ms)", re.M)
    pane.wait_for(
        "the collectives view with its table",
        lambda s: s if header_shows("Collectives")(s) and table.search(s) else None,
    )
    pane.send("S")
    pane.wait_for("the save dialog", lambda s: s if "Save the collectives view" in s else None)
    pane.send("Enter")
    svg_path = cwd / "fabricui-collectives-fabric.svg"
    report_path = cwd / "fabricui-collectives.md"

    def saved(_screen: str) -> bool | None:
        # The report is written after the SVG; whole once it ends with a newline.
        done = report_path.exists() and report_path.read_text(encoding="utf-8").endswith("\n")
        return True if done else None

    pane.wait_for(f"{svg_path.name} and {report_path.name} in {cwd}", saved)
    svg = svg_path.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    report = report_path.read_text(encoding="utf-8")
    assert report.startswith("# fabricui: Collectives") and "| 8 B |" in report

    # Back on the topology view, the chosen pair is still there.
    pane.send("1")
    pane.wait_for("the topology view", lambda s: read_panel(s, "n0.g2", "n2.g5"))

    pane.send("q")
    deadline = time.monotonic() + KEY_TIMEOUT
    while pane.exit_status() is None:
        if time.monotonic() > deadline:
            pytest.fail(f"fabricui did not quit on q; screen:\n{pane.capture()}")
        time.sleep(0.1)
    screen = pane.capture()
    assert pane.exit_status() == "0", screen
    assert "Traceback" not in screen
    assert "n0.g2 -> n2.g5" not in screen  # the terminal's own screen is back
