"""``plan`` range checks treat 0 like any other out-of-range value (no falsy default)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("value", ["0", "0.0", "0.5", "-1"])
def test_moe_imbalance_below_one_is_refused_alike(run_cli, value):
    """0 no longer slips through as 'balanced': the same one line as -1."""
    status, out, err = run_cli("plan", "--moe-imbalance", value)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "MoE imbalance must be between 1 and 1000" in err


def test_moe_imbalance_of_one_is_the_default(run_cli):
    """1 (balanced) prices exactly what no option prices."""
    plain = run_cli("plan", "--json")
    balanced = run_cli("plan", "--moe-imbalance", "1", "--json")
    assert plain[0] == balanced[0] == 0 and plain[1] == balanced[1]
