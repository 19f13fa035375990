"""Where a collective prediction says a tuner plugin, not NCCL's own model, picks."""

from __future__ import annotations

import pytest

from fabricui.services.collective import view_notes
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest
from fabricui.services.tuner_plugins import tuner_plugin_note


def note(gpu="h200-sxm", family="efa", domains=4, ranks=32, op="all_reduce", env=None, v=None):  # type: ignore[no-untyped-def]
    return tuner_plugin_note(gpu, family, domains, ranks, op, env or {}, v)


@pytest.mark.parametrize(
    ("kwargs", "platform"),
    [
        ({}, "P5e/P5en"),
        ({"gpu": "h100-sxm"}, "P5"),
        ({"gpu": "b200"}, "P6-B200"),
        ({"gpu": "b300", "op": "reduce_scatter"}, "P6-B300"),
        ({"ranks": 4}, "P5e/P5en"),  # one GPU per instance
        ({"gpu": "h100-sxm", "ranks": 8}, "P5"),  # two per instance: all-reduce only
        ({"gpu": "h100-sxm", "ranks": 8, "op": "all_gather"}, None),
        ({"domains": 2, "ranks": 16}, None),  # two instances: NCCL's own tuning
        ({"ranks": 16}, None),  # four GPUs per instance: no regions
        ({"op": "all_to_all"}, None),
        ({"family": "infiniband"}, None),
        ({"gpu": "a100-sxm-80gb"}, None),  # P4d: no region tuner
        ({"env": {"OFI_NCCL_TUNER_TYPE": "Internal"}}, None),
        ({"env": {"OFI_NCCL_FORCE_NUM_RAILS": "2"}}, None),
        ({"env": {"NCCL_TUNER_PLUGIN": "none"}}, None),
        ({"v": (2, 20, 3)}, None),  # the network plugin's tuner is loaded from 2.21
        ({"v": (2, 21, 5)}, "P5e/P5en"),
    ],
)
def test_aws_ofi_ncclss_region_tuner_where_its_regions_apply(kwargs, platform):
    """aws-ofi-nccl's region tuner picks on more than two whole P5/P6 instances, for
    all-reduce, all-gather and reduce-scatter, unless turned off."""
    text = note(**kwargs)
    if platform is None:
        assert text is None
    else:
        assert text is not None and f"AWS {platform} instances" in text
        assert "OFI_NCCL_TUNER_TYPE=Internal" in text


def test_a_named_plugin_or_gibs_is_noted_anywhere_from_its_release():
    """NCCL_TUNER_PLUGIN from 2.19; gIB's tuner (its net plugin's) from 2.21."""
    named = {"NCCL_TUNER_PLUGIN": "libnccl-tuner-example.so"}
    text = note(family="infiniband", env=named)
    assert text is not None and "NCCL_TUNER_PLUGIN=libnccl-tuner-example.so" in text
    assert note(family="infiniband", env=named, v=(2, 19, 3)) is not None
    assert note(family="infiniband", env=named, v=(2, 18, 6)) is None
    gib = note(family="roce", domains=2, env={"NCCL_NET": "gIB"})
    assert gib is not None and "gIB" in gib and "NCCL_TUNER_CONFIG_PATH" in gib
    assert note(family="roce", env={"NCCL_TUNER_CONFIG_PATH": "/x.txtpb"}) is not None
    assert note(family="roce", env={"NCCL_NET": "gIB"}, v=(2, 20, 3)) is None


def test_the_views_note_follows_its_group_op_and_prompt(monkeypatch):
    """The collectives view notes the tuner for a group across four instances, not for one
    instance's GPUs, not for all-to-all, not once the prompt turns it off."""
    for name in ("NCCL_TUNER_PLUGIN", "OFI_NCCL_TUNER_TYPE", "OFI_NCCL_FORCE_NUM_RAILS"):
        monkeypatch.delenv(name, raising=False)
    data = LoadedFabric.load(TopologyRequest("aws-p6-b200-cluster", nodes=4))
    (text,) = view_notes(data, "all", "", "all_reduce")
    assert "P6-B200" in text
    assert view_notes(data, "node", "", "all_reduce") == ()
    assert view_notes(data, "all", "", "all_to_all") == ()
    assert view_notes(data, "all", "OFI_NCCL_TUNER_TYPE=Internal", "all_gather") == ()


def test_a_job_both_notes_apply_to_gets_both(monkeypatch):
    """Across Slingshot nodes with the matching unsaid and a tuner plugin named, the view
    (and so its notices and report) carries both notes."""
    monkeypatch.delenv("FI_CXI_RX_MATCH_MODE", raising=False)
    data = LoadedFabric.load(TopologyRequest("gh200-quad", nodes=2))
    notes = view_notes(data, "all", "NCCL_TUNER_PLUGIN=libx.so")
    assert len(notes) == 2
    assert "FI_CXI_RX_MATCH_MODE" in notes[0] and "NCCL_TUNER_PLUGIN=libx.so" in notes[1]
