"""Collectives on a loaded fabric: which ranks a named group means, the prediction per
size with every loaded algorithm, and the textbook bandwidth-only bound."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.collectives import algbw_GBps, ideal_time_us
from fabricui.engine.collectives import bus_factor as factor
from fabricui.engine.cxi import CXI_FAMILIES, SAFE_DEVMEM_COPY_THRESHOLD_BYTES, read_cxi
from fabricui.engine.nccl import release_for
from fabricui.engine.nccl.env import read_env
from fabricui.engine.nccl.picks import NCCL_ALGORITHM
from fabricui.engine.nccl.releases import NEWEST_VERSION, parse_version
from fabricui.errors import ConfigError, FabricError
from fabricui.hwdb.yamlfile import parse_yaml
from fabricui.importers.nccl_tests import (
    ResultsError,
    assume_op,
    looks_like_measurements,
    parse_measurements,
    parse_nccl_tests,
    read_output,
    read_results,
)
from fabricui.services.admission import admit_collective as admit_group
from fabricui.services.command_requests import CollectiveRequest
from fabricui.services.job_env import JOB_ENV, job_settings
from fabricui.services.jobs import group_ranks, job_of
from fabricui.services.loaded import LoadedFabric
from fabricui.services.net_transport import net_socket_note, net_socket_setting
from fabricui.services.progress import NO_PROGRESS, Phases
from fabricui.services.requests import FIRST_GPUS, check_group
from fabricui.services.run_hardware import HardwareMatch, hardware_match
from fabricui.services.tuner_plugins import tuner_plugin_note
from fabricui.vocabulary import GROUPS, LAUNCHES

if TYPE_CHECKING:
    import numpy.typing as npt

    from fabricui.engine.collectives import Prediction
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nccl_tests import ResultRun
    from fabricui.plugins import PluginHost


@dataclass(frozen=True)
class CollectiveResult:
    """One collective per size, as ``fabricui collective`` reports it."""

    op: str
    """Collective name."""
    topology: str | None
    """Topology id (None for the textbook bound)."""
    nranks: int
    """Ranks in the group."""
    rows: tuple[dict[str, Any], ...]
    """Per size: ``size_bytes``, ``algorithm``, ``time_us``, ``algbw_GBps``, ``busbw_GBps``
    (NCCL's pick: what a job runs), ``nccl_pick`` and ``best_pick`` (each ``algorithm``,
    ``protocol``, ``channels``, ``time_us``), ``gain`` (NCCL's pick's time over the best's,
    minus one), ``env`` (the settings that force the best pick; empty when NCCL already
    runs it) and ``caution``."""
    job: dict[str, Any] | None = None
    """Where the job ran (``JobPlacement.to_json``), when a job was placed."""
    packed: tuple[dict[str, Any], ...] = ()
    """The same rows for as many GPUs packed from rank 0 (the placement a scheduler
    would give an empty cluster), when a job was placed."""
    library: str | None = None
    """The library whose pick ``time_us`` reports (``NCCL 2.30.3``), None for the textbook
    bound."""
    nccl_env: tuple[tuple[str, str], ...] = ()
    """The NCCL environment the prediction honoured."""
    nccl_nodes: int = 0
    """NCCL's nodes in the group: its scale-up domains (for the tuner file)."""
    single_process: bool = False
    """One process drove every GPU of a node (``launch`` in the JSON)."""
    gpus_per_thread: int | None = None
    """With ``single_process``, the GPUs each thread drove when fewer than a node's
    (``gpus_per_thread`` in the JSON; null: every GPU of its node)."""
    notes: tuple[str, ...] = ()
    """Settings the prediction assumed that a job may well set otherwise (``notes``)."""
    net_socket: str | None = None
    """The NCCL setting that puts the network on NCCL's NET/Socket transport instead of its
    IB transport (``NCCL_IB_DISABLE=1``, ``NCCL_NET=Socket``; ``net_socket_setting`` in
    the JSON), None when it does not."""

    def to_json(self) -> dict[str, Any]:
        """The ``fabricui collective --json`` object (``job`` and ``packed_rows`` when a
        job was placed)."""
        out: dict[str, Any] = {
            "op": self.op,
            "topology": self.topology,
            "nranks": self.nranks,
            "library": self.library,
            "nccl_env": dict(self.nccl_env),
            "launch": LAUNCHES[self.single_process],
            "gpus_per_thread": self.gpus_per_thread if self.single_process else None,
            "rows": list(self.rows),
            "notes": list(self.notes),
            "net_socket_setting": self.net_socket,
        }
        if self.job is not None:
            out["job"] = self.job
            out["packed_rows"] = list(self.packed)
        return out


def prediction_rows(prediction: Prediction) -> tuple[dict[str, Any], ...]:
    """One JSON-ready row per size of a prediction: NCCL's pick (the nccl-tests figures)
    and, beside it, the best pick and how to force it."""
    choice = prediction.choice
    rows = []
    for i, (size, algo, t, alg, bus) in enumerate(
        zip(
            prediction.size_bytes,
            prediction.algorithm,
            prediction.time_us,
            prediction.algbw_GBps,
            prediction.busbw_GBps,
        )
    ):
        row: dict[str, Any] = {
            "size_bytes": int(size),
            "algorithm": algo,
            "time_us": float(t),
            "algbw_GBps": float(alg),
            "busbw_GBps": float(bus),
        }
        if choice is not None:
            best_us = float(choice.best.time_us[i])
            row["nccl_pick"] = choice.nccl.row(i)
            row["best_pick"] = choice.best.row(i)
            row["gain"] = float(t) / best_us - 1.0 if best_us > 0 else 0.0
            row["env"] = dict(choice.env[i])
            row["caution"] = choice.caution[i] or None
        rows.append(row)
    return tuple(rows)


def nccl_environment(settings: Iterable[str] = (), inherit: bool = True) -> dict[str, str]:
    """The NCCL environment of a job: ``NCCL_*`` variables of this process (a job started
    from this shell inherits them), libfabric's ``FI_*`` ones (the CXI provider's matching
    and copies on Slingshot, ``fabricui.engine.cxi``) and aws-ofi-nccl's ``OFI_NCCL_*``
    (the latency it reports to NCCL), then ``KEY=VALUE`` settings over them.

    Args:
        settings: ``NCCL_ALGO=ring`` ... (``--env``).
        inherit: Read this process's ``NCCL_*``, ``FI_*`` and ``OFI_NCCL_*`` variables
            first.

    Raises:
        ConfigError: A setting that is not ``NCCL_NAME=value``, ``FI_NAME=value`` or
            ``OFI_NCCL_NAME=value``.
    """
    env = {k: v for k, v in os.environ.items() if k.startswith(JOB_ENV)} if inherit else {}
    env.update(job_settings(settings))
    return env


def blame_environment(error: FabricError, typed: Iterable[str]) -> FabricError:
    """``error`` with the job variables it names that came from this shell's environment
    marked so (``NCCL_ALGO='foo' (from the environment): ...``): a user who typed no
    NCCL_ALGO would not otherwise know where the bad value is.

    Args:
        error: An error of pricing a job under ``nccl_environment``'s variables.
        typed: The names given by an option or prompt (``--env``), which are not blamed.

    Returns:
        The same error, its message amended when it names an inherited variable.
    """
    given = set(typed)
    message = error.message
    mentioned = []
    for name, value in sorted(os.environ.items()):
        if not name.startswith(JOB_ENV) or name in given:
            continue
        head = f"{name}={value!r}"
        if message.startswith(head):
            message = f"{head} (from the environment){message[len(head) :]}"
        elif re.search(rf"(?<![A-Z0-9_]){re.escape(name)}(?![A-Z0-9_])", message):
            mentioned.append(name)
    if mentioned:
        message += f" ({', '.join(mentioned)} from the environment)"
    error.message = message
    error.args = (message,)
    return error


def setting_names(settings: Iterable[str]) -> list[str]:
    """The names of ``NAME=value`` settings (``--env`` words)."""
    return [setting.partition("=")[0].strip() for setting in settings]


#: Phases ``predict_collective`` reports (one more with ``--hosts``: the packed job).
COLLECTIVE_PHASES = 3


def predict_collective(
    request: CollectiveRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    progress: Phases = NO_PROGRESS,
) -> CollectiveResult:
    """Predict a collective on the requested fabric with every loaded algorithm, reporting
    ``COLLECTIVE_PHASES`` phases to ``progress``.

    Raises:
        FabricError: Unknown topology, op or algorithm; a bad group; no algorithm can run.
    """
    release_for(request.nccl_version)  # an unknown or too old release: one clear error
    version = None if request.nccl_version is None else _version_of(request.nccl_version)
    nccl_env = dict(request.nccl_env)
    progress.phase("building the fabric")
    loaded = LoadedFabric.load(request.topology, catalog, host, report_health=True)
    fabric = loaded.fabric
    per_thread = request.gpus_per_thread
    if per_thread is not None and not 1 <= per_thread <= fabric.gpus_per_node:
        # A thread drives GPUs of its own node: more than the node has is a typo, not a launch.
        raise ConfigError(
            f"--gpus-per-thread {per_thread}: a node of {fabric.spec.id} has "
            f"{fabric.gpus_per_node} GPUs; give 1 to {fabric.gpus_per_node}"
        )
    # A group the user named wins over the job the environment names; --hosts never meets
    # one (the command refuses the pair).
    named = request.group is not None or request.gpus is not None
    job = job_of(fabric, request.hosts, from_environment=not named)
    group = request.group or "all"
    ranks = job.ranks if job is not None else group_ranks(fabric, group, request.gpus)
    progress.phase("loading the algorithms")
    loaded.algorithms()

    def rows_of(group: Any) -> tuple[dict[str, Any], ...]:
        progress.phase(f"{request.op} among {len(group):,} GPUs")
        prediction = loaded.collective_on(
            request.op,
            group,
            request.size_bytes,
            version,
            nccl_env,
            request.algo,
            single_process=request.single_process,
            gpus_per_thread=request.gpus_per_thread,
        )
        libraries.append(prediction.choice.library if prediction.choice else None)
        return prediction_rows(prediction)

    libraries: list[str | None] = []

    domains = domains_of(fabric, ranks)
    notes = prediction_notes(fabric, domains, len(ranks), request.op, nccl_env, version)
    socket = net_socket_setting(fabric.net_family, domains, nccl_env)
    if job is None:
        rows = rows_of(ranks)
        return CollectiveResult(
            request.op,
            fabric.spec.id,
            int(len(ranks)),
            rows,
            library=libraries[0],
            nccl_env=request.nccl_env,
            nccl_nodes=domains,
            single_process=request.single_process,
            gpus_per_thread=request.gpus_per_thread,
            notes=notes,
            net_socket=socket,
        )
    rows = rows_of(ranks)
    packed = rows_of(np.arange(len(ranks), dtype=np.int64))
    return CollectiveResult(
        request.op,
        fabric.spec.id,
        int(len(ranks)),
        rows,
        job.to_json(),
        packed,
        library=libraries[0],
        nccl_env=request.nccl_env,
        nccl_nodes=domains,
        single_process=request.single_process,
        gpus_per_thread=request.gpus_per_thread,
        notes=notes,
        net_socket=socket,
    )


def prediction_notes(
    fabric: Fabric,
    domains: int,
    nranks: int,
    op: str,
    env: dict[str, str],
    version: tuple[int, int, int] | None,
    how: str = "--env FI_CXI_RX_MATCH_MODE=software",
) -> tuple[str, ...]:
    """What a prediction of ``op`` among ``nranks`` ranks in ``domains`` scale-up domains
    assumed that a job may set otherwise (``matching_note``), where a tuner plugin may
    pick instead of NCCL (``tuner_plugin_note``), and that the environment puts NCCL on
    sockets (``net_socket_note``); ``how`` says where the user sets the matching."""
    notes = (
        net_socket_note(fabric.net_family, domains, env),
        matching_note(fabric.net_family, domains, env, how),
        tuner_plugin_note(fabric.gpu.id, fabric.net_family, domains, nranks, op, env, version),
    )
    return tuple(n for n in notes if n)


def domains_of(fabric: Fabric, ranks: Sequence[int] | npt.NDArray[np.int64]) -> int:
    """Scale-up domains (nodes, or NVLink racks) the ranks lie in: NCCL's nodes."""
    return int(np.unique(np.asarray(ranks) // fabric.gpus_per_domain).shape[0])


def matching_note(
    net_family: str | None,
    domains: int,
    env: dict[str, str],
    how: str = "--env FI_CXI_RX_MATCH_MODE=software",
) -> str | None:
    """What a prediction across ``domains`` scale-up domains (nodes, or NVLink racks, whose
    traffic between them crosses the network) assumed of libfabric's receive matching on a
    CXI network (Slingshot), when the environment does not say; None elsewhere.

    The CXI provider matches receives in the NIC by default; sites that set
    ``FI_CXI_RX_MATCH_MODE=software`` (CSCS's NCCL settings for Alps do, eth-cscs/cscs-docs
    ``docs/software/communication/nccl_env_vars``) pay a copy for every network receive
    above its gdrcopy threshold (``fabricui.engine.cxi``), which the prediction prices only
    when told (``how``: where the user says so).
    """
    if net_family not in CXI_FAMILIES or domains < 2 or "FI_CXI_RX_MATCH_MODE" in env:
        return None
    return (
        "libfabric's CXI provider is priced matching receives in the NIC, its default "
        "(FI_CXI_RX_MATCH_MODE unset); where a job sets FI_CXI_RX_MATCH_MODE=software (CSCS's "
        "NCCL settings for Alps do), every network receive passes through the host and one "
        f"of more than {SAFE_DEVMEM_COPY_THRESHOLD_BYTES // 1024} KiB takes a CUDA copy: price "
        f"that with {how}"
    )


def nccl_version(text: str | None) -> tuple[int, int, int] | None:
    """``2.21`` or ``2.23.4`` as a version tuple, None when it is not one."""
    return parse_version(text)


def newer_than_modelled(text: str | None) -> str | None:
    """The warning for an NCCL release past the newest modelled (a typo such as ``2.99``, or
    a release out after this fabricui), which is priced as the newest; None otherwise."""
    parsed = parse_version(text)
    newest = parse_version(NEWEST_VERSION)
    if parsed is None or newest is None or parsed[:2] <= newest[:2]:
        return None
    return (
        f"NCCL {text} is newer than the newest release modelled ({NEWEST_VERSION}): "
        f"priced with {NEWEST_VERSION}'s tuner"
    )


def bus_factor(op: str, nranks: int) -> float:
    """busbw / algbw of ``op`` on ``nranks`` (nccl-tests' convention)."""
    return float(factor(op, nranks))


def _version_of(text: str) -> tuple[int, int, int]:
    """``2.21`` -> (2, 21, 99): the newest patch of that line (validated by release_for)."""
    return parse_version(text) or (0, 0, 0)


def ideal_collective(
    op: str, size_bytes: Sequence[int], nranks: int, bw_GBps: float
) -> CollectiveResult:
    """The textbook bandwidth-only time of ``op`` over ``nranks`` ranks of ``bw_GBps`` each.

    Raises:
        ConfigError: Fewer than two ranks (one rank moves nothing: 0 us, 0 GB/s) or a
            bandwidth that is not positive.
    """
    if nranks < 2 or not bw_GBps > 0:
        raise ConfigError("--ideal needs --nranks N (>= 2) and a positive --bw, e.g. 100GB/s")
    sizes = np.asarray(size_bytes, dtype=float)
    times = ideal_time_us(op, sizes, nranks, bw_GBps)
    alg = algbw_GBps(sizes, times)
    rows = tuple(
        {
            "size_bytes": int(s),
            "algorithm": "ideal",
            "time_us": float(t),
            "algbw_GBps": float(a),
            "busbw_GBps": float(a) * bus_factor(op, nranks),
        }
        for s, t, a in zip(sizes, times, alg)
    )
    return CollectiveResult(op, None, nranks, rows)


def parse_nccl_settings(text: str) -> tuple[str | None, dict[str, str]]:
    """The NCCL release and settings of ``2.21 NCCL_ALGO=ring NCCL_PROTO=^LL128``: an
    optional version first, then ``NCCL_NAME=value`` (or libfabric ``FI_NAME=value``)
    words (the explorer's NCCL prompt).

    Raises:
        FabricError: An unknown or too old version, or a word that is not a setting.
    """
    words = text.split()
    version = None
    if words and "=" not in words[0]:
        version = words.pop(0)
        release_for(version)
    env = nccl_environment(words, inherit=False)
    read_env(env)
    read_cxi(env)
    return version, env


def nccl_words(text: str) -> list[str]:
    """``2.21 NCCL_ALGO=ring`` (the collectives view's NCCL prompt) as command-line words:
    ``--nccl 2.21 --env NCCL_ALGO=ring``."""
    words = text.split()
    out = []
    if words and "=" not in words[0]:
        out += ["--nccl", words.pop(0)]
    for word in words:
        out += ["--env", word]
    return out


def nccl_of_prompt(text: str) -> tuple[tuple[int, int, int] | None, dict[str, str]]:
    """What the collectives view's NCCL prompt text prices: its release as a version (None:
    the newest modelled) and the job's environment (this shell's ``NCCL_*`` variables
    under the settings typed). The view and its report both read it so.

    Raises:
        FabricError: As ``parse_nccl_settings``.
    """
    version, settings = parse_nccl_settings(text)
    env = nccl_environment([f"{k}={v}" for k, v in settings.items()])
    return nccl_version(version), env


def view_prediction(
    data: LoadedFabric,
    op: str,
    group: str,
    sizes: Sequence[int],
    nccl_prompt: str,
    measured: ResultRun | None = None,
) -> Prediction:
    """The collectives view's prediction, which its report shares: NCCL's pick under the
    prompt's release and settings (``nccl_of_prompt``), at a measured run's sizes and
    launched as it was (one thread driving several GPUs, nccl-tests ``-g N``), else at
    ``sizes``."""
    version, env = nccl_of_prompt(nccl_prompt)
    try:
        return data.collective(
            op,
            group,
            measured.sizes if measured is not None else list(sizes),
            nccl_version=version,
            nccl_env=env,
            single_process=measured is not None and measured.single_process,
            gpus_per_thread=measured.gpus_per_thread if measured is not None else None,
        )
    except FabricError as error:
        raise blame_environment(error, parse_nccl_settings(nccl_prompt)[1]) from None


def check_view_nccl(
    data: LoadedFabric,
    op: str,
    group: str,
    nccl_prompt: str,
    measured: ResultRun | None = None,
) -> None:
    """Refuse the collectives view's NCCL prompt text as its prediction (``view_prediction``)
    would refuse it, without pricing anything: a release or word that is not one, and
    settings NCCL refuses for ``op`` on ``group`` (an unknown ``NCCL_ALGO`` name,
    ``NCCL_ALGO=nvls`` where NVLS does not run), in the line ``collective --env`` prints.
    Settings that leave RCCL nothing it runs there (``NCCL_ALGO=nvls``) are refused too:
    that takes pricing the candidates at one size (``check_collective_settings``), not
    done for a group too large to predict (the prediction refuses the group).

    Checked on ``data``'s router and kept figures (``LoadedFabric.check_collective``): what
    the view's prediction routed is not routed again.

    Raises:
        FabricError: The refusal, naming this shell's variables it comes from.
    """
    version, env = nccl_of_prompt(nccl_prompt)
    try:
        admit_group(op, len(data.group_ranks(group)))
        priced = True
    except ConfigError:
        priced = False
    try:
        data.check_collective(
            op,
            group,
            version,
            env,
            single_process=measured is not None and measured.single_process,
            gpus_per_thread=measured.gpus_per_thread if measured is not None else None,
            priced=priced,
        )
    except FabricError as error:
        raise blame_environment(error, parse_nccl_settings(nccl_prompt)[1]) from None


def view_notes(
    data: LoadedFabric, group: str, nccl_prompt: str, op: str = "all_reduce"
) -> tuple[str, ...]:
    """``prediction_notes`` of the collectives view's prediction of ``op`` for ``group``,
    under its NCCL prompt's settings."""
    version, env = nccl_of_prompt(nccl_prompt)
    ranks = group_ranks(data.fabric, group)
    domains = domains_of(data.fabric, ranks)
    how = "the NCCL prompt (v): FI_CXI_RX_MATCH_MODE=software"
    return prediction_notes(data.fabric, domains, len(ranks), op, env, version, how)


def measured_run(value: str, op: str | None = None, *, catalog: Catalog | None = None) -> ResultRun:
    """An nccl-tests run from a file path or from the output itself (pasted).

    Args:
        value: A path, or the output's text.
        op: Prefer the run of this collective when the output holds several; the
            collective of a run whose output names none.
        catalog: The hardware database a measurements YAML's ``hardware`` ids must name,
            as ``calibrate`` reads it (a misspelt gpu id is refused, not taken for other
            hardware); None: they are not looked up.

    Returns:
        The run (its rows, ranks and collective when the output says them).

    Raises:
        FabricError: No nccl-tests table in the file or the text (or no such file); a
            measurements entry naming an id ``catalog`` does not hold (file:line, entry
            id and field).
    """
    text = value.strip()
    if "\n" not in text and text and not text.lstrip().startswith("#"):
        # the file's own op, never relabelled
        runs = read_results(Path(text).expanduser(), catalog=catalog)
    elif looks_like_measurements(value):  # a measurements YAML pasted, or on stdin
        runs = parse_measurements(parse_yaml(value, "pasted output"), catalog)
        runs = [r for r in runs if r.rows]
    else:
        runs = parse_nccl_tests(value, "pasted output")
    if not runs:
        raise ConfigError("no nccl-tests table in it: paste the output of all_reduce_perf ...")
    return assume_op(next((r for r in runs if r.op == op), runs[0]), op)


def measured_hardware(data: LoadedFabric, run: ResultRun) -> HardwareMatch:
    """What the collectives view and its report say of the hardware a measured run ran
    on, as ``calibrate`` says it (``hardware_match``): another part of the topology's
    architecture on its node as an assumption; another architecture, node or network as
    a caution with the reason (its errors compare other hardware)."""
    return hardware_match(run, data.spec, data.catalog)


def measured_input(value: str) -> str:
    """``--measured``'s value as the report reads it: a path as given, and for ``-`` the
    output standard input holds, read here once (the request is checked, then rendered:
    a second read of standard input would find it empty).

    Raises:
        FabricError: Standard input unreadable, binary, too large or without a table.
    """
    if value != "-":
        return value
    text, origin = read_output(value)
    if not looks_like_measurements(text) and not parse_nccl_tests(text, origin):
        raise ResultsError(
            f"{origin}: no nccl-tests result rows (expected the table "
            "nccl-tests prints: size count type redop root time ...)"
        )
    # A pasted output is told from a path by its lines: keep one row a paste too.
    return text if "\n" in text.strip() else f"# {origin}\n{text}"


def group_of_ranks(data: LoadedFabric, nranks: int) -> str | None:
    """A group of ``nranks`` GPUs to compare a measured run with: a named one, else the
    first ``nranks`` (``gpus:N``); None when the fabric has fewer GPUs."""
    same = next((g for g in GROUPS if len(data.group_ranks(g)) == nranks), None)
    if same is None and nranks <= data.fabric.n_gpus:
        same = f"{FIRST_GPUS}{nranks}"
    return same


def measured_group(
    data: LoadedFabric, group: str | None, run: ResultRun, strict: bool = True
) -> str:
    """The group a measured run is priced for: ``group`` when given, else one of the run's
    rank count (``group_of_ranks``), so that its errors compare like with like.

    Args:
        data: The loaded fabric.
        group: The group asked for (``--group``), or None.
        run: The measured run.
        strict: Refuse counts that differ (the command line); else keep ``group`` (or
            ``all``) and let the report say both counts (a view the user set so).

    Raises:
        ConfigError: ``strict``, and the group given has another GPU count than the run's
            ranks, or the fabric has fewer GPUs than the run (one line: what to pass).
    """
    chosen = check_group(group or "all")
    nranks = run.nranks
    n = len(data.group_ranks(chosen))
    if not nranks or n == nranks:
        return chosen
    same = group_of_ranks(data, nranks)
    if group is None and same is not None:
        return same
    if not strict:
        return chosen
    if same is not None:
        fix = f"give --group {same}, or no --group"
        raise ConfigError(
            f"the measured run has {nranks} ranks, but group {group} has {n} GPUs: {fix}"
        )
    fix = "-t a topology that large"
    if data.spec.nodes_settable:
        fix = f"--nodes {-(-nranks // data.spec.gpus_per_node)} (or {fix})"
    raise ConfigError(
        f"the measured run has {nranks} ranks, but {data.spec.id} has only "
        f"{data.fabric.n_gpus} GPUs: give {fix}"
    )


def measured_errors(
    size_bytes: Iterable[float], time_us: Iterable[float], run: ResultRun
) -> dict[int, tuple[float, float]]:
    """Size -> (measured time [us], t_pred / t_meas - 1) for the sizes both have."""
    measured = {int(r.size_bytes): float(r.time_us) for r in run.rows if r.time_us > 0}
    out = {}
    for size, t in zip(size_bytes, time_us):
        meas = measured.get(int(size))
        if meas:
            out[int(size)] = (meas, float(t) / meas - 1.0)
    return out


#: A better pick goes into the tuner file when it saves at least this share of NCCL's time.
TUNER_MARGIN = 0.05
#: NCCL's function names as the example tuner plugin's CSV spells them.
TUNER_FUNCTIONS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
}


def tuner_config(
    result: CollectiveResult, nodes: int, margin: float = TUNER_MARGIN
) -> tuple[str, int]:
    """A configuration for NCCL's example tuner plugin with the best picks that beat NCCL's
    by ``margin`` or more.

    The plugin (plugins/tuner/example in NVIDIA/nccl, read through ``NCCL_TUNER_CONFIG_FILE``)
    takes ``collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,
    numPipeOps,regBuff`` lines; each predicted size covers the sizes from halfway (in
    log scale) to its neighbours (as far beyond the first and the last), neighbours with
    the same best pick share one line, and
    channels stay NCCL's (-1). Sizes not listed keep NCCL's own choice.

    Args:
        result: A ``predict_collective`` result with both picks per size.
        nodes: NCCL's node count of the group (the line matches only that many).
        margin: Least saving, as a share of NCCL's time.

    Returns:
        The file's text and the number of lines with a pick.

    Raises:
        ConfigError: The fabric's GPUs run another library than NCCL (RCCL's ext-tuner
            example is compiled-in tables and reads no config file), or the collective
            has no tuner (point-to-point).
    """
    library = (result.library or "").split(" (")[0]
    if not library.startswith("NCCL"):
        runs = "RCCL, not NCCL (RCCL's ext-tuner plugin reads no config file)"
        if library != "RCCL":
            runs = f"{library}'s collective library, not NCCL" if library else "no library"
        raise ConfigError(
            f"--tuner writes NCCL's example tuner config, but {result.topology} runs {runs}"
        )
    function = TUNER_FUNCTIONS.get(result.op)
    if function is None:
        raise ConfigError(
            f"--tuner: NCCL's tuner chooses for {', '.join(TUNER_FUNCTIONS)}, not {result.op}"
        )

    rows = sorted(result.rows, key=lambda r: r["size_bytes"])
    sizes = [r["size_bytes"] for r in rows]
    # Edges: as far beyond the first and last size as halfway to their neighbour.
    ratio = [sizes[1] / sizes[0], sizes[-1] / sizes[-2]] if len(sizes) > 1 else [1.0, 1.0]
    bounds = [int(sizes[0] / ratio[0] ** 0.5)]
    for a, b in zip(sizes, sizes[1:]):
        bounds.append(int((a * b) ** 0.5) + 1)
    bounds.append(int(sizes[-1] * ratio[1] ** 0.5) + 1)
    lines = [
        "# NCCL example tuner plugin configuration written by fabricui (fabricui collective "
        f"{result.op} -t {result.topology} ... --tuner)",
        f"# {result.library}: sizes whose best pick beats NCCL's own by {100 * margin:.0f}% "
        "or more; other sizes keep NCCL's choice",
        "# load: NCCL_TUNER_PLUGIN=<path to libnccl-tuner-example.so> "
        "NCCL_TUNER_CONFIG_FILE=<this file>; the plugin NCCL_TUNER_PLUGIN names replaces a "
        "network plugin's own tuner (aws-ofi-nccl's, gIB's) for the job",
        "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
        "numPipeOps,regBuff",
    ]
    picks: list[tuple[int, int, str, str]] = []
    for i, row in enumerate(rows):
        best = row.get("best_pick")
        if not best or not row.get("env") or row.get("gain", 0.0) < margin:
            continue
        algorithm = NCCL_ALGORITHM.get(best["algorithm"])
        if algorithm is None:
            continue
        lo, hi = bounds[i], bounds[i + 1] - 1
        if picks and picks[-1][2:] == (algorithm, best["protocol"]) and picks[-1][1] + 1 == lo:
            picks[-1] = (picks[-1][0], hi, algorithm, best["protocol"])
        else:
            picks.append((lo, hi, algorithm, best["protocol"]))
    for lo, hi, algorithm, protocol in picks:
        lines.append(
            f"{function},{lo},{hi},{algorithm},{protocol},-1,{nodes},{result.nranks},-1,-1"
        )
    return "\n".join(lines) + "\n", len(picks)
