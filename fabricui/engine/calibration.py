"""Calibration: fit the link figures of a fabric (efficiency, latency) to measured collectives.

The hardware database gives every link generation an achievable ``efficiency`` (fraction of
its line rate) and a per-hop latency ``lat_us``; a fabric copies them into
``Fabric.link_eff`` and ``Fabric.link_lat_us``. A real cluster can sit well off those
figures (a misconfigured NIC, a congested spine, a slower switch), and nccl-tests runs of
it show by how much. ``fit_links`` searches per-generation values that bring the model's
times closest to the measured ones:

    minimise  mean_i robust_loss(log(t_pred_i / t_meas_i))   over the fitted rows i

``robust_loss`` is quadratic within the runs' noise and linear beyond, so every row counts
(a median would fit the half of the rows one figure explains and ignore the rest: rows
that ask for a faster link could then be outvoted by a few that ask for a slower one) and
outliers do not dominate.

Only figures the runs constrain are searched: moving the figure (30 % less efficiency, 1 us
more latency) must move some fitted row by more than ``SENSITIVITY``, so a generation the
runs never cross, or latency when every row is large, is left alone and said so.
Generations are tried one at a time, busiest tier first (the caller's order, e.g. the
network before NVLink before PCIe): a coarse grid scan of the new generation's figures,
golden-section refinement of every figure kept so far, then joint Levenberg-Marquardt steps
(efficiency and latency trade against each other, which one-at-a-time search does not
follow). A generation joins the fit only when it lowers the objective clearly
(``MIN_GAIN``, ``RELATIVE_GAIN``) and on both halves of the fitted rows, so two generations
never split one slowdown arbitrarily and a few noisy rows are not mistaken for a slower
link; a figure the runs push onto its bound joins on the clear absolute gain alone. A
joined figure that costs less than ``KEEP_GAIN`` to put back is put back: the runs agree
with the database. ``CalibrationResult.status`` says per figure which of these it is.

Efficiency stays in [0.01, 1], latency in [0, 100] us; a bound within a search bracket is
tried itself, so a figure the rows push past it ends on it, and
``CalibrationResult.at_bounds`` names those figures: the runs are then outside what the
model explains (faster than the link at full efficiency, or slower than at 1 %), and the
fitted figure is no measurement of the link. Rows held out of the fit
(``CalibrationCase.fit`` False) are predicted before and after, to show the fitted figures
carry over.

Pure numpy on top of ``evaluate_collective``: no I/O, no YAML.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from fabricui.engine.evaluate import algorithms_for_env, evaluate_collective
from fabricui.engine.routing import Router
from fabricui.engine.types import CollectiveAlgorithm
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric
from fabricui.vocabulary import OPS

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

#: Link parameters the fit may change, per generation: name -> (lower, upper) bound.
PARAMETERS = {"efficiency": (0.01, 1.0), "lat_us": (0.0, 100.0)}
#: A fitted figure this close to a bound (a fraction of the bounds' span) sits on it.
BOUND_TOLERANCE = 1e-4
#: Efficiency grid of the coarse scan (fraction of line rate).
EFFICIENCY_GRID = tuple(np.geomspace(0.03, 1.0, 12).tolist())
#: Latency grid of the coarse scan [us].
LATENCY_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: Rounds of coordinate refinement, and golden-section evaluations per parameter and round.
REFINE_ROUNDS, REFINE_EVALUATIONS = 1, 7
#: Joint Levenberg-Marquardt steps at most, trials per step, initial damping, the probe
#: of each search coordinate (log efficiency, latency [us]) for the Jacobian, and the move
#: and the drop of the objective under which the steps stop.
POLISH_STEPS, POLISH_TRIES, POLISH_DAMPING = 5, 3, 1e-2
POLISH_PROBE = {"efficiency": 0.01, "lat_us": 0.02}
POLISH_TOLERANCE, POLISH_GAIN = 1e-4, 1e-5
#: Log ratio within which a row's loss is quadratic (``robust_loss``): about the run-to-run
#: noise of nccl-tests times.
HUBER_SCALE = 0.02
#: Weight of the pull back towards the database figures (keeps unidentified figures put).
REGULARISATION = 1e-3
#: A figure constrains the runs when its probe (``_probe``) moves some fitted row's
#: prediction by more than this fraction.
SENSITIVITY = 0.01
#: Smallest drop of the objective (mean ``robust_loss``) for a generation to join the fit.
MIN_GAIN = 0.01
#: A fitted figure that costs at most this much objective to put back to the database's is
#: kept there (the runs agree with the database within their noise).
KEEP_GAIN = MIN_GAIN / 4
#: Generations the fit tries by default (the busiest the runs depend on).
MAX_GENERATIONS = 2
#: Trial figures whose log ratios the fit remembers (it revisits points).
RATIO_MEMORY = 4096
#: ... and the smallest relative drop (a generation must explain a clear share of the error).
RELATIVE_GAIN = 0.2

LinkParams = dict[str, dict[str, float]]
"""Generation id -> {``efficiency``: fraction, ``lat_us``: [us]}."""


@dataclass(frozen=True)
class CalibrationCase:
    """One measured run of a collective on a fabric."""

    label: str
    """Where the rows came from (``results.txt:12``), for reports."""
    fabric: Fabric
    """The fabric the run is predicted on, built from the uncalibrated database."""
    op: str
    """Collective (``OPS``)."""
    size_bytes: FloatArray
    """(n_rows,) sizes, nccl-tests convention [bytes]."""
    time_us: FloatArray
    """(n_rows,) measured times [us]."""
    fit: BoolArray
    """(n_rows,) True for rows the fit uses, False for held-out rows."""
    ranks: IntArray | None = None
    """Global ranks of the group (default: every GPU)."""
    algorithms: tuple[CollectiveAlgorithm, ...] = ()
    """Candidate algorithms (empty: the core and plugin ones)."""
    algo: str = "auto"
    """``auto`` or a forced algorithm (``NCCL_ALGO``)."""
    single_process: bool = False
    """One process drove every GPU of a node."""
    gpus_per_thread: int | None = None
    """With ``single_process``, the GPUs each thread drove when fewer than a node's."""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise EngineError(f"{self.label}: unknown collective {self.op!r}")
        shapes = {np.shape(self.size_bytes), np.shape(self.time_us), np.shape(self.fit)}
        if len(shapes) != 1 or np.ndim(self.size_bytes) != 1:
            raise EngineError(f"{self.label}: sizes, times and the fit mask must be 1-D alike")
        times = np.asarray(self.time_us, dtype=np.float64)
        if not (np.isfinite(times).all() and (times > 0).all()):
            raise EngineError(f"{self.label}: measured times must be finite and positive")


@dataclass(frozen=True)
class CalibrationResult:
    """Fitted link figures and the errors before and after."""

    before: LinkParams
    """Database figures of every generation of the fabrics."""
    after: LinkParams
    """Fitted figures (same keys as ``before``)."""
    fitted: tuple[tuple[str, str], ...]
    """(generation, parameter) pairs the runs constrain and the fit moved (see ``status``)."""
    predicted_before: tuple[FloatArray, ...]
    """Per case, (n_rows,) predicted times with the database figures [us]."""
    predicted_after: tuple[FloatArray, ...]
    """Per case, (n_rows,) predicted times with the fitted figures [us]."""
    errors: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """``{"fit"|"held_out": {"before"|"after": median |t_pred / t_meas - 1|}}`` (None
    without rows)."""
    evaluations: int = 0
    """Objective evaluations the search used."""
    status: dict[str, dict[str, str]] = field(default_factory=dict)
    """Generation -> {parameter: what the fit made of it}: ``fitted`` (the runs constrain it
    and the fit moved it), ``kept`` (they constrain it and agree with the database figure),
    ``unconstrained`` (no fitted row depends on it enough: a generation the runs never
    cross, latency when every row is large), ``untried`` (the runs depend on it, but the fit
    tries only its ``max_generations`` busiest generations) or ``excluded`` (the caller did
    not let it change)."""

    @property
    def at_bounds(self) -> dict[str, dict[str, str]]:
        """Fitted figures that ended on a bound of ``PARAMETERS``: generation ->
        {parameter: ``lower`` or ``upper``}. The rows pushed the figure as far as it may
        go, so the model cannot explain them with it and the value is not to be trusted."""
        out: dict[str, dict[str, str]] = {}
        for gen, name in self.fitted:
            side = bound_side(name, self.after[gen][name])
            if side is not None:
                out.setdefault(gen, {})[name] = side
        return out

    @property
    def changed(self) -> LinkParams:
        """Generations whose fitted figures differ from the database ones (the overlay)."""
        out: LinkParams = {}
        for gen, values in self.after.items():
            base = self.before[gen]
            if any(not math.isclose(values[k], base[k], rel_tol=1e-6) for k in values):
                out[gen] = dict(values)
        return out


def link_params(fabric: Fabric) -> LinkParams:
    """Efficiency and latency of every generation of a fabric, as the database set them.

    Args:
        fabric: A built fabric.

    Returns:
        Generation id -> {``efficiency``, ``lat_us``} (the first link of each generation).
    """
    out: LinkParams = {}
    for index, gen in enumerate(fabric.generations):
        links = np.flatnonzero(fabric.link_gen == index)
        if links.size:
            first = int(links[0])
            out[gen] = {
                "efficiency": float(fabric.link_eff[first]),
                "lat_us": float(fabric.link_lat_us[first]),
            }
    return out


def with_link_params(fabric: Fabric, params: Mapping[str, Mapping[str, float]]) -> Fabric:
    """A copy of ``fabric`` whose links of the named generations take new figures.

    Equivalent to rebuilding the fabric from a catalog whose link records carry these
    figures (the builder copies ``efficiency`` and ``lat_us`` of a link's generation).

    Args:
        fabric: The fabric.
        params: Generation id -> any of {``efficiency``, ``lat_us`` [us]}; generations the
            fabric does not use are ignored.

    Returns:
        The new fabric (arrays copied only when changed); it reuses the routing work of
        ``fabric``'s router (``Router.share_routes``).
    """
    eff, lat = fabric.link_eff, fabric.link_lat_us
    for index, gen in enumerate(fabric.generations):
        values = params.get(gen)
        if not values:
            continue
        mask = fabric.link_gen == index
        if "efficiency" in values:
            eff = eff.copy() if eff is fabric.link_eff else eff
            eff[mask] = float(values["efficiency"])
        if "lat_us" in values:
            lat = lat.copy() if lat is fabric.link_lat_us else lat
            lat[mask] = float(values["lat_us"])
    if eff is fabric.link_eff and lat is fabric.link_lat_us:
        return fabric
    variant = dataclasses.replace(fabric, link_eff=eff, link_lat_us=lat)
    Router.share_routes(variant, fabric)  # efficiency and latency change no route
    return variant


def bound_side(name: str, value: float) -> str | None:
    """``lower`` or ``upper`` when ``value`` sits on that bound of the parameter ``name``
    (within ``BOUND_TOLERANCE`` of the bounds' span), else None.

    Args:
        name: A key of ``PARAMETERS`` (``efficiency``, ``lat_us``).
        value: The figure (fraction, or [us]).

    Raises:
        EngineError: An unknown parameter.
    """
    if name not in PARAMETERS:
        raise EngineError(f"unknown link parameter {name!r} (one of {', '.join(PARAMETERS)})")
    low, high = PARAMETERS[name]
    slack = BOUND_TOLERANCE * (high - low)
    if value <= low + slack:
        return "lower"
    if value >= high - slack:
        return "upper"
    return None


def relative_errors(predicted_us: npt.ArrayLike, measured_us: npt.ArrayLike) -> FloatArray:
    """``|t_pred / t_meas - 1|`` per row (the benchmark's row error).

    Args:
        predicted_us: (n,) predicted times [us].
        measured_us: (n,) measured times [us], positive.

    Returns:
        (n,) errors; NaN where either input is NaN.
    """
    pred = np.asarray(predicted_us, dtype=np.float64)
    meas = np.asarray(measured_us, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(pred / meas - 1.0)


def _median_or_none(values: FloatArray) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


class _Problem:
    """The cases grouped for vectorized prediction, and the objective's evaluation count.

    Cases on the same fabric share one trial fabric per evaluation (so the routes of a trial
    are computed once), and cases that differ only in their rows are predicted in one call.
    """

    def __init__(self, cases: Sequence[CalibrationCase]) -> None:
        self.cases = list(cases)
        self.evaluations = 0
        self.fabrics: list[Fabric] = []
        default_algorithms: tuple[CollectiveAlgorithm, ...] | None = None
        batches: dict[tuple[object, ...], list[int]] = {}
        positions: list[int] = []
        self.algorithms: list[list[CollectiveAlgorithm]] = []
        for index, case in enumerate(self.cases):
            position = next(
                (i for i, f in enumerate(self.fabrics) if f is case.fabric), len(self.fabrics)
            )
            if position == len(self.fabrics):
                self.fabrics.append(case.fabric)
            algorithms = case.algorithms
            if not algorithms:
                if default_algorithms is None:
                    default_algorithms = tuple(algorithms_for_env())
                algorithms = default_algorithms
            ranks = None if case.ranks is None else tuple(np.asarray(case.ranks).tolist())
            key = (
                position,
                case.op,
                ranks,
                case.algo,
                case.single_process,
                case.gpus_per_thread,
                tuple(id(a) for a in algorithms),
            )
            if key not in batches:
                batches[key] = []
                positions.append(position)
                self.algorithms.append(list(algorithms))
            batches[key].append(index)
        self.batches = list(zip(positions, batches.values()))
        self._ratios: dict[tuple[tuple[str, str, float], ...], FloatArray] = {}

    def predict(
        self, params: Mapping[str, Mapping[str, float]], fit_only: bool
    ) -> list[FloatArray]:
        """Predicted times of every case's rows (fitted rows only when ``fit_only``)."""
        trial = [with_link_params(fabric, params) for fabric in self.fabrics]
        out: list[FloatArray] = [np.zeros(0)] * len(self.cases)
        for (fabric_index, members), algorithms in zip(self.batches, self.algorithms):
            masks = [
                self.cases[i].fit if fit_only else np.ones_like(self.cases[i].fit) for i in members
            ]
            sizes = [
                np.asarray(self.cases[i].size_bytes, dtype=np.float64)[m]
                for i, m in zip(members, masks)
            ]
            joined = np.concatenate(sizes)
            if joined.size == 0:
                continue
            case = self.cases[members[0]]
            prediction = evaluate_collective(
                trial[fabric_index],
                case.op,
                joined,
                ranks=case.ranks,
                algorithms=algorithms,
                algo=case.algo,
                single_process=case.single_process,
                gpus_per_thread=case.gpus_per_thread,
            )
            times = np.asarray(prediction.time_us, dtype=np.float64)
            cuts = np.cumsum([part.size for part in sizes])[:-1]
            for i, part in zip(members, np.split(times, cuts)):
                out[i] = part
        for fabric in trial:
            Router.forget(fabric)  # free this trial's routes now, not at the next full gc
        return out

    def log_ratios(self, params: Mapping[str, Mapping[str, float]]) -> FloatArray:
        """log(t_pred / t_meas) over every fitted row: positive where the model is slower
        than the run. Figures asked again are answered from memory (the search revisits
        points), so ``evaluations`` counts predictions made."""
        key = tuple(sorted((g, n, v) for g, values in params.items() for n, v in values.items()))
        known = self._ratios.get(key)
        if known is not None:
            return known
        self.evaluations += 1
        predicted = self.predict(params, fit_only=True)
        parts = [
            np.log(p / np.asarray(c.time_us, dtype=np.float64)[c.fit])
            for p, c in zip(predicted, self.cases)
        ]
        ratios = np.concatenate(parts) if parts else np.zeros(0)
        if len(self._ratios) >= RATIO_MEMORY:
            self._ratios.clear()
        self._ratios[key] = ratios
        return ratios

    def log_errors(self, params: Mapping[str, Mapping[str, float]]) -> FloatArray:
        """|log(t_pred / t_meas)| over every fitted row."""
        return np.abs(self.log_ratios(params))


def robust_loss(log_ratios: npt.ArrayLike) -> FloatArray:
    """Pseudo-Huber loss of log ratios: about ``r**2 / (2 s)`` within ``s = HUBER_SCALE``
    of 0, about ``|r| - s`` beyond, smooth in between.

    Rows within the runs' noise weigh like least squares (a smooth objective the search
    can follow when efficiency and latency trade against each other); rows far off weigh
    only linearly, so a few outliers do not drag the fit. Every row counts, unlike a median,
    which fits the half of the rows one figure explains and ignores the rest.

    Args:
        log_ratios: (n,) ``log(t_pred / t_meas)``.

    Returns:
        (n,) losses, >= 0 (NaN for NaN).
    """
    ratios = np.asarray(log_ratios, dtype=np.float64)
    return HUBER_SCALE * (np.sqrt(1.0 + (ratios / HUBER_SCALE) ** 2) - 1.0)


def _half_gains(problem: _Problem, old: LinkParams, new: LinkParams) -> tuple[float, float]:
    """Drop of the mean loss on each half of the fitted rows (alternate rows) from ``old``
    to ``new`` figures; a change both halves agree on is not fitting noise."""
    before, after = problem.log_ratios(old), problem.log_ratios(new)
    if before.size < 4:
        return (math.inf, math.inf)
    half = np.arange(before.size) % 2
    gains = [
        float(np.mean(robust_loss(before[half == k])) - np.mean(robust_loss(after[half == k])))
        for k in (0, 1)
    ]
    return gains[0], gains[1]


def _params_from(values: dict[tuple[str, str], float], base: LinkParams) -> LinkParams:
    params = {gen: dict(figures) for gen, figures in base.items()}
    for (gen, name), value in values.items():
        params[gen][name] = value
    return params


def fit_links(
    cases: Sequence[CalibrationCase],
    generations: Sequence[str] | None = None,
    latency_generations: Sequence[str] | None = None,
    max_generations: int = MAX_GENERATIONS,
) -> CalibrationResult:
    """Fit per-generation link efficiency and latency to measured runs.

    Args:
        cases: Measured runs, each on its fabric (built from the uncalibrated database).
        generations: Generations whose efficiency may change, in the order to try them
            (busiest tier first, e.g. the network before NVLink). Default: every generation
            of the fabrics, in fabric order. Generations that change no prediction are
            skipped.
        latency_generations: Generations whose ``lat_us`` may change (default: the same
            as ``generations``).
        max_generations: How many of the sensitive generations (in ``generations`` order)
            the fit tries; each costs about 60 predictions of every fitted row.

    Returns:
        Fitted figures, each figure's ``status``, predictions and the median errors of
        fitted and held-out rows, before and after.

    Raises:
        EngineError: No case, no fitted row, or a case the engine cannot predict.

    Notes:
        Objective: ``mean robust_loss(log(t_pred / t_meas)) + 1e-3 * sum |log(x / x_db)|``
        over fitted rows (latency's pull is ``|x - x_db| / 10 us``); the small second term
        keeps figures that no row constrains at their database values.
    """
    if not cases:
        raise EngineError("calibration needs at least one measured run")
    if not any(np.asarray(c.fit).any() for c in cases):
        raise EngineError("calibration needs at least one fitted row")
    problem = _Problem(cases)
    try:
        return _fit(problem, cases, generations, latency_generations, max_generations)
    finally:
        for fabric in problem.fabrics:
            Router.forget_variants(fabric)


def _probe(name: str, value: float) -> float:
    """The figure a sensitivity probe tries instead of ``value``: 30 % less efficiency,
    1 us more latency (both slow a link down: a faster link may not be the bottleneck)."""
    return value * 0.7 if name == "efficiency" else value + 1.0


def _sensitive(
    problem: _Problem, base: LinkParams, candidates: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The candidates some fitted row depends on: probing the figure (``_probe``) moves
    the row's prediction by more than ``SENSITIVITY``. The rest the runs do not constrain
    (a generation they never cross, latency when every row is large)."""
    reference = problem.predict(base, fit_only=True)
    out = []
    for gen, name in candidates:
        trial = _probe(name, base[gen][name])
        moved = problem.predict(_params_from({(gen, name): trial}, base), fit_only=True)
        if any(np.any(np.abs(m / r - 1) > SENSITIVITY) for m, r in zip(moved, reference) if r.size):
            out.append((gen, name))
    return out


def _fit(
    problem: _Problem,
    cases: Sequence[CalibrationCase],
    generations: Sequence[str] | None,
    latency_generations: Sequence[str] | None,
    max_generations: int,
) -> CalibrationResult:
    """``fit_links`` on the grouped cases."""
    base: LinkParams = {}
    for case in cases:
        for gen, figures in link_params(case.fabric).items():
            base.setdefault(gen, figures)
    order = [g for g in (generations if generations is not None else base) if g in base]
    lat_order = [
        g for g in (latency_generations if latency_generations is not None else order) if g in base
    ]
    candidates = [(g, "efficiency") for g in order] + [(g, "lat_us") for g in lat_order]
    sensitive = _sensitive(problem, base, candidates)

    def objective(values: dict[tuple[str, str], float]) -> float:
        ratios = problem.log_ratios(_params_from(values, base))
        pull = sum(
            abs(math.log(v / base[g][n])) if n == "efficiency" else abs(v - base[g][n]) / 10.0
            for (g, n), v in values.items()
        )
        return float(np.mean(robust_loss(ratios)) + REGULARISATION * pull)

    def ratios_of(values: dict[tuple[str, str], float]) -> FloatArray:
        return problem.log_ratios(_params_from(values, base))

    # Forward selection, busiest generation first: a generation joins the fit only when it
    # clearly improves it, on both halves of the fitted rows, so two generations never share
    # one slowdown arbitrarily and noise in a few rows is not mistaken for a figure. One the
    # rows push onto a bound joins on a clear absolute gain alone: it cannot explain a share
    # of the error, and its flag (``at_bounds``) says the runs are beyond the model.
    current: dict[tuple[str, str], float] = {}
    best = objective(current)
    joined: list[tuple[str, str]] = []
    stages = list(dict.fromkeys(gen for gen, _ in sensitive))
    tried = stages[: max(0, max_generations)]
    for gen in tried:
        keys = [key for key in sensitive if key[0] == gen]
        start = {**current, **{key: base[key[0]][key[1]] for key in keys}}
        values, score = _search(objective, ratios_of, start, best, joined, keys)
        gains = _half_gains(problem, _params_from(current, base), _params_from(values, base))
        clear = score < best - max(MIN_GAIN, RELATIVE_GAIN * best)
        stopped = score < best - MIN_GAIN and any(
            bound_side(name, values[(g, name)]) is not None
            and bound_side(name, base[g][name]) is None
            for g, name in keys
        )
        if (clear or stopped) and min(gains) > MIN_GAIN / 2:
            current, best = values, score
            joined += keys

    # A figure the rows hardly move from the database's (putting it back costs at most
    # KEEP_GAIN) is kept there: the runs agree with it, and the overlay does not carry noise.
    for key in joined:
        prior = base[key[0]][key[1]]
        if current[key] != prior:
            trial = {**current, key: prior}
            score = objective(trial)
            if score <= best + KEEP_GAIN:
                current, best = trial, min(best, score)

    status = {
        gen: {
            name: "excluded" if (gen, name) not in candidates else "unconstrained"
            for name in PARAMETERS
        }
        for gen in base
    }
    for gen, name in sensitive:
        status[gen][name] = "kept" if gen in tried else "untried"
    fitted = [key for key in joined if current[key] != base[key[0]][key[1]]]
    for gen, name in fitted:
        status[gen][name] = "fitted"

    after = _params_from({k: current[k] for k in fitted}, base)
    predicted_before = tuple(problem.predict(base, fit_only=False))
    predicted_after = tuple(problem.predict(after, fit_only=False))
    errors: dict[str, dict[str, float | None]] = {}
    for label, want_fit in (("fit", True), ("held_out", False)):
        errors[label] = {}
        for when, predicted in (("before", predicted_before), ("after", predicted_after)):
            rows = [
                relative_errors(p, c.time_us)[np.asarray(c.fit) == want_fit]
                for p, c in zip(predicted, cases)
            ]
            errors[label][when] = _median_or_none(np.concatenate(rows))
    return CalibrationResult(
        before={g: dict(v) for g, v in base.items()},
        after=after,
        fitted=tuple(fitted),
        predicted_before=predicted_before,
        predicted_after=predicted_after,
        errors=errors,
        evaluations=problem.evaluations,
        status=status,
    )


def _clip(name: str, value: float) -> float:
    low, high = PARAMETERS[name]
    return min(high, max(low, value))


def _to_search(key: tuple[str, str], value: float) -> float:
    """A figure in the coordinates the search moves it in (log efficiency, latency [us])."""
    return math.log(value) if key[1] == "efficiency" else value


def _from_search(key: tuple[str, str], value: float) -> float:
    """The figure of a search coordinate, within its bounds."""
    return _clip(key[1], math.exp(value) if key[1] == "efficiency" else value)


def _golden(
    objective: Callable[[dict[tuple[str, str], float]], float],
    current: dict[tuple[str, str], float],
    best: float,
    key: tuple[str, str],
    evaluations: int,
) -> tuple[dict[tuple[str, str], float], float]:
    """Golden-section search of one parameter in a bracket around its current value
    (log scale for efficiency), keeping the best point seen; a bound the bracket reaches
    is tried too (golden section never tries the bracket's ends)."""
    value = current[key]
    log_scale = key[1] == "efficiency"
    if log_scale:
        ends = _clip(key[1], value / 1.4), _clip(key[1], value * 1.4)
        low, high = math.log(ends[0]), math.log(ends[1])
    else:
        width = max(0.25, 0.5 * value)
        ends = _clip(key[1], value - width), _clip(key[1], value + width)
        low, high = ends
    bounds = [end for end in ends if end in PARAMETERS[key[1]] and end != value]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0

    def figure(value: float) -> float:
        nonlocal best, current
        trial = dict(current)
        trial[key] = _clip(key[1], value)
        result = objective(trial)
        if result < best - 1e-12:
            best, current = result, trial
        return result

    def score(x: float) -> float:
        return figure(math.exp(x) if log_scale else x)

    c, d = high - ratio * (high - low), low + ratio * (high - low)
    fc, fd = score(c), score(d)
    for _ in range(max(0, evaluations - 2)):
        if fc <= fd:
            high, d, fd = d, c, fc
            c = high - ratio * (high - low)
            fc = score(c)
        else:
            low, c, fc = c, d, fd
            d = low + ratio * (high - low)
            fd = score(d)
    for bound in bounds:
        figure(bound)
    return current, best


def _polish(
    objective: Callable[[dict[tuple[str, str], float]], float],
    ratios_of: Callable[[dict[tuple[str, str], float]], FloatArray],
    current: dict[tuple[str, str], float],
    best: float,
    keys: Sequence[tuple[str, str]],
) -> tuple[dict[tuple[str, str], float], float]:
    """Levenberg-Marquardt steps on ``keys`` together (robust weights, bounds clipped).

    Efficiency and latency trade against each other (a little more latency and a little
    more bandwidth predict a mid-size row the same), so the objective is a narrow valley
    that one-parameter-at-a-time search crosses in many small steps and may leave far from
    its bottom; a step that moves every figure at once goes along it. Each step costs one
    prediction per key (the Jacobian, by forward differences) and one per trial.
    """
    if not keys:
        return current, best
    low = np.array([_to_search(k, PARAMETERS[k[1]][0]) for k in keys])
    high = np.array([_to_search(k, PARAMETERS[k[1]][1]) for k in keys])
    damping = POLISH_DAMPING
    for _ in range(POLISH_STEPS):
        x = np.array([_to_search(k, current[k]) for k in keys])
        ratios = ratios_of(current)
        jacobian = np.empty((ratios.size, len(keys)))
        for j, key in enumerate(keys):
            step = POLISH_PROBE[key[1]]
            probe = x[j] + step if x[j] + step <= high[j] else x[j] - step
            trial = {**current, key: _from_search(key, float(probe))}
            jacobian[:, j] = (ratios_of(trial) - ratios) / (probe - x[j])
        weights = 1.0 / np.sqrt(1.0 + (ratios / HUBER_SCALE) ** 2)  # pseudo-Huber's IRLS
        normal = jacobian.T @ (weights[:, None] * jacobian)
        gradient = jacobian.T @ (weights * ratios)
        if not (np.isfinite(normal).all() and np.isfinite(gradient).all()):
            break
        moved, start = None, best
        for _ in range(POLISH_TRIES):
            damped = normal + damping * np.diag(np.diag(normal) + 1e-12)
            step_x = np.linalg.lstsq(damped, -gradient, rcond=None)[0]
            target = np.clip(x + step_x, low, high)
            trial = {**current, **{k: _from_search(k, float(v)) for k, v in zip(keys, target)}}
            score = objective(trial)
            if score < best - 1e-12:
                current, best, moved = trial, score, target
                damping = max(damping / 4.0, 1e-6)
                break
            damping *= 8.0
        if moved is None or np.max(np.abs(moved - x)) < POLISH_TOLERANCE:
            break
        if start - best < POLISH_GAIN:  # creeping along a flat valley: nothing to gain
            break
    return current, best


def _search(
    objective: Callable[[dict[tuple[str, str], float]], float],
    ratios_of: Callable[[dict[tuple[str, str], float]], FloatArray],
    current: dict[tuple[str, str], float],
    best: float,
    kept: list[tuple[str, str]],
    new: list[tuple[str, str]],
) -> tuple[dict[tuple[str, str], float], float]:
    """Coarse scan of the ``new`` parameters, coordinate refinement of ``kept + new`` (it
    finds the valley, whatever the algorithm the model switches to), then joint
    Levenberg-Marquardt steps along it (``_polish``).

    About ``len(grid)`` evaluations per new parameter, ``7`` per parameter and round, and
    ``POLISH_STEPS * (len(kept + new) + 1)`` at most.
    """
    for key in new:
        grid = EFFICIENCY_GRID if key[1] == "efficiency" else LATENCY_GRID
        for value in grid:
            trial = dict(current)
            trial[key] = _clip(key[1], value)
            score = objective(trial)
            if score < best - 1e-12:
                best, current = score, trial
    for _ in range(REFINE_ROUNDS):
        for key in kept + new:
            current, best = _golden(objective, current, best, key, REFINE_EVALUATIONS)
    return _polish(objective, ratios_of, current, best, kept + new)


def split_alternate(n_rows: int, start: int = 0) -> BoolArray:
    """A fit mask that keeps every other row (sorted by size) for fitting.

    Args:
        n_rows: Number of rows.
        start: 0 fits rows 0, 2, 4 ...; 1 fits rows 1, 3, 5 ...

    Returns:
        (n_rows,) mask, True for fitted rows; a single row is always fitted.
    """
    mask = (np.arange(n_rows) % 2) == (start % 2)
    if n_rows == 1:
        mask[:] = True
    return mask
