"""The layout the strategies view opens on is one that runs and fits when one exists."""

from fabricui.services.layouts import LayoutChoice
from fabricui.services.loaded import LoadedFabric
from fabricui.services.requests import TopologyRequest


def test_a_model_too_big_for_plain_ddp_opens_on_a_sharded_layout_that_fits(catalog):
    """llama3-70b on 32 H100s: DDP's 16 bytes/parameter over TP 8 is ~140 GB per GPU,
    over 80 GB; the default shards the optimizer instead of opening on a plan that fails."""
    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog=catalog)
    plain = data.plan("llama3-70b", LayoutChoice(tp=8))
    assert not plain.fits
    choice = data.default_layout("llama3-70b")
    assert choice.tp == 8
    assert choice.dp_strategy != "ddp"
    assert data.plan("llama3-70b", choice).fits


def test_a_small_model_keeps_plain_ddp(catalog):
    data = LoadedFabric.load(TopologyRequest("dgx-h100-pod"), catalog=catalog)
    smallest = min(data.catalog.models.values(), key=lambda m: m.params_B)
    choice = data.default_layout(smallest.id)
    assert (choice.pp, choice.dp_strategy) == (1, "ddp")
