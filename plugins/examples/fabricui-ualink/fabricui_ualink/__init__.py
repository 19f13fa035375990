"""fabricui plugin: UALink 200G 1.0 scale-up links and switched pods of up to 1,024 accelerators.

UALink (Ultra Accelerator Link) is the open, memory-semantic (load/store) scale-up
interconnect whose 200G 1.0 specification was ratified in April 2025. This plugin adds:

- the UALink 1.0 port generations ``ualink200-x1``, ``-x2`` and ``-x4`` (200 Gb/s lanes,
  25/50/100 GB/s per direction; figures and references in ``fabricui_ualink.links``);
- the ``ualink`` interconnect;
- the ``ualink-pod`` topology builder (``fabricui_ualink.pod``): accelerators on a single
  stage of UALink switch planes, at most 1,024 per pod;
- an hwdb directory with a reference UALink switch and the ``ualink-pod`` topology::

    fabricui path --topology ualink-pod --src n0.g0 --dst n0.g127
    fabricui collective all_reduce --topology ualink-pod --size 1G
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from fabricui.api import Interconnect, LinkGeneration, TopologyBuilder, hookimpl
from fabricui_ualink.links import FAMILY, LINKS

if TYPE_CHECKING:
    from fabricui.api import Catalog, Fabric, TopologySpec

__version__ = "0.1.0"

#: This plugin's hwdb directory: the reference switch and the ``ualink-pod`` topology.
HWDB = Path(__file__).resolve().parent / "hwdb"

UALINK = Interconnect(
    name="ualink",
    families=(FAMILY,),
    description="UALink 200G 1.0: open load/store scale-up links and switches",
)


def _build_pod(spec: TopologySpec, catalog: Catalog) -> Fabric:
    from fabricui_ualink.pod import build_pod  # the fabric builder loads only when used

    return build_pod(spec, catalog)


POD_BUILDER = TopologyBuilder(
    name="ualink-pod",
    build=_build_pod,
    description="UALink 1.0 pod: accelerators on a single stage of switch planes (<= 1,024)",
)


@hookimpl
def register_link_generations(register: Callable[[LinkGeneration], None]) -> None:
    """Register the UALink 1.0 x1, x2 and x4 port generations.

    Args:
        register: The host's callback.
    """
    for link in LINKS:
        register(link)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ualink interconnect.

    Args:
        register: The host's callback.
    """
    register(UALINK)


@hookimpl
def register_topology_builders(register: Callable[[TopologyBuilder], None]) -> None:
    """Register the ``ualink-pod`` builder.

    Args:
        register: The host's callback.
    """
    register(POD_BUILDER)


@hookimpl
def register_hwdb_paths(register: Callable[[Path], None]) -> None:
    """Register the plugin's hwdb directory (switch record, ``ualink-pod`` topology).

    Args:
        register: The host's callback.
    """
    register(HWDB)
