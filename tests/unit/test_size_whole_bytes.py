"""A message size is a whole number of bytes: ``1.5`` or ``0.3K`` are refused with the value
they come to, for every command, instead of being rounded to another message."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.units import parse_message_size, parse_size, parse_size_sweep


@pytest.mark.parametrize(
    ("text", "size_bytes"),
    [
        ("8", 8),
        ("2.0", 2),
        ("1e3", 1000),
        ("1.5e3", 1500),
        ("1.5G", 3 * 2**29),
        ("1.5KiB", 1536),
        ("0.5K", 512),
        ("1.1GB", 1_100_000_000),  # whole in decimal, not in binary floating point
        ("2.5MB", 2_500_000),
    ],
)
def test_sizes_that_are_whole_bytes_are_read_exactly(text, size_bytes):
    """Fractions in the number are fine when the unit makes them whole bytes."""
    assert parse_size(text) == size_bytes


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1.5", "1.5 bytes"),
        ("2.5", "2.5 bytes"),
        ("0.3K", "307.2 bytes"),
        ("1.7G", "1825361100.8 bytes"),
        ("1.0000000001GB", "1000000000.1 bytes"),
        ("1e-999999999", "1E-999999999 bytes"),
    ],
)
def test_fractional_bytes_are_refused_naming_the_value(text, shown):
    """No rounding: the message names what the size came to."""
    with pytest.raises(ConfigError) as exc:
        parse_size(text)
    assert str(exc.value) == f"invalid size {text!r}: {shown}, not a whole number of bytes"


def test_every_size_reader_refuses_fractions():
    """``--size``, sizes after the operation and ``--sweep`` ends share the rule."""
    with pytest.raises(ConfigError, match=r"^--size: invalid size '1.5': 1.5 bytes"):
        parse_message_size("1.5")
    with pytest.raises(ConfigError, match=r"^--sweep 0.3K:1G: invalid size '0.3K': 307.2"):
        parse_size_sweep("0.3K:1G", "--sweep")


def test_a_limit_may_round():
    """A memory budget is a limit, not a message: ``120.3M`` rounds as before."""
    assert parse_size("120.3M", whole_bytes=False) == round(120.3 * 2**20)


@pytest.mark.parametrize(
    "argv",
    [
        ("collective", "all_reduce", "1.5"),
        ("collective", "all_reduce", "2.5"),
        ("collective", "all_reduce", "--size", "0.3K"),
        ("path", "0", "1", "--size", "1.5"),
        ("path", "0", "1", "--message-size", "2.5"),
    ],
)
def test_commands_refuse_fractional_bytes_in_one_line(run_cli, argv):
    """The reviewer's cases: exit 2, one line, no output; 1.5 and 2.5 no longer both price 2 B."""
    status, out, err = run_cli(*argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "not a whole number of bytes" in err
