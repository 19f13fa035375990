"""``calibrate`` on an imported cluster, with what users really pass: ``--hosts`` empty or
naming a host twice is refused in one line (never ignored, never deduplicated), rank lines
naming hosts by their FQDN are the cluster's hosts, and the hosts a run is said to run on
keep the order of its ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui.services.calibrate import ranked_hostlist
from tests.calibration._model_outputs import all_reduce_output, hosts_in_blocks, refused

#: Fits on the imported Selene cluster (~2 s each): run on 3.11 only (`.ci/run`), as they
#: test nothing that depends on the Python version.
pytestmark = pytest.mark.slow

A100 = "NVIDIA A100-SXM4-80GB"
SIZES = [2**k for k in range(20, 31)]


def _output(folder: Path, name: str, hosts: list[str]) -> Path:
    """An A100 all_reduce output whose rank lines put 8 ranks on each of ``hosts``."""
    times = [10.0 + size / 20e3 for size in SIZES]
    path = folder / f"{name}_all_reduce_perf.txt"
    path.write_text(all_reduce_output(SIZES, times, hosts_in_blocks(hosts, 8), gpu=A100))
    return path


@pytest.mark.parametrize(
    ("hosts", "said"),
    [
        ("luna-[0100,0200],luna-0100", "--hosts names luna-0100 twice"),
        ("luna-0100,luna-0100", "--hosts names luna-0100 twice"),
        ("", "--hosts: empty hostlist"),
        (" ", "--hosts: empty hostlist"),
    ],
)
def test_hosts_named_twice_or_empty_arerefused(run_calibrate, selene, tmp_path, hosts, said):
    """A host twice in --hosts is a typo (a run has each host once, ranks in order), and
    an empty --hosts (an unset shell variable) is not the rank lines' hosts: one line."""
    output = _output(tmp_path, "named", ["luna-0100", "luna-0200"])
    assert said in refused(run_calibrate(str(output), "-t", selene, "--hosts", hosts))


def test_an_empty_hosts_on_a_topology_built_at_the_runs_node_count(run_calibrate, tmp_path):
    """--hosts '' on a built-in topology is refused as any --hosts is there."""
    output = _output(tmp_path, "named", ["node0", "node1"])
    err = refused(run_calibrate(str(output), "-t", "dgx-a100", "--hosts", ""))
    assert "--hosts names hosts of an imported cluster" in err


def test_rank_lines_naming_fqdns_are_the_clusters_hosts(run_calibrate, selene, tmp_path):
    """``luna-0100.selene.example.com`` is the cluster's luna-0100: priced there, nothing
    assumed, exactly as the short names."""
    fqdn = _output(
        tmp_path, "fqdn", ["luna-0100.selene.example.com", "luna-0200.selene.example.com"]
    )
    short = _output(tmp_path, "short", ["luna-0100", "luna-0200"])
    reports = []
    for output in (fqdn, short):
        status, out, err = run_calibrate(str(output), "-t", selene, "--json")
        assert status == 0, err
        reports.append(json.loads(out))
    (run,) = reports[0]["runs"]
    assert run["hosts"] == ["luna-0100", "luna-0200"]
    assert reports[0]["assumptions"] == []
    assert [r["before_us"] for r in run["rows"]] == [
        r["before_us"] for r in reports[1]["runs"][0]["rows"]
    ]


def test_fqdns_that_come_to_one_host_stay_unknown(run_calibrate, selene, tmp_path):
    """Two hosts whose first label is the same cluster host are not both that host: the
    run is priced on the first hosts, said so."""
    output = _output(tmp_path, "two", ["luna-0100.a.example.com", "luna-0100.b.example.com"])
    status, out, err = run_calibrate(str(output), "-t", selene, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["runs"][0]["hosts"] == ["luna-0001", "luna-0002"]
    assert "not selene's" in report["assumptions"][0]


def test_the_hosts_said_keep_the_order_of_the_ranks(run_calibrate, selene, tmp_path):
    """Ranks 0-7 on luna-0200, 8-15 on luna-0100: the report and the overlay's header say
    ``luna-0200,luna-0100``, the --hosts that prices the run again, not the sorted list."""
    output = _output(tmp_path, "backwards", ["luna-0200", "luna-0100"])
    overlay = tmp_path / "calibrated.yaml"
    status, out, err = run_calibrate(str(output), "-t", selene, "-o", str(overlay))
    assert status == 0, err
    assert "16 ranks on 2 node(s) (luna-0200,luna-0100)" in out
    assert "--hosts luna-0200,luna-0100" in overlay.read_text()


@pytest.mark.parametrize(
    ("hosts", "said"),
    [
        (["luna-0100", "luna-0101"], "luna-[0100-0101]"),
        (["luna-0101", "luna-0100"], "luna-0101,luna-0100"),
        (["n10", "n9"], "n10,n9"),
        (["b", "a"], "b,a"),
        ([], ""),
    ],
)
def test_ranked_hostlist(hosts, said):
    """Compressed when that keeps the order, else the names as given."""
    assert ranked_hostlist(hosts) == said


CLUSTER_ORDER = "the ring and trees follow the cluster's host order"


def _report(run_calibrate, output: Path, topology: str, *extra: str) -> dict:
    status, out, err = run_calibrate(str(output), "-t", topology, "--json", *extra)
    assert status == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def ordered_reports() -> dict[tuple[str, ...], dict]:
    """The report of a run whose ranks are on ``hosts`` in the cluster's order, by hosts:
    one fit for every test that compares with the same run."""
    return {}


def _ordered_report(run_calibrate, folder: Path, topology: str, hosts: list[str], made) -> dict:
    """``_report`` of an output with its ranks on ``hosts`` (sorted: the cluster's order),
    made once a module (``ordered_reports``)."""
    key = (topology, *sorted(hosts))
    if key not in made:
        made[key] = _report(run_calibrate, _output(folder, "ordered", sorted(hosts)), topology)
    return made[key]


@pytest.mark.parametrize("by", ["rank lines", "--hosts"])
def test_hosts_out_of_cluster_order_are_said_rung_in_cluster_order(
    run_calibrate, selene, tmp_path, by, ordered_reports
):
    """Three hosts whose ranks come out of the cluster's order (luna-0300 first): NCCL
    rings them in the ranks' order, the model in the cluster's; said under 'assumed:',
    and priced exactly as the same hosts in the cluster's order."""
    named = ["luna-0300", "luna-0100", "luna-0200"]
    if by == "rank lines":
        output = _output(tmp_path, "shuffled", named)
        report = _report(run_calibrate, output, selene)
    else:
        output = _output(tmp_path, "anon", ["a", "b", "c"])
        report = _report(run_calibrate, output, selene, "--hosts", ",".join(named))
    (run,) = report["runs"]
    assert run["hosts"] == named
    (said,) = [text for text in report["assumptions"] if CLUSTER_ORDER in text]
    assert "in the order luna-0300,luna-0100,luna-0200;" in said
    assert "(luna-[0100,0200,0300]), not the ranks'" in said
    ordered = _ordered_report(run_calibrate, tmp_path, selene, named, ordered_reports)
    assert ordered["assumptions"] == []
    assert [r["before_us"] for r in run["rows"]] == [
        r["before_us"] for r in ordered["runs"][0]["rows"]
    ]


def test_two_hosts_out_of_cluster_order_make_the_same_ring(run_calibrate, selene, tmp_path):
    """Two hosts ring alike in either order: nothing to say."""
    output = _output(tmp_path, "two", ["luna-0200", "luna-0100"])
    report = _report(run_calibrate, output, selene)
    assert not [text for text in report["assumptions"] if CLUSTER_ORDER in text]
