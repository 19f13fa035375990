"""The checks the explorer's prompts run before they close refuse what loading, a prediction
or a plan would refuse, in the same line, without building, pricing or planning."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.errors import FabricError
from fabricui.services.collective import check_view_nccl, view_prediction
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest, WhatIf
from fabricui.services.session import check_request, load_fabric


def refusal(call, *args) -> str | None:
    """The one-line refusal of ``call(*args)``, or None."""
    try:
        call(*args)
    except FabricError as exc:
        return exc.message
    return None


@pytest.fixture(scope="module")
def pod(catalog) -> LoadedFabric:
    """dgx-h100-pod: 4 H100 nodes on InfiniBand."""
    return LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog=catalog)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all"])
@pytest.mark.parametrize("group", ["all", "node"])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "NCCL_ALGO=nvls",
        "NCCL_ALGO=foo",
        "NCCL_PROTO=^simple,ll,ll128",
        "2.21 NCCL_ALGO=nvls",
        "NCCL_ALGO=ring;tree",
        "NCCL_ALGO=tree NCCL_PROTO=LL128",
    ],
)
def test_nccl_settings_are_refused_as_the_prediction_refuses_them(pod, op, group, text):
    """Same refusal, same line (or none), across operations, groups and releases."""
    predicted = refusal(view_prediction, pod, op, group, [1024], text)
    assert refusal(check_view_nccl, pod, op, group, text) == predicted


def test_nccl_settings_refused_across_nodes_are_taken_on_one(pod):
    """NVLS runs on one node's NVSwitch, not across nodes without CollNet."""
    assert "no algorithm/protocol left" in refusal(
        check_view_nccl, pod, "all_reduce", "all", "NCCL_ALGO=nvls"
    )
    assert refusal(check_view_nccl, pod, "all_reduce", "node", "NCCL_ALGO=nvls") is None


@pytest.fixture(scope="module")
def amd(catalog) -> LoadedFabric:
    """mi300x-node: 8 MI300X GPUs, whose library (RCCL) reads NCCL_ALGO and NCCL_PROTO."""
    return LoadedFabric.load(TopologyRequest("mi300x-node"), catalog=catalog)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "broadcast", "all_to_all"])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "NCCL_ALGO=nvls",
        "NCCL_ALGO=tree",
        "NCCL_ALGO=ring NCCL_PROTO=LL",
        "NCCL_ALGO=tree NCCL_PROTO=^simple,ll,ll128",
        "NCCL_ALGO=foo",
    ],
)
def test_rccl_settings_are_refused_as_the_prediction_refuses_them(amd, op, text):
    """What RCCL runs nothing of (no NVLS on AMD, no tree for all_gather) is refused in the
    prediction's line; what leaves it something is not."""
    predicted = refusal(view_prediction, amd, op, "all", [1024], text)
    assert refusal(check_view_nccl, amd, op, "all", text) == predicted


def test_rccl_runs_nothing_is_the_line_the_cli_prints(amd, run_cli):
    """The check's refusal is ``collective --env``'s, word for word."""
    said = refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=nvls")
    assert said is not None and said.startswith("RCCL runs nothing NCCL_ALGO/NCCL_PROTO allow")
    status, out, err = run_cli(
        "collective", "all_reduce", "1G", "-t", "mi300x-node", "--env", "NCCL_ALGO=nvls"
    )
    assert (status, out) == (2, "") and said in err
    assert refusal(check_view_nccl, amd, "all_reduce", "all", "NCCL_ALGO=tree") is None


@pytest.mark.parametrize(
    ("topology", "nodes", "what_if"),
    [
        ("dgx-h100-pod", 99999999, None),  # the memory budget
        ("gb200-nvl72-cluster", 20, None),  # not whole scale-up domains
        ("tpu-v5p-torus", 1000, None),  # no torus of that shape
        ("dgx-h100-pod", None, WhatIf(None, 1024)),  # more NVLinks than an H100 has
        ("dgx-h100-pod", 8, WhatIf(200.0, None)),  # fine
    ],
)
def test_a_topology_request_is_refused_as_loading_refuses_it(catalog, topology, nodes, what_if):
    """``check_request`` says what ``load_fabric`` says, advice included."""
    request = TopologyRequest(topology, nodes, what_if=what_if)
    assert refusal(check_request, request, catalog) == refusal(load_fabric, request, catalog)


def test_a_checked_request_is_the_spec_loaded(catalog):
    """What ``check_request`` returns is the spec ``load_fabric`` builds."""
    request = TopologyRequest("h100-ib-cluster", 4)
    assert check_request(request, catalog) == load_fabric(request, catalog).spec
    assert check_request(dataclasses.replace(request, nodes=5), catalog).nodes == 5


@pytest.mark.parametrize(
    ("model", "text"),
    [
        ("llama3-70b", "tp64"),
        ("llama3-70b", "tp3"),
        ("llama3-70b", "pp100"),
        ("llama3-70b", "ep8"),
        ("llama3-70b", "tp16"),
        ("llama3-70b", "tp8 cp3"),
        ("mixtral-8x7b", "ep3"),
        ("mixtral-8x7b", "tp2 ep8"),
        ("llama3-70b", "tp8 pp2 fsdp"),
    ],
)
def test_a_layout_is_refused_as_the_plan_refuses_it(pod, model, text):
    """``check_layout`` refuses what ``plan`` refuses, in its line, and lets the rest by."""
    choice = parse_layout(text, LayoutChoice())
    assert refusal(pod.check_layout, model, choice) == refusal(pod.plan, model, choice)
