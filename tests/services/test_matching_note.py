"""What a collective prediction says it assumed of libfabric's receive matching."""

from __future__ import annotations

import pytest

from fabricui.services.collective import matching_note, view_notes
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest


@pytest.mark.parametrize(
    ("family", "domains", "env", "noted"),
    [
        ("slingshot", 2, {}, True),
        ("slingshot", 2, {"FI_CXI_RX_MATCH_MODE": "software"}, False),
        ("slingshot", 2, {"FI_CXI_RX_MATCH_MODE": "hardware"}, False),
        ("slingshot", 1, {}, False),  # no network receive inside one node (or NVLink rack)
        ("infiniband", 2, {}, False),
        (None, 2, {}, False),
    ],
)
def test_only_an_unsaid_cxi_matching_across_nodes_is_noted(family, domains, env, noted):
    note = matching_note(family, domains, env)
    assert (note is not None) == noted
    if note:
        assert "FI_CXI_RX_MATCH_MODE unset" in note and "4 KiB" in note


def test_the_views_note_follows_its_group_and_prompt(monkeypatch):
    """The collectives view's note: for a group across nodes under a prompt that does not
    set the matching; none for one node's GPUs or once the prompt sets it."""
    monkeypatch.delenv("FI_CXI_RX_MATCH_MODE", raising=False)
    data = LoadedFabric.load(TopologyRequest("gh200-quad", nodes=2))
    assert view_notes(data, "all", "") != ()
    assert view_notes(data, "node", "") == ()
    assert view_notes(data, "all", "FI_CXI_RX_MATCH_MODE=software") == ()
    assert view_notes(data, "all", "2.23 FI_CXI_RX_MATCH_MODE=hardware") == ()
