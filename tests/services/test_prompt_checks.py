"""The checks the explorer's prompts run before they close refuse what loading, a prediction
or a plan would refuse, in the same line, without building, pricing or planning."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.errors import FabricError
from fabricui.services.requests import TopologyRequest, WhatIf
from fabricui.services.session import check_request, load_fabric


def refusal(call, *args) -> str | None:
    """The one-line refusal of ``call(*args)``, or None."""
    try:
        call(*args)
    except FabricError as exc:
        return exc.message
    return None


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
