"""``calibrate --entry`` of digits other than ASCII ones (a superscript two, an
Arabic-Indic three) is an entry id, refused as one in one line, never a traceback."""

from __future__ import annotations

import pytest

from tests.calibration._model_outputs import all_reduce_output, hosts_in_blocks


@pytest.mark.parametrize("entry", ["²", "٣"])
def test_an_entry_of_other_digits_is_an_id(run_calibrate, tmp_path, entry):
    """``int`` refuses ``²`` (``str.isdigit`` accepts it) and reads ``٣`` as 3: both are
    ids, and the line names what was given."""
    output = tmp_path / "all_reduce_perf.txt"
    sizes = [2**k for k in range(20, 31)]
    times = [10.0 + size / 20e3 for size in sizes]
    placement = hosts_in_blocks(["node0", "node1"], 8)
    output.write_text(all_reduce_output(sizes, times, placement, gpu="NVIDIA A100-SXM4-80GB"))
    status, out, err = run_calibrate(str(output), "-t", "dgx-a100", "--entry", entry)
    assert status == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1, err
    assert f"--entry {entry}: an entry id picks an entry of a measurements YAML" in err
