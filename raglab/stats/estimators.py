"""Estimators: one class per interval method behind :func:`~raglab.stats.summary`, :func:`~raglab.stats.compare` and the gate.

An estimator receives a *sample* (:class:`PairedSample` for two paired runs, :class:`OneSample` for
one run) and the settings (:class:`Settings`), and returns a typed block of results for the metric
columns it was chosen for, one value per (row, column) cell, rows being ``overall`` then the
slices. The tables (:mod:`raglab.stats.tables`) turn those blocks into typed rows
(:mod:`raglab.stats.results`), and the gate decides from the rows' :class:`IntervalKind`.

Paired estimators (``compare(method=...)``):

* :class:`TangoScore` (``"score"``): Tango's score interval for paired pass rates, exact McNemar tests;
* :class:`Betting` (``"betting"``): the Waudby-Smith-Ramdas betting interval on bounded differences,
  one-sided p-values from the betting capital;
* :class:`PercentileBootstrap` (``"percentile"``), :class:`ExpandedPercentileBootstrap` (what
  ``"auto"`` takes for the rest) and :class:`BCaBootstrap` (``"bca"``): resampled intervals, with
  sign-flip tests (exact McNemar for pass/fail columns). Given clusters (``units=``) each resamples
  whole clusters: that is the cluster bootstrap.
* :class:`PoissonBootstrap` (``"poisson"``, never ``"auto"``): the Poisson bootstrap, weights keyed by
  a hash of (seed, question or cluster id, replicate), so that row order and partitioning do not
  matter (:mod:`raglab.dask` computes it from per-partition sums).

One-sample estimators (``summary(method=...)``): :class:`Proportion` (``"wilson"``, ``"exact"``,
``"normal"``), :class:`StudentT` (``"t"``, Wilson's interval at the effective n for scores known to
lie in [0, 1]), :class:`OneSampleBetting` (``"betting"``) and :class:`OneSampleBootstrap`
(``"percentile"``, ``"bca"``; expanded under ``"auto"``).

The ``"auto"`` choice is one function per table: :func:`choose_paired` and :func:`choose_one_sample`.

Adding an estimator (prediction-powered inference, say): subclass :class:`PairedEstimator`, set
``method``, ``kind`` and ``label``, implement ``eligible`` and ``estimate`` (return a
:class:`PairedBlock`, with its own ``estimate`` when it is not the mean difference), and
:func:`register_paired` an instance; the sample carries what it needs (``labels``, ``weights``,
``strata``) without changing the other estimators. The tables, the gate, the forest and the CLI
need no edit.
"""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy import stats as _sps

from raglab._registry import metric_info
from raglab._validation import warn
from raglab.stats._engine import (
    OVERALL,
    _boot_label,
    _bootstrap_cells,
    _is_binary,
    _one_blas_thread,
    _Resampler,
    _row_counts,
    _row_sums,
    _slice_codes,
    _unit_codes,
    usable_cells,
)
from raglab.stats.intervals import (
    _BETTING_LABEL,
    _CAPITAL_TEST,
    _SCORE_LABEL,
    _SEQUENTIAL_LABEL,
    _betting_bounds,
    _betting_p_values,
    _bounded_t,
    _sequence_bounds,
    _sequence_p_values,
    _t_bounds,
    _tango_bounds,
    proportion_interval,
)
from raglab.stats.ppi import ppi_mean, ppi_mean_clustered, ppi_mean_sampled, ppi_mean_strata
from raglab.stats.results import (
    CLUSTER_SIGN_FLIP_TEST,
    MCNEMAR_TEST,
    NO_TEST,
    PPI_TEST,
    SIGN_FLIP_TEST,
    IntervalKind,
    TestKind,
)
from raglab.stats.results import (
    test_kind as test_kind,  # re-exported: the test labels are declared in results
)
from raglab.stats.tests import _mcnemar_p, _one_sided_mcnemar

__all__ = [
    "PAIRED",
    "ONE_SAMPLE",
    "Betting",
    "SequentialBetting",
    "BCaBootstrap",
    "ExpandedPercentileBootstrap",
    "Layout",
    "OneSample",
    "OneSampleBetting",
    "OneSampleBootstrap",
    "PairedBlock",
    "PairedEstimator",
    "PairedSample",
    "Shared",
    "PercentileBootstrap",
    "PoissonBootstrap",
    "PredictionPowered",
    "Proportion",
    "Settings",
    "StudentT",
    "SummaryBlock",
    "TangoScore",
    "choose_one_sample",
    "choose_paired",
    "compare_methods",
    "register_paired",
    "interval_kind",
    "test_kind",
]

_FEW_DISCORDANT = 10  # below this many changed pass/fail questions a bootstrap interval under-covers


# --------------------------------------------------------------------------------------------------
# The input: where the questions sit (rows of the table) and what was scored
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The rows of a table: ``overall``, then one per slice; and the clusters, if any.

    ``codes`` gives each question's slice (0..G-1); ``units`` each question's cluster code (None:
    every question is its own unit).
    """

    codes: np.ndarray
    n_groups: int
    grouped: bool
    rows: tuple[str, ...]
    units: np.ndarray | None

    @classmethod
    def of(cls, n: int, slices: Any, units: Any) -> Layout:
        codes, labels = _slice_codes(slices, n)
        grouped = slices is not None
        rows = (OVERALL, *labels) if grouped else (OVERALL,)
        return cls(codes, max(len(labels), 1), grouped, rows, _unit_codes(units, n))

    @property
    def clustered(self) -> bool:
        return self.units is not None

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per (row, column) sums of the non-missing values; row order cannot change a bit of them."""
        return _row_sums(self.codes, self.n_groups, self.grouped, values)

    def select(self, r: int) -> np.ndarray | slice:
        """The questions of row ``r`` (a boolean mask, or every question for ``overall``)."""
        return (self.codes == r - 1) if (self.grouped and r) else slice(None)

    def counts(self, mask: np.ndarray) -> np.ndarray:
        """Per (row, column): how many questions have ``mask`` true, or the exact sum of integer values."""
        return _row_counts(self.codes, self.n_groups, self.grouped, mask)


@dataclass(frozen=True)
class Settings:
    """The settings every estimator of one call shares: the requested ``method``, ``level``,
    ``n_resamples``, ``seed`` (resolved) and ``n_permutations``."""

    method: str
    level: float
    n_resamples: int
    seed: int | None
    n_permutations: int = 0


@dataclass(frozen=True)
class PairedSample:
    """Two paired runs' scores: what a paired estimator receives.

    ``base`` and ``cand`` are (questions, metrics) with NaN for a missing score (for a judge metric:
    the judge's scores, on every question); ``bounds`` the declared ranges of metrics with no known
    bounds; ``layout`` the slices and clusters. For estimators that need more (prediction-powered
    inference: judge scores on every question, human labels on a random subset), the sample also
    carries ``labels`` (the reference scores ``(base, cand)``, each (questions, metrics), NaN where a
    question was not labelled), ``weights`` (one per question: 1 / its inclusion probability) and
    ``strata`` (one stratum code per question). The estimators here read none of the three.
    ``ids``: per question the label its Poisson bootstrap weights are keyed by (:class:`PoissonBootstrap`):
    its cluster's label with clusters, else its question id (None: its position in the table).
    Derived arrays (``diffs``, ``complete``, the discordant counts) are computed once, on first use.
    """

    names: tuple[str, ...]
    base: np.ndarray
    cand: np.ndarray
    layout: Layout
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    labels: tuple[np.ndarray, np.ndarray] | None = None
    weights: np.ndarray | None = None
    strata: np.ndarray | None = None
    ids: np.ndarray | None = None

    @cached_property
    def complete(self) -> np.ndarray:
        return ~(np.isnan(self.base) | np.isnan(self.cand))

    @cached_property
    def diffs(self) -> np.ndarray:
        return np.where(self.complete, self.cand - self.base, np.nan)

    @cached_property
    def binary(self) -> list[bool]:
        """Per metric: every complete pair is pass/fail (0 or 1) on both sides."""
        b, c, ok = self.base, self.cand, self.complete
        return [_is_binary(np.where(ok[:, j], b[:, j], np.nan)) and _is_binary(np.where(ok[:, j], c[:, j], np.nan))
                for j in range(len(self.names))]

    @cached_property
    def in_unit(self) -> list[bool]:
        """Per metric: every score on both sides lies in [0, 1]."""
        b, c = self.base, self.cand
        return [bool(np.nanmin(np.r_[b[:, j], c[:, j]], initial=0.0) >= 0
                     and np.nanmax(np.r_[b[:, j], c[:, j]], initial=1.0) <= 1) for j in range(len(self.names))]

    @cached_property
    def n_pairs(self) -> np.ndarray:
        return self.layout.counts(self.complete)

    @cached_property
    def down(self) -> np.ndarray:
        return self.layout.counts(self.diffs == -1)

    @cached_property
    def up(self) -> np.ndarray:
        return self.layout.counts(self.diffs == 1)

    def cell(self, r: int, j: int) -> np.ndarray:
        """The complete paired differences of metric ``j`` in row ``r``."""
        layout = self.layout
        mask = self.complete[:, j] & ((layout.codes == r - 1) if (layout.grouped and r) else True)
        return self.diffs[mask, j]


@dataclass(frozen=True)
class OneSample:
    """One run's scores: what a one-sample estimator receives (``values`` is (questions, metrics))."""

    names: tuple[str, ...]
    values: np.ndarray
    layout: Layout
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    weights: np.ndarray | None = None

    @cached_property
    def binary(self) -> list[bool]:
        return [_is_binary(self.values[:, j]) for j in range(len(self.names))]

    @cached_property
    def in_unit(self) -> list[bool]:
        v = self.values
        return [bool(np.nanmin(v[:, j], initial=0.0) >= 0 and np.nanmax(v[:, j], initial=1.0) <= 1)
                for j in range(len(self.names))]

    @cached_property
    def n_valid(self) -> np.ndarray:
        """Per (row, metric): the questions with a score."""
        return self.layout.counts(~np.isnan(self.values))

    @cached_property
    def sums(self) -> np.ndarray:
        return self.layout.sums(self.values)

    def cell(self, r: int, j: int) -> np.ndarray:
        """The scores of metric ``j`` in row ``r``, without missing ones."""
        selected = self.values[self.layout.select(r), j]
        return selected[~np.isnan(selected)]


# --------------------------------------------------------------------------------------------------
# The typed results of an estimator: one block of cells per estimator and call
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedBlock:
    """What a paired estimator returns for its ``columns``: arrays of shape (rows, len(columns)).

    ``label`` is the interval's display label, ``kind`` its family; per column: ``tests`` (the test's
    label), ``test_kinds``, ``seeds`` and ``n_permutations``; ``n_resamples`` for resampled blocks.
    ``estimate``: the point estimate per cell when it is not the mean paired difference over the
    complete pairs (a prediction-powered estimate is not); None takes that mean (``shared.engine.theta``).
    """

    columns: tuple[int, ...]
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    p_decrease: np.ndarray
    p_increase: np.ndarray
    label: str
    kind: IntervalKind
    tests: tuple[str, ...]
    test_kinds: tuple[TestKind, ...]
    seeds: tuple[int | None, ...]
    n_permutations: tuple[int | None, ...]
    n_resamples: int | None = None
    estimate: np.ndarray | None = None
    n_labeled: np.ndarray | None = None  # per cell: questions labelled in both runs (prediction-powered)


@dataclass(frozen=True)
class SummaryBlock:
    """What a one-sample estimator returns for its ``columns``: arrays of shape (rows, len(columns));
    ``labels`` per cell (the t interval's label depends on the cell)."""

    columns: tuple[int, ...]
    mean: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    labels: np.ndarray
    kind: IntervalKind
    n_resamples: int | None
    seed: int | None


def _cells(sample: PairedSample | OneSample, columns: Sequence[int]) -> np.ndarray:
    return np.full((len(sample.layout.rows), len(columns)), np.nan)


class Shared:
    """What the estimators of one paired call share: the resampler ``engine`` (its ``theta`` is each
    cell's mean difference, the ``diff`` of every row whose block gives no ``estimate`` of its own; its
    ``sign_flip`` runs the permutation tests) and, when a bootstrap estimator was chosen, the bootstrap
    distribution ``boot`` over *all* metrics with its bounds ``low`` and ``high``, drawn once, so that
    every bootstrap row of a call describes the same resampled question sets."""

    def __init__(self, sample: PairedSample, settings: Settings, bootstrap: _PairedBootstrap | None) -> None:
        self.sample, self.settings = sample, settings
        layout = sample.layout
        if bootstrap is not None:
            self.engine, self.boot, self.low, self.high = _bootstrap_cells(
                sample.diffs, layout.codes, layout.n_groups, grouped=layout.grouped, units=layout.units,
                level=settings.level, method=bootstrap.boot_method, n_resamples=settings.n_resamples,
                seed=settings.seed, expand=bootstrap.expand,
            )
        else:  # no interval and no test reads a resample (Tango's, betting bounds)
            # the clusters still count (n_clusters and the gate's cluster minimum read them)
            self.engine = _Resampler(sample.diffs, layout.codes, layout.n_groups, units=layout.units,
                                     grouped=layout.grouped)
            self.boot = None


# --------------------------------------------------------------------------------------------------
# Paired estimators
# --------------------------------------------------------------------------------------------------


class PairedEstimator(abc.ABC):
    """An interval (and its tests) on the paired difference ``cand - base``, per metric and slice.

    Subclasses set ``method`` (the ``compare(method=...)`` value), ``kind`` (what the gate may assume)
    and ``label`` (the ``method`` column's text), and implement :meth:`eligible` (may it run on metric
    ``j``?) and :meth:`estimate` (a :class:`PairedBlock` for the metrics it was chosen for).
    ``resampled`` estimators read the call's shared bootstrap distribution (``shared.boot``).
    """

    method: ClassVar[str]
    kind: ClassVar[IntervalKind]
    label: ClassVar[str]
    resampled: ClassVar[bool] = False
    #: whether method="auto" tries it (in the order of PAIRED) before the expanded percentile bootstrap
    in_auto: ClassVar[bool] = False
    #: what it needs of a metric, for the error when a named method does not fit every metric
    requirement: ClassVar[str] = "metrics it can estimate"

    @abc.abstractmethod
    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        """Whether metric ``j`` of ``sample`` fits this estimator (``auto``: for the automatic choice)."""

    @abc.abstractmethod
    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        """The block of results for the metrics ``columns`` of ``sample``, every row (overall, slices)."""

    def labels(self) -> tuple[str, ...]:
        """Every ``method`` label this estimator writes (the gate maps labels back to its ``kind``)."""
        return (self.label,)

    def refusal(self, others: Sequence[str]) -> str:
        """Why ``compare(method=self.method)`` refuses the metrics ``others``."""
        return f"needs {self.requirement}; {list(others)} are not"


def _mcnemar(sample: PairedSample, columns: Sequence[int], settings: Settings) -> tuple[np.ndarray, ...]:
    """Exact McNemar p-values (two-sided only when tests were asked for) for pass/fail columns."""
    down, up = sample.down[:, columns], sample.up[:, columns]
    p_decrease, p_increase = _one_sided_mcnemar(down, up)
    p_value = _mcnemar_p(down, up) if settings.n_permutations else np.full(down.shape, np.nan)
    return p_value, p_decrease, p_increase


class TangoScore(PairedEstimator):
    """Tango's score interval for two paired pass rates, with the exact McNemar test.

    Never zero-width however few pairs differ; valid at small n (Tango 1998).
    """

    method = "score"
    kind = IntervalKind.SCORE
    label = _SCORE_LABEL
    in_auto = True

    def refusal(self, others: Sequence[str]) -> str:
        return (f"is Tango's interval for pass/fail metrics without clusters; {list(others)} are not pass/fail "
                "(or units= was given)")

    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        return not sample.layout.clustered and sample.binary[j]

    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        cols = list(columns)
        n = sample.n_pairs[:, cols]
        low, high = _tango_bounds(sample.down[:, cols], sample.up[:, cols], n, settings.level)
        no_pairs = n < 2  # one pair says nothing about sampling error, as for the bootstrap
        low, high = np.where(no_pairs, np.nan, low), np.where(no_pairs, np.nan, high)
        p_value, p_decrease, p_increase = _mcnemar(sample, cols, settings)
        test, kind = (MCNEMAR_TEST, TestKind.EXACT) if settings.n_permutations else (NO_TEST, TestKind.NONE)
        k = len(cols)
        return PairedBlock(tuple(cols), low, high, p_value, p_decrease, p_increase, self.label, self.kind,
                           (test,) * k, (kind,) * k, (None,) * k, (None,) * k)


class Betting(PairedEstimator):
    """The betting interval of Waudby-Smith and Ramdas (2023) on differences of bounded scores.

    Each side holds at ``(1 - level) / 2`` for any distribution on the bounds and any n; the
    one-sided p-values are ``min(1, 1 / K)``, ``K`` the betting capital at 0 the bound is read from.
    """

    method = "betting"
    kind = IntervalKind.BETTING
    label = _BETTING_LABEL
    in_auto = True

    def refusal(self, others: Sequence[str]) -> str:
        return ("needs scores known to lie in [0, 1] (or declared bounds=) without units=; "
                f"{list(others)} have values outside [0, 1] (or units= was given)")

    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        if sample.layout.clustered:
            return False
        name = sample.names[j]
        if name in sample.bounds:
            return True
        return sample.in_unit[j] and (not auto or metric_info(name).bounded)

    def cell(self, x: np.ndarray, lower: float, upper: float, settings: Settings) -> tuple[float, float, float, float]:
        """``(low, high, p_decrease, p_increase)`` for the differences ``x`` known to lie in [lower, upper]."""
        stream = [settings.seed, 2]  # the betting orders' own stream
        low, high = _betting_bounds(x, lower, upper, settings.level, stream)
        # the capital the bounds are read from: on the same range (declared bounds included)
        return (low, high, *_betting_p_values(x, lower, upper, settings.level, stream))

    def seeds(self, settings: Settings) -> Any:
        return settings.seed

    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        cols = list(columns)
        low, high, p_decrease, p_increase = (_cells(sample, cols) for _ in range(4))
        for c, j in enumerate(cols):
            lo, hi = sample.bounds.get(sample.names[j], (0.0, 1.0))
            for r in range(len(sample.layout.rows)):
                low[r, c], high[r, c], p_decrease[r, c], p_increase[r, c] = self.cell(
                    sample.cell(r, j), lo - hi, hi - lo, settings)
        p_value = np.minimum(1.0, 2.0 * np.minimum(p_decrease, p_increase))
        k = len(cols)
        return PairedBlock(tuple(cols), low, high, p_value, p_decrease, p_increase, self.label, self.kind,
                           (_CAPITAL_TEST,) * k, (TestKind.CAPITAL,) * k, (self.seeds(settings),) * k, (None,) * k)


class SequentialBetting(Betting):
    """The betting confidence *sequence* (Waudby-Smith and Ramdas 2023) on differences in arrival order.

    For a canary looked at every hour: the rows are taken in the order given (``gate(...,
    sequential=True)`` sorts them by time), the bets do not depend on how many rows will come, and a
    mean once rejected stays rejected, so each side holds at ``(1 - level) / 2`` at every look at
    once; the p-values ``min(1, 1 / max_s K_s)`` are anytime-valid. Wider than :class:`Betting` at any
    one look: the price of looking as often as one likes. Never chosen by ``auto``.
    """

    method = "sequential"
    label = _SEQUENTIAL_LABEL
    in_auto = False

    def cell(self, x: np.ndarray, lower: float, upper: float, settings: Settings) -> tuple[float, float, float, float]:
        low, high = _sequence_bounds(x, lower, upper, settings.level)
        return (low, high, *_sequence_p_values(x, lower, upper, settings.level))

    def seeds(self, settings: Settings) -> Any:
        return None  # no random orders: the arrival order is the data's


class _PairedBootstrap(PairedEstimator):
    """A bootstrap interval on the mean difference (questions, or whole clusters, resampled), with
    exact McNemar tests for pass/fail columns (no clusters) and sign flips for the others (one-sided
    p-values from the bootstrap distribution when ``n_permutations=0``)."""

    kind = IntervalKind.BOOTSTRAP
    resampled = True
    shown: ClassVar[str]  # the method's name inside the label
    boot_method: ClassVar[str] = "percentile"  # the bounds read off the shared bootstrap distribution
    expand: ClassVar[bool] = False  # the expanded percentile level (Hesterberg 2015)

    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        return True

    def labels(self) -> tuple[str, ...]:
        return tuple(_boot_label(self.shown, paired=True, clustered=c) for c in (False, True))

    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        cols = list(columns)
        if self.method in ("percentile", "bca"):
            self._warn_if_few_discordant(sample, cols)
        low, high = shared.low[:, cols], shared.high[:, cols]
        p_value, p_decrease, p_increase = (_cells(sample, cols) for _ in range(3))
        tests, kinds = [NO_TEST] * len(cols), [TestKind.NONE] * len(cols)
        permutations: list[int | None] = [None] * len(cols)
        exact = [c for c, j in enumerate(cols) if sample.binary[j] and not sample.layout.clustered]
        flipped = [c for c in range(len(cols)) if c not in exact]
        if exact:
            p_value[:, exact], p_decrease[:, exact], p_increase[:, exact] = _mcnemar(
                sample, [cols[c] for c in exact], settings)
            if settings.n_permutations:
                for c in exact:
                    tests[c], kinds[c] = MCNEMAR_TEST, TestKind.EXACT
        if flipped and settings.n_permutations:
            rng = np.random.default_rng([settings.seed, 1])  # a stream apart from the bootstrap's
            sided = shared.engine.sign_flip([cols[c] for c in flipped], settings.n_permutations, rng)
            p_value[:, flipped], p_decrease[:, flipped], p_increase[:, flipped] = sided
            for c in flipped:
                tests[c] = CLUSTER_SIGN_FLIP_TEST if sample.layout.clustered else SIGN_FLIP_TEST
                kinds[c], permutations[c] = TestKind.SIGN_FLIP, settings.n_permutations
        elif flipped:  # no permutations: one-sided p-values from the bootstrap distribution
            boot = shared.boot[:, :, [cols[c] for c in flipped]]
            with np.errstate(invalid="ignore"):
                drawn = (~np.isnan(boot)).sum(axis=0)
                p_decrease[:, flipped] = (1.0 + (boot >= 0).sum(axis=0)) / (drawn + 1.0)
                p_increase[:, flipped] = (1.0 + (boot <= 0).sum(axis=0)) / (drawn + 1.0)
        label = _boot_label(self.shown, paired=True, clustered=sample.layout.clustered)
        return PairedBlock(tuple(cols), low, high, p_value, p_decrease, p_increase, label, self.kind,
                           tuple(tests), tuple(kinds), (settings.seed,) * len(cols), tuple(permutations),
                           n_resamples=settings.n_resamples)

    def _warn_if_few_discordant(self, sample: PairedSample, cols: Sequence[int]) -> None:
        rare = [sample.names[j] for j in cols
                if sample.binary[j] and ((sample.down[:, j] + sample.up[:, j]) < _FEW_DISCORDANT).any()]
        if rare:
            warn(
                f"compare: method={self.method!r} on pass/fail metrics {rare} with fewer than {_FEW_DISCORDANT} "
                "discordant pairs in some rows: bootstrap intervals under-cover there (they collapse towards the "
                "few changed questions). method='auto' uses Tango's score interval, which does not.",
                UserWarning,
            )


class PercentileBootstrap(_PairedBootstrap):
    """The plain percentile bootstrap (as ``scipy.stats.bootstrap(method="percentile")``)."""

    method = "percentile"
    shown = "percentile"
    label = _boot_label("percentile", paired=True, clustered=False)


class ExpandedPercentileBootstrap(_PairedBootstrap):
    """The expanded percentile bootstrap (Hesterberg 2015): the percentile interval at the level whose
    normal quantile is ``sqrt(n / (n - 1)) * t(n - 1)``; what ``"auto"`` takes for unbounded metrics
    and for clusters."""

    method = "auto"  # not a method= value of its own: the automatic choice's bootstrap
    shown = "expanded percentile"
    expand = True
    label = _boot_label("expanded percentile", paired=True, clustered=False)


class BCaBootstrap(_PairedBootstrap):
    """The bias-corrected and accelerated bootstrap (jackknife acceleration, as scipy's ``"BCa"``)."""

    method = "bca"
    shown = "bca"
    boot_method = "bca"
    label = _boot_label("bca", paired=True, clustered=False)


_PPI_LABEL = "paired prediction-powered (PPI++)"
#: the paired PPI label's suffix when labels were drawn with unequal probabilities (:func:`raglab.stats.ppi_mean_sampled`)
_SAMPLED = "Horvitz-Thompson"


def _unequal(weights: np.ndarray, lab: np.ndarray, strata: np.ndarray | None) -> bool:
    """Whether the weights of the questions ``lab`` differ (within a stratum, when stratified)."""
    groups = [np.ones(lab.size, dtype=bool)] if strata is None else [strata == h for h in np.unique(strata)]
    return any(np.ptp(weights[lab & g]) > 1e-12 * np.abs(weights[lab & g]).max() for g in groups if (lab & g).any())


class PredictionPowered(PairedEstimator):
    """Paired prediction-powered inference on per-question differences (PPI++, arXiv 2311.01453).

    For a judged metric with human labels on a random subset of questions, labelled in *both* runs:
    the judge's difference ``cand - base`` on every complete pair is the prediction, the human
    difference on the labelled pairs the label, and the interval is
    :func:`raglab.stats.ppi_mean`'s on those differences (clustered with ``units=``, stratified by
    the sample's ``strata`` on the overall row, labels weighted by the sample's ``weights``). When the
    labelled questions were drawn with unequal probabilities (within a stratum; ``weights`` are
    ``1 / inclusion probability``), the interval is the design-based one over every complete pair,
    :func:`raglab.stats.ppi_mean_sampled` (Horvitz-Thompson; the label says so). The
    estimate is the PPI estimate of the *human* mean difference, not the judge's. Two-sided and
    one-sided p-values are normal (the estimate over its standard error). The gate reviews rows with
    fewer than :data:`raglab.stats.MIN_LABELS` labelled questions.
    """

    method = "ppi"
    kind = IntervalKind.PREDICTION_POWERED
    label = _PPI_LABEL
    in_auto = True
    requirement = "human labels (compare(..., human=...)) in both runs"

    def labels(self) -> tuple[str, ...]:
        plain = (self.label, self.label + ", clustered", self.label + ", stratified",
                 self.label + ", stratified, clustered")
        return (*plain, *(x + ", " + _SAMPLED for x in plain))

    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        if sample.labels is None:
            return False
        both = ~np.isnan(sample.labels[0][:, j]) & ~np.isnan(sample.labels[1][:, j])
        return bool(both.any())

    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        assert sample.labels is not None
        cols = list(columns)
        low, high, est, p_value, p_decrease, p_increase, n_lab = (_cells(sample, cols) for _ in range(7))
        layout = sample.layout
        human = sample.labels[1] - sample.labels[0]
        label = self.label + (", stratified" if sample.strata is not None else "") + (
            ", clustered" if layout.clustered else "")
        used_sampled = False
        for c, j in enumerate(cols):
            for r in range(len(layout.rows)):
                rows = np.zeros(sample.diffs.shape[0], dtype=bool)
                rows[layout.select(r)] = True
                rows &= sample.complete[:, j]
                lab = rows & ~np.isnan(human[:, j])
                unl = rows & np.isnan(human[:, j])
                n_lab[r, c] = lab.sum()
                if lab.sum() < 2 or not unl.any():
                    continue
                stratified = r == 0 and sample.strata is not None
                sampled = sample.weights is not None and _unequal(sample.weights, lab,
                                                                  sample.strata if stratified else None)
                args = (human[lab, j], sample.diffs[lab, j], sample.diffs[unl, j])
                kw: dict[str, Any] = {"ci": settings.level}
                if stratified:
                    kw.update(strata_labeled=sample.strata[lab], strata_unlabeled=sample.strata[unl])
                if layout.clustered:
                    kw.update(units_labeled=layout.units[lab], units_unlabeled=layout.units[unl])
                try:
                    if sampled:
                        # labels drawn with unequal probabilities (within a stratum): the design-based estimator
                        # over every complete pair, the labelled ones inside it (Horvitz-Thompson)
                        assert sample.weights is not None
                        iv = ppi_mean_sampled(*args, 1.0 / sample.weights[lab], **kw)
                        used_sampled = True
                    else:
                        kw["weights"] = None if sample.weights is None else sample.weights[lab]
                        if stratified:
                            iv = ppi_mean_strata(*args, **kw)
                        elif layout.clustered:
                            iv = ppi_mean_clustered(*args, **kw)
                        else:
                            iv = ppi_mean(*args, **kw)
                except ValueError as error:
                    warn(f"compare: no prediction-powered interval for {sample.names[j]!r} in row "
                         f"{layout.rows[r]!r}: {error}", UserWarning)
                    continue
                est[r, c], low[r, c], high[r, c] = iv
                if iv.se > 0:
                    z = iv.estimate / iv.se
                    p_decrease[r, c] = float(_sps.norm.cdf(z))
                    p_increase[r, c] = float(_sps.norm.sf(z))
                    p_value[r, c] = min(1.0, 2 * min(p_decrease[r, c], p_increase[r, c]))
        k = len(cols)
        if used_sampled:
            label += ", " + _SAMPLED
        return PairedBlock(tuple(cols), low, high, p_value, p_decrease, p_increase, label, self.kind,
                           (PPI_TEST,) * k, (TestKind.NORMAL,) * k, (None,) * k, (None,) * k,
                           estimate=est, n_labeled=n_lab)


# --------------------------------------------------------------------------------------------------
# The Poisson bootstrap: weights keyed by (seed, question or cluster id, replicate), any partitioning
# --------------------------------------------------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_POISSON_LABEL = "Poisson"  # inside the label: "paired bootstrap (Poisson)"
_WEIGHT_CELLS = 2**21  # rows x replicates of weights held at once


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Steele, Lea and Flood's SplitMix64 finaliser, element-wise on uint64 (wrapping arithmetic)."""
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _poisson_cdf() -> np.ndarray:
    """The Poisson(1) distribution function at 0, 1, ..., 31 (exactly rounded partial sums; 1.0 from about 18)."""
    terms = [math.exp(-1.0) / math.factorial(k) for k in range(32)]
    cdf = np.array([math.fsum(terms[:k + 1]) for k in range(32)])
    cdf[-1] = 1.0  # every uniform below 1 maps to at most 31: a weight times a score stays exact (5 bits)
    return cdf


_POISSON_CDF = _poisson_cdf()


def _id_keys(ids: Any, seed: int) -> np.ndarray:
    """A 64-bit key per question from its id's text and the seed (pandas' stable SipHash of the text)."""
    import pandas as pd

    text = pd.Series(np.asarray(ids, dtype=object)).astype(str).to_numpy(dtype=object)
    hashed = pd.util.hash_array(text, categorize=False)
    return _splitmix64(hashed ^ _splitmix64(np.array([seed % 2**64], dtype=np.uint64)))


def _poisson_weights(keys: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Poisson(1) weights of replicates ``start..stop-1`` for questions with ``keys``: (questions, replicates) uint8.

    Replicate ``b`` of a question is the inverse Poisson(1) distribution function at the uniform of
    ``splitmix64(key ^ splitmix64(b))``: a pure function of (seed, id, b), whatever else is in the table.

    Examples
    --------
    >>> keys = _id_keys(["q1", "q2", "q3"], seed=0)
    >>> w = _poisson_weights(keys, 0, 4)
    >>> w.shape, bool((w == _poisson_weights(keys[::-1], 0, 4)[::-1]).all())
    ((3, 4), True)
    """
    stream = _splitmix64(np.arange(start, stop, dtype=np.uint64))
    bits = _splitmix64(np.asarray(keys, dtype=np.uint64)[:, None] ^ stream[None, :])
    uniform = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.searchsorted(_POISSON_CDF, uniform, side="right").astype(np.uint8)


def _exact_columns(x: np.ndarray) -> np.ndarray:
    """A few rows of floats whose column sums are *exactly* the column sums of ``x`` (any row order).

    Rump, Ogita and Oishi's error-free extraction (AccSum), one column per replicate: with
    ``sigma = 2**(M + ceil(log2 max|x|))`` and ``2**M >= rows + 2``, ``(sigma + x) - sigma`` rounds
    each value to a grid on which the column's sum is exact; what is left goes round again.
    """
    x = np.asarray(x, dtype=float)
    width = x.shape[1] if x.ndim == 2 else 0
    if not x.size:
        return np.zeros((0, width))
    m = math.ceil(math.log2(x.shape[0] + 2))
    out = []
    for _ in range(2200 // max(1, 52 - m) + 2):
        mu = np.max(np.abs(x), axis=0)
        if not mu.any():
            break
        sigma = np.ldexp(1.0, m + np.frexp(mu)[1])
        q = (sigma + x) - sigma
        out.append(q.sum(axis=0))
        x = x - q
    return np.array(out).reshape(-1, width)


def _rounded_columns(terms: np.ndarray, width: int) -> np.ndarray:
    """The column sums of ``terms``, each correctly rounded once (``math.fsum``)."""
    if not terms.shape[0]:
        return np.zeros(width)
    return np.array([math.fsum(column) for column in terms.T])


@dataclass(frozen=True)
class PoissonSums:
    """Per (slice, metric) cell, the ``n_resamples`` replicate sums of the Poisson bootstrap: ``weight``
    (sum of the weights of the complete pairs, exact integers, (groups, metrics, B)) and ``terms``
    (per cell a (t, B) float array whose column sums are exactly sum_i w_ib d_i). Added exactly (``+``),
    so the sums of a table do not depend on how its rows were partitioned or ordered."""

    weight: np.ndarray
    terms: tuple[tuple[np.ndarray, ...], ...]

    def __add__(self, other: PoissonSums) -> PoissonSums:
        terms = tuple(tuple(_exact_columns(np.concatenate([a, b])) for a, b in zip(ra, rb))
                      for ra, rb in zip(self.terms, other.terms))
        return PoissonSums(self.weight + other.weight, terms)

    def cell(self, cells: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """``(sum w d, sum w)`` per replicate over the cells ``[(group, metric), ...]``, each rounded once."""
        width = self.weight.shape[2]
        terms = _exact_columns(np.concatenate([self.terms[g][j] for g, j in cells] or [np.zeros((0, width))]))
        weight = np.sum([self.weight[g, j] for g, j in cells], axis=0) if cells else np.zeros(width, np.int64)
        return _rounded_columns(terms, width), weight

    @classmethod
    def of(cls, keys: np.ndarray, diffs: np.ndarray, codes: np.ndarray, n_groups: int,
           n_resamples: int) -> PoissonSums:
        """The replicate sums of the paired differences ``diffs`` (questions, metrics; NaN: no pair),
        questions keyed by ``keys`` (:func:`_id_keys`) and sliced by ``codes`` (0..n_groups-1)."""
        n, m = diffs.shape
        complete = ~np.isnan(diffs)
        d = np.where(complete, diffs, 0.0)
        width = n_groups * m  # one column per (group, metric) cell
        weight = np.zeros((width, n_resamples), dtype=np.int64)
        step = max(1, _WEIGHT_CELLS // max(1, n_resamples))
        groups = np.arange(n_groups)
        with _one_blas_thread(n * n_resamples):  # thin products: BLAS threads cost more than they give
            parts = cls._chunks(keys, d, complete, codes, groups, weight, step, n_resamples)
        stacked = np.stack(parts) if parts else np.zeros((0, width, n_resamples))
        terms = tuple(tuple(_exact_columns(stacked[:, g * m + j, :]) for j in range(m)) for g in range(n_groups))
        return cls(weight.reshape(n_groups, m, n_resamples), terms)

    @staticmethod
    def _chunks(keys: np.ndarray, d: np.ndarray, complete: np.ndarray, codes: np.ndarray, groups: np.ndarray,
                weight: np.ndarray, step: int, n_resamples: int) -> list[np.ndarray]:
        """The exact products of the rows, ``step`` at a time (adds the weights' sums into ``weight``)."""
        width = weight.shape[0]
        parts: list[np.ndarray] = []
        for start in range(0, d.shape[0], step):
            rows = slice(start, start + step)
            w = _poisson_weights(keys[rows], 0, n_resamples).astype(float)
            member = (np.asarray(codes[rows])[:, None] == groups[None, :])[:, :, None]
            in_cell = (member & complete[rows][:, None, :]).reshape(-1, width).astype(float)
            weight += np.rint(in_cell.T @ w).astype(np.int64)  # integers below 2**53: exact in any order
            parts.extend(_grid_dot((member * d[rows][:, None, :]).reshape(-1, width), w))
        return parts


def _grid_dot(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    """Arrays whose sum is *exactly* ``x.T @ w``, for weights ``w`` that are integers in [0, 31].

    Each pass rounds every column of ``x`` to a grid (Rump, Ogita and Oishi's extraction with
    ``sigma = 2**(M + ceil(log2 max|x|))``, ``2**M >= 64 rows``) on which every product and partial sum
    of the product is an integer multiple of the grid below ``2**53`` of it, so the matrix product
    (BLAS, in any order) is exact; what rounding left goes round again.
    """
    x = np.array(x, dtype=float)
    if not x.size:
        return []
    m = math.ceil(math.log2(64 * x.shape[0] + 2))
    out = []
    for _ in range(2200 // max(1, 52 - m) + 2):
        mu = np.max(np.abs(x), axis=0)
        if not mu.any():
            break
        sigma = np.ldexp(1.0, m + np.frexp(mu)[1])
        q = (sigma + x) - sigma
        out.append(q.T @ w)
        x -= q
    return out


def _poisson_replicates(sums: PoissonSums, grouped: bool) -> np.ndarray:
    """The replicate estimates ``sum w d / sum w`` per (row, metric, replicate), rows ``overall`` then the
    slices (NaN where a replicate weighs no pair)."""
    n_groups, m, width = sums.weight.shape
    rows = [list(range(n_groups))] + ([[g] for g in range(n_groups)] if grouped else [])
    out = np.full((len(rows), m, width), np.nan)
    for r, groups in enumerate(rows):
        for j in range(m):
            total, weight = sums.cell([(g, j) for g in groups])
            with np.errstate(invalid="ignore", divide="ignore"):
                out[r, j] = np.where(weight > 0, total / np.where(weight > 0, weight, 1), np.nan)
    return out


def _poisson_bounds(replicates: np.ndarray, usable: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """Percentile bounds and the one-sided p-values ``(1 + #{rep >= 0}) / (B' + 1)`` (and ``<= 0``) per cell,
    from (rows, metrics, B) replicates (NaN ones skipped); NaN bounds where ``usable`` is false."""
    shape = replicates.shape[:2]
    low, high, p_decrease, p_increase = (np.full(shape, np.nan) for _ in range(4))
    alpha = (1.0 - level) / 2.0
    for r in range(shape[0]):
        for c in range(shape[1]):
            x = replicates[r, c]
            x = x[~np.isnan(x)]
            if not x.size:
                continue
            p_decrease[r, c] = (1.0 + np.count_nonzero(x >= 0)) / (x.size + 1.0)
            p_increase[r, c] = (1.0 + np.count_nonzero(x <= 0)) / (x.size + 1.0)
            if usable[r, c]:
                low[r, c], high[r, c] = np.quantile(x, [alpha, 1.0 - alpha])
    return low, high, p_decrease, p_increase


def _poisson_block(columns: Sequence[int], replicates: np.ndarray, usable: np.ndarray, binary: Sequence[bool],
                   clustered: bool, down: np.ndarray, up: np.ndarray, settings: Settings) -> PairedBlock:
    """The block of :class:`PoissonBootstrap` from its replicates (shared by pandas and partition statistics):
    exact McNemar tests for pass/fail columns without clusters, the bootstrap distribution's one-sided
    p-values for the others."""
    cols = list(columns)
    low, high, p_decrease, p_increase = _poisson_bounds(replicates, usable, settings.level)
    p_value = np.full(low.shape, np.nan)
    tests, kinds = [NO_TEST] * len(cols), [TestKind.NONE] * len(cols)
    exact = [c for c in range(len(cols)) if binary[c] and not clustered]
    if exact:
        p_decrease[:, exact], p_increase[:, exact] = _one_sided_mcnemar(down[:, exact], up[:, exact])
        if settings.n_permutations:
            p_value[:, exact] = _mcnemar_p(down[:, exact], up[:, exact])
            for c in exact:
                tests[c], kinds[c] = MCNEMAR_TEST, TestKind.EXACT
    label = _boot_label(_POISSON_LABEL, paired=True, clustered=clustered)
    return PairedBlock(tuple(cols), low, high, p_value, p_decrease, p_increase, label, IntervalKind.BOOTSTRAP,
                       tuple(tests), tuple(kinds), (settings.seed,) * len(cols), (None,) * len(cols),
                       n_resamples=settings.n_resamples)


class PoissonBootstrap(PairedEstimator):
    """The Poisson bootstrap of the mean paired difference: replicate ``b`` weighs question ``i`` by
    ``w_ib ~ Poisson(1)`` drawn from a hash of (seed, question id, b), or of the cluster's label with
    clusters, and estimates ``sum_i w_ib d_i / sum_i w_ib``; the interval is the replicates' percentile
    interval. The weights depend on nothing else, so the result is the same whatever the row order or
    partitioning (:mod:`raglab.dask` computes it from per-partition sums, bit for bit). Tests: exact
    McNemar for pass/fail metrics without clusters, else one-sided p-values from the replicates.
    Never chosen by ``auto``.
    """

    method = "poisson"
    kind = IntervalKind.BOOTSTRAP
    label = _boot_label(_POISSON_LABEL, paired=True, clustered=False)
    in_auto = False

    def eligible(self, sample: PairedSample, j: int, *, auto: bool) -> bool:
        return True

    def labels(self) -> tuple[str, ...]:
        return tuple(_boot_label(_POISSON_LABEL, paired=True, clustered=c) for c in (False, True))

    def estimate(self, sample: PairedSample, columns: Sequence[int], settings: Settings,
                 shared: Shared) -> PairedBlock:
        cols = list(columns)
        layout = sample.layout
        n = sample.diffs.shape[0]
        ids = sample.ids if sample.ids is not None else np.arange(n)
        assert settings.seed is not None
        sums = PoissonSums.of(_id_keys(ids, settings.seed), sample.diffs[:, cols], layout.codes, layout.n_groups,
                              settings.n_resamples)
        replicates = _poisson_replicates(sums, layout.grouped)
        units = shared.engine.units_per_cell[:, cols]
        usable = usable_cells(units, layout.clustered)
        return _poisson_block(cols, replicates, usable, [sample.binary[j] for j in cols], layout.clustered,
                              sample.down[:, cols], sample.up[:, cols], settings)


#: the paired estimators by their ``compare(method=...)`` value, in the order the auto choice tries them
PAIRED: dict[str, PairedEstimator] = {
    "ppi": PredictionPowered(),  # first: with human labels on a metric, auto takes it
    "score": TangoScore(),
    "betting": Betting(),
    "sequential": SequentialBetting(),
    "percentile": PercentileBootstrap(),
    "bca": BCaBootstrap(),
    "poisson": PoissonBootstrap(),  # never auto: the bootstrap that partition statistics can give
}
_AUTO_BOOTSTRAP = ExpandedPercentileBootstrap()


def compare_methods() -> tuple[str, ...]:
    """The values ``compare(method=...)`` takes: ``"auto"`` and every registered paired estimator's.

    Examples
    --------
    >>> methods = compare_methods()
    >>> methods[0], {"score", "betting", "percentile", "bca", "ppi"} <= set(methods)
    ('auto', True)
    """
    return ("auto", *PAIRED)


def register_paired(estimator: PairedEstimator) -> None:
    """Make ``estimator`` available as ``compare(method=estimator.method)`` (and to the gate's kinds).

    Examples
    --------
    >>> register_paired(PAIRED["score"])   # registering again replaces the entry
    >>> "score" in compare_methods()
    True
    """
    if not isinstance(estimator, PairedEstimator) or estimator.method in ("auto", ""):
        raise TypeError(f"register_paired needs a PairedEstimator with a method name other than 'auto', got {estimator!r}")
    PAIRED[estimator.method] = estimator


def choose_paired(sample: PairedSample, method: str) -> list[PairedEstimator]:
    """The estimator of each metric of ``sample`` for ``compare(method=method)``.

    ``"auto"``: Tango's score interval for pass/fail metrics, the betting interval for metrics known to
    lie in [0, 1] (or with declared bounds), the expanded percentile bootstrap for the rest and with
    clusters. A named interval method must fit every metric (else ValueError naming the ones it does not).

    Examples
    --------
    >>> import numpy as np
    >>> base = np.array([[1, 0.2, 3.0], [0, 0.5, 2.0], [1, 0.9, 4.0]])
    >>> sample = PairedSample(("hit@5", "recall@5", "latency_s"), base, base[::-1].copy(), Layout.of(3, None, None))
    >>> [type(e).__name__ for e in choose_paired(sample, "auto")]
    ['TangoScore', 'Betting', 'ExpandedPercentileBootstrap']
    """
    if method != "auto":
        wanted = PAIRED[method]
        others = [name for j, name in enumerate(sample.names) if not wanted.eligible(sample, j, auto=False)]
        if others:
            raise ValueError(f"compare: method={method!r} {wanted.refusal(others)}. "
                             "Use method='auto' to take the bootstrap for those.")
        return [wanted] * len(sample.names)
    tried = [e for e in PAIRED.values() if e.in_auto]
    return [next((e for e in tried if e.eligible(sample, j, auto=True)), _AUTO_BOOTSTRAP)
            for j in range(len(sample.names))]


def run_paired(sample: PairedSample, settings: Settings) -> tuple[list[PairedBlock], Shared]:
    """Choose each metric's estimator and run each estimator once over its metrics."""
    chosen = choose_paired(sample, settings.method)
    shared = Shared(sample, settings, next((e for e in chosen if isinstance(e, _PairedBootstrap)), None))
    groups: dict[int, tuple[PairedEstimator, list[int]]] = {}
    for j, estimator in enumerate(chosen):
        groups.setdefault(id(estimator), (estimator, []))[1].append(j)
    # resampled estimators first: the cluster-bootstrap warning comes before the few-discordant one
    ordered = sorted(groups.values(), key=lambda item: not item[0].resampled)
    return [estimator.estimate(sample, cols, settings, shared) for estimator, cols in ordered], shared


# --------------------------------------------------------------------------------------------------
# One-sample estimators (summary)
# --------------------------------------------------------------------------------------------------


class OneSampleEstimator(abc.ABC):
    """An interval on the mean of one run's scores, per metric and slice (``summary(method=...)``)."""

    methods: ClassVar[tuple[str, ...]]
    kind: ClassVar[IntervalKind]

    @abc.abstractmethod
    def estimate(self, sample: OneSample, columns: Sequence[int], settings: Settings) -> SummaryBlock:
        """The block of results for the metrics ``columns`` of ``sample``, every row (overall, slices)."""


class Proportion(OneSampleEstimator):
    """A pass rate's interval: Wilson (score), exact (Clopper-Pearson) or normal (Wald); pass/fail data."""

    methods = ("wilson", "exact", "normal")
    kind = IntervalKind.PROPORTION

    def __init__(self, method: str = "wilson") -> None:
        self.method = method

    def estimate(self, sample: OneSample, columns: Sequence[int], settings: Settings) -> SummaryBlock:
        cols = list(columns)
        mean, se, low, high = (_cells(sample, cols) for _ in range(4))
        for c, j in enumerate(cols):
            for r in range(len(sample.layout.rows)):
                n = int(sample.n_valid[r, j])
                if n:
                    successes = int(round(sample.sums[r, j]))
                    iv = proportion_interval(successes, n, ci=settings.level, method=self.method)
                    mean[r, c], low[r, c], high[r, c] = iv
                    se[r, c] = math.sqrt(iv.estimate * (1 - iv.estimate) / n)
        labels = np.full(mean.shape, self.method, dtype=object)
        return SummaryBlock(tuple(cols), mean, se, low, high, labels, self.kind, None, None)


class StudentT(OneSampleEstimator):
    """The t interval; for scores known to lie in [0, 1], Wilson's interval at the effective n
    ``n mean (1 - mean) / s^2`` (inside [0, 1], keeps its coverage near the bounds)."""

    methods = ("t",)
    kind = IntervalKind.T

    def estimate(self, sample: OneSample, columns: Sequence[int], settings: Settings) -> SummaryBlock:
        cols = list(columns)
        mean, se, low, high = (_cells(sample, cols) for _ in range(4))
        labels = np.full(mean.shape, "t", dtype=object)
        for c, j in enumerate(cols):
            bounded = metric_info(sample.names[j]).bounded and sample.in_unit[j]
            for r in range(len(sample.layout.rows)):
                x = sample.cell(r, j)
                m, s, lo, hi = _t_bounds(x, settings.level)
                if bounded and x.size:
                    m, lo, hi, labels[r, c] = _bounded_t(x, m, lo, hi, settings.level)
                mean[r, c], se[r, c], low[r, c], high[r, c] = m, s, lo, hi
        return SummaryBlock(tuple(cols), mean, se, low, high, labels, self.kind, None, None)


class OneSampleBetting(OneSampleEstimator):
    """The betting interval on the mean of scores in [0, 1] (or a declared range), valid at every n."""

    methods = ("betting",)
    kind = IntervalKind.BETTING
    label = _BETTING_LABEL.replace("paired ", "")

    def estimate(self, sample: OneSample, columns: Sequence[int], settings: Settings) -> SummaryBlock:
        cols = list(columns)
        mean, se, low, high = (_cells(sample, cols) for _ in range(4))
        for c, j in enumerate(cols):
            lo, hi = sample.bounds.get(sample.names[j], (0.0, 1.0))
            for r in range(len(sample.layout.rows)):
                x = sample.cell(r, j)
                mean[r, c], se[r, c], _, _ = _t_bounds(x, settings.level)
                low[r, c], high[r, c] = _betting_bounds(x, lo, hi, settings.level, [settings.seed, 3])
        labels = np.full(mean.shape, self.label, dtype=object)
        return SummaryBlock(tuple(cols), mean, se, low, high, labels, self.kind, None, settings.seed)


class OneSampleBootstrap(OneSampleEstimator):
    """Percentile or BCa bootstrap of the mean (the expanded percentile under ``"auto"``), for every
    chosen metric and slice from the same resamples; whole clusters with ``units=``."""

    methods = ("percentile", "bca")
    kind = IntervalKind.BOOTSTRAP

    def __init__(self, method: str = "percentile", expand: bool = False) -> None:
        self.method, self.expand = method, expand

    def estimate(self, sample: OneSample, columns: Sequence[int], settings: Settings) -> SummaryBlock:
        cols = list(columns)
        layout = sample.layout
        _, boot, low, high = _bootstrap_cells(
            sample.values[:, cols], layout.codes, layout.n_groups, grouped=layout.grouped, units=layout.units,
            level=settings.level, method=self.method, n_resamples=settings.n_resamples, seed=settings.seed,
            expand=self.expand,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells
            se = np.nanstd(boot, axis=0, ddof=1)
        label = _boot_label("expanded percentile" if self.expand else self.method, paired=False,
                            clustered=layout.clustered)
        labels = np.full(low.shape, label, dtype=object)
        n, sums = sample.n_valid[:, cols], sample.sums[:, cols]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, sums / np.where(n > 0, n, 1), np.nan)
        se = np.where(n > 0, se, np.nan)
        return SummaryBlock(tuple(cols), mean, se, low, high, labels, self.kind,
                            settings.n_resamples, settings.seed)


ONE_SAMPLE: dict[str, type[OneSampleEstimator]] = {
    **{m: Proportion for m in Proportion.methods},
    "t": StudentT,
    "betting": OneSampleBetting,
    **{m: OneSampleBootstrap for m in OneSampleBootstrap.methods},
}
SUMMARY_METHODS = ("auto", *ONE_SAMPLE)  # the values summary(method=...) takes


def choose_one_sample(sample: OneSample, method: str) -> list[str]:
    """The interval method of each metric for ``summary(method=method)``.

    ``"auto"``: Wilson for pass/fail data, the betting interval for metrics with declared bounds,
    the t interval (Wilson at the effective n for [0, 1] scores) otherwise; with clusters the
    (expanded) percentile cluster bootstrap. A named method must fit every metric.

    Examples
    --------
    >>> import numpy as np
    >>> values = np.array([[1, 0.2, 3.0], [0, 0.5, 2.0], [1, 0.9, 4.0]])
    >>> choose_one_sample(OneSample(("hit@5", "recall@5", "latency_s"), values, Layout.of(3, None, None)), "auto")
    ['wilson', 't', 't']
    """
    clustered = sample.layout.clustered
    chosen = []
    for j, name in enumerate(sample.names):
        binary = sample.binary[j]
        pick = method
        if method == "auto":
            pick = "percentile" if clustered else ("wilson" if binary else "t")
            if name in sample.bounds and not clustered and not binary:
                pick = "betting"
        elif method in Proportion.methods and not binary:
            raise ValueError(
                f"summary: method={method!r} is an interval for pass/fail scores, but {name!r} has values other "
                "than 0 and 1; use method='t' or a bootstrap method for it."
            )
        if pick == "betting" and name not in sample.bounds and not sample.in_unit[j]:
            raise ValueError(f"summary: method='betting' needs scores in [0, 1]; {name!r} has values outside it")
        if clustered and pick not in OneSampleBootstrap.methods:
            raise ValueError(f"summary: units= needs a bootstrap method ('percentile' or 'bca'), not {pick!r}")
        chosen.append(pick)
    return chosen


def run_one_sample(sample: OneSample, chosen: Sequence[str], settings: Settings) -> list[SummaryBlock]:
    """Run each chosen one-sample method once over its metrics (the bootstrap ones share resamples)."""
    groups: dict[str, list[int]] = {}
    boot = [j for j, m in enumerate(chosen) if m in OneSampleBootstrap.methods]
    for j, m in enumerate(chosen):
        key = "bootstrap" if m in OneSampleBootstrap.methods else m
        groups.setdefault(key, []).append(j)
    blocks = []
    for key, cols in groups.items():
        if key == "bootstrap":
            estimator: OneSampleEstimator = OneSampleBootstrap(chosen[boot[0]], expand=settings.method == "auto")
        elif key in Proportion.methods:
            estimator = Proportion(key)
        else:
            estimator = ONE_SAMPLE[key]()
        blocks.append(estimator.estimate(sample, cols, settings))
    return blocks


# --------------------------------------------------------------------------------------------------
# From a table's labels back to the typed kinds (for tables made elsewhere: a file, an older raglab)
# --------------------------------------------------------------------------------------------------


def _label_kinds() -> dict[str, IntervalKind]:
    """Every registered paired estimator's labels and its interval family."""
    return {label: e.kind for e in (*PAIRED.values(), _AUTO_BOOTSTRAP) for label in e.labels()}


def interval_kind(label: Any) -> IntervalKind:
    """The interval family of a comparison row's ``method`` label; a label no estimator writes (or
    none) is taken for a bootstrap, so that the checks a bootstrap needs still apply.

    Examples
    --------
    >>> interval_kind("paired score (Tango)"), interval_kind("paired bootstrap (bca)"), interval_kind(None)
    (<IntervalKind.SCORE: 'score'>, <IntervalKind.BOOTSTRAP: 'bootstrap'>, <IntervalKind.BOOTSTRAP: 'bootstrap'>)
    """
    return _label_kinds().get(label, IntervalKind.BOOTSTRAP) if isinstance(label, str) else IntervalKind.BOOTSTRAP
