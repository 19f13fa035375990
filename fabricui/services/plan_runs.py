"""Published training runs as a service: price each entry of a run file (``fabricui plan
--run FILE``, the training accuracy benchmark) as ``plan`` prices a layout, with the software
the run ran and the settings it states; what it leaves unstated is assumed and said.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError, EngineError, FabricError
from fabricui.services.hardware_wording import hardware_from_wording
from fabricui.services.perf_recipes import (
    RECIPE_FRAMEWORK,
    named_release,
    recipe_choices,
    recipe_etp,
)
from fabricui.services.plan import (
    LayoutRequest,
    PlanRequest,
    dp_strategy_problem,
    gpu_recipe_problem,
    load_strategies,
    plan_on,
    pricer_for,
)
from fabricui.services.precision_wording import settings_from_wording
from fabricui.services.requests import CatalogRequest
from fabricui.services.software import software_for_run

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from fabricui.engine.training.pricing import Pricer
    from fabricui.engine.training.recipe import RecipeChoices
    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.types import Strategy
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import ModelShape, TopologySpec
    from fabricui.model.run import RunEntry, RunSpec
    from fabricui.plugins import PluginHost
    from fabricui.services.software import Software


@dataclass(frozen=True)
class RunRequest:
    """``fabricui plan --run FILE``: price the entries of a run file."""

    path: Path
    """The run file (one entry or a list)."""
    catalog: CatalogRequest = field(default_factory=CatalogRequest)
    """Which hardware database."""


@dataclass(frozen=True)
class RunResult:
    """A run file's entry, priced."""

    entry: RunEntry
    """The entry as read."""
    report: PlanReport
    """The plan of its layout."""
    fabric: Fabric
    """The fabric its topology block built."""

    @property
    def error(self) -> float | None:
        """``predicted / measured - 1`` when the run states a measured step time."""
        measured = self.entry.run.step_time_s
        if measured is None:
            return None
        return self.report.step_us * 1e-6 / measured - 1.0


def read_runs(path: Path, catalog: Catalog) -> list[RunEntry]:
    """The entries of a run file.

    Raises:
        HwdbError: The file cannot be read or an entry is malformed (file, line, key).
    """
    from fabricui.hwdb.run_file import read_run_file

    return read_run_file(Path(path), catalog)


def price_runs(
    request: RunRequest,
    strategies: Mapping[str, Strategy] | None = None,
    host: PluginHost | None = None,
) -> list[RunResult]:
    """Price every entry of a run file.

    Raises:
        FabricError: The file or an entry is bad, or a model cannot fit (one line, naming
            the file and key).
    """
    from fabricui.services.session import load_catalog

    catalog = load_catalog(request.catalog, host)
    entries = read_runs(request.path, catalog)
    available = load_strategies(host) if strategies is None else strategies
    return [price_entry(entry, catalog, available, host) for entry in entries]


def price_entry(
    entry: RunEntry,
    catalog: Catalog,
    strategies: Mapping[str, Strategy] | None = None,
    host: PluginHost | None = None,
) -> RunResult:
    """Price one run entry on the fabric its topology block builds, as ``plan`` prices a
    layout (``plan_on``), with the software the run ran (``software.software_for_run``).

    A power limit or GPU variant the run block leaves unstated is taken from the entry's
    ``hardware`` wording (``hardware_wording.hardware_from_wording``), and torch.compile, the
    FP8 recipe and async TP from its ``precision`` and ``parallel`` wording
    (``precision_wording.settings_from_wording``), and the plan says so;
    the result keeps the entry as read, its fabric is built on the GPU priced.
    Unstated settings take that software's defaults (listed in the report's assumptions);
    ``micro_batch`` unstated is 1 and ``vpp`` unstated is 1, as the shared data's scoring
    rule says.

    Raises:
        FabricError: A strategy that is not registered, a layout the engine refuses, or a
            model that cannot fit even fully sharded with full recomputation.
    """
    from fabricui.engine.training.shape import geometry
    from fabricui.services.session import build_fabric_with_plugins

    read = entry
    entry, wording = hardware_from_wording(entry, catalog)
    entry, settings = settings_from_wording(entry)
    wording = [*wording, *settings]
    run = entry.run
    model = entry.model
    if model.params_B <= 0:
        model = dataclasses.replace(model, params_B=geometry(model).params / 1e9)
    spec, ranks = _partial_domains(run, entry.at("domain_hosts"))
    fabric = build_fabric_with_plugins(spec, catalog, host)
    unrunnable = gpu_recipe_problem(fabric.gpu, run_choices(run), catalog, "fp8_recipe")
    if unrunnable:
        key, why = unrunnable
        raise ConfigError(f"{entry.at(key)}: {why}")
    try:
        software = software_for_run(entry, catalog, fabric.gpu.arch)
    except ConfigError as exc:
        raise ConfigError(f"{entry.at('framework')}: {exc.message}") from None
    available = load_strategies(host) if strategies is None else strategies
    wrong = dp_strategy_problem(run.dp_strategy, available) if run.dp_strategy else None
    if wrong:
        raise ConfigError(f"{entry.at('dp_strategy')}: {wrong}")
    choices, etp, notes = _recipe_defaults(entry, software)
    notes = [*wording, *notes]
    if run.micro_batch is None:
        notes.append("micro_batch not stated: 1")
    if run.vpp is None and run.pp > 1:
        notes.append("vpp not stated: 1 (plain 1F1B)")
    if run.dp_strategy is None and run.dp > 1:
        notes.append("dp_strategy not stated: ddp")
    request = PlanRequest(
        model=model.id,
        layout=LayoutRequest(
            tp=run.tp,
            pp=run.pp,
            dp=run.dp,
            cp=run.cp,
            ep=run.ep,
            etp=etp,
            vpp=run.vpp or 1,
            micro_batch=run.micro_batch or 1,
            global_batch=run.global_batch,
            seq_len=run.seq_len or model.seq_len,
        ),
        dp_strategy=run.dp_strategy,
        recipe=choices,
    )
    pricer = pricer_for(fabric, host)
    if ranks is not None:
        notes.append(
            f"{run.domain_hosts} of each scale-up domain's {spec.intra.hosts_per_domain} hosts "
            "in use (run.domain_hosts)"
        )
    try:
        report = plan_on(fabric, model, request, available, pricer, None, software, ranks)
    except (ConfigError, EngineError) as exc:
        raise ConfigError(f"{entry.at('')}: {exc.message}") from None
    report = dataclasses.replace(report, assumptions=(*notes, *report.assumptions))
    report = _check_fit(report, fabric, model, request, available, entry.at(""), pricer, software)
    return RunResult(read, report, fabric)


def _recipe_defaults(
    entry: RunEntry, software: Software
) -> tuple[RecipeChoices, int | None, list[str]]:
    """The settings and expert tensor-parallel size a run states, and what its release's
    performance recipe sets where it states nothing (``perf_recipes.recipe_choices``,
    ``perf_recipes.recipe_etp``), with a note per setting taken."""
    from fabricui.hwdb.perf_recipes import load_perf_recipes

    choices = run_choices(entry.run)
    if software.framework.id != RECIPE_FRAMEWORK or named_release(entry.source_text) is None:
        return choices, entry.run.etp, []
    recipes = load_perf_recipes()
    choices, notes = recipe_choices(entry, choices, software.framework, recipes)
    etp, etp_notes = recipe_etp(entry, recipes)
    return choices, entry.run.etp if etp is None else etp, [*notes, *etp_notes]


def _partial_domains(run: RunSpec, where: str) -> tuple[TopologySpec, npt.NDArray[np.int64] | None]:
    """The topology to build and the GPUs the job holds when it uses ``domain_hosts`` hosts
    of each scale-up domain (whole domains built, the job on their first hosts).

    Raises:
        ConfigError: ``domain_hosts`` above the domain's hosts.
    """
    import numpy as np

    spec = run.topology
    used = run.domain_hosts
    full = spec.intra.hosts_per_domain if spec.intra is not None else 1
    if not used or used == full:
        return spec, None
    if used > full:
        raise ConfigError(
            f"{where}: {used} is more than the {full} hosts of a scale-up "
            "domain (intra.hosts_per_domain)"
        )
    domains = -(-spec.nodes // used)
    built = dataclasses.replace(spec, nodes=domains * full)
    hosts = np.concatenate([np.arange(used) + d * full for d in range(domains)])[: spec.nodes]
    gpus = spec.gpus_per_node
    ranks = (hosts[:, None] * gpus + np.arange(gpus)[None, :]).ravel().astype(np.int64)
    return built, ranks


def run_choices(run: RunSpec) -> RecipeChoices:
    """The recipe settings a run block states."""
    from fabricui.engine.training.recipe import RecipeChoices

    return RecipeChoices(
        recompute=run.recompute,
        precision=run.precision,
        attention=run.attention,
        dp_overlap=run.dp_overlap,
        tp_overlap=run.tp_overlap,
        ep_overlap=run.ep_overlap,
        sequence_parallel=run.sp,
        fp8_recipe=run.fp8_recipe,
        recompute_modules=run.recompute_modules,
        passes="compiled" if run.compile else None,
        moe_dispatch=run.moe_dispatch,
        moe_imbalance=run.moe_imbalance,
        cuda_graph=run.cuda_graph,
        power_W=run.power_W,
        grad_reduce_bytes=run.grad_reduce_bytes,
        fsdp_reshard=run.fsdp_reshard,
        fp8_attention=run.fp8_attention,
    )


def _check_fit(
    report: PlanReport,
    fabric: Fabric,
    model: ModelShape,
    request: PlanRequest,
    available: Mapping[str, Strategy],
    where: str,
    pricer: Pricer,
    software: Software,
) -> PlanReport:
    """A run that does not fit as stated: say so; one that cannot fit at all (not even
    fully sharded with full recomputation, when FSDP is registered): refuse it.

    Raises:
        ConfigError: Not even FSDP with full recomputation fits the GPU's memory.
    """
    from fabricui.engine.training.recipe import RecipeChoices

    capacity = fabric.gpu.memory_GB
    if report.fits:
        return report
    choices = dataclasses.replace(request.recipe or RecipeChoices(), recompute="full")
    lightest_request = dataclasses.replace(request, dp_strategy="fsdp", recipe=choices)
    try:
        lightest = plan_on(fabric, model, lightest_request, available, pricer, None, software)
    except FabricError:
        lightest = None
    if lightest is not None and lightest.memory_GB > capacity:
        raise ConfigError(
            f"{where}: {model.id} cannot fit in {capacity:g} GB per GPU with this layout "
            f"(needs {report.memory_GB:.0f} GB as stated, {lightest.memory_GB:.0f} GB even with "
            "FSDP and full recomputation)"
        )
    note = (
        f"as stated it needs {report.memory_GB:.0f} GB per GPU, more than the "
        f"{report.memory_limit_GB:.0f} GB usable: the run must have sharded or recomputed more "
        "than stated (priced as stated)"
    )
    return dataclasses.replace(report, assumptions=(*report.assumptions, note))
