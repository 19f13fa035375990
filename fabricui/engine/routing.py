"""Routing: the path between two GPUs as an array of link ids, as the fabric routes it.

Within a node: over NVLink/NVSwitch when present, else PCIe (through host memory when
peer-to-peer is off). Across nodes: GPU -> its NIC -> up to the lowest common switch ->
down -> NIC -> GPU. Among equally short routes the widest wins; remaining ties (ECMP over
spines) are spread by a deterministic hash of the endpoints.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from fabricui.errors import EngineError
from fabricui.fabric.fabric import DeviceKind, Fabric, IntArray


class _Graph:
    """Outgoing-link adjacency (CSR) over a subset of a fabric's links."""

    def __init__(self, fabric: Fabric, link_ids: npt.NDArray[np.int64], n_devices: int) -> None:
        order = np.argsort(fabric.link_src[link_ids], kind="stable")
        self.links = link_ids[order]
        self.src = fabric.link_src[self.links]
        self.ptr = np.searchsorted(self.src, np.arange(n_devices + 1))
        self.dst = fabric.link_dst[self.links]
        self.bw = fabric.link_bw_GBps[self.links]

    def route(self, src: int, dst: int, transit: npt.NDArray[np.bool_], salt: int) -> list[int]:
        """Widest of the shortest paths from ``src`` to ``dst`` through ``transit`` devices."""
        if src == dst:
            return []
        dist = {src: 0}
        order = [src]
        queue = deque([src])
        while queue:
            u = queue.popleft()
            if u != src and not transit[u]:
                continue
            for k in range(self.ptr[u], self.ptr[u + 1]):
                v = int(self.dst[k])
                if v not in dist:
                    dist[v] = dist[u] + 1
                    order.append(v)
                    if v != dst:
                        queue.append(v)
        if dst not in dist:
            raise EngineError(f"no route from device {src} to device {dst}")
        best: dict[int, float] = {src: np.inf}
        pred: dict[int, list[int]] = {}
        for u in order:
            if u not in best or (u != src and not transit[u] and u != dst):
                continue
            if u == dst:
                break
            for k in range(self.ptr[u], self.ptr[u + 1]):
                v = int(self.dst[k])
                if dist.get(v) != dist[u] + 1:
                    continue
                width = min(best[u], float(self.bw[k]))
                if width > best.get(v, -1.0) * (1 + 1e-9):
                    best[v], pred[v] = width, [k]
                elif abs(width - best.get(v, -1.0)) <= 1e-9 * width:
                    pred[v].append(k)
        hops: list[int] = []
        v = dst
        while v != src:
            choices = pred[v]
            k = choices[salt % len(choices)]
            hops.append(int(self.links[k]))
            v = int(self.src[k])
        hops.reverse()
        return hops


class Router:
    """Routes between GPUs of one fabric, caching the intra-node template routes."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        dn, ln = fabric.node_devices, fabric.node_links
        kinds = fabric.dev_kind
        self._node_graph = _Graph(fabric, np.arange(ln, dtype=np.int64), dn)
        node_kinds = kinds[:dn]
        self._node_transit = (node_kinds != DeviceKind.GPU) & (node_kinds != DeviceKind.NIC)
        first_net_link = fabric.nodes * ln
        self._net_graph = _Graph(
            fabric, np.arange(first_net_link, fabric.n_links, dtype=np.int64), fabric.n_devices
        )
        self._net_transit = (kinds == DeviceKind.LEAF) | (kinds == DeviceKind.SPINE)
        self._intra_cache: dict[tuple[int, int], list[int]] = {}
        intra = fabric.spec.intra
        self._staged = intra.fabric == "pcie" and not intra.p2p

    def _intra(self, node: int, a_dev: int, b_dev: int) -> IntArray:
        dn, ln = self.fabric.node_devices, self.fabric.node_links
        key = (a_dev - node * dn, b_dev - node * dn)
        if key not in self._intra_cache:
            self._intra_cache[key] = self._node_graph.route(
                key[0], key[1], self._node_transit, salt=0
            )
        return np.asarray(self._intra_cache[key], dtype=np.int32) + np.int32(node * ln)

    def route(self, src_rank: int, dst_rank: int) -> IntArray:
        """Link ids of the path from one GPU to another, in order.

        Args:
            src_rank: Global rank of the source GPU.
            dst_rank: Global rank of the destination GPU.

        Returns:
            (n_hops,) link ids; empty when source and destination are the same GPU.
        """
        fabric = self.fabric
        g = fabric.gpus_per_node
        for rank in (src_rank, dst_rank):
            if not 0 <= rank < fabric.n_gpus:
                raise EngineError(f"rank {rank} out of range 0..{fabric.n_gpus - 1}")
        a, b = int(fabric.gpu_dev[src_rank]), int(fabric.gpu_dev[dst_rank])
        node_a, node_b = src_rank // g, dst_rank // g
        if src_rank == dst_rank:
            return np.zeros(0, dtype=np.int32)
        if node_a == node_b:
            if self._staged:
                cpu = int(fabric.gpu_cpu[src_rank])
                return np.concatenate([self._intra(node_a, a, cpu), self._intra(node_a, cpu, b)])
            return self._intra(node_a, a, b)
        nic_a, nic_b = int(fabric.gpu_nic[src_rank]), int(fabric.gpu_nic[dst_rank])
        if nic_a < 0 or nic_b < 0:
            raise EngineError(f"{fabric.spec.id}: no network between nodes {node_a} and {node_b}")
        salt = (src_rank * 2654435761 + dst_rank) & 0x7FFFFFFF
        net = self._net_graph.route(nic_a, nic_b, self._net_transit, salt)
        return np.concatenate([
            self._intra(node_a, a, nic_a),
            np.asarray(net, dtype=np.int32),
            self._intra(node_b, nic_b, b),
        ])
