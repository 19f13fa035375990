"""A loaded fabric keeps the figures its views ask for (tiers, collectives, decision
tables, default layouts, plans): asked again, by the view shown again, a saved view or the
warm-up, they are not computed twice; ``known`` gives them only when computed already."""

from __future__ import annotations

import pytest

import fabricui.services.loaded as loaded_module
from fabricui.errors import EngineError
from fabricui.services.layouts import LayoutChoice
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest


@pytest.fixture
def priced(monkeypatch):
    """Names of the engine's entry points the fabric calls, as they are called."""
    calls: list[str] = []
    for name in ("decision_table_on", "plan_on", "evaluate_collective"):
        real = getattr(loaded_module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(loaded_module, name, spy)
    return calls


@pytest.fixture
def data(catalog):
    return LoadedFabric.load(TopologyRequest("dgx-h100"), catalog=catalog)


def test_the_same_figures_asked_again_are_not_computed_again(data, priced):
    """Table, default layout, plan, tiers and a collective, asked twice: priced once; another
    layout, model or size is priced."""
    table = data.decision_table("llama3-8b")
    choice = data.default_layout("llama3-8b")
    plan = data.plan("llama3-8b", choice)
    tiers = data.pyramid()
    prediction = data.collective("all_reduce", "all", [1024, 2**20])
    priced.clear()
    assert data.decision_table("llama3-8b") is table
    assert data.default_layout("llama3-8b") == choice
    assert data.plan("llama3-8b", choice) is plan
    assert data.pyramid() == tiers and data.pyramid() is not tiers  # a list of its own
    assert data.collective("all_reduce", "all", (1024, 2**20)) is prediction
    assert priced == []
    data.plan("llama3-8b", LayoutChoice(tp=4))
    data.collective("all_reduce", "all", [1024])
    data.collective("all_reduce", "all", [1024, 2**20], nccl_env={"NCCL_ALGO": "ring"})
    assert priced == ["plan_on", "evaluate_collective", "evaluate_collective"]


def test_known_gives_only_figures_computed_already_and_computes_none(data, priced):
    """Before: None, nothing priced (the default layout's search not even begun); after:
    the same figures; a call that raises gives None, and is raised when asked for."""
    assert data.known(data.pyramid) is None
    assert data.known(lambda: data.plan("llama3-8b", data.default_layout("llama3-8b"))) is None
    assert priced == []
    plan = data.plan("llama3-8b", data.default_layout("llama3-8b"))
    assert data.known(lambda: data.plan("llama3-8b", data.default_layout("llama3-8b"))) is plan
    assert data.known(lambda: data.collective("all_reduce", "per-node", [1024])) is None
    with pytest.raises(EngineError, match="has one GPU"):  # one node: one GPU per node
        data.collective("all_reduce", "per-node", [1024])
    data.pyramid()  # computed as usual once known() is done
    assert data.known(data.pyramid) == data.pyramid()
