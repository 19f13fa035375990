"""Parse NCCL topology XML: ``NCCL_TOPO_FILE`` provider files and ``NCCL_TOPO_DUMP_FILE`` dumps.

Reads ``<system>/<cpu>/<pci>/<gpu>/<nvlink>/<nic>/<net>`` trees with the standard library's
ElementTree (which resolves no external entities; DOCTYPE and ENTITY declarations are refused
outright). Provider files with bare ``<pci busid class/>`` leaves, XML comments before
``<system>``, synthetic bridges (``ffff:ff:01.0``), ``<nic>`` directly under ``<cpu>``, NVLinks
to NVSwitches, to GPUs or to the GPU itself, EFA and dual-port NICs are all read. Fragments
(an excerpt that starts or ends mid-tree) are read tag by tag with the gap stated; a ``diff``
of two dumps is rejected.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import (
    MAX_NODE_GPUS,
    NodeLayout,
    ParseError,
    clean_text,
    cpu_list_from_mask,
    span,
    wrong_format,
)

FORMAT = "nccl-xml"
EXPECTED = "NCCL topology XML"

#: NVIDIA PCI device id -> (catalog GPU id or None, product name).
DEVICE_IDS: dict[str, tuple[str | None, str]] = {
    "0x1db1": ("v100-sxm2", "V100 SXM2"),
    "0x1db5": ("v100-sxm2", "V100 SXM2"),
    "0x1db8": (None, "V100 SXM3"),
    "0x1e07": ("rtx-2080ti", "GeForce RTX 2080 Ti"),
    "0x1eb8": ("t4", "T4"),
    "0x20b0": ("a100-sxm4-40gb", "A100 SXM4 40GB"),
    "0x20b2": ("a100-sxm4-80gb", "A100 SXM4 80GB"),
    "0x20b5": ("a100-pcie-40gb", "A100 PCIe 80GB (catalog part: a100-pcie-40gb)"),
    "0x20f1": ("a100-pcie-40gb", "A100 PCIe 40GB"),
    "0x2236": ("a10", "A10"),
    "0x2237": ("a10", "A10G (catalog part: a10)"),
    "0x2321": (None, "H100 NVL"),
    "0x2324": (None, "H800"),
    "0x2330": ("h100-sxm", "H100 SXM5 80GB"),
    "0x2331": (None, "H100 PCIe"),
    "0x2335": ("h200-sxm", "H200 SXM 141GB"),
    "0x2684": ("rtx-4090", "GeForce RTX 4090"),
    "0x26b9": ("l40s", "L40S"),
    "0x27b8": ("l4", "L4"),
    "0x2901": ("b200", "B200"),
    "0x2b85": ("rtx-5090", "GeForce RTX 5090"),
}
#: CUDA compute capability (``sm``) -> likely catalog GPU, when no device id is given.
SM_GUESS = {70: "v100-sxm2", 80: "a100-sxm4-80gb", 86: "a10", 89: "l40s", 90: "h100-sxm"}
SM_GUESS[100] = "b200"
#: (vendor, family, model) -> CPU generation, for the summary.
CPU_NAMES = {
    ("GenuineIntel", 6, 79): "Intel Broadwell",
    ("GenuineIntel", 6, 85): "Intel Skylake/Cascade Lake",
    ("GenuineIntel", 6, 106): "Intel Ice Lake",
    ("GenuineIntel", 6, 143): "Intel Sapphire Rapids",
    ("GenuineIntel", 6, 207): "Intel Emerald Rapids",
    ("AuthenticAMD", 23, 1): "AMD Naples",
    ("AuthenticAMD", 23, 49): "AMD Rome",
    ("AuthenticAMD", 25, 1): "AMD Milan",
    ("AuthenticAMD", 25, 17): "AMD Genoa",
    ("AuthenticAMD", 25, 160): "AMD Bergamo",
}
NVSWITCH_CLASS = "0x068000"
#: One tag. Comments and processing instructions are blanked out before (see ``_blank``);
#: attribute values stop at ``<`` (XML forbids it there), so an unclosed quote costs one scan
#: to the next tag, not one to the end of the text per tag.
_TAG = re.compile(
    r"<(/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))*)\s*(/?)>"
)
#: Deepest element nesting read: NCCL topologies nest system/cpu/pci.../gpu/nvlink, about ten.
MAX_DEPTH = 64
_ATTR = re.compile(r"([\w:.-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_DIFF = re.compile(r"(?m)^(?:\d+(?:,\d+)?[acd]\d+(?:,\d+)?|@@ -\d+(?:,\d+)? \+\d+.*)\s*$")


def _int(value: str | None) -> int | None:
    """An attribute as an int (``12``, ``0x1f``); None when empty, not a number, or absurdly
    large (a 64-bit range is more than any count or id in a topology)."""
    if value is None or not value.strip() or len(value) > 40:
        return None
    try:
        number = int(value, 0)
    except ValueError:
        return None
    return number if -(2**63) <= number < 2**63 else None


def _gts(speed: str | None) -> float | None:
    """``16.0 GT/s PCIe`` / ``8 GT/s`` / ``32 GT/s PCIe/s`` -> GT/s; None when empty."""
    m = re.match(r"\s*([\d.]+)\s*GT/s", speed or "")
    return float(m.group(1)) if m else None


def amd_family(familyid: int) -> int:
    """The true CPUID family of an AMD ``familyid`` (older NCCL printed 0xF + ext << 4).

    Args:
        familyid: The ``familyid`` attribute (``175`` or ``25`` for the same Zen 3/4 CPU).

    Returns:
        The CPUID family (``25``).
    """
    if familyid > 0x1F and familyid & 0xF == 0xF:
        return 0xF + (familyid >> 4)
    return familyid


def _blank(body: str) -> str:
    """``body`` with every closed comment and processing instruction replaced by blanks
    (newlines kept, so positions and line numbers stay); an unclosed one is left as it is.

    One pass: each opener's next position is searched again only once the scan passed it.
    """
    out: list[str] = []
    pos = 0
    closers = dict(_HIDDEN)
    upcoming = {opener: body.find(opener) for opener in closers}
    while True:
        for opener, at in upcoming.items():
            if 0 <= at < pos:
                upcoming[opener] = body.find(opener, pos)
        found = [(at, opener) for opener, at in upcoming.items() if at >= 0]
        if not found:
            break
        start, opener = min(found)
        end = body.find(closers[opener], start + len(opener))
        if end < 0:
            break
        end += len(closers[opener])
        out += [body[pos:start], re.sub(r"[^\n]", " ", body[start:end])]
        pos = end
    out.append(body[pos:])
    return "".join(out)


#: (opener, closer) of the markup ``_blank`` hides.
_HIDDEN = (("<!--", "-->"), ("<?", "?>"))


def _depth(root: ET.Element) -> int:
    """How deep elements nest under ``root`` (iteratively: no recursion limit)."""
    deepest = 0
    stack = [(root, 0)]
    while stack:
        element, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH:
            stack.extend((child, depth + 1) for child in element)
    return deepest


def _recover(body: str) -> tuple[ET.Element | None, list[str], int | None]:
    """Rebuild a tree from well-formed tags whose nesting is cut off (an excerpt).

    Returns:
        (root holding the top-level elements, remarks, line of the first malformed tag).

    Raises:
        ParseError: Elements nest deeper than ``MAX_DEPTH``.
    """
    body = _blank(body)
    root = ET.Element("fragment")
    stack = [root]
    orphans = 0
    remarks: list[str] = []
    pos = 0
    lines = body.split("\n")
    last_line = len(lines)
    while lines and not lines[-1].strip():
        lines.pop()
        last_line -= 1
    for m in _TAG.finditer(body):
        gap = body[pos : m.start()]
        pos = m.end()
        if "<" in gap:
            line = body.count("\n", 0, m.start() - len(gap) + gap.index("<")) + 1
            return None, remarks, line
        closing, tag, attrs, selfclose = m.groups()
        if tag is None:
            continue
        if closing:
            names = [e.tag for e in stack[1:]]
            if tag in names:
                while stack[-1].tag != tag:
                    stack.pop()
                stack.pop()
            else:
                orphans += 1
            continue
        values = {a: v if v is not None else w for a, v, w in _ATTR.findall(attrs)}
        element = ET.SubElement(stack[-1], tag, values)
        if not selfclose:
            stack.append(element)
            if len(stack) > MAX_DEPTH + 1:
                line = body.count("\n", 0, m.start()) + 1
                raise ParseError(
                    f"elements nested more than {MAX_DEPTH} levels deep at line {line}: "
                    "not an NCCL topology"
                )
    rest = body[pos:]
    if "<" in rest:
        line = body.count("\n", 0, pos + rest.index("<")) + 1
        if line < last_line:
            return None, remarks, line
        remarks.append(f"last line {line} is cut off mid-tag: dropped")
    if orphans:
        remarks.append(
            f"{orphans} closing tags without an opening one (the excerpt starts mid-tree)"
        )
    if len(stack) > 1:
        remarks.append(f"{len(stack) - 1} elements left open (the excerpt ends mid-tree)")
    return root, remarks, None


@dataclass
class _Place:
    cpu: int | None
    """Index of the enclosing ``<cpu>``, None when outside any (a fragment)."""
    chain: tuple[str, ...]
    """Bus ids of the enclosing PCIe bridges/switches, outermost first."""


def _pcie_code(a: _Place, b: _Place) -> str | None:
    """``nvidia-smi``-style path code between two devices, None when unknown."""
    common = 0
    for x, y in zip(a.chain, b.chain):
        if x != y:
            break
        common += 1
    if a.chain and b.chain and a.chain[-1] == b.chain[-1]:
        return "PIX"
    if common:
        return "PXB"
    if a.cpu is None or b.cpu is None:
        return None
    return "PHB" if a.cpu == b.cpu else "SYS"


@dataclass
class NcclTopoXml:
    """A parsed NCCL topology: CPUs (NUMA nodes), GPUs, NICs (one per port), PCIe switches."""

    cpus: list[dict[str, Any]] = field(default_factory=list)
    """One per ``<cpu>``: numaid, arch, vendor, familyid, family, modelid, affinity, cpu_list."""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    """One per GPU: name, busid, dev, rank, sm, gdr, numaid, device, model, pcie, switches,
    nvlink (``{"nvswitch": links, "gpus": {peer: links}}``)."""
    nics: list[dict[str, Any]] = field(default_factory=list)
    """One per ``<net>`` (port), or per bare NIC ``<pci>``: name, busid, port, speed_gbps, ..."""
    pci_switches: list[dict[str, Any]] = field(default_factory=list)
    """PCIe bridges/switches holding devices: busid, numaid, vendor, device, link."""
    unknown_pci: list[dict[str, Any]] = field(default_factory=list)
    """``<pci>`` leaves without a class or child, so neither GPU nor NIC can be told."""
    nvlinks: list[dict[str, Any]] = field(default_factory=list)
    """GPU-to-GPU NVLink bundles: a, b, count."""
    places: dict[str, _Place] = field(default_factory=dict, repr=False)
    warnings: list[str] = field(default_factory=list)
    """Stated gaps (fragment, GPUs not in the file, unresolved NVLink targets, ...)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps (old AMD family encoding, shared-GUID dual-port NICs)."""
    format: str = FORMAT
    """Importer name."""

    def to_json(self) -> dict[str, Any]:
        """format, cpus, gpus, nics, pci_switches, unknown_pci, nvlinks."""
        return {
            "format": self.format,
            "cpus": self.cpus,
            "gpus": self.gpus,
            "nics": self.nics,
            "pci_switches": self.pci_switches,
            "unknown_pci": self.unknown_pci,
            "nvlinks": self.nvlinks,
        }

    def summary(self) -> str:
        """Counts, CPUs, GPUs with NVLink and PCIe detail, NICs with rate and locality."""
        out = [
            f"NCCL topology XML: {len(self.cpus)} CPUs/NUMA nodes, {len(self.gpus)} GPUs, "
            f"{len(self.nics)} NIC ports, {len(self.pci_switches)} PCIe switches"
        ]
        for cpu in self.cpus:
            name = cpu.get("name") or " ".join(
                str(v)
                for v in (cpu.get("vendor"), cpu.get("family") and f"family {cpu['family']}")
                if v
            )
            cpus = f" CPUs {cpu['cpu_list']}" if cpu.get("cpu_list") else ""
            out.append(f"  CPU numa {cpu.get('numaid')}: {name or '?'}{cpus}")
        for gpu in self.gpus:
            nv = gpu["nvlink"]
            links = []
            if nv.get("nvswitch"):
                links.append(f"NVSwitch x{nv['nvswitch']}")
            links += [f"{peer} NV{n}" for peer, n in nv.get("gpus", {}).items()]
            model = gpu.get("model_name") or (f"sm{gpu['sm']}" if gpu.get("sm") else "?")
            where = f"numa {gpu['numaid']}" if gpu.get("numaid") is not None else "numa ?"
            out.append(
                f"  {gpu['name']} {gpu.get('busid') or ''} {model}, {where}"
                + (f", {', '.join(links)}" if links else "")
            )
        for nic in self.nics:
            rate = f"{nic['speed_gbps']:g} Gb/s" if nic.get("speed_gbps") else "rate ?"
            bus = f" {nic['busid']}" if nic.get("busid") and nic["busid"] != nic["name"] else ""
            out.append(
                f"  NIC {nic['name']}{bus} {nic.get('kind') or '?'} {rate}, "
                f"numa {nic.get('numaid') if nic.get('numaid') is not None else '?'}"
            )
        if self.unknown_pci:
            out.append(f"  unknown PCI devices: {len(self.unknown_pci)}")
        return "\n".join(out)

    def layout(self) -> NodeLayout:
        """The node as ``spec.build_spec`` needs it (PCIe paths from the tree).

        Raises:
            ParseError: More GPUs than one node has (checked before the pairs are built).
        """
        if len(self.gpus) > MAX_NODE_GPUS:
            raise ParseError(
                f"{len(self.gpus)} GPUs in one topology: a node spec holds at most "
                f"{MAX_NODE_GPUS} (is this a whole cluster's dump?)"
            )
        names = [g["name"] for g in self.gpus]
        nvswitch = any(g["nvlink"].get("nvswitch") for g in self.gpus)
        direct = bool(self.nvlinks)
        gpu_links: dict[tuple[int, int], str] = {}
        for i, a in enumerate(self.gpus):
            for j in range(i + 1, len(self.gpus)):
                b = self.gpus[j]
                na, nb = a["nvlink"].get("nvswitch", 0), b["nvlink"].get("nvswitch", 0)
                count = max(
                    a["nvlink"]["gpus"].get(b["name"], 0), b["nvlink"]["gpus"].get(a["name"], 0)
                )
                if na and nb:
                    gpu_links[(i, j)] = f"NV{min(na, nb)}"
                elif count:
                    gpu_links[(i, j)] = f"NV{count}"
                else:
                    code = _pcie_code(self.places[a["name"]], self.places[b["name"]])
                    if code:
                        gpu_links[(i, j)] = code
        nic_names = [n["name"] for n in self.nics]
        nic_paths: dict[tuple[int, int], str] = {}
        for i, gpu in enumerate(self.gpus):
            for k in range(len(self.nics)):
                code = _pcie_code(self.places[gpu["name"]], self.places[f"nic:{k}"])
                if code:
                    nic_paths[(i, k)] = code
        parents = {self.places[n].chain[-1] for n in names if self.places[n].chain}
        located = all(self.places[n].cpu is not None for n in names)
        model, reason = None, ""
        for gpu in self.gpus:
            if gpu.get("model"):
                model = gpu["model"]
                reason = gpu["model_reason"]
                break
        link, gbps, why = self._net_hint()
        return NodeLayout(
            source="NCCL topology XML",
            gpus=names,
            nics=nic_names,
            gpu_links=gpu_links,
            nic_paths=nic_paths,
            numa=[g.get("numaid") for g in self.gpus],
            cpu_affinity=[g.get("cpu_list") for g in self.gpus],
            gpu_model=model,
            gpu_model_reason=reason,
            nvswitch=True if nvswitch else (False if direct else None),
            pcie_switches=len(parents) if located else None,
            net_link=link,
            net_gbps=gbps,
            net_reason=why,
            gaps=list(self.warnings),
        )

    def _net_hint(self) -> tuple[str | None, float | None, str]:
        kinds = Counter(
            (n.get("kind"), n.get("speed_gbps")) for n in self.nics if n.get("kind") is not None
        )
        if not kinds:
            return None, None, ""
        (kind, gbps), _ = kinds.most_common(1)[0]
        rate = f" at {gbps:g} Gb/s" if gbps else " (rate not in the file)"
        if kind == "efa":
            return "efa", gbps, f"EFA NICs{rate}"
        if kind == "infiniband":
            rate_gbps = gbps or 400
            link = "ib-hdr" if rate_gbps <= 200 else "ib-ndr" if rate_gbps <= 400 else "ib-xdr"
            return link, gbps, f"InfiniBand NICs (class 0x0207){rate}"
        if kind == "roce":
            return "roce", gbps, f"RDMA Ethernet NICs{rate}"
        return "tcp", gbps, f"Ethernet NICs without GPUDirect RDMA{rate}"


def _reject(text: str) -> None:
    if re.search(r"<!DOCTYPE|<!ENTITY", text, re.IGNORECASE):
        raise ParseError(
            "the XML has a DOCTYPE/ENTITY declaration, which NCCL topology files never have: "
            "refusing to read it"
        )
    if _DIFF.search(text) and re.search(r"(?m)^[<>] \s*<", text):
        raise ParseError(
            "this is a `diff` of two NCCL topology files (lines '2c2', '< ...', '> ...'), "
            "not a topology: import one of the two files"
        )


def parse(text: str) -> NcclTopoXml:
    """Parse NCCL topology XML (a provider file, a dump, or an excerpt of one).

    Args:
        text: The XML as pasted, possibly with text before it.

    Returns:
        The topology, with ``warnings`` stating every gap.

    Raises:
        ParseError: Not NCCL XML, a diff, a DOCTYPE/ENTITY declaration, or a syntax error
            (with its line) that is not a clean cut.
    """
    text = clean_text(text)
    _reject(text)
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.lstrip().startswith("<")), None)
    if first is None or not re.search(r"<(?:system|cpu|pci|gpu|nic|net|nvlink)\b", text):
        raise wrong_format(text, EXPECTED, FORMAT)
    result = NcclTopoXml()
    skipped = [line for line in lines[:first] if line.strip()]
    if skipped:
        result.notes.append(f"ignored {len(skipped)} line(s) of text before the XML")
    body = "\n".join(lines[first:])
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, column = exc.position
        reason = str(exc).split(":")[0]
        recovered, remarks, bad = _recover(body)
        if recovered is None or not len(recovered):
            where = first + (bad or line)
            raise ParseError(
                f"XML syntax error at line {where}, column {column + 1}: {reason}"
            ) from None
        root = recovered
        result.warnings.append(
            f"an excerpt, not a whole file (XML parser: {reason} at line {first + line}): "
            "read tag by tag, elements before or after it are missing"
            + (f" ({'; '.join(remarks)})" if remarks else "")
        )
    if root.tag not in ("system", "fragment"):
        wrapper = ET.Element("fragment")
        wrapper.append(root)
        result.warnings.append(f"root element is <{root.tag}>, not <system>: an excerpt")
        root = wrapper
    if _depth(root) > MAX_DEPTH:
        raise ParseError(f"elements nested more than {MAX_DEPTH} levels deep: not an NCCL topology")
    walker = _Walker(result)
    walker.walk(root)
    _name_devices(result, walker)
    _state_gaps(result)
    return result


class _Walker:
    """Collects CPUs, GPUs, NICs and switches from the element tree."""

    def __init__(self, result: NcclTopoXml) -> None:
        self.r = result
        self.unknown_tags: Counter[str] = Counter()
        self.orphan_nvlinks = 0
        self.raw_gpus: list[tuple[dict[str, Any], _Place]] = []
        self.raw_nics: list[tuple[dict[str, Any], _Place]] = []

    def walk(self, el: ET.Element) -> None:
        for child in el:
            self.visit(child, None, ())
        if self.orphan_nvlinks:
            self.r.warnings.append(
                f"{self.orphan_nvlinks} <nvlink> entries outside any <gpu> (the excerpt starts "
                "inside a GPU): their GPU is unknown"
            )
        if self.unknown_tags:
            listed = ", ".join(f"<{t}> x{n}" for t, n in sorted(self.unknown_tags.items()))
            self.r.notes.append(f"ignored elements NCCL topology files do not use: {listed}")

    def visit(self, el: ET.Element, cpu: int | None, chain: tuple[str, ...]) -> None:
        tag = el.tag
        if not isinstance(tag, str):
            return
        if tag == "cpu":
            self.cpu(el)
        elif tag == "pci":
            self.pci(el, cpu, chain)
        elif tag == "nic":
            for net in el.iter("net"):
                self.net(net, None, _Place(cpu, chain), None)
        elif tag == "net":
            self.net(el, None, _Place(cpu, chain), None)
        elif tag == "gpu":
            self.gpu(el, None, _Place(cpu, chain))
        elif tag == "nvlink":
            self.orphan_nvlinks += 1
        elif tag in ("system", "fragment"):
            for child in el:
                self.visit(child, cpu, chain)
        else:
            self.unknown_tags[tag] += 1

    def cpu(self, el: ET.Element) -> None:
        vendor = el.get("vendor")
        familyid = _int(el.get("familyid"))
        modelid = _int(el.get("modelid"))
        family = (
            amd_family(familyid) if familyid is not None and vendor == "AuthenticAMD" else familyid
        )
        if family != familyid:
            note = f"familyid {familyid} is older NCCL's encoding of AMD family {family}"
            if note not in self.r.notes:
                self.r.notes.append(note)
        affinity = el.get("affinity")
        info = {
            "numaid": _int(el.get("numaid")),
            "arch": el.get("arch"),
            "vendor": vendor,
            "familyid": familyid,
            "family": family,
            "modelid": modelid,
            "name": CPU_NAMES.get((vendor or "", family or -1, modelid or -1)),
            "affinity": affinity,
            "cpu_list": cpu_list_from_mask(affinity) if affinity else None,
            "host_hash": el.get("host_hash"),
        }
        self.r.cpus.append(info)
        index = len(self.r.cpus) - 1
        for child in el:
            self.visit(child, index, ())

    def pci(self, el: ET.Element, cpu: int | None, chain: tuple[str, ...]) -> None:
        busid = (el.get("busid") or "").lower()
        cls = (el.get("class") or "").lower()
        sub = [c for c in el if c.tag == "pci"]
        gpu = el.find("gpu")
        nic = el.find("nic")
        place = _Place(cpu, chain)
        if gpu is not None or (cls.startswith(("0x0302", "0x0300")) and not sub):
            self.gpu(gpu, el, place)
        elif nic is not None or (cls.startswith(("0x0207", "0x0200")) and not sub):
            nets = list(nic.iter("net")) if nic is not None else []
            if not nets:
                self.net(None, el, place, cls)
            for net in nets:
                self.net(net, el, place, cls)
        elif sub or cls.startswith("0x0604"):
            self.r.pci_switches.append(
                {
                    "busid": busid,
                    "numaid": self._numa(cpu),
                    "vendor": el.get("vendor"),
                    "device": el.get("device"),
                    "link_speed": el.get("link_speed"),
                    "link_width": _int(el.get("link_width")),
                }
            )
            for child in el:
                if child.tag == "pci":
                    self.pci(child, cpu, (*chain, busid))
                else:
                    self.visit(child, cpu, (*chain, busid))
        else:
            self.r.unknown_pci.append(
                {"busid": busid, "numaid": self._numa(cpu), "class": cls or None}
            )

    def _numa(self, cpu: int | None) -> int | None:
        return self.r.cpus[cpu]["numaid"] if cpu is not None else None

    def gpu(self, el: ET.Element | None, pci: ET.Element | None, place: _Place) -> None:
        attrs = el.attrib if el is not None else {}
        pattrs = pci.attrib if pci is not None else {}
        busid = (pattrs.get("busid") or "").lower() or None
        device = (pattrs.get("device") or "").lower() or None
        sm = _int(attrs.get("sm"))
        model, model_name, reason = None, None, ""
        if device and device in DEVICE_IDS:
            model, model_name = DEVICE_IDS[device]
            reason = f"PCI device {device} = {model_name}"
        elif sm in SM_GUESS:
            model = SM_GUESS[sm]
            reason = f"sm {sm} (compute capability only: a guess)"
        width = _int(pattrs.get("link_width"))
        links = []
        for nv in el.iter("nvlink") if el is not None else []:
            links.append(
                {
                    "target": (nv.get("target") or "").lower(),
                    "count": _int(nv.get("count")) or 1,
                    "tclass": (nv.get("tclass") or "").lower(),
                }
            )
        info = {
            "name": None,
            "busid": busid,
            "dev": _int(attrs.get("dev")),
            "rank": _int(attrs.get("rank")),
            "sm": sm,
            "gdr": _int(attrs.get("gdr")),
            "numaid": self._numa(place.cpu),
            "cpu_list": self.r.cpus[place.cpu]["cpu_list"] if place.cpu is not None else None,
            "device": device,
            "model": model,
            "model_name": model_name,
            "model_reason": reason,
            "pcie": {
                "link_speed": pattrs.get("link_speed"),
                "gts": _gts(pattrs.get("link_speed")),
                "width": width or None,
            },
            "switches": list(place.chain),
            "raw_nvlinks": links,
            "raw_nvlink_count": len(links),
            "raw_width_hidden": pattrs.get("link_width", "").strip() == "0",
            "bare": el is None,
        }
        self.raw_gpus.append((info, place))

    def net(
        self, el: ET.Element | None, pci: ET.Element | None, place: _Place, cls: str | None
    ) -> None:
        attrs = el.attrib if el is not None else {}
        pattrs = pci.attrib if pci is not None else {}
        name = attrs.get("name")
        speed = _int(attrs.get("speed"))
        gdr = _int(attrs.get("gdr"))
        kind = None
        if name and re.match(r"rdmap|efa", name):
            kind = "efa"
        elif cls and cls.startswith("0x0207"):
            kind = "infiniband"
        elif (cls and cls.startswith("0x0200")) or el is not None:
            rdma = gdr == 1 or bool(name and re.match(r"mlx|bnxt|irdma|ionic|rocep", name))
            kind = "roce" if rdma else "ethernet"
        info = {
            "name": name,
            "busid": (pattrs.get("busid") or "").lower() or None,
            "dev": _int(attrs.get("dev")),
            "port": _int(attrs.get("port")),
            "speed_gbps": speed / 1000 if speed else None,
            "guid": attrs.get("guid"),
            "gdr": gdr,
            "numaid": self._numa(place.cpu),
            "kind": kind,
            "switches": list(place.chain),
        }
        self.raw_nics.append((info, place))


def _name_devices(r: NcclTopoXml, walker: _Walker) -> None:
    """Order and name GPUs (by ``dev``, else bus id) and NICs; resolve NVLink targets."""
    gpus = walker.raw_gpus
    devs = [g["dev"] for g, _ in gpus]
    if all(d is not None for d in devs) and len(set(devs)) == len(devs):
        order = sorted(range(len(gpus)), key=lambda i: devs[i])
        names = [f"GPU{devs[i]}" for i in order]
    else:
        order = sorted(range(len(gpus)), key=lambda i: gpus[i][0]["busid"] or "")
        names = [f"GPU{k}" for k in range(len(gpus))]
    by_bus: dict[str, str] = {}
    for name, i in zip(names, order):
        info, place = gpus[i]
        info["name"] = name
        r.gpus.append(info)
        r.places[name] = place
        if info["busid"]:
            by_bus[info["busid"]] = name
    for k, (info, place) in enumerate(walker.raw_nics):
        if info["name"] is None:
            info["name"] = info["busid"] or f"NIC{k}"
        r.nics.append(info)
        r.places[f"nic:{k}"] = place
    missing_targets: set[str] = set()
    self_links: list[str] = []
    pairs: dict[tuple[str, str], int] = {}
    for info in r.gpus:
        nv: dict[str, Any] = {"nvswitch": 0, "gpus": {}}
        for link in info.pop("raw_nvlinks"):
            target = link["target"]
            if link["tclass"] == NVSWITCH_CLASS:
                nv["nvswitch"] += link["count"]
            elif target == info["busid"]:
                self_links.append(f"{info['name']} ({link['count']})")
            elif target in by_bus:
                peer = by_bus[target]
                nv["gpus"][peer] = nv["gpus"].get(peer, 0) + link["count"]
                a, b = sorted((info["name"], peer))
                pairs[(a, b)] = max(pairs.get((a, b), 0), nv["gpus"][peer])
            else:
                missing_targets.add(target)
        info["nvlink"] = nv
    r.nvlinks = [{"a": a, "b": b, "count": n} for (a, b), n in sorted(pairs.items())]
    if self_links:
        r.warnings.append(
            f"NVLinks to the GPU itself ignored: {', '.join(self_links)} (a provider-file quirk; "
            "these GPUs have no NVLink peers in the file)"
        )
    if missing_targets:
        r.warnings.append(
            f"NVLink targets not in the file: {', '.join(sorted(missing_targets))} "
            "(GPUs outside the excerpt)"
        )


def _state_gaps(r: NcclTopoXml) -> None:
    """Add the warnings and notes about what the file lacks or says oddly."""
    nvlink_entries = sum(g.pop("raw_nvlink_count") for g in r.gpus)
    hidden = [g["name"] for g in r.gpus if g.pop("raw_width_hidden")]
    if not r.gpus:
        r.warnings.append(
            "no GPUs in the file (provider files may list only PCIe switches and NICs)"
        )
    elif all(g["bare"] for g in r.gpus):
        r.warnings.append(
            "GPUs are bare <pci> entries: GPU model and NVLinks are not in the file, so a spec "
            "from it is PCIe-only (pass --gpu; the real machine may have NVLink)"
        )
    elif not nvlink_entries:
        r.warnings.append(
            "no <nvlink> entries: NVLink is not in the file (a provider file, or PCIe-only GPUs)"
        )
    parts = sorted({(g["device"], g["model_name"], g["model"]) for g in r.gpus if g["device"]})
    for device, name, model in parts:
        if model is None and name:
            r.warnings.append(f"GPU {name} ({device}) is not in the catalog: pass --gpu for -o")
        elif name and "catalog part" in name:
            r.warnings.append(
                f"GPU {name.split(' (')[0]} ({device}) is not in the catalog: -o uses {model}"
            )
    guessed = sorted({(g["sm"], g["model"]) for g in r.gpus if g["model"] and not g["device"]})
    for sm, model in guessed:
        r.warnings.append(
            f"GPU model not in the file (no PCI device id): sm {sm} suggests {model} (a guess; "
            "pass --gpu)"
        )
    if r.unknown_pci:
        busids = [p["busid"] for p in r.unknown_pci]
        r.warnings.append(
            f"{len(busids)} PCI devices have no class: GPUs and NICs cannot be told apart "
            f"({span(busids[:3])}{f' and {len(busids) - 3} more' if len(busids) > 3 else ''})"
        )
    if not r.cpus:
        r.warnings.append("no <cpu> element: NUMA placement unknown (an excerpt)")
    if hidden:
        r.notes.append(f'PCIe link width hidden (link_width="0", a VM?) for {span(hidden)}')
    guids: dict[str, list[dict[str, Any]]] = {}
    for nic in r.nics:
        if nic.get("guid") and nic["guid"] not in ("0", "0x0") and not nic["guid"].isdigit():
            guids.setdefault(nic["guid"], []).append(nic)
    for ports in guids.values():
        speeds = {p["speed_gbps"] for p in ports}
        if len(ports) > 1 and len(speeds) > 1:
            r.notes.append(
                f"{' and '.join(p['name'] for p in ports)} share a GUID (one multi-port NIC) but "
                f"run at {' and '.join(format(p['speed_gbps'], 'g') for p in ports)} Gb/s"
            )
    bare_nics = [n["name"] for n in r.nics if n["speed_gbps"] is None]
    if bare_nics:
        listed = span(bare_nics[:3]) + (
            f" and {len(bare_nics) - 3} more" if len(bare_nics) > 3 else ""
        )
        r.warnings.append(f"NIC rate not in the file for {listed}")
