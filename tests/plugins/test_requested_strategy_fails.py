"""A strategy the user asks for by name (``plan --strategy NAME``, ``--dp-strategy NAME``)
whose plugin fails when it is priced ends the command with one error line naming the option,
the plugin and what went wrong (status 2); a failing strategy nobody asked for stays a warning
and the plan goes on without it."""

from __future__ import annotations

import pytest

PLUGIN = """\
from fabricui.api import StateShards, Strategy, hookimpl


class Garbage(Strategy):
    name = "badstrat"
    description = "operations returns a word"

    def applicable(self, model, layout):
        return True

    def operations(self, model, layout):
        return "garbage"

    def state_shards(self, model, layout):
        return StateShards()

    def memory(self, model, layout):
        return []


class Raising(Garbage):
    name = "boomstrat"
    description = "applicable raises"

    def applicable(self, model, layout):
        raise RuntimeError("applicable boom")


class Fine(Garbage):
    name = "finestrat"
    description = "works"

    def operations(self, model, layout):
        return []


@hookimpl
def register_strategies(register):
    register(Garbage())
    register(Raising())
    register(Fine())
"""

LINE = "plugin p_strat: strategy 'badstrat': operations: returned str, not a list of CommOp"


@pytest.fixture(autouse=True)
def plugin(plugin_file) -> None:
    """The plugin file ``p_strat.py`` (and the built-ins), a fresh host."""
    plugin_file("p_strat", PLUGIN)


def only_error(status: int, out: str, err: str) -> str:
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fabricui: error: "), err
    return lines[0][len("fabricui: error: ") :]


@pytest.mark.parametrize(
    "extra", [(), ("--search", "--top", "1", "-m", "llama2-7b")], ids=["plan", "search"]
)
def test_strategy_asked_for_fails_the_command(run_main, extra: tuple[str, ...]):
    result = run_main("plan", "-t", "dgx-h100", "--strategy", "badstrat", *extra)
    assert only_error(*result) == f"--strategy badstrat: {LINE}"


def test_dp_strategy_asked_for_fails_the_command(run_main):
    result = run_main("plan", "-t", "dgx-h100", "--dp-strategy", "badstrat")
    assert only_error(*result) == f"--dp-strategy badstrat: {LINE}"


def test_strategy_whose_applicable_raises(run_main):
    result = run_main("plan", "-t", "dgx-h100", "--strategy", "boomstrat")
    assert only_error(*result) == (
        "--strategy boomstrat: plugin p_strat: strategy 'boomstrat': applicable: "
        "RuntimeError: applicable boom"
    )


def test_json_output_fails_the_same_way(run_main):
    result = run_main("plan", "-t", "dgx-h100", "--strategy", "badstrat", "--json")
    assert only_error(*result) == f"--strategy badstrat: {LINE}"


def test_a_working_plugin_strategy_prices(run_main):
    status, out, err = run_main("plan", "-t", "dgx-h100", "--strategy", "finestrat")
    assert status == 0 and err == "" and out


def test_strategies_not_asked_for_stay_warnings(run_main):
    """Only what was named is fatal: the plan with a working extra strategy succeeds, and
    nothing calls the broken ones."""
    status, out, err = run_main("plan", "-t", "dgx-h100")
    assert status == 0 and out and "error" not in err


def test_a_run_files_strategy_that_fails_fails_the_command(run_main, tmp_path):
    """``plan --run`` with ``dp_strategy: badstrat``: the run used it, so its failure is the
    error (it printed the plan without that strategy's communication)."""
    path = tmp_path / "run.yaml"
    path.write_text(
        "id: r\nmodel: llama3-8b\nrun:\n  topology: dgx-h100\n  tp: 1\n  pp: 1\n  dp: 8\n"
        "  global_batch: 8\n  dp_strategy: badstrat\n",
        encoding="utf-8",
    )
    result = run_main("plan", "--run", str(path))
    assert only_error(*result) == f"strategy badstrat, which the plan uses: {LINE}"
