"""Links of a network block under construction: bundles added both ways, whole cables.

The three network builders (``fat_tree``, ``dragonfly``, ``torus``) add their bundles to a
``Cabling`` and hand back a ``NetworkBlock``: the switches they built, every directed link
and the regular structure their router reads (``FatTree``, ``Dragonfly``, ``Torus``), with
link ids local to the block until the fabric builder shifts them (``shift_ids``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError

IntArray = npt.NDArray[np.int64]
#: The routing table a network block carries.
Table = TypeVar("Table")


def shift_ids(ids: IntArray, offset: int) -> IntArray:
    """Link ids made absolute (``-1`` gaps kept)."""
    return np.where(ids >= 0, ids + offset, ids)


@dataclass
class NetworkBlock(Generic[Table]):
    """Switch devices (ids local to the block) and links (absolute device ids)."""

    kind: list[int]
    index: list[int]
    src: IntArray
    dst: IntArray
    bw_GBps: npt.NDArray[np.float64]
    count: IntArray
    tree: Table
    """The builder's routing table (``FatTree``, ``Dragonfly`` or ``Torus``)."""
    plan: tuple[tuple[str, str], ...] = ()
    """What was built, as (figure, value) pairs (tiers, switch counts, cables, built
    oversubscription)."""
    axis: IntArray | None = None
    """Torus only: (n_links,) the dimension (0, 1, 2) of each link."""


@dataclass
class Cabling:
    """Directed links of a network block under construction, ids in the order added: each
    call adds bundles ``a -> b``, then the same bundles ``b -> a``, so a bundle's reverse
    link is its id plus the number of bundles added with it."""

    src: list[IntArray] = field(default_factory=list)
    dst: list[IntArray] = field(default_factory=list)
    bw_GBps: list[npt.NDArray[np.float64]] = field(default_factory=list)
    count: list[IntArray] = field(default_factory=list)
    n_links: int = 0
    """Links added so far (the id of the next one)."""

    def add(
        self, a: IntArray, b: IntArray, bw_GBps: npt.NDArray[np.float64], count: IntArray
    ) -> IntArray:
        """Add bundles ``a[i] <-> b[i]`` of ``bw_GBps[i]`` per direction [GB/s] made of
        ``count[i]`` parallel links; returns the (n,) link ids ``a -> b``."""
        n = a.shape[0]
        ids = self.n_links + np.arange(n, dtype=np.int64)
        self.src += [a, b]
        self.dst += [b, a]
        self.bw_GBps.append(np.concatenate([bw_GBps, bw_GBps]))
        self.count.append(np.concatenate([count, count]))
        self.n_links += 2 * n
        return ids

    def add_cables(
        self, a: IntArray, b: IntArray, cables: npt.ArrayLike, cable_bw_GBps: float
    ) -> IntArray:
        """Add bundles ``a[i] <-> b[i]`` of ``cables[i]`` whole cables of ``cable_bw_GBps``
        each; returns the link ids ``a -> b``."""
        whole = np.asarray(cables, dtype=np.int64)
        return self.add(a, b, np.multiply(whole, cable_bw_GBps, dtype=np.float64), whole)

    def block(
        self,
        kind: list[int],
        index: list[int],
        tree: Table,
        plan: tuple[tuple[str, str], ...],
    ) -> NetworkBlock[Table]:
        """The network block of these links and the given switches."""
        return NetworkBlock(
            kind=kind,
            index=index,
            src=np.concatenate(self.src).astype(np.int64),
            dst=np.concatenate(self.dst).astype(np.int64),
            bw_GBps=np.concatenate(self.bw_GBps).astype(np.float64),
            count=np.concatenate(self.count).astype(np.int64),
            tree=tree,
            plan=plan,
        )


#: Most switch-to-switch bundles a network may have (its link arrays hold two links each).
MAX_BUNDLES = 2**24


def check_bundles(count: int, what: str) -> None:
    """Raise EngineError when a layout asks for more than ``MAX_BUNDLES`` bundles."""
    if count > MAX_BUNDLES:
        raise EngineError(f"{what} = {count} switch-to-switch bundles exceeds {MAX_BUNDLES}")


def spread(total: int, parts: int) -> IntArray:
    """``total`` cables over ``parts`` bundles as evenly as whole cables allow."""
    base, extra = divmod(total, parts)
    return base + (np.arange(parts) < extra).astype(np.int64)
