"""Bad command-line input ends in one clear line and exit status 2, never a traceback: a
negative seed, a node count no fabric of the topology holds, a GPU id the topology does not
have, a file that is no free-host list, an empty or multi-line output name, a group of one
GPU. Each case runs the CLI in this process."""

from __future__ import annotations

import pytest

from fabricui.engine.traffic import pattern_flows
from fabricui.errors import EngineError


def one_error(run_cli, *argv: str) -> str:
    """The one stderr line of a refused command (status 2, nothing on stdout)."""
    status, out, err = run_cli(*argv)
    assert (status, out) == (2, ""), err
    assert err.startswith("fabricui: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err.strip()


@pytest.mark.parametrize("seed", ["-1", "-99999999999999999999"])
def test_a_negative_seed_is_refused(run_cli, seed):
    """traffic random-pairs --seed -1: one line, not numpy's ValueError."""
    err = one_error(run_cli, "traffic", "random-pairs", "--seed", seed)
    assert f"--seed must be >= 0 (got {seed})" in err


def test_the_engine_refuses_a_negative_seed_itself():
    """pattern_flows raises its own error, not numpy's."""
    with pytest.raises(EngineError, match="seed must be >= 0"):
        pattern_flows("random-pairs", [0, 1, 2, 3], seed=-1)


@pytest.mark.parametrize(
    ("option", "value"), [("--top", "0"), ("--top", "-5"), ("--gpus", "-3"), ("--gpus", "1")]
)
def test_the_other_integer_options_of_traffic_are_one_line(run_cli, option, value):
    """--top and --gpus out of range: one line naming the option."""
    assert option in one_error(run_cli, "traffic", option, value)
