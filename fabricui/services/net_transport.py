"""What a prediction says when the NCCL environment moves an InfiniBand or RoCE network
onto NCCL's NET/Socket transport (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``;
``fabricui.engine.net_socket``)."""

from __future__ import annotations

from collections.abc import Mapping

from fabricui.engine.constants import DEFAULT
from fabricui.engine.nccl.env import read_env, socket_setting
from fabricui.errors import FabricError

#: The IP interface NCCL's sockets use on each network family that has an IB transport.
INTERFACES = {"infiniband": "IPoIB", "roce": "the Ethernet port"}


def net_socket_setting(net_family: str | None, domains: int, env: Mapping[str, str]) -> str | None:
    """The setting that puts NCCL on NET/Socket across ``domains`` scale-up domains (nodes),
    None when NCCL keeps its IB transport, stays on one node, or the environment is bad
    (the prediction reports that)."""
    if domains < 2:
        return None
    try:
        return socket_setting(read_env(env), net_family)
    except FabricError:
        return None


def net_socket_note(net_family: str | None, domains: int, env: Mapping[str, str]) -> str | None:
    """One line saying that NCCL runs over sockets because of the environment, and how the
    prediction prices it; None when it does not."""
    setting = net_socket_setting(net_family, domains, env)
    if setting is None:
        return None
    interface = INTERFACES.get(net_family or "", "the IP interface")
    if setting.upper().startswith("NCCL_NET="):
        why = f"{setting} puts NCCL on"
    else:
        why = f"{setting} turns off NCCL's IB transport, so NCCL runs over"
    return (
        f"{why} its NET/Socket transport (TCP over {interface}), not RDMA: priced at most "
        f"{DEFAULT.socket_max_GBps:g} GB/s per NIC, without GPUDirect RDMA or CollNet/SHARP"
    )
