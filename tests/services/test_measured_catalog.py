"""A measured run read for the collectives view, its report and ``snapshot --measured``
is read with the hardware catalog, as ``calibrate`` reads it: a measurements entry whose
``hardware`` block names an unknown gpu or link id is refused in one line naming file,
line, entry id and field, not compared as a run on other hardware."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.errors import FabricError
from fabricui.services.collective import measured_run
from fabricui.services.reports import build_report
from fabricui.services.requests import LaunchRequest, TopologyRequest

#: One 8-GPU all_reduce entry; its hardware block is lines 4 to 8.
ENTRY = """\
- id: box
  op: all_reduce
  nranks: 8
  hardware:
    gpu: {gpu}
    nodes: 1
    gpus_per_node: 8
    intra: {{fabric: nvswitch, link: {link}}}
  rows:
  - [1048576, 28.56, 36.71, 64.24]
  - [16777216, 124.0, 135.33, 236.82]
"""


def measurements(tmp_path: Path, gpu: str = "h100-sxm", link: str = "nvlink4") -> str:
    """The path of a measurements YAML of the entry ``box`` on ``gpu`` and ``link``."""
    path = tmp_path / "measurements.yaml"
    path.write_text(ENTRY.format(gpu=gpu, link=link))
    return str(path)


def test_a_misspelt_gpu_id_is_refused_with_the_catalog(catalog, tmp_path: Path):
    """``gpu: h100-smx``: file, line, entry and field, and the ids it may mean."""
    path = measurements(tmp_path, gpu="h100-smx")
    with pytest.raises(FabricError) as refused:
        measured_run(path, catalog=catalog)
    assert str(refused.value) == (
        f"{path}:5: entry box: hardware.gpu: unknown gpu 'h100-smx' "
        "(nearest: h100-sxm, h200-sxm, v100-sxm2)"
    )


def test_a_misspelt_link_id_is_refused_with_the_catalog(catalog, tmp_path: Path):
    """``link: nvlnk4`` in the block's ``intra``: refused naming that field."""
    path = measurements(tmp_path, link="nvlnk4")
    with pytest.raises(FabricError) as refused:
        measured_run(path, "all_reduce", catalog=catalog)
    said = str(refused.value)
    assert said.startswith(f"{path}:8: entry box: hardware.intra.link: unknown ")
    assert "'nvlnk4'" in said and "\n" not in said


def test_without_a_catalog_the_ids_are_read_as_text(catalog, tmp_path: Path):
    """Library use without a catalog reads the id as written (nothing looked up); with
    it, a well-spelt entry reads the same."""
    assert measured_run(measurements(tmp_path, gpu="h100-smx")).hardware_gpu == "h100-smx"
    path = measurements(tmp_path)
    assert measured_run(path, catalog=catalog) == measured_run(path)


def test_the_report_refuses_a_misspelt_gpu_id(catalog, tmp_path: Path):
    """The collectives report (``build_report``) refuses the entry, not "other hardware"."""
    path = measurements(tmp_path, gpu="h100-smx")
    launch = LaunchRequest(
        topology=TopologyRequest("dgx-h100"), view="collectives", options=(("measured", path),)
    )
    with pytest.raises(FabricError, match=r":5: entry box: hardware\.gpu: unknown gpu"):
        build_report(launch, catalog)


def test_snapshot_measured_refuses_a_misspelt_gpu_id_in_one_line(run_cli, tmp_path: Path):
    """``snapshot collectives --measured FILE`` with ``gpu: h100-smx``: a failing status
    and one error line naming file, line, entry and field; nothing on standard output."""
    path = measurements(tmp_path, gpu="h100-smx")
    status, out, err = run_cli(
        "snapshot", "collectives", "-t", "dgx-h100", "--measured", path, "-o", "-"
    )
    assert status != 0 and out == ""
    assert err == (
        f"fabricui: error: {path}:5: entry box: hardware.gpu: unknown gpu 'h100-smx' "
        "(nearest: h100-sxm, h200-sxm, v100-sxm2)\n"
    )
    assert "Traceback" not in err
    status, out, err = run_cli(
        "snapshot", "collectives", "-t", "dgx-h100", "--measured", measurements(tmp_path)
    )
    assert status == 0, err
    assert "Measured: " in out and "other hardware" not in out


def test_a_pasted_measurements_entry_reads_as_its_file_does(catalog, tmp_path: Path):
    """A measurements YAML pasted into the view (or given on standard input) is read as
    the file is, with the catalog: the same rows, and a misspelt id refused at its line."""
    pasted = measured_run(ENTRY.format(gpu="h100-sxm", link="nvlink4"), catalog=catalog)
    from_file = measured_run(measurements(tmp_path), catalog=catalog)
    assert (pasted.entry_id, pasted.rows, pasted.hardware_gpu) == (
        from_file.entry_id,
        from_file.rows,
        from_file.hardware_gpu,
    )
    with pytest.raises(FabricError, match=r"^pasted output:5: entry box: hardware\.gpu: "):
        measured_run(ENTRY.format(gpu="h100-smx", link="nvlink4"), catalog=catalog)


def test_snapshot_measured_reads_a_measurements_yaml_on_stdin(run_cli, monkeypatch):
    """``--measured -`` with a measurements YAML on standard input: compared, not refused
    as having no nccl-tests table."""
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(ENTRY.format(gpu="h100-sxm", link="nvlink4")))
    status, out, err = run_cli("snapshot", "collectives", "-t", "dgx-h100", "--measured", "-")
    assert status == 0, err
    assert "Measured: " in out and "other hardware" not in out
