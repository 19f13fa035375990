"""Megatron-Core's EP overlap (combined 1F1B): which passes run alone, the two-stream
schedule of a layer pair, and the SMs the dispatcher takes from the compute beside it.
Expected figures are worked out by hand in each docstring."""

from __future__ import annotations

import dataclasses

import pytest

from fabricui.engine.training import comm, schedule
from fabricui.engine.training.comm import Windows, paired_ep_exposure, paired_layer_s
from fabricui.engine.training.recipe import Recipe


def _windows(**kw: object) -> Windows:
    base: dict[str, object] = dict(
        gemm_s=1.0, expert_s=0.0, attention_s=0.0, layer_s=1.0, microbatch_s=1.0
    )
    base.update(kw)
    return Windows(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pp", "microbatches", "share"),
    [(1, 5, 0.2), (4, 64, 1 / 16), (8, 4, 1.0), (1, 1, 1.0)],
)
def test_unpaired_share_is_the_warm_up_over_the_micro_batches(pp, microbatches, share):
    """PP 1: the first forward and the last backward of ``m`` run alone, 1/m. PP p with v
    chunks: stage r warms up with 2 (p - r - 1) + (v - 1) p + 1 chunk passes, v p on
    average, of v m: p / m (4 stages, 64 micro-batches: 1/16), at most all of them."""
    assert schedule.unpaired_share(pp, microbatches) == pytest.approx(share)


def test_compute_bound_pair_takes_its_compute():
    """Six compute pieces of 1 s and all-to-alls of 0.1 s: every all-to-all is ready
    before the compute that waits for it, the pair takes the 6 s of compute."""
    assert paired_layer_s([1.0] * 6, (0.1, 0.1)) == pytest.approx(6.0)


def test_communication_bound_pair_takes_its_all_to_alls():
    """No compute, four all-to-alls of 1 s on one stream: 4 s a pair."""
    assert paired_layer_s([0.0] * 6, (1.0, 1.0)) == pytest.approx(4.0)


def test_only_the_combine_backward_hides_behind_the_attention_block():
    """Only the attention block's forward (2 s) computes; each all-to-all takes 1 s. The
    backward's combine runs beside it; the forward's dispatch waits for it, the backward's
    dispatch and the forward's combine follow on the same stream, and the next attention
    block waits for that combine: 2 + 3 x 1 = 5 s a pair, three all-to-alls exposed."""
    assert paired_layer_s([2.0, 0, 0, 0, 0, 0], (1.0, 1.0)) == pytest.approx(5.0)


def test_paired_exposure_adds_the_passes_run_alone():
    """The case above (5 s a pair, 2 s of compute: 3 s exposed) with a fifth of the passes
    run alone (their four all-to-alls, 4 s, exposed whole): 0.2 x 4 + 0.8 x 3 = 3.2 s; on
    a model with half its layers MoE (the per-layer EP time averaged over all layers is
    half), half of that per layer."""
    windows = _windows(ep_compute_s=(2.0, 0, 0, 0, 0, 0), ep_unpaired=0.2)
    assert paired_ep_exposure(2.0, 2.0, windows) == pytest.approx(3.2)
    half = dataclasses.replace(windows, moe_share=0.5)
    assert paired_ep_exposure(1.0, 1.0, half) == pytest.approx(1.6)


def test_sm_share_slows_the_compute_the_all_to_alls_run_beside():
    """Compute-bound (six 1 s pieces, 0.1 s all-to-alls: 0.4 s of them beside 6 s of
    compute) with the dispatcher on a quarter of the SMs: each piece is stretched by
    0.25 x 0.4 / 6, the pair by 0.1 s. Communication-bound (0.5 s of compute beside 4 s
    of all-to-alls) the stretched compute still fits under them: 4 - 0.5 = 3.5 s."""
    fast = _windows(ep_compute_s=(1.0,) * 6, ep_sm_share=0.25)
    assert paired_ep_exposure(0.2, 0.2, fast) == pytest.approx(0.1)
    slow = _windows(ep_compute_s=(0.5, 0, 0, 0, 0, 0), ep_sm_share=0.25)
    assert paired_ep_exposure(2.0, 2.0, slow) == pytest.approx(3.5)


@pytest.mark.parametrize(
    ("dispatch", "multi_node", "sms"),
    [("alltoall", True, 16), ("deepep", True, 32), ("deepep", False, 20)],
)
def test_dispatcher_sms(dispatch, multi_node, sms):
    """NCCL's 16 channels for the all-to-all dispatcher; HybridEP's 32 (Megatron-Bridge's
    performance scripts) on an NVLink domain spanning hosts; DeepEP's default 20 else."""
    share = comm.ep_overlap_sm_share(dispatch, 148, multi_node)
    assert share == pytest.approx(sms / 148)
    assert comm.ep_overlap_sm_share(dispatch, None, multi_node) == 0.0


def test_expose_prices_ep_overlap_with_the_schedule():
    """``expose`` hands EP's per-layer forward and backward time to the paired schedule
    when EP overlap is on and the MoE compute is known, and keeps it whole when off."""
    from fabricui.engine.training.pricing import PricedOp
    from fabricui.engine.types import CommOp

    ops = [
        PricedOp(
            op=CommOp(
                strategy="ep",
                collective="all_to_all",
                group="ep",
                size_bytes=1.0,
                count=2.0,
                overlappable=False,
                scope="layer",
                phase=phase,
            ),
            ranks=(0, 1),
            call_us=1e6,
            algorithm="p2p",
        )
        for phase in ("forward", "backward")
    ]
    windows = _windows(ep_compute_s=(2.0, 0, 0, 0, 0, 0), ep_unpaired=0.2)
    on = comm.expose(ops, Recipe(ep_overlap=True), 1.0, 1, windows)
    assert on.per_layer_s["ep"] == pytest.approx(3.2)
    off = comm.expose(ops, Recipe(ep_overlap=False), 1.0, 1, windows)
    assert off.per_layer_s["ep"] == pytest.approx(4.0)
