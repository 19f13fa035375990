"""``fabricui plan`` prices plugin strategies: ``--strategy NAME`` and ``--dp-strategy NAME``."""

from __future__ import annotations

import argparse
import json
from typing import ClassVar

import pytest

from fabricui.commands import plan as plan_command
from fabricui.engine.types import CommOp, Strategy
from fabricui.errors import ConfigError
from fabricui.services.plan import chosen_strategies, load_strategies


class ToyDp(Strategy):
    """A data-parallel flavour from a plugin: one 1 MB all-reduce per step."""

    name: ClassVar[str] = "toy-dp"

    def applicable(self, model, layout):
        return layout.dp > 1

    def operations(self, model, layout):
        return [CommOp(self.name, "all_reduce", "dp", 1e6, 1, True, "toy gradients")]


class ToyExtra(Strategy):
    """An additive strategy from a plugin: two 4-byte all-reduces on the tp group."""

    name: ClassVar[str] = "toy-extra"

    def operations(self, model, layout):
        return [CommOp(self.name, "all_reduce", "tp", 4.0, 2, False, "toy scalar")]


@pytest.fixture(autouse=True)
def toy_strategies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registered strategies are the built-ins plus the two toys."""
    available = {**load_strategies(), "toy-dp": ToyDp(), "toy-extra": ToyExtra()}
    monkeypatch.setattr(plan_command, "load_strategies", lambda: available)


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    parser = argparse.ArgumentParser()
    plan_command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["plan", "-m", "llama3-8b", "-t", "dgx-h100", *argv, "--json"])
    assert plan_command.run(args) == 0
    return json.loads(capsys.readouterr().out)


def test_strategy_flag_adds_a_plugin_strategy(capsys: pytest.CaptureFixture[str]):
    """--strategy (given twice) prices the plugin's operations once, next to DDP and TP
    (with sequence parallelism, the default on Hopper)."""
    data = plan_json(capsys, "--tp", "2", "--strategy", "toy-extra", "--strategy", "toy-extra")
    assert data["strategies"] == ["ddp", "tp-sp", "toy-extra"]
    (toy,) = [op for op in data["operations"] if op["strategy"] == "toy-extra"]
    assert toy["group_size"] == 2 and toy["count"] == 2 and toy["call_us"] > 0


def test_dp_strategy_takes_a_plugin_flavour(capsys: pytest.CaptureFixture[str]):
    """--dp-strategy toy-dp replaces DDP on the data-parallel group."""
    data = plan_json(capsys, "--tp", "2", "--dp-strategy", "toy-dp", "--no-sp")
    assert data["strategies"] == ["toy-dp", "tp"]
    (toy,) = [op for op in data["operations"] if op["strategy"] == "toy-dp"]
    assert toy["group"] == "dp" and toy["group_size"] == 4 and toy["call_us"] > 0


@pytest.mark.parametrize(
    ("dp", "extra", "message"),
    [
        ("nope", (), "--dp-strategy must be one of ddp"),
        ("tp", (), "--dp-strategy must be one of ddp"),
        ("ddp", ("nope",), "strategies not available: nope"),
    ],
)
def test_unknown_or_model_parallel_names_are_refused(dp: str, extra: tuple[str, ...], message):
    """A name nobody registered, or TP as the DP flavour, is a one-line ConfigError."""
    with pytest.raises(ConfigError, match=message) as info:
        chosen_strategies(dp, False, extra, load_strategies())
    assert "\n" not in str(info.value)
