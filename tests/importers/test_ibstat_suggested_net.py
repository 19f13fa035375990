"""``ibstat``'s suggested ``--net`` follows the active ports' link generation (never a down
port's rate), and the NVLink summary states rates in one unit."""

from __future__ import annotations

from fabricui.importers import ibstat, nvlink_state


def _ibstat(*ports: tuple[str, str, str]) -> str:
    """An ibstat listing with one single-port CA per (state, rate, link layer)."""
    lines = []
    for n, (state, rate, layer) in enumerate(ports):
        physical = "LinkUp" if state == "Active" else "Polling"
        lines += [
            f"CA 'mlx5_{n}'",
            "\tCA type: MT4123",
            "\tPort 1:",
            f"\t\tState: {state}",
            f"\t\tPhysical state: {physical}",
            f"\t\tRate: {rate}",
            f"\t\tLink layer: {layer}",
        ]
    return "\n".join(lines) + "\n"


def test_a_down_port_suggests_nothing():
    """The rate a down port prints (10) is no link's rate: no suggestion."""
    devices = ibstat.parse(_ibstat(("Down", "10", "InfiniBand")))
    assert devices.suggested_net() is None
    assert "suggested" not in devices.summary()


def test_down_ports_do_not_outvote_the_active_one():
    """Three down ports at 10 and one active at 200: HDR at 200."""
    text = _ibstat(
        ("Down", "10", "InfiniBand"),
        ("Down", "10", "InfiniBand"),
        ("Down", "10", "InfiniBand"),
        ("Active", "200", "InfiniBand"),
    )
    assert ibstat.parse(text).suggested_net() == "ib-hdr:200"


def test_the_generation_follows_the_lane_rate():
    """4X HDR is ib-hdr, 4X NDR ib-ndr, 4X XDR ib-xdr."""
    for rate, net in [("200", "ib-hdr:200"), ("400", "ib-ndr:400"), ("800", "ib-xdr:800")]:
        assert ibstat.parse(_ibstat(("Active", rate, "InfiniBand"))).suggested_net() == net


def test_qdr_is_priced_at_its_rate_and_says_so():
    """A 4X QDR port (ibstatus's ``40 Gb/sec (4X QDR)``) is HDR at 40 Gb/s, and the summary
    says it is QDR priced as the catalog's first InfiniBand link."""
    text = (
        "Infiniband device 'mlx4_0' port 1 status:\n"
        "\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n"
        "\trate:\t\t 40 Gb/sec (4X QDR)\n\tlink_layer:\t InfiniBand\n"
    )
    devices = ibstat.parse(text)
    assert devices.suggested_net() == "ib-hdr:40"
    assert "--net ib-hdr:40 (4X QDR:" in devices.summary()


def test_an_hdr_suggestion_has_no_reason():
    """A port that runs the suggested generation needs no explanation."""
    summary = ibstat.parse(_ibstat(("Active", "200", "InfiniBand"))).summary()
    assert summary.splitlines()[-1] == "  suggested: --net ib-hdr:200"


def test_nvlink_degraded_link_states_could_be_in_the_rates_unit():
    """A link at half the others' rate reads ``100 Gb/s, DEGRADED (could be 200 Gb/s)``:
    one unit, the one of ``rate_gbps``."""
    text = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n\t Link 0: 25 GB/s\n\t Link 1: 12.5 GB/s\n"
    report = nvlink_state.parse(text)
    slow = [p for p in report.ports if p.degraded]
    assert [(p.rate_gbps, p.could_be) for p in slow] == [(100.0, "200 Gb/s")]
    assert "100 Gb/s, DEGRADED (could be 200 Gb/s)" in report.summary()
