"""``fabricui export``: the topology as a diagram in DOT (rendered by Graphviz where it is
installed), SVG and PDF drawn by fabricui; big fabrics summarised, files never replaced
without --force."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

import pytest


@pytest.mark.parametrize("topology", ["dgx-h100-pod", "gb200-nvl72", "h100-ib-cluster"])
def test_dot_renders_with_graphviz(run_cli, tmp_path, topology):
    """The DOT is valid Graphviz: `dot -Tsvg` lays it out without a warning."""
    if shutil.which("dot") is None:
        pytest.skip("Graphviz (dot) is not installed")
    out = tmp_path / "fabric.dot"
    status, _, _ = run_cli("export", "-t", topology, "-o", str(out))
    assert status == 0
    result = subprocess.run(
        ["dot", "-Tsvg", str(out)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    ET.fromstring(result.stdout)  # Graphviz's SVG


def test_dot_names_hosts_devices_tiers_and_link_classes(run_cli):
    """A cluster per host, the leafs on one rank, links coloured by class."""
    status, dot, _ = run_cli("export", "-t", "dgx-h100-pod", "--format", "dot")
    assert status == 0 and dot.startswith("graph fabric {")
    assert dot.count("subgraph cluster_n") == 4
    assert re.search(r"\{ rank=same; d\d+; d\d+; \}", dot)
    for colour in ('"#009E73"', '"#0072B2"', '"#D55E00"'):  # scale-up, host, scale-out
        assert f"color={colour}" in dot


def test_svg_is_a_diagram_with_a_legend(run_cli):
    """Our own SVG: well-formed, every host and the leafs labelled, a legend line per link
    generation."""
    status, svg, _ = run_cli("export", "-t", "dgx-h100-pod", "--format", "svg")
    assert status == 0
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"n0", "n1", "n2", "n3", "leaf0", "leaf1", "g7", "nic7", "NVSw"} <= set(texts)
    legend = [t for t in texts if t and ": " in t and "per link" in t]
    assert [t.split(":")[0] for t in legend] == ["upi", "pcie5", "nvlink4", "ib-ndr"]


def test_big_fabrics_are_summarised(run_cli):
    """32 hosts: the first seven and the last drawn, the 24 others in one box."""
    status, svg, _ = run_cli("export", "-t", "h100-ib-cluster", "--format", "svg")
    assert status == 0
    assert "24 more hosts," in svg and ">n31<" in svg and ">n7<" not in svg
    status, svg, _ = run_cli(
        "export", "-t", "h100-ib-cluster", "--format", "svg", "--max-hosts", "2"
    )
    assert "30 more hosts," in svg


def test_pdf_is_a_readable_pdf(run_cli, tmp_path):
    """A one-page PDF whose cross-reference table points at its objects."""
    out = tmp_path / "fabric.pdf"
    status, _, err = run_cli("export", "-t", "gb200-nvl72", "-o", str(out))
    assert status == 0 and f"wrote {out}" in err
    data = out.read_bytes()
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
    xref = int(data.rsplit(b"startxref", 1)[1].split()[0])
    rows = data[xref:].split(b"\n")[3:9]
    for number, row in enumerate(rows, 1):
        offset = int(row.split()[0])
        assert data[offset:].startswith(f"{number} 0 obj".encode())


def test_pdf_text_keeps_what_its_fonts_can_draw():
    """The standard fonts' WinAnsi set: Latin-1 plus dashes and the euro sign as they are,
    other accented letters without their accent, the rest '?' (and named as missing)."""
    from fabricui.render.diagram import Box, Drawing, Text, pdf_text, pdf_unsupported, to_pdf

    assert pdf_text("luna-0016 — µ € ü") == "luna-0016 — µ € ü"
    assert pdf_text("Łódź") == "Lódz"
    assert pdf_text("北京-01") == "??-01"
    drawing = Drawing(200, 100, [Box(0, 0, 50, 20, "北京-01", "switch")], [], [Text(5, 5, "Łó")])
    assert pdf_unsupported(drawing) == "北京"
    assert b"(??-01) Tj" in zlib.decompress(_stream(to_pdf(drawing)))


def _stream(pdf: bytes) -> bytes:
    return pdf.split(b"stream\n", 1)[1].split(b"\nendstream", 1)[0]


def test_export_refuses_what_it_cannot_write(run_cli, tmp_path):
    """An unknown suffix, and an existing file without --force: one line, exit 2."""
    status, _, err = run_cli("export", "-o", str(tmp_path / "x.png"))
    assert status == 2 and "use a .dot, .svg or .pdf name" in err
    target = tmp_path / "x.svg"
    target.write_text("mine")
    status, _, err = run_cli("export", "-o", str(target))
    assert status == 2 and target.read_text() == "mine"


def test_pdf_on_standard_output_is_the_pdf(tmp_path):
    """``fabricui export --format pdf > fabric.pdf``: the bytes reach the redirected output
    as they are, past the wrappers that escape text on standard output."""
    out = tmp_path / "fabric.pdf"
    with out.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "fabricui", "export", "-t", "dgx-h100", "--format", "pdf"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=False,
            timeout=120,
            check=False,
        )
    assert (done.returncode, done.stderr) == (0, b"")
    data = out.read_bytes()
    assert data.startswith(b"%PDF-1.4") and data.rstrip().endswith(b"%%EOF")
