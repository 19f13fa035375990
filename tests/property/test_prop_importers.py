"""``fabricui import``: broken pastes of every format parse, or fail in one line, fast; ``-o``
writes a spec that loads, or nothing at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _property import (
    TOPO_SAMPLES,
    check_contract,
    mutated,
    no_leftovers,
    read_sample,
    run_cli,
    sample_files,
)
from hypothesis import example, given
from hypothesis import strategies as st

#: Format -> real samples of it.
SAMPLES: dict[str, list[Path]] = {
    "nvidia-smi": sample_files(TOPO_SAMPLES / "nvidia_smi_topo"),
    "nccl-xml": sample_files(TOPO_SAMPLES / "nccl_topo_xml"),
    "ibstat": [p for p in sample_files(TOPO_SAMPLES / "ib_rocm") if p.name.startswith("ib")],
    "rocm-smi": [
        p for p in sample_files(TOPO_SAMPLES / "ib_rocm") if p.name.startswith(("rocm", "amd"))
    ],
}
#: A minimal sample per format, so the tests run without the shared samples too.
FALLBACK = {
    "nvidia-smi": "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\t0-47\nGPU1\tNV12\t X \t0-47\n",
    "nccl-xml": '<system version="1"><cpu numaid="0"><pci busid="0000:07:00.0" class="0x030200">'
    '<gpu dev="0" sm="90" rank="0"/></pci></cpu></system>\n',
    "ibstat": "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n"
    "\t\tLink layer: InfiniBand\n",
    "rocm-smi": "===== Weight between two GPUs =====\n       GPU0  GPU1\n"
    "GPU0   0     15\nGPU1   15    0\n",
}
FORMATS = sorted(FALLBACK)
TEXTS = {fmt: [read_sample(p) for p in SAMPLES[fmt]] or [FALLBACK[fmt]] for fmt in FORMATS}


@st.composite
def pastes(draw: st.DrawFn) -> tuple[str, str]:
    """(format, a real sample of it with a few edits)."""
    fmt = draw(st.sampled_from(FORMATS))
    text = draw(st.sampled_from(TEXTS[fmt]))
    return fmt, draw(mutated(text))


@given(paste=pastes(), as_json=st.booleans())
def test_broken_pastes(paste: tuple[str, str], as_json: bool) -> None:
    """Each importer reads a damaged paste, or names what is wrong in one line."""
    fmt, text = paste
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paste.txt"
        path.write_text(text, encoding="utf-8")
        argv = ["import", fmt, str(path)] + (["--json"] if as_json else [])
        check_contract(run_cli(argv), json_out=as_json)


@given(paste=pastes(), nodes=st.sampled_from((None, "1", "4", "0", "-3", "10000000000")))
def test_output_file_is_all_or_nothing(paste: tuple[str, str], nodes: str | None) -> None:
    """``-o`` writes a spec that loads, or leaves the directory as it was (no temp files)."""
    fmt, text = paste
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        source = directory / "paste.txt"
        source.write_text(text, encoding="utf-8")
        target = directory / "node.yaml"
        argv = ["import", fmt, str(source), "-o", str(target)]
        argv += ["--nodes", nodes] if nodes is not None else []
        outcome = run_cli(argv)
        check_contract(outcome)
        if outcome.status == 0:
            no_leftovers(directory, {"paste.txt", "node.yaml"})
            validated = run_cli(["hwdb", "validate", str(target)])
            assert validated.status == 0, validated.err
        else:
            no_leftovers(directory, {"paste.txt"})


@example(data=b"\xff\xfe" + "GPU0\tGPU1\n".encode("utf-16-le"))
@example(data=b"\xff\xfe\x00")
@example(data=b"GPU0\x00GPU1")
@example(data=b"\xc3\x28 GPU0")
@example(data=b"\n" * 100_000)
@given(data=st.binary(max_size=2000))
def test_any_bytes_on_stdin(data: bytes) -> None:
    """Whatever bytes arrive on stdin, every importer answers in one line or parses them."""
    for fmt in FORMATS:
        check_contract(run_cli(["import", fmt, "-"], stdin=data))


@given(fmt=st.sampled_from(FORMATS), text=st.text(max_size=300))
def test_any_text(fmt: str, text: str) -> None:
    """Arbitrary text is not mistaken for output, or is read without crashing."""
    check_contract(run_cli(["import", fmt, "-", "--json"], stdin=text.encode("utf-8", "replace")))
