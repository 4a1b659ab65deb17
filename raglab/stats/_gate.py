"""The release gate: a non-inferiority decision per metric and slice, and a decision log.

:func:`gate` compares two runs (:func:`raglab.stats.compare`) and decides each row: **pass** if the
interval's worst end is within the margin, **block** if the whole interval is on the bad side and
the drop is significant family-wise (Holm), **review** otherwise or when the row cannot carry a
decision (too few questions, no interval, a zero-width interval, a bootstrap row with too few changed
questions or fewer than :data:`~raglab.stats.MIN_RESAMPLED` questions or clusters). :data:`GATE_RULE` states the rule in words; the overall decision is the
worst row. :func:`gate_comparison` is the decision step alone, on a comparison table you already
have; both return a :class:`GateResult`, whose ``to_json`` writes the log for reviewers.

Everything here is importable from :mod:`raglab.stats` (``raglab.stats.gate`` and so on) and from
:mod:`raglab.gate`. The gate sits on the statistics (it imports :func:`~raglab.stats.compare`; nothing
in the statistics imports it), and decides from each row's interval *family*
(:func:`raglab.stats.estimators.interval_kind`), never from the display label.
"""

from __future__ import annotations

import copy
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from raglab._registry import metric_info
from raglab._results import ResultBase, decision_colour, p_text
from raglab._results import jsonable as _jsonable
from raglab._validation import check_option, warn
from raglab._version import __version__
from raglab.stats._engine import MIN_CLUSTERS
from raglab.stats.estimators import interval_kind, test_kind
from raglab.stats.ppi import MIN_LABELED_CLUSTERS, MIN_LABELS
from raglab.stats.results import (
    GATE,
    GATE_NEEDS,
    GATE_SHOWN,
    IntervalKind,
    TestKind,
    at_floor,
    floor_resolution,
)
from raglab.stats.results import names as _names
from raglab.stats.tables import _ADJUST, compare
from raglab.stats.tests import holm

__all__ = [
    "DECISIONS",
    "GATE_RULE",
    "GATE_TOLERANCE",
    "MIN_CHANGED",
    "MIN_QUESTIONS",
    "GateResult",
    "gate",
    "gate_comparison",
]

#: The gate's decisions, from best to worst.
DECISIONS = ("pass", "review", "block")
#: Below this many paired questions a gate row is review, whatever its interval says.
MIN_QUESTIONS = 10
#: A bootstrap row resting on fewer questions whose score changed is review (``benchmarks/gate_errors.py``).
MIN_CHANGED = 5
#: Below this many questions (or clusters) a bootstrap row is review: with no known bounds nothing
#: guarantees its low end when a few questions change a lot (``benchmarks/gate_errors.py``, part 4;
#: ``benchmarks/coverage.py``).
MIN_RESAMPLED = 30
#: Interval bounds within this (times ``max(1, margin)``) of a threshold count as on it.
GATE_TOLERANCE = 1e-9

GATE_RULE = (
    "Per metric and slice, on the row's interval for mean(cand - base): PASS if low >= -margin (any drop is "
    "smaller than the margin); BLOCK if high < 0 and the drop is significant family-wise (Holm over every "
    "row's one-sided p-value at (1 - ci) / 2, so that with no real change the chance of any false block stays "
    "at most that); otherwise REVIEW. Lower-is-better metrics flip the signs (pass if high <= margin; block if "
    f"low > 0). A row with fewer than {MIN_QUESTIONS} paired questions (or {MIN_CLUSTERS} clusters), no interval "
    "or a zero-width interval is REVIEW, with the reason; so is a bootstrap row with fewer than "
    f"{MIN_CHANGED} changed questions or fewer than {MIN_RESAMPLED} questions (or clusters): a bootstrap "
    "has no guarantee when a few questions change a lot (metrics known to lie in [0, 1] get the betting "
    "interval instead, valid at every n). Bounds "
    "within 1e-9 x max(1, margin) of a threshold count as on it. The overall decision is the worst row: every "
    "row must pass for the change to pass."
)


def _per_metric(value: Any, names: Sequence[str], what: str, check: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        unknown = sorted(set(map(str, value)) - set(names))
        if unknown:
            raise ValueError(f"`{what}` names metrics that are not compared: {unknown}; compared: {list(names)}")
        return {name: check(value[name], name) for name in names if name in value}
    return {name: check(value, name) for name in names}


def _check_margin(value: Any, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"the margin for {name!r} must be a number (in the metric's own units), got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"the margin for {name!r} must be a finite number >= 0 (the largest drop you accept), got {value!r}"
        )
    return float(value)


def _check_direction(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`higher_is_better` for {name!r} must be True or False, got {value!r}")
    return bool(value)


def _margins(margin: Any, names: Sequence[str]) -> dict[str, float]:
    margins = _per_metric(margin, names, "margin", _check_margin)
    unbounded = [name for name in names if metric_info(name).known and not metric_info(name).bounded]
    if not isinstance(margin, Mapping) and unbounded and len(names) > 1:
        warn(
            f"gate: one margin ({float(margin):g}) is applied to every metric, including {unbounded}, which are not "
            "on a 0-1 scale (characters, seconds, cost): a drop of that size means something else in their units. "
            "Give a margin per metric in that metric's units, e.g. margin={"
            + ", ".join(f"{n!r}: ..." for n in names) + "} (CLI: --margin-for METRIC=X).",
            UserWarning,
        )
    missing = [name for name in names if name not in margins]
    if missing:
        raise ValueError(
            f"`margin` gives no margin for {missing}; give every compared metric one, e.g. "
            f"margin={{{', '.join(repr(n) + ': 0.02' for n in names)}}}"
        )
    return margins


def _directions(higher_is_better: Any, names: Sequence[str]) -> dict[str, bool]:
    given = {} if higher_is_better is None else _per_metric(higher_is_better, names, "higher_is_better", _check_direction)
    guessed = [name for name in names if name not in given and not metric_info(name).known]
    if guessed:
        shown = "; ".join(f"{n!r}: {'higher' if metric_info(n).higher_is_better else 'lower'} is better" for n in guessed)
        warn(
            f"gate: guessed from the metric name which way is better ({shown}); pass "
            "higher_is_better={metric: True/False} (CLI: --higher-is-better / --lower-is-better) to state it.",
            UserWarning,
        )
    return {name: given.get(name, metric_info(name).higher_is_better) for name in names}


def _decide(
    low: float,
    high: float,
    margin: float,
    higher_is_better: bool,
    *,
    n: int = MIN_QUESTIONS,
    clustered: bool = False,
    p_worse: float = 0.0,
    alpha: float = 0.05,
    family: int = 1,
    resampled: bool = False,
    n_changed: int | None = None,
    floor: tuple[int, str, str] | None = None,
) -> tuple[str, str]:
    """One row's decision and its reason.

    ``p_worse`` is the row's one-sided p-value for the bad direction (Holm-adjusted over ``family``
    rows when ``family > 1``); a block needs it below ``alpha / 2`` as well as the interval on the
    bad side of zero. ``resampled`` rows (bootstrap intervals) also need :data:`~raglab.stats.MIN_CHANGED`
    questions whose score changed and :data:`~raglab.stats.MIN_RESAMPLED` questions (or clusters): a bootstrap can
    only recombine the changes it saw (with no question worse in the sample, no resample is worse),
    so when a few questions change a lot its low end is too optimistic, the more so the fewer
    questions (``benchmarks/gate_errors.py``). The rule looks at counts only, never at the sample's
    shape: a screen on skewness would keep exactly the samples that missed the tail.

    ``floor`` is ``(draws, "sign flips", "n_permutations")`` (or the bootstrap's) when the row's raw
    p-value sits at its resampling floor ``1 / (draws + 1)`` (:func:`raglab.stats.results.floor_resolution`):
    no draw was as extreme as the data, so ``p_worse`` is an upper bound. A bound at or above
    ``alpha / 2`` cannot show the drop is not significant; the reason then names the resolution and
    the setting to raise, never "not significant".
    """
    unit = "clusters" if clustered else "questions"
    if not (np.isfinite(low) and np.isfinite(high)):
        return "review", f"no interval (n={n} {unit}; at least 2, or {MIN_CLUSTERS} clusters, are needed)"
    minimum = MIN_CLUSTERS if clustered else MIN_QUESTIONS
    if n < minimum:
        return "review", f"only {n} paired {unit}: too few to decide (the gate needs at least {minimum})"
    if high - low <= GATE_TOLERANCE * max(1.0, abs(low), abs(high), margin):
        return "review", "zero-width interval: every paired difference is the same, so there is no evidence about sampling error"
    if resampled and n_changed is None:  # a hand-made or older table: the check below cannot be made
        return "review", (
            f"no n_changed count: cannot check that the bootstrap interval saw at least {MIN_CHANGED} changed {unit}"
        )
    if resampled and n_changed < MIN_CHANGED:
        return "review", (
            f"only {n_changed} of {n} {unit} changed: a bootstrap interval cannot show changes the sample has "
            f"not seen (the gate needs at least {MIN_CHANGED} changed)"
        )
    if resampled and n < MIN_RESAMPLED:
        return "review", (
            f"only {n} {unit} for a bootstrap interval: with no known bounds on the metric, its low end has no "
            f"guarantee when a few {unit} change a lot (the gate needs at least {MIN_RESAMPLED}; metrics known to "
            "lie in [0, 1] get the betting interval, which holds at any n)"
        )
    tol = GATE_TOLERANCE * max(1.0, margin)
    # Express everything as "improvement": for lower-is-better metrics a rise is the bad direction.
    worst, best = (low, high) if higher_is_better else (-high, -low)
    if worst >= -margin - tol:
        return "pass", f"the interval's worst end {worst:+.4g} is within the margin ({-margin:+g})"
    if best < -tol:
        shown = f"({'low' if not higher_is_better else 'high'} {high if higher_is_better else low:+.4g})"
        if not np.isfinite(p_worse):
            return "review", f"the interval is entirely on the bad side {shown} but no test p-value is available"
        if p_worse < alpha / 2:
            scope = f"Holm-adjusted over {family} rows" if family > 1 else "one-sided"
            return "block", f"a real change for the worse: interval entirely on the bad side {shown}, {scope} p = {p_worse:.3g}"
        if floor is not None:  # the bound, not the data, keeps p above alpha / 2: more draws can resolve it
            draws, what, setting = floor
            holm_note = (
                f"; after Holm over {family} rows this row's p-value is only known to be {p_text(p_worse, bound=True)}"
                if family > 1 else ""
            )
            # 1 / (draws + 1) < alpha / 2 / family, the smallest Holm threshold, from this many draws on
            least = math.floor(2 * family / alpha + 1e-9)
            return "review", (
                f"interval on the bad side {shown}, but the test cannot resolve it: {draws} {what} cannot give a "
                f"one-sided p-value below {_rounded_down(1 / (draws + 1))}{holm_note}, and a block needs it below "
                f"{alpha / 2:g}. Raise {setting} (to at least {least})"
            )
        return "review", (
            f"interval on the bad side {shown} but not significant across the {family} rows gated "
            f"(Holm-adjusted one-sided p = {p_worse:.3g} >= {alpha / 2:g})"
        )
    return "review", f"inconclusive: the interval crosses both -{margin:g} and 0"


def _rounded_down(value: float) -> str:
    """``value`` to two significant digits, rounded down, so that "cannot give a p-value below it" stays true.

    >>> _rounded_down(1 / 100), _rounded_down(1 / 201), _rounded_down(1 / 1000)
    ('0.01', '0.0049', '0.001')
    """
    exponent = math.floor(math.log10(value)) - 1
    return f"{math.floor(value / 10.0**exponent + 1e-9) * 10.0**exponent:.2g}"


def _warn_if_holm_cannot_block(table: pd.DataFrame, resampled: np.ndarray, family: int, alpha: float) -> None:
    """Warn when permutation (or bootstrap) p-values are too coarse for Holm to ever block a row."""
    if family <= 1 or not resampled.any():
        return
    needed = alpha / 2 / family  # the smallest Holm threshold
    counts = table.loc[resampled, "n_permutations"] if "n_permutations" in table.columns else pd.Series([], dtype=float)
    counts = counts.fillna(table.loc[resampled, "n_resamples"] if "n_resamples" in table.columns else np.nan)
    smallest = 1.0 / (counts.astype(float) + 1.0)
    if (smallest >= needed).any():
        least = int(math.ceil(1.0 / needed))
        warn(
            f"gate: with {family} rows, Holm needs a one-sided p-value below {needed:.2g} to block, but "
            f"{int(counts.min())} sign flips (or resamples) cannot give one below {float(smallest.max()):.2g}: "
            f"those rows can never block. Raise n_permutations to at least {least}.",
            UserWarning,
        )


def _gate_table(table: pd.DataFrame, margin: Any, higher_is_better: Any, adjust: str | None = "holm") -> pd.DataFrame:
    check_option("adjust", adjust, _ADJUST)
    names = list(dict.fromkeys(table["metric"]))
    margins, directions = _margins(margin, names), _directions(higher_is_better, names)
    out = table.copy()
    out.attrs = copy.deepcopy(table.attrs)
    position = out.columns.get_loc("high") + 1  # the gate's columns after the interval (a hand-made table's
    out.insert(position, "margin", out["metric"].map(margins).astype(float))  # own columns after high stay after them)
    out.insert(position + 1, "higher_is_better", out["metric"].map(directions).astype(bool))
    hib = out["higher_is_better"].to_numpy(dtype=bool)
    if "p_decrease" in out.columns:
        p_worse = np.where(hib, out["p_decrease"].to_numpy(dtype=float), out["p_increase"].to_numpy(dtype=float))
    else:  # a table without one-sided p-values (an older raglab): no row can show it survives Holm, so none blocks
        p_worse = np.full(len(out), np.nan)
    adjusted = holm(p_worse) if adjust == "holm" else p_worse
    family = int(np.isfinite(p_worse).sum()) if adjust == "holm" else 1
    level = float(out["level"].iloc[0]) if "level" in out.columns and len(out) else 0.95
    decided = _decide_rows(out, p_worse, adjusted, family, level)
    out.insert(position + 2, "decision", [d for d, _ in decided])
    out.insert(position + 3, "reason", [r for _, r in decided])
    out["p_worse"] = p_worse
    if adjust == "holm":
        out["p_worse_adjusted"] = adjusted
    return _declared_order(out)


def _kinds(table: pd.DataFrame) -> tuple[list[IntervalKind], list[TestKind]]:
    """Each row's interval family and test family, from its labels. No method column: a bootstrap is
    assumed, so that the checks a bootstrap needs still apply."""
    kinds = [interval_kind(m) for m in table["method"]] if "method" in table.columns else [IntervalKind.BOOTSTRAP] * len(table)
    tests = [test_kind(t) for t in table["test"]] if "test" in table.columns else [TestKind.NONE] * len(table)
    return kinds, tests


def _decide_rows(out: pd.DataFrame, p_worse: np.ndarray, adjusted: np.ndarray, family: int,
                 level: float) -> list[tuple[str, str]]:
    """Every row's decision and reason (see :func:`_decide`)."""
    clustered = "n_clusters" in out.columns
    counts = out["n_clusters"] if clustered else out["n"]
    kinds, tests = _kinds(out)
    powered = np.array([k is IntervalKind.PREDICTION_POWERED for k in kinds], dtype=bool)
    # prediction-powered rows: a normal interval whose own check is the number of labels (below)
    resampled = np.array([not k.valid_at_every_n for k in kinds], dtype=bool) & ~powered
    changed = out["n_changed"] if "n_changed" in out.columns else pd.Series([None] * len(out))
    # Rows whose p-values come from sign flips or resamples: not Tango's (exact McNemar), nor betting rows
    # whose p-value is the betting capital's 1 / K (no draws to run out of; an older table's betting rows
    # with sign-flip p-values still count).
    coarse = np.array([k is not IntervalKind.SCORE and t not in (TestKind.CAPITAL, TestKind.NORMAL)
                       for k, t in zip(kinds, tests)], dtype=bool)
    _warn_if_holm_cannot_block(out, coarse, family, 1 - level)
    floors = floor_resolution(out.assign(p_worse=p_worse), "p_worse")  # Holm is monotone: a bound stays a bound
    decided = [
        _decide(lo, hi, mg, hb, n=int(0 if pd.isna(k) else k), clustered=clustered, p_worse=p, alpha=1 - level,
                family=family, resampled=bool(rs), n_changed=None if pd.isna(ch) else int(ch), floor=fl)
        for lo, hi, mg, hb, k, p, rs, ch, fl in zip(
            out["low"], out["high"], out["margin"], out["higher_is_better"], counts, adjusted, resampled, changed,
            floors,
        )
    ]
    comparison = (out.attrs.get("raglab") or {}).get("comparison") or {}
    counts_labelled = comparison.get("n_labeled") or {}
    for i in np.flatnonzero(powered):
        metric, label = out["metric"].iloc[i], out["slice"].iloc[i] if "slice" in out.columns else "overall"
        decided[i] = _few_labels(decided[i], (counts_labelled.get(str(metric)) or {}).get(str(label)))
        n_clusters = int(0 if pd.isna(counts.iloc[i]) else counts.iloc[i])
        if clustered and decided[i][0] != "review" and n_clusters < MIN_LABELED_CLUSTERS:
            decided[i] = "review", (
                f"only {n_clusters} clusters: a cluster-robust prediction-powered interval undercovers with few "
                f"clusters (80-93% for a nominal 95% below 25 labelled conversations, benchmarks/ppi.py); the gate "
                f"needs at least {MIN_LABELED_CLUSTERS} (the interval alone would say {decided[i][0]})")
        decided[i] = _few_effective_labels(decided[i], comparison.get("unequal_weights"), str(label))
    return decided


def _few_effective_labels(decided: tuple[str, str], unequal: Any, label: str) -> tuple[str, str]:
    """A prediction-powered row whose labels were drawn with unequal probabilities reviews below MIN_LABELS
    *effective* labels (Kish's ``(sum w)^2 / sum w^2``, ``comparison["unequal_weights"][slice]``): its
    design-based interval (``ppi_mean_sampled``) keeps its level there, and not with a few heavily
    weighted labels (benchmarks/ppi.py section 10). A table from before the counts (``True``) reviews."""
    if decided[0] == "review" or not unequal:
        return decided
    effective = unequal.get(label) if isinstance(unequal, Mapping) else None
    if isinstance(unequal, Mapping) and effective is None:
        return decided  # this row's labels were drawn with equal probabilities (within its strata)
    if effective is None or pd.isna(effective):
        return "review", ("the labelled questions were drawn with unequal probabilities and the comparison does not "
                          "record their effective number (attrs['raglab']['comparison']['unequal_weights']): compare "
                          f"again to let the gate decide (the interval alone would say {decided[0]})")
    if float(effective) < MIN_LABELS:
        return "review", (
            f"the labelled questions were drawn with unequal probabilities: they count as {float(effective):.0f} "
            f"effective labels (Kish, (sum w)^2 / sum w^2), below {MIN_LABELS}; the design-based prediction-powered "
            "interval undercovers on a few heavily weighted labels (89.8% for a nominal 95% with 8 effective labels, "
            "benchmarks/ppi.py section 10); label more "
            f"questions or draw them more evenly, e.g. a higher floor (the interval alone would say {decided[0]})")
    return decided


def _few_labels(decided: tuple[str, str], n_labeled: Any) -> tuple[str, str]:
    """A prediction-powered row with fewer than MIN_LABELS labelled questions reviews instead of deciding."""
    if decided[0] == "review":
        return decided
    if n_labeled is None or pd.isna(n_labeled):
        return "review", ("a prediction-powered row without its labelled count (attrs['raglab']['comparison']"
                          "['n_labeled']): cannot check it has enough labels")
    if int(n_labeled) < MIN_LABELS:
        return "review", (
            f"only {int(n_labeled)} questions labelled by people in both runs: prediction-powered intervals "
            f"undercover below {MIN_LABELS} labels (a Wald PPI interval covered 77-87% of a nominal 95% there at high pass rates, benchmarks/ppi.py); label more "
            f"questions (the interval alone would say {decided[0]})"
        )
    return decided


def _declared_order(out: pd.DataFrame) -> pd.DataFrame:
    """The table with the declared last columns of :data:`raglab.stats.results.GATE` (the estimate, its
    interval and the decision) last, the others in their order: a terminal's truncated print keeps those
    in view. A comparison table's gate table has exactly the declared columns, in order."""
    last = [c for c in _names(GATE)[-4:] if c in out.columns]
    return out[[c for c in out.columns if c not in last] + last]


def _worst(decisions: Sequence[str]) -> str:
    return max(decisions, key=DECISIONS.index) if len(decisions) else "review"




@dataclass(repr=False)
class GateResult(ResultBase):
    """The release gate's verdict: ``decision`` (``"pass"``, ``"review"`` or ``"block"``) and ``table``.

    ``table`` is the paired comparison (one row per metric x slice) with ``margin``,
    ``higher_is_better`` and ``decision`` per row; the overall decision is the worst row.
    ``to_json(path)`` writes the decision log for reviewers: every interval with its n, seed and
    method, the margins, the rule, and the eval-set version/hash and judge fingerprint of both runs.

    Examples
    --------
    >>> from raglab.stats import gate
    >>> result = gate([1, 1, 0, 1] * 50, [1, 0, 0, 1] * 50, margin=0.02, higher_is_better=True)
    >>> result.decision, result.counts
    ('block', {'pass': 0, 'review': 0, 'block': 1})
    """

    decision: str
    table: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    runs: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    raglab_version: str = ""

    @property
    def counts(self) -> dict[str, int]:
        """How many rows pass, need review and block."""
        values = self.table["decision"].tolist()
        return {d: values.count(d) for d in DECISIONS}

    @property
    def passed(self) -> bool:
        return self.decision == "pass"

    def to_frame(self) -> pd.DataFrame:
        """The table (a copy): compare columns plus ``margin``, ``higher_is_better``, ``decision``."""
        frame = self.table.copy()
        frame.attrs = copy.deepcopy(self.table.attrs)
        return frame

    def to_dict(self) -> dict[str, Any]:
        """The decision log as a JSON-ready dict."""
        return _jsonable(
            {
                "decision": self.decision,
                "counts": self.counts,
                "rule": GATE_RULE,
                "created": self.created,
                "raglab_version": self.raglab_version,
                "settings": self.settings,
                "runs": self.runs,
                "rows": self.table.assign(**self._bounded_reasons()).to_dict(orient="records"),
            }
        )

    def _bounded_reasons(self) -> dict[str, pd.Series]:
        """``{"reason": ...}`` with each p-value at its resampling floor written as a bound (``p < 0.003``):
        no sign flip (or resample) was as extreme as the data, so the number measures the draws, not the
        data. The table keeps the numbers (``p_worse``, ``p_worse_adjusted``); only the words change."""
        table = self.table
        if "reason" not in table.columns or "p_worse" not in table.columns:
            return {}
        shown = table["p_worse_adjusted"] if "p_worse_adjusted" in table.columns else table["p_worse"]
        floor = at_floor(table, "p_worse")  # Holm is monotone in the p-values: a bound stays a bound
        reasons = [
            r.replace(f"p = {p:.3g}", f"p {p_text(p, bound=True)}") if low and isinstance(r, str) else r
            for r, p, low in zip(table["reason"], pd.to_numeric(shown, errors="coerce"), floor)
        ]
        return {"reason": pd.Series(reasons, index=table.index)}

    def to_json(self, path: str | Path | None = None, *, indent: int = 2) -> str:
        """Write the decision log to ``path`` (when given) and return it as JSON text.

        Missing values (no interval for an empty slice) are written as ``null``. The per-metric
        rows read back as a table with ``pd.DataFrame(json.load(open(path))["rows"])``.

        Examples
        --------
        >>> import json
        >>> from raglab.stats import gate
        >>> log = gate([1, 1, 0, 1] * 50, [1, 0, 0, 1] * 50, margin=0.02, higher_is_better=True).to_json()
        >>> json.loads(log)["decision"]
        'block'
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def _title(self) -> str:
        """The first line of both displays: the decision, the counts, how the intervals were made."""
        counts = ", ".join(f"{v} {k}" for k, v in self.counts.items())
        level = self.settings.get("ci")
        shown = self.table["method"] if "method" in self.table.columns else []
        methods = " / ".join(dict.fromkeys(shown)) if len(self.table) else ""
        how = f"{level:.0%} {methods}" if level is not None else ""
        if self.settings.get("adjust") == "holm":
            how += "; blocks Holm-adjusted"
        resamples = self.settings.get("n_resamples")
        resampled = "n_resamples" in self.table.columns and self.table["n_resamples"].notna().any()
        extra = f", {resamples} resamples, seed {self.settings.get('seed')}" if resampled else ""
        return f"GateResult: {self.decision.upper()} ({counts}; {how}{extra})"

    def _colour(self) -> str:
        return decision_colour(self.decision)

    def _shown(self) -> pd.DataFrame:
        """The columns both displays show (``to_frame()`` keeps them all)."""
        return self.table.assign(**self._bounded_reasons())[[c for c in GATE_SHOWN if c in self.table.columns]]

    def _footer_html(self) -> str:
        return f"<p><small>{html.escape(GATE_RULE)}</small></p>"




def gate_comparison(
    table: pd.DataFrame,
    margin: float | Mapping[str, float],
    *,
    higher_is_better: bool | Mapping[str, bool] | None = None,
    adjust: str | None = "holm",
) -> GateResult:
    """Gate a paired comparison table: a non-inferiority decision for each of its rows.

    This is the decision step of :func:`gate` on its own, for a table you already have: the output
    of :func:`raglab.stats.compare` or ``df.rag.compare`` (one row per metric x slice, with the
    interval on ``mean(cand - base)``). Each row gets ``pass``, ``review`` or ``block`` by the rule
    in :data:`GATE_RULE` (see :func:`gate`), and the overall decision is the worst row.
    ``gate(base, cand, margin, ...)`` is ``gate_comparison(compare(base, cand, ...), margin, ...)``.

    Parameters
    ----------
    table : pandas.DataFrame
        A comparison table: at least ``metric``, ``n``, ``low`` and ``high``; the one-sided p-values
        (``p_decrease``, ``p_increase``), ``method``, ``level``, ``n_changed``, ``skew`` and
        ``n_clusters`` are used when present, as :func:`raglab.stats.compare` writes them. The
        comparison's settings and the runs' records in ``table.attrs["raglab"]["comparison"]`` go
        into the decision log. The table is not modified.
    margin : float or dict
        The largest drop (in the metric's units) to ship without discussion; one for all metrics
        or ``{metric: margin}`` covering every metric of the table.
    higher_is_better : bool or dict, optional
        Direction per metric; by default from the metric name (with a warning for names raglab
        does not know). An explicit value always wins.
    adjust : {"holm", None}
        ``"holm"`` (the default): a row blocks only if its one-sided p-value for the bad direction,
        Holm-adjusted over every row, is below ``(1 - ci) / 2``. ``None``: each row on its own.

    Returns
    -------
    GateResult
        ``decision`` and ``table`` (the comparison plus ``margin``, ``higher_is_better``,
        ``decision``, ``reason``, ``p_worse`` and, with Holm, ``p_worse_adjusted``).

    Examples
    --------
    >>> from raglab.stats import compare, gate_comparison
    >>> table = compare({"hit@5": [1, 1, 0, 1] * 50}, {"hit@5": [1, 0, 0, 1] * 50})
    >>> result = gate_comparison(table, margin=0.02, higher_is_better=True)
    >>> result.decision, result.table["reason"].iloc[0].split(":")[0]
    ('block', 'a real change for the worse')
    >>> gate_comparison(table, margin=0.4, higher_is_better=True).decision  # low is -0.314
    'pass'
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(
            f"gate_comparison needs a comparison table (a DataFrame from raglab.stats.compare or df.rag.compare), "
            f"got {type(table).__name__}"
        )
    missing = [column for column in GATE_NEEDS if column not in table.columns]
    if missing:
        raise ValueError(
            f"gate_comparison needs the comparison table's columns {missing}; found {list(table.columns)}. "
            "Make the table with raglab.stats.compare(base, cand, ...) or df.rag.compare(...)."
        )
    gated = _gate_table(table, margin, higher_is_better, adjust)
    settings = dict(gated.attrs.get("raglab", {}).get("comparison", {}))
    settings["adjust"] = adjust
    settings["block_rule"] = (
        f"Holm over the {int(np.isfinite(gated['p_worse']).sum())} rows' one-sided p-values" if adjust == "holm"
        else "per row (adjust=None): each row blocks on its own interval and one-sided p-value"
    )
    runs = settings.pop("runs", {})
    margins = dict(zip(gated["metric"], gated["margin"]))
    directions = dict(zip(gated["metric"], gated["higher_is_better"]))
    return GateResult(
        decision=_worst(gated["decision"].tolist()),
        table=gated,
        settings={**settings, "margins": margins, "higher_is_better": directions},
        runs=dict(runs),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        raglab_version=__version__,
    )


def gate(
    base: Any,
    cand: Any,
    margin: float | Mapping[str, float],
    *,
    higher_is_better: bool | Mapping[str, bool] | None = None,
    slices: Any = None,
    units: Any = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    n_permutations: int = 10_000,
    adjust: str | None = "holm",
    bounds: Mapping[str, tuple[float, float]] | None = None,
    labels: Mapping[str, tuple[Any, Any]] | None = None,
    weights: Any = None,
    strata: Any = None,
) -> GateResult:
    """Non-inferiority release gate on paired scores, per metric and slice.

    Each row of :func:`~raglab.stats.compare` (one per metric x slice) gets a decision from its interval on
    ``mean(cand - base)`` and its one-sided test:

    * **pass** if ``low >= -margin``: any drop is smaller than the margin. Every row must pass for
      the change to pass; requiring all rows needs no multiplicity adjustment.
    * **block** if ``high < 0`` (a real drop) *and* the row's one-sided p-value for a drop,
      Holm-adjusted over every row of the table, is below ``(1 - ci) / 2``: with no real change
      anywhere, the chance that any row blocks stays at most that, however many metrics and slices
      are gated. ``adjust=None`` blocks per row on its interval and its own unadjusted one-sided
      p-value (more false blocks as rows multiply).
    * **review** otherwise, and always for a row with fewer than :data:`~raglab.stats.MIN_QUESTIONS` paired
      questions (or :data:`~raglab.stats.MIN_CLUSTERS` clusters), with no interval, or with a zero-width
      interval; a bootstrap row (a metric with no known bounds, or clusters) also needs
      :data:`~raglab.stats.MIN_CHANGED` changed questions and :data:`~raglab.stats.MIN_RESAMPLED` questions or clusters. The
      table's ``reason`` column says why.

    A pass means what it says for metrics known to lie in [0, 1]: at a true drop equal to the
    margin the chance of a pass is at most ``(1 - ci) / 2`` at any n and for any shape of the
    differences (a few questions breaking badly included), because their interval is the betting
    interval. For metrics with no known bounds (latency, characters) no interval can promise that:
    the bootstrap's measured rates are in ``benchmarks/gate_errors.py`` (part 4); declare the range
    such a metric can take (``bounds={"latency_s": (0, 30)}``) and it gets the betting interval on
    that range, with the same promise (values outside it are refused). A single
    ``margin`` given for several metrics that include unbounded ones warns: give those a margin in
    their own units.

    For a lower-is-better metric (latency, cost, hallucination rate) the signs flip: pass if
    ``high <= margin``, block if ``low > 0``. Bounds within ``GATE_TOLERANCE * max(1, margin)`` of a
    threshold count as on it, so float rounding never decides. The overall decision is the worst
    row. The intervals are :func:`~raglab.stats.compare`'s (``method="auto"``: Tango's score interval for
    pass/fail metrics, the betting interval for other metrics known to lie in [0, 1], the expanded
    percentile bootstrap otherwise), and the one printed and drawn
    for a row is the one that decided it.

    Parameters
    ----------
    base, cand : dict of array-like, DataFrame, Series or 1-D array
        Paired per-question scores (same questions, same order); see :func:`~raglab.stats.compare`.
    margin : float or dict
        The largest drop (in the metric's units) to ship without discussion; one for all metrics
        or ``{metric: margin}`` covering every metric.
    higher_is_better : bool or dict, optional
        Direction per metric. Defaults come from the metric name (``raglab`` knows ``latency``,
        ``cost``, ``hallucination``... are lower-is-better); an explicit value always wins.
    slices, units, ci, method, n_resamples, seed, n_permutations, bounds
        As in :func:`~raglab.stats.compare`.
    labels, weights, strata
        Human labels of both runs on a random subset of questions, as in :func:`~raglab.stats.compare`:
        those metrics are decided on paired prediction-powered intervals, and a row with fewer than
        :data:`~raglab.stats.MIN_LABELS` labelled questions reviews instead of deciding.
    adjust : {"holm", None}
        How blocks are protected against many rows: ``"holm"`` (the default) as above; ``None``
        lets each row block on its own interval and unadjusted one-sided p-value.

    Returns
    -------
    GateResult
        ``.table`` adds ``margin``, ``higher_is_better``, ``decision``, ``reason``, ``p_worse`` (the
        one-sided p-value for the bad direction) and, with Holm, ``p_worse_adjusted``.

    Examples
    --------
    >>> from raglab.stats import gate
    >>> r = gate({"latency_s": [1.0, 1.2, 0.9, 1.1] * 25}, {"latency_s": [1.0, 1.1, 0.9, 1.0] * 25},
    ...          margin=0.05, higher_is_better=False)
    >>> r.decision
    'pass'
    >>> few = gate([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], margin=0.01, higher_is_better=True)
    >>> few.decision, few.table["reason"].iloc[0]
    ('review', 'only 3 paired questions: too few to decide (the gate needs at least 10)')
    """
    table = compare(
        base, cand, slices=slices, units=units, ci=ci, method=method, n_resamples=n_resamples, seed=seed,
        n_permutations=n_permutations, bounds=bounds, labels=labels, weights=weights, strata=strata,
    )
    return gate_comparison(table, margin, higher_is_better=higher_is_better, adjust=adjust)
