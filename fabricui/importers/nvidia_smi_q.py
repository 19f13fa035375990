"""Parse the NVLink fabric of ``nvidia-smi -q``: each GPU's ``Fabric`` section.

On NVSwitch systems the driver registers every GPU with the NVLink fabric manager; on
multi-node NVLink systems (GB200/GB300 NVL72 trays) it adds the domain the GPU joined:
``ClusterUUID`` (the NVLink domain, one rack) and ``CliqueId`` (the partition within it).
GPUs that share both are one NVLink domain and become one block, as Slurm's
``topology/block`` groups their nodes.

Only registered, successful, non-zero memberships are grouped; every other state is a
warning and groups nothing: ``In Progress`` (registration not finished), a ``Status`` other
than ``Success`` (``Insufficient Resources``), an all-zero ``ClusterUUID``, a ``Health``
summary that is not ``Healthy`` or a ``Bandwidth`` that is not ``Full``. Whole ``-q`` logs and
``grep -C3`` excerpts of them are read; other sections are ignored.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.fabric_graph import listing
from fabricui.importers.port_health import HealthItem, PortHealth

FORMAT = "nvidia-smi-q"
EXPECTED = "`nvidia-smi -q` output with Fabric sections"

#: Largest input read [characters] (a 72-GPU ``-q`` log is ~2 MB).
MAX_INPUT_CHARS = 64 * 2**20
_GPU = re.compile(r"^GPU[ \t]+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])[ \t]*$")
_ZERO_UUID = re.compile(r"^0{8}-0{4}-0{4}-0{4}-0{12}$")


@dataclass
class GpuFabric:
    """One GPU's fabric registration."""

    bus_id: str
    """PCI bus id from the ``GPU 00000000:53:00.0`` header (``?`` in a headerless excerpt)."""
    product: str | None = None
    """``Product Name``."""
    state: str | None = None
    """``Completed``, ``In Progress``, ``Not Started``, ``Not Supported``."""
    status: str | None = None
    """``Success`` or the failure (``Insufficient Resources``); N/A while in progress."""
    clique_id: str | None = None
    """``CliqueId`` (partition of the NVLink domain)."""
    cluster_uuid: str | None = None
    """``ClusterUUID`` (the NVLink domain)."""
    health: dict[str, str] = field(default_factory=dict)
    """``Health`` fields (``Summary``, ``Bandwidth``, ...)."""
    pcie: dict[str, int] = field(default_factory=dict)
    """PCIe counters of ``GPU Link Info`` (``Replays Since Reset``, ``Replay Number
    Rollovers``)."""
    pcie_link: str | None = None
    """``Gen5 x16``: the PCIe link the GPU trained at (current generation and width)."""

    def ok(self) -> bool:
        """Registered (``Completed``/``Success``), healthy and at full bandwidth."""
        return (
            self.state == "Completed"
            and self.status == "Success"
            and self.health.get("Summary") in (None, "Healthy", "N/A")
            and self.health.get("Bandwidth") in (None, "Full", "N/A")
        )

    def domain(self) -> str | None:
        """``<ClusterUUID>/<CliqueId>`` when the GPU is a healthy-enough member, else None."""
        if self.state != "Completed" or self.status != "Success":
            return None
        uuid, clique = self.cluster_uuid, self.clique_id
        if not uuid or uuid == "N/A" or _ZERO_UUID.match(uuid) or clique in (None, "N/A"):
            return None
        return f"{uuid}/{clique}"

    def to_json(self) -> dict[str, Any]:
        """The fields (empty ones dropped)."""
        return {k: v for k, v in self.__dict__.items() if v not in (None, {}, "")}


@dataclass
class NvlinkFabric:
    """The Fabric sections of one node's ``nvidia-smi -q``."""

    gpus: list[GpuFabric]
    """GPUs in the log's order."""
    driver: str | None = None
    """``Driver Version``."""
    warnings: list[str] = field(default_factory=list)
    """States that keep GPUs out of an NVLink domain, and gaps."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    format: str = FORMAT
    """Importer name."""

    def domains(self) -> dict[str, list[str]]:
        """``ClusterUUID/CliqueId`` -> bus ids of its member GPUs."""
        out: dict[str, list[str]] = {}
        for gpu in self.gpus:
            domain = gpu.domain()
            if domain is not None:
                out.setdefault(domain, []).append(gpu.bus_id)
        return out

    def port_health(self) -> list[PortHealth]:
        """Each GPU's PCIe link with its replay counters, in the state importers' shape."""
        out = []
        for i, gpu in enumerate(self.gpus):
            if not gpu.pcie and gpu.pcie_link is None:
                continue
            port = PortHealth(f"GPU {i} ({gpu.bus_id})", "PCIe", "up", counters=dict(gpu.pcie))
            port.detail = gpu.pcie_link
            out.append(port)
        return out

    def health_items(self) -> list[HealthItem]:
        """Each GPU's NVLink fabric registration and health."""
        out = []
        for i, gpu in enumerate(self.gpus):
            if gpu.state is None:
                continue
            status = f"{gpu.state}/{gpu.status or '?'}"
            details = [f"{k} {v}" for k, v in gpu.health.items()]
            if gpu.clique_id is not None:
                details.append(f"CliqueId {gpu.clique_id}")
            if gpu.cluster_uuid is not None:
                details.append(f"ClusterUUID {gpu.cluster_uuid}")
            name = f"GPU {i} ({gpu.bus_id})" if gpu.bus_id != "?" else f"GPU ? (section {i + 1})"
            out.append(HealthItem(name, status, ", ".join(details), ok=gpu.ok()))
        return out

    def to_json(self) -> dict[str, Any]:
        """format, switches (none), nodes (this node's GPUs), links (none), blocks (NVLink
        domains); ports (PCIe links) and health (fabric registrations) in the state
        importers' shape; warnings."""
        return {
            "format": self.format,
            "switches": [],
            "nodes": [{"driver": self.driver, "gpus": [g.to_json() for g in self.gpus]}],
            "links": [],
            "blocks": [{"name": name, "gpus": gpus} for name, gpus in self.domains().items()],
            "ports": [p.to_json() for p in self.port_health()],
            "health": [h.to_json() for h in self.health_items()],
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """One line per state, then the domains."""
        states = Counter(f"{g.state or '?'}/{g.status or '?'}" for g in self.gpus)
        lines = [
            f"nvidia-smi -q: {len(self.gpus)} GPUs"
            + (f", driver {self.driver}" if self.driver else "")
            + "; fabric "
            + ", ".join(f"{s} x{n}" for s, n in states.most_common())
        ]
        domains = self.domains()
        for name, gpus in domains.items():
            lines.append(f"  NVLink domain {name}: {len(gpus)} GPUs")
        if not domains:
            lines.append("  no multi-node NVLink domain (no ClusterUUID/CliqueId membership)")
        for item in self.health_items():
            if not item.ok:
                lines.append(
                    f"  {item.device}: {item.status}" + (f", {item.detail}" if item.detail else "")
                )
        replays = [p for p in self.port_health() if p.counters.get("Replays Since Reset")]
        if replays:
            lines.append(
                "  PCIe replays since reset: "
                + ", ".join(
                    f"{p.device.split(' (')[0]} {p.counters['Replays Since Reset']}"
                    for p in replays
                )
            )
        return "\n".join(lines)


#: PCIe counters of ``GPU Link Info`` kept per GPU.
_PCIE_COUNTERS = ("Replays Since Reset", "Replay Number Rollovers")
#: Sub-sections whose ``Current`` row is the trained PCIe link.
_PCIE_LINK = ("PCIe Generation", "Link Width")


def _pcie_link(gpu: GpuFabric, subsection: str, value: str) -> None:
    """Fold a ``Current`` generation or width into ``gpu.pcie_link`` (``Gen5 x16``)."""
    gen, _, width = (gpu.pcie_link or " ").partition(" ")
    if subsection == "PCIe Generation" and value.isdigit():
        gen = f"Gen{value}"
    elif subsection == "Link Width":
        width = "x" + value.lower().rstrip("x")
    gpu.pcie_link = f"{gen} {width}".strip()


def _field(line: str) -> tuple[str, str] | None:
    """``Key : value`` split at the first colon; None when the line has none."""
    key, colon, value = line.partition(":")
    if not colon:
        return None
    return key.strip(), value.strip()


def parse(text: str) -> NvlinkFabric:
    """Parse the Fabric sections of ``nvidia-smi -q`` (whole logs or excerpts).

    Args:
        text: The output as pasted.

    Returns:
        Each GPU's registration, with a warning for every GPU kept out of a domain.

    Raises:
        ParseError: Too large, or no Fabric section and no GPU in the text.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any nvidia-smi -q log")
    text = clean_text(text)
    gpus: list[GpuFabric] = []
    driver = None
    gpu: GpuFabric | None = None
    fabric_indent: int | None = None
    health_indent: int | None = None
    sections = 0
    subsection = ""
    for raw in text.split("\n"):
        line = raw.expandtabs(4).rstrip()
        body = line.strip()
        if not body or body == "--" or len(body) > 400:
            continue
        indent = len(line) - len(line.lstrip())
        header = _GPU.match(body)
        if header and indent == 0:
            gpu = GpuFabric(header.group(1))
            gpus.append(gpu)
            fabric_indent = health_indent = None
            continue
        if fabric_indent is not None and indent <= fabric_indent:
            fabric_indent = health_indent = None
        if body == "Fabric":
            # No GPU header yet, or a second Fabric section for it: an excerpt's GPU.
            if gpu is None or gpu.state is not None:
                gpu = GpuFabric("?")
                gpus.append(gpu)
            fabric_indent, health_indent = indent, None
            sections += 1
            continue
        pair = _field(body)
        if fabric_indent is None:
            if pair is None or not pair[1]:
                subsection = body.rstrip(":").strip()
            elif pair[0] == "Driver Version":
                driver = pair[1]
            elif pair[0] == "Product Name" and gpu is not None:
                gpu.product = pair[1]
            elif gpu is not None and pair[0] in _PCIE_COUNTERS and pair[1].isdigit():
                gpu.pcie[pair[0]] = int(pair[1][:20])
            elif gpu is not None and pair[0] == "Current" and subsection in _PCIE_LINK:
                _pcie_link(gpu, subsection, pair[1])
            continue
        assert gpu is not None
        if body == "Health":
            health_indent = indent
            continue
        if pair is None:
            continue
        key, value = pair
        if health_indent is not None and indent > health_indent:
            gpu.health[key] = value
            continue
        health_indent = None
        if key == "State":
            gpu.state = value
        elif key == "Status":
            gpu.status = value
        elif key == "CliqueId":
            gpu.clique_id = value
        elif key == "ClusterUUID":
            gpu.cluster_uuid = value
    if not sections:
        if gpus:
            raise ParseError(
                f"{len(gpus)} GPU(s) but no Fabric section: the driver predates fabric "
                "reporting, the GPUs have no NVSwitch, or the Fabric lines were cut"
            )
        raise wrong_format(text, EXPECTED, FORMAT)
    return NvlinkFabric(gpus=gpus, driver=driver, warnings=_warnings(gpus, driver))


def _warnings(gpus: list[GpuFabric], driver: str | None) -> list[str]:
    """Why GPUs are not grouped, one line per kind of reason."""
    out: list[str] = []

    def named(group: list[GpuFabric]) -> str:
        return listing([g.bus_id for g in group])

    headerless = [g for g in gpus if g.bus_id == "?"]
    if headerless:
        out.append(
            f"{len(headerless)} Fabric section(s) without their GPU header (an excerpt): "
            "which GPU each belongs to is unknown"
        )
    no_section = [g for g in gpus if g.state is None]
    if no_section:
        out.append(f"{len(no_section)} GPU(s) have no Fabric section: {named(no_section)}")
    pending = [g for g in gpus if g.state not in (None, "Completed")]
    if pending:
        states = Counter(g.state for g in pending)
        out.append(
            f"{len(pending)} GPU(s) have not finished fabric registration ("
            + ", ".join(f"State {s!r}" for s in states)
            + f"): no NVLink domain yet: {named(pending)}"
        )
    failed = [g for g in gpus if g.state == "Completed" and g.status not in ("Success", None)]
    if failed:
        statuses = Counter(g.status for g in failed)
        out.append(
            f"{len(failed)} GPU(s) completed registration with "
            + ", ".join(f"Status {s!r}" for s in statuses)
            + f" (not Success): not grouped into an NVLink domain: {named(failed)}"
        )
    zero = [g for g in gpus if g.cluster_uuid and _ZERO_UUID.match(g.cluster_uuid)]
    if zero:
        out.append(
            f"{len(zero)} GPU(s) report an all-zero ClusterUUID (no multi-node NVLink domain): "
            f"not grouped: {named(zero)}"
        )
    old = [g for g in gpus if g.state == "Completed" and g.cluster_uuid is None]
    if old:
        out.append(
            f"{len(old)} GPU(s) report fabric State Completed without ClusterUUID/CliqueId "
            f"(driver {driver or '?'} does not print them, or a single-node NVSwitch fabric): "
            "no multi-node NVLink domain"
        )
    unhealthy = [g for g in gpus if g.health.get("Summary") not in (None, "Healthy", "N/A")]
    if unhealthy:
        summaries = Counter(g.health["Summary"] for g in unhealthy)
        out.append(
            f"{len(unhealthy)} GPU(s) report fabric health "
            + ", ".join(repr(s) for s in summaries)
            + f": {named(unhealthy)}"
        )
    slow = [g for g in gpus if g.health.get("Bandwidth") not in (None, "Full", "N/A")]
    if slow:
        out.append(
            f"{len(slow)} GPU(s) report NVLink bandwidth "
            + ", ".join(repr(s) for s in Counter(g.health["Bandwidth"] for g in slow))
            + f" (not Full): {named(slow)}"
        )
    return out
