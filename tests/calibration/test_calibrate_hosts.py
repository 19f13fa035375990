"""``fabricui calibrate`` on an imported cluster: the run is priced on its own hosts
(``--hosts``, else the rank lines' hosts), and what a run does not say is said as assumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _model_outputs import refused

#: Fits on the imported Selene cluster (~2 s each): run on 3.11 only (`.ci/run`), as they
#: test nothing that depends on the Python version.
pytestmark = pytest.mark.slow

DATA = Path(__file__).parents[1] / "data" / "nccl_tests"
RING = DATA / "h100_2node_degraded_ring_all_reduce_perf.txt"


def _a100(text: str, hosts: tuple[str, str] | None) -> str:
    """The ring fixture as an A100 run (Selene's GPUs), its rank lines on ``hosts`` (or
    without rank lines)."""
    text = text.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
    if hosts is None:
        return "\n".join(line for line in text.splitlines() if "Rank" not in line) + "\n"
    return text.replace("node0", hosts[0]).replace("node1", hosts[1])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    """A100 all_reduce outputs: rank lines on luna-0100 and luna-0200, on hosts Selene
    lacks (node0, node1), and without rank lines."""
    folder = tmp_path_factory.mktemp("outputs")
    text = RING.read_text()
    out = {}
    for name, hosts in (
        ("named", ("luna-0100", "luna-0200")),
        ("elsewhere", ("node0", "node1")),
        ("bare", None),
    ):
        out[name] = folder / f"{name}_all_reduce_perf.txt"
        out[name].write_text(_a100(text, hosts))
    return out


def _json(run_calibrate, *argv: str) -> dict:
    status, out, err = run_calibrate(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def test_rank_lines_name_the_hosts_of_the_cluster(run_calibrate, selene, outputs):
    """The hosts the rank lines name are the hosts priced (nothing assumed), exactly as
    --hosts naming them: not the cluster's first hosts."""
    named = _json(run_calibrate, str(outputs["named"]), "-t", selene)
    (run,) = named["runs"]
    assert run["hosts"] == ["luna-0100", "luna-0200"] and run["nodes"] == 2
    assert run["assumptions"] == [] and named["assumptions"] == []
    given = _json(run_calibrate, str(outputs["named"]), "-t", selene, "--hosts", "luna-[0100,0200]")
    assert given["runs"][0]["rows"] == run["rows"]
    first = _json(run_calibrate, str(outputs["named"]), "-t", selene, "--hosts", "luna-[0001-0002]")
    assert first["runs"][0]["hosts"] == ["luna-0001", "luna-0002"]
    before = [r["before_us"] for r in run["rows"]]
    assert before != [r["before_us"] for r in first["runs"][0]["rows"]]


def test_without_rank_lines_the_first_hosts_are_assumed_and_said(run_calibrate, selene, outputs):
    """No rank lines, no --hosts: the first hosts of the cluster, said in the text report
    (``assumed:``) and in --json (``assumptions``), each naming the run."""
    status, out, err = run_calibrate(str(outputs["bare"]), "-t", selene)
    assert status == 0, err
    assert "16 ranks on 2 node(s) (luna-[0001-0002])" in out
    block = out.split("assumed:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(block) == 2 and all(line.startswith("  - ") for line in block)
    assert "priced on the first 2 host(s) of selene, luna-[0001-0002]" in block[0]
    assert "give --hosts" in block[0]
    assert "16 ranks assumed spread evenly, 8 on each of 2 host(s)" in block[1]
    report = _json(run_calibrate, str(outputs["bare"]), "-t", selene)
    (run,) = report["runs"]
    assert report["assumptions"] == run["assumptions"] and len(run["assumptions"]) == 2
    assert all(text.startswith(f"{outputs['bare']}:") for text in run["assumptions"])


def test_hosts_places_a_run_without_rank_lines(run_calibrate, selene, outputs):
    """--hosts on an output without rank lines: its ranks fill the hosts, nothing assumed."""
    report = _json(run_calibrate, str(outputs["bare"]), "-t", selene, "--hosts", "luna-[0300-0301]")
    (run,) = report["runs"]
    assert run["hosts"] == ["luna-0300", "luna-0301"] and report["assumptions"] == []


def test_rank_lines_of_other_hosts_are_said(run_calibrate, selene, outputs):
    """Rank lines naming hosts the cluster lacks: its first hosts, the assumption naming
    the output's hosts."""
    report = _json(run_calibrate, str(outputs["elsewhere"]), "-t", selene)
    (text,) = report["assumptions"]
    assert "priced on the first 2 host(s) of selene" in text
    assert "not selene's: node0, node1" in text


def test_unknown_hosts_are_one_line_with_the_nearest(run_calibrate, selene, outputs):
    """A host the cluster lacks: one line naming it and the nearest valid names."""
    err = refused(run_calibrate(str(outputs["named"]), "-t", selene, "--hosts", "luna-[0100,9999]"))
    assert "--hosts: 1 host(s) not in selene: luna-9999 (nearest to luna-9999: luna-0560" in err


@pytest.mark.parametrize(
    ("name", "hosts", "message"),
    [
        ("named", "luna-[0100,0200,0300]", "the rank lines name 2 host(s), --hosts names 3"),
        ("bare", "luna-0100", "16 ranks do not split evenly over 1 host(s) of 8 GPUs"),
        ("bare", "luna-[0100,0102-0103]", "16 ranks do not split evenly over 3 host(s)"),
    ],
)
def test_a_host_count_the_run_cannot_have_isrefused(
    run_calibrate, selene, outputs, name, hosts, message
):
    """--hosts naming more hosts than the rank lines, or hosts the run's ranks cannot fill
    evenly: one line."""
    err = refused(run_calibrate(str(outputs[name]), "-t", selene, "--hosts", hosts))
    assert message in err


def test_nodes_must_agree_with_hosts(run_calibrate, selene, outputs):
    """--nodes other than the count --hosts names is refused in one line."""
    err = refused(
        run_calibrate(
            str(outputs["bare"]), "-t", selene, "--hosts", "luna-[0001-0002]", "--nodes", "4"
        )
    )
    assert "--nodes 4 disagrees with the 2 host(s) --hosts names" in err


def test_more_hosts_than_the_cluster_has_arerefused(run_calibrate, selene, outputs):
    """--nodes beyond the cluster's hosts: one line with both counts."""
    err = refused(run_calibrate(str(outputs["bare"]), "-t", selene, "--nodes", "600"))
    assert "the run spans 600 hosts, selene has 458" in err


def test_hosts_on_a_rescaled_topology_arerefused(run_calibrate):
    """A built-in topology is rebuilt at the runs' node count: --hosts has no hosts to
    name there, and says to use --nodes."""
    err = refused(run_calibrate(str(RING), "-t", "dgx-h100", "--hosts", "n[0-1]"))
    assert "--hosts" in err and "give --nodes" in err


def test_a_fixed_size_topology_is_placed_by_host(run_calibrate, tmp_path):
    """A topology whose node count is fixed is priced on its hosts (n0, n1 ...), not
    refused: --hosts picks them, and the first hosts are said when the run names others."""
    spec = tmp_path / "fixed.yaml"
    spec.write_text(
        "id: fixed4\ngpu: h100-sxm\nnodes: 4\ngpus_per_node: 8\nnodes_settable: false\n"
        "intra: {fabric: nvswitch, link: nvlink4}\n"
        "net: {link: ib-ndr, gbps: 400, nics_per_node: 8}\n"
    )
    report = _json(run_calibrate, str(RING), "-t", str(spec), "--hosts", "n[2-3]")
    assert report["runs"][0]["hosts"] == ["n2", "n3"] and report["assumptions"] == []
    report = _json(run_calibrate, str(RING), "-t", str(spec))
    assert report["runs"][0]["hosts"] == ["n0", "n1"]
    assert "not fixed4's: node0, node1" in report["assumptions"][0]


def test_an_even_spread_without_rank_lines_is_said(run_calibrate, tmp_path):
    """A rebuilt topology, an output without rank lines: the node count taken (the fewest
    that hold the ranks) and the even spread are said; with --nodes the ranks fill those
    nodes and nothing is assumed; with more nodes, the spread and GPUs are said."""
    bare = tmp_path / "all_reduce_perf.txt"
    bare.write_text(_a100(RING.read_text(), None).replace("A100-SXM4-80GB", "H100 80GB HBM3"))
    report = _json(run_calibrate, str(bare), "-t", "dgx-h100")
    (text,) = report["assumptions"]
    assert "16 ranks assumed spread evenly, 8 on each of 2 node(s)" in text
    assert "the fewest that hold them; give --nodes" in text
    assert _json(run_calibrate, str(bare), "-t", "dgx-h100", "--nodes", "2")["assumptions"] == []
    (text,) = _json(run_calibrate, str(bare), "-t", "dgx-h100", "--nodes", "4")["assumptions"]
    assert "4 on each of 4 nodes --nodes gives, GPUs 0-3 of each" in text
    ranked = _json(run_calibrate, str(RING), "-t", "dgx-h100")
    assert ranked["assumptions"] == [] and ranked["runs"][0]["hosts"] == []


def test_overlay_records_hosts_and_assumptions(run_calibrate, selene, outputs, tmp_path):
    """The overlay's header names the hosts each run was priced on and what was assumed."""
    out_path = tmp_path / "calibrated.yaml"
    status, _, err = run_calibrate(str(outputs["bare"]), "-t", selene, "-o", str(out_path))
    assert status == 0, err
    header = out_path.read_text()
    assert "--hosts luna-[0001-0002]" in header
    assert "# assumed: " in header and "priced on the first 2 host(s)" in header
