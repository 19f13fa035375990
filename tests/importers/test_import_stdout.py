"""``import FILE -o -``: stdout is the spec alone (it can be redirected to a file and opened),
the summary goes to stderr; for every format that writes a spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.fabric import build_fabric
from fabricui.hwdb.topology_file import parse_topology
from fabricui.hwdb.yamlfile import parse_yaml

DATA = Path(__file__).resolve().parents[1] / "data"
TOPO = DATA / "topo"
FABRIC = DATA / "fabric"


@pytest.mark.parametrize(
    ("argv", "summary"),
    [
        (
            [str(TOPO / "nvidia_smi_topo" / "h100_8gpu_nv18_ht_affinity_ml_engineering.txt")],
            "nvidia-smi topo -m: 8 GPUs",
        ),
        (
            ["nvidia-smi", str(TOPO / "nvidia_smi_topo" / "dual_gpu_nv2_ml_engineering.txt")],
            "nvidia-smi topo -m: 2 GPUs",
        ),
        ([str(TOPO / "nccl_topo_xml" / "azure_ndv4_topo.txt")], "NCCL topology XML: 4 CPUs"),
        (
            [str(TOPO / "ib_rocm" / "rocm_smi_showtopo_4gpu_pcie_rocm_smi_lib_108.txt")],
            "rocm-smi --showtopo: 4 GPUs",
        ),
        (
            [
                str(FABRIC / "ibnetdiscover" / "nvidia_rufm_lab_hdr_fdr_small_2021.txt"),
                "--node",
                "dgx-a100",
            ],
            "ibnetdiscover: 2 switches",
        ),
    ],
)
def test_dash_o_stdout_is_only_the_spec(tmp_path, run_import, run_cli, catalog, argv, summary):
    """All of stdout loads as a topology spec and `fabricui path` opens it saved; the
    summary and the 'read as' note are on stderr."""
    status, stdout, err = run_import(*argv, "-o", "-")
    assert status == 0, err
    assert stdout.startswith(("# Topology spec", "# Cluster topology")), stdout[:200]
    assert summary in err and summary not in stdout
    if len(argv) == 1 or argv[0].startswith("/"):  # format recognised, not named
        assert "note: read as" in err and "note:" not in stdout
    spec = parse_topology(parse_yaml(stdout, "<stdout>"), catalog, default_id="imported")
    build_fabric(spec, catalog)
    saved = tmp_path / "s.yaml"
    saved.write_text(stdout, encoding="utf-8")
    status, out, err = run_cli("path", "0", "1", "-t", str(saved))
    assert status == 0 and "bottleneck:" in out, err


def test_dash_o_that_cannot_make_a_spec_prints_nothing_on_stdout(run_import):
    """A format with no GPUs (ibstat) still fails with one line, and stdout stays empty, so
    a redirect does not leave half a spec behind."""
    src = TOPO / "ib_rocm" / "ibstat_partial_redacted_with_ibpanic_gpud_752.txt"
    status, stdout, err = run_import(str(src), "-o", "-")
    assert status == 2 and stdout == ""
    assert "cannot become a topology spec" in err.splitlines()[-1]
