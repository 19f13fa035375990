"""The NCCL environment variables that change what NCCL picks, read as NCCL reads them.

``NCCL_ALGO`` and ``NCCL_PROTO`` are lists: names separated by commas, ``^`` in front
excludes them instead, and from 2.24 a ``function:`` prefix scopes a list to one collective
(``NCCL_PROTO="^LL128;allreduce:LL128"``); names are case-insensitive. Before 2.24 an
unknown name is ignored, from 2.24 NCCL refuses it (src/graph/tuning.cc ``parseList`` at
v2.23.4-1 and v2.24.3-1). Channel bounds, NVLS, CollNet, cross-NIC and QP settings are
integers (src/graph/connect.cc, src/transport/nvls.cc, src/graph/search.cc,
src/transport/net_ib.cc). ``NCCL_IB_DISABLE`` and ``NCCL_NET`` choose the network transport
(``fabricui.engine.net_socket``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fabricui.engine.nccl.releases import (
    ALGORITHM_ENV_NAMES,
    ALGORITHMS,
    PROTOCOL_ENV_NAMES,
    Release,
)
from fabricui.errors import EngineError
from fabricui.vocabulary import PROTOCOLS

#: Collectives as NCCL's per-function prefixes name them (``ncclFuncStr``).
FUNCTION_NAMES = {
    "broadcast": "broadcast",
    "reduce": "reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "allreduce": "all_reduce",
}
#: The variables this model reads and checks (everything else a run sets is kept but not
#: used); see ``NcclEnv`` for the two that change no price.
HONOURED = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",
    "NCCL_NVLS_NCHANNELS",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
    "NCCL_CROSS_NIC",
    "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_PAT_ENABLE",
    "NCCL_NET_OVERHEAD",
    "NCCL_LL128_C2C",
    "NCCL_P2P_LL_THRESHOLD",
    "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
    "OFI_NCCL_NET_LATENCY",
    "NCCL_IB_DISABLE",
    "NCCL_NET",
)
#: ``NCCL_P2P_LL_THRESHOLD``'s default [bytes] (src/enqueue.cc).
DEFAULT_P2P_LL_THRESHOLD = 16384
#: Network families NCCL drives through its built-in IB transport (InfiniBand, RoCE), which
#: ``NCCL_IB_DISABLE=1`` or ``NCCL_NET=Socket`` turn into NET/Socket
#: (``fabricui.engine.net_socket``).
IB_FAMILIES = ("infiniband", "roce")
#: First release whose lists take ``function:`` prefixes and refuse unknown names.
PREFIXED_LISTS_SINCE = (2, 24, 0)


@dataclass(frozen=True)
class NcclEnv:
    """The NCCL settings of a run that change its picks (None: NCCL's default)."""

    algo: str | None = None
    """``NCCL_ALGO`` as written."""
    proto: str | None = None
    """``NCCL_PROTO`` as written."""
    min_channels: int | None = None
    """``NCCL_MIN_NCHANNELS``."""
    max_channels: int | None = None
    """``NCCL_MAX_NCHANNELS``."""
    min_ctas: int | None = None
    """``NCCL_MIN_CTAS``: fewest channels of any kind (rings, trees and NVLS; ignored at 0
    or below)."""
    max_ctas: int | None = None
    """``NCCL_MAX_CTAS``: most channels of any kind (ignored at 0 or below)."""
    nvls_channels: int | None = None
    """``NCCL_NVLS_NCHANNELS``: NVLS channels instead of the release's default."""
    nvls: bool | None = None
    """``NCCL_NVLS_ENABLE`` (0 turns NVLS and NVLS+tree off)."""
    collnet: bool = False
    """``NCCL_COLLNET_ENABLE=1`` (CollNet/SHARP is off unless asked for)."""
    cross_nic: int = 2
    """``NCCL_CROSS_NIC``: 0 never, 1 always, 2 (default) when it helps. Checked, and no
    price changes with it: the engine's rings keep each channel on one rail (PXN), and
    traffic that does cross rails spreads over the equal-cost spines."""
    qps_per_connection: int = 1
    """``NCCL_IB_QPS_PER_CONNECTION``. Checked, and no price changes with it: the engine
    already spreads every transfer evenly over equal-cost links, as many queue pairs and
    channels with adaptive routing do (``BulkRouter.link_shares``)."""
    pat: int = 2
    """``NCCL_PAT_ENABLE``: 0 off, 1 on, 2 (default) where NCCL supports it."""
    net_overhead_us: float | None = None
    """``NCCL_NET_OVERHEAD`` converted from ns [us]."""
    ll128_c2c: bool = True
    """``NCCL_LL128_C2C`` (2.27+): LL128 to NICs behind a Grace's NVLink-C2C."""
    p2p_ll_threshold: int = DEFAULT_P2P_LL_THRESHOLD
    """``NCCL_P2P_LL_THRESHOLD``: bytes a point-to-point operation may carry per channel and
    still run LL [bytes]."""
    p2p_net_ll_buffers: bool = False
    """``NCCL_ALLOC_P2P_NET_LL_BUFFERS=1``: point-to-point across the network may run LL."""
    ofi_net_latency_us: float | None = None
    """``OFI_NCCL_NET_LATENCY``: the latency aws-ofi-nccl reports to NCCL for its NICs
    (EFA, Slingshot) instead of its platform default [us] (``src/nccl_ofi_net.cpp``)."""
    ib_disable: bool = False
    """``NCCL_IB_DISABLE`` other than 0: NCCL's built-in IB transport (InfiniBand and RoCE)
    does not start (``ncclIbInit``: ``if (ncclParamIbDisable()) return ncclInternalError``,
    src/transport/net_ib.cc from v2.18.1-1, src/transport/net_ib/init.cc in v2.30.7-1)."""
    net: str | None = None
    """``NCCL_NET`` as written: the one network NCCL may use, by its name (``IB``,
    ``Socket``, a plugin's own), compared without case (``strcasecmp`` in ``ncclNetInit``)."""
    net_plugin: str | None = None
    """``NCCL_NET_PLUGIN`` as written: an external network plugin NCCL tries before its own
    transports (``none``: none)."""
    given: Mapping[str, str] = field(default_factory=dict)
    """Every ``NCCL_*`` variable given, as written."""

    @property
    def sets_choice(self) -> bool:
        """True when NCCL_ALGO or NCCL_PROTO narrows NCCL's own choice."""
        return bool(self.algo or self.proto)


def _integer(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name)
    if value is None or str(value).strip() == "":
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise EngineError(f"{name}={value!r} is not an integer") from None


def _positive(value: int | None) -> int | None:
    """A CTA bound NCCL takes (it ignores 0 and below, src/init.cc ``parseCommConfig``)."""
    return value if value is not None and value > 0 else None


def _latency_us(env: Mapping[str, object], name: str) -> float | None:
    value = env.get(name)
    if value is None or str(value).strip() == "":
        return None
    try:
        latency = float(str(value).strip())
    except ValueError:
        latency = -1.0
    if not 0.0 <= latency < float("inf"):
        raise EngineError(f"{name}={value!r} is not a latency in microseconds (0 or more)")
    return latency


def read_env(env: Mapping[str, object] | None) -> NcclEnv:
    """The NCCL settings among ``env``, and the latency aws-ofi-nccl reports to NCCL
    (other variables are ignored).

    Raises:
        EngineError: A setting that must be an integer (or a latency) is not, or
            ``NCCL_NET=IB`` comes with ``NCCL_IB_DISABLE=1`` (NCCL refuses to start).
    """
    given = {str(k): str(v) for k, v in (env or {}).items() if str(k).startswith("NCCL_")}
    ofi_latency = _latency_us(env or {}, "OFI_NCCL_NET_LATENCY")
    nvls = _integer(given, "NCCL_NVLS_ENABLE")
    collnet = _integer(given, "NCCL_COLLNET_ENABLE")
    cross = _integer(given, "NCCL_CROSS_NIC")
    qps = _integer(given, "NCCL_IB_QPS_PER_CONNECTION")
    pat = _integer(given, "NCCL_PAT_ENABLE")
    overhead = _integer(given, "NCCL_NET_OVERHEAD")
    c2c = _integer(given, "NCCL_LL128_C2C")
    ll_threshold = _integer(given, "NCCL_P2P_LL_THRESHOLD")
    ib_disable = bool(_integer(given, "NCCL_IB_DISABLE"))
    net = given.get("NCCL_NET", "").strip() or None
    if net is not None and net.lower() == "ib" and ib_disable:
        raise EngineError(
            "NCCL_NET=IB with NCCL_IB_DISABLE=1: NCCL finds no network to use and fails to "
            "start (drop one of the two; NCCL_NET=Socket chooses sockets)"
        )
    return NcclEnv(
        algo=given.get("NCCL_ALGO") or None,
        proto=given.get("NCCL_PROTO") or None,
        min_channels=_integer(given, "NCCL_MIN_NCHANNELS"),
        max_channels=_integer(given, "NCCL_MAX_NCHANNELS"),
        min_ctas=_positive(_integer(given, "NCCL_MIN_CTAS")),
        max_ctas=_positive(_integer(given, "NCCL_MAX_CTAS")),
        nvls_channels=_integer(given, "NCCL_NVLS_NCHANNELS"),
        nvls=None if nvls is None else nvls != 0,
        collnet=bool(collnet),
        cross_nic=2 if cross is None else cross,
        qps_per_connection=max(1, qps or 1),
        pat=2 if pat is None else pat,
        net_overhead_us=None if overhead is None or overhead == -2 else overhead / 1000.0,
        ll128_c2c=True if c2c is None else c2c != 0,
        p2p_ll_threshold=max(0, DEFAULT_P2P_LL_THRESHOLD if ll_threshold is None else ll_threshold),
        p2p_net_ll_buffers=bool(_integer(given, "NCCL_ALLOC_P2P_NET_LL_BUFFERS")),
        ofi_net_latency_us=ofi_latency,
        ib_disable=ib_disable,
        net=net,
        net_plugin=given.get("NCCL_NET_PLUGIN", "").strip() or None,
        given=given,
    )


def socket_setting(env: NcclEnv, net_family: str | None) -> str | None:
    """The setting that puts NCCL on its NET/Socket transport on an InfiniBand or RoCE
    network (``NCCL_NET=Socket``, else ``NCCL_IB_DISABLE=1``), None when NCCL keeps its IB
    transport (``fabricui.engine.net_socket`` tells why).

    ``NCCL_NET`` naming another network (a plugin's) keeps NCCL off sockets, and so does an
    external plugin (``NCCL_NET_PLUGIN``), which NCCL tries before its IB transport and
    which ``NCCL_IB_DISABLE`` does not stop.
    """
    if net_family not in IB_FAMILIES:
        return None
    if env.net is not None:
        return f"NCCL_NET={env.net}" if env.net.lower() == "socket" else None
    if env.net_plugin is not None and env.net_plugin.lower() != "none":
        return None
    if env.ib_disable:
        return f"NCCL_IB_DISABLE={env.given['NCCL_IB_DISABLE'].strip()}"
    return None


def enabled_list(
    text: str | None,
    op: str,
    names: Mapping[str, str],
    release: Release,
    variable: str,
) -> dict[str, int] | None:
    """Which of ``names`` a NCCL_ALGO/NCCL_PROTO value enables for collective ``op``.

    Args:
        text: The variable's value, or None.
        op: The collective (``all_reduce`` ...).
        names: Our name -> NCCL's name for every algorithm or protocol.
        release: The NCCL release reading it (prefixes and strictness changed in 2.24).
        variable: ``NCCL_ALGO`` or ``NCCL_PROTO``, for messages.

    Returns:
        Our name -> 1 (enabled) or 0 for every name, or None when the variable does not
        apply (unset, or no entry for ``op``).

    Raises:
        EngineError: From 2.24, an unknown name or prefix, or a prefix-less entry after the
            first (NCCL refuses to start).
    """
    if not text:
        return None
    lookup = {v.lower(): k for k, v in names.items()}
    strict = release.since >= PREFIXED_LISTS_SINCE
    result: dict[str, int] | None = None
    entries = text.split(";") if strict else [text]
    for position, entry in enumerate(entries):
        prefix, _, items = entry.partition(":") if strict and ":" in entry else ("", "", entry)
        if strict and not items.strip() and prefix:
            items, prefix = prefix, ""
        if strict and not prefix and position > 0:
            raise EngineError(
                f"{variable}={text!r}: every entry after the first needs a collective prefix "
                "(e.g. allreduce:ring)"
            )
        if prefix:
            function = FUNCTION_NAMES.get(prefix.strip().lower())
            if function is None:
                raise EngineError(
                    f"{variable}={text!r}: unknown collective {prefix!r} "
                    f"(one of {', '.join(FUNCTION_NAMES)})"
                )
            if function != op:
                continue
        items = items.strip()
        exclude = items.startswith("^")
        if exclude:
            items = items[1:]
        chosen = {name: int(exclude) for name in names}
        for token in (t.strip() for t in items.split(",")):
            if not token:
                continue
            ours = lookup.get(token.lower())
            if ours is None:
                if strict:
                    known = ", ".join(names.values())
                    raise EngineError(f"{variable}={text!r}: unknown name {token!r} ({known})")
                continue
            chosen[ours] = int(not exclude)
        result = chosen
    return result


def algorithms_enabled(env: NcclEnv, op: str, release: Release) -> dict[str, int] | None:
    """``NCCL_ALGO`` read for ``op`` (see ``enabled_list``)."""
    return enabled_list(env.algo, op, ALGORITHM_ENV_NAMES, release, "NCCL_ALGO")


def protocols_enabled(env: NcclEnv, op: str, release: Release) -> dict[str, int] | None:
    """``NCCL_PROTO`` read for ``op`` (see ``enabled_list``)."""
    return enabled_list(env.proto, op, PROTOCOL_ENV_NAMES, release, "NCCL_PROTO")


__all__ = [
    "ALGORITHMS",
    "HONOURED",
    "PROTOCOLS",
    "NcclEnv",
    "algorithms_enabled",
    "enabled_list",
    "protocols_enabled",
    "read_env",
    "socket_setting",
]
