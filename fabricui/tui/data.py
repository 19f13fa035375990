"""The explorer's choices (operations, groups, strategies, regimes) and the loaded fabric
it shows, importable without Textual: every figure a view shows comes from the service
layer (``fabricui.services.loaded``), which holds no Textual and no cost logic either.
"""

from __future__ import annotations

from fabricui.services.loaded import DP_STRATEGIES, LayoutChoice, LoadedFabric, Tier
from fabricui.services.requests import WhatIf

#: Groups the collectives view offers (``node`` is accepted as host's old name).
GROUPS = ("all", "host", "domain", "per-node")

#: Collective operations the collectives view offers (nccl-tests names).
OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "send_recv",
)
#: Model the strategies view opens on.
DEFAULT_MODEL = "llama3-70b"
#: Four regimes of GPU fabrics and the reference topology that stands for each (tagged in
#: the topology picker).
REGIMES = (
    ("consumer PCIe box", "pcie-rtx4090x2"),
    ("HGX node", "hgx-h200"),
    ("NVL72 rack", "gb200-nvl72"),
    ("multi-node cluster", "h100-ib-cluster"),
)


#: The loaded fabric as the views call it.
FabricData = LoadedFabric

__all__ = [
    "DEFAULT_MODEL",
    "DP_STRATEGIES",
    "GROUPS",
    "OPS",
    "REGIMES",
    "FabricData",
    "LayoutChoice",
    "LoadedFabric",
    "Tier",
    "WhatIf",
]
