"""What a fabric's devices are (GPU, CPU, switches of each tier) and how their names are
prefixed: shared by the fabric table and the network builders without either importing
the other."""

from __future__ import annotations

from enum import IntEnum


class DeviceKind(IntEnum):
    """What a device is; the value is stored in ``Fabric.dev_kind``."""

    GPU = 0
    CPU = 1
    PCIE_SWITCH = 2
    NVSWITCH = 3
    NIC = 4
    LEAF = 5
    SPINE = 6
    CORE = 7
    ROUTER = 8


#: Short name prefix of each kind, used in device names (``n0.nvsw0``, ``leaf1``).
KIND_PREFIX = {
    DeviceKind.GPU: "g",
    DeviceKind.CPU: "cpu",
    DeviceKind.PCIE_SWITCH: "pcie",
    DeviceKind.NVSWITCH: "nvsw",
    DeviceKind.NIC: "nic",
    DeviceKind.LEAF: "leaf",
    DeviceKind.SPINE: "spine",
    DeviceKind.CORE: "core",
    DeviceKind.ROUTER: "router",
}

#: Network switch kinds (above the NICs).
NETWORK_SWITCHES = (DeviceKind.LEAF, DeviceKind.SPINE, DeviceKind.CORE, DeviceKind.ROUTER)
