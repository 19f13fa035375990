"""``collective --tuner`` writes NCCL's example tuner config only for fabrics that run NCCL:
RCCL's ext-tuner reads no config file, and TPUs or Trainium run their vendor's library."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ("tpu-v5p-torus", "tpu-v5p-torus runs google's collective library, not NCCL"),
        ("mi300x-node", "mi300x-node runs RCCL, not NCCL (RCCL's ext-tuner plugin reads no"),
    ],
)
def test_tuner_is_refused_for_other_libraries(run_cli, tmp_path, topology, message):
    """One line naming the library, exit status 2, no file and no table written."""
    target = tmp_path / "t.conf"
    status, out, err = run_cli(
        "collective", "all_reduce", "1G", "-t", topology, "--tuner", str(target)
    )
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1
    assert not target.exists()


def test_tuner_is_written_for_nccl(run_cli, tmp_path):
    """An NVIDIA fabric still gets its config."""
    target = tmp_path / "t.conf"
    status, _, err = run_cli(
        "collective", "all_reduce", "1G", "-t", "dgx-h100", "--tuner", str(target)
    )
    assert status == 0, err
    assert target.read_text().startswith("# NCCL example tuner plugin configuration")
