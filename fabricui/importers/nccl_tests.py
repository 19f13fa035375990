"""nccl-tests results, the input of ``fabricui calibrate`` and of the accuracy benchmark.

Results come in two shapes. The nccl-tests stdout table (any op, out-of-place columns are
used; comments, ``# Using devices`` rank lines, launcher prefixes such as ``[1,0]<stdout>:``
and interleaved ``NCCL INFO`` lines are understood), or the shared measurements YAML (a list
of entries whose ``rows`` are ``[size_bytes, time_us, algbw_GBps, busbw_GBps]``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.bounds import BYTES, OPERATION_TIME_US
from fabricui.errors import FabricError, HwdbError
from fabricui.files import read_bounded
from fabricui.hwdb.schema import FieldError, show
from fabricui.hwdb.topology_file import read_stated
from fabricui.hwdb.yamlfile import YamlDocument, format_path, parse_yaml
from fabricui.importers.reading import UTF16_BOMS
from fabricui.vocabulary import OPS

if TYPE_CHECKING:
    from fabricui.hwdb.tables import Catalog

#: nccl-tests binary stems and the collective each runs (``alltoall_perf`` -> all_to_all).
NCCL_TESTS_OPS = {
    "all_reduce": "all_reduce",
    "allreduce": "all_reduce",
    "all_gather": "all_gather",
    "allgather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "all_to_all": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "send_recv": "send_recv",
}


class ResultsError(FabricError):
    """A results file cannot be read as nccl-tests output or measurements."""

    title = "calibrate"


@dataclass(frozen=True)
class ResultRow:
    """One size of one run (out-of-place figures)."""

    size_bytes: int
    """Size as nccl-tests prints it [bytes]."""
    time_us: float
    """Time [us]; derived from algbw (or busbw) when the source gives no time."""
    algbw_GBps: float | None
    """Algorithm bandwidth [GB/s], if given."""
    busbw_GBps: float | None
    """Bus bandwidth [GB/s], if given."""
    line: int | None = None
    """1-based line in the file."""


@dataclass(frozen=True)
class EntryNode:
    """A node of a measurements entry as its ``hardware`` block describes it: what tells
    whether its GPUs talk over the same intra-node links as a topology's nodes."""

    gpus_per_node: int | None
    """GPUs in each node (``hardware.gpus_per_node``), None when the entry does not say."""
    fabric: str | None
    """Intra-node fabric (``hardware.intra.fabric``: ``nvswitch``, ``mesh``, ``pcie``);
    ``none`` for one GPU per node (``intra: null``); None when the entry does not say."""
    link: str | None = None
    """Link generation id of the intra-node links (``hardware.intra.link``, ``nvlink4``)."""
    links_per_pair: int = 1
    """Mesh only: links between every GPU pair (``hardware.intra.links_per_pair``)."""
    p2p: bool = True
    """PCIe only: False when peer traffic is staged through host memory."""
    hosts_per_domain: int = 1
    """Hosts that share one scale-up domain (``hardware.intra.hosts_per_domain``, as a
    topology spec says it: 18 trays of a GB200 NVL72 rack); 1, the spec's default, when the
    entry does not say: each host its own domain."""


@dataclass(frozen=True)
class ResultRun:
    """One nccl-tests table, or one measurements entry."""

    source: str
    """``file:line`` of the table, or ``file#entry-id``."""
    op: str | None
    """Collective (``fabricui.engine.types.OPS``), None when the file does not say."""
    rows: tuple[ResultRow, ...]
    """Rows in file order."""
    nranks: int | None = None
    """Ranks of the run (rank lines, the entry's ``nranks``, or busbw/algbw)."""
    nodes: int | None = None
    """Distinct hosts of the rank lines, or the entry's ``hardware.nodes``."""
    single_process: bool = False
    """One thread drove several GPUs (``nGpus`` > 1): it issues every call on each of them
    in turn. Threads (``nThread`` > 1, ``-g 1``) issue their GPUs' calls side by side."""
    gpus_per_thread: int | None = None
    """GPUs each thread drove (``nGpus``) when ``single_process``; None: every GPU of its
    node (a measurements entry launched ``single-process``), or one process per GPU."""
    env: dict[str, str] = field(default_factory=dict)
    """NCCL settings that change the algorithm (measurements ``env``)."""
    gpu: str | None = None
    """GPU name of the rank lines (``NVIDIA H100 80GB HBM3``)."""
    hosts: tuple[tuple[str, int], ...] = ()
    """(host, ranks on it) of the rank lines, hosts in order of their first rank."""
    rank_devices: tuple[tuple[str, int], ...] = ()
    """(host, device) of each rank of the rank lines, in rank order; the device is the GPU's
    index among those its process saw (0 for every rank when each process saw one)."""
    entry_id: str | None = None
    """Measurements entry id."""
    hardware_gpu: str | None = None
    """GPU id the measurements entry ran on (``hardware.gpu``, ``h100-sxm``)."""
    hardware_net: str | None = None
    """Network link id of the measurements entry (``hardware.net.link``, ``ib-ndr``);
    None when it names none (one node)."""
    hardware_node: EntryNode | None = None
    """The measurements entry's node (GPUs per node, intra-node fabric); None for an
    nccl-tests output, or an entry without a ``hardware`` block."""
    quality: str | None = None
    """Measurements entry quality (``reference``, ``degraded``, ``ambiguous``)."""
    dropped: tuple[DroppedRow, ...] = ()
    """Rows left out because their figures are impossible (NaN, negative)."""

    @property
    def launched(self) -> str | None:
        """How the run was launched when one thread drove several GPUs (``each thread
        drove 8 GPUs``), else None: the words the view and its report show."""
        if not self.single_process:
            return None
        if self.gpus_per_thread:
            return f"each thread drove {self.gpus_per_thread} GPUs"
        return "one process drove every GPU of its node"

    @property
    def sizes(self) -> list[int]:
        """Its distinct sizes, ascending [bytes]: the sizes to predict it at."""
        return sorted({int(r.size_bytes) for r in self.rows})


@dataclass(frozen=True)
class DroppedRow:
    """A result row left out of the fit, and why."""

    line: int
    """1-based line in the file."""
    why: str
    """``a NaN or infinite time``, ``a negative time`` ..."""


def dropped_summary(origin: str, dropped: Sequence[DroppedRow]) -> str:
    """One line: ``FILE: dropped 3 rows: 2 with a NaN or infinite time (lines 14, 15), 1
    with a negative time (line 20)``."""
    by_why: dict[str, list[int]] = {}
    for row in dropped:
        by_why.setdefault(row.why, []).append(row.line)
    parts = []
    for why, lines in by_why.items():
        shown = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
        parts.append(f"{len(lines)} with {why} (line{'s' * (len(lines) > 1)} {shown})")
    count = len(dropped)
    return f"{origin}: dropped {count} row{'s' * (count != 1)}: {', '.join(parts)}"


# --- nccl-tests output ---------------------------------------------------------------------

_PREFIX = re.compile(
    r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\[\d+\]\s|\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\s+)"
)
_OP_NAME = re.compile(
    r"\b(all_reduce|allreduce|all_gather|allgather|reduce_scatter|reducescatter|alltoall|"
    r"all_to_all|broadcast|reduce|sendrecv|send_recv)_perf(?:_mpi)?\b"
)
_FILE_OP = re.compile(
    r"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|send_?recv|reduce)",
    re.IGNORECASE,
)
_THREADS = re.compile(r"^nThread\s+(\d{1,9})\s+nGpus\s+(\d{1,9})")
_RANK = re.compile(
    r"^Rank\s+(\d{1,9})\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\S+\s*(.*)$"
)
_INT = re.compile(r"^-?\d+$")
#: A message size: ASCII digits, at most 18 (``int`` reads it exactly, any Python).
_SIZE = re.compile(r"[0-9]{1,18}")
#: Largest results file read [bytes]; nccl-tests outputs and measurement files are kilobytes.
MAX_RESULTS_BYTES = 16 * 2**20
#: Most ranks a measurement entry may state.
MAX_RANKS = 2**24
_ENV_LINE = re.compile(r"NCCL INFO (NCCL_\w+) set by environment to (\S+?)\.?$")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _float(text: str) -> float | None:
    """``text`` as a float, NaN and infinity included (they are figures, if impossible
    ones), or None for a word (``N/A``)."""
    try:
        return float(text)
    except ValueError:
        return None


def op_from_name(text: str, bare: bool = False) -> str | None:
    """The collective an nccl-tests binary name in ``text`` runs (``alltoall_perf``).

    Args:
        text: A command line, a ``Collective test starting`` line or a file name.
        bare: Also accept a bare op name (``allreduce.txt``), for file names.

    Returns:
        An ``OPS`` name, or None.
    """
    match = _OP_NAME.search(text)
    if match:
        return NCCL_TESTS_OPS[match.group(1)]
    if bare:
        word = _FILE_OP.search(text)
        if word:
            return NCCL_TESTS_OPS.get(word.group(1).lower().replace("_", ""))
    return None


def _nranks_from_factor(op: str | None, rows: Sequence[ResultRow]) -> int | None:
    """Ranks implied by busbw / algbw of the largest row (nccl-tests' bus factor)."""
    usable = [r for r in rows if r.algbw_GBps and r.busbw_GBps and r.algbw_GBps >= 1.0]
    if not usable or op is None:
        return None
    row = max(usable, key=lambda r: r.size_bytes)
    factor = row.busbw_GBps / row.algbw_GBps  # type: ignore[operator]
    if op == "all_reduce" and factor < 1.98:
        n = 2.0 / (2.0 - factor)
    elif op in ("all_gather", "reduce_scatter", "all_to_all") and factor < 0.99:
        n = 1.0 / (1.0 - factor)
    else:
        return None
    return max(1, round(n))


class _Table:
    """A run being read."""

    def __init__(self, op: str | None) -> None:
        self.op = op
        self.header: list[str] | None = None
        self.rows: list[ResultRow] = []
        self.ranks: dict[int, str] = {}
        self.devices: dict[int, int] = {}
        self.gpu: str | None = None
        self.gpus = 1
        self.first_line: int | None = None
        self.env: dict[str, str] = {}
        self.dropped: list[DroppedRow] = []
        self.last_size: int | None = None
        self.header_line: int | None = None
        """Line of this run's column header (``size count type ...``), when it printed one."""

    def row(self, tokens: list[str], number: int) -> bool:
        """Add a data row, or ignore a line that only looks like one (errors, N/A).

        Returns:
            False when the row's size is not above the previous row's: nccl-tests sizes
            only grow within a run, so it begins another run (two outputs pasted under one
            header); the row is then not taken.
        """
        if len(tokens) < 4 or not _SIZE.fullmatch(tokens[0]):
            return True
        index = self._time_index(tokens)
        if index is None or index + 2 >= len(tokens):
            return True
        if _float(tokens[index]) is None:  # out-of-place figures N/A: the in-place ones
            index = self._in_place_index(tokens, index)
            if index is None:
                return True
        texts = tokens[index : index + 3]
        time, algbw, busbw = (_number(t) for t in texts)
        size = int(tokens[0])
        why = _impossible(size, texts)
        if size <= 0 or (why is None and (time is None or algbw is None or busbw is None)):
            return True  # words where the figures go: a line that only looks like a row
        if self.last_size is not None and size <= self.last_size:
            return False
        self.last_size = size
        why = why or self._wrong(tokens, index)
        if why is not None or time is None:
            self.dropped.append(DroppedRow(number, why or "no time"))
            self.first_line = self.first_line or number
            return True
        self.rows.append(ResultRow(size, time, algbw, busbw, number))
        if self.first_line is None:
            self.first_line = number
        return True

    def _in_place_index(self, tokens: list[str], index: int) -> int | None:
        """Column of the in-place time, for a row whose out-of-place figures are N/A."""
        if self.header and self.header.count("time") > 1:
            second = self.header.index("time", self.header.index("time") + 1)
            shift = second - self.header.index("time")
        else:
            shift = 4  # time algbw busbw #wrong, then the in-place time
        found = index + shift
        return found if found + 2 < len(tokens) and _float(tokens[found]) is not None else None

    def _wrong(self, tokens: list[str], index: int) -> str | None:
        """``wrong results`` when the row's ``#wrong`` count (of the figures at ``index``)
        is above 0: its collective computed wrong data, so its time is no measure of the
        fabric. The old ``error`` column (a float, the largest rounding error) is no count."""
        if self.header:
            at = self.header.index("time") + 3
            if at >= len(self.header) or self.header[at] != "wrong":
                return None
        if index + 3 >= len(tokens) or not _INT.match(tokens[index + 3]):
            return None
        count = int(tokens[index + 3])
        return "wrong results (#wrong above 0)" if count > 0 else None

    def successor(self) -> _Table:
        """A table for the next run under the same header, rank lines and settings."""
        table = _Table(self.op)
        table.header, table.ranks, table.gpu = self.header, dict(self.ranks), self.gpu
        table.devices = dict(self.devices)
        table.gpus, table.env = self.gpus, dict(self.env)
        return table

    def _time_index(self, tokens: list[str]) -> int | None:
        """Column of the out-of-place time: from the header line, else by shape."""
        if self.header and "time" in self.header:
            index = self.header.index("time")
            if len(tokens) >= index + 3:
                return index
        # No header: size [count] [type] [redop] [root] time algbw busbw wrong [in-place x4].
        index = 2 if len(tokens) > 2 and _INT.match(tokens[1]) else 1
        while index < len(tokens) and _number(tokens[index]) is None:
            index += 1
        if index < len(tokens) and _INT.match(tokens[index]) and len(tokens) - index in (5, 9):
            index += 1  # the root column (-1)
        return index if index < len(tokens) else None

    @property
    def begun(self) -> bool:
        """Whether this run printed its table: a row, or at least its column header (a
        run that crashed before its first size still is a table of the output)."""
        return bool(self.rows or self.dropped or self.header_line)

    def finish(self, origin: str) -> ResultRun | None:
        """The run read, or None when it printed no table; a table of its header alone is
        a run without rows or dropped rows, its source the header's line."""
        if not self.begun:
            return None
        hosts = Counter(self.ranks[rank] for rank in sorted(self.ranks))
        nranks = len(self.ranks) or _nranks_from_factor(self.op, self.rows)
        return ResultRun(
            source=f"{origin}:{self.first_line or self.header_line}",
            op=self.op,
            rows=tuple(self.rows),
            nranks=nranks,
            nodes=len(hosts) or None,
            single_process=self.gpus > 1,
            gpus_per_thread=self.gpus if self.gpus > 1 else None,
            env=dict(self.env),
            gpu=self.gpu,
            hosts=tuple(hosts.items()),
            rank_devices=tuple((self.ranks[r], self.devices[r]) for r in sorted(self.ranks)),
            dropped=tuple(self.dropped),
        )


def _impossible(size: int, texts: list[str]) -> str | None:
    """Why a row whose time and bandwidths are numbers cannot be a measurement, or None
    (also None when they are not numbers at all: a line that only looks like a row)."""
    try:
        time, algbw, busbw = (float(t) for t in texts)
    except ValueError:
        return None
    if not math.isfinite(time):
        return "a NaN or infinite time"
    if time < 0:
        return "a negative time"
    if time == 0:
        return "a zero time"
    if not (math.isfinite(algbw) and math.isfinite(busbw)):
        return "a NaN or infinite bandwidth"
    if algbw < 0 or busbw < 0:
        return "a negative bandwidth"
    if size > BYTES.high:
        return f"a size over {BYTES.why.removeprefix('up to ')}"
    if not OPERATION_TIME_US.holds(time):
        low = time < OPERATION_TIME_US.low
        return "a time under a nanosecond" if low else "a time over 30 years"
    return None


def assume_op(run: ResultRun, op: str | None) -> ResultRun:
    """``run`` taken as a run of ``op`` when its output names no collective, with the
    ranks its bus factor then implies; a run that names its own is returned as is."""
    if run.op is not None or op is None:
        return run
    return dataclasses.replace(run, op=op, nranks=run.nranks or _nranks_from_factor(op, run.rows))


def _named_op(named: str | None, given: str | None, origin: str, number: int) -> str | None:
    """The op a line of the output names, checked against ``--op``: ``--op`` only says
    what files that do not name their collective ran, it never relabels one that does.

    Raises:
        ResultsError: The output names another collective than ``given``.
    """
    if named is not None and given is not None and named != given:
        raise ResultsError(
            f"{origin}:{number}: the output ran {named}, --op says {given} (drop --op: it "
            "names the collective of files that do not)"
        )
    return given or named


def parse_nccl_tests(
    text: str, origin: str, op: str | None = None, header_only: bool = False
) -> list[ResultRun]:
    """Read the tables of an nccl-tests output.

    Args:
        text: The output (one or several runs, with any comment and log lines).
        origin: File name for messages.
        op: Collective of every run (``--op``); default: the ``Collective test starting``
            line, the binary name on a command line, or the file name.
        header_only: Also the tables of a run that stopped after its column header (no
            row at all), so that runs are numbered as the file shows them.

    Returns:
        One run per table with at least one row, valid or dropped (and, with
        ``header_only``, per table of a header alone: no rows, no dropped rows).

    Raises:
        ResultsError: The output names another collective than ``op``.
    """
    runs: list[ResultRun] = []
    file_op = op or op_from_name(Path(origin).name, bare=True)
    table = _Table(op)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        pos = 0
        while (match := _PREFIX.match(line, pos)) and match.end() > pos:
            pos = match.end()
        stripped = line[pos:].strip()
        if " NCCL INFO " in f" {stripped} ":
            setting = _ENV_LINE.search(stripped)
            if setting:
                table.env[setting.group(1)] = setting.group(2)
            continue
        if not stripped or "NCCL WARN" in stripped:
            continue
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            starting = body.startswith("Collective test starting")
            threads = _THREADS.match(body)
            if (starting or threads) and table.begun:
                run = table.finish(origin)
                if run is not None:
                    runs.append(run)
                table = _Table(op)
            if starting:
                table.op = _named_op(op_from_name(body), op, origin, number) or table.op
            if threads:
                table.gpus = int(threads.group(2))  # per thread; threads issue side by side
            rank = _RANK.match(body)
            if rank:
                table.ranks[int(rank.group(1))] = rank.group(2)
                table.devices[int(rank.group(1))] = int(rank.group(3))
                table.gpu = table.gpu or (rank.group(4).strip() or None)
            tokens = body.replace("#wrong", "wrong").split()
            if "size" in tokens and "time" in tokens:
                table.header = tokens
                table.header_line = table.header_line or number
            continue
        tokens = stripped.split()
        if _SIZE.fullmatch(tokens[0]):
            if not table.row(tokens, number):  # sizes start over: the next run
                run = table.finish(origin)
                if run is not None:
                    runs.append(run)
                table = table.successor()
                table.row(tokens, number)
        elif not table.rows:
            table.op = _named_op(op_from_name(stripped), op, origin, number) or table.op
    run = table.finish(origin)
    if run is not None:
        runs.append(run)
    if not header_only:
        runs = [r for r in runs if r.rows or r.dropped]
    return [dataclasses.replace(r, op=r.op or file_op) for r in runs]


# --- measurements YAML ---------------------------------------------------------------------


def _measurement_rows(doc: YamlDocument, path: tuple, rows: Any) -> tuple[ResultRow, ...]:
    if not isinstance(rows, list):
        raise HwdbError(f"{doc.where(path)}: {format_path(path)}: expected a list of rows")
    out = []
    for index, row in enumerate(rows):
        where = (*path, index)
        if not isinstance(row, list) or len(row) != 4:
            raise HwdbError(
                f"{doc.where(where)}: {format_path(where)}: expected [size_bytes, time_us, "
                f"algbw_GBps, busbw_GBps] (got {show(row)})"
            )
        size = row[0]
        if isinstance(size, bool) or not isinstance(size, int) or not 0 < size < 2**62:
            raise HwdbError(f"{doc.where(where)}: {format_path(where)}: bad size {show(size)}")
        values: list[float | None] = []
        for value in row[1:]:
            if value is not None and not _finite_number(value):
                raise HwdbError(
                    f"{doc.where(where)}: {format_path(where)}: bad number {show(value)} "
                    "(expected a finite number >= 0, or null)"
                )
            values.append(None if value is None else float(value))
        time, algbw, busbw = values
        out.append(ResultRow(row[0], time or 0.0, algbw, busbw, doc.line_of(where)))
    return tuple(out)


def _scalar(value: Any) -> bool:
    """True for text or a number (what ``str()`` turns into a short name)."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _text_mapping(value: Any) -> dict[str, str]:
    """``{name: value}`` of the scalar items of a mapping (an NCCL environment)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if _scalar(k) and _scalar(v)}


def _finite_number(value: Any) -> bool:
    """True for an int or float that is finite, >= 0 and at most 1e30."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return 0 <= value <= 1e30


def _with_times(rows: Sequence[ResultRow], op: str, nranks: int) -> tuple[ResultRow, ...]:
    """Rows with a time: given, else size / algbw, else size / (busbw / bus factor)."""
    from fabricui.engine.collectives import bus_factor

    out = []
    for row in rows:
        time = row.time_us
        if not time:
            algbw = row.algbw_GBps
            factor = bus_factor(op, nranks)
            if not algbw and row.busbw_GBps and factor > 0:
                algbw = row.busbw_GBps / factor
            time = row.size_bytes / (algbw * 1e3) if algbw else 0.0
        if time and time > 0:
            out.append(dataclasses.replace(row, time_us=time))
    return tuple(out)


def parse_measurements(doc: YamlDocument, catalog: Catalog | None = None) -> list[ResultRun]:
    """Runs of a measurements YAML document (the shared ``measurements.yaml`` format).

    Args:
        doc: The parsed document: a list of entries with ``id``, ``op``, ``nranks``,
            ``hardware``, ``env``, ``launch`` and ``rows``.
        catalog: The hardware database the ``hardware`` blocks' ids must name (``gpu``,
            ``intra.link``, ``net.link``); None: they are not looked up.

    Returns:
        One run per entry.

    Raises:
        HwdbError: An entry lacks a key or has malformed rows, naming file and line; a
            field of its ``hardware`` block is one a topology spec refuses, naming file,
            line, entry id and field.
    """
    if not isinstance(doc.data, list):
        raise HwdbError(f"{doc.where(())}: expected a list of measurement entries")
    runs = []
    for index, entry in enumerate(doc.data):
        path = (index,)
        if not isinstance(entry, dict):
            raise HwdbError(f"{doc.where(path)}: [{index}]: expected a mapping")
        for key in ("id", "op", "rows"):
            if key not in entry:
                raise HwdbError(f"{doc.where(path)}: [{index}]: missing key {key!r}")
        op = entry["op"]
        if op not in OPS:
            raise HwdbError(
                f"{doc.where((*path, 'op'))}: [{index}].op: unknown collective {show(op)}"
            )
        if not _scalar(entry["id"]):
            raise HwdbError(f"{doc.where((*path, 'id'))}: [{index}].id: expected text")
        hardware = _hardware(doc, path, str(entry["id"]), entry.get("hardware"), catalog)
        nodes, per_node = hardware.get("nodes"), hardware.get("gpus_per_node")
        nranks = entry.get("nranks")
        if nranks is None and nodes is not None and per_node is not None:
            nranks = nodes * per_node
        if nranks is not None and (
            isinstance(nranks, bool) or not isinstance(nranks, int) or not 0 < nranks <= MAX_RANKS
        ):
            raise HwdbError(
                f"{doc.where((*path, 'nranks'))}: [{index}].nranks: expected a rank count "
                f"from 1 to {MAX_RANKS} (got {show(nranks)})"
            )
        if nodes is not None and nodes > MAX_RANKS:
            raise HwdbError(
                f"{doc.where((*path, 'hardware', 'nodes'))}: entry {entry['id']}: "
                f"hardware.nodes: expected a node count from 1 to {MAX_RANKS} (got {nodes})"
            )
        rows = _measurement_rows(doc, (*path, "rows"), entry["rows"])
        env = entry.get("env") or {}
        net = hardware.get("net")
        runs.append(
            ResultRun(
                source=f"{doc.origin}#{entry['id']}",
                op=op,
                rows=_with_times(rows, op, int(nranks or 1)),
                nranks=int(nranks) if nranks else None,
                nodes=nodes,
                single_process=entry.get("launch") == "single-process",
                env=_text_mapping(env),
                entry_id=str(entry["id"]),
                hardware_gpu=hardware.get("gpu"),
                hardware_net=net.get("link") if net is not None else None,
                hardware_node=_entry_node(hardware) if hardware else None,
                quality=entry.get("quality") if _scalar(entry.get("quality")) else None,
            )
        )
    return runs


def _hardware(
    doc: YamlDocument, path: tuple, entry_id: str, block: Any, catalog: Catalog | None
) -> dict[str, Any]:
    """The fields an entry's ``hardware`` block states, each read as a topology spec reads
    it (the block is one: ``read_stated``); none for a block left out or null.

    Raises:
        HwdbError: A field a topology spec refuses (``gpus_per_node: "8"``, ``links_per_pair:
            1.5``, ``fabric: nvswich``, an unknown gpu with ``catalog``), in one line naming
            file, line, entry id and field: read leniently, it would match no topology's
            node and the entry be left out for what is a typo.
    """
    if block is None:
        return {}
    base = (*path, "hardware")
    try:
        return read_stated(doc, base, block, catalog)
    except FieldError as wrong:
        field = format_path(wrong.path[len(path) :])
        raise HwdbError(
            f"{doc.where(wrong.path)}: entry {entry_id}: {field}: {wrong.problem}"
        ) from None


def _entry_node(hardware: dict[str, Any]) -> EntryNode:
    """The node of an entry's ``hardware`` block (``_hardware``): what it leaves out is
    unstated."""
    per_node = hardware.get("gpus_per_node")
    intra = hardware.get("intra", {})
    hosts = intra.get("hosts_per_domain", 1) if intra is not None else 1
    if per_node == 1 or intra is None:
        return EntryNode(per_node, "none", hosts_per_domain=hosts)
    if "fabric" not in intra:
        return EntryNode(per_node, None, hosts_per_domain=hosts)
    return EntryNode(
        per_node,
        intra["fabric"],
        intra.get("link"),
        intra.get("links_per_pair", 1),
        intra.get("p2p", True),
        hosts,
    )


def read_output(path: Path | str) -> tuple[str, str]:
    """The text of a results file, or of standard input for ``-``, read once.

    Returns:
        (the text, the name for messages: the path, or ``<stdin>``).

    Raises:
        ResultsError: Unreadable, larger than ``MAX_RESULTS_BYTES`` or binary (NUL bytes).
    """
    data, origin = read_bounded(
        path, MAX_RESULTS_BYTES, ResultsError, "nccl-tests output", ", not nccl-tests output"
    )
    if data.startswith(UTF16_BOMS):  # saved by PowerShell's '>': text, not binary
        return data.decode("utf-16", errors="replace"), origin
    if b"\x00" in data:
        raise ResultsError(f"{origin}: a binary file (NUL bytes), not nccl-tests output")
    return data.decode("utf-8", errors="replace"), origin


def read_results(
    path: Path,
    op: str | None = None,
    entries: Sequence[str] = (),
    every_table: bool = False,
    catalog: Catalog | None = None,
) -> list[ResultRun]:
    """Read one results file: nccl-tests output or a measurements YAML.

    Args:
        path: The file.
        op: Collective of nccl-tests tables that do not name it (``--op``).
        entries: Measurement entry ids to keep (default: all of them).
        every_table: Also the nccl-tests tables whose every row was dropped (no rows, their
            ``dropped`` only) and those of a header alone (neither), in file order, so runs
            are numbered as the file holds them.
        catalog: The hardware database a measurements entry's ``hardware`` ids must
            name; None: they are not looked up.

    Returns:
        The runs, each with at least one row (unless ``every_table``); the rows dropped from
        tables left out are added to the first run's ``dropped``.

    Raises:
        ResultsError: Unreadable file, no result rows, an unknown entry id.
        HwdbError: A malformed measurements file (file:line).
    """
    text, origin = read_output(path)
    if looks_like_measurements(text):
        runs = parse_measurements(parse_yaml(text, origin), catalog)
        if entries:
            known = {r.entry_id for r in runs}
            missing = [e for e in entries if e not in known]
            if missing:
                from fabricui.hwdb.catalog import unknown_id_message

                raise ResultsError(
                    f"{origin}: " + unknown_id_message("entry", missing[0], [k for k in known if k])
                )
            runs = [r for r in runs if r.entry_id in entries]
    else:
        runs = parse_nccl_tests(text, origin, op, header_only=every_table)
    usable = [r for r in runs if r.rows]
    if not usable:
        dropped = [d for r in runs for d in r.dropped]
        if dropped:
            raise ResultsError(f"no usable rows: {dropped_summary(origin, dropped)}")
        if runs:
            lines = ", ".join(r.source.rpartition(":")[2] for r in runs[:6])
            lines += ", ..." if len(runs) > 6 else ""
            raise ResultsError(
                f"{origin}: no nccl-tests result rows: its table{'s' * (len(runs) > 1)} at "
                f"line{'s' * (len(runs) > 1)} {lines} end{'s' * (len(runs) == 1)} after the "
                "header (the run stopped before its first size)"
            )
        raise ResultsError(
            f"{origin}: no nccl-tests result rows (expected the table nccl-tests prints: "
            "size count type redop root time algbw busbw ...)"
        )
    if every_table and runs[0].entry_id is None:
        return runs
    orphans = tuple(d for r in runs if not r.rows for d in r.dropped)  # tables of only those
    if orphans:
        usable[0] = dataclasses.replace(usable[0], dropped=usable[0].dropped + orphans)
    return usable


def looks_like_measurements(text: str) -> bool:
    """Whether ``text`` is a measurements YAML (its first line that is not blank or a
    comment starts a list entry), not an nccl-tests output."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return stripped.startswith("- id:") or stripped == "-"
    return False
