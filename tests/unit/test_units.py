"""Sizes, bandwidths and times parse and format in one consistent set of units."""

from __future__ import annotations

import pytest

from fabricui.errors import ConfigError
from fabricui.units import format_time_us, parse_bandwidth_GBps, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8", 8),
        ("64K", 65536),
        ("1G", 2**30),
        ("1GiB", 2**30),
        ("1GB", 10**9),
        ("16G", 16 * 2**30),
        ("512B", 512),
        ("1.5M", 1572864),
        ("2m", 2 * 2**20),
    ],
)
def test_parse_size(text, expected):
    """Binary suffixes as nccl-tests, GB decimal, GiB binary."""
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "-1", "1X", "1Gi", "G"])
def test_parse_size_rejects(text):
    """Garbage is a ConfigError with the accepted forms."""
    with pytest.raises(ConfigError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("-5", "a size is a positive number of bytes"),
        ("1Gb", "Gb is bits; a size is bytes: 1GB"),
        ("1e400", "larger than any message"),
        ("1e308K", "larger than any message"),
    ],
)
def test_parse_size_names_the_mistake(text, hint):
    """A negative size, a size in bits (``1Gb``, as a NIC rate) and one beyond a float's range
    (``1e400``) say what is wrong."""
    with pytest.raises(ConfigError, match=hint):
        parse_size(text)


def test_size_in_bits_is_one_line_on_the_cli(run_cli):
    """``path --size 1Gb`` is refused in one line, not priced as 10^9 bytes."""
    status, out, err = run_cli(
        "path", "-t", "dgx-h100", "--src", "0", "--dst", "1", "--size", "1Gb"
    )
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "Gb is bits" in err


@pytest.mark.parametrize(
    ("argv", "start"),
    [
        (["path", "--src", "0", "--dst", "1", "--size", "lots"], "--message-size: invalid size"),
        (["collective", "all_reduce", "--sweep", "8:1Gb"], "--sweep 8:1Gb: invalid size"),
        (["--max-memory", "-5", "topologies"], "--max-memory: invalid size '-5': a size is"),
        (["path", "--src", "0", "--dst", "1", "--size", "1e400"], "--message-size: invalid size"),
    ],
)
def test_a_bad_size_names_its_flag(run_cli, argv, start):
    """Which of several sizes on a command line is wrong: the error names the flag."""
    status, _, err = run_cli(*argv)
    assert status == 2 and err.startswith(f"fabricui: error: {start}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("100GB/s", 100.0), ("400Gb/s", 50.0), ("400Gbps", 50.0), ("12.5", 12.5), ("1TB/s", 1000.0)],
)
def test_parse_bandwidth(text, expected):
    """Bytes or bits per second, to GB/s."""
    assert parse_bandwidth_GBps(text) == pytest.approx(expected)


def test_format_time():
    """Durations pick a readable unit."""
    assert format_time_us(0.25) == "250 ns"
    assert format_time_us(17500) == "17.5 ms"
    assert format_time_us(2.5e6) == "2.5 s"
