"""``perfquery`` counters it cannot read, or wider than the counter, are warned about by
line and left out; no value is read from its leading digits."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricui.importers import perfquery
from fabricui.importers.port_health import number

HEALTH = Path(__file__).parents[1] / "data" / "health" / "infiniband"

EXTENDED = """\
# Port extended counters: Lid 1719 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................18446744073709551615
SymbolErrorCounter:..............65535
LinkErrorRecoveryCounter:........99999999999999999999
LinkDownedCounter:...............-3
PortRcvErrors:...................1.234
PortXmitWait:....................22730501
"""

PLAIN = """\
# Port counters: Lid 5 port 12 (CapMask: 0x1600)
PortSelect:......................12
CounterSelect:...................0x1b01
SymbolErrorCounter:..............65535
LinkErrorRecoveryCounter:........255
LinkDownedCounter:...............300
PortRcvErrors:...................65536
PortXmitData:....................4294967295
"""


@pytest.mark.parametrize(
    ("text", "bits", "value"),
    [
        ("0", 64, 0),
        ("1,234", 64, 1234),
        ("0x1f", 64, 31),
        ("18446744073709551615", 64, 2**64 - 1),
        ("18446744073709551616", 64, None),
        ("99999999999999999999", 64, None),
        ("-3", 64, None),
        ("1.234", 64, None),
        ("1e3", 64, None),
        ("255", 8, 255),
        ("256", 8, None),
        ("0xff", 128, 255),
        ("18446744073709551616", 128, None),
    ],
)
def test_number_reads_whole_counter_values_within_their_width(text, bits, value):
    """A counter value is a whole number of at most ``bits`` (never more than 64) bits."""
    assert number(text, bits) == value


def test_unreadable_extended_counters_are_warned_by_line_and_left_out():
    """``-3``, ``1.234`` and a value wider than 64 bits are each named with their line; the
    record's other counters are kept, 2**64 - 1 included."""
    report = perfquery.parse(EXTENDED)
    (port,) = report.ports
    assert port.counters == {
        "PortXmitData": 2**64 - 1,
        "SymbolErrorCounter": 65535,
        "PortXmitWait": 22730501,
    }
    assert len(report.warnings) == 3
    for line, name in [
        (6, "LinkErrorRecoveryCounter"),
        (7, "LinkDownedCounter"),
        (8, "PortRcvErrors"),
    ]:
        assert any(w.startswith(f"line {line}: {name} ") for w in report.warnings), name
    assert all("64-bit" in w and "lid 1719 port 1" in w for w in report.warnings)


def test_a_plain_record_holds_counters_to_their_iba_widths():
    """In a plain ``# Port counters`` record LinkDownedCounter is 8 bits and PortRcvErrors
    16: 300 and 65536 are refused; saturated values (65535, 255, 2**32 - 1) are kept."""
    report = perfquery.parse(PLAIN)
    (port,) = report.ports
    assert port.counters == {
        "SymbolErrorCounter": 65535,
        "LinkErrorRecoveryCounter": 255,
        "PortXmitData": 2**32 - 1,
    }
    assert [w.split(":")[0] for w in report.warnings] == ["line 6", "line 7"]
    assert "8-bit" in report.warnings[0] and "16-bit" in report.warnings[1]


def test_many_unreadable_counters_are_warned_a_bounded_number_of_times():
    """Past 20 unreadable values the rest are counted in one warning."""
    text = EXTENDED.split("SymbolErrorCounter")[0] + "PortRcvErrors:....x\n" * 50
    text += "PortXmitWait:....................7\n"
    report = perfquery.parse(text)
    assert len(report.warnings) == 21
    assert report.warnings[-1].startswith("30 more counter value(s)")


@pytest.mark.parametrize(
    "name",
    [
        "perfquery_x_edr_switch_two_ports_xmitwait.txt",
        "perfquery_E_rcv_error_details_edr_switch_port1.txt",
    ],
)
def test_real_perfquery_outputs_read_without_counter_warnings(name):
    """The real outputs in tests/data read every counter."""
    report = perfquery.parse((HEALTH / name).read_text())
    assert report.ports and not any("counter value" in w for w in report.warnings)
