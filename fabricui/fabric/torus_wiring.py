"""How a torus is wired from a spec and its link records, and the torus inside a domain.

The link of each axis, the wrap-around a machine has, the dimensions its ports allow (a
network torus and a scale-up domain's alike are held to them), and the domain block of an
``intra.fabric: torus`` (a Trn2 instance's 4x4, a Trn2 UltraServer's 4x4x4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fabricui.errors import EngineError
from fabricui.fabric.fabric import DeviceKind
from fabricui.fabric.host_block import Block, Build, host_copies
from fabricui.fabric.torus import (
    Torus,
    build_torus,
    default_host_block,
    torus_shape,
)
from fabricui.model import LinkGeneration, TopologySpec

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog


def domain_torus_block(host: Block, b: Build) -> tuple[Block, Torus, tuple[tuple[str, str], ...]]:
    """The domain block of an ``intra.fabric: torus``: its hosts, then the chip-to-chip
    links of the torus their chips make (a Trn2 instance's 4x4, a Trn2 UltraServer's
    4x4x4), held to the link records' limits as a network torus is.

    Returns:
        The block, the torus table (chips as local ranks ``0 .. gpus_per_domain - 1``,
        link ids local to the domain block) and the plan lines.
    """
    spec, catalog, gens = b.spec, b.catalog, b.gens
    intra = spec.intra
    gpu = b.gpu
    g, hosts = spec.gpus_per_node, spec.hosts_per_domain
    chips = g * hosts
    link = catalog.links[intra.link or (gpu.scaleup_link or "")]
    named = tuple(catalog.links[a] for a in (intra.axis_links or ()))
    axis_links = named + (link,) * (3 - len(named))
    max_dims = torus_max_dims(link, bool(named))
    block_dims = (
        tuple(int(b) for b in intra.host_block) + (1,) * (3 - len(intra.host_block))
        if intra.host_block is not None
        else default_host_block(g, max_dims)
    )
    shape = intra.torus
    if shape is not None and int(np.prod(shape)) == chips:
        dims = tuple(int(d) for d in shape) + (1,) * (3 - len(shape))
    else:  # fewer hosts than a whole domain: the most cube-like torus of their blocks
        dims = torus_shape(chips, (block_dims[0], block_dims[1], block_dims[2]), max_dims)
    dims3 = (dims[0], dims[1], dims[2])
    check_torus_limits(spec, catalog, dims3, axis_links, link)
    wrap = torus_wraps(link, dims3, max_dims)
    block = host_copies(host, hosts) if hosts > 1 else host
    gpu_local = np.flatnonzero(np.asarray(host.kind) == DeviceKind.GPU)
    chip_devs = (gpu_local[None, :] + (np.arange(hosts) * len(host.kind))[:, None]).reshape(-1)
    rates = tuple(a.bw_GBps for a in axis_links)
    torus_links = build_torus(
        dims3,
        chip_devs.astype(np.int64),
        (rates[0], rates[1], rates[2]),
        g,
        (block_dims[0], block_dims[1], block_dims[2]),
        wrap,
    )
    assert isinstance(torus_links.tree, Torus) and torus_links.axis is not None
    first = len(block.src)
    if block is host:
        block = host_copies(host, 1)
    block.src += torus_links.src.tolist()
    block.dst += torus_links.dst.tolist()
    block.bw += torus_links.bw_GBps.tolist()
    block.lat += [axis_links[int(a)].lat_us for a in torus_links.axis]
    block.gen += [gens(axis_links[int(a)].id) for a in torus_links.axis]
    block.count += [1] * int(torus_links.src.shape[0])
    return block, torus_links.tree.shifted(first), torus_links.plan


def torus_axis_links(spec: TopologySpec, catalog: Catalog) -> tuple[LinkGeneration, ...]:
    """The link generation of each torus dimension (x, y, z): ``net.axis_links``, padded
    with ``net.link``."""
    net = spec.net
    assert net is not None
    if net.axis_links and (net.torus is None or len(net.torus) != len(net.axis_links)):
        raise EngineError(
            f"{spec.id}: net.axis_links names a link for each dimension of net.torus, which "
            f"does not hold {spec.n_gpus} chips (--nodes cannot reshape this torus)"
        )
    named = tuple(catalog.links[a] for a in (net.axis_links or ()))
    return named + (catalog.links[net.link],) * (3 - len(named))


def _ports_per_chip(link: LinkGeneration) -> int | None:
    """Ports of ``link`` one chip has (its record's ``links_per_gpu``), None: not stated."""
    return link.links_per_gpu if link.links_per_gpu else None


def torus_max_dims(link: LinkGeneration, per_axis: bool = False) -> int:
    """Most torus dimensions the chip's ports make: two ports per ring (TPU v6e's 4 ICI
    ports: a 2D torus); 3 when the record states no port count or the spec names a link
    per dimension (``per_axis``)."""
    ports = _ports_per_chip(link)
    if ports is None or per_axis:
        return 3
    return max(1, min(3, ports // 2))


def _limit_source(link: LinkGeneration, field_name: str) -> str:
    return link.sources.get(field_name, link.source)


def check_torus_limits(
    spec: TopologySpec,
    catalog: Catalog,
    dims: tuple[int, int, int],
    axis_links: tuple[LinkGeneration, ...],
    link: LinkGeneration,
) -> None:
    """Refuse a torus the chips cannot make: more chips than the largest slice, sizes
    beyond the largest slice's, or more ring ports per chip than the chip has.

    Raises:
        EngineError: One line naming the limit and its source.
    """
    gpu = catalog.gpus[spec.gpu]
    chips = dims[0] * dims[1] * dims[2]
    shape = "x".join(str(d) for d in dims if d > 1) or "1"
    pod = f"; a pod is {link.pod_chips:,} chips" if link.pod_chips else ""
    if link.torus_max_chips is not None and chips > link.torus_max_chips:
        biggest = "x".join(str(d) for d in link.torus_max) or f"{link.torus_max_chips:,} chips"
        raise EngineError(
            f"{spec.id}: {chips:,} chips exceed the largest {gpu.name} slice, {biggest} "
            f"({link.torus_max_chips:,} chips{pod}; {_limit_source(link, 'torus_max_chips')})"
        )
    needed: dict[str, int] = {}
    for d, size in enumerate(dims):
        if size > 1:
            needed[axis_links[d].id] = needed.get(axis_links[d].id, 0) + (2 if size > 2 else 1)
    for gen, count in needed.items():
        record = catalog.links[gen]
        ports = _ports_per_chip(record)
        if ports is not None and count > ports:
            raise EngineError(
                f"{spec.id}: a {shape} torus needs {count} {gen} ports per chip, a "
                f"{gpu.name} has {ports} (a {ports // 2}D torus at most; "
                f"{_limit_source(record, 'links_per_gpu')})"
            )
    if link.torus_max:
        used = sorted(d for d in dims if d > 1)
        most = sorted(link.torus_max)
        fits = len(used) <= len(most) and all(
            a <= b for a, b in zip(reversed(used), reversed(most))
        )
        if not fits:
            biggest = "x".join(str(d) for d in link.torus_max)
            raise EngineError(
                f"{spec.id}: a {shape} torus does not fit the largest {gpu.name} slice, "
                f"{biggest} ({_limit_source(link, 'torus_max')})"
            )


def torus_wraps(
    link: LinkGeneration, dims: tuple[int, int, int], max_dims: int
) -> tuple[bool, bool, bool]:
    """Which rings wrap around: all of them, unless the link's record allows wrap-around
    only in slices of whole blocks (``torus_wrap``): then all rings when the slice spans
    every torus dimension of the chip in whole blocks, none otherwise (a mesh)."""
    block = link.torus_wrap
    if block is None:
        return (True, True, True)
    active = [d for d in dims if d > 1]
    whole = len(active) >= max_dims and all(d % block == 0 for d in active)
    return (whole, whole, whole)
