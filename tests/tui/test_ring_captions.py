"""The ring stepper's caption gives each operation's own volume, not all_reduce's."""

from __future__ import annotations

import pytest

from fabricui.tui.widgets.collective_steps import collective_steps


@pytest.mark.parametrize(
    ("op", "caption"),
    [
        ("all_reduce", "ring: each GPU sends 2(N-1)/N of the data"),
        ("all_gather", "ring: each GPU sends (N-1)/N of the data"),
        ("reduce_scatter", "ring: each GPU sends (N-1)/N, summing on the way"),
        ("broadcast", "ring: a chain from GPU0, each GPU passes it on once"),
        ("reduce", "ring: each chunk round to GPU0, summed on the way"),
    ],
)
def test_each_ring_operation_has_its_caption(op, caption):
    """A ring all_gather, reduce_scatter or broadcast no longer says 2(N-1)/N, and every
    caption fits the 80-column stepper (54 columns)."""
    drawn, _, shown = collective_steps(op, "ring/simple")
    assert drawn == "ring" and shown == caption and len(shown) <= 54
