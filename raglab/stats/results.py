"""The typed results of :mod:`raglab.stats` and the columns of its tables, declared once.

Every table :func:`raglab.stats.summary`, :func:`raglab.stats.compare` and :func:`raglab.stats.gate`
return is built here from typed rows: :class:`SummaryRow` (one run), :class:`ComparisonRow` (two
paired runs) and the gate's added :data:`GATE_ADDED` columns. Each column is declared once, as a
:class:`Column` (name, dtype, meaning), in the order the table shows it (the estimate and its
interval last, so that a terminal's truncated print keeps them in view). The gate, the forest plot
and the CLI read these declarations instead of spelling the names themselves.

A row also says which *family* of interval made it (:class:`IntervalKind`, from
:mod:`raglab.stats.estimators`): the gate decides from that typed field, never from the display
label in ``method``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "COMPARISON",
    "ESTIMATE",
    "GATE",
    "GATE_ADDED",
    "GATE_NEEDS",
    "GATE_SHOWN",
    "PPI_TABLE",
    "ROW_KEY",
    "SUMMARY",
    "Column",
    "ComparisonRow",
    "IntervalKind",
    "SummaryRow",
    "TestKind",
    "check_declared",
    "frame_of",
    "names",
]


class IntervalKind(enum.Enum):
    """The family of an interval: what the gate may assume about it.

    ``SCORE`` (Tango's paired score interval) and ``BETTING`` (Waudby-Smith-Ramdas) hold at every n,
    so the gate's bootstrap checks (changed questions, questions or clusters) do not apply to them;
    ``BOOTSTRAP`` rows (percentile, expanded percentile, BCa, cluster bootstrap) need those checks.
    One-sample families (``PROPORTION``, ``T``) appear in :func:`raglab.stats.summary` tables only.
    """

    SCORE = "score"
    BETTING = "betting"
    BOOTSTRAP = "bootstrap"
    PROPORTION = "proportion"
    T = "t"
    PREDICTION_POWERED = "prediction-powered"  # normal interval from judge scores and human labels (PPI++)

    @property
    def valid_at_every_n(self) -> bool:
        """Whether the interval keeps its level at any n (no resampling that needs enough changes)."""
        return self in (IntervalKind.SCORE, IntervalKind.BETTING)


MCNEMAR_TEST = "exact McNemar"
SIGN_FLIP_TEST = "sign-flip permutation"
CLUSTER_SIGN_FLIP_TEST = "sign-flip permutation (clusters)"
CAPITAL_TEST = "betting capital"  # p = min(1, 1 / capital at 0)
NO_TEST = "none"
PPI_TEST = "normal (prediction-powered)"  # p from the PPI estimate over its standard error


class TestKind(enum.Enum):
    """Where a row's p-values come from (the ``test`` column's families; :func:`test_kind` maps a label)."""

    __test__ = False  # not a pytest test class

    EXACT = "exact"  # exact McNemar: no draws, no floor
    SIGN_FLIP = "sign-flip"  # random sign flips: a floor at 1 / (n_permutations + 1)
    CAPITAL = "capital"  # the betting capital at 0: p = min(1, 1 / K), no draws
    NORMAL = "normal"  # a normal approximation (prediction-powered rows): no draws, no floor
    NONE = "none"  # no test run: one-sided p-values read off the bootstrap distribution (or McNemar's)


_TEST_KINDS = {
    MCNEMAR_TEST: TestKind.EXACT,
    SIGN_FLIP_TEST: TestKind.SIGN_FLIP,
    CLUSTER_SIGN_FLIP_TEST: TestKind.SIGN_FLIP,
    CAPITAL_TEST: TestKind.CAPITAL,
    NO_TEST: TestKind.NONE,
    PPI_TEST: TestKind.NORMAL,
}


def test_kind(label: Any, default: TestKind | None = TestKind.NONE) -> TestKind | None:
    """The family of a comparison row's ``test`` label (unknown or missing: ``default``).

    Examples
    --------
    >>> test_kind("exact McNemar"), test_kind("betting capital")
    (<TestKind.EXACT: 'exact'>, <TestKind.CAPITAL: 'capital'>)
    """
    return _TEST_KINDS.get(label, default) if isinstance(label, str) else default


test_kind.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


@dataclass(frozen=True)
class Column:
    """One declared column of a raglab table: its ``name``, pandas ``dtype`` and ``meaning``.

    ``optional`` columns appear only with some settings (``p_adjusted`` with ``adjust="holm"``,
    ``n_clusters`` with ``units=``).
    """

    name: str
    dtype: str
    meaning: str
    optional: bool = False

    def values(self, raw: Sequence[Any]) -> Any:
        """``raw`` as this column's dtype (None / NaN become <NA> in a nullable integer column)."""
        if self.dtype == "Int64":
            return pd.array([None if v is None or pd.isna(v) else int(v) for v in raw], dtype="Int64")
        if self.dtype == "str":  # text: pandas' own string dtype, as it infers it
            return pd.array(list(raw), dtype="str")
        return np.asarray(list(raw), dtype=self.dtype)


def _columns(*columns: Column) -> tuple[Column, ...]:
    names = [c.name for c in columns]
    assert len(set(names)) == len(names), names  # a declaration error, caught at import
    return columns


SUMMARY = _columns(
    Column("metric", "str", "the metric (a score column)"),
    Column("slice", "str", "'overall', or the slice label"),
    Column("n", "int64", "questions with a score"),
    Column("n_excluded", "int64", "questions without a score (NaN), left out of the mean"),
    Column("se", "float64", "standard error: sqrt(p(1-p)/n), sd/sqrt(n), or the bootstrap's standard deviation"),
    Column("method", "str", "the interval method's label"),
    Column("level", "float64", "the confidence level"),
    Column("n_resamples", "Int64", "bootstrap resamples (bootstrap rows only)"),
    Column("seed", "Int64", "the seed of the resamples or of the betting orders"),
    Column("mean", "float64", "the mean over the questions with a score"),
    Column("low", "float64", "the interval's low end"),
    Column("high", "float64", "the interval's high end"),
)

COMPARISON = _columns(
    Column("metric", "str", "the metric (a score column)"),
    Column("slice", "str", "'overall', or the slice label"),
    Column("n", "int64", "complete pairs (a score on both sides)"),
    Column("n_dropped", "int64", "pairs missing a score on either side"),
    Column("n_changed", "int64", "pairs whose score differs"),
    Column("base", "float64", "the baseline's mean over the n pairs"),
    Column("cand", "float64", "the candidate's mean over the n pairs"),
    Column("p_value", "float64", "the two-sided test's p-value"),
    Column("p_adjusted", "float64", "Holm's adjustment of p_value over every row", optional=True),
    Column("p_decrease", "float64", "one-sided p-value for the candidate being lower"),
    Column("p_increase", "float64", "one-sided p-value for the candidate being higher"),
    Column("skew", "float64", "sample skewness of the paired differences"),
    Column("method", "str", "the interval method's label"),
    Column("level", "float64", "the confidence level"),
    Column("n_resamples", "Int64", "bootstrap resamples (bootstrap rows only)"),
    Column("seed", "Int64", "the seed of the resamples, sign flips or betting orders"),
    Column("test", "str", "the paired test behind the p-values"),
    Column("n_permutations", "Int64", "random sign flips (sign-flip rows only)"),
    Column("n_clusters", "Int64", "clusters behind the row (with units=)", optional=True),
    Column("diff", "float64", "mean(cand - base) over the n pairs"),
    Column("low", "float64", "the interval's low end"),
    Column("high", "float64", "the interval's high end"),
)

PPI_TABLE = _columns(
    Column("metric", "str", "the judged metric (a score column)"),
    Column("slice", "str", "'overall', or the slice label"),
    Column("n_labeled", "int64", "rows with both a human label and a judge score"),
    Column("n_judged", "int64", "rows with a judge score (labelled and unlabelled)"),
    Column("lam", "float64", "the judge's weight (PPI++ tuned in [0, 1]; a stratum-weighted mean when stratified)"),
    Column("effective_labels", "float64", "human labels drawn uniformly at random that, alone, would give the same variance"),
    Column("below_min_labels", "bool", "fewer than MIN_LABELS labels: review, do not decide"),
    Column("method", "str", "the interval method's label"),
    Column("level", "float64", "the confidence level"),
    Column("human_only", "float64", "the mean of the human labels alone (weighted by 1 / inclusion probability)"),
    Column("human_only_low", "float64", "the human-only interval's low end"),
    Column("human_only_high", "float64", "the human-only interval's high end"),
    Column("judge_only", "float64", "the judge's mean over every judged row (biased by the judge's errors)"),
    Column("judge_only_low", "float64", "the judge-only interval's low end (sampling error only)"),
    Column("judge_only_high", "float64", "the judge-only interval's high end"),
    Column("estimate", "float64", "the prediction-powered estimate of the human label's mean"),
    Column("low", "float64", "the interval's low end"),
    Column("high", "float64", "the interval's high end"),
)

GATE_ADDED = _columns(
    Column("margin", "float64", "the largest drop accepted, in the metric's units"),
    Column("higher_is_better", "bool", "the metric's direction"),
    Column("reason", "str", "why the row got its decision"),
    Column("p_worse", "float64", "one-sided p-value for the bad direction"),
    Column("p_worse_adjusted", "float64", "p_worse, Holm-adjusted over every row", optional=True),
    Column("decision", "str", "pass, review or block"),
)

_ESTIMATE_LAST = ("diff", "low", "high")
#: what identifies a row of a comparison or gate table, and its estimate with the interval
ROW_KEY = ("metric", "slice")
ESTIMATE = _ESTIMATE_LAST
#: the columns a gate's displays (text and HTML) show, in that order; ``to_frame()`` keeps them all
GATE_SHOWN = ("metric", "slice", "n", "base", "cand", "diff", "low", "high", "margin", "decision", "reason")
#: what gate_comparison needs of a hand-made comparison table
GATE_NEEDS = ("metric", "n", "low", "high")
# The gate table: the comparison's columns, the gate's, then the estimate, its interval and the decision last.
GATE = _columns(
    *(c for c in COMPARISON if c.name not in _ESTIMATE_LAST),
    *(c for c in GATE_ADDED if c.name != "decision"),
    *(c for c in COMPARISON if c.name in _ESTIMATE_LAST),
    *(c for c in GATE_ADDED if c.name == "decision"),
)


def names(columns: Iterable[Column]) -> list[str]:
    """The declared column names, in order.

    Examples
    --------
    >>> names(GATE)[-4:]
    ['diff', 'low', 'high', 'decision']
    """
    return [c.name for c in columns]


@dataclass(frozen=True)
class SummaryRow:
    """One row of :func:`raglab.stats.summary`: a metric's mean and interval on one slice of one run."""

    metric: str
    slice: str
    n: int
    n_excluded: int
    mean: float
    se: float
    low: float
    high: float
    method: str
    level: float
    n_resamples: int | None
    seed: int | None
    kind: IntervalKind = IntervalKind.T


@dataclass(frozen=True)
class ComparisonRow:
    """One row of :func:`raglab.stats.compare`: the paired difference of a metric on one slice.

    ``kind`` (the interval family) and ``test_kind`` are typed; ``method`` and ``test`` are their
    display labels. ``p_at_floor`` says whether the one-sided p-value for a decrease sits at its
    resampling floor (no draw was as extreme as the data).
    """

    metric: str
    slice: str
    n: int
    n_dropped: int
    n_changed: int
    base: float
    cand: float
    diff: float
    low: float
    high: float
    p_value: float
    p_decrease: float
    p_increase: float
    skew: float
    method: str
    level: float
    n_resamples: int | None
    seed: int | None
    test: str
    n_permutations: int | None
    n_clusters: int | None
    p_adjusted: float | None = None
    kind: IntervalKind = IntervalKind.BOOTSTRAP
    test_kind: TestKind = TestKind.NONE

    @property
    def draws(self) -> int | None:
        """How many random draws the one-sided p-values came from (None: exact, or betting capital)."""
        if self.n_permutations is not None:
            return self.n_permutations
        return self.n_resamples if self.test_kind is TestKind.NONE else None

    @property
    def p_at_floor(self) -> bool:
        """Whether ``p_decrease`` sits at its resampling floor ``1 / (draws + 1)`` (a bound, not a measurement)."""
        draws = self.draws
        return draws is not None and bool(np.isfinite(self.p_decrease)) and self.p_decrease * (draws + 1.0) < 1.5


# ---- p-values at their resampling floor, read off a table (hand-made or older tables included) ------


def _draws(table: pd.DataFrame) -> np.ndarray:
    """Per row of a compare or gate table: how many random draws its one-sided p-values came from
    (sign flips, or bootstrap resamples when no permutations were run); NaN for exact McNemar tests and
    betting rows (their p-value is 1 / capital, no count of draws)."""
    def column(name: str) -> pd.Series:
        if name in table.columns:
            return pd.to_numeric(table[name], errors="coerce").astype(float)
        return pd.Series(np.nan, index=table.index)

    flips, resamples = column("n_permutations"), column("n_resamples")
    tests = table["test"] if "test" in table.columns else pd.Series(None, index=table.index, dtype=object)
    # exactly the label "none" (an unknown or missing label is not taken for it)
    unflipped = pd.Series([test_kind(t, default=None) is TestKind.NONE for t in tests], index=table.index, dtype=bool)
    # no permutations: a resampled row's one-sided p-values are read off its bootstrap distribution
    return flips.where(flips.notna(), resamples.where(unflipped)).to_numpy(dtype=float)


def at_floor(table: pd.DataFrame, column: str = "p_worse") -> np.ndarray:
    """Which rows' p-values in ``column`` sit at their resampling floor: no flip (or resample) was as
    extreme as the data, so the p-value ``1 / (draws + 1)`` is a bound, not a measurement.

    Examples
    --------
    >>> t = pd.DataFrame({"p_worse": [1 / 1001, 3 / 1001, 1e-6], "n_permutations": [1000, 1000, None],
    ...                   "test": ["sign-flip permutation"] * 2 + ["exact McNemar"]})
    >>> at_floor(t).tolist()
    [True, False, False]
    """
    p = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
    draws = _draws(table)
    with np.errstate(invalid="ignore"):
        return np.isfinite(p) & np.isfinite(draws) & (p * (draws + 1.0) < 1.5)  # (1 + 0 exceedances) / (draws + 1)


def floor_resolution(table: pd.DataFrame, column: str = "p_worse") -> list[tuple[int, str, str] | None]:
    """Per row: ``(draws, "sign flips", "n_permutations")`` (``"bootstrap resamples", "n_resamples"``
    when no permutations were run) when its p-value in ``column`` sits at its resampling floor
    (:func:`at_floor`), else None: what limits that p-value, and the setting that raises the limit.

    Examples
    --------
    >>> t = pd.DataFrame({"p_worse": [1 / 100, 3 / 100, 1 / 301], "n_permutations": [99, 99, None],
    ...                   "n_resamples": [300, 300, 300], "test": ["sign-flip permutation"] * 2 + ["none"]})
    >>> floor_resolution(t)
    [(99, 'sign flips', 'n_permutations'), None, (300, 'bootstrap resamples', 'n_resamples')]
    """
    floor, draws = at_floor(table, column), _draws(table)
    if "n_permutations" in table.columns:
        flipped = pd.to_numeric(table["n_permutations"], errors="coerce").notna().to_numpy()
    else:
        flipped = np.zeros(len(table), dtype=bool)
    return [
        ((int(d), "sign flips", "n_permutations") if f else (int(d), "bootstrap resamples", "n_resamples")) if low else None
        for low, d, f in zip(floor, draws, flipped)
    ]


def frame_of(rows: Sequence[Any], columns: Sequence[Column]) -> pd.DataFrame:
    """A DataFrame of typed ``rows`` with the declared ``columns``, in their order and dtypes.

    Optional columns are kept only when the rows carry them (an attribute that is not None on some row).

    Examples
    --------
    >>> row = SummaryRow("hit@5", "overall", 4, 0, 0.75, 0.2, 0.3, 0.95, "wilson", 0.95, None, None)
    >>> frame_of([row], SUMMARY).dtypes["seed"], list(frame_of([row], SUMMARY).columns)[-3:]
    (Int64Dtype(), ['mean', 'low', 'high'])
    """
    data = {}
    for column in columns:
        raw = [getattr(row, column.name, None) for row in rows]
        if column.optional and all(v is None for v in raw):
            continue
        data[column.name] = column.values(raw)
    return pd.DataFrame(data)


def check_declared(frame: pd.DataFrame, columns: Sequence[Column]) -> None:
    """Assert ``frame`` has the declared columns (optional ones may be absent), in order, with their dtypes.

    Examples
    --------
    >>> from raglab.stats import compare
    >>> check_declared(compare([1, 0, 1], [1, 1, 1]), COMPARISON)
    """
    expected = [c for c in columns if c.name in frame.columns or not c.optional]
    assert list(frame.columns) == names(expected), (list(frame.columns), names(expected))
    for c in expected:
        assert str(frame[c.name].dtype) == c.dtype, (c.name, frame[c.name].dtype, c.dtype)

