"""The doctor with a fabric under hypothesis: damaged NCCL logs checked against an imported
cluster and a reference topology give a report, or exit 2 in one line; never a traceback."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _property import (
    ROOT,
    check_contract,
    mutated,
    read_sample,
    run_cli,
    sample_files,
)
from hypothesis import given
from hypothesis import strategies as st

LOGS = [read_sample(p) for p in sample_files(ROOT / "tests" / "data" / "topo" / "nccl_debug_logs")]
TOPOLOGIES = [
    str(ROOT / "tests" / "doctor" / "topologies" / "cluster_nodeab.yaml"),
    str(ROOT / "tests" / "doctor" / "topologies" / "cluster_4hosts.yaml"),
    "dgx-a100",
]


@given(
    text=st.sampled_from(LOGS).flatmap(mutated),
    topology=st.sampled_from(TOPOLOGIES),
    hosts=st.sampled_from([None, "nodea,nodeb", "h[1-4]", "q[", ""]),
    as_json=st.booleans(),
)
def test_damaged_logs_against_a_fabric(
    text: str, topology: str, hosts: str | None, as_json: bool
) -> None:
    """``doctor LOG --topology T [--hosts H] [--json]`` keeps the CLI's contract."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nccl.log"
        path.write_text(text, encoding="utf-8")
        argv = ["doctor", str(path), "--topology", topology]
        argv += ["--hosts", hosts] if hosts is not None else []
        argv += ["--json"] if as_json else []
        check_contract(run_cli(argv), json_out=as_json)
