"""Parse and format sizes, bandwidths and times: the one place units are converted.

Conventions (DESIGN.md): bandwidth in GB/s = 1e9 bytes/s per direction, latency in
microseconds, sizes in bytes. ``8K``/``64M``/``1G`` are powers of two, as in nccl-tests;
``1GB`` is 1e9 bytes and ``1GiB`` is 2**30 bytes, for users who want to be explicit.
"""

from __future__ import annotations

import decimal
import math
import re

from fabricui.errors import ConfigError

_BINARY = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_DECIMAL = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTP]?)(I?B?)\s*$", re.I)
_BW_RE = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGT]?)(B|b)(?:/s|ps)\s*$",
)


def parse_size(text: str, *, whole_bytes: bool = True) -> int:
    """Parse a message size into bytes.

    Args:
        text: ``8``, ``64K``, ``1G`` (binary, as nccl-tests), ``1GiB`` (binary) or
            ``1GB`` (decimal). A trailing ``B`` alone (``512B``) means bytes.
        whole_bytes: Refuse a size that is not a whole number of bytes (``1.5``, ``0.3K``):
            rounding a message size would price another message than the one typed. False
            rounds instead, for limits such as a memory budget (``120.3M``).

    Returns:
        The size in bytes.

    Raises:
        ConfigError: The text is not a size, is negative, or (``whole_bytes``) is not a
            whole number of bytes.
    """
    match = _SIZE_RE.match(str(text))
    if not match:
        if _SIZE_RE.match(str(text).strip().lstrip("-")):
            raise ConfigError(f"invalid size {text!r}: a size is a positive number of bytes")
        raise ConfigError(
            f"invalid size {text!r}: use bytes or a suffix, e.g. 8, 64K, 1G (binary), 1GB, 1GiB"
        )
    number, prefix, tail = match.groups()
    if prefix.isupper() and tail == "b":
        # 'Gb' is gigabits, as in a NIC's 400Gb/s: a typed bit size is a mistake, not bytes.
        raise ConfigError(
            f"invalid size {text!r}: {prefix}b is bits; a size is bytes: "
            f"{number}{prefix}B (decimal), {number}{prefix} or {number}{prefix}iB (binary)"
        )
    prefix = prefix.upper()
    tail = tail.upper()
    # '1GB' is decimal; '1G' and '1GiB' are binary (nccl-tests' convention for '1G').
    scale = _DECIMAL[prefix] if tail == "B" and prefix else _BINARY[prefix]
    if tail == "I":
        raise ConfigError(f"invalid size {text!r}: did you mean {number}{prefix}iB?")
    if not math.isfinite(float(number) * scale):  # 1e400 overflows a float
        raise ConfigError(f"invalid size {text!r}: larger than any message")
    return _whole_bytes(text, number, scale) if whole_bytes else round(float(number) * scale)


def _whole_bytes(text: str, number: str, scale: int) -> int:
    """``number`` x ``scale`` as an exact integer (decimal arithmetic: ``1.1GB`` is whole,
    though ``1.1 * 1e9`` in floats is not), or ConfigError naming the fractional value."""
    context = decimal.Context(
        prec=len(number) + 20, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[]
    )
    exact = context.multiply(decimal.Decimal(number), scale)
    whole = exact.to_integral_value(context=context)
    if exact != whole:
        shown = context.normalize(exact)
        raise ConfigError(f"invalid size {text!r}: {shown} bytes, not a whole number of bytes")
    return int(whole)


#: Largest message size accepted [bytes] (1 PiB; larger is a typo, not a message).
MAX_MESSAGE_BYTES = 2**50


def parse_message_size(text: str, what: str = "--size") -> int:
    """A message size in bytes, at least 1 byte and at most ``MAX_MESSAGE_BYTES``.

    Raises:
        ConfigError: Not a size, or out of that range.
    """
    try:
        size = parse_size(text)
    except ConfigError as error:
        raise ConfigError(f"{what}: {error}") from None
    if not 1 <= size <= MAX_MESSAGE_BYTES:
        raise ConfigError(f"{what} {text}: a message size from 1 byte to 1 PiB")
    return size


#: A size's unit typed apart from its number (``1 GiB``, ``64 K``).
_UNIT_WORD = re.compile(r"(?i)^[kmgt](i?b)?$")


def is_unit_word(word: str) -> bool:
    """True for a size's unit on its own (``GiB``, ``K``, ``gb``)."""
    return bool(_UNIT_WORD.match(word))


def join_size_units(words: list[str]) -> list[str]:
    """``words`` with a unit typed apart joined to the number before it (``1 GiB`` ->
    ``1GiB``), as a size is read."""
    joined: list[str] = []
    for word in words:
        if joined and is_unit_word(word) and joined[-1].replace(".", "", 1).isdigit():
            joined[-1] += word
        else:
            joined.append(word)
    return joined


def size_argument(size_bytes: int) -> str:
    """The size as a command line writes it, exactly: ``1G``, ``64K``, ``8``, ``1000000``
    (nccl-tests' binary suffixes where the size is a whole multiple; ``parse_size`` reads
    it back to the same bytes)."""
    size = int(size_bytes)
    for suffix, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{suffix}"
    return str(size)


def parse_size_sweep(text: str, what: str = "size range") -> list[int]:
    """``8:16G`` -> [8, 16, 32, ..., 16 GiB] (doubling, both ends included).

    Args:
        text: ``START:END``.
        what: How error messages name the input (``--sweep``).

    Raises:
        ConfigError: Malformed range, or the start is not below the end.
    """
    if text.count(":") != 1:
        raise ConfigError(f"invalid {what} {text!r}: use START:END, e.g. 8:16G")
    try:
        start, end = (parse_size(part) for part in text.split(":"))
    except ConfigError as error:
        raise ConfigError(f"{what} {text}: {error}") from None
    if start < 1 or end < start or end > MAX_MESSAGE_BYTES:
        raise ConfigError(f"invalid {what} {text!r}: need 1 <= START <= END <= 1P")
    count = int(math.floor(math.log2(end / start))) + 1
    return [start * 2**i for i in range(count)]


#: Plausible bandwidths of one link or GPU [GB/s per direction]: a serial console to
#: 100x any scale-up link built; outside is a typo (or ``1e-308``).
MIN_BW_GBPS, MAX_BW_GBPS = 1e-3, 1e6


def parse_bandwidth_GBps(text: str) -> float:
    """Parse a bandwidth into GB/s (1e9 bytes/s).

    Args:
        text: ``100GB/s``, ``50 GB/s``, ``400Gb/s`` or ``400Gbps`` (bits), or a bare number
            taken as GB/s.

    Returns:
        Bandwidth [GB/s].

    Raises:
        ConfigError: The text is not a bandwidth.
    """
    try:
        value = float(text)
    except ValueError:
        match = _BW_RE.match(str(text))
        if not match:
            raise ConfigError(f"invalid bandwidth {text!r}: use e.g. 100GB/s or 400Gb/s") from None
        number, prefix, unit = match.groups()
        value = float(number) * _DECIMAL[prefix.upper()] / 1e9
        value = value / 8 if unit == "b" else value
    if not MIN_BW_GBPS <= value <= MAX_BW_GBPS:
        raise ConfigError(
            f"bandwidth {text}: outside {MIN_BW_GBPS:g} GB/s .. {MAX_BW_GBPS:g} GB/s "
            "(per direction)"
        )
    return value


def gbps_to_GBps(gbps: float) -> float:
    """Convert a line rate in Gb/s to GB/s (divide by 8)."""
    return gbps / 8.0


def format_bytes(size_bytes: float) -> str:
    """Format a byte count with binary prefixes, e.g. ``1 GiB``, ``64 KiB``, ``8 B``."""
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{value:.0f} B"
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"  # pragma: no cover - loop always returns


def format_bandwidth(bw_GBps: float) -> str:
    """Format a bandwidth in GB/s with sensible precision, e.g. ``450 GB/s``, ``12.5 GB/s``."""
    if bw_GBps >= 1000:
        return f"{bw_GBps / 1000:.3g} TB/s"
    if bw_GBps >= 100:
        return f"{bw_GBps:.0f} GB/s"
    return f"{bw_GBps:.3g} GB/s"


def format_time_us(time_us: float) -> str:
    """Format a duration given in microseconds, e.g. ``850 ns``, ``3.2 us``, ``17.5 ms``."""
    if time_us < 1:
        return f"{time_us * 1000:.3g} ns"
    if time_us < 1000:
        return f"{time_us:.3g} us"
    if time_us < 1e6:
        return f"{time_us / 1000:.4g} ms"
    return f"{time_us / 1e6:.4g} s"
