"""NCCL logs (``fabricui doctor``) and nccl-tests results (``fabricui calibrate``): broken
inputs are diagnosed or refused in one line; ``calibrate -o`` writes a whole overlay or none."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _property import (
    DATA,
    ROOT,
    SHARED,
    TOPO_SAMPLES,
    check_contract,
    mutated,
    no_leftovers,
    read_sample,
    run_cli,
    sample_files,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

LOGS = [
    *(read_sample(p) for p in sample_files(TOPO_SAMPLES / "nccl_debug_logs")),
    *(p.read_text(encoding="utf-8") for p in sample_files(ROOT / "tests" / "doctor" / "data")),
]
RESULTS = {
    p.name: p.read_text(encoding="utf-8")
    for p in [
        *sample_files(DATA / "nccl_tests"),
        *sample_files(SHARED / "nccl", "measurements.yaml"),
    ]
}


@given(text=st.sampled_from(LOGS).flatmap(mutated), as_json=st.booleans())
def test_broken_logs(text: str, as_json: bool) -> None:
    """The doctor reads a damaged log, or says it is not one, in one line."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nccl.log"
        path.write_text(text, encoding="utf-8")
        argv = ["doctor", str(path)] + (["--json"] if as_json else [])
        check_contract(run_cli(argv), json_out=as_json)


@example(data=b"\n" * 100_000)
@example(data=b"NCCL INFO " * 20_000)
@example(data=b"x NCCL INFO Channel 00/02 : 0[0] -> 1[1] via " + b" " * 50_000 + b"P2P")
@given(data=st.binary(max_size=3000))
def test_any_bytes_as_log(data: bytes) -> None:
    """Any bytes on stdin: a diagnosis or one line."""
    check_contract(run_cli(["doctor", "-", "--json"], stdin=data), json_out=True)


#: Calibration runs the fit (about a second each): fewer examples.
SLOW = settings(max_examples=12)


@SLOW
@given(name=st.sampled_from(sorted(RESULTS)), data=st.data())
def test_broken_results_and_overlay_output(name: str, data: st.DataObject) -> None:
    """``calibrate`` on damaged results fits or fails in one line; ``-o`` is all or nothing."""
    text = data.draw(mutated(RESULTS[name], runs=False), label="text")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        results = directory / name
        results.write_text(text, encoding="utf-8")
        overlay = directory / "overlay.yaml"
        argv = ["calibrate", str(results), "-t", "dgx-h100", "-o", str(overlay)]
        if name.endswith(".yaml"):
            argv += ["--entry", "nccltests290_h100_2node_ib_ndr_allreduce_ring"]
        outcome = run_cli(argv)
        check_contract(outcome)
        if outcome.status == 0 and overlay.exists():
            no_leftovers(directory, {name, "overlay.yaml"})
            applied = run_cli(["--calibration", str(overlay), "path", "--src", "0", "--dst", "9"])
            assert applied.status == 0, applied.err
        else:
            no_leftovers(directory, {name})
