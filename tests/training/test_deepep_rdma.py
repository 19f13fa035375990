"""The flex dispatcher's dispatch and combine across nodes, priced on DeepEP's own RDMA path
(``engine/training/deepep.py``): the busiest link's own rate, not NCCL's all-to-all share
per peer; within a node, and for the all-to-all dispatcher, NCCL's price stays."""

from __future__ import annotations

import numpy as np
import pytest

from fabricui.engine.algorithms import Direct
from fabricui.engine.constants import DEFAULT
from fabricui.engine.group import Group
from fabricui.engine.training import deepep
from fabricui.engine.training.pricing import PricedOp, Pricer
from fabricui.engine.training.recipe import RecipeChoices, resolve_recipe
from fabricui.engine.training.step import plan
from fabricui.engine.types import CommOp, Layout
from fabricui.fabric import build_fabric
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.plan import load_strategies
from fabricui.services.session import pricer

#: Dispatch + combine of DeepSeek-V3 at EP 64: 4,096 tokens x 4 node copies x 7,168 x 2 bytes.
SIZE = 4096 * 4 * 7168 * 2.0


@pytest.fixture(scope="module")
def pod8(catalog):
    """8 DGX H100 nodes (64 GPUs, one 400G NDR NIC per GPU)."""
    return build_fabric(resolve_topology("dgx-h100-pod", catalog, 8), catalog)


def _ep(size: float = SIZE) -> CommOp:
    return CommOp("ep", "all_to_all", "ep", size, 2.0, False, scope="layer")


def test_rate_is_the_flows_own_not_nccls_per_peer_share(pod8):
    """DeepEP's channels all reach every node: its bytes move at the busiest link's rate,
    the same flows NCCL's all-to-all prices at ``p2p_efficiency`` of it; doubling the size
    adds the size at that rate."""
    group = Group(pod8, np.arange(64))
    spb = deepep.raw_spb(group)
    assert spb == pytest.approx(Direct().spb(group, "all_to_all") * DEFAULT.p2p_efficiency)
    slope = (deepep.call_us(group, 2 * SIZE) - deepep.call_us(group, SIZE)) / SIZE
    assert slope == pytest.approx(spb)
    nccl = float(Direct().time_us(group, "all_to_all", np.asarray([SIZE]), "simple")[0])
    assert deepep.call_us(group, SIZE) < nccl


def test_readme_check_ep32_ep64(pod8):
    """A check, not a fit: DeepEP's README (deepseek-ai/DeepEP 3b1045d) measures its normal
    kernels on H800 with a 400 Gb/s CX7 per GPU, as a DGX H100 has, at 58 GB/s (EP 32) and
    51 GB/s (EP 64) of dispatch bytes per GPU, counting a token once per destination node
    with its own node (``tests/test_internode.py``: ``num_rdma_token_sent``), the size this
    engine prices. The priced rate lands within 10 % of both."""
    for n, measured_GBps in ((32, 58.0), (64, 51.0)):
        group = Group(pod8, np.arange(n))
        rate_GBps = SIZE / deepep.call_us(group, SIZE) / 1e3
        assert rate_GBps == pytest.approx(measured_GBps, rel=0.10), n


def test_on_rdma_reprices_only_ep_calls_that_cross_nodes(pod8):
    """An EP call over 64 ranks on 8 nodes takes DeepEP's price; one over the 8 GPUs of a
    node (NVLink only) and a DP all-reduce keep theirs."""
    price = Pricer(pod8)
    wide, node = tuple(range(64)), tuple(range(8))
    reduce = CommOp("ddp", "all_reduce", "dp", 1e8, 1.0, True)
    priced = [
        PricedOp(_ep(), wide, *price("all_to_all", wide, SIZE)),
        PricedOp(_ep(), node, *price("all_to_all", node, SIZE)),
        PricedOp(reduce, wide, *price("all_reduce", wide, 1e8)),
    ]
    out = deepep.on_rdma(priced, price.group)
    assert out[0].algorithm == deepep.ALGORITHM
    assert out[0].call_us == pytest.approx(deepep.call_us(price.group(wide), SIZE))
    assert out[0].call_us < priced[0].call_us
    assert out[1:] == priced[1:]


def test_plan_prices_the_flex_dispatcher_on_deepep_and_all_to_all_on_nccl(pod8, catalog):
    """DeepSeek-V3 at EP 64 over 8 nodes: with ``deepep`` its EP calls are DeepEP's and
    faster than the same bytes on NCCL's all-to-all; ``alltoall`` stays on NCCL's."""
    model = catalog.models["deepseek-v3"]
    core = catalog.frameworks["megatron-core"]
    layout = Layout(tp=1, pp=1, dp=64, ep=64, microbatches=1, global_batch=64, seq_len=4096)
    strategies = load_strategies()
    chosen = [strategies[n] for n in ("zero1", "ep")]
    evaluate = pricer(pod8)

    def ep_ops(dispatch: str) -> list[PricedOp]:
        recipe, _ = resolve_recipe(RecipeChoices(moe_dispatch=dispatch), "hopper", core)
        report = plan(pod8, model, layout, chosen, evaluate=evaluate, recipe=recipe)
        return [p for p in report.operations if p.op.group == "ep"]

    flex, a2a = ep_ops("deepep"), ep_ops("alltoall")
    assert flex and all(p.algorithm == deepep.ALGORITHM for p in flex)
    assert a2a and all(p.algorithm != deepep.ALGORITHM for p in a2a)
    same = evaluate("all_to_all", flex[0].ranks, flex[0].op.size_bytes)[0]
    assert flex[0].call_us < same
