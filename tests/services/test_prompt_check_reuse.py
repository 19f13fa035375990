"""The NCCL prompt's check reuses what the loaded fabric has: its router (never one of its
own, built beside the view's prediction), the prediction kept under the same settings, and
its own answer asked again; it routes on the shared router only holding the fabric's lock."""

from __future__ import annotations

import threading

import pytest

import fabricui.services.loaded as loaded_module
from fabricui.engine.routing import Router
from fabricui.errors import FabricError
from fabricui.services.collective import check_view_nccl, view_prediction
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest

#: Two mi300x-node hosts: RCCL, whose NCCL_ALGO and NCCL_PROTO are checked by pricing.
AMD = TopologyRequest("mi300x-node", 2)


def refusal(call, *args) -> str | None:
    """The one-line refusal of ``call(*args)``, or None."""
    try:
        call(*args)
    except FabricError as exc:
        return exc.message
    return None


@pytest.fixture
def amd(catalog) -> LoadedFabric:
    """A fresh fabric per test: nothing kept yet."""
    return LoadedFabric.load(AMD, catalog=catalog)


@pytest.fixture
def checked(monkeypatch) -> list[dict]:
    """The settings checks the loaded fabric runs (``check_collective_settings``)."""
    calls: list[dict] = []
    real = loaded_module.check_collective_settings

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(loaded_module, "check_collective_settings", spy)
    return calls


def test_the_check_routes_on_the_fabrics_router_built_once(catalog, monkeypatch, checked):
    """Loaded, predicted, then settings that price RCCL's candidates checked: one router
    for all of it, the fabric's."""
    built: list[Router] = []
    init = Router.__init__

    def counted(self, fabric):
        built.append(self)
        init(self, fabric)

    monkeypatch.setattr(Router, "__init__", counted)
    data = LoadedFabric.load(AMD, catalog=catalog)
    view_prediction(data, "all_reduce", "all", [1024, 1 << 20], "")
    assert refusal(check_view_nccl, data, "all_reduce", "all", "NCCL_ALGO=tree") is None
    assert refusal(check_view_nccl, data, "all_reduce", "all", "NCCL_ALGO=nvls") is not None
    assert built == [data.router]
    assert [call["router"] for call in checked] == [data.router, data.router]


def test_a_check_asked_again_is_answered_from_memory(amd, checked):
    """The same text checked twice (enter on a refused text, then again): one check, the
    same refusal."""
    first = refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=nvls")
    assert first is not None and first.startswith("RCCL runs nothing")
    assert refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=nvls") == first
    assert refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=tree") is None
    assert refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=tree") is None
    assert len(checked) == 2


def test_the_settings_the_view_predicted_with_pass_unchecked(amd, checked):
    """The prompt's text is the view's settings (``v`` then enter): the prediction kept under
    them, at any sizes, answers; another operation or group is checked."""
    view_prediction(amd, "all_reduce", "all", [1024], "NCCL_ALGO=ring NCCL_PROTO=LL")
    assert (
        refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=ring NCCL_PROTO=LL") is None
    )
    assert checked == []
    assert (
        refusal(check_view_nccl, amd, "all_gather", "all", "NCCL_ALGO=ring NCCL_PROTO=LL") is None
    )
    assert len(checked) == 1


def test_the_check_waits_for_the_router_a_prediction_holds(amd):
    """While another thread holds the fabric's lock (a prediction routing), the check
    waits; it answers once the lock is free."""
    answers: list[str | None] = []
    with amd.lock:
        thread = threading.Thread(
            target=lambda: answers.append(
                refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=nvls")
            )
        )
        thread.start()
        thread.join(0.3)
        assert thread.is_alive() and answers == []
    thread.join(30)
    assert answers and answers[0] is not None


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all"])
@pytest.mark.parametrize(
    "text",
    ["", "NCCL_ALGO=nvls", "NCCL_ALGO=tree", "NCCL_ALGO=ring NCCL_PROTO=LL", "NCCL_ALGO=foo"],
)
def test_checked_first_the_answer_is_the_predictions(catalog, op, text):
    """Nothing kept (the check runs before any prediction under the text): the check refuses
    what the prediction then refuses, in its line, and passes the rest."""
    data = LoadedFabric.load(AMD, catalog=catalog)
    checked = refusal(check_view_nccl, data, op, "all", text)
    assert checked == refusal(view_prediction, data, op, "all", [1024], text)
