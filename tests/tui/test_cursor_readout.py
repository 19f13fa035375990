"""On an overview map (one glyph per GPU) a line names the GPU under the cursor and its
running job; a job listing with no job on the fabric is said."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.tui.app import settle
from fabricui.tui.textual_private import notifications
from fabricui.tui.widgets.topology_map import TopologyMap
from tests.tui.test_tui_health import IBSTAT_H100, ibstat_with


def readout(app) -> Static:
    """The cursor line above the map."""
    return app.screen.query_one("#map-cursor", Static)


async def test_the_overview_names_the_gpu_under_the_cursor(app_factory):
    """1,024 GPUs: down down right right puts the cursor on n4.g2, and the line says so
    with its host and rank; zoomed on the node (boxes number their GPUs) it is hidden."""
    app = app_factory(topology="h100-ib-cluster", nodes=128)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert readout(app).display
        assert str(readout(app).render()).startswith("cursor n0.g0 · host n0 · rank 0")
        await pilot.press("down", "down", "right", "right")
        await pilot.pause()
        assert str(readout(app).render()).startswith("cursor n4.g2 · host n4 · rank 34")
        await pilot.press("z")
        await pilot.pause()
        assert not readout(app).display
        await pilot.press("z")
        await pilot.pause()
        assert readout(app).display


async def test_node_boxes_have_no_cursor_line(app_factory):
    """The 4-node pod draws boxes: no cursor line, the map keeps the row."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not readout(app).display


async def test_the_cursor_line_names_the_running_job_and_fits_80_columns(app_factory, tmp_path):
    """``--jobs`` underlines a running job's GPUs; on one, the line says which job. With a
    five-digit rank, NIC marks and the job it still fits 80 columns: the hint, then the
    host (the GPU's name holds it) give way."""

    squeue = tmp_path / "squeue.txt"
    squeue.write_text(
        "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"
        "4242417     batch  llm   mike  R 24:19     2 n[1270-1271]\n"
        "4242418_127 batch  eval  joan  R  0:09     1 n1270\n"
    )
    ibstat = tmp_path / "n1270.txt"
    ibstat.write_text(ibstat_with(IBSTAT_H100, half="mlx5_0", down="mlx5_3"))
    request = TopologyRequest("h100-ib-cluster", 1280, health=(str(ibstat),))
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.jump_to(1270 * 8 + 7)
        await pilot.pause()
        text = str(readout(app).render())
        assert text == "cursor n1270.g7 · rank 10167 · NIC ~0 x1 · job 4242417,4242418_127"
        assert len(text) <= 78 and readout(app).size.height == 1
        app.screen.jump_to(1271 * 8)
        await pilot.pause()
        text = str(readout(app).render())
        assert text == "cursor n1271.g0 · host n1271 · rank 10168 · job 4242417 · s/d mark it"


async def test_a_job_listing_of_another_cluster_is_said_not_counted_as_zero(app_factory):
    """The SchedMD quick-start squeue (hosts adev7, adev8, adev14) on h100-ib-cluster: a
    warning says no running job has a host here and nothing is underlined ('0 running
    job(s) on this fabric: ' said nothing)."""

    data = Path(__file__).resolve().parents[1] / "data" / "health" / "slurm"
    squeue = data / "squeue_schedmd_quickstart_doc_adev_running_pending_resources.txt"
    request = TopologyRequest("h100-ib-cluster", 64)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = [n for n in notifications(app) if n.title == "jobs"]
        assert len(said) == 1 and said[0].severity == "warning"
        assert said[0].message == (
            f"no running job on h100-ib-cluster's hosts in {squeue}: nothing is underlined"
        )
        assert not app.screen.query_one(TopologyMap).job_ranks


async def test_hosts_of_a_job_outside_the_fabric_are_said(app_factory, tmp_path):
    """Job 7 runs on n0, n1 and adev7: n0 and n1 are underlined, and a warning names adev7,
    which is not on the fabric (as place --jobs says it)."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(
        "JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"
        "7 batch a u R 1:00 3 n[0-1],adev7\n"
    )
    request = TopologyRequest("h100-ib-cluster", 4)
    app = app_factory(launch=LaunchRequest(topology=request, options=(("jobs", str(squeue)),)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = [n for n in notifications(app) if n.title == "jobs"]
        assert [n.severity for n in said] == ["information", "warning"]
        assert said[1].message == (
            f"--jobs {squeue}: 1 host(s) of its running jobs are not on h100-ib-cluster "
            "--nodes 4 and are not underlined: adev7"
        )
        assert len(app.screen.query_one(TopologyMap).job_ranks) == 16
