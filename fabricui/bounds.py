"""The ranges numbers must fall in where they cross into fabricui (a flag, a YAML value, a
plugin's return, a measured row): finite, and within what the hardware can do, so that no
impossible figure (an infinite time, a NaN bandwidth, a switch of 10^17 ports) reaches a
result. One check and one one-line message, naming where the number came from.

Each range is wide: it refuses what no machine can be, not what is unusual.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError, FabricError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True)
class Range:
    """What a number is, its unit and the closed interval it must be in."""

    what: str
    """What the number is, for messages (``NIC port rate``)."""
    unit: str
    """Its unit (``Gb/s``), or empty for a fraction or a count."""
    low: float
    """Smallest value that can be."""
    high: float
    """Largest value that can be."""
    why: str = ""
    """Why the bounds are where they are (for the docs and the curious)."""

    def holds(self, value: float) -> bool:
        """Whether ``value`` is finite and within the range."""
        return math.isfinite(value) and self.low <= value <= self.high

    def describe(self) -> str:
        """``a finite number within 1..100000 Gb/s``."""
        unit = f" {self.unit}" if self.unit else ""
        return f"a finite number within {self.low:g}..{self.high:g}{unit}"


#: The port rate of a NIC [Gb/s]: from 1 Gb/s Ethernet to well past any port built.
NIC_PORT_GBPS = Range(
    "NIC port rate", "Gb/s", 1.0, 100_000.0, "1 GbE is the slowest NIC a GPU node carries"
)
#: Model FLOP utilization: a fraction of the GPU's peak, at most all of it.
MFU = Range("MFU", "", 1e-3, 1.0, "no training plan runs below 0.1% of peak; 1 is the peak")
#: The time of one collective or transfer [us]: no GPU operation finishes in under a
#: nanosecond (a kernel launch alone takes microseconds); 10^15 us is 30 years.
OPERATION_TIME_US = Range("time", "us", 1e-3, 1e15, "a nanosecond to 30 years")
#: Bytes of one message or memory buffer: up to 1 PB, more than any GPU job moves at once.
BYTES = Range("size", "bytes", 0.0, 1e15, "up to 1 PB")
#: Calls of one operation per training step.
CALLS = Range("calls per step", "", 0.0, 1e12)
#: A GPU board's power cap [W] (``plan --power-cap``, a run's ``power_W``).
POWER_CAP_W = Range("power cap", "W", 1.0, 1e5, "no board draws 100 kW")
#: Tokens of the busiest expert over the mean (``--moe-imbalance``): 1 is balanced.
MOE_IMBALANCE = Range("MoE imbalance", "", 1.0, 1000.0, "the busiest expert over the mean")
#: Bytes per element a gradient reduction moves (FP8 1 to FP32 4), as hwdb frameworks state.
ELEMENT_BYTES = Range("bytes per element", "", 1.0, 4.0, "FP8 to FP32")
#: Largest degree, batch or sequence length (tokens) a training plan or run may state:
#: beyond any machine or data set, and small enough that their products stay exact.
PLAN_COUNT_MAX = 2**31


def plan_count(flag: str, value: int) -> int:
    """``value`` of ``flag`` (a degree, a batch or tokens per sequence), within
    ``1..PLAN_COUNT_MAX`` (what a run file takes too).

    Raises:
        ConfigError: Below 1 or above ``PLAN_COUNT_MAX``, naming the flag.
    """
    if value < 1:
        raise ConfigError(f"{flag} must be at least 1 (got {value})")
    too_many = above_plan_count_max(value)
    if too_many is not None:
        raise ConfigError(f"{flag} {too_many}")
    return int(value)


def above_plan_count_max(value: int) -> str | None:
    """Why ``value`` cannot be a count of a plan or model shape when it is above
    ``PLAN_COUNT_MAX`` (``must be at most 2147483648 (got VALUE)``), else None: one wording
    for flags, run files and hwdb model records."""
    if value > PLAN_COUNT_MAX:
        return f"must be at most {PLAN_COUNT_MAX} (got {value})"
    return None


def real(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):  # an int past the float range
        return None
    return number if math.isfinite(number) else None


def problem(value: Any, bound: Range) -> str | None:
    """What is wrong with ``value`` as a ``bound``, in words, or None when it fits."""
    number = real(value)
    if number is not None and bound.holds(number):
        return None
    shown = f"{value:g}" if number is not None or isinstance(value, float) else repr(value)
    return f"{bound.what} must be {bound.describe()} (got {shown[:40]})"


def between(value: Any, bound: Range) -> str | None:
    """What is wrong with ``value`` as a ``bound``, worded as the training recipe words it
    (``MoE imbalance must be between 1 and 1000 (got 0.5)``), or None when it fits."""
    if problem(value, bound) is None:
        return None
    unit = f" {bound.unit}" if bound.unit else ""
    shown = f"{value:g}" if isinstance(value, (int, float)) else repr(value)[:40]
    return f"{bound.what} must be between {bound.low:g} and {bound.high:g}{unit} (got {shown})"


def checked(value: Any, bound: Range, source: str, error: type[FabricError] = ConfigError) -> float:
    """``value`` as a float, when it is within ``bound``.

    Args:
        value: The number as it arrived.
        bound: The range it must be in.
        source: Where it came from, first in the message (``--nic-gbps``, ``FILE:LINE``,
            ``plugin NAME``).
        error: The error type to raise (the area's).

    Raises:
        FabricError: ``source: NIC port rate must be a finite number within ... (got ...)``.
    """
    wrong = problem(value, bound)
    if wrong is not None:
        raise error(f"{source}: {wrong}")
    return float(value)


def within(values: NDArray[np.float64], bound: Range) -> NDArray[np.bool_]:
    """Which of ``values`` are finite and within ``bound`` (no warning for NaN)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    inside = np.isfinite(values)
    inside[inside] = (values[inside] >= bound.low) & (values[inside] <= bound.high)
    return inside
