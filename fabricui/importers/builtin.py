"""The built-in importers by format name (registered by the ``fabricui_importers`` plugin)."""

from __future__ import annotations

from typing import Any, Callable

#: Built-in format names, in the order help texts list them.
BUILTIN_FORMATS = (
    "nvidia-smi",
    "nccl-xml",
    "ibstat",
    "rocm-smi",
    "ibnetdiscover",
    "iblinkinfo",
    "slurm-topology",
    "nvidia-smi-q",
    "perfquery",
    "ibqueryerrors",
    "ibdiagnet",
    "ibswinfo",
    "mlxlink",
    "nvlink",
    "dcgmi-diag",
    "fabric-manager",
    "rdma-link",
    "show-gids",
    "ethtool",
    "sinfo",
    "scontrol-node",
    "squeue",
    "scontrol-job",
    "sacct",
)


def builtin_importers() -> dict[str, Callable[[str], Any]]:
    """Format name -> ``parse(text)`` for every built-in importer.

    Returns:
        ``nvidia-smi`` (``topo -m``), ``nccl-xml``, ``ibstat`` (also reads ibv_devinfo and
        ibdev2netdev), ``rocm-smi``; the cluster importers ``ibnetdiscover`` (plain, -g, -p),
        ``iblinkinfo``, ``slurm-topology`` (topology.conf, scontrol show topology,
        topology.yaml) and ``nvidia-smi-q`` (the NVLink fabric of ``nvidia-smi -q``); the
        state and counter formats (``perfquery``, ``ibqueryerrors``, ``ibdiagnet``,
        ``ibswinfo``, ``mlxlink``, ``nvlink`` for ``nvidia-smi nvlink`` and ``dcgmi nvlink``,
        ``dcgmi-diag``, ``fabric-manager``, ``rdma-link``, ``show-gids``, ``ethtool``) and
        Slurm's node and job state (``sinfo``, ``scontrol-node``, ``squeue``,
        ``scontrol-job``, ``sacct``).
    """
    from fabricui.importers import (
        dcgmi_diag,
        ethtool_stats,
        fabric_manager,
        ibdiagnet,
        iblinkinfo,
        ibnetdiscover,
        ibqueryerrors,
        ibstat,
        ibswinfo,
        mlxlink,
        nccl_xml,
        nvidia_smi,
        nvidia_smi_q,
        nvlink_state,
        perfquery,
        rdma_link,
        rocm_smi,
        show_gids,
        slurm_jobs,
        slurm_nodes,
        slurm_topology,
    )

    return {
        "nvidia-smi": nvidia_smi.parse,
        "nccl-xml": nccl_xml.parse,
        "ibstat": ibstat.parse,
        "rocm-smi": rocm_smi.parse,
        "ibnetdiscover": ibnetdiscover.parse,
        "iblinkinfo": iblinkinfo.parse,
        "slurm-topology": slurm_topology.parse,
        "nvidia-smi-q": nvidia_smi_q.parse,
        "perfquery": perfquery.parse,
        "ibqueryerrors": ibqueryerrors.parse,
        "ibdiagnet": ibdiagnet.parse,
        "ibswinfo": ibswinfo.parse,
        "mlxlink": mlxlink.parse,
        "nvlink": nvlink_state.parse,
        "dcgmi-diag": dcgmi_diag.parse,
        "fabric-manager": fabric_manager.parse,
        "rdma-link": rdma_link.parse,
        "show-gids": show_gids.parse,
        "ethtool": ethtool_stats.parse,
        "sinfo": slurm_nodes.parse,
        "scontrol-node": slurm_nodes.parse,
        "squeue": slurm_jobs.parse,
        "scontrol-job": slurm_jobs.parse,
        "sacct": slurm_jobs.parse,
    }
