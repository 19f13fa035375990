"""NCCL's built-in NET/Socket transport (TCP over plain Ethernet): where its structure
changes what a call costs.

A send over NCCL's InfiniBand and RoCE transport waits for its receive: ``ncclIbIsend``
returns no request until the receiver's ``irecv`` has written the address of its buffer
into the sender's FIFO ("Wait for the receiver to have posted the corresponding receive",
NVIDIA/nccl v2.27.3-1 ``src/transport/net_ib.cc``), so a Simple connection reaches its
rate only once all ``NCCL_STEPS`` slots are posted ahead (``algorithms.network_fill_us``).
A send over NET/Socket does not: ``ncclNetSocketIsend`` always returns a request, and
``ncclNetSocketTest`` writes the size, then the data, into the TCP stream whether or not
the receiver has posted (the receiver reads the size from the stream before its data), so
the kernel's socket buffers stand between the two sides and a Simple step costs its own
latency only (v2.27.3-1 ``src/transport/net_socket.cc``; the same in v2.4.8-1, v2.12.7-1,
v2.18.1-1 and v2.30.7-1).

NCCL takes the first network that starts among an external plugin (``NCCL_NET_PLUGIN``, by
default ``libnccl-net.so`` when installed), its IB transport (InfiniBand and RoCE), then
NET/Socket, skipping those whose name is not ``NCCL_NET`` when that is set (``ncclNetInit``:
src/net.cc at v2.18.1-1, src/plugin/net.cc from v2.19; the same order in v2.30.7-1). So on
an InfiniBand or RoCE network ``NCCL_IB_DISABLE=1`` (``ncclIbInit`` refuses to start) or
``NCCL_NET=Socket`` puts NCCL on NET/Socket, over the IP interfaces ``NCCL_SOCKET_IFNAME``
names, else the ``ib*`` ones first (IPoIB; ``ncclFindInterfaces``, src/misc/socket.cc), else
the Ethernet port. Its buffers are host memory (``ptrSupport = NCCL_PTR_HOST``: no
GPUDirect RDMA) and it has no CollNet, so no CollNet/SHARP and no NVLS across nodes (NCCL's
own transports bring no ``ncclCollNet``; only a plugin does). ``NCCL_NET=IB`` with
``NCCL_IB_DISABLE=1`` leaves no network: NCCL fails ("Failed to initialize any NET plugin").
The rule is ``fabricui.engine.nccl.env.socket_setting``; the NICs it drives so are priced
on ``fabricui.engine.socket_fabric``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricui.engine.group import Group

#: Network families NCCL drives through its NET/Socket transport (the ``tcp`` link).
SOCKET_FAMILIES = ("ethernet",)


def uses_net_socket(group: Group) -> bool:
    """The group crosses nodes over NCCL's NET/Socket transport: a TCP network, or an
    InfiniBand or RoCE network whose IB transport the NCCL environment turns off
    (``Group.net_socket_setting``)."""
    if group.n_nodes < 2:
        return False
    return group.fabric.net_family in SOCKET_FAMILIES or group.net_socket_setting is not None


def sends_wait_for_receives(group: Group) -> bool:
    """A network send waits for the receiver's posted buffer (NCCL's RDMA transports and
    the plugins priced like them), so a Simple pipeline fills over ``NCCL_STEPS`` network
    steps; False over NET/Socket, whose sends go into the TCP stream at once."""
    return not uses_net_socket(group)
