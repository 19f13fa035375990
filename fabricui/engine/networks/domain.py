"""Routes inside a scale-up domain for many flows at once, and rows of flows by domain.

Every domain block is the same up to an offset, so a route between two GPUs of one domain
is the template's (``Router.local_route`` between the same local GPUs, staging through the
host included) shifted to the flow's domain. Rows are computed on first use and kept sorted
by pair key: a 1,024-GPU scale-up domain has a million pairs, a ring needs a few. A domain
whose health overlay took links down (``Router.irregular_domains``) routes its own flows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fabricui.engine.graph_routes import replace_rows
from fabricui.engine.route_rows import pad_rows

if TYPE_CHECKING:
    from collections.abc import Callable

    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Flows:
    """Flows split by scale-up domain, with the routes of those inside one domain."""

    src: IntArray
    """(n_flows,) source ranks."""
    dst: IntArray
    """(n_flows,) destination ranks."""
    src_domain: IntArray
    """(n_flows,) domain of each source."""
    dst_domain: IntArray
    """(n_flows,) domain of each destination."""
    src_local: IntArray
    """(n_flows,) source's GPU index within its domain."""
    dst_local: IntArray
    """(n_flows,) destination's GPU index within its domain."""
    same: BoolArray
    """(n_flows,) both ends in one domain."""
    local_rows: IntArray
    """(n_flows, width) links of each flow inside one domain, -1 padded (all -1 for the
    others)."""

    def local_only(self) -> IntArray:
        """Every flow's row when none leaves its domain (nothing for a GPU to itself)."""
        return np.where((self.src == self.dst)[:, None], -1, self.local_rows)

    def with_routes(self, at: IntArray, routed: IntArray) -> IntArray:
        """Rows of every flow: ``routed`` for flows ``at`` (between domains), the domain
        route for the others, nothing for a GPU to itself.

        Args:
            at: (n_routed,) flows routed between domains.
            routed: (n_routed, width) their links, -1 padded.
        """
        local = self.local_rows
        width = max(local.shape[1], routed.shape[1])
        out = np.full((self.src.shape[0], width), -1, dtype=np.int64)
        out[:, : local.shape[1]] = self.local_only()
        out[at, :] = -1
        out[at, : routed.shape[1]] = routed
        return out


class DomainRoutes:
    """Routes between GPUs of one scale-up domain, as rows of link ids.

    Args:
        fabric: The fabric.
        router: Its router (domain 0's routes come from ``Router.route``).
    """

    def __init__(self, fabric: Fabric, router: Router) -> None:
        self._router = router
        self.gpus = fabric.gpus_per_domain
        """GPUs per domain."""
        self.links = fabric.node_links
        """Links per domain block (the shift from one domain to the next)."""
        self._keys = np.zeros(0, dtype=np.int64)
        self._rows = np.full((0, 1), -1, dtype=np.int64)

    def template_rows(self, keys: IntArray) -> IntArray:
        """(n_flows, width) domain-0 routes of the local pairs ``a * gpus + b``, -1 padded.

        Routes not asked for before are computed at once (``Router.local_routes``) and
        kept, sorted by key, so memory grows with the pairs used, not with ``gpus**2``.
        """
        known = self._keys
        at = np.minimum(np.searchsorted(known, keys), max(known.shape[0] - 1, 0))
        found = known[at] == keys if known.size else np.zeros(keys.shape[0], dtype=bool)
        missing = np.unique(keys[~found])
        if missing.size:
            g = self.gpus
            new = self._router.local_routes(missing // g, missing % g)
            if new is None:  # a pair without a route: the router's own error
                new = pad_rows(
                    [
                        [int(k) for k in self._router.local_route(int(m) // g, int(m) % g, None)]
                        for m in missing
                    ]
                )
            width = max(new.shape[1], self._rows.shape[1])
            rows = np.full((known.shape[0] + missing.shape[0], width), -1, dtype=np.int64)
            rows[: known.shape[0], : self._rows.shape[1]] = self._rows
            rows[known.shape[0] :, : new.shape[1]] = new
            merged = np.concatenate([known, missing])
            order = np.argsort(merged, kind="stable")
            self._keys, self._rows = merged[order], rows[order]
            known = self._keys
            at = np.searchsorted(known, keys)
        return self._rows[at]

    def shifted(self, a: IntArray, b: IntArray) -> IntArray:
        """(n_flows, width) routes of flows inside one domain, shifted to their domain."""
        g = self.gpus
        rows = self.template_rows((a % g) * g + b % g)
        rows = np.where(rows >= 0, rows + ((a // g) * self.links)[:, None], -1)
        return self._own_routes(rows, a, b, a // g)

    def _own_routes(self, rows: IntArray, a: IntArray, b: IntArray, domain: IntArray) -> IntArray:
        """``rows`` with the flows of irregular domains on their domain's own routes."""
        irregular = self._router.irregular_domains
        if not irregular:
            return rows
        own = np.flatnonzero(np.isin(domain, np.fromiter(irregular, np.int64)) & (a != b))
        if not own.size:
            return rows
        g = self.gpus
        routes = [
            self._router.local_route(int(x) % g, int(y) % g, int(d))
            for x, y, d in zip(a[own], b[own], domain[own])
        ]
        return replace_rows(rows, own, routes)

    def split(self, a: IntArray, b: IntArray) -> Flows:
        """The flows by domain, with the routes of those inside one (computed only for
        them)."""
        g, ln = self.gpus, self.links
        node_a, node_b = a // g, b // g
        la, lb = a % g, b % g
        same = node_a == node_b
        pair = np.full((a.shape[0], 1), -1, dtype=np.int64)
        if same.any():
            local = self.template_rows(la[same] * g + lb[same])
            local = np.where(local >= 0, local + (node_a[same] * ln)[:, None], -1)
            local = self._own_routes(local, a[same], b[same], node_a[same])
            pair = np.full((a.shape[0], local.shape[1]), -1, dtype=np.int64)
            pair[same] = local
        return Flows(a, b, node_a, node_b, la, lb, same, pair)

    def rows_routing_apart(
        self, a: IntArray, b: IntArray, route: Callable[[IntArray, IntArray], IntArray]
    ) -> IntArray:
        """(n_flows, width) every flow's row: its domain route inside one domain,
        ``route(src, dst)`` (rows, -1 padded) for the flows between domains."""
        flows = self.split(a, b)
        if flows.same.all():
            return flows.local_only()
        apart = np.flatnonzero(~flows.same)
        return flows.with_routes(apart, route(a[apart], b[apart]))
