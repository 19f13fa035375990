"""Parse Slurm's job lists: ``squeue`` (default, ``-l``, any ``-o`` with a JOBID and a NODELIST
column), ``scontrol show job`` and ``sacct`` (fixed-width or ``-P`` parsable, with a
NodeList column).

Each job gets its id, state and the expanded host names it runs on. ``squeue``'s
``NODELIST(REASON)`` holds a hostlist for running jobs and ``(Resources)`` for pending ones;
``scontrol show job`` records carry ``JobState=`` and ``NodeList=``; ``sacct`` rows are cut
at the column boundaries its dashed rule gives (values wider than a column end in ``+``),
and job steps (``123.batch``, ``123.0``) fold into their job. States are lower-case long
names (``running``, ``pending``, ``cancelled`` ...; squeue's ``R``/``PD``/``CG`` codes and
sacct's ``CANCELLED by 123`` and ``CANCELLED+`` read the same), as the squeue and sacct
manual pages list them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fabricui.importers.common import ParseError, clean_text, wrong_format
from fabricui.importers.hostlist import MAX_HOSTS, compress, expand
from fabricui.importers.port_health import health_text, prompt_host, strip_quote

FORMAT = "squeue"
EXPECTED = "`squeue`, `scontrol show job` or `sacct` output"

#: Largest input read [characters].
MAX_INPUT_CHARS = 64 * 2**20
#: Most host names all the jobs of one input may expand to.
MAX_JOB_HOSTS = 4 * MAX_HOSTS
#: squeue's compact state codes.
_CODES = {
    "BF": "boot_fail",
    "CA": "cancelled",
    "CD": "completed",
    "CF": "configuring",
    "CG": "completing",
    "DL": "deadline",
    "F": "failed",
    "NF": "node_fail",
    "OOM": "out_of_memory",
    "PD": "pending",
    "PR": "preempted",
    "R": "running",
    "RD": "resv_del_hold",
    "RF": "requeue_fed",
    "RH": "requeue_hold",
    "RQ": "requeued",
    "RS": "resizing",
    "RV": "revoked",
    "SI": "signaling",
    "SE": "special_exit",
    "SO": "stage_out",
    "ST": "stopped",
    "S": "suspended",
    "TO": "timeout",
}
_LONG = {v.upper() for v in _CODES.values()}
_JOB_RECORD = re.compile(r"^JobId=(\d{1,20})")
_ARRAY = re.compile(r"(?:^|[ \t])ArrayJobId=(\d{1,20})[ \t]+ArrayTaskId=(\S{1,40})")
_FIELD = {
    "state": re.compile(r"(?:^|[ \t])JobState=(\S{1,40})"),
    "nodes": re.compile(r"(?:^|[ \t])NodeList=(\S{1,1000000})"),
    "name": re.compile(r"(?:^|[ \t])JobName=(\S{0,200})"),
    "user": re.compile(r"(?:^|[ \t])UserId=([^( \t]{1,64})"),
    "partition": re.compile(r"(?:^|[ \t])Partition=(\S{0,200})"),
    "reason": re.compile(r"(?:^|[ \t])Reason=(\S{1,200})"),
}
_STEP = re.compile(r"^(\d{1,20}(?:_\d{1,9}|_\[[^\]]{0,200}\])?)[.+]")


def job_state(text: str) -> str:
    """A squeue code (``PD``), a long state (``RUNNING``) or sacct's ``CANCELLED by 123`` /
    truncated ``CANCELLED+`` as a lower-case long name (``unknown`` when none)."""
    word = text.strip().split()[0] if text.strip() else ""
    word = word.rstrip("+").upper()
    if word in _CODES:
        return _CODES[word]
    if word in _LONG:
        return word.lower()
    matches = [name for name in _LONG if word and name.startswith(word)]
    return matches[0].lower() if len(matches) == 1 else "unknown"


@dataclass
class SlurmJob:
    """One job."""

    id: str
    """Job id (``65646``, ``120_3`` for an array task)."""
    state: str
    """Lower-case long state name."""
    nodes: list[str] = field(default_factory=list)
    """Host names it runs (or ran) on, expanded; empty while pending."""
    name: str | None = None
    """Job name (may be cut by the tool's column width)."""
    user: str | None = None
    """Owner."""
    partition: str | None = None
    """Partition."""
    reason: str | None = None
    """Why it is pending (``Resources``), when printed."""

    def to_json(self) -> dict[str, Any]:
        """``id``, ``state``, ``nodes``, then what else is known."""
        data: dict[str, Any] = {"id": self.id, "state": self.state, "nodes": list(self.nodes)}
        for key in ("name", "user", "partition", "reason"):
            value = getattr(self, key)
            if value:
                data[key] = value
        return data


@dataclass
class SlurmJobs:
    """Jobs from ``squeue``, ``scontrol show job`` or ``sacct``."""

    source: str
    """Which listing."""
    jobs: list[SlurmJob]
    """Jobs in the input's order."""
    host: str | None = None
    """Where it ran, when a prompt names it."""
    warnings: list[str] = field(default_factory=list)
    """Gaps (no NodeList column, node lists cut by a column width)."""
    notes: list[str] = field(default_factory=list)
    """Remarks that are not gaps."""
    format: str = FORMAT
    """Importer name (``squeue``, ``scontrol-job``, ``sacct``)."""

    def running(self) -> list[SlurmJob]:
        """Jobs that hold nodes now (running, completing, suspended ...)."""
        holding = ("running", "completing", "suspended", "configuring", "stage_out", "signaling")
        return [j for j in self.jobs if j.state in holding and j.nodes]

    def to_json(self) -> dict[str, Any]:
        """``format``, ``source``, ``jobs``, ``warnings``."""
        return {
            "format": self.format,
            "source": self.source,
            "jobs": [j.to_json() for j in self.jobs],
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """Counts per state, then the running jobs and their hosts."""
        counts: dict[str, int] = {}
        for job in self.jobs:
            counts[job.state] = counts.get(job.state, 0) + 1
        states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        lines = [f"{self.source}: {len(self.jobs)} job(s) ({states})"]
        for job in self.running()[:20]:
            lines.append(
                f"  {job.id:<12} {job.state:<10} {len(job.nodes):>5} node(s) {compress(job.nodes)}"
            )
        return "\n".join(lines)


def parse(text: str) -> SlurmJobs:
    """Parse ``squeue``, ``scontrol show job`` or ``sacct`` output.

    Args:
        text: The output as pasted.

    Returns:
        The jobs (steps folded into their job).

    Raises:
        ParseError: Too large, no job header or record, or node lists standing for more
            than ``MAX_JOB_HOSTS`` names in all.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input of {len(text):,} characters is larger than any job listing")
    text = health_text(clean_text(text))
    lines = [strip_quote(line).rstrip() for line in text.split("\n")]
    budget = [MAX_JOB_HOSTS]
    if any(_JOB_RECORD.match(line.strip()) for line in lines):
        result = _scontrol(lines, budget)
    else:
        result = _table(lines, text, budget)
    result.host = prompt_host(lines)
    return result


def _hosts(nodelist: str | None, budget: list[int], where: str, warnings: list[str]) -> list[str]:
    """The expanded node list (empty for none, ``(null)``, ``None assigned`` or a reason)."""
    if not nodelist or nodelist.startswith("(") or nodelist.lower() in ("none", "n/a"):
        return []
    if nodelist.endswith("+"):
        warnings.append(f"{where}: node list {nodelist!r} is cut by its column width")
        return []
    try:
        names = expand(nodelist, limit=max(budget[0], 0))
    except ParseError as exc:
        raise ParseError(f"{where}: {exc.message}") from None
    budget[0] -= len(names)
    return list(dict.fromkeys(names))


def _scontrol(lines: list[str], budget: list[int]) -> SlurmJobs:
    jobs: list[SlurmJob] = []
    warnings: list[str] = []
    records: list[tuple[int, list[str]]] = []
    for number, line in enumerate(lines, 1):
        if _JOB_RECORD.match(line.strip()):
            records.append((number, []))
        if records:
            records[-1][1].append(line)
    for number, body in records:
        joined = "\n".join(body)
        first = _JOB_RECORD.match(body[0].strip())
        assert first is not None
        ident = first.group(1)
        array = _ARRAY.search(joined)
        if array and array.group(2) not in ("N/A", "(null)"):
            ident = f"{array.group(1)}_{array.group(2)}"
        values = {
            key: (m.group(1) if (m := rx.search(joined)) else None) for key, rx in _FIELD.items()
        }
        nodes = _hosts(values["nodes"], budget, f"line {number}", warnings)
        jobs.append(
            SlurmJob(
                ident,
                job_state(values["state"] or ""),
                nodes,
                name=values["name"] or None,
                user=values["user"],
                partition=values["partition"] or None,
                reason=None if values["reason"] in (None, "None") else values["reason"],
            )
        )
    result = SlurmJobs("scontrol show job", jobs, format="scontrol-job")
    result.warnings.extend(warnings)
    return result


def _table(lines: list[str], text: str, budget: list[int]) -> SlurmJobs:
    """squeue (whitespace columns) or sacct (fixed width, or ``|``-separated with -P)."""
    for at, line in enumerate(lines):
        if "|" in line and re.search(r"(?i)(?:^|\|)JobID(?:Raw)?\|", line):
            return _sacct_parsable(lines[at:], at, budget)
        upper = line.upper().split()
        if not upper or upper[0] not in ("JOBID", "JOBIDRAW"):
            continue
        rule = lines[at + 1] if at + 1 < len(lines) else ""
        if re.fullmatch(r"[ \t-]{3,}", rule) and "-" in rule:
            return _sacct_fixed(lines, at, budget)
        return _squeue(lines, at, budget)
    raise wrong_format(text, EXPECTED, FORMAT)


def _squeue(lines: list[str], at: int, budget: list[int]) -> SlurmJobs:
    header = lines[at].upper().split()
    warnings: list[str] = []
    jobs: list[SlurmJob] = []
    node_col = next(
        (i for i, h in enumerate(header) if h.startswith(("NODELIST", "HOSTNAMES"))), None
    )
    state_col = next((i for i, h in enumerate(header) if h in ("ST", "STATE")), None)
    if state_col is None:
        raise ParseError(f"line {at + 1}: a job header without an ST or STATE column")
    for number, line in enumerate(lines[at + 1 :], at + 2):
        tokens = line.split()
        if not tokens or not re.match(r"^\d{1,20}", tokens[0]):
            continue
        if len(tokens) > len(header) and "NAME" in header:
            extra = len(tokens) - len(header)
            i = header.index("NAME")
            tokens[i : i + extra + 1] = [" ".join(tokens[i : i + extra + 1])]
        if len(tokens) < len(header):
            if node_col is not None and len(tokens) == node_col:
                tokens.append("")
            else:
                warnings.append(f"line {number}: fewer columns than the header")
                continue
        row = dict(zip(header, tokens))
        nodelist = tokens[node_col] if node_col is not None else None
        reason = nodelist[1:-1] if nodelist and nodelist.startswith("(") else None
        jobs.append(
            SlurmJob(
                tokens[0],
                job_state(tokens[state_col]),
                _hosts(nodelist, budget, f"line {number}", warnings),
                name=row.get("NAME"),
                user=row.get("USER"),
                partition=row.get("PARTITION"),
                reason=reason,
            )
        )
    result = SlurmJobs("squeue", jobs, format="squeue")
    result.warnings.extend(warnings)
    if node_col is None:
        result.warnings.append("no NODELIST column: the jobs' hosts are unknown")
    return result


def _merge(
    jobs: dict[str, SlurmJob], ident: str, state: str, nodes: list[str], **info: Any
) -> None:
    """Add a sacct row: a job, or a step folded into its job (nodes joined)."""
    step = _STEP.match(ident)
    base = step.group(1) if step else ident
    job = jobs.get(base)
    if job is None:
        job = jobs[base] = SlurmJob(base, state, list(nodes), **info)
        if step:
            job.state = "unknown"
        return
    if not step:
        job.state = state
        for key, value in info.items():
            if value and not getattr(job, key):
                setattr(job, key, value)
    for name in nodes:
        if name not in job.nodes:
            job.nodes.append(name)


def _sacct_fixed(lines: list[str], at: int, budget: list[int]) -> SlurmJobs:
    rule = lines[at + 1]
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    names = [lines[at][a:b].strip().upper() for a, b in spans]
    cols = {name: i for i, name in enumerate(names)}
    warnings: list[str] = []
    jobs: dict[str, SlurmJob] = {}
    if "STATE" not in cols:
        raise ParseError(f"line {at + 1}: sacct header without a State column")
    for number, line in enumerate(lines[at + 2 :], at + 3):
        if not line.strip():
            continue
        cells = [line[a:b].strip() if a < len(line) else "" for a, b in spans]
        # The last column runs to the end of the line (values wider than its rule).
        if spans and len(line) > spans[-1][1]:
            cells[-1] = line[spans[-1][0] :].strip()
        ident = cells[cols.get("JOBID", cols.get("JOBIDRAW", 0))]
        if not re.match(r"^\d", ident):
            continue
        nodelist = cells[cols["NODELIST"]] if "NODELIST" in cols else None
        _merge(
            jobs,
            ident,
            job_state(cells[cols["STATE"]]),
            _hosts(nodelist, budget, f"line {number}", warnings),
            name=cells[cols["JOBNAME"]] if "JOBNAME" in cols else None,
            user=cells[cols["USER"]] if "USER" in cols else None,
            partition=cells[cols["PARTITION"]] if "PARTITION" in cols else None,
        )
    result = SlurmJobs("sacct", list(jobs.values()), format="sacct")
    result.warnings.extend(_cut(warnings))
    if "NODELIST" not in cols:
        result.warnings.append(
            "no NodeList column: the jobs' hosts are unknown (run `sacct -o "
            "JobID,JobName,State,NodeList%-2000` or `sacct -P -o JobID,State,NodeList`)"
        )
    return result


def _sacct_parsable(lines: list[str], at: int, budget: list[int]) -> SlurmJobs:
    header = [h.strip().upper() for h in lines[0].split("|")]
    cols = {name: i for i, name in enumerate(header) if name}
    if "STATE" not in cols:
        raise ParseError(f"line {at + 1}: sacct header without a State column")
    warnings: list[str] = []
    jobs: dict[str, SlurmJob] = {}
    for number, line in enumerate(lines[1:], at + 2):
        cells = line.split("|")
        if len(cells) < len(cols) or not re.match(r"^\d", cells[0].strip()):
            continue

        def cell(name: str, cells: list[str] = cells) -> str | None:
            return cells[cols[name]].strip() if name in cols else None

        _merge(
            jobs,
            cells[cols.get("JOBID", cols.get("JOBIDRAW", 0))].strip(),
            job_state(cell("STATE") or ""),
            _hosts(cell("NODELIST"), budget, f"line {number}", warnings),
            name=cell("JOBNAME"),
            user=cell("USER"),
            partition=cell("PARTITION"),
        )
    result = SlurmJobs("sacct -P", list(jobs.values()), format="sacct")
    result.warnings.extend(_cut(warnings))
    if "NODELIST" not in cols:
        result.warnings.append("no NodeList column: the jobs' hosts are unknown")
    return result


def _cut(warnings: list[str]) -> list[str]:
    """Many 'cut by its column width' lines as one."""
    if len(warnings) <= 3:
        return warnings
    return [f"{len(warnings)} node lists are cut by their column width, e.g. {warnings[0]}"]
