"""A cable that is both degraded and erroring keeps both facts: one output says it trained
below its width (iblinkinfo, ibstat), another that its counters crossed their threshold
(ibqueryerrors); the overlay has one change that says both, priced at the degraded rate,
whichever file comes first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricui import api
from fabricui.fabric.health import GpuLinkCondition, LinkCondition, apply_health, health_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric

#: n0's first NIC cable at 1X of 4X, as iblinkinfo prints it from the host's side.
DEGRADED = (
    "CA: n0 mlx5_0:\n"
    "      0x0000000000000101      1    1[  ] ==( 1X        106.25 Gbps Active/  LinkUp)==>"
    '       2   17[  ] "leaf0" ( Could be 4X)\n'
)
#: The same cable from leaf0's port 17, counting symbol errors, at 4X (ibqueryerrors -r).
ERRORS = (
    'Errors for 0x0000000000000002 "leaf0"\n'
    "   GUID 0x0000000000000002 port 17: [SymbolErrorCounter == 5000] Link info:      2   17[  ]"
    ' ==( 4X        106.25 Gbps Active/  LinkUp)==>       1    1[  ] "n0 mlx5_0" ( )\n'
    "\n"
    "## Summary: 20 nodes checked, 1 bad nodes found\n"
    "##          200 ports checked, 1 ports have errors beyond threshold\n"
)
#: n0's ibstat with mlx5_0 at half its cable's 400 Gb/s.
IBSTAT = "".join(
    f"CA 'mlx5_{k}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
    f"\t\tPhysical state: LinkUp\n\t\tRate: {200 if k == 0 else 400}\n"
    "\t\tLink layer: InfiniBand\n"
    for k in range(8)
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """The three outputs, as files (the ibstat named after its host)."""
    out = {}
    for name, text in (("links.txt", DEGRADED), ("errors.txt", ERRORS), ("n0.txt", IBSTAT)):
        (tmp_path / name).write_text(text)
        out[name] = str(tmp_path / name)
    return out


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("links.txt", "errors.txt", 0.25),
        ("errors.txt", "links.txt", 0.25),
        ("n0.txt", "errors.txt", 0.5),
        ("errors.txt", "n0.txt", 0.5),
    ],
)
def test_a_degraded_cable_that_counts_errors_is_both(catalog, files, first, second, kept):
    """One change: degraded at the trained rate, erroring, naming both files in the order
    given; the path through it runs at the degraded rate."""
    request = TopologyRequest("h100-ib-cluster", 2, health=(files[first], files[second]))
    fabric = load_fabric(request, catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None
    (change,) = overlay.changes
    assert (change.kind, change.erroring, change.condition) == (
        "degraded",
        True,
        "degraded, erroring",
    )
    assert change.factor == pytest.approx(kept)
    said = [s.split()[-1] for s in change.source.split("; ")]
    assert said == [Path(files[first]).name, Path(files[second]).name]
    assert overlay.summary() == "health: 1 degraded (1 also erroring)"
    hop = next(h for h in api.path(fabric, "n0.g0", "n1.g0", 2**30).hops if h.src == "n0.nic0")
    assert hop.bw_GBps == pytest.approx(50.0 * kept)


def test_a_degraded_port_alone_is_not_erroring(catalog, files):
    """Its own finding (link-degraded) does not mark it erroring: only counters do."""
    request = TopologyRequest("h100-ib-cluster", 2, health=(files["links.txt"],))
    overlay = health_of(load_fabric(request, catalog, report_health=False))
    assert overlay is not None
    assert [(c.kind, c.erroring) for c in overlay.changes] == [("degraded", False)]
    assert overlay.summary() == "health: 1 degraded"


def test_errors_alone_mark_the_cable(catalog, files):
    """The erroring cable alone keeps its rate and says it counts errors."""
    request = TopologyRequest("h100-ib-cluster", 2, health=(files["errors.txt"],))
    overlay = health_of(load_fabric(request, catalog, report_health=False))
    assert overlay is not None
    assert [(c.kind, c.factor, c.erroring) for c in overlay.changes] == [("errors", 1.0, True)]


def test_the_cli_says_both(run_cli, files):
    """``path --json`` keeps its keys and adds ``erroring``; stderr says both facts."""
    status, out, err = run_cli(
        "path", "-t", "h100-ib-cluster", "--nodes", "2", "n0.g0", "n1.g0",
        "--health", files["errors.txt"], "--health", files["links.txt"], "--json",
    )  # fmt: skip
    assert status == 0, err
    data = json.loads(out)
    assert data["bottleneck_GBps"] == pytest.approx(12.5)
    (change,) = data["health"]["changes"]
    assert change == {
        "kind": "degraded",
        "link": "n0.nic0 (n0 mlx5_0) -> leaf0",
        "bandwidth_kept": 0.25,
        "source": "ibqueryerrors errors.txt; iblinkinfo links.txt",
        "erroring": True,
    }
    codes = {f["code"] for f in data["health"]["findings"]}
    assert {"link-degraded", "ib-symbol-errors"} <= codes
    assert "fabricui: as it is: 1 degraded (1 also erroring)" in err
    assert (
        "fabricui: degraded: n0.nic0 (n0 mlx5_0) -> leaf0 keeps 25% of its bandwidth, and its "
        "counters are over their threshold (ibqueryerrors errors.txt; iblinkinfo links.txt)"
    ) in err


def test_a_switch_cable_marked_then_slowed_is_both(catalog):
    """leaf0 -> spine0, one cable of four: counters first, its width after (and from its
    other end): one change, at the bundle's share, erroring."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)
    errors = LinkCondition("spine0", 1, "leaf0", 33, erroring=True, source="errors.txt")
    slow = LinkCondition("leaf0", 33, "spine0", 1, fraction=0.25, source="links.txt")
    overlay = apply_health(fabric, [errors, slow], [])
    (change,) = overlay.changes
    assert (change.kind, change.erroring, change.source) == (
        "degraded",
        True,
        "errors.txt; links.txt",
    )
    assert change.factor == pytest.approx((3 + 0.25) / 4)


def test_a_gpu_with_links_down_and_errors_is_both(catalog):
    """Half its NVLinks inactive (one output) and its counters over their threshold
    (another): one change at half its scale-up bandwidth, erroring."""
    fabric = load_fabric(TopologyRequest("dgx-h100"), catalog)
    down = GpuLinkCondition(None, 0, 9, 18, source="nvlink.txt")
    errors = GpuLinkCondition(None, 0, 0, 18, erroring=True, source="errors.txt")
    overlay = apply_health(fabric, [], [errors, down])
    (change,) = overlay.changes
    assert (change.kind, change.erroring) == ("degraded", True)
    assert change.factor == pytest.approx(0.5)
    assert change.source == "nvlink.txt; errors.txt"


def test_the_doctor_says_the_job_crosses_a_degraded_erroring_link(run_cli, files):
    """The doctor's finding on the job names both facts of the link it crosses."""
    status, out, err = run_cli(
        "doctor", "-t", "h100-ib-cluster", "--nodes", "2",
        "--health", files["links.txt"], "--health", files["errors.txt"], "--json",
    )  # fmt: skip
    assert status == 0, err
    job = json.loads(out)["health"]["job"]
    (link,) = [f for f in job if f["code"] == "ring-crosses-degraded-link"]
    said = "keeps 25% of its bandwidth and its error counters are over their threshold"
    assert said in link["message"]
    assert "iblinkinfo links.txt; ibqueryerrors errors.txt" in link["fix"]
