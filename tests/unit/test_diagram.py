"""The diagram's per-kind tables and remembered SVG pieces write what each element's own
lookups write: labels, styles, classes, bundles and edge order device by device."""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape

import pytest

from fabricui import api
from fabricui.fabric.kinds import NETWORK_SWITCHES, DeviceKind
from fabricui.render.diagram import (
    _HEIGHTS,
    _kinds_of,
    _link_classes,
    _network_switches,
    _prefixes,
    _SvgWords,
    link_class,
    to_dot,
    to_svg,
    topology_drawing,
)

#: A cluster with network bundles (``xN``), a rack whose NVSwitch is a bar under its hosts,
#: a torus, a box with PCIe switches and CPUs.
TOPOLOGIES = ["h100-ib-cluster", "gb200-nvl72", "tpu7x-4x4x4", "pcie-rtx4090x8"]


@pytest.fixture(scope="module", params=TOPOLOGIES)
def fabric(request):
    return api.load_fabric(request.param)


def test_svg_numbers_print_as_one_decimal():
    """Each value prints as ``f"{value:.1f}"``, the second time from memory too; 0.0 and
    -0.0 (one dictionary key) keep their own signs in either order."""
    words = _SvgWords()
    values = [0.0, -0.0, 0.0, 0.05, 0.25, 0.35, -0.04, 1e20, 2**53 + 1, 7, True, math.nan]
    values += [-0.0, 0.0, 12.345, 12.345, math.inf, -math.inf]
    for value in values + values:
        assert words.number(value) == f"{value:.1f}", value


def test_svg_text_is_valid_escaped_xml():
    """Text with XML's forbidden characters and markup is replaced and escaped, the same
    each time it is written."""
    words = _SvgWords()
    for _ in range(2):
        got = words.text(1.25, 2, 'a<b>&"\x01\ufffe', 8.0, bold=True, middle=True)
        shown = escape('a<b>&"\ufffd\ufffd')
        want = (
            f'<text x="1.2" y="2.0" font-size="8" font-weight="bold" text-anchor="middle">'
            f"{shown}</text>"
        )
        assert got == want
    assert words.text(0, 0, "g0") == '<text x="0.0" y="0.0" font-size="9">g0</text>'


def test_kind_tables_match_each_device(fabric):
    """Prefixes, kinds and network switches looked up once equal each device's own."""
    devices = set(range(len(fabric.dev_kind)))
    kinds = _kinds_of(fabric, devices)
    prefixes = _prefixes(fabric)
    for dev in devices:
        kind = DeviceKind(int(fabric.dev_kind[dev]))
        assert kinds[dev] == kind
        assert prefixes[kinds[dev]] == fabric.prefix_of(kind)
    switches = {d for d in devices if DeviceKind(int(fabric.dev_kind[d])) in NETWORK_SWITCHES}
    assert _network_switches(kinds) == switches
    classes = _link_classes(fabric)
    assert classes == {g: link_class(fabric, g) for g in range(len(fabric.generations))}


def test_drawing_labels_classes_and_bundles(fabric):
    """Every host device's box reads prefix and index, styled by its kind; every line
    has its generation's class and says ``xN`` only between two network switches."""
    drawing = topology_drawing(fabric, max_hosts=3)
    style = {
        DeviceKind.GPU: "gpu",
        DeviceKind.NIC: "nic",
        DeviceKind.CPU: "cpu",
        DeviceKind.PCIE_SWITCH: "pcie",
    }
    hosts = [n for n in range(fabric.nodes) if n < 2 or n == fabric.nodes - 1]
    want = set()
    for node in hosts:
        for dev in fabric.host_device_ids(node).tolist():
            kind = DeviceKind(int(fabric.dev_kind[dev]))
            label = f"{fabric.prefix_of(kind)}{int(fabric.dev_index[dev])}"
            want.add((label, style.get(kind, "scaleup")))
    drawn = {(box.label, box.kind) for box in drawing.boxes if box.kind in set(style.values())}
    assert drawn <= want and {k for k in want if k[1] != "scaleup"} <= drawn
    assert {line.link_class for line in drawing.lines} <= set(_link_classes(fabric).values())
    assert all(re.fullmatch(r"(x\d+)?", line.label) for line in drawing.lines)
    assert to_svg(drawing).count("<line ") == len(drawing.lines)


def test_dot_edges_point_down_and_name_bundles(fabric):
    """Each edge leaves the higher device (the pair's order on a tie) and names a bundle
    of cables only between two network switches."""
    dot = to_dot(fabric, max_hosts=3)
    edges = re.findall(r"  d(\d+) -- d(\d+) \[([^\]]*)\];", dot)
    assert edges
    for upper, lower, attrs in edges:
        a, b = int(upper), int(lower)
        kind_a = DeviceKind(int(fabric.dev_kind[a]))
        kind_b = DeviceKind(int(fabric.dev_kind[b]))
        assert _HEIGHTS[kind_a] > _HEIGHTS[kind_b] or (
            _HEIGHTS[kind_a] == _HEIGHTS[kind_b] and a < b
        )
        if "label=" in attrs:
            assert kind_a in NETWORK_SWITCHES and kind_b in NETWORK_SWITCHES
