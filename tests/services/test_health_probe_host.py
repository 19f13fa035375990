"""An output ``fabricui probe`` wrote (``fabricui-probe-HOST/ibstat.txt``) belongs to the
host its ``probe.json`` names, not to a host called ``ibstat``; the folder itself is
refused in one line naming the files to give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _ibstat import ibstat_text

from fabricui.fabric.health import health_of
from fabricui.importers.common import ParseError
from fabricui.services.health import read_health
from fabricui.services.probe import ProbeReport, ToolRun
from fabricui.services.probe_folder import host_of_output
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric


def _ibstat(down: int) -> str:
    """An ``ibstat`` of eight one-port NDR adapters ``mlx5_<k>``, ``mlx5_<down>`` down."""
    return ibstat_text(down={down}, down_phys="Polling", guids=True)


def _probe_folder(parent: Path, host: str, folder: str | None = None) -> Path:
    """A folder as ``fabricui probe`` writes it on ``host``: ``ibstat.txt`` (mlx5_2 down)
    and the ``probe.json`` that lists it."""
    path = parent / (folder or f"fabricui-probe-{host}")
    path.mkdir()
    (path / "ibstat.txt").write_text(_ibstat(2))
    run = ToolRun("ibstat", "ok", files=["ibstat.txt"])
    report = ProbeReport(host=host, folder=str(path), runs=[run])
    (path / "probe.json").write_text(json.dumps(report.to_json()))
    return path


def _removed(health: tuple[str, ...], catalog) -> list[str]:
    fabric = load_fabric(TopologyRequest("dgx-h100-pod", health=health), catalog)
    overlay = health_of(fabric)
    assert overlay is not None
    return [c.label for c in overlay.changes if c.kind == "down"]


def test_the_probe_json_names_the_host(catalog, tmp_path):
    """n1's probe folder, renamed by the user: its ibstat.txt is n1's, so n1.nic2's cable
    is removed."""
    folder = _probe_folder(tmp_path, "n1", "from-n1")
    assert _removed((str(folder / "ibstat.txt"),), catalog) == ["n1.nic2 (n1 mlx5_2) -> leaf0"]


def test_a_qualified_host_name_is_the_fabric_host_by_its_short_name(catalog, tmp_path):
    """socket.gethostname() may print ``n3.cluster.local``: the fabric's ``n3``."""
    folder = _probe_folder(tmp_path, "n3.cluster.local", "probe")
    assert _removed((str(folder / "ibstat.txt"),), catalog) == ["n3.nic2 (n3 mlx5_2) -> leaf0"]


def test_the_default_folder_name_says_the_host_without_a_probe_json(catalog, tmp_path):
    """Only ibstat.txt copied out of ``fabricui-probe-n2``: the folder's name is the host."""
    folder = tmp_path / "fabricui-probe-n2"
    folder.mkdir()
    (folder / "ibstat.txt").write_text(_ibstat(2))
    assert host_of_output(folder / "ibstat.txt") == "n2"
    assert _removed((str(folder / "ibstat.txt"),), catalog) == ["n2.nic2 (n2 mlx5_2) -> leaf0"]


def test_a_file_the_probe_did_not_write_keeps_its_own_name(tmp_path):
    """A file put beside probe.json by hand (not in its list) is not the probe's host's."""
    folder = _probe_folder(tmp_path, "n1")
    (folder / "n0.txt").write_text(_ibstat(1))
    assert host_of_output(folder / "n0.txt") is None
    assert host_of_output(folder / "ibstat.txt") == "n1"
    (item,) = read_health([str(folder / "n0.txt")]).inputs
    assert item.host_hint == "n0"


def test_a_probe_folder_is_refused_naming_its_outputs(tmp_path):
    """``--health FOLDER`` of a probe: one line naming the ibstat.txt to give."""
    folder = _probe_folder(tmp_path, "n1")
    with pytest.raises(ParseError) as caught:
        read_health([str(folder)])
    assert caught.value.message == (
        f"--health {folder}: a folder fabricui probe wrote, not a file; give its outputs as "
        f"files: --health {folder / 'ibstat.txt'}"
    )
