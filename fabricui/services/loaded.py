"""A loaded topology and the figures every view asks of it: one catalog, spec, fabric and
router, with thin wrappers over the engine (paths, collectives on named groups, the
bandwidth pyramid, strategies). No Textual: the TUI and snapshots use it from workers, the
CLI directly, and tests headless.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import numpy as np

from fabricui.engine.evaluate import (
    check_collective_settings,
    evaluate_collective,
    evaluate_path,
)
from fabricui.engine.routing import Router
from fabricui.errors import EngineError, FabricError
from fabricui.fabric.health import health_of
from fabricui.fabric.ids import find_gpu, parse_gpu_id, placement
from fabricui.fabric.kinds import DeviceKind
from fabricui.hwdb.overlay import overlay_mismatch
from fabricui.model import RecipeChoices
from fabricui.services.flow_memory import admit_collective
from fabricui.services.jobs import group_ranks
from fabricui.services.layouts import LayoutChoice
from fabricui.services.plan import (
    LayoutRequest,
    PlanRequest,
    TableRequest,
    build_layout,
    decision_table_on,
    default_layout,
    load_strategies,
    plan_on,
    search_on,
)
from fabricui.services.requests import CatalogRequest, TopologyRequest, WhatIf
from fabricui.services.session import collective_algorithms, load_catalog, load_fabric
from fabricui.units import format_bandwidth

if TYPE_CHECKING:
    import numpy.typing as npt

    from fabricui.engine.collectives import Prediction
    from fabricui.engine.evaluate import PathReport
    from fabricui.engine.training.pricing import Pricer
    from fabricui.engine.training.step import PlanReport
    from fabricui.engine.training.table import DecisionTable
    from fabricui.engine.types import CollectiveAlgorithm, Strategy
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.model import TopologySpec
    from fabricui.plugins import PluginHost

T = TypeVar("T")


class _NotKept(Exception):
    """A figure asked of ``LoadedFabric.known`` that was not computed yet."""


@dataclass(frozen=True)
class Tier:
    """One tier of the bandwidth pyramid."""

    name: str
    """What the tier is (``HBM3``, ``NVLink peer``)."""
    bw_GBps: float
    """Bandwidth per GPU per direction [GB/s]."""
    lat_us: float | None
    """Latency [us], None when the database has none."""
    detail: str
    """Where the figure comes from (hwdb record or routed path)."""
    kind: str = "memory"
    """What the tier is, whatever its hardware is called (``TIER_KINDS``): two fabrics'
    tiers of one kind are compared (``NIC (InfiniBand NDR)`` with ``NIC (InfiniBand
    XDR)``)."""


#: The kinds of pyramid tiers, fastest first.
TIER_KINDS = ("smem", "memory", "peer", "domain", "NIC", "spine")


@dataclass
class LoadedFabric:
    """A loaded topology: catalog, spec, fabric and a shared router, plus engine calls.

    Engine calls that share the router hold ``lock`` so that two worker threads never
    fill its caches at once.
    """

    catalog: Catalog
    """The hardware database (with plugin records)."""
    spec: TopologySpec
    """The resolved topology spec."""
    fabric: Fabric
    """The built fabric."""
    router: Router
    """One router per fabric, reused by every path and collective."""
    request: TopologyRequest
    """What was asked: topology id or path, node count, what-if."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Serialises engine calls that share ``router``."""
    host: PluginHost | None = field(default=None, repr=False)
    """The plugin host whose algorithms and strategies price (None: the process-wide one)."""
    _strategies: dict[str, Strategy] | None = field(default=None, repr=False)
    _algorithms: list[CollectiveAlgorithm] | None = field(default=None, repr=False)
    _figures: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)
    """Figures computed on this fabric, by call (``_remembered``)."""
    _asking: threading.local = field(default_factory=threading.local, repr=False)
    """``known_only``: this thread asks only for figures computed already (``known``)."""

    # --- loading ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        request: TopologyRequest,
        catalog: Catalog | None = None,
        host: PluginHost | None = None,
        report_health: bool = False,
    ) -> LoadedFabric:
        """Resolve and build a topology (``session.load_fabric``, the one way every command
        and view loads one).

        Args:
            request: Topology id or path, node count and what-if.
            catalog: The catalog (default: built-in database plus plugins).
            host: Plugin host used for builders and when the catalog has to be loaded.
            report_health: The command line says what the request's health files changed
                (the explorer shows it itself).

        Returns:
            The loaded data.

        Raises:
            FabricError: Unknown topology, bad node count, or a malformed file.
        """
        catalog = catalog or load_catalog(CatalogRequest(), host)
        fabric = load_fabric(request, catalog, host, report_health)
        return cls(catalog, fabric.spec, fabric, Router.for_fabric(fabric), request, host=host)

    @property
    def topology(self) -> str:
        """The topology argument it was loaded from (id or file path)."""
        return self.request.topology

    @property
    def nodes(self) -> int | None:
        """The ``--nodes`` override, if any."""
        return self.request.nodes

    @property
    def what_if(self) -> WhatIf | None:
        """Link overrides applied to the spec, if any."""
        return self.request.what_if

    @property
    def label(self) -> str:
        """Topology id with the node override and what-if links, for titles."""
        label = TopologyRequest(self.spec.id, self.nodes, health=self.request.health).label()
        if self.what_if is not None:
            assumed = self.what_if.label()
            if self.what_if.nic_gbps is not None and self.spec.net is not None:
                assumed += f" {self.spec.net.link}"  # the generation that has that rate
            label += f" ({assumed})"
        return label

    @property
    def calibration_warning(self) -> str | None:
        """Why the ``--calibration`` overlay may not describe this fabric, in the line the
        command line prints (``overlay_mismatch``: fitted on another topology, or of links
        the fabric does not use); None without an overlay or when it fits."""
        calibration = self.catalog.calibration
        if calibration is None:
            return None
        return overlay_mismatch(calibration, self.spec.id, self.fabric.generations)

    # --- devices ---------------------------------------------------------------------------

    def placement(self, rank_a: int, rank_b: int) -> str:
        """How two GPUs sit: ``same node``, ``same domain d<k>`` or ``different nodes``."""
        return placement(self.fabric, rank_a, rank_b)

    def parse_gpu(self, text: str) -> int:
        """Global rank of ``n3.g7`` or ``31``.

        Raises:
            EngineError: Malformed or out of range (the message names valid ids).
        """
        return parse_gpu_id(self.fabric, text)

    def find_gpu(self, text: str) -> int:
        """The GPU a search names: an id, a host or node (its first GPU) or part of a
        host's name (``fabric.ids.find_gpu``).

        Raises:
            EngineError: Nothing matches (names the nearest hosts).
        """
        return find_gpu(self.fabric, text)

    def default_pair(self) -> tuple[int, int | None]:
        """Source and destination shown first: GPU 0 and the last GPU (another node if any),
        of the nodes still on the network when a health file cut some off."""
        fabric = self.fabric
        n = fabric.n_gpus
        overlay = health_of(fabric)
        if overlay is not None and overlay.cut_off and fabric.nodes > len(overlay.cut_off):
            g = fabric.gpus_per_node
            reachable = [r for r in range(n) if r // g not in overlay.cut_off]
            return reachable[0], (reachable[-1] if len(reachable) > 1 else None)
        return 0, (n - 1 if n > 1 else None)

    # --- engine calls ----------------------------------------------------------------------

    def _remembered(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """What ``compute()`` returned for ``key`` on this fabric, computed once: a view
        shown again, a saved view rendered off-screen and the views built ahead ask for the
        same figures (frozen results; a call that raises is not kept)."""
        try:
            return cast("T", self._figures[key])
        except KeyError:
            if getattr(self._asking, "known_only", False):
                raise _NotKept from None
        value = compute()
        self._figures[key] = value
        return value

    def known(self, figures: Callable[[], T]) -> T | None:
        """What ``figures()`` returns when every figure it asks of this fabric was computed
        already (by a view's worker, or ahead of the view's first frame); else None, having
        computed nothing: the caller may draw at once what would take a worker.

        ``figures`` asks only for kept figures (``pyramid``, ``collective``,
        ``decision_table``, ``default_layout``, ``plan``); one that raises a
        ``FabricError`` gives None too (the worker then says why).
        """
        self._asking.known_only = True
        try:
            return figures()
        except (_NotKept, FabricError):
            return None
        finally:
            self._asking.known_only = False

    def path(self, src: int, dst: int, size_bytes: int | None) -> PathReport:
        """The routed path between two ranks (``evaluate_path``).

        Raises:
            EngineError: Same GPU or invalid ranks.
        """
        fabric = self.fabric
        with self.lock:
            return evaluate_path(fabric, src, dst, size_bytes, router=self.router)

    def group_ranks(self, group: str) -> npt.NDArray[np.int64]:
        """Ranks of a named group (``services.requests.GROUPS``: all, host or node, domain,
        per-node), as ``fabricui collective --group`` picks them."""
        return group_ranks(self.fabric, group)

    def collective(
        self,
        op: str,
        group: str,
        sizes: Sequence[int],
        nccl_version: tuple[int, int, int] | None = None,
        nccl_env: Mapping[str, str] | None = None,
        single_process: bool = False,
        gpus_per_thread: int | None = None,
    ) -> Prediction:
        """Predict ``op`` on a named group for each size (``evaluate_collective``): NCCL's
        pick for ``nccl_version`` (default the newest modelled) and ``nccl_env``, the
        fastest beside it. ``single_process``: one process drives every GPU of a node (as
        nccl-tests ``-g N`` runs), not one process per GPU; ``gpus_per_thread``: the GPUs
        each of its threads drives, when fewer than a node's.

        Raises:
            EngineError: The group has one rank, no algorithm applies, or a bad setting.
        """
        ranks = self.group_ranks(group)
        if len(ranks) < 2:
            raise EngineError(
                f"group {group!r} has one GPU on {self.spec.id}: choose another group"
            )
        key = (
            "collective",
            op,
            group,
            tuple(sizes),
            nccl_version,
            tuple(sorted((nccl_env or {}).items())),
            single_process,
            gpus_per_thread,
        )
        return self._remembered(
            key,
            lambda: self.collective_on(
                op,
                ranks,
                sizes,
                nccl_version,
                nccl_env,
                single_process=single_process,
                gpus_per_thread=gpus_per_thread,
            ),
        )

    def check_collective(
        self,
        op: str,
        group: str,
        nccl_version: tuple[int, int, int] | None = None,
        nccl_env: Mapping[str, str] | None = None,
        single_process: bool = False,
        gpus_per_thread: int | None = None,
        priced: bool = True,
    ) -> None:
        """Refuse NCCL settings as ``collective`` would refuse them for ``op`` on a named
        group, without predicting it (``check_collective_settings``; ``priced``: the
        candidates priced at one size where the settings narrow a library whose tuner is
        not modelled).

        Routes on the shared router (holding ``lock``), so what a prediction routed is not
        routed again; a prediction kept under the same settings (at any sizes) passes
        without a check, and a check's answer is kept.

        Raises:
            FabricError: The settings' refusal, in the line ``collective`` raises.
        """
        env = tuple(sorted((nccl_env or {}).items()))
        settings = (op, group, nccl_version, env, single_process, gpus_per_thread)
        # A prediction's key: ("collective", op, group, sizes, version, env, single process,
        # GPUs per thread). ``list`` copies the keys at once (no Python code runs between
        # them), while a worker thread may keep another figure.
        if any(k[0] == "collective" and k[1:3] + k[4:] == settings for k in list(self._figures)):
            return
        refusal = self._remembered(
            ("check_collective", *settings, priced),
            lambda: self._collective_refusal(
                op, group, nccl_version, nccl_env, single_process, gpus_per_thread, priced
            ),
        )
        if refusal is not None:
            raise refusal.with_traceback(None)

    def _collective_refusal(
        self,
        op: str,
        group: str,
        nccl_version: tuple[int, int, int] | None,
        nccl_env: Mapping[str, str] | None,
        single_process: bool,
        gpus_per_thread: int | None,
        priced: bool,
    ) -> FabricError | None:
        """What ``check_collective`` refuses (an error kept as a figure), else None."""
        ranks = self.group_ranks(group)
        algorithms = self.algorithms() if priced else None
        try:
            with self.lock:  # the router's caches are not shared between threads
                check_collective_settings(
                    self.fabric,
                    op,
                    ranks,
                    single_process=single_process,
                    library_version=nccl_version,
                    nccl_env=nccl_env,
                    gpus_per_thread=gpus_per_thread,
                    algorithms=algorithms,
                    router=self.router,
                )
        except FabricError as error:
            return error
        return None

    def collective_on(
        self,
        op: str,
        ranks: npt.ArrayLike,
        sizes: Sequence[int],
        nccl_version: tuple[int, int, int] | None = None,
        nccl_env: Mapping[str, str] | None = None,
        algo: str = "auto",
        single_process: bool = False,
        gpus_per_thread: int | None = None,
    ) -> Prediction:
        """Predict ``op`` among ``ranks`` (global ranks, a job's in its order) for each size,
        as ``collective`` does for a named group; ``algo`` forces one algorithm.

        Raises:
            EngineError: No algorithm applies, or a bad setting.
            ConfigError: The collective would not fit the memory budget.
        """
        group = np.asarray(ranks, dtype=np.int64)
        with self.lock:  # the sample the admission routes shares the router's caches
            admit_collective(op, group, self.router)  # a 250,000-GPU pod: one line
            return evaluate_collective(
                self.fabric,
                op,
                list(sizes),
                ranks=group,
                algorithms=self.algorithms(),
                algo=algo,
                router=self.router,
                library_version=nccl_version,
                nccl_env=nccl_env,
                single_process=single_process,
                gpus_per_thread=gpus_per_thread,
            )

    def pyramid(self) -> list[Tier]:
        """The bandwidth pyramid of this fabric, fastest tier first.

        On-chip and memory tiers are the GPU's hwdb figures; peer, NIC and spine tiers are
        routed paths (GPU 0 to GPU 1, to GPU 0 of node 1, and to a GPU behind another leaf;
        where hosts share a scale-up domain, to a host of it, then the NIC tier to GPU 0 of
        the first host of another domain),
        from the first node still on the network to others on it: a health file that cuts
        node 0 off leaves the network tiers to the nodes it can reach (none when fewer than
        two nodes are left on it).
        """
        return list(self._remembered(("pyramid",), self._pyramid))

    def _pyramid(self) -> list[Tier]:
        fabric, catalog = self.fabric, self.catalog
        gpu = fabric.gpu
        tiers: list[Tier] = []
        if gpu.smem_bw_GBps:
            smem = catalog.links.get("smem")
            tiers.append(
                Tier(
                    "SMEM / registers",
                    gpu.smem_bw_GBps,
                    smem.lat_us if smem else None,
                    f"{gpu.id} smem_bw_GBps (hwdb)",
                    "smem",
                )
            )
        memory = catalog.links.get((gpu.memory_tech or "").lower())
        tiers.append(
            Tier(
                gpu.memory_tech or "memory",
                gpu.hbm_bw_GBps,
                memory.lat_us if memory is not None and memory.family == "memory" else None,
                f"{gpu.id} hbm_bw_GBps (hwdb)",
            )
        )
        g = fabric.gpus_per_node
        nodes = self._network_nodes()
        first = nodes[0] * g if nodes else 0
        if g >= 2:
            report = self.path(first, first + 1, None)
            tiers.append(self._path_tier(report, "peer"))
        # Hosts of one scale-up domain (an NVL72 rack's trays) reach each other over its
        # switches, not their NICs: that is a tier of its own, and the NIC tier's path goes
        # to the first host of another domain.
        per_domain = self.spec.hosts_per_domain
        if fabric.nodes >= 2 and len(nodes) >= 2 and per_domain > 1:
            mates = [n for n in nodes[1:] if n // per_domain == nodes[0] // per_domain]
            if mates:
                report = self.path(first, mates[0] * g, None)
                tiers.append(self._path_tier(report, "domain"))
            nodes = [nodes[0]] + [n for n in nodes[1:] if n // per_domain != nodes[0] // per_domain]
        if fabric.nodes >= 2 and len(nodes) >= 2:
            report = self.path(first, nodes[1] * g, None)
            tiers.append(self._path_tier(report, "NIC", network=True))
            spine = self._spine_report(first, nodes)
            if spine is not None:
                tiers.append(self._path_tier(spine, "spine", network=True))
        elif self.spec.net is not None and (fabric.nodes < 2 or fabric.nodes <= per_domain):
            # One node (or one scale-up domain, or none other left on the network): the
            # NIC's port rate, as no route to price crosses it.
            link = catalog.links.get(self.spec.net.link)
            if link is not None:
                gbps = self.spec.net.gbps or link.bw_GBps * 8
                alone = "one node" if fabric.nodes < 2 else "no host outside its scale-up domain"
                tiers.append(
                    Tier(
                        f"NIC ({link.name.split(' (')[0]})",
                        gbps / 8.0,
                        link.lat_us,
                        f"{link.id} port rate (hwdb; {alone}, no route)",
                        "NIC",
                    )
                )
        return tiers

    def _path_tier(self, report: PathReport, kind: str, network: bool = False) -> Tier:
        hop = report.hops[report.bottleneck_hop]
        if network:
            gens = [h.link for h in report.hops if self.catalog.links.get(h.link) is not None]
            net_gens = [g for g in gens if self.catalog.links[g].tier == "scale-out"] or gens
            gen = net_gens[0]
        else:
            gen = hop.link
        record = self.catalog.links.get(gen)
        family = record.name if record is not None else gen
        if kind == "peer":
            name = f"{family.split(' (')[0]} peer"
        elif kind == "domain":
            name = f"{family.split(' (')[0]} across hosts"
        elif kind == "NIC":
            name = f"NIC ({family.split(' (')[0]})"
        else:
            above_leaf = self._switch_names(above_leaf=True)
            name = "spine" if any(h.dst in above_leaf for h in report.hops) else "leaf to leaf"
        detail = (
            f"{report.src}->{report.dst}: bottleneck {hop.src}->{hop.dst} "
            f"{format_bandwidth(report.bottleneck_GBps)}"
        )
        return Tier(name, report.bottleneck_GBps, report.latency_us, detail, kind)

    def _switch_names(self, above_leaf: bool) -> frozenset[str]:
        """Names of the leaf switches, or of the switches above them, told by their kind
        (an imported cluster's switches keep their own names, ``LG01-01``)."""
        kinds = (DeviceKind.SPINE, DeviceKind.CORE) if above_leaf else (DeviceKind.LEAF,)
        fabric = self.fabric
        return frozenset(
            fabric.device_name(int(dev)) for kind in kinds for dev in fabric.devices_of_kind(kind)
        )

    def _network_nodes(self) -> list[int]:
        """The fabric's nodes still on the network: all of them, less the nodes a health
        file cut off (every NIC cable down)."""
        overlay = health_of(self.fabric)
        cut = set(overlay.cut_off) if overlay is not None else set()
        return [node for node in range(self.fabric.nodes) if node not in cut]

    def _spine_report(self, first: int, nodes: list[int]) -> PathReport | None:
        """A cross-node path from GPU ``first`` that climbs above the leaf (spine or
        leaf-to-leaf) to a GPU of another of ``nodes`` (those on the network), if any."""
        leaves = self._switch_names(above_leaf=False)
        if len(leaves) <= 1:
            return None
        above_leaf = self._switch_names(above_leaf=True)
        fabric = self.fabric
        g, last = fabric.gpus_per_node, nodes[-1]
        candidates = [last * g + g - 1, last * g + min(1, g - 1), nodes[1] * g + g - 1, last * g]
        # An imported cluster's hosts sit on leaves in any order: try a spread of others.
        candidates += [node * g for node in nodes[1 : -1 : max(1, (len(nodes) - 1) // 32)]]
        on_network = set(nodes)
        for dst in candidates:
            if dst // g == first // g or dst // g not in on_network:
                continue
            report = self.path(first, dst, None)
            if any(h.dst in above_leaf for h in report.hops) or any(
                h.src in leaves and h.dst in leaves for h in report.hops
            ):
                return report
        return None

    # --- strategies ------------------------------------------------------------------------

    def algorithms(self) -> list[CollectiveAlgorithm]:
        """Every candidate collective algorithm (core and plugins'), loaded once."""
        if self._algorithms is None:
            self._algorithms = collective_algorithms(host=self.host)
        return self._algorithms

    def _pricer(self) -> Pricer:
        from fabricui.engine.training.pricing import Pricer

        return Pricer(self.fabric, algorithms=self.algorithms())

    def strategies(self) -> dict[str, Strategy]:
        """Strategies by name, loaded as ``fabricui strategies`` loads them."""
        if self._strategies is None:
            self._strategies = load_strategies(self.host)
        return self._strategies

    def model(self, model_id: str) -> Any:
        """A model shape by id.

        Raises:
            ConfigError: Unknown model (names the nearest ids).
        """
        return self.catalog.model(model_id)

    def decision_table(self, model_id: str) -> DecisionTable:
        """Which strategies survive this fabric for a model
        (``services.plan.decision_table_on``)."""
        request = TableRequest(topology=self.request, model=model_id)
        return self._remembered(
            ("decision_table", model_id),
            lambda: decision_table_on(
                self.fabric, self.model(model_id), request, self.strategies(), self._pricer()
            ),
        )

    def default_layout(self, model_id: str) -> LayoutChoice:
        """The layout the strategies view opens on: TP on the node's GPUs when it divides
        the heads (at most 8), DP over the rest, with the least that makes the model fit:
        plain DDP, else ZeRO-1, ZeRO-2, FSDP, then the same with 2, 4, 8 ... pipeline
        stages (a layout that cannot run at all is skipped). When nothing fits, the plain
        TP x DDP layout (its plan says by how much it does not fit)."""
        return self._remembered(
            ("default_layout", model_id), lambda: self._default_layout(model_id)
        )

    def _default_layout(self, model_id: str) -> LayoutChoice:
        model = self.model(model_id)
        tp = default_layout(self.fabric, model).tp or 1
        plain = LayoutChoice(tp=tp)
        pp = 1
        while tp * pp <= self.fabric.n_gpus and pp <= model.layers:
            if self.fabric.n_gpus % (tp * pp) == 0:
                for flavour in ("ddp", "zero1", "zero2", "fsdp"):
                    choice = LayoutChoice(tp=tp, pp=pp, dp_strategy=flavour)
                    try:
                        if self.plan(model_id, choice).fits:
                            return choice
                    except FabricError:
                        continue
            pp *= 2
        return plain

    def check_layout(self, model_id: str, choice: LayoutChoice) -> None:
        """Refuse a layout as ``plan`` refuses it, without pricing it: degrees the model or
        the fabric's GPUs cannot take (``tp64`` on 32 GPUs), in the line ``fabricui plan``
        prints.

        Raises:
            FabricError: A layout the model or the fabric cannot run.
        """
        from fabricui.engine.training.step import check_layout

        model = self.model(model_id)
        layout = build_layout(_layout_request(choice), self.fabric, model)
        check_layout(self.fabric, model, layout)

    def plan(self, model_id: str, choice: LayoutChoice) -> PlanReport:
        """Price one layout on every GPU of the fabric (as ``fabricui plan``).

        Raises:
            FabricError: A layout the model or the fabric cannot run.
        """
        request = PlanRequest(
            topology=self.request,
            model=model_id,
            layout=_layout_request(choice),
            dp_strategy=choice.dp_strategy,
            recipe=RecipeChoices(recompute=choice.recompute),
        )
        return self._remembered(
            ("plan", model_id, choice),
            lambda: plan_on(
                self.fabric, self.model(model_id), request, self.strategies(), self._pricer()
            ),
        )

    def search(
        self, model_id: str, dp_strategy: str | None = "ddp", top: int = 10
    ) -> list[PlanReport]:
        """Rank every valid layout on all GPUs with one DP strategy (as ``plan --search
        --dp-strategy``), or with each built-in one (None, as ``plan --search``)."""
        request = PlanRequest(
            topology=self.request,
            model=model_id,
            dp_strategy=dp_strategy,
            search=True,
            top=top,
        )
        result = search_on(
            self.fabric, self.model(model_id), request, self.strategies(), self._pricer()
        )
        return list(result.plans)


def _layout_request(choice: LayoutChoice) -> LayoutRequest:
    """The degrees of a layout choice as a plan request's layout."""
    return LayoutRequest(tp=choice.tp, pp=choice.pp, ep=choice.ep, cp=choice.cp, etp=choice.etp)
