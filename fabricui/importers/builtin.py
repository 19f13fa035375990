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
)


def builtin_importers() -> dict[str, Callable[[str], Any]]:
    """Format name -> ``parse(text)`` for every built-in importer.

    Returns:
        ``nvidia-smi`` (``topo -m``), ``nccl-xml``, ``ibstat`` (also reads ibv_devinfo and
        ibdev2netdev), ``rocm-smi``; the cluster importers ``ibnetdiscover`` (plain, -g, -p),
        ``iblinkinfo``, ``slurm-topology`` (topology.conf, scontrol show topology,
        topology.yaml) and ``nvidia-smi-q`` (the NVLink fabric of ``nvidia-smi -q``).
    """
    from fabricui.importers import (
        iblinkinfo,
        ibnetdiscover,
        ibstat,
        nccl_xml,
        nvidia_smi,
        nvidia_smi_q,
        rocm_smi,
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
    }
