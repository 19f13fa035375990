"""A cable two outputs slow (one says it is degraded, another that it is down or slower
still) is one change at the slower rate whichever output comes first, naming both: the
fabric as it is does not depend on the order of ``--health`` files."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui import api
from fabricui.fabric.health import GpuLinkCondition, LinkCondition, apply_health, health_of
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import load_fabric
from tests.services._ibstat import ibstat_text
from tests.services.test_health_both_facts import DEGRADED, ERRORS


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """iblinkinfo with n0's mlx5_0 at 1X of 4X, ibqueryerrors counting its errors, and two
    ibstat outputs of n0 (each named after its host): mlx5_0 down, and at half rate."""
    texts = {
        "links.txt": DEGRADED,
        "errors.txt": ERRORS,
        "down/n0.txt": ibstat_text(down={0}),
        "half/n0.txt": ibstat_text(rate_Gbps={k: 200 if k == 0 else 400 for k in range(8)}),
    }
    out = {}
    for name, text in texts.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        out[name] = str(path)
    return out


@pytest.mark.parametrize(
    ("names", "kind", "kept", "sources"),
    [
        (("down/n0.txt", "links.txt"), "down", 0.0, ["n0.txt", "links.txt"]),
        (("links.txt", "down/n0.txt"), "down", 0.0, ["links.txt", "n0.txt"]),
        (("half/n0.txt", "links.txt"), "degraded", 0.25, ["n0.txt", "links.txt"]),
        (("links.txt", "half/n0.txt"), "degraded", 0.25, ["links.txt", "n0.txt"]),
        (("half/n0.txt", "errors.txt", "links.txt"), "degraded", 0.25, None),
    ],
)
def test_the_slower_fact_is_priced_whatever_the_order(catalog, files, names, kind, kept, sources):
    """One change, the slower of the two rates, every output that said it named (a later
    erroring output keeps its errors too)."""
    request = TopologyRequest("h100-ib-cluster", 2, health=tuple(files[n] for n in names))
    fabric = load_fabric(request, catalog, report_health=False)
    overlay = health_of(fabric)
    assert overlay is not None
    (change,) = overlay.changes
    assert (change.kind, change.factor) == (kind, pytest.approx(kept))
    said = [s.split()[-1] for s in change.source.split("; ")]
    assert said == (sources or [Path(files[n]).name for n in names])
    assert change.erroring == ("errors.txt" in names)
    if kind == "degraded":
        hop = next(h for h in api.path(fabric, "n0.g0", "n1.g0", 2**30).hops if h.src == "n0.nic0")
        assert hop.bw_GBps == pytest.approx(50.0 * kept)


@pytest.mark.parametrize("first_slower", [True, False])
def test_a_switch_cable_said_slower_twice_is_priced_once(catalog, first_slower):
    """leaf0 -> spine0, one cable of four, at 50% in one output and 25% in another: the
    bundle keeps (3 + 0.25) / 4 either way, not both losses."""
    fabric = load_fabric(TopologyRequest("h100-ib-cluster", 64), catalog)
    half = LinkCondition("leaf0", 33, "spine0", 1, fraction=0.5, source="a.txt")
    quarter = LinkCondition("spine0", 1, "leaf0", 33, fraction=0.25, source="b.txt")
    conditions = [quarter, half] if first_slower else [half, quarter]
    overlay = apply_health(fabric, conditions, [])
    (change,) = overlay.changes
    assert change.kind == "degraded"
    assert change.factor == pytest.approx((3 + 0.25) / 4)
    assert set(change.source.split("; ")) == {"a.txt", "b.txt"}
    (link,) = [
        k
        for k in range(overlay.fabric.n_links)
        if overlay.fabric.device_name(int(overlay.fabric.link_src[k])) == "leaf0"
        and overlay.fabric.device_name(int(overlay.fabric.link_dst[k])) == "spine0"
    ]
    built = [
        k
        for k in range(fabric.n_links)
        if fabric.device_name(int(fabric.link_src[k])) == "leaf0"
        and fabric.device_name(int(fabric.link_dst[k])) == "spine0"
    ][0]
    assert overlay.fabric.link_bw_GBps[link] == pytest.approx(
        fabric.link_bw_GBps[built] * (3 + 0.25) / 4
    )


def test_a_gpu_two_outputs_slow_names_both(catalog):
    """GPU 0 with 9 of 18 NVLinks inactive in one output and 12 in another: a third of its
    scale-up bandwidth (the slower), both outputs named (the slower's first), in either
    order."""
    fabric = load_fabric(TopologyRequest("dgx-h100"), catalog)
    nine = GpuLinkCondition(None, 0, 9, 18, source="a.txt")
    twelve = GpuLinkCondition(None, 0, 12, 18, source="b.txt")
    for conditions in ([nine, twelve], [twelve, nine]):
        (change,) = apply_health(fabric, [], conditions).changes
        assert change.factor == pytest.approx(6 / 18)
        assert change.source == "b.txt; a.txt"
        assert not change.erroring
