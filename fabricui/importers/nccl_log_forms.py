"""The message forms of an NCCL log and what each records into an ``NcclLog``.

A message (a line reduced to what follows NCCL's prefix) is tried against the forms in
order; the first whose handler takes it records it. Init lines that no form takes may still
carry counts (channels, ranks, nodes), every one of which is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from fabricui.importers.nccl_log_records import (
    AlgoChoice,
    IbDevice,
    Message,
    NcclLog,
    Transport,
    classify_transport,
)
from fabricui.vocabulary import PROTOCOLS

if TYPE_CHECKING:
    #: Finds a message form in a message: a compiled pattern's ``match`` or ``search``.
    _Finder = Callable[[str], re.Match[str] | None]
    #: Records a found message form; False when the message is not that form after all.
    _Handler = Callable[["_Line", re.Match[str]], bool]

_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)(?:[-+.]\S*?cuda(\d+(?:\.\d+)*))?")
#: Where a ``_VERSION`` match may start: at its literal (``_search_near``).
_VERSION_ANCHORS = (("NCCL version", 0),)
_DRIVER = re.compile(r"^cudaDriverVersion (\d{1,9})")
_BOOTSTRAP = re.compile(r"^Bootstrap\s*: Using (.*)$")
_NET_USING = re.compile(r"^NET/(?P<name>[\w.\- ]*[\w.\-])\s*: Using (?P<rest>.*)$")
_NET_NO_DEVICE = re.compile(r"^NET/IB\s*: No device found")
_USING_NETWORK = re.compile(r"^Using network (\S+(?: Libfabric)?)")
#: The name is trimmed of a trailing ``(vN)`` in code (``_plugin_name``).
_PLUGIN_LOADED = re.compile(r"^NET/Plugin\s*: Loaded net plugin (.*)$")
_P2P_PLUGIN = re.compile(r"^P2P plugin (?:v\d+ )?(\S+)")
_PLUGIN_PATH = re.compile(r"^Plugin Path\s*: (\S+)")
#: A tuner plugin in use: 2.19-2.20 ``Using tuner plugin: 'X'``; 2.21-2.26 ``TUNER/Plugin:
#: Using tuner plugin X``; 2.27 on ``TUNER/Plugin: Using X (v5)`` and, for a library
#: NCCL_TUNER_PLUGIN names, ``Successfully loaded external tuner plugin X`` (NVIDIA/nccl
#: ``src/plugin/tuner.cc`` and ``tuner/tuner_v*.cc``); aws-ofi-nccl's ``NET/OFI Region base
#: Tuner is chosen for platform: p5en.48xlarge`` (``src/tuner/nccl_ofi_tuner.cpp``). Its
#: ``Using internal tuner plugin`` says that none is.
_TUNER_IN_USE = re.compile(
    r"^(?:TUNER/Plugin: Using (?:tuner plugin )?|Using tuner plugin: '?|"
    r"Successfully loaded external tuner plugin )(?P<name>[^'\n]+?)'?\.?\s*$"
)
"""The tuner line's form, the reference ``find_tuner_in_use`` reads it by: the pattern
itself backtracks quadratically on a long run of blanks after its name."""
#: ``_TUNER_IN_USE``'s prefixes in the order its alternation and optional parts try them.
_TUNER_PREFIXES = (
    "TUNER/Plugin: Using tuner plugin ",
    "TUNER/Plugin: Using ",
    "Using tuner plugin: '",
    "Using tuner plugin: ",
    "Successfully loaded external tuner plugin ",
)
_TUNER_NAME = re.compile(r"(?P<name>[^'\n]+)")
_OFI_TUNER = re.compile(r"^NET/OFI (Region|Model) base Tuner is chosen for platform: (\S+)")
#: The value is trimmed (trailing blanks, then one final period) in code.
_ENV = re.compile(r"^(NCCL_\w+) set (?:by environment )?to (.*)$")
# One interface per whitespace- or ';'-separated token, matched from the token's start only:
# a search over the whole line would restart after every ':' of a long token (quadratic).
_IFACE = re.compile(r"(?:\[\d+\])?([\w.\-]+):([^<\s;]*)<\d+>$")
_IFACE_SEPARATORS = re.compile(r"[\s;]+")
_IB_DEVICE = re.compile(
    r"(?:\[(\d{1,9})\]\s*)?(?<![\w.\-+])([\w.\-+]+):(\d{1,9})/(IB|RoCE)(/SHARP)?"
)
_IB_VNIC = re.compile(r"\[(\d{1,9})\]=\{([^}]*)\}")
_CONNECTION = re.compile(
    r"^(?:Channel|Ring) (?P<ch>\d{1,9})(?:/\d+)? : (?P<src>\d{1,9})\[(?P<sdev>[0-9a-fA-Fx]{1,16})\]"
    r" -> (?P<dst>\d{1,9})\[(?P<ddev>[0-9a-fA-Fx]{1,16})\](?: \[(?P<dir>send|receive)\])? "
    r"via (?P<via>\S.*)$"
)
_RING_HEAD = re.compile(r"^Channel (\d{1,9})/(\d{1,9}) :\s+(?=-?\d)")
#: What may follow the head: ranks and blanks (one character class, so the regex engine
#: keeps no state per rank: a nested repeat kept ~400 bytes per rank of a long list).
_RING_BODY = re.compile(r"[-0-9\s]*")
_RING_RANK = re.compile(r"-?\d+")
#: ``Ring 00 : 7 -> 0 -> 1`` (GRAPH subsystem: a rank's ring neighbours).
_RING_NEXT = re.compile(r"^Ring (\d{1,9}) : (-?\d{1,9}) -> (\d{1,9}) -> (-?\d{1,9})\s*$")
#: ``NET/IB/3``, ``NET/IB/3(5)`` (PXN through rank 5), ``NET/IBext_v8/1/GDRDMA``.
_NET_DEV = re.compile(r"^NET/[^/\s]{1,64}/(\d{1,6})(?:\((\d{1,9})\))?")
#: A rank's physical GPU (``nvmlDev``) first, else its CUDA device (``cudaDev``).
_DEVICES = (
    (re.compile(r"\bnvmlDev (\d{1,6})\b"), (("nvmlDev ", 0),)),
    (re.compile(r"\bcudaDev (\d{1,6})\b"), (("cudaDev ", 0),)),
)
#: ``Trees [0] 1/-1/-1->0->-1 [1] ...``: per channel, up to three children, the rank, its
#: parent (GRAPH subsystem).
_TREES = re.compile(
    r"^Trees(?: \[\d{1,9}\] -?\d{1,9}/-?\d{1,9}/-?\d{1,9}->\d{1,9}->-?\d{1,9}(?:\|\S{1,80})?)+\s*$"
)
_TREE_ENTRY = re.compile(r"\[(\d{1,9})\] -?\d{1,9}/-?\d{1,9}/-?\d{1,9}->(\d{1,9})->(-?\d{1,9})")
#: Longest ``Trees`` line read (64 channels of full entries; longer is a paste artefact).
_MAX_TREES_LINE = 8192
#: Most ranks a printed ring is read with (longer lists are a paste artefact).
_MAX_RING = 1 << 20
#: Longest ring-list line matched [characters]: ``_MAX_RING`` ranks of up to 7 digits and
#: their blanks, with room to spare. A longer one is not matched at all: the match and the
#: split of a 50 MB line took gigabytes only to be thrown away.
_MAX_RING_LINE = 16 * _MAX_RING
_COLL_CHANNELS = re.compile(r"\b(\d{1,9}) coll channels\b")
#: Where a ``_COLL_CHANNELS`` match may start: up to 9 digits before its literal.
_COLL_ANCHORS = ((" coll channels", 9),)
_NVLS_CHANNELS = re.compile(r"\b(\d{1,9}) nvls channels\b|\bnvlsChannels (\d{1,9})")
_NVLS_ANCHORS = ((" nvls channels", 9), ("nvlsChannels ", 0))
_NVLS_SUPPORT = re.compile(r"^NVLS multicast support is (not )?available on dev (\d{1,9})")
_GDR = re.compile(r"GPU Direct RDMA (?:\([\w-]+\) )?([Dd]isabled|[Ee]nabled) for (.*)$")
#: An IB completion error line: (peer, ibv_wc_status).
COMPLETION = re.compile(r"Got completion from peer (\S+) with (?:error |status=)(\d{1,9})")
_ERROR_RETURN = re.compile(r"^([\w./-]+\.(?:cc|cu|h|c)):(\d{1,9}) -> (\d{1,9})")
_COMM = re.compile(r"\brank (\d{1,9}) nR?ranks (\d{1,9})\b", re.IGNORECASE)
#: ``_COMM`` without its leading ``\b`` (checked in code, ``_search_bounded``): a pattern
#: starting with an assertion has no prefix for ``re`` to skip ahead with.
_COMM_BODY = re.compile(r"rank (\d{1,9}) nR?ranks (\d{1,9})\b", re.IGNORECASE)
_NODES = re.compile(r"\bnNodes (\d{1,9}) localRanks (\d{1,9})")
_NODES_ANCHORS = (("nNodes ", 0),)
_SYSTEM = re.compile(r"^=== System : max(?:Bw|Width) ")
#: NCCL's tuning choice: ``4194304 Bytes -> Algo 1 proto 2 time 46.31`` (2.21-2.22),
#: ``AllReduce: 4194304 Bytes -> Algo 1 proto 2 time 46.31`` (2.23-2.25), ``AllReduce:
#: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}`` (2.26+; src/enqueue.cc).
_CHOICE = re.compile(
    r"^(?:(?P<func>[A-Za-z]{1,20}): )?(?P<bytes>\d{1,20}) Bytes -> Algo (?P<algo>\w{1,20}) "
    r"proto (?P<proto>\w{1,10})(?: time (?P<time>[\d.]{1,20}))?"
    r"(?: channel\{Lo\.\.Hi\}=\{(?P<lo>\d{1,4})\.\.(?P<hi>\d{1,4})\})?"
)
#: A block header of NCCL's tuning table: ``Algorithm | Tree | Ring | CollNetDirect |``.
_TUNING_HEADER = re.compile(r"^Algorithm\s*\|(.*)$")
#: A row of it: ``AllReduce | 15.2/ 43.6 | 31.5/ 128.8 | ...`` (latency/bandwidth).
_TUNING_ROW = re.compile(r"^(Broadcast|Reduce|AllGather|ReduceScatter|AllReduce)\s*\|(.*)$")
_TUNING_CELL = re.compile(r"(-?[\d.]{1,12})\s*/\s*(-?[\d.]{1,12})")
#: NCCL's table names of algorithms -> ours.
_TABLE_ALGORITHMS = {
    "tree": "tree",
    "ring": "ring",
    "collnetdirect": "collnet_direct",
    "collnetchain": "collnet_chain",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "pat": "pat",
}
#: NCCL's function names (``ncclFuncToString``) -> ours.
_FUNCTIONS = {
    "AllReduce": "all_reduce",
    "AllGather": "all_gather",
    "ReduceScatter": "reduce_scatter",
    "Broadcast": "broadcast",
    "Reduce": "reduce",
}
_GRAPH_NODE = re.compile(r"^(?:\+ \w+\[[\d.]+\] - )?(?:CPU|GPU|NVS|NIC|NET|PCI)/[0-9A-Fa-f]+")
#: GPU model names a log may mention (``parse_nccl_log`` collects them).
GPU_NAME = re.compile(
    r"\b(A100|A800|H100|H800|H20|H200|B200|B300|GB200|GB300|GH200|L40S?|V100|A10G?|T4)\b"
)
#: ``GPU_NAME`` without its leading ``\b`` (checked in code, ``gpu_names``).
_GPU_NAME_BODY = re.compile(GPU_NAME.pattern[2:])


def _libibverbs_missing(low: str) -> bool:
    """True for a message (lowercased: ``low``) saying libibverbs could not be loaded
    (string search: a regex with ``.*`` between the phrases is quadratic on a line
    repeating the first one)."""
    if "libibverbs" not in low:
        return False
    starts = [i for i in (low.find(w) for w in _OPEN_FAILED) if i >= 0]
    if starts and "libibverbs" in low[min(starts) :]:
        return True
    at = low.find("libibverbs")
    return at >= 0 and any(w in low[at:] for w in ("not found", "cannot open"))


#: Phrases before ``libibverbs`` in a load failure.
_OPEN_FAILED = ("failed to open", "unable to open", "cannot open")


def _search_near(
    pattern: re.Pattern[str], msg: str, anchors: tuple[tuple[str, int], ...]
) -> re.Match[str] | None:
    """The match ``pattern.search(msg)`` finds, tried only where a match can start: each
    (literal, reach) of ``anchors`` says a match holds ``literal`` at most ``reach``
    characters after its start. The literals are found with ``str.find``: a long line
    without them costs one fast scan, not a regex attempt at every character (a pattern
    starting with ``\\b`` has no prefix for ``re`` to skip ahead with).

    Args:
        pattern: The pattern; every match of it holds one of the literals as said.
        msg: The text searched.
        anchors: (literal, reach) pairs.

    Returns:
        The leftmost match, as ``pattern.search(msg)`` returns it; None when there is none.
    """
    found = [msg.find(literal) for literal, _reach in anchors]
    pos = 0
    while True:
        start = -1
        for i, (literal, reach) in enumerate(anchors):
            if 0 <= found[i] < pos:  # every start this occurrence allows was tried
                found[i] = msg.find(literal, pos)
            if found[i] >= 0:
                first = max(pos, found[i] - reach)
                start = first if start < 0 else min(start, first)
        if start < 0:
            return None
        match = pattern.match(msg, start)
        if match:
            return match
        pos = start + 1


def _word_before(msg: str, at: int) -> bool:
    """True when the character before ``at`` is a word character as ``re``'s ``\\b`` sees
    one (alphanumeric or ``_``)."""
    return at > 0 and (msg[at - 1].isalnum() or msg[at - 1] == "_")


def _search_bounded(body: re.Pattern[str], msg: str, pos: int = 0) -> re.Match[str] | None:
    """The first match of ``\\b`` + ``body`` in ``msg`` from ``pos``, for a ``body`` that
    starts with a word character: ``body`` alone lets ``re`` skip ahead to its first
    characters, and the boundary is checked at each match found."""
    while True:
        match = body.search(msg, pos)
        if match is None or not _word_before(msg, match.start()):
            return match
        pos = match.start() + 1


def gpu_names(msg: str) -> list[str]:
    """The GPU model names a message mentions, in order: ``GPU_NAME.findall(msg)``.

    Args:
        msg: A message.

    Returns:
        Every name, repeats included.
    """
    if _GPU_NAME_BODY.search(msg) is None:  # most messages: one scan
        return []
    names: list[str] = []
    pos = 0
    while True:
        match = _search_bounded(_GPU_NAME_BODY, msg, pos)
        if match is None:
            return names
        names.append(match.group(1))
        pos = match.end()


def _plugin_name(text: str) -> str:
    """``aws-ofi-nccl (v7)`` -> ``aws-ofi-nccl``."""
    name = text.rstrip()
    if name.endswith(")"):
        at = name.rfind("(v")
        if at >= 0 and name[at + 2 : -1].isdecimal():
            name = name[:at].rstrip()
    return name


def _interfaces(text: str) -> list[tuple[str, str]]:
    """(interface, address) of every ``name:address<index>`` token, in order."""
    found = []
    for token in _IFACE_SEPARATORS.split(text):
        match = _IFACE.match(token)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def _ib_devices(text: str) -> tuple[IbDevice, ...]:
    """Devices of a ``NET/IB : Using`` list, plain or fused (``[0]={[0] mlx5_2:1/RoCE, ...}``)."""
    devices: list[IbDevice] = []
    head = text.split(";", 1)[0]
    fused = list(_IB_VNIC.finditer(head))
    if fused:
        for group in fused:
            vnic = int(group.group(1))
            for m in _IB_DEVICE.finditer(group.group(2)):
                devices.append(_ib_device(m, len(devices), vnic))
        return tuple(devices)
    for m in _IB_DEVICE.finditer(head):
        devices.append(_ib_device(m, len(devices), None))
    return tuple(devices)


def _ib_device(match: re.Match[str], position: int, vnic: int | None) -> IbDevice:
    index = int(match.group(1)) if match.group(1) is not None else position
    return IbDevice(
        index=index,
        name=match.group(2),
        port=int(match.group(3)),
        link_layer=match.group(4),
        sharp=bool(match.group(5)),
        vnic=vnic,
    )


def _algo_choice(number: int, match: re.Match[str]) -> AlgoChoice | None:
    """The choice a ``Bytes -> Algo`` line records, None for an index NCCL never used."""
    from fabricui.engine.nccl.releases import ALGORITHMS

    algo, proto = match.group("algo"), match.group("proto")
    if algo.isdecimal() and proto.isdecimal():
        a, p = int(algo), int(proto)
        if a >= len(ALGORITHMS) or p >= len(PROTOCOLS):
            return None
        algorithm, protocol = ALGORITHMS[a], PROTOCOLS[p]
        per_rank = False
    else:
        algorithm, protocol = algo.lower(), proto.lower()
        if algorithm not in ALGORITHMS or protocol not in PROTOCOLS:
            return None
        per_rank = True
    lo, hi = match.group("lo"), match.group("hi")
    return AlgoChoice(
        line=number,
        op=_FUNCTIONS.get(match.group("func") or ""),
        size_bytes=int(match.group("bytes")),
        algorithm=algorithm,
        protocol=protocol,
        time_us=float(match.group("time")) if match.group("time") else None,
        channels=int(hi) - int(lo) + 1 if lo is not None and hi is not None else None,
        per_rank=per_rank,
    )


@dataclass
class _Line:
    """One message being read, and what its handler may record into."""

    log: NcclLog
    """The log being filled."""
    number: int
    """1-based line number in the input."""
    level: str
    """``INFO``, ``WARN`` ...; empty for a line without NCCL's prefix."""
    msg: str
    """The message without its prefix."""
    host: str | None
    """Host that printed the line, when its prefix names one."""
    seen_lists: set[tuple[IbDevice, ...]]
    """``NET/IB : Using`` lists already recorded (every rank prints its own)."""


# --- message handlers: each records one message form; False lets the next form try -----


def _gdr(line: _Line, match: re.Match[str]) -> bool:
    """``GPU Direct RDMA Disabled|Enabled for ...``: quoted by the doctor."""
    log = line.log
    target = log.gdr_disabled if match.group(1).lower() == "disabled" else log.gdr_enabled
    target.append(Message(line.number, line.msg))
    return True


def _completion_error(line: _Line, match: re.Match[str]) -> bool:
    """An IB completion error (a failing link or peer), quoted by the doctor."""
    line.log.completion_errors.append(Message(line.number, line.msg))
    return True


def _connection(line: _Line, match: re.Match[str]) -> bool:
    """``Channel NN : a[x] -> b[y] via KIND``: a transport, its ranks, devices and host."""
    log, host = line.log, line.host
    src, dst = int(match.group("src")), int(match.group("dst"))
    via = match.group("via").rstrip()
    direction = match.group("dir") or ""
    net = _NET_DEV.match(via)
    log.transports.append(
        Transport(
            line=line.number,
            channel=int(match.group("ch")),
            src=src,
            dst=dst,
            kind=classify_transport(via),
            text=via,
            direction=direction,
            src_dev=match.group("sdev"),
            dst_dev=match.group("ddev"),
            net_dev=int(net.group(1)) if net else None,
            proxy=int(net.group(2)) if net and net.group(2) else None,
            host=host,
        )
    )
    log.ranks.update((src, dst))
    log.rank_devs.setdefault(src, match.group("sdev"))
    log.rank_devs.setdefault(dst, match.group("ddev"))
    if host:
        log.rank_hosts.setdefault(dst if direction == "receive" else src, host)
    return True


def _ring_order(line: _Line, match: re.Match[str]) -> bool:
    """``Channel 00/02 :    0   1 ...``: the channel count and one ring's rank order (not
    kept when longer than ``_MAX_RING`` ranks, a paste artefact; ``_ring_list`` reads it)."""
    ring = _ring_list(line.msg)
    if ring is None:
        return False
    channel, total, order = ring
    log = line.log
    log.ring_channels = max(log.ring_channels or 0, total)
    if order is not None:
        log.rings.setdefault(channel, order)
    return True


def _trees(line: _Line, match: re.Match[str]) -> bool:
    """``Trees [0] 1/-1/-1->0->-1 ...``: each channel's parent of the rank; a line longer
    than ``_MAX_TREES_LINE`` is a paste artefact, not read."""
    if len(line.msg) > _MAX_TREES_LINE:
        return False
    log = line.log
    for channel, rank, up in _TREE_ENTRY.findall(line.msg):
        log.tree_up[(int(channel), int(rank))] = int(up)
        log.ranks.add(int(rank))
        if line.host:
            log.rank_hosts.setdefault(int(rank), line.host)
    return True


def _ring_neighbours(line: _Line, match: re.Match[str]) -> bool:
    """``Ring 00 : 7 -> 0 -> 1``: the rank's next rank on the channel's ring."""
    log = line.log
    channel, rank = int(match.group(1)), int(match.group(3))
    log.ring_next[(channel, rank)] = int(match.group(4))
    log.ranks.add(rank)
    if line.host:
        log.rank_hosts.setdefault(rank, line.host)
    return True


def _tuning_header(line: _Line, match: re.Match[str]) -> bool:
    """``Algorithm | Tree | Ring | ...``: the algorithms of the tuning table rows below."""
    names = [n.strip().lower() for n in match.group(1).split("|")]
    line.log.tuning_block = tuple(_TABLE_ALGORITHMS.get(n, "") for n in names if n)
    return True


def _tuning_row(line: _Line, match: re.Match[str]) -> bool:
    """``AllReduce | 15.2/ 43.6 | ...``: NCCL's latency and bandwidth per algorithm and
    protocol (only under a table header)."""
    log = line.log
    if not log.tuning_block:
        return False

    op = _FUNCTIONS[match.group(1)]
    cells = _TUNING_CELL.findall(match.group(2))
    for i, (lat, bw) in enumerate(cells):
        block, p = divmod(i, len(PROTOCOLS))
        if block < len(log.tuning_block) and log.tuning_block[block]:
            key = (op, log.tuning_block[block], PROTOCOLS[p])
            log.tuning[key] = (float(lat), float(bw))
    return True


def _tuning_choice(line: _Line, match: re.Match[str]) -> bool:
    """``... Bytes -> Algo ... proto ...``: the algorithm NCCL picked (an index it never
    uses is no choice)."""
    recorded = _algo_choice(line.number, match)
    if recorded is None:
        return False
    line.log.choices.append(recorded)
    return True


def _env_setting(line: _Line, match: re.Match[str]) -> bool:
    """``NCCL_X set by environment to V``: the setting (trailing period dropped)."""
    value = match.group(2).rstrip()
    line.log.env[match.group(1)] = (value[:-1] if value.endswith(".") else value).strip()
    return True


def _no_ib_device(line: _Line, match: re.Match[str]) -> bool:
    """``NET/IB : No device found``."""
    line.log.ib_no_device = True
    return True


def _net_devices(line: _Line, match: re.Match[str]) -> bool:
    """``NET/IB : Using [0]mlx5_0:1/IB ...; OOB eth0:...``: the IB device list (each list
    once) and out-of-band interfaces; another network's interfaces, and its plugin."""
    log = line.log
    name, rest = match.group("name").strip(), match.group("rest")
    if name == "IB":
        devices = _ib_devices(rest)
        if devices and devices not in line.seen_lists:
            line.seen_lists.add(devices)
            log.ib_lists.append(devices)
        if ";" in rest:
            for iface in _interfaces(rest.split(";", 1)[1]):
                if iface not in log.oob:
                    log.oob.append(iface)
    else:
        log.net_lists[name] = [iface for iface, _addr in _interfaces(rest)]
        if name != "Socket" and name not in log.plugins:
            log.plugins.append(name)
    return True


def _network_used(line: _Line, match: re.Match[str]) -> bool:
    """``Using network IB``: the networks in the order last used; one not built in is a
    plugin."""
    log = line.log
    name = match.group(1)
    if name not in log.networks:
        log.networks.append(name)
    elif log.networks[-1] != name:
        log.networks.remove(name)
        log.networks.append(name)
    if name not in ("IB", "Socket") and name not in log.plugins:
        log.plugins.append(name)
    return True


def _plugin_loaded(line: _Line, match: re.Match[str]) -> bool:
    """``NET/Plugin : Loaded net plugin X (v7)`` or ``P2P plugin X``: a plugin's name."""
    name = _plugin_name(match.group(1))
    if name not in line.log.plugins:
        line.log.plugins.append(name)
    return True


def _tuner_in_use(line: _Line, match: re.Match[str]) -> bool:
    """A tuner plugin NCCL uses (``_TUNER_IN_USE``); not its internal tuner."""
    name = _plugin_name(match.group("name"))
    if name.lower().startswith("internal tuner"):
        return True
    if name not in line.log.tuner_plugins:
        line.log.tuner_plugins.append(name)
    return True


def _ofi_tuner(line: _Line, match: re.Match[str]) -> bool:
    """aws-ofi-nccl's tuner and the instance type it tunes for."""
    name = f"aws-ofi-nccl's {match.group(1).lower()} tuner ({match.group(2)})"
    if name not in line.log.tuner_plugins:
        line.log.tuner_plugins.append(name)
    return True


def _plugin_path(line: _Line, match: re.Match[str]) -> bool:
    """``Plugin Path : /opt/...``."""
    line.log.plugin_path = match.group(1)
    return True


def _bootstrap(line: _Line, match: re.Match[str]) -> bool:
    """``Bootstrap : Using eth0:10.0.0.1<0>``: the bootstrap interfaces."""
    for iface in _interfaces(match.group(1)):
        if iface not in line.log.bootstrap:
            line.log.bootstrap.append(iface)
    return True


def _driver(line: _Line, match: re.Match[str]) -> bool:
    """``cudaDriverVersion 12040``."""
    line.log.cuda_driver = int(match.group(1))
    return True


def _nvls_support(line: _Line, match: re.Match[str]) -> bool:
    """``NVLS multicast support is [not ]available on dev N``."""
    line.log.nvls_support[int(match.group(2))] = match.group(1) is None
    return True


def _system_print(line: _Line, match: re.Match[str]) -> bool:
    """``=== System : maxBw ...``: the topology dump is in the log."""
    line.log.system_print = True
    return True


def _graph_node(line: _Line, match: re.Match[str]) -> bool:
    """A node of the topology dump (``GPU/...``, ``NVS/...``); an NVSwitch is noted."""
    if "NVS/" in line.msg:
        line.log.nvswitch_seen = True
    return True


def _error_return(line: _Line, match: re.Match[str]) -> bool:
    """``file.cc:123 -> 2``: an error NCCL returned (only on a prefixed line)."""
    if not line.level:
        return False
    line.log.error_returns.append(
        (line.number, f"{match.group(1)}:{match.group(2)}", int(match.group(3)))
    )
    return True


def _find_choice(msg: str) -> re.Match[str] | None:
    """``_CHOICE.match``, tried only on a message holding the literal every match holds."""
    return _CHOICE.match(msg) if " Bytes -> Algo " in msg else None


def find_tuner_in_use(msg: str) -> re.Match[str] | None:
    """``_TUNER_IN_USE.match`` in linear time: its name is the shortest run after a prefix
    that the tail ``'?\\.?\\s*`` ends, so it ends where that tail, the longest such
    suffix, begins (one character at least). The match returned is ``_TUNER_NAME``'s over
    that name, whose ``name`` group is the same text."""
    for prefix in _TUNER_PREFIXES:
        if not msg.startswith(prefix):
            continue
        start = len(prefix)
        rest = msg[start:]
        kept = rest.rstrip()  # \s and str.isspace are the same characters
        tail = 2 if kept.endswith("'.") else 1 if kept.endswith((".", "'")) else 0
        end = start + max(1, len(kept) - tail)
        if end <= len(msg):
            found = _TUNER_NAME.fullmatch(msg, start, end)
            if found is not None:
                return found
    return None


def _find_error_return(msg: str) -> re.Match[str] | None:
    """``_ERROR_RETURN.match``, tried only on a message holding `` -> ``."""
    return _ERROR_RETURN.match(msg) if " -> " in msg else None


#: The message forms in the order they are tried: (the first characters a message of the
#: form can start with, empty for any; the pattern's match or search; the handler recording
#: it). The first handler that returns True ends the search.
_MESSAGE_FORMS: tuple[tuple[str, _Finder, _Handler], ...] = (
    ("", _GDR.search, _gdr),
    ("", COMPLETION.search, _completion_error),
    ("CR", _CONNECTION.match, _connection),
    ("C", _RING_HEAD.match, _ring_order),
    ("T", _TREES.match, _trees),
    ("R", _RING_NEXT.match, _ring_neighbours),
    ("A", _TUNING_HEADER.match, _tuning_header),
    ("ABR", _TUNING_ROW.match, _tuning_row),
    ("", _find_choice, _tuning_choice),
    ("N", _ENV.match, _env_setting),
    ("N", _NET_NO_DEVICE.match, _no_ib_device),
    ("N", _NET_USING.match, _net_devices),
    ("U", _USING_NETWORK.match, _network_used),
    ("N", _PLUGIN_LOADED.match, _plugin_loaded),
    ("P", _P2P_PLUGIN.match, _plugin_loaded),
    ("P", _PLUGIN_PATH.match, _plugin_path),
    ("STU", find_tuner_in_use, _tuner_in_use),
    ("N", _OFI_TUNER.match, _ofi_tuner),
    ("B", _BOOTSTRAP.match, _bootstrap),
    ("c", _DRIVER.match, _driver),
    ("N", _NVLS_SUPPORT.match, _nvls_support),
    ("=", _SYSTEM.match, _system_print),
    ("+CGNP", _GRAPH_NODE.match, _graph_node),
    ("", _find_error_return, _error_return),
)


def _forms_starting(initial: str | None) -> tuple[tuple[_Finder, _Handler], ...]:
    """The forms, in order, a message starting with ``initial`` may be (None: a character
    no form names)."""
    return tuple(
        (find, handle)
        for initials, find, handle in _MESSAGE_FORMS
        if not initials or (initial is not None and initial in initials)
    )


#: A message's first character -> the forms it may be, in order: each message tries only
#: those (a few of the 24), not every form.
_FORMS_BY_INITIAL = {c: _forms_starting(c) for c in "".join(i for i, _, _ in _MESSAGE_FORMS)}
#: The forms a message starting with any other character (or empty) may be.
_FORMS_ANY_INITIAL = _forms_starting(None)


# --- counts inside longer init lines: every one found is recorded --------------------------


def _coll_channels(line: _Line, match: re.Match[str]) -> None:
    """``N coll channels``: the most seen."""
    line.log.coll_channels = max(line.log.coll_channels or 0, int(match.group(1)))


def _nvls_channels(line: _Line, match: re.Match[str]) -> None:
    """``N nvls channels`` / ``nvlsChannels N``: the fewest seen."""
    log = line.log
    count = int(match.group(1) or match.group(2))
    log.nvls_channels = count if log.nvls_channels is None else min(log.nvls_channels, count)


def _node_counts(line: _Line, match: re.Match[str]) -> None:
    """``nNodes N localRanks M``."""
    line.log.nnodes = int(match.group(1))
    line.log.local_ranks = int(match.group(2))


def _comm_rank(line: _Line, match: re.Match[str]) -> None:
    """``rank R nranks N``: the rank, the job's size, and the rank's host and device."""
    log = line.log
    rank = int(match.group(1))
    log.ranks.add(rank)
    log.nranks = int(match.group(2))
    if line.host:
        log.rank_hosts.setdefault(rank, line.host)
    for pattern, anchors in _DEVICES:
        device = _search_near(pattern, line.msg, anchors)
        if device:
            log.rank_devs[rank] = device.group(1)
            break


# Each count's search: (message, its lowercase) -> the match ``pattern.search(message)``
# finds, looked for only when the message holds a literal every match holds.


def _find_coll_channels(msg: str, low: str) -> re.Match[str] | None:
    return _search_near(_COLL_CHANNELS, msg, _COLL_ANCHORS) if " coll channels" in msg else None


def _find_nvls_channels(msg: str, low: str) -> re.Match[str] | None:
    return _search_near(_NVLS_CHANNELS, msg, _NVLS_ANCHORS) if "nvls" in msg else None


def _find_nodes(msg: str, low: str) -> re.Match[str] | None:
    return _search_near(_NODES, msg, _NODES_ANCHORS) if "nNodes " in msg else None


def _find_comm(msg: str, low: str) -> re.Match[str] | None:
    # Each letter of ``rank`` that _COMM matches (K's Kelvin sign too) lowers to one of it.
    return _search_bounded(_COMM_BODY, msg) if "rank" in low else None


#: Counts NCCL prints inside its init lines, all looked for in every such line: (the
#: count's search, the handler recording it).
_COUNTS: tuple[
    tuple[Callable[[str, str], re.Match[str] | None], Callable[[_Line, re.Match[str]], None]],
    ...,
] = (
    (_find_coll_channels, _coll_channels),
    (_find_nvls_channels, _nvls_channels),
    (_find_nodes, _node_counts),
    (_find_comm, _comm_rank),
)

#: Characters of a ring list converted at once (whole ranks): its ranks become numbers a
#: chunk at a time, never all at once as strings.
_RING_CHUNK = 1 << 16
_SPACE = re.compile(r"\s")


def _signed_rank(token: str) -> int:
    """A ring-list token holding a ``-`` read as ``-?\\d+`` reads it: only its last dash
    signs it (``--3`` is -3)."""
    digits = token.lstrip("-")
    return -int(digits) if len(digits) < len(token) else int(digits)


def _ring_list(msg: str) -> tuple[int, int, list[int] | None] | None:
    """(channel, channels, ring order) of ``Channel 00/02 :    0   1 ...``, or None for
    another message (or a list holding a rank too long for a number); the order is None
    when longer than ``_MAX_RING`` ranks (a paste artefact), and lines past
    ``_MAX_RING_LINE`` characters are not read at all."""
    head = _RING_HEAD.match(msg) if len(msg) <= _MAX_RING_LINE else None
    if head is None or _RING_BODY.fullmatch(msg, head.end()) is None:
        return None
    order: list[int] = []
    start, end = head.end(), len(msg)
    while start < end:
        space = _SPACE.search(msg, min(start + _RING_CHUNK, end))
        stop = space.start() if space else end
        chunk = msg[start:stop]
        start = stop
        try:
            if "-" in chunk:
                tokens = chunk.split()
                if any("-" in token.lstrip("-") for token in tokens):
                    return None  # a token such as 1-2: not a ring list
                if len(order) <= _MAX_RING:  # a token of dashes alone is no rank
                    order.extend(_signed_rank(token) for token in tokens if token.strip("-"))
            elif len(order) <= _MAX_RING:
                order.extend(map(int, chunk.split()))
        except ValueError:  # thousands of digits (past int's limit): no rank, no ring list
            return None
    return int(head.group(1)), int(head.group(2)), order if len(order) <= _MAX_RING else None


def parse_message(
    log: NcclLog,
    number: int,
    level: str,
    msg: str,
    seen_lists: set[tuple[IbDevice, ...]],
    host: str | None = None,
) -> bool:
    """Record what one message says; returns True when it is a known NCCL message.

    A WARN is kept whatever it says. The version line comes first, then a missing
    libibverbs is noted (the message may still be another form), then the first of
    ``_MESSAGE_FORMS`` whose handler takes the message; a message none takes may carry
    ``_COUNTS`` (looked for in unprefixed text only on lines shaped like NCCL's own).
    """
    if level == "WARN":
        log.warnings.append(Message(number, msg))
    if not level and msg.startswith(("#", "```")):
        # Comments and fences around a paste (and the sample files' own header lines).
        return False
    version = _search_near(_VERSION, msg, _VERSION_ANCHORS) if "NCCL version" in msg else None
    if version and (level or msg.startswith("NCCL version")):
        log.version = log.version or version.group(1)
        log.cuda = log.cuda or version.group(2)
        return True
    # The lowercase copy is not kept through the forms: a ring list's ranks fill memory.
    known = _libibverbs_missing(msg.lower())
    if known:
        log.ibverbs_missing.append(Message(number, msg))
    line: _Line | None = None
    for find, handle in _FORMS_BY_INITIAL.get(msg[:1], _FORMS_ANY_INITIAL):
        match = find(msg)
        if match:
            line = line or _Line(log, number, level, msg, host, seen_lists)
            if handle(line, match):
                return True
    if not level and not (msg[:1].isdigit() or msg.startswith(("comm ", "ncclCommInit", "NVLS"))):
        # Unprefixed text: count channels and ranks only on lines shaped like NCCL's own.
        return known
    low = msg.lower()
    for find_count, record in _COUNTS:
        match = find_count(msg, low)
        if match:
            line = line or _Line(log, number, level, msg, host, seen_lists)
            record(line, match)
            known = True
    return known
