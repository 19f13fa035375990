"""The explorer's choices beyond the shared vocabulary (``fabricui.vocabulary``): the four
regimes its topology picker tags. Every figure a view shows comes from the service layer
(``fabricui.services.loaded``), which holds no Textual and no cost logic either.
"""

from __future__ import annotations

#: Four regimes of GPU fabrics and the reference topology that stands for each (tagged in
#: the topology picker).
REGIMES = (
    ("consumer PCIe box", "pcie-rtx4090x2"),
    ("HGX node", "hgx-h200"),
    ("NVL72 rack", "gb200-nvl72"),
    ("multi-node cluster", "h100-ib-cluster"),
)

__all__ = ["REGIMES"]
