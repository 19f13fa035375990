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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricui.engine.group import Group

#: Network families NCCL drives through its NET/Socket transport (the ``tcp`` link).
SOCKET_FAMILIES = ("ethernet",)


def uses_net_socket(group: Group) -> bool:
    """The group crosses nodes over NCCL's NET/Socket transport."""
    return group.n_nodes > 1 and group.fabric.net_family in SOCKET_FAMILIES


def sends_wait_for_receives(group: Group) -> bool:
    """A network send waits for the receiver's posted buffer (NCCL's RDMA transports and
    the plugins priced like them), so a Simple pipeline fills over ``NCCL_STEPS`` network
    steps; False over NET/Socket, whose sends go into the TCP stream at once."""
    return not uses_net_socket(group)
