"""The doctor on the fabric as it is: which ranks and hosts of a job the health files'
down and degraded links touch.

A job's ring runs rank ``i`` to rank ``i + 1`` (the order NCCL builds its rings in when it
has no better one, and the order of a job's hostlist); each of those flows is routed on the
overlaid fabric, and every flow that crosses a link the overlay slowed names its ranks and
hosts. A ring's bandwidth term is set by its slowest link, so one degraded cable slows the
whole collective by what that link lost. Hosts that lost a NIC cable are named with the
NIC their GPUs fall back to; a host that lost every NIC cable is cut off from the network,
and the ring's flows to and from it (which cannot run) are named, not routed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.bulk import BulkRouter
from fabricui.fabric.fabric import DeviceKind
from fabricui.fabric.health import health_of

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric

#: Codes the doctor adds on the fabric as it is.
JOB_HEALTH_CODES = {
    "ring-crosses-degraded-link": "a job's ring crosses a link the health files show degraded",
    "ring-crosses-lost-nvlinks": "a job's ring crosses a GPU with inactive NVLinks",
    "host-lost-a-nic-cable": (
        "a job's host has a NIC whose cable is down; its GPUs share another (none left: the "
        "host is cut off from the network)"
    ),
}
#: Ranks named in one finding before "... and N more".
_SHOWN = 8


@dataclass(frozen=True)
class JobHealthFinding:
    """One way a job meets the fabric's damage."""

    code: str
    """One of ``JOB_HEALTH_CODES``."""
    severity: str
    """``warning`` (a slowdown) or ``info``."""
    where: str
    """The link or host."""
    message: str
    """What it does to the job: its ranks, hosts and the bandwidth left."""
    fix: str
    """What to do."""
    ranks: tuple[int, ...]
    """Job ranks whose ring flow crosses it (global ranks when no job was placed)."""
    hosts: tuple[str, ...]
    """Their hosts."""

    def to_json(self) -> dict[str, Any]:
        """Every field."""
        return {
            "code": self.code,
            "severity": self.severity,
            "where": self.where,
            "message": self.message,
            "fix": self.fix,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
        }


def _ranks_text(ranks: list[int], names: list[str]) -> str:
    shown = ", ".join(f"{r} ({n})" for r, n in zip(ranks[:_SHOWN], names[:_SHOWN]))
    more = f" and {len(ranks) - _SHOWN} more" if len(ranks) > _SHOWN else ""
    return shown + more


def job_health(
    fabric: Fabric, ranks: npt.NDArray[np.int64], host_names: list[str] | None = None
) -> list[JobHealthFinding]:
    """The findings for a job's ring on an overlaid fabric (empty on the fabric as designed).

    Args:
        fabric: The fabric as it is (``--health``).
        ranks: (n,) global ranks in job order.
        host_names: Name of every host (fabric node), when the cluster names them.

    Returns:
        One finding per slowed link the ring crosses, per host that lost a NIC cable.
    """
    overlay = health_of(fabric)
    if overlay is None or len(ranks) < 2:
        return []
    g = fabric.gpus_per_node
    ranks = np.asarray(ranks, dtype=np.int64)

    def host(rank: int) -> str:
        node = rank // g
        if host_names and node < len(host_names) and host_names[node]:
            return host_names[node]
        return f"n{node}"

    src, dst = ranks, np.roll(ranks, -1)
    # Flows that leave or reach a host cut off from the network have no route: they are
    # said once for the host below, and the rest of the ring is routed.
    cut = np.isin(src // g, overlay.cut_off) | np.isin(dst // g, overlay.cut_off)
    cut &= src // g != dst // g
    paths = np.full((len(src), 1), -1, dtype=np.int64)
    if (~cut).any():
        routed = BulkRouter(fabric).paths(src[~cut], dst[~cut])
        paths = np.full((len(src), routed.shape[1]), -1, dtype=routed.dtype)
        paths[~cut] = routed
    out: list[JobHealthFinding] = []
    slowed = [c for c in overlay.changes if c.kind in ("degraded", "down") and c.factor > 0.0]
    for change in slowed:
        a, b = change.devices
        if b == -1:
            links = np.flatnonzero((fabric.link_src == a) | (fabric.link_dst == a))
            links = links[
                np.isin(
                    fabric.dev_kind[fabric.link_src[links]], (DeviceKind.NVSWITCH, DeviceKind.GPU)
                )
                | np.isin(
                    fabric.dev_kind[fabric.link_dst[links]], (DeviceKind.NVSWITCH, DeviceKind.GPU)
                )
            ]
            code = "ring-crosses-lost-nvlinks"
        else:
            links = np.flatnonzero(
                ((fabric.link_src == a) & (fabric.link_dst == b))
                | ((fabric.link_src == b) & (fabric.link_dst == a))
            )
            code = "ring-crosses-degraded-link"
        hit = np.flatnonzero(np.isin(paths, links).any(axis=1))
        if not hit.size:
            continue
        job_ranks = [int(i) for i in hit]
        names = [fabric.gpu_name(int(src[i])) for i in hit]
        hosts = tuple(dict.fromkeys(host(int(src[i])) for i in hit))
        out.append(
            JobHealthFinding(
                code,
                "warning",
                change.label,
                f"the ring's flows from rank(s) {_ranks_text(job_ranks, names)} on host(s) "
                f"{', '.join(hosts[:_SHOWN])} cross {change.label}, which keeps "
                f"{change.factor:.0%} of its bandwidth: the ring's bandwidth term is set by it",
                "leave the host(s) out of the job (`fabricui place N --health FILE` picks around "
                f"them) or fix the link ({change.source})",
                tuple(job_ranks),
                hosts,
            )
        )
    lost = [
        c for c in overlay.changes if c.kind == "down" and c.factor == 0.0 and c.devices[1] != -1
    ]
    on_job = {int(r) // g for r in ranks}
    for node in overlay.cut_off:
        if node not in on_job:
            continue
        mine = [int(r) for r in ranks if int(r) // g == node]
        flows = np.flatnonzero(cut & ((src // g == node) | (dst // g == node)))
        out.append(
            JobHealthFinding(
                "host-lost-a-nic-cable",
                "error",
                host(mine[0]),
                f"host {host(mine[0])} lost every NIC cable: it is cut off from the network, "
                f"its GPUs reach only their own node, and the ring's {len(flows)} flow(s) to "
                "and from it cannot run",
                "fix a cable or leave the host out (`fabricui place N --health FILE` picks "
                "around it)",
                tuple(int(i) for i in np.flatnonzero(np.isin(ranks, mine))),
                (host(mine[0]),),
            )
        )
    for change in lost:
        nic = change.devices[0]
        if fabric.dev_kind[nic] != DeviceKind.NIC:
            continue
        node = int(fabric.dev_node[nic])
        if node not in on_job or node in overlay.cut_off:  # said once for the host above
            continue
        mine = [int(r) for r in ranks if int(r) // g == node]
        nics = sorted({fabric.device_name(int(fabric.gpu_nic[r])) for r in mine})
        out.append(
            JobHealthFinding(
                "host-lost-a-nic-cable",
                "warning",
                change.label,
                f"host {host(mine[0])} lost {change.label}: its GPUs send through "
                f"{', '.join(nics)}, which now carry more than their share",
                f"fix the cable or leave the host out ({change.source})",
                tuple(int(i) for i in np.flatnonzero(np.isin(ranks, mine))),
                (host(mine[0]),),
            )
        )
    return out
