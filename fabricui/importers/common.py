"""What every importer shares: the error type, input clean-up, format sniffing, the node layout."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricui.errors import FabricError

#: ANSI escape sequences (recent nvidia-smi underlines its header on a TTY).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")

#: PCIe path codes of ``nvidia-smi topo -m`` from nearest to farthest.
PCIE_CODES = ("PIX", "PXB", "PHB", "NODE", "SYS")


class ParseError(FabricError):
    """The input cannot be imported: wrong format, unreadable, or too broken to use.

    Args:
        message: The explanation, on one line.
        title: A short area name shown before the message.
        line: The 1-based input line the problem is on, when it is on one: the message then
            reads ``line N: ...``, and ``located(origin)`` gives ``ORIGIN:N: ...``.
    """

    title = "import"
    line: int | None = None
    """The input line the problem is on, or None."""

    def __init__(self, message: str, title: str | None = None, *, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message, title)
        self.line = line
        self.detail = message
        """The message without its line."""

    def located(self, origin: str) -> str:
        """The message for a file: ``ORIGIN:LINE: ...``, or ``ORIGIN: ...`` without a line."""
        if self.line:
            return f"{origin}:{self.line}: {self.detail}"
        return f"{origin}: {self.message}"


def clean_text(text: str) -> str:
    """The text with a BOM, CR line ends and ANSI escapes removed (nothing else is touched).

    Args:
        text: Raw input as read.

    Returns:
        The same text, safe to split into lines.
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _ANSI.sub("", text)


def _split_number(label: str) -> tuple[str, int] | None:
    """``NIC12`` -> ("NIC", 12); None without trailing digits (or with absurdly many)."""
    stem = label.rstrip("0123456789")
    digits = label[len(stem) :]
    if not digits or len(digits) > 9:
        return None
    return stem, int(digits)


def span(labels: list[str]) -> str:
    """Name labels briefly: runs of 3+ consecutive numbers become ``GPU4..GPU15``.

    Args:
        labels: Labels such as ``["NIC0", "NIC1", "NIC2", "NIC7"]``.

    Returns:
        A short text naming them all (``NIC0..NIC2, NIC7``).
    """
    parts: list[str] = []
    run: list[str] = []
    last: tuple[str, int] | None = None

    def flush() -> None:
        if len(run) >= 3:
            parts.append(f"{run[0]}..{run[-1]}")
        else:
            parts.extend(run)
        run.clear()

    for label in labels:
        key = _split_number(label)
        if not (key and last and key[0] == last[0] and key[1] == last[1] + 1):
            flush()
        run.append(label)
        last = key
    flush()
    return ", ".join(parts)


#: Most GPUs one node's spec may have: every server and tray has far fewer (an NVL72
#: rack is 18 hosts of 4); a larger "node" is a whole cluster pasted as one.
MAX_NODE_GPUS = 1024

#: Most 32-bit words an affinity mask may have (8192 CPUs).
MAX_MASK_WORDS = 256


def cpu_list_from_mask(mask: str) -> str | None:
    """Turn an NCCL/Linux affinity mask (``0000ffff,ffffffff``) into a CPU list (``0-47``).

    Args:
        mask: Comma-separated 32-bit hex words, most significant first.

    Returns:
        The CPU list, ``""`` for an empty mask, or None when ``mask`` is not a hex mask (or
        has more than ``MAX_MASK_WORDS`` words).
    """
    words = mask.strip().split(",")
    if not mask.strip() or len(words) > MAX_MASK_WORDS:
        return None
    if not all(re.fullmatch(r"[0-9a-fA-F]{1,8}", w) for w in words):
        return None
    # Bit 0 (CPU 0) first; runs of 1s are the CPU ranges.
    bits = "".join(f"{int(word, 16):032b}" for word in words)[::-1]
    ranges = [
        str(m.start()) if m.end() - m.start() == 1 else f"{m.start()}-{m.end() - 1}"
        for m in re.finditer("1+", bits)
    ]
    return ",".join(ranges)


#: (regex on a product name, catalog GPU id or None when the catalog has no such part).
_GPU_NAMES: tuple[tuple[str, str | None], ...] = (
    (r"GB200", "gb200"),
    (r"GH200", "gh200"),
    (r"B300", "b300"),
    (r"B200", "b200"),
    (r"H200", "h200-sxm"),
    (r"H100\s*(?:PCIe|NVL)|H800", None),
    (r"H100", "h100-sxm"),
    (r"A100[- ]SXM4?[- ]80\s*GB|A100[- ]SXM4?[- ]80G", "a100-sxm4-80gb"),
    (r"A100[- ]SXM4?[- ]40\s*GB|A100[- ]SXM4?[- ]40G|A100[- ]SXM4?\b", "a100-sxm4-40gb"),
    (r"A100[- ]PCIE[- ]40\s*GB|A100[- ]PCIE\b", "a100-pcie-40gb"),
    (r"A100", None),
    (r"V100[- ]SXM2", "v100-sxm2"),
    (r"A10G|\bA10\b", "a10"),
    (r"L40S", "l40s"),
    (r"\bL4\b", "l4"),
    (r"\bT4\b", "t4"),
    (r"RTX\s*4090", "rtx-4090"),
    (r"RTX\s*5090", "rtx-5090"),
    (r"2080\s*Ti", "rtx-2080ti"),
    (r"MI355X", "mi355x"),
    (r"MI325X", "mi325x"),
    (r"MI300X", "mi300x"),
    (r"MI250X?", "mi250x"),
)


def gpu_id_from_name(name: str) -> tuple[bool, str | None]:
    """Map a product name (``NVIDIA H100 80GB HBM3``) to a catalog GPU id.

    Args:
        name: The name as printed by ``nvidia-smi -L``, collect_env and the like.

    Returns:
        (recognised, id): ``(True, "h100-sxm")``; ``(True, None)`` for a known part the
        catalog lacks (``H100 PCIe``); ``(False, None)`` for an unknown name.
    """
    for pattern, gpu_id in _GPU_NAMES:
        if re.search(pattern, name, re.IGNORECASE):
            return True, gpu_id
    return False, None


#: A row of a ``nvidia-smi topo -m`` matrix (multiline; linear on any input).
TOPO_M_ROW = r"(?m)^[ \t|]*GPU\d+[ \t|]+(?:X|NV\d+|SYS|SOC|NODE|PHB|PXB|PIX)\b"
#: A ``topo -m`` row with a path code no ``topo -p2p`` matrix has (``GPU0 X NV18``,
#: ``GPU1 PHB X``): a file holding both matrices is read for the ``topo -m`` one.
TOPO_M_PATH_ROW = r"(?m)^[ \t|]*GPU\d+[ \t|]+(?:X[ \t|]+)?(?:NV\d+|SYS|SOC|NODE|PHB|PXB|PIX)\b"
#: What ``sniff`` calls a ``topo -p2p`` matrix.
P2P_MATRIX = "a `nvidia-smi topo -p2p` matrix (P2P capability)"

#: How ``detect`` begins its refusal of a text no pattern recognises (callers that read
#: one kind of output replace the advice after it with their own).
UNRECOGNISED = "cannot tell which tool printed this"

#: State, counter and Slurm outputs: (pattern, what it is, importer). Lines are matched
#: with ``[ \t]`` for blanks (see ``_LOOKS``) and bounded repeats, so rejecting a paste of
#: blank lines stays linear.
HEALTH_LOOKS: tuple[tuple[str, str, str], ...] = (
    (
        r"(?m)^[ \t]*\[[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]+\d{4}[ \t]+\d{1,2}:\d\d:\d\d\][ \t]*"
        r"\[(?:INFO|ERROR|WARNING|WARN|FATAL|DEBUG)\]",
        "a Fabric Manager log",
        "fabric-manager",
    ),
    (
        r"(?m)^[ \t]*Operational Info[ \t]*$|\bmlxlink[ \t]+-d[ \t]",
        "`mlxlink` output",
        "mlxlink",
    ),
    (
        r"(?m)^#[ \t]*[\w ]{1,40}counters:[ \t]+Lid[ \t]+\d|^[ \t]*PortSelect:\.{3}",
        "`perfquery` output",
        "perfquery",
    ),
    (
        r"(?m)^[ \t]*Fabric Summary[ \t]*$|^[ \t]*-[IWE]-[ \t]",
        "an `ibdiagnet` summary",
        "ibdiagnet",
    ),
    (
        r"(?m)^[ \t]*(?:part number|serial number|PSID|PSU\d{1,2} status)[ \t]*\|",
        "`ibswinfo` output",
        "ibswinfo",
    ),
    (
        r"(?m)NvLink Link Status|NVLINK Error Counts|"
        r"^[ \t]*(?:gpuId|physicalId)[ \t]+\d{1,6}:[ \t]*$|"
        r"^[ \t]*Link[ \t]+\d{1,3}:[ \t]+(?:<inactive>|Remote Device|Data [TR]x|Raw [TR]x|"
        r"Replay Errors|Recovery Errors|CRC Errors)",
        "`nvidia-smi nvlink` or `dcgmi nvlink` output",
        "nvlink",
    ),
    (
        r"(?m)^[ \t]*\+[-=]{2,80}[ \t]+(?:Deployment|Integration|Hardware|Stress|Metadata)"
        r"[ \t]+[-=]{2,80}\+|"
        r"^[ \t]*\|[ \t]*(?:Diagnostic|Blacklist|Denylist|NVML Library|CUDA Main Library|"
        r"Permissions and OS Blocks|Persistence Mode|Environment Variables|Page Retirement|"
        r"Graphics Processes|Inforom|PCIe|GPU Memory|Memory Bandwidth|Targeted Stress|"
        r"Targeted Power|SM Stress)[ \t]*\|[ \t]*(?:Pass|Fail|Warn|Skip)",
        "`dcgmi diag` output",
        "dcgmi-diag",
    ),
    (
        r"(?m)^[ \t]*(?:\d{1,6}:[ \t]*)?link[ \t]+[\w.-]{1,64}/\d{1,5}[ \t]+"
        r"[^\n]{0,400}\bstate[ \t]",
        "`rdma link` output",
        "rdma-link",
    ),
    (
        r"(?m)^[ \t]*DEV[ \t]+PORT[ \t]+INDEX[ \t]+GID\b|n_gids_found[ \t]*=",
        "`show_gids` output",
        "show-gids",
    ),
    (r"(?m)^[ \t]*NIC statistics:[ \t]*$", "`ethtool -S` output", "ethtool"),
    (r"(?m)^[ \t]*Infiniband device '[^'\n]{1,64}' port \d", "`ibstatus` output", "ibstat"),
    (r"(?m)^[ \t]*JobId=\d", "`scontrol show job` output", "scontrol-job"),
    (
        r"(?m)^[ \t]*NodeName=\S{1,253}[ \t]+(?:Arch|CoresPerSocket|State)=",
        "`scontrol show node` output",
        "scontrol-node",
    ),
    (
        r"(?m)^[ \t]*JobID(?:Raw)?(?:[ \t]+|\|)[^\n]{0,400}\bState\b",
        "`sacct` output",
        "sacct",
    ),
    (
        r"(?m)^[ \t]*JOBID[ \t]+[^\n]{0,200}\b(?:ST|STATE)\b",
        "`squeue` output",
        "squeue",
    ),
    (
        r"(?m)^[ \t]*(?:PARTITION|NODELIST|HOSTNAMES)[ \t]+[^\n]{0,300}\bSTATE\b",
        "`sinfo` output",
        "sinfo",
    ),
)

#: (what the text looks like, the importer that reads it or None) for ``sniff``.
_LOOKS: tuple[tuple[str, str, str | None], ...] = (
    # Whitespace inside a line is [ \t] and runs of pipes and blanks are one class: with \s
    # (which matches newlines) or "\s*\|?\s*", a paste of blank lines or spaces takes
    # quadratic time or worse to reject.
    (r"(?m)^[ \t]*<!DOCTYPE|<!ENTITY", "an XML document with a DOCTYPE/ENTITY declaration", None),
    (r"(?m)^\d+(?:,\d+)?[acd]\d+(?:,\d+)?[ \t]*$", "a `diff` of two files", None),
    (r"(?m)^@@ -\d+(?:,\d+)? \+\d+", "a unified `diff` of two files", None),
    (r"<system\b|<cpu\b[^>]{0,400}numaid|<pci[ \t]+busid", "NCCL topology XML", "nccl-xml"),
    (r"NCCL (?:INFO|WARN)\b", "an NCCL_DEBUG log (read it with the doctor)", None),
    (
        r'(?m)^[ \t#]*(?:Switch|Ca)[ \t]+\d{1,5}[ \t]+"[SH]-[0-9A-Fa-f]',
        "`ibnetdiscover` output",
        "ibnetdiscover",
    ),
    (
        r"(?m)^[ \t]*(?:SW|CA)[ \t]+\d{1,6}[ \t]+\d{1,5}[ \t]+0x[0-9A-Fa-f]{1,32}"
        r"[ \t]+\d{1,2}x[ \t]",
        "`ibnetdiscover -p` output",
        "ibnetdiscover",
    ),
    # ibqueryerrors -r prints iblinkinfo-style Link info lines: read it first.
    (
        r'(?m)^[ \t]*Errors[ \t]+for[ \t]+(?:0x[0-9A-Fa-f]{1,16}[ \t]+)?"|'
        r"^##[ \t]+Summary:[ \t]+\d{1,9}[ \t]+nodes",
        "`ibqueryerrors` output",
        "ibqueryerrors",
    ),
    (r"==\([^)\n]{0,80}\)==(?:>|&gt;)", "`iblinkinfo` output", "iblinkinfo"),
    (
        r"(?im)^[ \t#]*(?:SwitchName|BlockName)=|^-[ \t]*topology[ \t]*:",
        "a Slurm topology.conf or `scontrol show topology`",
        "slurm-topology",
    ),
    (
        r"(?m)=NVSMI LOG=|^[ \t]*Fabric[ \t]*\n[ \t]+State[ \t]+:",
        "`nvidia-smi -q` output",
        "nvidia-smi-q",
    ),
    (
        r"(?m)^[ \t]*Link \d{1,3}: (?:[\d.]{1,10} GB/s|<inactive>)",
        "`nvidia-smi nvlink --status` output (per-link rates, not a topology)",
        "nvlink",
    ),
    (
        r"(?m)^[ \t]*(?:Switch|Ca)[ \t]*:[ \t]*0x[0-9A-Fa-f]{1,32}[ \t]+ports[ \t]+\d",
        "`ibswitches`/`ibhosts` output (nodes without their cables: run `ibnetdiscover`)",
        None,
    ),
    (
        r"(?m)(?:^|,)#?(?:Fields:)?StartDevice,StartPort,",
        "a UFM NDT cabling plan (planned cables, not discovered ones)",
        None,
    ),
    (
        r'"NetworkNodes"[ \t]*:',
        "`aws ec2 describe-instance-topology` JSON (network node ids, no switches or cables)",
        None,
    ),
    (r'"compounded_links"|"DomainUUID"', "a NetQ / NMX JSON export", None),
    (
        r"(?m)^[ \t]*H-[0-9A-Fa-f]{16}[ \t]+\S+[ \t]*$",
        "a GUID-to-hostname map (a companion file, not a topology)",
        None,
    ),
    (
        r"(?m)^[ \t]*[\w.-]{1,80}:[ \t]*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-",
        "a host-to-ClusterUUID map (a companion file, not a topology)",
        None,
    ),
    (
        r"(?m)^[ \t]*S-[0-9A-Fa-f]{16}[ \t]*$",
        "a list of switch GUIDs (a companion file, not a topology)",
        None,
    ),
    *HEALTH_LOOKS,
    (r"(?m)^[ \t]*CA '[^'\n]+'[ \t]*$", "`ibstat` output", "ibstat"),
    (r"(?m)^[ \t]*hca_id:", "`ibv_devinfo` output", "ibstat"),
    (r"(?m)^[ \t]*\S+[ \t]+port[ \t]+\d+[ \t]+==>", "`ibdev2netdev` output", "ibstat"),
    (
        r"(?m)ROCm System Management Interface|between two GPUs|^[ \t]*GPU\[\d+\][ \t]*:",
        "`rocm-smi --showtopo` output",
        "rocm-smi",
    ),
    (TOPO_M_PATH_ROW, "`nvidia-smi topo -m` output", "nvidia-smi"),
    (
        r"(?m)^[ \t|]*GPU\d+[ \t|]+(?:X|OK|NS|CNS|GNS|TNS|DR|U)[ \t|]+(?:OK|NS|CNS|GNS|TNS|DR|U)\b",
        P2P_MATRIX,
        None,
    ),
    (TOPO_M_ROW, "`nvidia-smi topo -m` output", "nvidia-smi"),
    (r"NVIDIA-SMI \d", "the `nvidia-smi` status table (not `nvidia-smi topo -m`)", None),
    (r"(?m)^[ \t]*GPU\d+[ \t]+0[ \t]+\d+[ \t]", "a `rocm-smi --showtopo` matrix", "rocm-smi"),
)


def sniff(text: str) -> tuple[str, str | None] | None:
    """What ``text`` looks like, for a "wrong format" message.

    Args:
        text: Cleaned input.

    Returns:
        (description, importer name or None), or None when nothing is recognised.
    """
    for pattern, what, importer in _LOOKS:
        if re.search(pattern, text):
            return what, importer
    return None


def detect(text: str) -> str:
    """The importer that reads ``text`` (``fabricui import FILE`` without a format).

    Args:
        text: Cleaned input.

    Returns:
        The importer's format name.

    Raises:
        ParseError: Nothing recognised, or something no importer reads (the message says
            what it looks like).
    """
    looks = sniff(text.replace("\xa0", " "))
    if looks is None:
        raise ParseError(
            f"{UNRECOGNISED}: give the format, e.g. "
            "`fabricui import ibstat FILE` (`fabricui import --help` lists them)"
        )
    what, importer = looks
    if importer is None:
        # A topo -m matrix this did not recognise may be there too: the importer finds it.
        hint = (
            "; if it also holds a `nvidia-smi topo -m` matrix, name the format: "
            "`fabricui import nvidia-smi FILE`"
        )
        raise ParseError(
            f"this looks like {what}, which no importer reads{hint if what == P2P_MATRIX else ''}"
        )
    return importer


def wrong_format(text: str, expected: str, fmt: str) -> ParseError:
    """The error for input that is not ``expected``, naming what it looks like when known.

    Args:
        text: Cleaned input.
        expected: What the importer reads (``nvidia-smi topo -m output``).
        fmt: The importer's format name, to avoid suggesting itself.

    Returns:
        A ParseError with a one-line message.
    """
    looks = sniff(text)
    if looks is None:
        return ParseError(f"no {expected} found in the input")
    what, importer = looks
    if importer == fmt:  # it is this format, but no line of it could be read
        return ParseError(f"{what} found, but none of its lines could be read")
    hint = f": use `fabricui import {importer} FILE`" if importer else ""
    return ParseError(f"this looks like {what}, not {expected}{hint}")


@dataclass
class NodeLayout:
    """One node as an importer saw it, in the terms ``spec.build_spec`` maps to a topology.

    GPU pairs and GPU-NIC pairs carry ``nvidia-smi topo -m`` codes: ``NV<k>`` (k bonded
    NVLinks), ``XGMI``, or a PCIe path ``PIX`` < ``PXB`` < ``PHB`` < ``NODE`` < ``SYS``, or
    ``PCIE`` when only "some PCIe path" is known. Missing pairs are unknown.
    """

    source: str
    """Format it came from (``nvidia-smi topo -m``, ``NCCL topology XML``)."""
    gpus: list[str]
    """GPU labels in local order (``GPU0`` ...)."""
    vendor: str = "nvidia"
    """GPU vendor (``nvidia``, ``amd``), for the default GPU guess."""
    nics: list[str] = field(default_factory=list)
    """NIC (port) names in input order (``mlx5_0`` ..., or ``NIC3`` when unnamed)."""
    gpu_links: dict[tuple[int, int], str] = field(default_factory=dict)
    """(i, j) with i < j -> code of the GPU-GPU path."""
    nic_paths: dict[tuple[int, int], str] = field(default_factory=dict)
    """(gpu index, nic index) -> PCIe path code."""
    numa: list[int | None] = field(default_factory=list)
    """NUMA node of each GPU, when known (single node only)."""
    cpu_affinity: list[str | None] = field(default_factory=list)
    """CPU list of each GPU, when known."""
    gpu_model: str | None = None
    """Catalog GPU id, when the input names or identifies the part."""
    gpu_model_reason: str = ""
    """Where ``gpu_model`` came from, for the YAML description."""
    nvswitch: bool | None = None
    """True: NVLinks go to NVSwitches; False: GPU-to-GPU links; None: unknown (infer)."""
    pcie_switches: int | None = None
    """PCIe switches holding the GPUs, when the input shows them (NCCL XML)."""
    net_link: str | None = None
    """Network link generation id suggested by the input (``ib-hdr``, ``efa``)."""
    net_gbps: float | None = None
    """Per-port rate [Gb/s] suggested by the input."""
    net_reason: str = ""
    """What ``net_link``/``net_gbps`` were read from."""
    gaps: list[str] = field(default_factory=list)
    """Warnings of the parse that bear on the spec (copied into the YAML)."""


def component_labels(count: int, a: Iterable[int], b: Iterable[int]) -> list[int]:
    """Connected component of each of ``count`` items joined by the pairs ``a[i]-b[i]``,
    labelled by its smallest member (union-find)."""
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for x, y in zip(a, b):
        rx, ry = root(int(x)), root(int(y))
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return [root(i) for i in range(count)]
