"""Slingshot's libfabric provider (CXI): the copies a receive pays under software matching.

NCCL reaches a Slingshot network through the aws-ofi-nccl plugin on libfabric's CXI
provider. By default the NIC matches each message to its posted receive and writes it
straight into GPU memory. With ``FI_CXI_RX_MATCH_MODE=software`` the provider matches in
software: a message lands in a host buffer and the provider copies it into GPU memory,
with gdrcopy (CPU stores through a GPU mapping, part of the baseline here) up to
``FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD`` bytes and with a CUDA copy above it or when gdrcopy
is off (``FI_HMEM_CUDA_USE_GDRCOPY=0``): ofiwg/libfabric at af8ddbe9,
``prov/cxi/include/cxip.h`` (``size <= cxip_env.safe_devmem_copy_threshold`` picks the
device-register copy; threshold 4,096 bytes, ``CXIP_SAFE_DEVMEM_COPY_THRESH``; matching in
hardware by default, ``CXIP_PTLTE_DEFAULT_MODE``) and ``src/hmem_cuda.c`` (gdrcopy on by
default). What one copy costs: ``ModelConstants.cxi_cuda_copy_us``.

Only NCCL's LL protocol is priced: the sizes whose copies the A/B runs behind that constant
show run LL; Simple and LL128 sizes are bound by bandwidth (with gdrcopy off their
messages pay too, which is not modelled).

Whatever the matching mode, the provider sends a message of up to ``CXIP_INJECT_SIZE``
bytes (``C_MAX_IDC_PAYLOAD_UNR``, 192 B in Cassini's ``cassini_user_defs.h``) as an
immediate data command, the payload written into the command itself
(``cxip_send_eager_idc``, ``prov/cxi/src/cxip_msg.c``; ``_cxip_send_req`` in
``cxip_msg_hpc.c``), where a larger one is a DMA command after which the NIC reads the
payload from memory. NCCL's InfiniBand transport, on which the network step costs were
measured, never inlines data (``NCCL_IB_USE_INLINE`` covers only its control messages,
src/transport/net_ib.cc), so every one of its sends waits for that read: an LL message of
up to 192 B on the wire (96 B of data) saves ``ModelConstants.cxi_idc_saving_us`` per
network step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.constants import DEFAULT, ModelConstants
from fabricui.engine.nccl.tuner import ll_channels
from fabricui.engine.types import FloatArray
from fabricui.errors import EngineError

if TYPE_CHECKING:
    from fabricui.engine.group import Group

#: ``CXIP_SAFE_DEVMEM_COPY_THRESH``: the largest receive gdrcopy copies [bytes].
SAFE_DEVMEM_COPY_THRESHOLD_BYTES = 4096
#: ``CXIP_INJECT_SIZE`` = ``C_MAX_IDC_PAYLOAD_UNR``: the largest send issued as an immediate
#: data command [bytes].
IDC_MAX_BYTES = 192
#: Link families whose NICs NCCL drives through libfabric's CXI provider.
CXI_FAMILIES = ("slingshot",)


@dataclass(frozen=True)
class CxiSettings:
    """The CXI provider settings of a run that change what a receive costs."""

    software_matching: bool = False
    """``FI_CXI_RX_MATCH_MODE=software`` (default ``hardware``; ``hybrid`` matches in
    hardware until the NIC's resources run out and is taken as hardware)."""
    copy_threshold_bytes: int = SAFE_DEVMEM_COPY_THRESHOLD_BYTES
    """``FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD``: receives up to this size copy by gdrcopy."""
    gdrcopy: bool = True
    """``FI_HMEM_CUDA_USE_GDRCOPY`` (0 turns gdrcopy off: every receive is a CUDA copy)."""
    idc: bool = True
    """Small sends go as immediate data commands (``FI_CXI_DISABLE_NON_INJECT_MSG_IDC=1``
    sends every message by DMA)."""


def read_cxi(env: Mapping[str, object] | None) -> CxiSettings:
    """The CXI settings among a run's environment (other variables are ignored).

    Raises:
        EngineError: A size or switch that is not an integer.
    """
    given = {str(k): str(v).strip() for k, v in (env or {}).items()}
    mode = given.get("FI_CXI_RX_MATCH_MODE", "hardware").lower()
    return CxiSettings(
        software_matching=mode == "software",
        copy_threshold_bytes=_integer(
            given, "FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD", SAFE_DEVMEM_COPY_THRESHOLD_BYTES
        ),
        gdrcopy=_integer(given, "FI_HMEM_CUDA_USE_GDRCOPY", 1) != 0,
        idc=_integer(given, "FI_CXI_DISABLE_NON_INJECT_MSG_IDC", 0) == 0,
    )


def _integer(given: Mapping[str, str], name: str, default: int) -> int:
    value = given.get(name, "")
    if value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise EngineError(f"{name}={value!r} is not an integer") from None


def uses_cxi(group: Group) -> bool:
    """True when the group crosses nodes over a network driven by the CXI provider."""
    return group.n_nodes > 1 and group.fabric.net_family in CXI_FAMILIES


def software_matching(group: Group) -> CxiSettings | None:
    """The group's CXI settings when its receives go through host buffers (a CXI network
    with software matching), else None."""
    if not uses_cxi(group):
        return None
    settings = read_cxi(group.nccl_env)
    return settings if settings.software_matching else None


def ll_receive_bytes(sizes: FloatArray, channels: int, chunks: int) -> FloatArray:
    """(n_sizes,) bytes one LL network receive carries: the channel's share of one chunk
    (``chunks`` = the ranks for a ring, 1 for a tree), at most one LL step, doubled by LL's
    flags.

    Notes:
        ``2 * min(S / (chunks * nc), 16 KiB)``, ``nc = clip(floor(S / (512 * 8 * r)), 1,
        channels)`` with ``r`` = ``chunks`` (NCCL scales a ring's LL threshold by its ranks).
    """
    size = np.asarray(sizes, dtype=np.float64)
    nc = ll_channels(size, channels, chunks)
    step = float(DEFAULT.chunk_bytes["ll"])  # a larger message goes as several LL steps
    return 2.0 * np.minimum(size / (max(1, chunks) * nc), step)


def tree_receive_copies(n_nodes: int) -> float:
    """Receives in a row on the slowest path of NCCL's binary trees across ``n_nodes``.

    Going up, every level below the root receives from its two children one after the
    other, the root from its one child; coming down, each level receives once:
    ``(2d - 1) + d`` with ``d = ceil(log2 nodes)``.
    """
    if n_nodes < 2:
        return 0.0
    depth = math.ceil(math.log2(n_nodes))
    return float(3 * depth - 1)


def receive_copy_us(
    settings: CxiSettings,
    receive_bytes: FloatArray,
    copies: float,
    constants: ModelConstants = DEFAULT,
) -> FloatArray:
    """(n_sizes,) time the CXI provider's CUDA copies add to a call on LL [us].

    Args:
        settings: The run's CXI settings, software matching on (``software_matching``).
        receive_bytes: (n_sizes,) bytes of one network receive (``ll_receive_bytes``).
        copies: Receives one after another on the call's slowest path.
        constants: Model constants (``cxi_cuda_copy_us``).

    Notes:
        ``copies * cxi_cuda_copy_us`` where the receive is above the gdrcopy threshold (or
        gdrcopy is off), else 0.
    """
    received = np.asarray(receive_bytes, dtype=np.float64)
    cuda = received > settings.copy_threshold_bytes
    if not settings.gdrcopy:
        cuda = np.ones(received.shape, dtype=bool)
    return np.where(cuda, max(0.0, copies) * constants.cxi_cuda_copy_us, 0.0)


def idc_saving_us(
    group: Group,
    send_bytes: FloatArray,
    sends: float,
    constants: ModelConstants = DEFAULT,
) -> FloatArray:
    """(n_sizes,) time a call on LL saves by sending its small messages as immediate data
    commands on a CXI network [us] (0 elsewhere).

    Args:
        group: The group.
        send_bytes: (n_sizes,) bytes of one network message on LL (``ll_receive_bytes``).
        sends: Network sends one after another on the call's slowest path.
        constants: Model constants (``cxi_idc_saving_us``).

    Notes:
        ``sends * cxi_idc_saving_us`` where ``send_bytes <= 192`` on a CXI network with
        immediate data commands on, else 0.
    """
    sent = np.asarray(send_bytes, dtype=np.float64)
    if not uses_cxi(group) or not read_cxi(group.nccl_env).idc:
        return np.zeros(sent.shape)
    return np.where(sent <= IDC_MAX_BYTES, max(0.0, sends) * constants.cxi_idc_saving_us, 0.0)
