"""Headless parts of the explorer: data wrappers, the ring stepper, snapshot and explore CLIs."""

from __future__ import annotations

import argparse

import pytest

from fabricui import api
from fabricui.cli import main
from fabricui.errors import FabricError
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest, WhatIf
from fabricui.tui.widgets.ring_stepper import cell_text, ring_steps


def snapshot_main(argv: list[str]) -> int:
    """``fabricui snapshot ARGV``."""
    return main(["snapshot", *argv])


@pytest.fixture(scope="module")
def pod(tui_catalog) -> LoadedFabric:
    """dgx-h100-pod on the fixed catalog."""
    return LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog=tui_catalog)


def test_pyramid_tiers_are_hwdb_records_and_routed_paths(pod):
    """SMEM and HBM from the GPU record; peer and NIC tiers are the engine's paths."""
    tiers = {t.name: t for t in pod.pyramid()}
    gpu = pod.fabric.gpu
    assert tiers["SMEM / registers"].bw_GBps == gpu.smem_bw_GBps
    assert tiers["HBM3"].bw_GBps == gpu.hbm_bw_GBps
    peer = api.path(pod.fabric, "n0.g0", "n0.g1")
    assert tiers["NVLink 4.0 peer"].bw_GBps == peer.bottleneck_GBps
    assert tiers["NVLink 4.0 peer"].lat_us == peer.latency_us
    nic = api.path(pod.fabric, "n0.g0", "n1.g0")
    assert tiers["NIC (InfiniBand NDR)"].bw_GBps == nic.bottleneck_GBps == 50.0


@pytest.mark.parametrize(
    ("topology", "nic_detail"),
    [
        # 8 NVL72 racks: the NIC tier's path goes to the first tray of the next rack.
        ("gb200-nvl72-cluster", "n0.g0->n18.g0: bottleneck n0.nic0->leaf0 50 GB/s"),
        # One rack: no host outside its NVLink domain, so the NIC's port rate, said so.
        ("gb200-nvl72", "ib-ndr port rate (hwdb; no host outside its scale-up domain, no route)"),
    ],
)
def test_pyramid_tells_the_scale_up_domain_from_the_nic(tui_catalog, topology, nic_detail):
    """Trays of one NVL72 rack reach each other over its NVLink switches: that is a tier
    of its own, and the NIC tier is not an NVLink path named NIC."""
    data = LoadedFabric.load(TopologyRequest(topology), catalog=tui_catalog)
    tiers = {t.name: t for t in data.pyramid()}
    across = tiers["NVLink 5.0 across hosts"]
    assert across.detail.startswith("n0.g0->n1.g0: ") and across.bw_GBps == 900.0
    nic = tiers["NIC (InfiniBand NDR)"]
    assert nic.bw_GBps == 50.0 and nic.detail == nic_detail


def test_pyramid_finds_the_spine_of_an_imported_cluster(tmp_path, tui_catalog):
    """Switches keep their real names (sw05), so the spine tier is told by device kind;
    the hosts of a leaf are not the first and last nodes, so other nodes are tried."""
    conf = tmp_path / "topology.conf"
    conf.write_text(
        "SwitchName=sw00 Nodes=h[0-1,5]\nSwitchName=sw01 Nodes=h[2-4]\n"
        "SwitchName=sw05 Switches=sw[00-01]\n"
    )
    spec = tmp_path / "cluster.yaml"
    status = main(["import", "slurm-topology", str(conf), "--node", "dgx-h100", "-o", str(spec)])
    assert status == 0
    data = LoadedFabric.load(TopologyRequest(str(spec)), catalog=tui_catalog)
    tiers = {t.name: t for t in data.pyramid()}
    assert tiers["spine"].detail.startswith(("h0.g0->h2.", "h0.g0->h3.", "h0.g0->h4."))
    assert tiers["spine"].lat_us > tiers["NIC (InfiniBand NDR)"].lat_us


def test_map_names_an_imported_clusters_switches(tmp_path, tui_catalog):
    """The network rows of an imported cluster read its switches' names, not indices."""
    from fabricui.tui.widgets.topology_map import build_layout

    conf = tmp_path / "topology.conf"
    conf.write_text(
        "SwitchName=ib-a Nodes=h[0-1]\nSwitchName=ib-b Nodes=h[2-3]\n"
        "SwitchName=ib-top Switches=ib-a,ib-b\n"
    )
    spec = tmp_path / "cluster.yaml"
    assert main(["import", "slurm-topology", str(conf), "--node", "dgx-h100", "-o", str(spec)]) == 0
    data = LoadedFabric.load(TopologyRequest(str(spec)), catalog=tui_catalog)
    text = ["".join(cell.text for cell in line) for line in build_layout(data.fabric, 100).lines]
    assert any(line.startswith("Leaf") and "ib-a" in line and "ib-b" in line for line in text)
    assert any(line.startswith("Spine") and "ib-top" in line for line in text)


def test_what_if_changes_the_spec_and_refuses_missing_knobs(tui_catalog):
    """NIC rate and scale-up links rebuild the fabric; a PCIe box has no scale-up links."""
    data = LoadedFabric.load(
        TopologyRequest("dgx-h100-pod", what_if=WhatIf(200.0, 9)), catalog=tui_catalog
    )
    assert data.path(0, 31, None).bottleneck_GBps == 25.0
    assert data.path(0, 1, None).bottleneck_GBps == 225.0
    with pytest.raises(FabricError, match="no scale-up links"):
        LoadedFabric.load(
            TopologyRequest("pcie-rtx4090x2", what_if=WhatIf(None, 2)), catalog=tui_catalog
        )


@pytest.mark.parametrize(
    ("op", "steps"), [("all_reduce", 6), ("all_gather", 3), ("reduce_scatter", 3), ("broadcast", 6)]
)
def test_ring_stepper_ends_with_the_collective_done(op, steps):
    """Each op takes the textbook number of steps and ends in its final state."""
    run = ring_steps(op, 4)
    assert len(run) == steps
    final = [[cell_text(h, 4) for h in row] for row in run[-1].state]
    if op == "all_reduce":
        assert all(cell == "all" for row in final for cell in row)
    elif op == "reduce_scatter":
        assert [row[(r + 1) % 4] for r, row in enumerate(final)] == ["all"] * 4
    else:
        expected = ["0", "1", "2", "3"] if op == "all_gather" else ["0"] * 4
        assert all(row == expected for row in final)


def test_snapshot_cli_writes_text_and_never_overwrites(tmp_path, capsys):
    """-o FILE.txt renders the view as text; the same name again is refused (exit 2)."""
    out = tmp_path / "topo.txt"
    args = ["topology", "--src", "n0.g1", "--dst", "n2.g6", "--size", "100x30", "-o", str(out)]
    assert snapshot_main(args) == 0
    text = out.read_text()
    assert "n0.g1 -> n2.g6" in text and "bottleneck" in text
    assert snapshot_main(args) == 2
    assert "exists" in capsys.readouterr().err
    assert out.read_text() == text


def test_snapshot_cli_writes_a_markdown_report(tmp_path):
    """-o FILE.md: a report (title, command, version, topology facts, a Markdown table of
    the collective with NCCL's pick and the best pick, sources) with the fabric's diagram
    beside it and linked (a drawing, not a screen: no key bar)."""
    out = tmp_path / "collectives.md"
    args = ["collectives", "--sweep", "1G", "--terminal-size", "100x30", "-o", str(out)]
    assert snapshot_main(args) == 0
    text = out.read_text()
    lines = text.splitlines()
    assert lines[0] == "# fabricui: Collectives · dgx-h100-pod"
    assert "\nfabricui snapshot collectives --sweep 1G\n" in text
    assert (
        "| size | time | algbw GB/s | busbw GB/s | NCCL 2.30.7's pick | best pick | gain |" in text
    )
    assert any(line.startswith("| 1 GiB |") for line in lines)
    assert "![the fabric, drawn as `fabricui export` draws it](collectives-fabric.svg)" in text
    assert "## Sources" in text and "<https://" in text
    diagram = (tmp_path / "collectives-fabric.svg").read_text()
    assert diagram.startswith("<svg") and "Quit" not in diagram and ">leaf0<" in diagram


def test_snapshot_to_stdout_is_a_report_without_screen_chrome(capsys):
    """``snapshot topology -o -``: the hop table and the command that reproduces it, and
    nothing of the screen (no key bar, no title glyph)."""
    assert snapshot_main(["topology", "--src", "n0.g1", "--dst", "n2.g6", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# fabricui: Topology · dgx-h100-pod\n")
    assert "\nfabricui snapshot topology --src n0.g1 --dst n2.g6\n" in out
    assert "| # | from | to | link | GB/s | lat us | hardware |" in out
    assert "| 5 | n0.nic6 | leaf1 | ib-ndr | 50.0 |" in out  # PXN: over NVLink to rail 6
    assert "Quit" not in out and "⭘" not in out


def test_snapshot_cli_draws_the_jobs_underlines(tmp_path, capsys):
    """``snapshot topology --jobs FILE``: the text names the running jobs above the map
    (the SVG underlines their GPUs: tests/tui/test_jobs_saved.py), and the report's command
    keeps ``--jobs``; a file that is not a job listing is one line, exit 2."""
    squeue = tmp_path / "squeue.txt"
    squeue.write_text(
        "JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)\n7 b a u R 1:00 2 n[0-1]\n"
    )
    out = tmp_path / "topo.txt"
    args = ["topology", "-t", "h100-ib-cluster", "--nodes", "4", "--jobs", str(squeue)]
    assert snapshot_main([*args, "--size", "100x30", "-o", str(out)]) == 0
    assert "underlined: job 7 n[0-1]" in out.read_text()
    capsys.readouterr()
    assert snapshot_main([*args, "-o", "-"]) == 0
    assert f"--nodes 4 --jobs {squeue}" in capsys.readouterr().out
    notes = tmp_path / "notes.txt"
    notes.write_text("not a job listing\n")
    args[-1] = str(notes)
    assert snapshot_main([*args, "-o", str(tmp_path / "x.svg")]) == 2
    err = capsys.readouterr().err
    assert f"--jobs {notes}" in err and err.count("\n") == 1
    assert not (tmp_path / "x.svg").exists()


#: An all_reduce_perf output of one process driving 8 GPUs (-g 8), two sizes.
MEASURED_G8 = """# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor)
#       size         count      type   redop    root     time   algbw   busbw #wrong
           8             2     float     sum      -1    34.66    0.00    0.00      0
  1073741824     268435456     float     sum      -1   8159.5  131.59  230.29      0
"""


def test_collectives_report_keeps_the_nccl_settings_and_the_measured_run(tmp_path, capsys):
    """``snapshot collectives --nccl 2.21 --env NCCL_ALGO=ring --measured FILE``: NCCL
    2.21's picks under the setting (rings only), at the run's sizes, priced as it was
    launched (one process, 8 GPUs: 2.1 + 8 * 4.2 = 35.7 us at 8 B), with the measured time
    and the error per size, and the command that reproduces all of it."""
    run = tmp_path / "run.txt"
    run.write_text(MEASURED_G8)
    args = ["collectives", "-t", "dgx-a100", "--group", "host", "--nccl", "2.21"]
    args += ["--env", "NCCL_ALGO=ring", "--measured", str(run), "-o", "-"]
    assert snapshot_main(args) == 0
    out = capsys.readouterr().out
    assert f"--nccl 2.21 --env NCCL_ALGO=ring --measured {run}\n" in out
    assert "what NCCL 2.21.5 with NCCL_ALGO=ring runs" in out
    assert "| measured | error |" in out
    rows = [line for line in out.splitlines() if line.startswith(("| 8 B", "| 1 GiB"))]
    assert len(rows) == 2 and all("| ring/" in row for row in rows)
    assert rows[0].startswith("| 8 B | 35.7 us |") and "| 34.7 us | +3% |" in rows[0]
    assert f"Measured: {run}, 8 ranks; each thread drove 8 GPUs, priced so" in out


def test_strategies_report_has_the_layout_and_the_search(capsys):
    """``snapshot strategies --layout L --search -o -``: the decision table with its compute
    basis, the layout's step breakdown (parts adding up to the step) and operations, and
    the fastest layouts named as ``plan --search`` names them."""
    args = ["strategies", "--model", "llama3-8b", "--layout", "tp8 zero1", "--search", "-o", "-"]
    assert snapshot_main(args) == 0
    out = capsys.readouterr().out
    assert "kernel model (h100-sxm)" in out
    assert (
        "**layout tp8 pp1 ep1 zero1, dp 4, 1 micro-batch of 1, global batch 4 x 8192 tokens: "
        "step per GPU"
    ) in out
    assert "| part | ms | share |" in out and "| step |" in out
    assert "| operation | group | ms | exposed ms | algorithm | what |" in out
    assert (
        "**fastest layouts (only those whose memory fits, global batch 32 x 8192 tokens)**" in out
    )
    ranked = [line for line in out.splitlines() if line.startswith("| 1 | tp")]
    assert ranked and "zero1" in ranked[0]  # searched with the layout's DP flavour
    assert "Assumed: " in out


def test_snapshot_all_writes_every_view_in_the_format_asked(tmp_path):
    """``--all --format txt`` writes VIEW.txt for every view."""
    out = tmp_path / "shots"
    assert snapshot_main(["--all", "--format", "txt", "--size", "100x30", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{v}.txt" for v in ("topology", "pyramid", "collectives", "strategies", "plugins")
    )


def test_a_view_that_cannot_be_computed_writes_nothing(tmp_path, capsys):
    """``snapshot strategies --layout 'tp8 pp3'`` on 32 GPUs: exit 2, one line, no file."""
    out = tmp_path / "s.svg"
    assert snapshot_main(["strategies", "--layout", "tp8 pp3", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not divide" in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["topology", "-t", "nope"], "unknown topology 'nope'"),
        (["topology", "--src", "n9.g0"], "no GPU n9.g0"),
        (["topology", "--src", "n0.g1", "--dst", "1"], "same GPU"),
        (["collectives", "--op", "allreduce"], "unknown operation"),
        (["strategies", "--model", "gpt5"], "unknown model"),
        (["topology", "--size", "80by24"], "invalid --terminal-size"),
        (["pyramid", "-o", "x.png"], "use a .md, .svg or .txt file name"),
        (["collectives", "--nccl", "1.2"], "predates the tuning model"),
        (["collectives", "--env", "FOO"], "--env 'FOO': give NCCL_NAME=value"),
        (["collectives", "--measured", "/no/such/run.txt"], "no such file"),
    ],
)
def test_snapshot_cli_bad_input_is_one_line_exit_2(argv, message, tmp_path, capsys):
    """Bad input: one line on stderr, exit status 2, no file written."""
    if "-o" not in argv:
        argv = [*argv, "-o", str(tmp_path / "out.svg")]
    assert snapshot_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out.svg").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"topology": "nope"}, "unknown topology"),
        ({"src": "n0.g99"}, "no GPU n0.g99"),
        ({"view": "graphs"}, "unknown view"),
        ({"nodes": 0}, "at least 1"),
    ],
)
def test_explore_rejects_bad_options_before_starting(options, message, monkeypatch):
    """fabricui explore checks its options first (the CLI prints one line, exit 2)."""
    from fabricui.commands import explore
    from fabricui.tui.app import FabricApp
    from fabricui.tui.launch import run_explorer

    def never(self, *args, **kwargs):
        raise AssertionError("the app started despite bad options")

    monkeypatch.setattr(FabricApp, "run", never)

    with pytest.raises(FabricError, match=message):
        run_explorer(explore.launch_request(argparse.Namespace(**options)))


def test_what_if_names_the_generation_it_assumes(tui_catalog):
    """NIC 800 Gb/s on an NDR pod is XDR InfiniBand: the spec and the label say so."""
    data = LoadedFabric.load(
        TopologyRequest("dgx-h100-pod", what_if=WhatIf(800.0, None)), catalog=tui_catalog
    )
    assert data.spec.net.link == "ib-xdr" and data.spec.net.gbps == 800.0
    assert data.label == "dgx-h100-pod (NIC 800 Gb/s ib-xdr)"


@pytest.mark.parametrize(
    "topology", ["dgx-h100-pod", "h100-ib-cluster", "gb200-nvl72-cluster", "trn2-ultraserver"]
)
def test_map_lines_fit_the_maps_width(topology, tui_catalog):
    """No map line runs past the map's width at 80 columns (33 for the map) or wider: the
    network summary and a scale-up domain's title wrap or shorten instead of being cut
    off under a horizontal scrollbar."""
    from fabricui.tui.widgets.topology_map import build_layout

    data = LoadedFabric.load(TopologyRequest(topology), catalog=tui_catalog)
    for width in (33, 60, 120):
        layout = build_layout(data.fabric, width)
        text = ["".join(cell.text for cell in line) for line in layout.lines]
        assert layout.width <= width, [line for line in text if len(line) > width][:2]
    assert any(line.startswith("network:") for line in text)
