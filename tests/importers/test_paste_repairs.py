"""Pastes from terminal logs and wikis: real samples damaged as a terminal logger, a
terminal's line wrap, a shell session or a wiki damages them import the same as the
originals, each repair named in a warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabricui.importers import ibnetdiscover, nvidia_smi
from fabricui.importers.common import ParseError
from fabricui.importers.paste import drop_prompts, markdown_tables, unwrap

DATA = Path(__file__).parents[1] / "data"
IB_LAB = DATA / "fabric" / "ibnetdiscover" / "nvidia_rufm_lab_hdr_fdr_small_2021.txt"
IB_PSMN = DATA / "fabric" / "ibnetdiscover" / "psmn_x5_voltaire_qdr_ddr_full.txt"
SMI_ADA = DATA / "topo" / "nvidia_smi_topo" / "rtx6000ada_2gpu_phb_threadripper_wrx90_stelline.txt"


def graph(parsed) -> dict:
    """A switch graph without its warnings (what a repair must not change)."""
    data = parsed.to_json()
    data.pop("warnings", None)
    return data


def fold(text: str, width: int) -> str:
    """``text`` as a terminal ``width`` columns wide copies it: long lines cut at the edge."""
    out = []
    for line in text.expandtabs(8).split("\n"):
        out += [line[i : i + width] for i in range(0, max(len(line), 1), width)] or [""]
    return "\n".join(out)


@pytest.mark.parametrize("sample", [IB_LAB, IB_PSMN], ids=["ufm-lab", "psmn-x5"])
def test_ibnetdiscover_with_its_tabs_lost(sample):
    """Every tab dropped (``Switch36 "S-..."``): every switch, host and cable is still read,
    with a warning that tabs were put back (without the repair nothing would be)."""
    text = sample.read_text()
    damaged = text.replace("\t", "")
    assert re.search(r"^Switch\d", damaged, re.M)
    repaired = ibnetdiscover.parse(damaged)
    assert graph(repaired) == graph(ibnetdiscover.parse(text))
    assert any("lost a tab" in w and "Switch36" in w for w in repaired.warnings)


def test_ibnetdiscover_wrapped_by_the_terminal_with_a_prompt_inside():
    """Copied from an 80-column terminal, a second command's prompt in the middle: read as
    the original, the wrap and the prompt named."""
    lines = IB_LAB.read_text().split("\n")
    middle = len(lines) // 2
    while not lines[middle].startswith("vendid"):
        middle += 1
    lines.insert(middle, "root@ufm-host:~# ibnetdiscover | tail -n +40")
    damaged = fold("\n".join(lines), 80)
    repaired = ibnetdiscover.parse(damaged)
    assert graph(repaired) == graph(ibnetdiscover.parse(IB_LAB.read_text()))
    assert any("wrapped at 80 columns joined" in w for w in repaired.warnings)
    assert any("shell prompt line(s) inside the output" in w for w in repaired.warnings)


def markdown(text: str, outer: bool, bold: bool) -> str:
    """The ``topo -m`` matrix of ``text`` as a wiki table (header, ruler, rows), then the
    legend as it was."""
    matrix = [line for line in text.split("\n") if re.match(r"\s*(GPU|NIC)\d+\s+[^:]*$", line)]
    rows = [[cell.strip() for cell in re.split(r"\s{2,}|\t", line)] for line in matrix]
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    if bold:
        rows = [[f"**{row[0]}**" if row[0] else "", *row[1:]] for row in rows]
    lines = [" | ".join(row) for row in rows]
    lines.insert(1, " | ".join(["---"] * width))
    if outer:
        lines = [f"| {line} |" for line in lines]
    legend = text[text.index("Legend:") :]
    return "Our node:\n\n" + "\n".join(lines) + "\n\n" + legend


@pytest.mark.parametrize(("outer", "bold"), [(True, False), (False, False), (True, True)])
def test_nvidia_smi_pasted_as_a_markdown_table(outer, bold):
    """The same matrix as a Markdown table (with or without outer pipes, with bold row
    labels) gives the same GPUs, NICs, links and affinities."""
    text = SMI_ADA.read_text()
    original = nvidia_smi.parse(text)
    table = nvidia_smi.parse(markdown(text, outer, bold))
    for field in ("gpus", "nic_columns", "links", "cpu_affinity", "numa"):
        assert getattr(table, field) == getattr(original, field), field
    repaired = [w for w in table.warnings if "Markdown table" in w]
    assert bool(repaired) == (not outer or bold)


def test_prompts_around_the_output_are_not_repairs():
    """A prompt before the output (the command typed) is dropped without a warning."""
    lines = ["$ nvidia-smi topo -m", "GPU0 X", "user@host:~/x$ ", "(base) ➜  ~ ls"]
    result = drop_prompts(lines, lambda line: line.startswith("GPU"))
    assert result.lines == ["GPU0 X"] and result.warnings == []


def test_unwrap_leaves_one_longest_line_alone():
    """Only lines cut at a width two or more lines reach are joined: a single long line is
    a line, not a wrap."""
    lines = ["a" * 90, "tail", "b" * 70]
    assert unwrap(lines, lambda line: False).lines == lines


def test_markdown_tables_leave_a_clean_table_alone():
    """A table already between outer pipes, without marks, needs no repair."""
    lines = ["| | GPU0 |", "|---|---|", "| GPU0 | X |"]
    assert markdown_tables(lines).warnings == []


def test_a_format_that_reads_nothing_says_so_once():
    """Text that looks like nvidia-smi output but has no readable matrix names what it
    found instead of 'looks like X, not X'."""
    with pytest.raises(ParseError) as error:
        nvidia_smi.parse("GPU0\tGPU1\tCPU Affinity\nLegend:\n  X    = Self\n")
    assert "not `nvidia-smi topo -m`" not in error.value.message


@pytest.mark.parametrize("blank", ["\t", " "])
def test_repairs_take_linear_time_on_long_blank_lines(blank):
    """A pasted line of 200,000 blanks (a terminal logger's padding) is read at once: the
    repairs' patterns never try every split of a run of blanks. Timed against a line a
    quarter as long in the same run, so that a loaded machine does not decide: linear time
    takes ~4x as long, a pattern that tries every split ~16x."""
    import time

    def seconds(n: int) -> float:
        text = blank * n + "\n" + blank * n + "x\n"
        start = time.perf_counter()
        for parse in (ibnetdiscover.parse, nvidia_smi.parse):
            with pytest.raises(ParseError):
                parse(text)
        return time.perf_counter() - start

    short, long = seconds(50_000), seconds(200_000)
    assert long < 8 * short + 0.05
    assert long < 10.0
