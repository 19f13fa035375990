"""Routes between the leaves of a real switch graph, computed per (leaf, leaf) pair.

``Router`` routes an imported cluster over its switch graph: breadth-first from the source
leaf, the widest of the shortest routes, a hash picking among equal links. ``SwitchRoutes``
does the same for many leaf pairs at once, on the switches alone (hundreds of nodes where
the fabric has tens of thousands of devices):

- ``trees``: the router's best-route trees, for many source leaves in one pass;
- ``pick``: the one route the router takes between two leaves for a given hash;
- ``spread``: every route the router could take, with the share of a flow each link
  carries when every switch splits what reaches it over its next hops in proportion to
  their bandwidth (adaptive routing; a bundle of two cables takes two shares).

Leaves cabled alike (the same switches above them, at the same rates: the leaves of one
scalable unit) have the same tree but for their own first hop, so a tree is computed for a
few representatives of each such group and the first hop is moved to the real source.
Spreads likewise: one per pair of representatives, kept between calls and copied to each
leaf pair asked for, its first and last hops moved to the pair's own leaves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fabricui.engine.routing import Router
from fabricui.errors import EngineError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Representatives kept per group of alike leaves: a pair within the group needs one that
#: is neither of its ends.
_REPRESENTATIVES = 3


def ranges(starts: IntArray, counts: IntArray) -> IntArray:
    """Concatenated ``arange(start, start + count)`` for every pair (vectorized).

    A running sum of steps of one, each block's first step jumping to its start: one pass
    over the output, where repeating each block's offset takes several.
    """
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    used = counts > 0
    start, count = starts[used].astype(np.int64), counts[used]
    step = np.ones(total, dtype=np.int64)
    step[0] = start[0]
    step[np.cumsum(count[:-1])] = start[1:] - start[:-1] - count[:-1] + 1
    return np.cumsum(step, out=step)


class SwitchRoutes:
    """Routes between the leaves of one fabric's switch graph, per (leaf, leaf) pair.

    Kept on the router (``switch_routes``), so every bulk router of a fabric shares the
    spreads it made. Switches are numbered compactly (``compact``); links are positions in
    ``Router.switch_graph``.

    Args:
        router: The per-pair router whose switch graph it routes on.
    """

    #: Most (source, link) cells of the trees held at once; sources are taken in chunks.
    MAX_TREE_CELLS = 1 << 23
    #: Most (pair, link) entries of spreads kept between calls (~256 MiB). Only the spreads
    #: of representative pairs are kept (a call copies them to its own leaf pairs), and
    #: never more than this: when a call's new spreads would pass it, the kept ones are
    #: replaced by the spreads that call used, or dropped when those alone pass it (they are
    #: then computed again next time).
    MAX_SPREAD_ENTRIES = 1 << 24
    #: Most (pair, link) entries copied at once from the kept spreads to the leaf pairs
    #: (bounds the index arrays ``spread`` builds on top of what it returns).
    EXPAND_ENTRIES = 1 << 20

    def __init__(self, router: Router) -> None:
        graph = router.switch_graph
        self._links = graph.links
        self._bw = graph.bw
        self._n = router.fabric.n_devices
        nodes = np.unique(np.concatenate([graph.src, graph.dst]))
        self._nodes = nodes
        count = nodes.shape[0]
        # Positions keep the router's order (sorted by source device, hence source id).
        self._src = np.searchsorted(nodes, graph.src)
        self._dst = np.searchsorted(nodes, graph.dst)
        self._ptr = np.searchsorted(self._src, np.arange(count + 1))
        self._in_order = graph.in_order
        self._in_ptr = np.searchsorted(self._dst[graph.in_order], np.arange(count + 1))
        transit = router.switch_transit
        self._transit = transit[nodes] if count else np.zeros(0, dtype=bool)
        # Each switch's outgoing links sorted by the switch they enter: alike switches'
        # k-th links go to the same switch.
        self._out_sorted = np.lexsort((self._dst, self._src))
        self._out_rank = np.empty_like(self._out_sorted)
        self._out_rank[self._out_sorted] = np.arange(self._out_sorted.shape[0]) - np.repeat(
            self._ptr[:-1], np.diff(self._ptr)
        )
        # The same for incoming links, sorted by the switch they leave.
        self._in_sorted = np.lexsort((self._src, self._dst))
        self._in_rank = np.empty_like(self._in_sorted)
        self._in_rank[self._in_sorted] = np.arange(self._in_sorted.shape[0]) - np.repeat(
            self._in_ptr[:-1], np.diff(self._in_ptr)
        )
        self._group, self._reps = self._alike()
        self._tree_cache: dict[int, BoolArray] = {}
        # The spread of each pair of representatives asked for so far (``_shared``), as CSR
        # sorted by key: switch-graph positions and weights.
        self._keys = np.zeros(0, dtype=np.int64)
        self._csr = np.zeros(1, dtype=np.int64)
        self._res = np.zeros(0, dtype=np.int64)
        self._w = np.zeros(0)

    # --- switches cabled alike ---------------------------------------------------------

    def _alike(self) -> tuple[IntArray, IntArray]:
        """(group of each switch, (n_groups, 3) representatives, -1 padded): switches
        whose links in and out go to the same switches at the same bandwidths."""
        count = self._nodes.shape[0]
        signatures: dict[tuple[object, ...], int] = {}
        group = np.zeros(count, dtype=np.int64)
        members: list[list[int]] = []
        for node in range(count):
            out = self._out_sorted[self._ptr[node] : self._ptr[node + 1]]
            into = self._in_order[self._in_ptr[node] : self._in_ptr[node + 1]]
            into = into[np.argsort(self._src[into], kind="stable")]
            key = (
                self._dst[out].tobytes(),
                self._bw[out].tobytes(),
                self._src[into].tobytes(),
                self._bw[into].tobytes(),
            )
            g = signatures.setdefault(key, len(members))
            if g == len(members):
                members.append([])
            members[g].append(node)
            group[node] = g
        reps = np.full((len(members), _REPRESENTATIVES), -1, dtype=np.int64)
        for g, nodes in enumerate(members):
            reps[g, : min(len(nodes), _REPRESENTATIVES)] = nodes[:_REPRESENTATIVES]
        return group, reps

    def _representative(self, source: IntArray, target: IntArray) -> IntArray:
        """The switch whose tree serves each (source, target) pair: the source itself when
        it is a representative, else one of its group that is not the target.

        Two alike switches see every other switch at the same distance and bandwidth
        (neither lies on a shortest route of the other: its neighbours are the other's
        first hops), so their trees differ only in their own first hop.
        """
        reps = self._reps[self._group[source]]
        own = (reps == source[:, None]).any(axis=1)
        usable = (reps >= 0) & (reps != target[:, None])
        pick = reps[np.arange(source.shape[0]), np.argmax(usable, axis=1)]
        return np.where(own, source, pick)

    def _first_hop(self, pos: IntArray, rep: IntArray, source: IntArray) -> IntArray:
        """Positions moved from each representative's first hop to its source's."""
        moved = (self._src[pos] == rep) & (rep != source)
        return np.where(moved, self._out_twin(pos, source), pos)

    def _out_twin(self, pos: IntArray, source: IntArray) -> IntArray:
        """Position of the link out of each ``source`` that matches link ``pos`` out of a
        switch alike to it (the same rank among their links: into the same switch)."""
        return self._out_sorted[self._ptr[source] + self._out_rank[pos]]

    def _in_twin(self, pos: IntArray, target: IntArray) -> IntArray:
        """Position of the link into each ``target`` that matches link ``pos`` into a
        switch alike to it (from the same switch)."""
        return self._in_sorted[self._in_ptr[target] + self._in_rank[pos]]

    def compact(self, devices: IntArray) -> IntArray:
        """Compact ids of switch devices (-1 for a device outside the switch graph)."""
        nodes = self._nodes
        if not nodes.size:
            return np.full(devices.shape[0], -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(nodes, devices), nodes.size - 1)
        return np.where(nodes[at] == devices, at, -1)

    def _chunks(self, sources: IntArray) -> list[IntArray]:
        """Sources in chunks whose trees fit ``MAX_TREE_CELLS``."""
        per = max(1, self.MAX_TREE_CELLS // max(self._src.shape[0], 1))
        return [sources[i : i + per] for i in range(0, sources.shape[0], per)]

    # --- best-route trees --------------------------------------------------------------

    def trees(self, sources: IntArray) -> BoolArray:
        """(k, n_positions) which switch-graph links lie on a best route from each source
        (compact ids): ``Router.switch_tree`` for many sources (cached, bounded)."""
        n_pos = self._src.shape[0]
        cached = [self._tree_cache.get(int(source)) for source in sources]
        missing = np.asarray([i for i, tree in enumerate(cached) if tree is None], dtype=np.int64)
        if missing.size:
            kept = max(0, 4 * self.MAX_TREE_CELLS // max(n_pos, 1))  # trees the cache holds
            room = kept - min(missing.size, kept)
            while len(self._tree_cache) > room:  # the oldest trees go first
                del self._tree_cache[next(iter(self._tree_cache))]
            for chunk in self._chunks(missing):
                for i, row in zip(chunk.tolist(), self._trees(sources[chunk])):
                    cached[i] = row
                    if len(self._tree_cache) < kept:
                        self._tree_cache[int(sources[i])] = row
        if not cached:
            return np.zeros((0, n_pos), dtype=bool)
        return np.stack(cached)  # type: ignore[arg-type]

    def _trees(self, sources: IntArray) -> BoolArray:
        """``trees`` computed: one breadth-first pass for all ``sources`` on flat (source,
        switch) and (source, link) tables. Hop count first, then the widest bottleneck
        among the shortest routes; a link is on a route when its width reaches the best
        width of the switch it enters (the router's own rule)."""
        k, count = sources.shape[0], self._nodes.shape[0]
        n_pos = self._src.shape[0]
        dist = np.full(k * count, -1, dtype=np.int64)
        best = np.zeros(k * count)
        rows = np.arange(k, dtype=np.int64)
        dist[rows * count + sources] = 0
        best[rows * count + sources] = np.inf
        on = np.zeros(k * n_pos, dtype=bool)
        front_i, front_v = rows, sources.astype(np.int64)
        level = 0
        while front_i.size:
            forward = (front_v == sources[front_i]) | self._transit[front_v]
            front_i, front_v = front_i[forward], front_v[forward]
            start = self._ptr[front_v]
            number = self._ptr[front_v + 1] - start
            pos = ranges(start, number)
            owner = np.repeat(front_i, number)
            cell = owner * count + self._dst[pos]
            fresh = dist[cell] == -1
            dist[cell[fresh]] = level + 1
            reached = np.zeros(k * count, dtype=bool)
            reached[cell[fresh]] = True
            new = np.flatnonzero(reached)
            keep = dist[cell] == level + 1
            pos, owner, cell = pos[keep], owner[keep], cell[keep]
            width = np.minimum(best[owner * count + self._src[pos]], self._bw[pos])
            np.maximum.at(best, cell, width)
            on[owner * n_pos + pos] = width >= best[cell] * (1 - 1e-9)
            front_i, front_v = new // count, new % count
            level += 1
        return on.reshape(k, n_pos)

    def _leaves(self, leaf_a: IntArray, leaf_b: IntArray) -> tuple[IntArray, IntArray]:
        """Compact ids of two leaf arrays.

        Raises:
            EngineError: A leaf that no switch-to-switch cable reaches.
        """
        ca, cb = self.compact(leaf_a), self.compact(leaf_b)
        if (ca < 0).any() or (cb < 0).any():
            i = int(np.argmax((ca < 0) | (cb < 0)))
            raise EngineError(f"no route from device {int(leaf_a[i])} to device {int(leaf_b[i])}")
        return ca, cb

    # --- one route per flow ------------------------------------------------------------

    def pick(self, leaf_a: IntArray, leaf_b: IntArray, salt: IntArray) -> IntArray:
        """(n, width) link ids between two different leaves, -1 padded: ``Router``'s route
        for each flow (the same walk back from ``leaf_b``, the same hash among equals).

        Raises:
            EngineError: A leaf cannot reach the other.
        """
        n = leaf_a.shape[0]
        ca, cb = self._leaves(leaf_a, leaf_b)
        rep = self._representative(ca, cb)
        sources, source_row = np.unique(rep, return_inverse=True)
        source_row = source_row.reshape(-1)
        columns: list[IntArray] = []
        n_pos = self._src.shape[0]
        first = 0
        for chunk in self._chunks(sources):
            # cum[r, t]: best-route links among the first t incoming positions, row r offset
            # so that the flattened table is sorted (one searchsorted for every flow).
            on = self.trees(chunk)[:, self._in_order]
            cum = np.zeros((chunk.shape[0], n_pos + 1), dtype=np.int64)
            np.cumsum(on, axis=1, out=cum[:, 1:])
            cum += (np.arange(chunk.shape[0], dtype=np.int64) * (n_pos + 1))[:, None]
            flat = cum.reshape(-1)
            flows = np.flatnonzero((source_row >= first) & (source_row < first + chunk.shape[0]))
            row = source_row[flows] - first
            v = cb[flows].copy()
            active = np.flatnonzero(v != chunk[row])
            step = 0
            while active.size:
                here, r = v[active], row[active]
                base = flat[r * (n_pos + 1) + self._in_ptr[here]]
                number = flat[r * (n_pos + 1) + self._in_ptr[here + 1]] - base
                if (number == 0).any() or step > self._nodes.shape[0]:
                    i = flows[active[int(np.argmin(number))]]
                    raise EngineError(
                        f"no route from device {int(leaf_a[i])} to device {int(leaf_b[i])}"
                    )
                at = np.searchsorted(flat, base + salt[flows[active]] % number + 1, side="left")
                pos = self._in_order[at - 1 - r * (n_pos + 1)]
                taken = flows[active]
                pos = self._first_hop(pos, rep[taken], ca[taken])
                while len(columns) <= step:
                    columns.append(np.full(n, -1, dtype=np.int64))
                columns[step][taken] = self._links[pos]
                v[active] = self._src[pos]
                done = (v[active] == chunk[r]) | (v[active] == ca[taken])
                active = active[~done]
                step += 1
            first += chunk.shape[0]
        if not columns:
            return np.full((n, 1), -1, dtype=np.int64)
        backward = np.stack(columns, axis=1)  # hop t counted back from leaf_b
        length = (backward >= 0).sum(axis=1)
        out = np.full_like(backward, -1)
        flow, step_ids = np.nonzero(backward >= 0)
        out[flow, length[flow] - 1 - step_ids] = backward[flow, step_ids]
        return out

    # --- every route, spread -----------------------------------------------------------

    @property
    def kept_entries(self) -> int:
        """(pair, link) entries of the spreads kept between calls (at most
        ``MAX_SPREAD_ENTRIES``)."""
        return int(self._res.shape[0])

    def spread(
        self, leaf_a: IntArray, leaf_b: IntArray
    ) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
        """Spread of flows between two different leaves over every route the router could
        pick, as groups: one per distinct leaf pair.

        Returns:
            (group of each flow, group_ptr, group links, weights): a flow puts ``weight``
            bytes on each of its group's links per byte it moves.

        Raises:
            EngineError: A leaf cannot reach the other.
        """
        ca, cb = self._leaves(leaf_a, leaf_b)
        count = max(self._nodes.shape[0], 1)
        unique, group = np.unique(ca * count + cb, return_inverse=True)
        source, target = unique // count, unique % count
        rep = self._representative(source, target)
        # Alike targets too: from a source, two alike switches are reached the same way but
        # for their own last hop. One spread per pair of representatives, copied to each
        # leaf pair, then its first hops moved to the real source and its last hops to the
        # real target: only those few entries differ between the pairs sharing a spread.
        rep_target = self._representative(target, rep)
        rep_keys, of_key = np.unique(rep * count + rep_target, return_inverse=True)
        of_key = of_key.reshape(-1)
        shared_ptr, shared_pos, shared_w = self._shared(rep_keys)
        ptr = _csr_table(np.diff(shared_ptr)[of_key])
        links, weight = self._expand(self._links[shared_pos], shared_w, shared_ptr, of_key, ptr)
        row = np.repeat(np.arange(rep_keys.shape[0], dtype=np.int64), np.diff(shared_ptr))
        up = self._src[shared_pos] == rep_keys[row] // count
        first = np.flatnonzero(up)
        owner, which, at = self._hops(first, shared_ptr, of_key, ptr, rep != source)
        links[at] = self._links[self._out_twin(shared_pos[first][which], source[owner])]
        # A twin enters the same switch, so a last hop stays one after its first hop moved
        # (a cable between two leaves): it is moved at both ends, in that order.
        last = np.flatnonzero(self._dst[shared_pos] == rep_keys[row] % count)
        owner, which, at = self._hops(last, shared_ptr, of_key, ptr, rep_target != target)
        pos = shared_pos[last][which]
        if up[last].any():
            pos = self._first_hop(pos, rep[owner], source[owner])
        links[at] = self._links[self._in_twin(pos, target[owner])]
        return group.reshape(-1).astype(np.int64), ptr, links, weight

    def _expand(
        self,
        shared_links: IntArray,
        shared_w: FloatArray,
        shared_ptr: IntArray,
        of_key: IntArray,
        ptr: IntArray,
    ) -> tuple[IntArray, FloatArray]:
        """(links, weights) of each pair's copy of its shared spread ``of_key``, laid out
        by ``ptr``; copied ``EXPAND_ENTRIES`` at a time."""
        n, total = of_key.shape[0], int(ptr[-1])
        links = np.empty(total, dtype=np.int64)
        weight = np.empty(total)
        cuts = np.searchsorted(ptr, np.arange(0, total, self.EXPAND_ENTRIES), side="right") - 1
        bounds = np.unique(np.concatenate([[0], cuts, [n]])).tolist()
        counts = np.diff(ptr)
        for first, last in zip(bounds[:-1], bounds[1:]):
            at = ranges(shared_ptr[of_key[first:last]], counts[first:last])
            span = slice(int(ptr[first]), int(ptr[last]))
            np.take(shared_links, at, out=links[span], mode="clip")
            np.take(shared_w, at, out=weight[span], mode="clip")
        return links, weight

    @staticmethod
    def _hops(
        flagged: IntArray, shared_ptr: IntArray, of_key: IntArray, ptr: IntArray, moves: BoolArray
    ) -> tuple[IntArray, IntArray, IntArray]:
        """(pair, index in ``flagged``, entry in the copies) of every ``flagged`` shared
        entry (sorted) in the copy of each pair that ``moves``."""
        pairs = np.flatnonzero(moves)
        at = np.searchsorted(flagged, shared_ptr)
        key = of_key[pairs]
        number = at[key + 1] - at[key]
        which = ranges(at[key], number)
        owner = np.repeat(pairs, number)
        return owner, which, np.repeat(ptr[pairs] - shared_ptr[key], number) + flagged[which]

    def _shared(self, keys: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """(ptr, positions, weights) of the spreads of representative pair keys (sorted,
        unique), those not kept yet computed and kept within ``MAX_SPREAD_ENTRIES``."""
        known = self._keys
        if known.size:
            at = np.minimum(np.searchsorted(known, keys), known.shape[0] - 1)
            hit = known[at] == keys
            if hit.all() and keys.shape[0] == known.shape[0]:
                return self._csr, self._res, self._w
        else:
            at, hit = np.zeros_like(keys), np.zeros(keys.shape[0], dtype=bool)
        starts = self._csr[at[hit]]
        hit_counts = self._csr[at[hit] + 1] - starts
        old = ranges(starts, hit_counts)
        missing = keys[~hit]
        if not missing.size:
            return _csr_table(hit_counts), self._res[old], self._w[old]
        new = (missing, *self._spread_keys(missing))
        _, ptr, pos, weight = _merge((keys[hit], hit_counts, self._res[old], self._w[old]), new)
        if self._res.shape[0] + new[2].shape[0] <= self.MAX_SPREAD_ENTRIES:
            kept = _merge((known, np.diff(self._csr), self._res, self._w), new)
        elif pos.shape[0] <= self.MAX_SPREAD_ENTRIES:
            kept = (keys, ptr, pos, weight)
        else:
            kept = (np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), _NO_POS, _NO_W)
        self._keys, self._csr, self._res, self._w = kept
        return ptr, pos, weight

    def _spread_keys(self, keys: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """(entries per key, positions, weights) of the spreads of pair keys (sorted,
        unique; each source its own tree), entries grouped by key in order."""
        count = max(self._nodes.shape[0], 1)
        sources = np.unique(keys // count)
        counts, positions, weights = [], [], []
        for chunk in self._chunks(sources):
            chosen = keys[np.isin(keys // count, chunk)]
            row = np.searchsorted(chunk, chosen // count)
            c, p, w = self._spread_from(chunk, row, chosen % count)
            counts.append(c)
            positions.append(p)
            weights.append(w)
        return np.concatenate(counts), np.concatenate(positions), np.concatenate(weights)

    def _spread_from(
        self, sources: IntArray, row: IntArray, targets: IntArray
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """(entries per pair, positions, weights) of the spreads of pairs
        (``sources[row]``, ``targets``), entries grouped by pair in order."""
        count = self._nodes.shape[0]
        n_pos = self._src.shape[0]
        # Each source's best-route links into each switch, as CSR over (source, switch).
        on = self.trees(sources)[:, self._in_order].reshape(-1)
        entries = np.flatnonzero(on)
        into_pos = self._in_order[entries % n_pos]
        cell = (entries // n_pos) * count + self._dst[into_pos]
        into = np.searchsorted(cell, np.arange(sources.shape[0] * count + 1))
        counts, positions, weights = [], [], []
        per = max(1, (1 << 22) // max(count, 1))
        for first in range(0, targets.shape[0], per):
            part = slice(first, first + per)
            c, p, w = self._spread_pairs(
                into, into_pos, sources[row[part]], row[part], targets[part]
            )
            counts.append(c)
            positions.append(p)
            weights.append(w)
        return np.concatenate(counts), np.concatenate(positions), np.concatenate(weights)

    def _spread_pairs(
        self,
        into: IntArray,
        into_pos: IntArray,
        source_of: IntArray,
        row: IntArray,
        targets: IntArray,
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """``_spread_from`` for one chunk of pairs, on flat (pair, switch) tables."""
        count = self._nodes.shape[0]
        m = targets.shape[0]
        size = m * count
        # Backward from each target over best-route links: the links of every route.
        pid = np.arange(m, dtype=np.int64)
        node = targets.astype(np.int64)
        steps: list[tuple[IntArray, IntArray]] = []
        while pid.size:
            start = into[row[pid] * count + node]
            number = into[row[pid] * count + node + 1] - start
            if not steps and (number == 0).any():
                i = int(np.argmin(number))
                raise EngineError(
                    f"no route from device {int(self._nodes[source_of[i]])} to device "
                    f"{int(self._nodes[targets[i]])}"
                )
            pos = into_pos[ranges(start, number)]
            owner = np.repeat(pid, number)
            steps.append((owner, pos))
            up = self._src[pos]
            more = up != source_of[owner]
            reached = np.zeros(size, dtype=bool)
            reached[owner[more] * count + up[more]] = True
            cells = np.flatnonzero(reached)
            pid, node = cells // count, cells % count
            if len(steps) > count:
                raise EngineError("no route: a cycle in the best routes")
        # Forward from each source: a switch splits what reaches it over its next hops on
        # those routes, in proportion to their bandwidth. A switch is at one distance from
        # the source, so its share is complete before its own links are taken.
        share = np.zeros(size)
        share[np.arange(m, dtype=np.int64) * count + source_of] = 1.0
        owners: list[IntArray] = []
        positions: list[IntArray] = []
        weights: list[FloatArray] = []
        for owner, pos in reversed(steps):
            bw = self._bw[pos]
            u_cell = owner * count + self._src[pos]
            out_bw = np.bincount(u_cell, weights=bw, minlength=size)
            w = share[u_cell] * bw / out_bw[u_cell]
            share += np.bincount(owner * count + self._dst[pos], weights=w, minlength=size)
            owners.append(owner)
            positions.append(pos)
            weights.append(w)
        if not owners:
            return np.zeros(m, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        owner_all = np.concatenate(owners)
        order = np.argsort(owner_all, kind="stable")
        counts = np.bincount(owner_all, minlength=m)
        return counts, np.concatenate(positions)[order], np.concatenate(weights)[order]


_NO_POS = np.zeros(0, dtype=np.int64)
_NO_W = np.zeros(0)


def _csr_table(counts: IntArray) -> IntArray:
    """(n + 1,) start of each of ``n`` blocks of ``counts`` entries, then the end."""
    ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


def _merge(
    a: tuple[IntArray, IntArray, IntArray, FloatArray],
    b: tuple[IntArray, IntArray, IntArray, FloatArray],
) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """Two tables of (sorted keys, entries per key, positions, weights), their keys
    disjoint, as one (keys, ptr, positions, weights) sorted by key: each key's entries
    move as a block."""
    keys = np.concatenate([a[0], b[0]])
    counts = np.concatenate([a[1], b[1]])
    order = np.argsort(keys, kind="stable")
    ptr = _csr_table(counts[order])
    start = np.empty_like(order)
    start[order] = ptr[:-1]
    where = ranges(start, counts)
    pos = np.empty(where.shape[0], dtype=np.int64)
    weight = np.empty(where.shape[0])
    pos[where] = np.concatenate([a[2], b[2]])
    weight[where] = np.concatenate([a[3], b[3]])
    return keys[order], ptr, pos, weight


def switch_routes(router: Router) -> SwitchRoutes:
    """The shared ``SwitchRoutes`` of a router (made on first use, kept on it and shared
    with its variants: a calibration's trials route alike)."""
    return router.shared("switch_routes", lambda: SwitchRoutes(router))
