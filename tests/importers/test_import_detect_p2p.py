"""``import FILE`` recognises a ``nvidia-smi topo -m`` matrix saved with a ``topo -p2p``
matrix (before or after it), and a ``-p2p`` matrix alone points at ``import nvidia-smi``."""

from __future__ import annotations

from pathlib import Path

import pytest

TOPO = Path(__file__).resolve().parents[1] / "data" / "topo" / "nvidia_smi_topo"

#: A ``topo -p2p rw`` matrix pasted above the ``topo -m`` one.
P2P_FIRST = (
    " \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n\n"
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV4\t0-63\t0\nGPU1\tNV4\t X \t0-63\t0\n"
)


@pytest.mark.parametrize(
    ("name", "link"),
    [
        ("rtx5090_2gpu_phb_plus_p2p_rw_gns_club3090_1229.txt", "GPU-GPU: PHB x1"),
        ("consumer_2gpu_node_terminal_wrapped_legend_club3090_1125.txt", "GPU-GPU: NODE x1"),
    ],
)
def test_topo_m_followed_by_p2p_is_recognised(run_import, name, link):
    """The saved files as users post them read as nvidia-smi, as naming the format does."""
    status, out, err = run_import(str(TOPO / name))
    assert status == 0, err
    assert out.startswith("nvidia-smi topo -m: 2 GPUs") and link in out
    assert "note: read as nvidia-smi output" in out
    assert "note: ignored a `nvidia-smi topo -p2p` matrix" in out
    named = run_import("nvidia-smi", str(TOPO / name))[1]
    assert out == named + "  note: read as nvidia-smi output (name the format to be sure)\n"


def test_p2p_before_topo_m_is_recognised(tmp_path, run_import):
    """The order of the two matrices does not matter."""
    src = tmp_path / "both.txt"
    src.write_text(P2P_FIRST)
    status, out, err = run_import(str(src))
    assert status == 0, err
    assert out.startswith("nvidia-smi topo -m: 2 GPUs") and "GPU-GPU: NV4 x1" in out


def test_p2p_alone_suggests_naming_the_format(run_import):
    """A file that is only a -p2p matrix is still refused in one line, which says how to
    read a topo -m matrix the detection may have missed."""
    src = TOPO / "h100_8gpu_p2p_r_matrix_ml_engineering.txt"
    status, out, err = run_import(str(src))
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert "`nvidia-smi topo -p2p` matrix (P2P capability), which no importer reads" in err
    assert "`fabricui import nvidia-smi FILE`" in err
