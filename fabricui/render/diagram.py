"""A topology as a diagram for design reviews, drawn as lstopo draws a machine: hosts as
boxes holding their NICs, PCIe switches, CPUs, GPUs and scale-up switch, the network's
leaf, spine and core tiers above them, and every link coloured by its class (scale-up,
host, scale-out) with a legend naming each generation.

One layout (``topology_drawing``: boxes, lines and labels in points) is written as SVG
(``to_svg``) or PDF (``to_pdf``) by our own few lines, so a diagram needs no Graphviz,
cairo or font files and is the same on a laptop and an air-gapped login node; Graphviz's
own layout is one ``dot`` away from ``to_dot``. Big fabrics are drawn in part: the first
hosts and the last (``max_hosts``), the switches they reach, and a box saying how many
are left out and that they repeat the pattern.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import numpy as np

from fabricui.fabric.kinds import NETWORK_SWITCHES, DeviceKind

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric

#: Hosts drawn before the rest are summarised in one box.
DEFAULT_MAX_HOSTS = 8
#: Switches of one network tier drawn before the rest are summarised.
MAX_TIER_SWITCHES = 16
#: Colour of each link class (Okabe-Ito, readable by colour-blind viewers).
CLASS_COLOURS = {"scale-up": "#009E73", "host": "#0072B2", "scale-out": "#D55E00"}
#: What each class means, for the legend.
CLASS_NAMES = {
    "scale-up": "scale-up (GPU to GPU)",
    "host": "host (PCIe, CPU links)",
    "scale-out": "scale-out (network)",
}
#: Fill of each kind of box.
FILLS = {
    "host": "#F7F7F7",
    "domain": "#FFFFFF",
    "gpu": "#DDEEDD",
    "scaleup": "#BFE3D4",
    "pcie": "#D6E6F4",
    "cpu": "#E8E8E8",
    "nic": "#F8E0D0",
    "switch": "#F4C9A8",
    "more": "#FFFFFF",
}

_CELL = 46.0  # a device box's width plus its gap [pt]
_DEV_W, _DEV_H = 38.0, 20.0
_ROW = 34.0  # from one row of devices to the next [pt]
_HOST_GAP = 24.0
_TIER_GAP = 90.0
_MARGIN = 30.0
_FONT = 9.0

#: Box style of each device kind inside a host (any other: ``scaleup``), by kind value.
_KIND_STYLE = {
    int(DeviceKind.GPU): "gpu",
    int(DeviceKind.NIC): "nic",
    int(DeviceKind.CPU): "cpu",
    int(DeviceKind.PCIE_SWITCH): "pcie",
}
#: Kind values of the network switches (``NETWORK_SWITCHES``).
_SWITCH_KINDS = frozenset(int(kind) for kind in NETWORK_SWITCHES)
_NIC, _GPU, _NVSWITCH = int(DeviceKind.NIC), int(DeviceKind.GPU), int(DeviceKind.NVSWITCH)
_PCIE_SWITCH, _CPU = int(DeviceKind.PCIE_SWITCH), int(DeviceKind.CPU)

#: Characters XML 1.0 forbids in a document (C0 controls but tab, newline and return;
#: surrogates; U+FFFE, U+FFFF): one in a name (a YAML ``"\x01"``) would leave an SVG no
#: viewer opens.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Box:
    """A rectangle with a label (a device, a host, a summary)."""

    x: float
    y: float
    w: float
    h: float
    label: str
    kind: str
    """A key of ``FILLS``."""


@dataclass(frozen=True)
class Line:
    """A link between two boxes' centres."""

    x1: float
    y1: float
    x2: float
    y2: float
    link_class: str
    """A key of ``CLASS_COLOURS``."""
    width: float = 1.0
    label: str = ""


@dataclass(frozen=True)
class Text:
    """Free text (titles, legend)."""

    x: float
    y: float
    text: str
    size: float = _FONT
    bold: bool = False


@dataclass
class Drawing:
    """Everything to draw, in points, origin top left."""

    width: float
    height: float
    boxes: list[Box] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    """(link class, text) per generation drawn."""


# --- what is drawn -------------------------------------------------------------------------


def drawn_hosts(fabric: Fabric, max_hosts: int = DEFAULT_MAX_HOSTS) -> tuple[list[int], int]:
    """(hosts drawn, hosts left out): all of them when they fit, else the first
    ``max_hosts - 1`` and the last."""
    nodes = fabric.nodes
    if nodes <= max_hosts:
        return list(range(nodes)), 0
    keep = max(1, max_hosts - 1)
    return [*range(keep), nodes - 1], nodes - keep - 1


def link_class(fabric: Fabric, gen: int) -> str:
    """``scale-up``, ``host`` or ``scale-out`` of a generation index (its hwdb tier)."""
    records = fabric.generation_records
    tier = records[gen].tier if gen < len(records) else ""
    return tier if tier in CLASS_COLOURS else "host"


def _link_classes(fabric: Fabric) -> dict[int, str]:
    """``link_class`` of every generation index of the fabric, looked up once."""
    return {gen: link_class(fabric, gen) for gen in range(len(fabric.generations))}


def _pairs(fabric: Fabric, devices: set[int]) -> dict[tuple[int, int], tuple[int, int, float]]:
    """(a, b) with a < b, both drawn -> (generation, cables, bandwidth per direction)."""
    drawn = np.fromiter(devices, dtype=np.int64, count=len(devices))
    src, dst = fabric.link_src, fabric.link_dst
    picked = np.flatnonzero((src < dst) & np.isin(src, drawn) & np.isin(dst, drawn))
    # tolist: Python ints and floats of the same values, without a conversion per entry.
    ends = zip(src[picked].tolist(), dst[picked].tolist())
    about = zip(
        fabric.link_gen[picked].tolist(),
        fabric.link_count[picked].tolist(),
        fabric.link_bw_GBps[picked].tolist(),
    )
    return dict(zip(ends, about))


def _kinds_of(fabric: Fabric, devices: set[int]) -> dict[int, int]:
    """Device -> its kind value, for ``devices``."""
    drawn = np.fromiter(devices, dtype=np.int64, count=len(devices))
    return dict(zip(drawn.tolist(), fabric.dev_kind[drawn].tolist()))


def _network_switches(kinds: dict[int, int]) -> set[int]:
    """The network switches (``NETWORK_SWITCHES``) of a ``_kinds_of`` table."""
    return {dev for dev, kind in kinds.items() if kind in _SWITCH_KINDS}


def _prefixes(fabric: Fabric) -> dict[int, str]:
    """Device-name prefix of every kind value (``Fabric.prefix_of``), looked up once."""
    return {int(kind): fabric.prefix_of(kind) for kind in DeviceKind}


def _network_reached(fabric: Fabric, hosts: list[int]) -> list[list[int]]:
    """The network switches of each tier (leaf, spine, core; routers as one tier) that the
    drawn hosts reach, tier by tier, each tier at most ``MAX_TIER_SWITCHES``."""
    src, dst = fabric.link_src, fabric.link_dst
    kinds = fabric.dev_kind
    frontier: set[int] = set()
    for node in hosts:
        frontier.update(int(d) for d in fabric.host_device_ids(node))
    tiers: list[list[int]] = []
    for kind in (DeviceKind.LEAF, DeviceKind.ROUTER, DeviceKind.SPINE, DeviceKind.CORE):
        mask = np.isin(src, list(frontier)) & (kinds[dst] == kind)
        reached = sorted({int(d) for d in dst[mask]})
        if not reached:
            continue
        more = [-len(reached)] if len(reached) > MAX_TIER_SWITCHES else []
        tiers.append(reached[:MAX_TIER_SWITCHES] + more)  # a negative entry: the total
        frontier = set(reached[:MAX_TIER_SWITCHES])
    return tiers


# --- layout --------------------------------------------------------------------------------


def topology_drawing(fabric: Fabric, max_hosts: int = DEFAULT_MAX_HOSTS) -> Drawing:
    """Lay the topology out: the network tiers on top, the hosts in a row below.

    Args:
        fabric: The built fabric.
        max_hosts: Hosts drawn before the rest are summarised (at least 1).
    """
    hosts, left_out = drawn_hosts(fabric, max(1, max_hosts))
    boxes: list[Box] = []
    centre: dict[int, tuple[float, float]] = {}
    bar_of: dict[int, Box] = {}
    tiers = _network_reached(fabric, hosts)
    top = _MARGIN + 36.0 + len(tiers) * _TIER_GAP
    x = _MARGIN
    host_bottom = top
    host_box: dict[int, Box] = {}
    prefixes = _prefixes(fabric)
    for position, node in enumerate(hosts):
        if left_out and position == len(hosts) - 1:  # the summary before the last host
            boxes.append(
                Box(x, top, 120.0, 60.0, f"{left_out} more hosts,\nwired as these", "more")
            )
            x += 120.0 + _HOST_GAP
        width, height, inner = _host_layout(fabric, node, x, top + 18.0, centre, bar_of, prefixes)
        label = fabric.node_label(node)  # the GPU model is in the title
        host_box[node] = Box(x, top, width, height + 18.0, label, "host")
        boxes.append(host_box[node])
        boxes += inner
        x += width + _HOST_GAP
        host_bottom = max(host_bottom, top + height + 18.0)
    # A scale-up switch several hosts share (a GB200 rack's NVSwitch): a bar under them.
    per_domain = fabric.hosts_per_domain
    for domain in sorted({n // per_domain for n in hosts} if per_domain > 1 else ()):
        switches = [int(d) for d in fabric.domain_device_ids(domain)]
        members = [n for n in hosts if n // per_domain == domain]
        if not switches:
            continue
        first, last = host_box[members[0]], host_box[members[-1]]
        y = host_bottom + 20.0
        label = f"d{domain} {fabric.scaleup_label}"
        bar = Box(first.x, y, last.x + last.w - first.x, _DEV_H, label, "scaleup")
        boxes.append(bar)
        for dev in switches:
            centre[dev] = (bar.x + bar.w / 2, bar.y + bar.h / 2)
            bar_of[dev] = bar
        host_bottom = y + _DEV_H
    width = max(x - _HOST_GAP + _MARGIN, 420.0)
    # Network tiers, the leafs lowest.
    for level, tier in enumerate(tiers):
        y = top - (level + 1) * _TIER_GAP + 20.0
        shown = [d for d in tier if d >= 0]
        more = -tier[-1] - len(shown) if tier and tier[-1] < 0 else 0
        slots = len(shown) + (1 if more else 0)
        step = (width - 2 * _MARGIN) / max(slots, 1)
        for i, dev in enumerate(shown):
            name = fabric.device_name(dev)
            w = max(60.0, 6.0 * len(name) + 12.0)
            cx = _MARGIN + step * (i + 0.5)
            boxes.append(Box(cx - w / 2, y, w, 24.0, name, "switch"))
            centre[dev] = (cx, y + 12.0)
        if more:
            cx = _MARGIN + step * (slots - 0.5)
            boxes.append(Box(cx - 50.0, y, 100.0, 24.0, f"+{more} more", "more"))
    lines = _links(fabric, centre, bar_of)
    legend = _legend(fabric, lines)
    height = host_bottom + 40.0 + 14.0 * (len(legend) + 1)
    drawing = Drawing(width, height, boxes, lines, legend=legend)
    drawing.texts.append(Text(_MARGIN, _MARGIN, _title(fabric, left_out), 12.0, bold=True))
    y = host_bottom + 30.0
    for cls, text in legend:
        drawing.lines.append(Line(_MARGIN, y - 3.0, _MARGIN + 30.0, y - 3.0, cls, 2.0))
        drawing.texts.append(Text(_MARGIN + 38.0, y, text))
        y += 14.0
    return drawing


def _host_layout(
    fabric: Fabric,
    node: int,
    x: float,
    y: float,
    centre: dict[int, tuple[float, float]],
    bar_of: dict[int, Box],
    prefixes: dict[int, str],
) -> tuple[float, float, list[Box]]:
    """One host's devices in rows (NICs, PCIe switches and CPUs, GPUs, its scale-up
    switch as a bar); returns (width, height, boxes) and records each device's centre
    (and the bar of a switch drawn as one). ``prefixes``: ``_prefixes(fabric)``."""
    devs = fabric.host_device_ids(node)
    ids = devs.tolist()
    kinds = fabric.dev_kind[devs].tolist()
    numbers = fabric.dev_index[devs].tolist()
    nics: list[int] = []
    cpus: list[int] = []  # PCIe switches and CPUs
    gpus: list[int] = []
    scaleup: list[int] = []
    for i, kind in enumerate(kinds):  # positions in ``ids``, each row in id order
        if kind == _NIC:
            nics.append(i)
        elif kind in (_PCIE_SWITCH, _CPU):
            cpus.append(i)
        elif kind == _GPU:
            gpus.append(i)
        elif kind == _NVSWITCH:
            scaleup.append(i)
    rows = [row for row in (nics, cpus, gpus, scaleup) if row]
    columns = max(len(row) for row in rows)
    width = columns * _CELL + 12.0
    boxes: list[Box] = []
    for r, row in enumerate(rows):
        ry = y + 8.0 + r * _ROW
        if kinds[row[0]] == _NVSWITCH and len(row) == 1:
            box = Box(x + 6.0, ry, width - 12.0, _DEV_H, fabric.scaleup_label, "scaleup")
            boxes.append(box)
            dev = ids[row[0]]
            centre[dev] = (box.x + box.w / 2, box.y + box.h / 2)
            bar_of[dev] = box
            continue
        offset = x + 6.0 + (columns - len(row)) * _CELL / 2
        cy = ry + _DEV_H / 2
        for i, at in enumerate(row):
            kind = kinds[at]
            label = f"{prefixes[kind]}{numbers[at]}"
            bx = offset + i * _CELL
            boxes.append(Box(bx, ry, _DEV_W, _DEV_H, label, _KIND_STYLE.get(kind, "scaleup")))
            centre[ids[at]] = (bx + _DEV_W / 2, cy)
    return width, 8.0 + len(rows) * _ROW, boxes


def _links(
    fabric: Fabric, centre: dict[int, tuple[float, float]], bars: dict[int, Box]
) -> list[Line]:
    """A line per drawn device pair, coloured by class (straight down into a switch drawn
    as a bar); network bundles say ``xN``."""
    lines = []
    drawn = set(centre)
    classes = _link_classes(fabric)
    switches = _network_switches(_kinds_of(fabric, drawn))
    for (a, b), (gen, count, bw) in sorted(_pairs(fabric, drawn).items()):
        (x1, y1), (x2, y2) = centre[a], centre[b]
        if a in bars:
            x1 = min(max(x2, bars[a].x + 4.0), bars[a].x + bars[a].w - 4.0)
        if b in bars:
            x2 = min(max(x1, bars[b].x + 4.0), bars[b].x + bars[b].w - 4.0)
        cls = classes[gen] if gen in classes else link_class(fabric, gen)
        label = f"x{count}" if count > 1 and a in switches and b in switches else ""
        width = 1.0 + min(2.5, bw / 200.0)
        lines.append(Line(x1, y1, x2, y2, cls, width, label))
    return lines


#: How high each kind sits in the picture: core over spine over leaf, then inside a host
#: its NICs (facing the network), PCIe switches and CPUs, GPUs, the scale-up switch.
_HEIGHTS = {
    DeviceKind.CORE: 9,
    DeviceKind.SPINE: 8,
    DeviceKind.LEAF: 7,
    DeviceKind.ROUTER: 7,
    DeviceKind.NIC: 4,
    DeviceKind.PCIE_SWITCH: 3,
    DeviceKind.CPU: 3,
    DeviceKind.GPU: 2,
    DeviceKind.NVSWITCH: 1,
}


#: ``_HEIGHTS`` by kind value.
_HEIGHT_OF = {int(kind): height for kind, height in _HEIGHTS.items()}


def _legend(fabric: Fabric, lines: list[Line]) -> list[tuple[str, str]]:
    """Each generation of the fabric: its class and what it is."""
    shown = {line.link_class for line in lines}
    out = []
    records = fabric.generation_records
    for gen, name in enumerate(fabric.generations):
        cls = link_class(fabric, gen)
        if cls not in shown:
            continue
        record = records[gen] if gen < len(records) else None
        what = f"{record.name}, {record.bw_GBps:g} GB/s per link" if record else name
        out.append((cls, f"{name}: {what} ({CLASS_NAMES[cls]})"))
    return out


def _title(fabric: Fabric, left_out: int) -> str:
    spec = fabric.spec
    net = f", {spec.net.link} {spec.net.gbps:g} Gb/s" if spec.net and spec.net.gbps else ""
    drawn = f"; {left_out} of {fabric.nodes} hosts summarised" if left_out else ""
    return (
        f"{spec.id}: {fabric.n_gpus} GPUs on {fabric.nodes} host"
        f"{'s' if fabric.nodes != 1 else ''} ({fabric.gpu.name}){net}{drawn}"
    )


# --- SVG -----------------------------------------------------------------------------------


def to_svg(drawing: Drawing) -> str:
    """The drawing as a standalone SVG document."""
    words = _SvgWords()
    num, svg_text = words.number, words.text
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{drawing.width:.0f}" '
        f'height="{drawing.height:.0f}" viewBox="0 0 {drawing.width:.0f} {drawing.height:.0f}" '
        'font-family="Helvetica, Arial, sans-serif">',
        '<rect width="100%" height="100%" fill="#FFFFFF"/>',
    ]
    framed = ("host", "domain", "more")
    for box in drawing.boxes:
        if box.kind in framed:
            dash = ' stroke-dasharray="4 3"' if box.kind == "more" else ""
            out.append(
                f'<rect x="{num(box.x)}" y="{num(box.y)}" width="{num(box.w)}" '
                f'height="{num(box.h)}" rx="6" fill="{FILLS[box.kind]}" stroke="#555555"{dash}/>'
            )
    for line in drawing.lines:
        out.append(
            f'<line x1="{num(line.x1)}" y1="{num(line.y1)}" x2="{num(line.x2)}" '
            f'y2="{num(line.y2)}" stroke="{CLASS_COLOURS[line.link_class]}" '
            f'stroke-width="{num(line.width)}" stroke-opacity="0.8"/>'
        )
        if line.label:
            mx, my = (line.x1 + line.x2) / 2, (line.y1 + line.y2) / 2
            out.append(svg_text(mx + 3, my, line.label, _FONT - 1))
    for box in drawing.boxes:
        if box.kind in framed:
            lines = box.label.split("\n")
            if box.kind == "more":
                for i, text in enumerate(lines):
                    out.append(svg_text(box.x + 8, box.y + 22 + 12 * i, text))
            else:
                out.append(svg_text(box.x + 6, box.y + 12, lines[0], bold=True))
            continue
        out.append(
            f'<rect x="{num(box.x)}" y="{num(box.y)}" width="{num(box.w)}" '
            f'height="{num(box.h)}" rx="3" fill="{FILLS[box.kind]}" stroke="#333333"/>'
        )
        out.append(svg_text(box.x + box.w / 2, box.y + box.h / 2 + 3, box.label, middle=True))
    for label in drawing.texts:
        out.append(svg_text(label.x, label.y, label.text, label.size, label.bold))
    out.append("</svg>")
    return "\n".join(out) + "\n"


class _SvgWords:
    """The pieces of an SVG that repeat (coordinates, labels), each written once: a big
    drawing repeats a few hundred of them tens of thousands of times."""

    def __init__(self) -> None:
        self._numbers: dict[float, str] = {}
        self._texts: dict[str, str] = {}

    def number(self, value: float) -> str:
        """``f"{value:.1f}"``."""
        text = self._numbers.get(value)
        if text is None:
            text = f"{value:.1f}"
            if value != 0:  # 0.0 and -0.0 are one key but print apart ("-0.0")
                self._numbers[value] = text
        return text

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float = _FONT,
        bold: bool = False,
        middle: bool = False,
    ) -> str:
        """A ``<text>`` element, its text made valid XML and escaped."""
        weight = ' font-weight="bold"' if bold else ""
        anchor = ' text-anchor="middle"' if middle else ""
        shown = self._texts.get(text)
        if shown is None:
            shown = self._texts[text] = escape(_XML_INVALID.sub("\N{REPLACEMENT CHARACTER}", text))
        return (
            f'<text x="{self.number(x)}" y="{self.number(y)}" font-size="{size:g}"'
            f"{weight}{anchor}>{shown}</text>"
        )


# --- PDF -----------------------------------------------------------------------------------


def pdf_text(value: str) -> str:
    """``value`` in the standard PDF fonts' WinAnsi encoding (Windows-1252: Latin-1 plus
    dashes, quotes, the euro sign): accents kept where the font has the letter, else
    dropped (``ł`` -> ``l``), anything else ``?``."""
    out = []
    for char in value:
        try:
            char.encode("cp1252")
        except UnicodeEncodeError:
            base = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
            char = base or _PDF_SUBSTITUTES.get(char, "?")
        out.append(char)
    return "".join(out)


#: Letters NFKD does not take apart, written as the standard fonts can.
_PDF_SUBSTITUTES = {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ı": "i"}


def pdf_unsupported(drawing: Drawing) -> str:
    """The characters of the drawing's text a PDF in the standard fonts cannot draw (they
    are written ``?``), in order, each once."""
    texts = [box.label for box in drawing.boxes] + [line.label or "" for line in drawing.lines]
    texts += [item.text for item in drawing.texts]
    seen = dict.fromkeys(c for text in texts for c in text if pdf_text(c) == "?" != c)
    return "".join(seen)


def to_pdf(drawing: Drawing) -> bytes:
    """The drawing as a one-page PDF (PDF 1.4, the standard Helvetica fonts, the page the
    drawing's size), written directly: boxes, lines and text are all a diagram needs."""
    h = drawing.height
    ops: list[str] = []

    def colour(hex_colour: str, stroke: bool) -> str:
        r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
        return f"{r:.3f} {g:.3f} {b:.3f} {'RG' if stroke else 'rg'}"

    def rect(box: Box, fill: str, dashed: bool = False) -> None:
        ops.append(colour(fill, False))
        ops.append(colour("#555555", True))
        ops.append("[4 3] 0 d" if dashed else "[] 0 d")
        ops.append(f"0.8 w {box.x:.1f} {h - box.y - box.h:.1f} {box.w:.1f} {box.h:.1f} re B")

    def text(x: float, y: float, value: str, size: float = _FONT, bold: bool = False) -> None:
        font = "F2" if bold else "F1"
        safe = pdf_text(value).replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(f"0 0 0 rg BT /{font} {size:g} Tf {x:.1f} {h - y:.1f} Td ({safe}) Tj ET")

    for box in drawing.boxes:
        if box.kind in ("host", "domain", "more"):
            rect(box, FILLS[box.kind], dashed=box.kind == "more")
    ops.append("[] 0 d")
    for line in drawing.lines:
        ops.append(colour(CLASS_COLOURS[line.link_class], True))
        ops.append(
            f"{line.width:.1f} w {line.x1:.1f} {h - line.y1:.1f} m {line.x2:.1f} "
            f"{h - line.y2:.1f} l S"
        )
        if line.label:
            text((line.x1 + line.x2) / 2 + 3, (line.y1 + line.y2) / 2, line.label, _FONT - 1)
    for box in drawing.boxes:
        if box.kind in ("host", "domain", "more"):
            lines = box.label.split("\n")
            if box.kind == "more":
                for i, value in enumerate(lines):
                    text(box.x + 8, box.y + 22 + 12 * i, value)
            else:
                text(box.x + 6, box.y + 12, lines[0], bold=True)
            continue
        rect(box, FILLS[box.kind])
        width = 0.5 * _FONT * len(box.label)  # Helvetica's average advance
        text(box.x + (box.w - width) / 2, box.y + box.h / 2 + 3, box.label)
    for item in drawing.texts:
        text(item.x, item.y, item.text, item.size, item.bold)
    content = zlib.compress("\n".join(ops).encode("cp1252"))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {drawing.width:.0f} {h:.0f}] "
            "/Resources << /Font << /F1 5 0 R /F2 6 0 R >> >> /Contents 4 0 R >>"
        ).encode(),
        f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode()
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    ).encode()
    return bytes(out)


# --- Graphviz ------------------------------------------------------------------------------


def to_dot(fabric: Fabric, max_hosts: int = DEFAULT_MAX_HOSTS) -> str:
    """The topology in Graphviz DOT: a cluster per host, a rank per network tier, edges
    coloured by link class (``dot -Tsvg``, ``-Tpdf`` lay it out)."""
    hosts, left_out = drawn_hosts(fabric, max(1, max_hosts))
    tiers = _network_reached(fabric, hosts)
    out = [
        "graph fabric {",
        f"  label={_dot_quote(_title(fabric, left_out))}; labelloc=t; fontname=Helvetica;",
        "  rankdir=TB; newrank=true; nodesep=0.15; ranksep=0.6;",
        '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];',
        "  edge [penwidth=1.2];",
    ]
    drawn: set[int] = set()
    prefixes = _prefixes(fabric)
    for node in hosts:
        out.append(f"  subgraph cluster_n{node} {{")
        out.append(
            f"    label={_dot_quote(fabric.node_label(node))}; "
            'style="rounded,filled"; fillcolor="#F7F7F7";'
        )
        devs = fabric.host_device_ids(node)
        ids = devs.tolist()
        for dev, kind, number in zip(
            ids, fabric.dev_kind[devs].tolist(), fabric.dev_index[devs].tolist()
        ):
            fill = FILLS[_KIND_STYLE.get(kind, "scaleup")]
            label = _dot_quote(f"{prefixes[kind]}{number}")
            out.append(f'    d{dev} [label={label}, fillcolor="{fill}"];')
        drawn.update(ids)
        out.append("  }")
    for domain in sorted({n // fabric.hosts_per_domain for n in hosts}):
        if fabric.hosts_per_domain == 1:
            break
        for dev in (int(d) for d in fabric.domain_device_ids(domain)):
            label = f"d{domain} {fabric.scaleup_label}"
            out.append(f'  d{dev} [label={_dot_quote(label)}, fillcolor="{FILLS["scaleup"]}"];')
            drawn.add(dev)
    if left_out:
        out.append(
            f'  more [label="{left_out} more hosts, wired as these", style=dashed, shape=box];'
        )
    for tier in tiers:
        shown = [d for d in tier if d >= 0]
        names = [f"d{d}" for d in shown]
        for dev in shown:
            label = fabric.device_name(dev)
            out.append(f'  d{dev} [label={_dot_quote(label)}, fillcolor="{FILLS["switch"]}"];')
            drawn.add(dev)
        if tier and tier[-1] < 0:
            key = f"more_{shown[0]}"
            out.append(f'  {key} [label="+{-tier[-1] - len(shown)} more", style=dashed];')
            names.append(key)
        out.append(f"  {{ rank=same; {'; '.join(names)}; }}")
    classes = _link_classes(fabric)
    kinds = _kinds_of(fabric, drawn)
    height = {dev: _HEIGHT_OF[kind] for dev, kind in kinds.items()}
    switches = _network_switches(kinds)
    for (a, b), (gen, count, _bw) in sorted(_pairs(fabric, drawn).items()):
        cls = classes[gen] if gen in classes else link_class(fabric, gen)
        colour = CLASS_COLOURS[cls]
        # The higher device first (the pair's order on a tie): dot ranks tails higher.
        upper, lower = (b, a) if height[b] > height[a] else (a, b)
        if count > 1 and a in switches and b in switches:
            out.append(f'  d{upper} -- d{lower} [color="{colour}", label="x{count}"];')
        else:
            out.append(f'  d{upper} -- d{lower} [color="{colour}"];')
    for cls, text in _legend(fabric, [Line(0, 0, 0, 0, c) for c in CLASS_COLOURS]):
        out.append(f"  // {text}: {CLASS_COLOURS[cls]}")
    out.append("}")
    return "\n".join(out) + "\n"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
