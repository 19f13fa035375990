"""nccl-tests ``all_reduce_perf`` outputs written from the model itself, with link figures of
our choosing: the fit must find those figures again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fabricui.engine.calibration import with_link_params
from fabricui.engine.evaluate import evaluate_collective
from fabricui.hwdb.resolve import resolve_topology
from fabricui.services.session import (
    build_fabric_with_plugins,
    collective_algorithms,
    load_catalog_with_plugins,
)

H100 = "NVIDIA H100 80GB HBM3"


def model_times_us(
    topology: str,
    nodes: int,
    figures: Mapping[str, Mapping[str, float]],
    sizes_bytes: npt.ArrayLike,
    algo: str = "auto",
    ranks: npt.ArrayLike | None = None,
) -> npt.NDArray[np.float64]:
    """all_reduce times the model predicts on ``nodes`` nodes of ``topology`` whose link
    generations take ``figures`` ({generation: {efficiency, lat_us}}), with the algorithms
    calibrate prices a run with [us]."""
    catalog = load_catalog_with_plugins()
    fabric = build_fabric_with_plugins(resolve_topology(topology, catalog, nodes), catalog)
    trial = with_link_params(fabric, figures)
    env = {"NCCL_ALGO": algo.upper()} if algo != "auto" else {}
    prediction = evaluate_collective(
        trial,
        "all_reduce",
        np.asarray(sizes_bytes, dtype=np.float64),
        ranks=ranks,
        algorithms=collective_algorithms(env),
        algo=algo,
    )
    return np.asarray(prediction.time_us, dtype=np.float64)


def all_reduce_output(
    sizes_bytes: Sequence[float],
    times_us: Sequence[float],
    placement: Sequence[tuple[str, int]],
    algo: str = "auto",
    gpu: str = H100,
) -> str:
    """The stdout of ``all_reduce_perf`` as nccl-tests prints it: a rank line per
    ``(host, device)`` of ``placement`` (in rank order), the ``NCCL_ALGO`` line NCCL_DEBUG=INFO
    prints when ``algo`` is forced, and a row per size (out-of-place and in-place figures)."""
    nranks = len(placement)
    lines = [
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank, (host, device) in enumerate(placement):
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {4100 + rank:6d} on {host:>10} device {device:2d} "
            f"[0x{0x18 + device:02x}] {gpu}"
        )
    if algo != "auto":
        setting = f"NCCL INFO NCCL_ALGO set by environment to {algo.upper()}"
        lines.append(f"{placement[0][0]}:4100:4100 [0] {setting}")
    lines += [
        "#",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
    ]
    for size, time in zip(sizes_bytes, times_us):
        algbw = size / time / 1e3
        busbw = algbw * 2 * (nranks - 1) / nranks
        figures = f"{time:9.2f} {algbw:7.2f} {busbw:7.2f}      0"
        lines.append(
            f"{int(size):12d} {int(size) // 4:13d}     float     sum      -1 {figures} {figures}"
        )
    lines.append("# Out of bounds values : 0 OK")
    return "\n".join(lines) + "\n"


def hosts_in_blocks(hosts: Sequence[str], per_host: int) -> list[tuple[str, int]]:
    """Ranks 0 .. per_host-1 on the first host (devices 0, 1 ...), then the next host."""
    return [(host, device) for host in hosts for device in range(per_host)]


def refused(result: tuple[int, str, str]) -> str:
    """The one-line error of a refused ``calibrate`` run (status 2, nothing on stdout)."""
    status, out, err = result
    assert status == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1, err
    return err
