"""A NIC device missing from its host's own listing (a dead HCA the driver no longer lists):
the real DGX H100 ``ibstat`` with one compute HCA taken out. A name missing while a later
one is listed is that NIC (taken as down); the last name missing says only that one NIC is
gone, since the kernel renames the devices after a lost HCA; either is one note (stderr,
``--json`` ``health.notes``, the report's "As it is" section)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fabricui.fabric.health import health_of
from fabricui.render.markdown import render_markdown
from fabricui.services.health import report_of
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.services.session import load_fabric

#: 8 CX-7 NDR InfiniBand HCAs (the topology's NICs: mlx5_0, 3, 4, 5, 6, 9, 10, 11) and 4
#: CX-6 Dx Ethernet ones, as gpud's fixture has them.
SAMPLE = (
    Path(__file__).parents[1]
    / "data/health/infiniband/ibstat_h100_8x_ndr_ib_plus_cx6dx_eth_three_ports_down_disabled.txt"
)
GONE = (
    "an HCA the driver does not list (dead, unseated, or its driver failed to load) carries "
    "no traffic"
)
KEPT = (
    "n1.txt: mlx5_6 (NIC 4 in net.adapters) is missing from n1's device listing, while mlx5_7 "
    f"after it is listed: {GONE}, and the devices after it kept their names, so it is that "
    "NIC, taken as down"
)
RENAMED = (
    "n1.txt: mlx5_11 (NIC 7 in net.adapters) is missing from n1's device listing, which has 7 "
    f"InfiniBand ports for 8 NICs: {GONE}, but the kernel names devices in the order it finds "
    "them, so after a lost HCA every later name moves down by one and which NIC is gone cannot "
    "be told from the names: every NIC is priced up, and n1's ports are not placed by name "
    "(give iblinkinfo or ibnetdiscover output with it)"
)


def _without(tmp_path: Path, device: str, down: str | None = None, storage_ib: bool = False) -> str:
    """n1's ibstat: the sample without ``device``'s CA block (and ``down``'s port down; with
    ``storage_ib`` the four storage HCAs' ports on InfiniBand, as a DGX H100 may have them)."""
    text = SAMPLE.read_text().split("\n", 2)[2]  # the collector's two header lines
    if storage_ib:
        text = text.replace("Link layer: Ethernet", "Link layer: InfiniBand")
    blocks = re.split(r"(?m)^(?=CA ')", text)
    kept = [b for b in blocks if not b.startswith(f"CA '{device}'")]
    assert len(kept) == len(blocks) - 1
    if down is not None:
        kept = [
            b.replace("State: Active", "State: Down") if b.startswith(f"CA '{down}'") else b
            for b in kept
        ]
    path = tmp_path / "n1.txt"
    path.write_text("".join(kept))
    return str(path)


def test_a_missing_device_with_later_names_listed_is_that_nic_down(catalog, tmp_path):
    """mlx5_6 gone, mlx5_7 ... mlx5_11 listed: n1.nic4's cable is down and GPU 4 moves to
    another NIC of n1; the note says why."""
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=(_without(tmp_path, "mlx5_6"),)),
        catalog,
        report_health=False,
    )
    overlay = health_of(fabric)
    report = report_of(fabric)
    assert overlay is not None and report is not None
    assert [(c.kind, c.label) for c in overlay.changes] == [
        ("down", "n1.nic4 (n1 mlx5_6) -> leaf4")
    ]
    assert overlay.unmatched == ()
    assert report.notes == [KEPT]
    assert fabric.device_name(int(fabric.gpu_nic[8 + 4])) != "n1.nic4"


def test_the_last_name_missing_is_said_and_nothing_is_guessed(catalog, tmp_path):
    """mlx5_11 gone (as after a reboot with any one HCA dead, the later ones renamed), and
    mlx5_4 down: no NIC is taken as down or placed by name; the note says why and mlx5_4's
    finding says it is not applied."""
    health = (_without(tmp_path, "mlx5_11", down="mlx5_4"),)
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=health), catalog, report_health=False
    )
    overlay = health_of(fabric)
    report = report_of(fabric)
    assert overlay is not None and report is not None
    assert overlay.changes == () and overlay.unmatched == ()
    assert report.notes == [RENAMED]
    (finding,) = [f for f in report.findings if f.where == "mlx5_4 port 1"]
    assert finding.fix.endswith(
        "--health does not apply it: mlx5_11 (NIC 7 in net.adapters) is missing from n1's "
        "device listing, so the names after it may have moved: which NIC this port is cannot "
        "be told (give iblinkinfo or ibnetdiscover output with it)"
    )


def test_the_last_name_missing_beside_infiniband_storage_ports_is_said(catalog, tmp_path):
    """Storage HCAs on InfiniBand too: 11 InfiniBand ports for 8 NICs, but the names run
    mlx5_0 to mlx5_10 with no gap and stop before mlx5_11, so one HCA is lost and the names
    after it moved: said, and nothing guessed."""
    health = (_without(tmp_path, "mlx5_11", down="mlx5_4", storage_ib=True),)
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=health), catalog, report_health=False
    )
    overlay, report = health_of(fabric), report_of(fabric)
    assert overlay is not None and report is not None
    assert overlay.changes == () and overlay.unmatched == ()
    assert report.notes == [
        RENAMED.replace(
            "which has 7 InfiniBand ports for 8 NICs",
            "which lists mlx5_0 to mlx5_10 with no gap and stops before mlx5_11",
        )
    ]
    assert report.notes != [RENAMED]


@pytest.mark.parametrize(
    "listed, missing, run",
    [
        pytest.param(range(11), ["mlx5_11"], ("mlx5_0", "mlx5_10"), id="one-lost"),
        pytest.param(range(10), ["mlx5_10", "mlx5_11"], ("mlx5_0", "mlx5_9"), id="two-lost"),
        pytest.param(range(8), ["mlx5_9", "mlx5_10", "mlx5_11"], None, id="other-server"),
        pytest.param([0, 1, 3, 4], ["mlx5_5"], None, id="gap"),
        pytest.param(range(1, 11), ["mlx5_11"], None, id="not-from-0"),
    ],
)
def test_names_stop_short_only_of_a_listing_renamed_after_lost_hcas(listed, missing, run):
    """Only names from 0 with no gap, as many short of the last NIC name as are missing."""
    from fabricui.services.health_absent import _names_stop_short

    assert _names_stop_short(missing, {f"mlx5_{n}" for n in listed}) == run


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tLink layer: InfiniBand\n", id="one"
        ),
        pytest.param(None, id="whole"),
    ],
)
def test_one_device_or_every_device_listed_says_nothing(catalog, tmp_path, text):
    """``ibstat mlx5_0`` (one device) and the whole sample: no note."""
    path = tmp_path / "n1.txt"
    path.write_text(text if text is not None else SAMPLE.read_text().split("\n", 2)[2])
    fabric = load_fabric(
        TopologyRequest("h100-ib-cluster", 2, health=(str(path),)), catalog, report_health=False
    )
    report = report_of(fabric)
    assert report is not None and report.notes == []


def test_the_note_is_on_stderr_in_json_and_in_the_report(run_cli, catalog, tmp_path):
    """The command line says it as a note on stderr and in ``health.notes``; the Markdown
    report in its "As it is" section."""
    health = _without(tmp_path, "mlx5_6")
    argv = ("-t", "h100-ib-cluster", "--nodes", "2", "--health", health, "n1.g4", "n0.g4")
    status, out, err = run_cli("path", *argv, "--json")
    assert status == 0, err
    assert json.loads(out)["health"]["notes"] == [KEPT]
    assert f"fabricui: note: {KEPT}" in err.splitlines()
    request = TopologyRequest("h100-ib-cluster", 2, health=(health,))
    text = render_markdown(build_report(LaunchRequest(request, view="topology"), catalog))
    assert KEPT in text.split("## As it is", 1)[1]
