"""``ibstat`` reads a port's ``Rate`` whole: a plain number of Gb/s (``0`` included) is the
rate; anything else is warned about by line and the port's rate left unknown."""

from __future__ import annotations

import pytest

from fabricui.importers import ibstat

#: Two active HDR ports of one adapter model; the first one's rate is filled in per test.
LISTING = """\
CA 'mlx5_0'
\tCA type: MT4123
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: {rate}
\t\tLink layer: InfiniBand
CA 'mlx5_1'
\tCA type: MT4123
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 200
\t\tLink layer: InfiniBand
"""


@pytest.mark.parametrize(
    ("value", "rate"),
    [("200", 200.0), ("100", 100.0), ("2.5", 2.5), ("40 Gb/sec (4X QDR)", 40.0)],
)
def test_a_plain_rate_is_read(value, rate):
    """ibstat's number and ibstatus's ``40 Gb/sec (4X QDR)`` are rates, without warnings."""
    devices = ibstat.parse(LISTING.format(rate=value))
    assert devices.hcas[0].ports[0].rate_gbps == rate
    assert devices.warnings == []


@pytest.mark.parametrize(
    "value", ["1,000", "99999999", "2OO", "1e9", "-200", "nan", "inf", "200 apples", "0x10"]
)
def test_a_rate_that_is_no_number_is_warned_and_unknown(value):
    """No leading digits are taken for the rate (``1,000`` is not 1, ``99999999`` not
    999999): the line is named in a warning, the rate is unknown, reading goes on."""
    devices = ibstat.parse(LISTING.format(rate=value))
    port, other = (h.ports[0] for h in devices.hcas)
    assert port.rate_gbps is None
    assert other.rate_gbps == 200.0 and other.link_layer == "InfiniBand"
    assert port.link_layer == "InfiniBand"  # the lines after it are still read
    (warning,) = devices.warnings
    assert warning.startswith("line 6: Rate ")
    assert repr(value) in warning and "mlx5_0 port 1" in warning
    assert devices.port_health()[0].rate_gbps is None


def test_rate_zero_on_an_active_port_is_kept_and_degraded():
    """``Rate: 0`` stays 0 Gb/s (not unknown) and marks the active port degraded, in the
    ports every state importer returns and in the JSON."""
    devices = ibstat.parse(LISTING.format(rate="0"))
    assert devices.warnings == []
    assert devices.hcas[0].ports[0].rate_gbps == 0.0
    port = devices.port_health()[0]
    assert port.state == "up" and port.rate_gbps == 0.0 and port.degraded
    data = devices.to_json()
    assert data["ports"][0]["rate_gbps"] == 0.0 and data["ports"][0]["degraded"] is True
    assert "mlx5_0 port 1, Active, 0 Gb/s" in devices.summary()


def test_a_rate_zero_down_port_is_not_degraded():
    """A down port's rate of 0 is no degradation: the port is down."""
    text = LISTING.format(rate="0").replace(
        "State: Active\n\t\tPhysical state: LinkUp", "State: Down\n\t\tPhysical state: Polling", 1
    )
    port = ibstat.parse(text).port_health()[0]
    assert port.state == "polling" and not port.degraded
