"""Parse the NVLink state and counter listings of ``nvidia-smi nvlink`` and ``dcgmi nvlink``.

``nvidia-smi nvlink`` prints a ``GPU N: <name> (UUID: ...)`` header per GPU, then one
``Link L: ...`` line per link and item:

* ``-s`` / ``--status``: ``Link 3: 26.562 GB/s`` (older drivers ``25 GB/s``), or
  ``Link 3: <inactive>`` for a link that is down;
* ``-R`` / ``--remote``: ``Link 4: Remote Device 00000000:D5:00.0: Link 6``;
* ``-gt d|r`` (throughput) and ``-e`` (error counters): ``Link 0: Data Tx: 5863784 KiB``,
  ``Link 0: Replay Errors: 0``, ``Link 0: CRC Errors: 0`` - counters by their printed names;
* ``-c`` (capabilities) is not state and is skipped.

``dcgmi nvlink -s`` prints one row of ``U``/``D``/``X``/``_`` per GPU (``gpuId 0:``) and per
NVSwitch (``physicalId 3:``); ``dcgmi nvlink -e -g N`` a box of ``Link L`` rows with ``CRC
FLIT Error: 0`` style counters. Every link becomes a port of its GPU (``GPU 0`` link 3); the
GPU's link count is the number of links listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.port_health import (
    MAX_LINE_CHARS,
    HealthReport,
    PortHealth,
    health_text,
    number,
    prompt_host,
    strip_quote,
)

FORMAT = "nvlink"
EXPECTED = "`nvidia-smi nvlink` or `dcgmi nvlink` output"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
#: Most links one GPU or switch may list (an NVSwitch has 64 ports; a GPU at most 18).
MAX_LINKS = 128
_GPU = re.compile(r"^GPU[ \t]+(\d{1,4}):")
_LINK = re.compile(r"^Link[ \t]+(\d{1,3})[ \t]*:")
_RATE = re.compile(r"^([\d.]{1,10})[ \t]*GB/s$", re.IGNORECASE)
_REMOTE = re.compile(
    r"^Remote[ \t]+Device[ \t]+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])"
    r"[ \t]*:[ \t]*Link[ \t]+(\d{1,3})",
    re.IGNORECASE,
)
_COUNT = re.compile(r"^([A-Za-z][A-Za-z .]{0,40}?)[ \t]*:[ \t]*(\d{1,20})(?:[ \t]*(KiB|MiB|B))?$")
_DCGMI_ENTITY = re.compile(r"^(gpuId|physicalId)[ \t]+(\d{1,6})[ \t]*:[ \t]*$")
_DCGMI_ROW = re.compile(r"^(?:[UDX_][ \t]*){1,128}$")
_DCGMI_GPU = re.compile(r"\bGPU(?:[ \t]+ID)?:?[ \t]+(\d{1,4})\b")
_DCGMI_LINK = re.compile(r"\|[ \t]*Link[ \t]+(\d{1,3})[ \t]*\|")
_DCGMI_COUNTER = re.compile(
    r"([A-Za-z][A-Za-z ]{1,40}?(?:Error|Errors|BER))[ \t]*:[ \t]*(\d{1,20})"
)
_CAPABILITY = re.compile(r"^(?:P2P|System Memory|P2P Atomics|SLI|Link Supported|.*is supported)")
_DCGMI_CODES = {"U": "up", "D": "down", "X": "disabled", "_": "unsupported"}


@dataclass
class _Reader:
    """The ports read so far, and where in the output the reader is."""

    report: HealthReport
    ports: dict[tuple[str, int], PortHealth] = field(default_factory=dict)
    """(device, link) -> its port (also in ``report.ports``, in the order first seen)."""
    kinds: list[str] = field(default_factory=list)
    """The listings seen (``nvidia-smi nvlink -s`` ...), in order."""
    gpu: str | None = None
    """The GPU whose ``Link L:`` lines follow (nvidia-smi)."""
    models: dict[str, str] = field(default_factory=dict)
    """GPU -> its product name, from the ``GPU N:`` headers."""
    dcgmi_entity: str | None = None
    """The GPU or NVSwitch whose ``U D X`` status row follows (dcgmi -s)."""
    dcgmi_gpu: str | None = None
    """The GPU of the dcgmi counter box being read (dcgmi -e)."""
    dcgmi_link: int | None = None
    """The link of the dcgmi counter box row being read."""
    too_many: bool = False
    """A link numbered ``MAX_LINKS`` or more was skipped."""
    elided: bool = False
    """The output was cut with ``...``."""
    repeated: bool = False
    """A counter was listed twice (several runs pasted)."""

    def port_of(self, device: str, link: int) -> PortHealth | None:
        """The port of ``device``'s link, made when first seen; None past ``MAX_LINKS``."""
        key = (device, link)
        found = self.ports.get(key)
        if found is None:
            if link >= MAX_LINKS:
                self.too_many = True
                return None
            found = self.ports[key] = PortHealth(device, link)
            self.report.ports.append(found)
        return found

    def kind(self, name: str) -> None:
        """Note that a listing of kind ``name`` was read."""
        if name not in self.kinds:
            self.kinds.append(name)

    def read(self, line: str) -> None:
        """One stripped line: a GPU or dcgmi entity header, a dcgmi status row or counter
        box line, or an nvidia-smi ``Link L:`` line; anything else is skipped."""
        if line in ("...", "…"):
            self.elided = True
            return
        m = _GPU.match(line)
        if m:
            self.gpu = f"GPU {int(m.group(1))}"
            model = line[m.end() :].split("(UUID:")[0].strip()
            if model:
                self.models[self.gpu] = model[:120]
            self.dcgmi_entity = None
            return
        m = _DCGMI_ENTITY.match(line)
        if m:
            number_ = int(m.group(2))
            self.dcgmi_entity = f"GPU {number_}" if m.group(1) == "gpuId" else f"NVSwitch {number_}"
            return
        if self.dcgmi_entity is not None and _DCGMI_ROW.match(line):
            self.kind("dcgmi nvlink -s")
            for link, code in enumerate(line.split()):
                port = self.port_of(self.dcgmi_entity, link)
                if port is not None:
                    port.state = _DCGMI_CODES.get(code, "unknown")
            self.dcgmi_entity = None
            return
        if line.startswith(("|", "+")):
            self.dcgmi_box_line(line)
            return
        m = _LINK.match(line)
        if m is not None and self.gpu is not None:
            self.link_line(self.gpu, int(m.group(1)), line[m.end() :].strip())

    def dcgmi_box_line(self, line: str) -> None:
        """A line of ``dcgmi nvlink -e``'s box: its GPU, its link, or the link's counters."""
        g = _DCGMI_GPU.search(line)
        if g:
            self.dcgmi_gpu = f"GPU {int(g.group(1))}"
        ln = _DCGMI_LINK.search(line)
        if ln:
            self.dcgmi_link = int(ln.group(1))
        if self.dcgmi_gpu is not None and self.dcgmi_link is not None:
            for name, value in _DCGMI_COUNTER.findall(line):
                self.kind("dcgmi nvlink -e")
                port = self.port_of(self.dcgmi_gpu, self.dcgmi_link)
                if port is not None:
                    port.counters[name.strip()] = int(value)

    def link_line(self, gpu: str, link: int, rest: str) -> None:
        """``Link L: ...`` of nvidia-smi: a rate or a down state (-s), the remote end (-R),
        a counter (-e, -gt); capabilities (-c) are no state and are skipped."""
        if _CAPABILITY.match(rest):
            self.kind("nvidia-smi nvlink -c")
            return
        port = self.port_of(gpu, link)
        if port is None:
            return
        rate = _RATE.match(rest)
        if rate:
            self.kind("nvidia-smi nvlink -s")
            port.state = "up"
            port.rate_gbps = round(float(rate.group(1)) * 8.0, 3)  # GB/s per direction -> Gb/s
            return
        if rest.lower().strip("<>") in ("inactive", "down", "disabled"):
            self.kind("nvidia-smi nvlink -s")
            port.state = "inactive" if "inactive" in rest.lower() else rest.lower().strip("<>")
            return
        remote = _REMOTE.match(rest)
        if remote:
            self.kind("nvidia-smi nvlink -R")
            port.peer, port.peer_port = remote.group(1), int(remote.group(2))
            if port.state == "unknown":
                port.state = "up"
            return
        count = _COUNT.match(rest)
        if count:
            name, value = count.group(1).strip(), number(count.group(2))
            if value is None:
                return
            self.kind(
                "nvidia-smi nvlink -e" if "error" in name.lower() else "nvidia-smi nvlink -gt"
            )
            unit = count.group(3)
            key = name + (f" [{unit}]" if unit else "")
            if key in port.counters:
                self.repeated = True
            port.counters[key] = value


def parse(text: str) -> HealthReport:
    """Parse ``nvidia-smi nvlink -s|-R|-gt|-e`` or ``dcgmi nvlink -s|-e`` output.

    Args:
        text: The output as pasted (several runs together are read one after another).

    Returns:
        One port per GPU link (``GPU 0`` link 3) with its state, rate, remote end and
        counters; NVSwitch links from ``dcgmi`` as ports of ``NVSwitch N``.

    Raises:
        ParseError: Too large, or no ``GPU N:`` with ``Link L:`` lines and no dcgmi status.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any nvlink output")
    text = health_text(clean_text(text))
    lines = [strip_quote(line) for line in text.split("\n")]
    report = HealthReport(format=FORMAT, source="nvidia-smi nvlink", host=prompt_host(lines))
    reader = _Reader(report)
    for raw in lines:
        line = raw.strip()
        if line and len(line) <= MAX_LINE_CHARS:
            reader.read(line)
    if not report.ports:
        raise wrong_format(text, EXPECTED, FORMAT)
    _summarize(reader)
    return report


def _summarize(reader: _Reader) -> None:
    """Complete the report: the listings read, GPU models and link counts, links down, links
    slower than the fastest (degraded), and the gaps in the input."""
    report = reader.report
    if reader.kinds:
        report.source = " + ".join(reader.kinds)
    if reader.models:
        report.extra["gpus"] = dict(reader.models)
    links: dict[str, int] = {}
    for port in report.ports:
        links[port.device] = links.get(port.device, 0) + 1
    report.extra["links_per_gpu"] = links
    down = [p for p in report.ports if p.state in ("inactive", "down", "disabled")]
    if down:
        report.notes.append(f"{len(down)} link(s) not active")
    rates = sorted({p.rate_gbps for p in report.ports if p.rate_gbps})
    if len(rates) > 1:
        top = rates[-1]
        for port in report.ports:
            if port.rate_gbps is not None and port.rate_gbps < top * 0.99:
                port.degraded = True
                # In the unit of ``rate_gbps`` and the summary's rate (Gb/s), not GB/s.
                port.could_be = f"{top:g} Gb/s"
    if reader.elided:
        report.warnings.append(
            "the output was cut ('...'): GPUs or links after the cut are missing"
        )
    if reader.repeated:
        report.notes.append(
            "the same counters are listed more than once (several runs pasted): the last "
            "value of each is kept"
        )
    if reader.too_many:
        report.warnings.append(f"links numbered {MAX_LINKS} or more were skipped")
