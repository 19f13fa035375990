"""The topology map: nodes as boxes of GPUs, switches and NICs, the network below, a GPU cursor.

Hosts that share a scale-up domain (the 18 trays of a GB200 NVL72 rack) are drawn inside a
frame for their domain, with the domain's switch (named by its record: ``NVSw``,
``UALink`` ...) on the frame's first line.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fabricui.tui.glyphs import glyphs

if TYPE_CHECKING:
    from collections.abc import Iterable

    from textual import events

    from fabricui.fabric.fabric import Fabric

#: Above this many nodes the map shows a compact overview (one glyph per GPU).
DETAIL_MAX_NODES = 8
#: Row labels of the device kinds drawn inside a node box, in drawing order.
ROW_KINDS = (("GPU", 0), ("NVSw", 3), ("PCIe", 2), ("CPU", 1), ("NIC", 4))
#: ``DeviceKind.NIC``, written as ``ROW_KINDS`` writes kinds (importing the kinds loads the
#: fabric package, numpy and all).
_NIC_KIND = 4
#: Width of the row-label column inside a node box.
LABEL_W = 6
#: Text marker of a device whose links ``--health`` shows down, degraded or erroring,
#: worst first (a device or a host's NICs with several is drawn with the worst).
HEALTH_MARKERS = {"down": "x", "degraded": "~", "errors": "!"}
#: Brackets of the two devices of the narrowest hop (other path devices get ``[ ]``).
BOTTLENECK_BRACKETS = ("<", ">")
#: Heat in text as well as colour (``NO_COLOR``, screen readers): right of a device's
#: name, or in place of its glyph when zoomed out; idle and light traffic get none.
HEAT_MARKERS = {"heat-low": ".", "heat-mid": ":", "heat-high": "*", "heat-full": "#"}


@dataclass(frozen=True)
class Cell:
    """A piece of one map line."""

    text: str
    """What is drawn (a device cell is drawn with a bracket either side)."""
    role: str
    """``text``, ``dim``, ``title``, ``border``, ``gpu``, ``dev``, ``glyph``, ``node`` or
    ``nics`` (the worst ``--health`` mark of a host's NICs, on the overview)."""
    dev: int = -1
    """Device id of a device cell, else -1."""
    rank: int = -1
    """Global rank of a GPU cell, else -1."""
    node: int = -1
    """Node of a ``node`` label or ``nics`` cell, else -1."""
    devs: tuple[int, ...] = ()
    """Devices a ``nics`` cell stands for (its host's NICs), else empty."""

    @property
    def width(self) -> int:
        """Columns the cell takes (device cells add a bracket either side)."""
        return len(self.text) + (2 if self.role in ("gpu", "dev") else 0)


@dataclass
class MapLayout:
    """Lines of cells for one width and zoom, plus where each GPU is."""

    lines: list[list[Cell]] = field(default_factory=list)
    """The map, line by line."""
    gpu_at: dict[int, tuple[int, int]] = field(default_factory=dict)
    """rank -> (line, column) of its cell."""
    width: int = 0
    """Widest line [columns]."""

    def add(self, cells: list[Cell]) -> None:
        """Append a line, recording its GPU cells."""
        y = len(self.lines)
        x = 0
        for cell in cells:
            if cell.rank >= 0:
                self.gpu_at[cell.rank] = (y, x)
            x += cell.width
        self.width = max(self.width, x)
        self.lines.append(cells)

    def gpus_on_line(self, y: int) -> list[tuple[int, int]]:
        """(column, rank) of the GPU cells of line ``y``."""
        out, x = [], 0
        for cell in self.lines[y]:
            if cell.rank >= 0:
                out.append((x, cell.rank))
            x += cell.width
        return out

    def cell_at(self, x: int, y: int) -> Cell | None:
        """The cell covering column ``x`` of line ``y``."""
        if not 0 <= y < len(self.lines):
            return None
        left = 0
        for cell in self.lines[y]:
            if left <= x < left + cell.width:
                return cell
            left += cell.width
        return None


def _pad(cells: list[Cell], width: int) -> list[Cell]:
    used = sum(c.width for c in cells)
    return cells + ([Cell(" " * (width - used), "text")] if width > used else [])


def _row_label(fabric: Fabric, label: str, kind: int) -> str:
    """A row's label: the scale-up switch is named by its record (``NVSw``, ``UALink``)."""
    return fabric.scaleup_label if kind == 3 else label


def _label_width(fabric: Fabric) -> int:
    """Width of the row-label column: room for the longest label and a space."""
    return max(LABEL_W, len(fabric.scaleup_label) + 2)


def _device_rows(fabric: Fabric, node: int) -> list[tuple[str, list[int]]]:
    """(label, device ids) for each kind present in a node (host), in ``ROW_KINDS`` order."""
    ids = fabric.host_device_ids(node)
    kinds = fabric.dev_kind[ids]
    rows = []
    for label, kind in ROW_KINDS:
        local = [int(ids[i]) for i in range(ids.shape[0]) if int(kinds[i]) == kind]
        if local:
            rows.append((_row_label(fabric, label, kind), local))
    return rows


def host_nics(fabric: Fabric, node: int) -> list[int]:
    """Device ids of a node's NICs, in the order its box numbers them."""
    ids = fabric.host_device_ids(node)
    return [int(d) for d in ids if int(fabric.dev_kind[d]) == _NIC_KIND]


def worst_mark(marks: Iterable[str | None]) -> str | None:
    """The worst of some ``--health`` marks (``down`` over ``degraded`` over ``errors``),
    None when there is none: what one glyph standing for several devices shows."""
    found = {m for m in marks if m in HEALTH_MARKERS}
    return next((m for m in HEALTH_MARKERS if m in found), None)


def _cell_of(fabric: Fabric, dev: int, role: str, width: int) -> Cell:
    index = str(int(fabric.dev_index[dev])).rjust(width)
    rank = -1
    if role == "gpu":
        node = int(fabric.dev_node[dev])
        rank = node * fabric.gpus_per_node + int(fabric.dev_index[dev])
    return Cell(index, role, dev=dev, rank=rank)


def _row_notes(fabric: Fabric) -> dict[str, str]:
    spec = fabric.spec
    notes: dict[str, str] = {}
    if spec.intra.link:
        notes[fabric.scaleup_label] = spec.intra.link
    notes["PCIe"] = spec.intra.host_link or fabric.gpu.pcie
    if spec.net is not None:
        notes["NIC"] = spec.net.link
    return notes


def node_span(fabric: Fabric, members: list[int]) -> str:
    """``n0-n15``, or ``luna-0001..luna-0016`` on an imported cluster (its host names)."""
    first, last = fabric.node_label(members[0]), fabric.node_label(members[-1])
    if len(members) == 1:
        return first
    joint = "-" if first == f"n{members[0]}" and last == f"n{members[-1]}" else ".."
    return f"{first}{joint}{last}"


def node_box(fabric: Fabric, node: int, inner: int) -> list[list[Cell]]:
    """One node as a box: a title line, one line (or more) per device kind, a bottom line."""
    title = f" {fabric.node_label(node)} "[: max(3, inner - 1)]
    tl, tr, br, bl, h, v = glyphs().box_frame
    lines = [
        [
            Cell(tl + h, "border"),
            Cell(title, "title"),
            Cell(h * (inner - len(title) - 1) + tr, "border"),
        ]
    ]
    notes = _row_notes(fabric)
    label_w = _label_width(fabric)
    for label, devs in _device_rows(fabric, node):
        role = "gpu" if label == "GPU" else "dev"
        digits = len(str(len(devs) - 1))
        cells = [_cell_of(fabric, dev, role, digits) for dev in devs]
        per_line = max(1, (inner - label_w) // (digits + 2))
        for start in range(0, len(cells), per_line):
            chunk = cells[start : start + per_line]
            head = Cell((" " + label if start == 0 else "").ljust(label_w), "dim")
            row = [head, *chunk]
            used = sum(c.width for c in row)
            note = notes.get(label, "") if start == 0 else ""
            if note and used + len(note) + 1 <= inner:
                row.append(Cell(" " * (inner - used - len(note)) + note, "dim"))
            lines.append([Cell(v, "border"), *_pad(row, inner), Cell(v, "border")])
    lines.append([Cell(bl + h * inner + br, "border")])
    return lines


def _box_inner(fabric: Fabric, width: int) -> int:
    rows = _device_rows(fabric, 0)
    widest = max(len(devs) * (len(str(len(devs) - 1)) + 2) for _, devs in rows)
    return max(18, min(widest + _label_width(fabric) + 1, width - 2))


def _domain_head(fabric: Fabric, domain: int, nodes: list[int], width: int) -> list[Cell]:
    """First line of a domain's frame: its name, hosts, and its shared switch as a cell."""
    switches = [int(d) for d in fabric.domain_device_ids(domain)]
    span = node_span(fabric, nodes)
    tl, _tr, _br, _bl, h, _v = glyphs().double_frame
    title = f"{tl}{h} d{domain} ({span}) {fabric.scaleup_label} "
    cells = [Cell(title, "border")]
    cells += [_cell_of(fabric, dev, "dev", 1) for dev in switches]
    note = f" {fabric.spec.intra.link or ''} "
    used = sum(c.width for c in cells)
    if used + len(note) + 1 > width:
        note = " "  # a narrow map drops the link name rather than run past its width
    cells.append(Cell(note, "dim"))
    cells.append(Cell(h * max(1, width - used - len(note)), "border"))
    return cells


def _domain_foot(width: int) -> list[Cell]:
    _tl, _tr, _br, bl, h, _v = glyphs().double_frame
    return [Cell(bl + h * max(1, width - 1), "border")]


def _network_lines(fabric: Fabric, width: int) -> list[list[Cell]]:
    from fabricui.fabric.kinds import DeviceKind

    lines: list[list[Cell]] = []
    net = fabric.spec.net
    # Every switch tier, so that each switch a path crosses or ``--health`` marks is drawn
    # (a dragonfly has routers only; an imported cluster may have cores).
    tiers = (
        ("Leaf", DeviceKind.LEAF),
        ("Spine", DeviceKind.SPINE),
        ("Core", DeviceKind.CORE),
        ("Router", DeviceKind.ROUTER),
    )
    for label, kind in tiers:
        devs = [int(d) for d in fabric.devices_of_kind(kind)]
        if not devs:
            continue
        if fabric.switch_names:  # an imported cluster: its switches' own names
            names = [fabric.device_name(dev) for dev in devs]
            digits = max(len(name) for name in names)
            # The padding goes after the cell: brackets close on the name (``<LG01-08>``).
            cells = [
                [Cell(name, "dev", dev=dev)]
                + [Cell(" " * (digits - len(name)), "text")] * (len(name) < digits)
                for dev, name in zip(devs, names)
            ]
        else:
            digits = len(str(len(devs) - 1))
            cells = [[_cell_of(fabric, dev, "dev", digits)] for dev in devs]
        per_line = max(1, (width - LABEL_W - 1) // (digits + 2))
        for start in range(0, len(cells), per_line):
            head = Cell((label if start == 0 else "").ljust(LABEL_W + 1), "dim")
            lines.append([head, *(c for cell in cells[start : start + per_line] for c in cell)])
    if lines and net is not None:
        leafs = len(fabric.devices_of_kind(DeviceKind.LEAF))
        spines = len(fabric.devices_of_kind(DeviceKind.SPINE))
        cores = len(fabric.devices_of_kind(DeviceKind.CORE))
        routers = len(fabric.devices_of_kind(DeviceKind.ROUTER))
        parts = [f"network: {net.link}"]
        if leafs:
            alone = " (no spines)" * (not spines)
            parts.append(f"{leafs} leaf switch{'es' * (leafs != 1)}{alone}")
        if spines:
            parts.append(f"{spines} spine{'s' * (spines != 1)}")
        if cores:
            parts.append(f"{cores} core{'s' * (cores != 1)}")
        if routers:
            parts.append(f"{routers} router{'s' * (routers != 1)}")
            per_group = fabric.dragonfly.routers_per_group if fabric.dragonfly else 0
            if per_group and routers > per_group:
                parts[-1] += f" in {routers // per_group} groups"
        plan = dict(fabric.network_plan)
        if "leaf oversubscription" in plan:
            parts.append(f"{plan['leaf oversubscription']}:1 at the leafs")
        summary = [[Cell(text, "dim")] for text in _packed(parts, width)]
        if "straddle" in plan.get("scalable unit", ""):
            text = f"scalable unit: {plan['scalable unit']}"
            summary += [[Cell(line, "dim")] for line in textwrap.wrap(text, max(20, width))]
        lines[:0] = summary
    return lines


def _packed(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by ", " into lines of at most ``width`` (a part never split), so a
    narrow map wraps the network's summary instead of cutting it off."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) + 1 <= width:  # room for a last ","
            lines[-1] += f", {part}"
        else:
            if lines:
                lines[-1] += ","
            lines.append(part)
    return lines


def index_runs(indexes: list[int]) -> str:
    """Sorted indexes with consecutive runs as ranges: ``8-15``, ``0 2 4-6`` (a group's
    leaf list fits the narrow map instead of being cut mid-number)."""
    parts: list[str] = []
    start = prev = None
    for i in [*indexes, None]:
        if i is not None and prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = i
    return " ".join(parts[:8]) + (" ..." if len(parts) > 8 else "")


def _leaf_groups(
    fabric: Fabric, nodes: list[int], cut: Iterable[tuple[int, int]] = ()
) -> list[tuple[str, list[int]]]:
    """Runs of consecutive nodes cabled to the same leaf switches, with a header each.

    ``cut``: (device, device) of cables ``--health`` removed, counted as cabled: a host
    whose NIC cable is down stays in its group (its mark says the loss), not a group of
    its own between two halves of the others."""
    from fabricui.fabric.kinds import DeviceKind

    kind = fabric.dev_kind
    src, dst = fabric.link_src, fabric.link_dst
    mask = (kind[src] == DeviceKind.NIC) & (kind[dst] == DeviceKind.LEAF)
    pairs = list(zip(src[mask].tolist(), dst[mask].tolist()))
    for a, b in cut:
        if min(a, b) >= 0 and max(a, b) < fabric.n_devices:
            nic, leaf = (a, b) if int(kind[a]) == DeviceKind.NIC else (b, a)
            if int(kind[nic]) == DeviceKind.NIC and int(kind[leaf]) == DeviceKind.LEAF:
                pairs.append((nic, leaf))
    leafs: dict[int, set[int]] = {}
    for nic, leaf in pairs:
        leafs.setdefault(int(fabric.dev_node[nic]), set()).add(int(fabric.dev_index[leaf]))
    groups: list[tuple[frozenset[int], list[int]]] = []
    for node in nodes:
        key = frozenset(leafs.get(node, set()))
        if groups and groups[-1][0] == key:
            groups[-1][1].append(node)
        else:
            groups.append((key, [node]))
    if len(groups) > max(1, len(nodes) // 4):
        groups = [(frozenset(), nodes[i : i + 16]) for i in range(0, len(nodes), 16)]
    out = []
    for key, members in groups:
        span = node_span(fabric, members)
        if key:
            shown = sorted(key)[:8]
            if fabric.switch_names:
                leaf_devs = fabric.devices_of_kind(DeviceKind.LEAF)
                words = [fabric.device_name(int(leaf_devs[i])) for i in shown]
                listed = " ".join(words) + (" ..." if len(key) > 8 else "")
            else:
                listed = index_runs(sorted(key))
            out.append((f"{span} {glyphs().dot} leafs {listed}", members))
        else:
            out.append((span, members))
    return out


def build_layout(
    fabric: Fabric,
    width: int,
    zoom: int | None = None,
    nic_column: bool = False,
    removed: tuple[tuple[int, int], ...] = (),
) -> MapLayout:
    """Lay the fabric out for ``width`` columns: node boxes, or an overview of big fabrics.

    Args:
        fabric: The fabric.
        width: Columns available.
        zoom: A node to draw alone (its box and the network), or None for every node.
        nic_column: On the overview, give each host a ``nics`` cell right of its GPUs:
            the overview draws no NICs, and ``--health`` marks some.
        removed: (device, device) of the cables ``--health`` removed: the overview
            groups hosts by their leaves as cabled, these included.

    Returns:
        The layout.
    """
    width = max(24, width)
    layout = MapLayout()
    nodes = [zoom] if zoom is not None else list(range(fabric.nodes))
    hosts = fabric.hosts_per_domain
    # Runs of nodes by scale-up domain; one run of every node when a domain is one host.
    runs: list[tuple[int | None, list[int]]] = [(None, nodes)]
    if hosts > 1:
        runs = []
        for node in nodes:
            if runs and runs[-1][0] == node // hosts:
                runs[-1][1].append(node)
            else:
                runs.append((node // hosts, [node]))
    if len(nodes) <= DETAIL_MAX_NODES:
        inner = _box_inner(fabric, width)
        per_row = max(1, (width + 1) // (inner + 3))
        for domain, members in runs:
            if domain is not None:
                layout.add(_domain_head(fabric, domain, members, width))
            for start in range(0, len(members), per_row):
                boxes = [node_box(fabric, n, inner) for n in members[start : start + per_row]]
                for parts in zip(*boxes):
                    line: list[Cell] = []
                    for i, part in enumerate(parts):
                        if i:
                            line.append(Cell(" ", "text"))
                        line.extend(part)
                    layout.add(line)
            if domain is not None:
                layout.add(_domain_foot(width))
    else:
        label_w = max(len(fabric.node_label(n)) for n in nodes) + 1
        # The NIC mark keeps two spaces from the next host: a mark left of a name marks
        # that name, as in the boxes (``~0``).
        seg_w = label_w + fabric.gpus_per_node + 2 + 2 * nic_column
        per_row = max(1, width // seg_w)
        if hosts > 1:
            groups = [
                (f"d{d} {glyphs().dot} {fabric.scaleup_label} domain {node_span(fabric, m)}", m, d)
                for d, m in runs
            ]
        else:
            groups = [(h, members, None) for h, members in _leaf_groups(fabric, nodes, removed)]
        for header, members, domain in groups:
            if domain is not None:
                layout.add(_domain_head(fabric, domain, members, width))
            else:  # cut to the map, with a mark: a header wider would scroll the map sideways
                cut = glyphs().ellipsis
                fit = header if len(header) <= width else header[: width - len(cut)] + cut
                layout.add([Cell(fit, "dim")])
            for start in range(0, len(members), per_row):
                line = []
                for node in members[start : start + per_row]:
                    line.append(Cell(fabric.node_label(node).ljust(label_w), "node", node=node))
                    base = node * fabric.gpus_per_node
                    for g in range(fabric.gpus_per_node):
                        dev = int(fabric.gpu_dev[base + g])
                        line.append(Cell(glyphs().dot, "glyph", dev=dev, rank=base + g))
                    if nic_column:
                        nics = tuple(host_nics(fabric, node))
                        line.append(Cell(" ", "text"))
                        line.append(Cell(" ", "nics", node=node, devs=nics))
                    line.append(Cell("  ", "text"))
                layout.add(line)
    net = _network_lines(fabric, width)
    if net:
        layout.add([])
        for line in net:
            layout.add(line)
    return layout


def heat_level(utilization: float) -> str:
    """The colour class of a utilisation: idle and light traffic dim, then low, mid, high,
    and full (a saturated link, where max-min fairness throttles flows)."""
    if utilization < 0.05:
        return "dim"
    if utilization < 0.5:
        return "heat-low"
    if utilization < 0.8:
        return "heat-mid"
    if utilization < 0.999:
        return "heat-high"
    return "heat-full"


class TopologyMap(ScrollView, can_focus=True):
    """The fabric drawn as node boxes (or an overview of big fabrics) with a GPU cursor.

    Arrow keys move the cursor over GPUs; a click moves it too and posts ``GpuClicked``.
    Devices on the routed path are bracketed and coloured; the source and destination GPUs
    and the narrowest hop's devices get their own colours.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "move(-1)", "GPU left", show=False, id="map.left", tooltip="Previous GPU"),
        Binding("right", "move(1)", "GPU right", show=False, id="map.right", tooltip="Next GPU"),
        Binding(
            "up",
            "vertical(-1)",
            "GPU up",
            show=False,
            id="map.up",
            tooltip="GPU above (above the first: scroll the map up a line)",
        ),
        Binding(
            "down",
            "vertical(1)",
            "GPU down",
            show=False,
            id="map.down",
            tooltip="GPU below (below the last: scroll down a line, to the switches)",
        ),
        Binding(
            "left_square_bracket",
            "node(-1)",
            "Prev node",
            show=False,
            id="map.prev_node",
            tooltip="Same GPU on the previous node",
        ),
        Binding(
            "right_square_bracket",
            "node(1)",
            "Next node",
            show=False,
            id="map.next_node",
            tooltip="Same GPU on the next node",
        ),
        Binding(
            "home",
            "first",
            "First GPU",
            show=False,
            id="map.first",
            tooltip="GPU 0 (on it: the top of the map)",
        ),
        Binding(
            "end",
            "last",
            "Last GPU",
            show=False,
            id="map.last",
            tooltip="The last GPU (on it: the end of the map, its switch rows)",
        ),
    ]
    """Cursor keys (the screen adds source, destination and zoom)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "topology-map--gpu",
        "topology-map--dev",
        "topology-map--path",
        "topology-map--src",
        "topology-map--dst",
        "topology-map--bottleneck",
        "topology-map--cursor",
        "topology-map--title",
        "topology-map--border",
        "topology-map--dim",
        "topology-map--job",
        "topology-map--heat-low",
        "topology-map--heat-mid",
        "topology-map--heat-high",
        "topology-map--heat-full",
        "topology-map--health-down",
        "topology-map--health-degraded",
        "topology-map--health-errors",
    }
    """Styles of the map's parts (see ``DEFAULT_CSS``)."""

    DEFAULT_CSS = """
    TopologyMap {
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    TopologyMap > .topology-map--gpu { color: $text; }
    TopologyMap > .topology-map--dev { color: $text-muted; }
    TopologyMap > .topology-map--path { color: yellow; text-style: bold; }
    TopologyMap > .topology-map--src { color: lime; text-style: bold underline; }
    TopologyMap > .topology-map--dst { color: magenta; text-style: bold underline; }
    TopologyMap > .topology-map--bottleneck { color: red; text-style: bold; }
    TopologyMap > .topology-map--cursor { text-style: reverse; }
    TopologyMap > .topology-map--title { color: $primary; text-style: bold; }
    TopologyMap > .topology-map--border { color: $primary-darken-1; }
    TopologyMap > .topology-map--dim { color: $text-muted; }
    TopologyMap > .topology-map--job { text-style: underline; color: $accent; }
    TopologyMap > .topology-map--heat-low { color: $success; }
    TopologyMap > .topology-map--heat-mid { color: $warning; }
    TopologyMap > .topology-map--heat-high { color: $error; }
    TopologyMap > .topology-map--heat-full { color: $error; text-style: bold reverse; }
    TopologyMap > .topology-map--health-down { color: $error; text-style: bold strike; }
    TopologyMap > .topology-map--health-degraded { color: $warning; text-style: bold; }
    TopologyMap > .topology-map--health-errors { color: $warning; }
    """

    cursor: reactive[int] = reactive(0, init=False, repaint=False)
    """Global rank under the cursor."""

    class CursorMoved(Message):
        """The cursor moved to another GPU."""

        def __init__(self, rank: int) -> None:
            self.rank = rank
            """The rank now under the cursor."""
            super().__init__()

    class GpuClicked(Message):
        """A GPU was clicked with the mouse."""

        def __init__(self, rank: int) -> None:
            self.rank = rank
            """The rank clicked."""
            super().__init__()

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.fabric: Fabric | None = None
        """The fabric drawn (None until loaded)."""
        self.zoom: int | None = None
        """The node drawn alone, or None."""
        self.src: int | None = None
        """Source rank."""
        self.dst: int | None = None
        """Destination rank."""
        self.path_devs: frozenset[int] = frozenset()
        """Devices on the routed path."""
        self.bottleneck_devs: frozenset[int] = frozenset()
        """The two devices of the narrowest hop."""
        self.job_ranks: frozenset[int] = frozenset()
        """GPUs of a placed job (``--hosts``), underlined."""
        self.heat: Any = None
        """(n_devices,) utilisation 0..1 under a traffic pattern, or None (no heat)."""
        self.health: dict[int, str] = {}
        """Device -> ``down``, ``degraded`` or ``errors`` from ``--health`` (drawn with a
        marker, ``HEALTH_MARKERS``, and a colour)."""
        self.cut: tuple[tuple[int, int], ...] = ()
        """(device, device) of the cables ``--health`` removed (the overview's groups count
        them as cabled)."""
        self._layout = MapLayout()
        self._layout_key: tuple[object, ...] | None = None
        self._strips: dict[int, Strip] = {}
        """Drawn layout lines by index, uncropped: a cursor move redraws two lines, not all."""
        self._styles: dict[str, Style] = {}
        """Component styles by part name (cleared when the theme or CSS changes)."""

    # --- state from the screen -------------------------------------------------------------

    def show_fabric(self, fabric: Fabric, cursor: int = 0) -> None:
        """Draw another fabric, with the cursor on ``cursor``."""
        self.fabric = fabric
        self.zoom = None
        self.src = self.dst = None
        self.path_devs = self.bottleneck_devs = frozenset()
        # Another fabric's devices: ``set_heat`` and ``set_health`` give this one's.
        self.heat = None
        self.health = {}
        self.cut = ()
        self._layout_key = None
        self.set_reactive(TopologyMap.cursor, min(max(cursor, 0), fabric.n_gpus - 1))
        self._relayout()

    def set_marks(
        self,
        src: int | None,
        dst: int | None,
        path_devs: frozenset[int] = frozenset(),
        bottleneck_devs: frozenset[int] = frozenset(),
    ) -> None:
        """Mark the source, destination and the path's devices."""
        self.src, self.dst = src, dst
        self.path_devs, self.bottleneck_devs = path_devs, bottleneck_devs
        self._strips.clear()
        self.refresh()

    def set_job(self, ranks: frozenset[int]) -> None:
        """Underline a job's GPUs (empty: none)."""
        self.job_ranks = ranks
        self._strips.clear()
        self.refresh()

    def set_heat(self, utilization: Any) -> None:
        """Colour every device by how busy its busiest link is (None: no heat)."""
        self.heat = utilization
        self._strips.clear()
        self.refresh()

    def set_health(self, marks: dict[int, str], cut: tuple[tuple[int, int], ...] = ()) -> None:
        """Mark devices whose links are down, degraded or erroring (empty: none); the
        overview gives each host a NIC mark when some NIC is marked, and groups hosts by
        their leaves as cabled (``cut``: the cables ``--health`` removed)."""
        self.health = marks
        self.cut = cut
        self._strips.clear()
        self._relayout()

    @property
    def nic_column(self) -> bool:
        """Whether the map is the overview with a NIC mark right of each host's GPUs (the
        overview draws no NICs, and ``--health`` marks some)."""
        return self.overview and self._marks_nics()

    def _marks_nics(self) -> bool:
        fabric = self.fabric
        if fabric is None or not self.health:
            return False
        n = fabric.n_devices
        return any(0 <= d < n and int(fabric.dev_kind[d]) == _NIC_KIND for d in self.health)

    def nic_marks(self, node: int) -> list[tuple[int, str]]:
        """(NIC index on its host, mark) of the node's NICs ``--health`` marks, in order."""
        fabric = self.fabric
        if fabric is None or not self.health:
            return []
        nics = host_nics(fabric, node)
        return [(i, self.health[d]) for i, d in enumerate(nics) if d in self.health]

    @property
    def overview(self) -> bool:
        """Whether the map is the overview of a big fabric (one glyph per GPU), not boxes."""
        fabric = self.fabric
        return fabric is not None and self.zoom is None and fabric.nodes > DETAIL_MAX_NODES

    def set_zoom(self, node: int | None) -> None:
        """Draw one node alone (with the network), or every node when None."""
        self.zoom = node
        self._relayout()

    @property
    def layout_lines(self) -> MapLayout:
        """The current layout (for tests and the text snapshot)."""
        return self._layout

    # --- layout ----------------------------------------------------------------------------

    def _relayout(self) -> None:
        if self.fabric is None:
            return
        width = max(24, self.scrollable_content_region.width or self.size.width or 80)
        nic_column = self._marks_nics()
        key = (id(self.fabric), width, self.zoom, nic_column, self.cut)
        if key != self._layout_key:
            self._layout = build_layout(self.fabric, width, self.zoom, nic_column, self.cut)
            self._layout_key = key
            self._strips.clear()
            self.virtual_size = Size(self._layout.width, len(self._layout.lines))
        self.refresh()
        self.call_after_refresh(self._scroll_to_cursor)

    def on_resize(self) -> None:
        """Lay out again for the new width."""
        self._relayout()

    def _scroll_to_cursor(self) -> None:
        pos = self._layout.gpu_at.get(self.cursor)
        if pos is None:
            return
        y, x = pos
        self.scroll_to_region(Region(x, max(0, y - 1), 4, 3), animate=False, immediate=True)

    # --- rendering -------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        """Forget drawn lines and styles: the theme or CSS changed."""
        super().notify_style_update()
        self._styles = {}
        self._strips = {}

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(
                f"topology-map--{name}", partial=True
            )
        return style

    def render_line(self, y: int) -> Strip:
        """Draw one line of the map, scrolled (lines are drawn once and then cropped)."""
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        base = self.rich_style
        if index >= len(self._layout.lines):
            return Strip.blank(self.size.width, base)
        strip = self._strips.get(index)
        if strip is None:
            segments = []
            for cell in self._layout.lines[index]:
                segments.extend(self._cell_segments(cell, base))
            strip = self._strips[index] = Strip(segments)
        strip = strip.crop(scroll_x, scroll_x + self.size.width)
        return strip.extend_cell_length(self.size.width, base)

    def _refresh_rank(self, rank: int) -> None:
        """Redraw the line holding ``rank``'s cell only."""
        pos = self._layout.gpu_at.get(rank)
        if pos is None:
            return
        self._strips.pop(pos[0], None)
        self.refresh_line(pos[0])

    def _cell_segments(self, cell: Cell, base: Style) -> list[Segment]:
        role = cell.role
        if role in ("text", "dim", "title", "border"):
            style = base if role == "text" else base + self._style(role)
            return [Segment(cell.text, style)]
        if role == "node":
            on_path = self._node_on_path(cell.node)
            style = base + self._style("path" if on_path else "dim")
            return [Segment(cell.text, style)]
        if role == "nics":
            return [self._nics_segment(cell, base)]
        on_path = cell.dev in self.path_devs
        style = base + self._style("gpu" if cell.rank >= 0 else "dev")
        if cell.rank >= 0 and cell.rank in self.job_ranks:
            style += self._style("job")
        heat_mark = None
        if self.heat is not None and 0 <= cell.dev < len(self.heat):
            level = heat_level(float(self.heat[cell.dev]))
            style += self._style(level)
            heat_mark = HEAT_MARKERS.get(level)
        if on_path:
            style += self._style("path")
        if cell.dev in self.bottleneck_devs:
            style += self._style("bottleneck")
        text = cell.text
        mark = self.health.get(cell.dev) if self.health else None
        if mark is not None and self.heat is None:
            # Under a heat the colours are the heat's, as the legend says (the health heat
            # colours marks by how bad they are); the marker stays in the text.
            style += self._style(f"health-{mark}")
        if cell.rank >= 0 and cell.rank == self.src:
            style += self._style("src")
        elif cell.rank >= 0 and cell.rank == self.dst:
            style += self._style("dst")
        if role == "glyph":
            if cell.rank == self.src:
                text = "S"
            elif cell.rank == self.dst:
                text = "D"
            elif mark is not None:
                text = HEALTH_MARKERS[mark]
            elif on_path:
                text = glyphs().square
            elif heat_mark is not None:
                text = heat_mark
            if cell.rank == self.cursor:
                style += self._style("cursor")
            return [Segment(text, style)]
        left, right = ("[", "]") if on_path else (" ", heat_mark or " ")
        if cell.dev in self.bottleneck_devs:  # marked in text too: NO_COLOR drops colours
            left, right = BOTTLENECK_BRACKETS
        if mark is not None:  # in text too, not only colour (NO_COLOR, screen readers)
            left = HEALTH_MARKERS[mark]
        if cell.rank >= 0 and cell.rank == self.cursor:
            return [
                Segment(left, style),
                Segment(text, style + self._style("cursor")),
                Segment(right, style),
            ]
        return [Segment(f"{left}{text}{right}", style)]

    def _nics_segment(self, cell: Cell, base: Style) -> Segment:
        """A host's NICs on the overview: the worst ``--health`` mark among them, coloured
        as a NIC with that mark would be; blank when none is marked."""
        marks = {d: self.health[d] for d in cell.devs if d in self.health}
        mark = worst_mark(marks.values())
        if mark is None:
            return Segment(cell.text, base)
        style = base + self._style("dev")
        if self.heat is not None:
            worst = [d for d, m in marks.items() if m == mark and 0 <= d < len(self.heat)]
            if worst:
                style += self._style(heat_level(max(float(self.heat[d]) for d in worst)))
        if any(d in self.path_devs for d in cell.devs):
            style += self._style("path")
        if any(d in self.bottleneck_devs for d in cell.devs):
            style += self._style("bottleneck")
        if self.heat is None:
            style += self._style(f"health-{mark}")
        return Segment(HEALTH_MARKERS[mark], style)

    def _node_on_path(self, node: int) -> bool:
        fabric = self.fabric
        if fabric is None or not self.path_devs:
            return False
        return any(int(fabric.dev_node[d]) == node for d in self.path_devs)

    def render_text(self) -> str:
        """The whole map as plain text (``[ ]`` mark the path, ``< >`` its bottleneck; no
        cursor)."""
        out = []
        for line in self._layout.lines:
            parts = []
            for cell in line:
                parts.append("".join(s.text for s in self._cell_segments(cell, Style())))
            out.append("".join(parts).rstrip())
        return "\n".join(out)

    # --- cursor ----------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        """Redraw the two lines involved and keep the cursor in view; tell the screen."""
        self._refresh_rank(old)
        self._refresh_rank(new)
        self._scroll_to_cursor()
        self.post_message(self.CursorMoved(new))

    def _n_gpus(self) -> int:
        return self.fabric.n_gpus if self.fabric is not None else 1

    def action_move(self, step: int) -> None:
        """Move the cursor to the previous or next GPU (wrapping)."""
        n = self._n_gpus()
        rank = (self.cursor + step) % n
        if self.zoom is not None and self.fabric is not None:
            g = self.fabric.gpus_per_node
            rank = self.zoom * g + (self.cursor - self.zoom * g + step) % g
        self.cursor = rank

    def action_vertical(self, step: int) -> None:
        """Move the cursor to the nearest GPU on the line above or below; past the last
        (or first) line of GPUs, or towards a cursor scrolled out of view, scroll the map
        a line instead: the switch rows under the hosts, where ``--health`` marks leaves
        and spines, are read without a mouse."""
        pos = self._layout.gpu_at.get(self.cursor)
        if pos is None:
            return
        y, x = pos
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        if (step < 0 and y < top) or (step > 0 and y >= top + height):
            # Scrolled past the cursor (reading the switches): scroll back a line at a
            # time, as a pager does, rather than jump to the cursor.
            self.scroll_relative(y=step, animate=False, immediate=True)
            return
        line = y + step
        while 0 <= line < len(self._layout.lines):
            gpus = self._layout.gpus_on_line(line)
            if gpus:
                self.cursor = min(gpus, key=lambda item: abs(item[0] - x))[1]
                return
            line += step
        self.scroll_relative(y=step, animate=False, immediate=True)

    def action_node(self, step: int) -> None:
        """Move the cursor to the same GPU of the previous or next node (zoomed: zoom on
        that node instead of this one)."""
        if self.fabric is None:
            return
        rank = (self.cursor + step * self.fabric.gpus_per_node) % self._n_gpus()
        if self.zoom is not None:
            self.zoom = rank // self.fabric.gpus_per_node
            self._relayout()
        self.cursor = rank

    def action_first(self) -> None:
        """Cursor on the first GPU shown; already there, the top of the map."""
        first = min(self._layout.gpu_at) if self._layout.gpu_at else 0
        if self.cursor == first:
            self.scroll_home(animate=False, immediate=True)
        self.cursor = first

    def action_last(self) -> None:
        """Cursor on the last GPU shown; already there, the end of the map (its switch
        rows: the cursor keys move over GPUs only)."""
        last = max(self._layout.gpu_at) if self._layout.gpu_at else 0
        if self.cursor == last:
            self.scroll_end(animate=False, immediate=True)
        self.cursor = last

    def on_click(self, event: events.Click) -> None:
        """Put the cursor on the clicked GPU and tell the screen."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        scroll_x, scroll_y = self.scroll_offset
        cell = self._layout.cell_at(offset.x + scroll_x, offset.y + scroll_y)
        if cell is None or cell.rank < 0:
            return
        event.stop()
        self.cursor = cell.rank
        self.post_message(self.GpuClicked(cell.rank))
