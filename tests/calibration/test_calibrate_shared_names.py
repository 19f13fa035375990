"""``calibrate`` on a run whose machines share a hostname (containers: nccl-tests issue 188,
ranks 0-7 and 8-15 both on host ``user``, devices 0-7 each time): the name is split into
the hosts that share it, said as assumed, instead of refusing 16 ranks on an 8-GPU host
with no way round it; a split that would make hosts unlike (every rank on device 0) is
still refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.calibration._model_outputs import all_reduce_output

#: Fits on the imported Selene cluster (~2 s each): run on 3.11 only (`.ci/run`), as they
#: test nothing that depends on the Python version.
pytestmark = pytest.mark.slow

SIZES = [2**k for k in range(20, 31)]


def _output(folder: Path, name: str, placement: list[tuple[str, int]]) -> Path:
    times = [10.0 + size / 20e3 for size in SIZES]
    path = folder / f"{name}_all_reduce_perf.txt"
    path.write_text(all_reduce_output(SIZES, times, placement, gpu="NVIDIA A100-SXM4-80GB"))
    return path


@pytest.mark.parametrize(
    ("placement", "alternate"),
    [
        ([("user", d) for _ in range(2) for d in range(8)], False),
        ([("user", r // 2) for r in range(16)], True),
    ],
)
def test_a_name_two_machines_share_is_two_hosts(run_calibrate, tmp_path, placement, alternate):
    """Devices 0-7 twice under one name: 2 nodes of 8, priced as the same run on node0 and
    node1 is; the assumption names the hosts made."""
    shared = _output(tmp_path, "shared", placement)
    if alternate:
        hosts = [(f"node{r % 2}", r // 2) for r in range(16)]
    else:
        hosts = [(f"node{r // 8}", d) for r, (_, d) in enumerate(placement)]
    named = _output(tmp_path, "named", hosts)
    reports = []
    for output in (shared, named):
        status, out, err = run_calibrate(str(output), "-t", "dgx-a100", "--json")
        assert status == 0, err
        reports.append(json.loads(out))
    (run,) = reports[0]["runs"]
    assert (run["nranks"], run["nodes"]) == (16, 2)
    assert [r["before_us"] for r in run["rows"]] == [
        r["before_us"] for r in reports[1]["runs"][0]["rows"]
    ]
    said = [a for a in run["assumptions"] if "hosts sharing a name" in a]
    assert len(said) == 1
    assert "16 ranks on host user" in said[0] and "priced as 2 hosts user#1 to user#2" in said[0]


def test_on_an_imported_cluster_the_hosts_made_take_hosts(run_calibrate, selene, tmp_path):
    """On Selene the two hosts made are not its own: its first two, said, as any unknown
    hosts; --hosts then names two hosts for them."""
    output = _output(tmp_path, "shared", [("user", d) for _ in range(2) for d in range(8)])
    status, out, err = run_calibrate(str(output), "-t", selene, "--json")
    assert status == 0, err
    assert json.loads(out)["runs"][0]["hosts"] == ["luna-0001", "luna-0002"]
    given = ("--hosts", "luna-[0100,0200]", "--json")
    status, out, err = run_calibrate(str(output), "-t", selene, *given)
    assert status == 0, err
    assert json.loads(out)["runs"][0]["hosts"] == ["luna-0100", "luna-0200"]


def test_every_rank_on_device_zero_is_still_refused(run_calibrate, tmp_path):
    """16 ranks on one name, each on its device 0: nothing tells the machines apart, so
    the run is refused in one line, as before."""
    output = _output(tmp_path, "cvd", [("user", 0) for _ in range(16)])
    status, out, err = run_calibrate(str(output), "-t", "dgx-a100")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "the rank lines put 16 ranks on host user" in err
