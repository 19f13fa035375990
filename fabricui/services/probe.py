"""``fabricui probe``: collect what this node can say about its GPUs and network, for a spec and
a support ticket.

Each tool that is installed runs once, as the calling user (never through sudo), with a
timeout and no input: ``nvidia-smi topo -m``, ``nvidia-smi -q``, ``ibstat``, ``ibv_devinfo -v``,
``rocm-smi --showtopo``, ``lspci -tv`` and, when allowed (it may need access to the fabric's
management port), ``ibnetdiscover``. Raw outputs go to a folder as they were printed, with a
``probe.json`` listing what ran, what failed, what was missing and what each importer read.
When a GPU matrix was read, the node becomes ``node.yaml`` through the same importer and spec
mapping as ``fabricui import nvidia-smi -o`` (with the network ``ibstat`` suggests). A missing
tool is a line in the report, never a failure.

Nothing is overwritten: an existing non-empty folder needs ``force``; files are written
atomically (``fabricui.files``). With ``force`` the files an earlier probe wrote there and
this one does not are removed (and listed), so that no stale output passes for a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricui.errors import ConfigError, FabricError, exception_line
from fabricui.files import write_text
from fabricui.importers import ibstat, nvidia_smi, rocm_smi
from fabricui.importers.builtin import builtin_importers
from fabricui.importers.common import ParseError
from fabricui.importers.reading import decode_output
from fabricui.importers.spec import build_spec, parse_net, render_yaml
from fabricui.services import admission
from fabricui.services.probe_folder import NODE_SPEC as NODE_SPEC
from fabricui.services.probe_folder import OUTPUT_NAMES as OUTPUT_NAMES
from fabricui.services.probe_folder import TOOLS as TOOLS
from fabricui.services.probe_folder import Tool as Tool
from fabricui.services.probe_folder import listed_outputs, read_report

#: Seconds each tool may run before it is stopped.
DEFAULT_TIMEOUT_S = 30.0
#: Most bytes of one tool's output kept (a large fabric's ibnetdiscover is tens of MB).
MAX_OUTPUT_BYTES = 64 * 2**20
#: Memory an importer takes to read a tool's output, per byte and per line of it (the
#: estimate is the lesser) [bytes]. Measured 2026-11-27 with tracemalloc over every probe
#: importer on lines of one character (up to 76 per byte, ibnetdiscover), 59-character
#: lines of tool words (up to 1.8 KB per line, nvidia-smi) and one 4 MB line (2.4 KB).
PARSE_BYTES_PER_BYTE = 80
PARSE_BYTES_PER_LINE = 2500
#: Bytes read from a tool's pipe at a time.
READ_CHUNK_BYTES = 1 << 16
#: Seconds a timed-out tool's process group has between SIGTERM and SIGKILL.
STOP_GRACE_S = 2.0


@dataclass
class ToolRun:
    """What happened to one tool."""

    tool: str
    """The command line, as text."""
    status: str
    """``ok``, ``missing`` (not installed), ``skipped`` (not allowed), ``failed`` (non-zero
    exit), ``unreadable`` (exit 0, but what it printed is binary, not text, or not what its
    importer reads), ``timeout`` or ``error`` (could not start)."""
    seconds: float = 0.0
    """Run time [s]."""
    exit_code: int | None = None
    """Exit status when it ran."""
    files: list[str] = field(default_factory=list)
    """Files written (raw stdout, stderr)."""
    detail: str = ""
    """One line: the error, or what the importer read."""
    warnings: list[str] = field(default_factory=list)
    """The importer's warnings on this output."""

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict."""
        return dict(self.__dict__)


@dataclass
class ProbeReport:
    """The whole probe: every tool's run and the node spec, if one was written."""

    host: str
    """This machine's host name."""
    folder: str
    """Where the files went."""
    runs: list[ToolRun]
    """One entry per tool, in ``TOOLS`` order."""
    node_spec: str | None = None
    """The node spec file written, or None."""
    node_spec_note: str = ""
    """Why no node spec was written, or its one-line summary."""
    removed: list[str] = field(default_factory=list)
    """Files an earlier probe wrote in the folder that this one did not write again,
    removed so that they are not taken for this probe's (``--force``)."""
    left: list[str] = field(default_factory=list)
    """Such files that could not be removed, each with the reason."""

    @property
    def missing(self) -> list[str]:
        """Programs that are not installed."""
        return list(dict.fromkeys(r.tool.split()[0] for r in self.runs if r.status == "missing"))

    def to_json(self) -> dict[str, Any]:
        """host, folder, runs, missing, node_spec."""
        return {
            "host": self.host,
            "folder": self.folder,
            "runs": [r.to_json() for r in self.runs],
            "missing": self.missing,
            "node_spec": self.node_spec,
            "node_spec_note": self.node_spec_note,
            "removed": self.removed,
            "left": self.left,
        }

    def summary(self) -> str:
        """One line per tool, then the node spec and the missing tools."""
        lines = [f"probe of {self.host}: raw outputs in {self.folder}/"]
        for run in self.runs:
            extra = f" ({run.detail})" if run.detail else ""
            lines.append(f"  {run.status:<10} {run.tool}{extra}")
        if self.node_spec:
            lines.append(f"node spec: {self.node_spec} ({self.node_spec_note})")
        else:
            lines.append(f"node spec: not written ({self.node_spec_note})")
        if self.missing:
            lines.append(f"missing tools: {', '.join(self.missing)}")
        if self.removed:
            removed = ", ".join(self.removed)
            lines.append(f"removed (an earlier probe's, not written by this one): {removed}")
        if self.left:
            lines.append(f"an earlier probe's, could not be removed: {', '.join(self.left)}")
        return "\n".join(lines)


def _prepare(folder: Path, force: bool) -> None:
    """Create ``folder``, or accept an existing one when empty or ``force``.

    Raises:
        ConfigError: It is a file, its parent is missing, or it holds files (without force).
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise ConfigError(f"{folder}: already exists and is not empty; pass --force to reuse it")
    if not folder.parent.is_dir():
        raise ConfigError(f"{folder}: no such directory {folder.parent}")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot create ({exc.strerror or exc})") from None


@dataclass
class _Captured:
    """What a tool printed on one stream, kept up to a limit while it is read."""

    data: bytearray = field(default_factory=bytearray)
    """The first ``limit`` bytes."""
    total: int = 0
    """Bytes it printed in all (the rest was read and dropped)."""

    def add(self, chunk: bytes, limit: int) -> None:
        self.total += len(chunk)
        room = limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]


def _release(captured: _Captured) -> bytes:
    """The captured bytes, the buffer emptied as they are copied out (one copy alive)."""
    data = bytes(captured.data)
    captured.data = bytearray()
    return data


def _run(
    tool: Tool, exe: str, timeout_s: float, env: dict[str, str]
) -> tuple[ToolRun, bytes, bytes, bool]:
    """Run one tool; (its record, stdout and stderr as far as kept, whether either was
    cut at ``MAX_OUTPUT_BYTES``).

    Output is read as it comes and kept up to the limit: a tool that floods its output
    costs this process no more than the limit. The tool runs in a process group of its
    own, and at the timeout the whole group is stopped (SIGTERM, then SIGKILL for what
    ignores it), so nothing it started is left behind.
    """
    text = " ".join(tool.argv)
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            [exe, *tool.argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return ToolRun(text, "error", detail=exc.strerror or str(exc)), b"", b"", False
    captured = {process.stdout: _Captured(), process.stderr: _Captured()}
    deadline = time.monotonic() + timeout_s
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for stream in captured:
            assert stream is not None
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in selector.select(min(left, 0.5)):
                chunk = os.read(key.fd, READ_CHUNK_BYTES)
                if chunk:
                    captured[key.fileobj].add(chunk, MAX_OUTPUT_BYTES)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
    if timed_out or process.poll() is None:
        timed_out = timed_out or not _wait(process, max(0.0, deadline - time.monotonic()))
        if timed_out:
            _stop_group(process)
    else:
        process.wait()
    for stream in captured:
        assert stream is not None
        stream.close()
    out, err = (_release(c) for c in captured.values())
    cut = any(c.total > MAX_OUTPUT_BYTES for c in captured.values())
    if timed_out:
        run = ToolRun(text, "timeout", round(time.perf_counter() - start, 3))
        run.detail = f"stopped after {timeout_s:g} s"
        return run, out, err, cut
    run = ToolRun(text, "ok", round(time.perf_counter() - start, 3), process.returncode)
    if process.returncode != 0:
        run.status = "failed"
        first = next((ln for ln in err.decode("utf-8", "replace").splitlines() if ln), "")
        run.detail = f"exit {process.returncode}" + (f": {first.strip()[:160]}" if first else "")
    return run, out, err, cut


def _wait(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``process`` exits within ``seconds``."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the tool's process group, then SIGKILL what is left of it after
    ``STOP_GRACE_S`` (a tool, or a child of it, that ignores SIGTERM)."""
    if not hasattr(os, "killpg"):  # Windows: no process groups to signal
        process.kill()
        process.wait()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    if _wait(process, STOP_GRACE_S) and not _group_alive(process.pid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is left."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def probe(
    folder: Path,
    *,
    force: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    allow_ibnetdiscover: bool = False,
    path: str | None = None,
    extra_hwdb: tuple[Path, ...] = (),
) -> ProbeReport:
    """Run the tools present on this node, save their outputs, write a node spec if possible.

    Args:
        folder: Output folder (created; an existing non-empty one needs ``force``).
        force: Reuse a non-empty folder, replacing files of the same names and removing
            those an earlier probe wrote that this one does not (``report.removed``).
        timeout_s: Seconds each tool may run.
        allow_ibnetdiscover: Also run ``ibnetdiscover`` (it queries the whole fabric).
        path: The PATH to look tools up on (default: the environment's).
        extra_hwdb: Further hardware-database folders (``--hwdb``) for the node spec.

    Returns:
        The report (also written as ``probe.json`` in ``folder``).

    Raises:
        ConfigError: The folder cannot be used, or ``timeout_s`` is not positive.
    """
    if not timeout_s > 0:
        raise ConfigError(f"--timeout must be a positive number of seconds (got {timeout_s})")
    _prepare(folder, force)
    earlier = _earlier_files(folder) if force else set()
    search = path if path is not None else os.environ.get("PATH", os.defpath)
    env = dict(os.environ, PATH=search, LC_ALL="C")
    runs: list[ToolRun] = []
    outputs: dict[str, str] = {}
    for tool in TOOLS:
        exe = shutil.which(tool.argv[0], path=search)
        text = " ".join(tool.argv)
        if exe is None:
            runs.append(ToolRun(text, "missing", detail="not on PATH"))
            continue
        if tool.needs_allow and not allow_ibnetdiscover:
            runs.append(ToolRun(text, "skipped", detail="pass --ibnetdiscover to run it"))
            continue
        run, out, err, cut = _run(tool, exe, timeout_s, env)
        for data, suffix in ((out, ".txt"), (err, ".stderr.txt")):
            if data:  # saved byte for byte: no decoded copy of a flood is held to write it
                name = f"{tool.name}{suffix}"
                write_text(folder / name, data, force=force)
                run.files.append(name)
        if cut:
            run.warnings.append(f"output cut at {MAX_OUTPUT_BYTES // 2**20} MiB")
        if run.status == "ok":
            refusal = _parse_refusal(out)
            if refusal is not None:
                if tool.importer is not None:
                    run.detail = refusal
            else:
                printed = _text(tool, out, cut, run)
                if printed is not None and tool.importer is not None:
                    outputs[tool.name] = printed
                    _read(tool, printed, run)
        runs.append(run)
    report = ProbeReport(host=socket.gethostname(), folder=str(folder), runs=runs)
    _node_spec(report, outputs, folder, force, extra_hwdb)
    if force:
        written = {name for run in runs for name in run.files} | {"probe.json"}
        if report.node_spec:
            written.add(NODE_SPEC)
        _remove_stale(folder, earlier, written, report)
    write_text(folder / "probe.json", json.dumps(report.to_json(), indent=2) + "\n", force=force)
    return report


def _text(tool: Tool, data: bytes, cut: bool, run: ToolRun) -> str | None:
    """What a tool printed as text, or None (``run`` marked ``unreadable``) when it is
    binary or not text: garbage is not reported as a run that went well."""
    if cut:  # the cut may split the last character: drop what there is of it
        for back in range(1, min(4, len(data))):
            if data[-back] < 0x80:
                break
            if data[-back] >= 0xC0:
                data = data[:-back]
                break
    try:
        return decode_output(data, f"{tool.name}.txt")
    except ParseError as exc:
        run.status = "unreadable"
        run.detail = f"not read: {exc.message} ({admission.format_size(len(data))})"
        return None


def _earlier_files(folder: Path) -> set[str]:
    """Names of the files an earlier probe wrote in ``folder``: every name probe writes,
    and the raw outputs its ``probe.json`` lists (a version with other tools); never a
    path out of the folder or a file of another kind."""
    report = read_report(folder)
    return set(OUTPUT_NAMES) | (listed_outputs(report) if report is not None else set())


def _remove_stale(folder: Path, earlier: set[str], written: set[str], report: ProbeReport) -> None:
    """Remove the regular files of ``earlier`` that this probe did not write, so that an
    earlier probe's results are not read as this one's; record what was removed or left."""
    for name in sorted(earlier - written):
        path = folder / name
        try:
            if not stat.S_ISREG(path.lstat().st_mode):  # a link or folder is not probe's
                continue
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            report.left.append(f"{name} ({exc.strerror or exc})")
            continue
        report.removed.append(name)


def parse_memory_bytes(data: bytes) -> int:
    """Estimated memory of reading a tool's output with its importer [bytes]: the most
    any importer takes per byte or per line of it, whichever is less."""
    lines = data.count(b"\n") + 1
    return min(PARSE_BYTES_PER_BYTE * len(data), PARSE_BYTES_PER_LINE * lines) + 2 * len(data)


def _parse_refusal(data: bytes) -> str | None:
    """Why a tool's output is not read (its parse would not fit the memory budget), or
    None. The raw output is saved either way."""
    estimate = admission.resident_bytes() + parse_memory_bytes(data)
    budget = admission.memory_budget()
    if estimate <= budget:
        return None
    return (
        f"not read: {admission.format_size(len(data))} of output, about "
        f"{admission.format_size(estimate)} to read (limit {admission.format_size(budget)}, "
        f"--max-memory or {admission.ENV_MAX_MEMORY})"
    )


def _read(tool: Tool, text: str, run: ToolRun) -> None:
    """Parse a tool's output with its importer; record a one-line result (``unreadable``
    when the importer finds none of its tool's output in it)."""
    assert tool.importer is not None
    try:
        result = builtin_importers()[tool.importer](text)
    except FabricError as exc:
        run.status = "unreadable"  # it exited 0, but printed nothing its importer knows
        run.detail = f"not read: {exc.message[:200]}"
        return
    run.warnings = [*run.warnings, *list(getattr(result, "warnings", []))]
    summary = result.summary().splitlines()[0]
    run.detail = summary[:200]


def _node_spec(
    report: ProbeReport,
    outputs: dict[str, str],
    folder: Path,
    force: bool,
    extra_hwdb: tuple[Path, ...],
) -> None:
    """Write ``node.yaml`` from the GPU matrix (nvidia-smi or rocm-smi) and ibstat's network."""
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import parse_yaml
    from fabricui.services.session import load_catalog_with_plugins

    matrix = None
    for name, parser in (
        ("nvidia-smi-topo-m", nvidia_smi.parse),
        ("rocm-smi-showtopo", rocm_smi.parse),
    ):
        if name in outputs:
            try:
                matrix = parser(outputs[name])
                break
            except FabricError:
                continue
    if matrix is None:
        report.node_spec_note = "no GPU matrix read (nvidia-smi topo -m or rocm-smi --showtopo)"
        return
    net = None
    for name in ("ibstat", "ibv_devinfo"):
        if name in outputs:
            try:
                net = ibstat.parse(outputs[name]).suggested_net()
            except FabricError:
                net = None
            if net:
                break
    try:
        catalog = load_catalog_with_plugins(extra_hwdb)
        layout = matrix.layout()
        draft = build_spec(
            layout,
            catalog,
            net=parse_net(net, catalog) if net else None,
            spec_id=f"node-{report.host}".lower(),
            origin=report.host,
            command=f"fabricui probe on {report.host}",
        )
        text = render_yaml(draft, layout.gaps)
        spec = parse_topology(parse_yaml(text, "node.yaml"), catalog)
        build_fabric(spec, catalog)
        write_text(folder / NODE_SPEC, text, force=force)
    except FabricError as exc:
        report.node_spec_note = f"could not build one: {exception_line(exc)[:200]}"
        return
    report.node_spec = str(folder / NODE_SPEC)
    report.node_spec_note = draft.summary()
