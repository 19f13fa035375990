"""``collective --ideal`` needs at least two ranks: one rank moves nothing (0 us, 0 GB/s)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("nranks", ["1", "0", "-4"])
def test_ideal_needs_two_ranks(run_cli, nranks):
    """``--ideal --nranks 1`` printed 0.00 us and 0.00 GB/s; now one line, exit 2."""
    argv = ("collective", "all_reduce", "1G", "--ideal", "--nranks", nranks, "--bw", "1GB/s")
    status, out, err = run_cli(*argv)
    assert status == 2 and out == ""
    assert err.strip() == (
        f"fabricui: error: --nranks {nranks}: a collective needs at least 2 ranks "
        "(one rank moves nothing)"
    )


def test_ideal_among_two_ranks_is_priced(run_cli):
    """Two ranks is the smallest collective: a positive time."""
    argv = ("collective", "all_reduce", "1G", "--ideal", "--nranks", "2", "--bw", "1GB/s")
    status, out, _ = run_cli(*argv, "--json")
    assert status == 0 and '"nranks": 2' in out


def test_the_ideal_service_refuses_one_rank():
    """The service function behind ``--ideal`` keeps the same floor."""
    from fabricui.errors import ConfigError
    from fabricui.services.collective import ideal_collective

    with pytest.raises(ConfigError, match=r"--nranks N \(>= 2\)"):
        ideal_collective("all_reduce", [1024], 1, 100.0)


def test_ideal_numbers_without_ideal_are_refused(run_cli):
    """--nranks and --bw only mean something with --ideal: alone they are one line, not
    silently ignored beside a topology's prediction."""
    for extra in (("--nranks", "8"), ("--bw", "100GB/s")):
        status, out, err = run_cli("collective", "all_reduce", "1G", *extra)
        assert status == 2 and out == "" and err.count("\n") == 1
        assert f"{extra[0]} is for --ideal" in err
