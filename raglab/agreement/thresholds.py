"""A judge's agreement with people at every score threshold: :func:`threshold_sweep`.

A judge that returns a score (RAGAS faithfulness in [0, 1], a 1-5 rating) needs a threshold before
it can pass or fail an answer. :func:`threshold_sweep` computes, for every candidate threshold ``t``
at once, what :func:`raglab.agreement.report` would report with ``judge_threshold=t``: the judge
passes an item when ``score >= t``; sensitivity (share of the items people passed that the judge
passes), specificity, the miss rate (share of the items people failed that the judge passes,
``1 - specificity``), Cohen's kappa, raw agreement and the attenuation ``J = Se + Sp - 1``, with
Wilson intervals for the three rates and every count. The human labels are read exactly as the
report reads them (same refusals, same :class:`LabelMismatchError`), so a row of the sweep equals
the report at that threshold (with the default pass label 1/True; with ``positive=0`` the sweep
still passes ``score >= t``, while ``report(judge_threshold=t, positive=0)`` counts the judge's
False, ``score < t``, as its pass).

The scores are sorted once and each threshold's counts come from binary searches, so a sweep over
thousands of items and thresholds costs about as much as one report.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._meta import update_meta
from raglab._results import jsonable
from raglab._validation import check_int, check_level
from raglab.agreement._common import normal_quantile
from raglab.agreement.kappa import kappa_many
from raglab.agreement.labels import (
    as_labels,
    binarize,
    check_comparable,
    label_codes,
    missing_mask,
    pair_labels,
)
from raglab.agreement.reporting import check_names, check_rows, pass_label, refuse_side, side_naming
from raglab.stats.intervals import _wilson_arrays

_NOMINAL_2X2 = np.array([[0.0, 1.0], [1.0, 0.0]])  # unweighted kappa: any disagreement counts 1

__all__ = ["SWEEP_COLUMNS", "threshold_sweep"]

SWEEP_COLUMNS = (
    "threshold", "n", "n_excluded", "human_positive", "human_negative", "true_pass", "false_fail",
    "false_pass", "true_fail", "judge_positive_rate", "sensitivity", "sensitivity_low", "sensitivity_high",
    "specificity", "specificity_low", "specificity_high", "miss_rate", "miss_rate_low", "miss_rate_high",
    "kappa", "agreement", "attenuation",
)
"""The columns of :func:`threshold_sweep`'s table, in order."""

_META_SECTION = "threshold_sweep"


def _scores(values: np.ndarray, side_name: str, caller: str) -> np.ndarray:
    """The judge's scores as floats (missing = NaN); anything that is not a number raises, naming it."""
    if values.dtype.kind in "biuf":
        return values.astype(float)
    missing = missing_mask(values)
    present = values[~missing]
    bad = [i for i, v in zip(np.flatnonzero(~missing), present)
           if isinstance(v, (str, bytes)) or not isinstance(v, (int, float, np.integer, np.floating, np.bool_))]
    if bad:
        value = values[bad[0]]
        raise TypeError(
            f"{caller}: {side_name} must hold numeric judge scores; found {value!r} at item {bad[0]} "
            f"({len(bad)} non-numeric value(s) in all). Convert them first, e.g. pd.to_numeric(..., errors='coerce') "
            "(unparseable values then count as missing)"
        )
    out = np.full(values.shape, np.nan)
    out[~missing] = present.astype(float)
    return out


def _check_thresholds(thresholds: Any, caller: str) -> np.ndarray:
    if isinstance(thresholds, (str, bytes)) or np.ndim(thresholds) > 1:
        raise TypeError(f"{caller}: `thresholds` must be a number or a 1-D sequence of numbers, got {thresholds!r}")
    try:
        values = np.atleast_1d(np.asarray(thresholds, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"{caller}: `thresholds` must be numbers, got {thresholds!r}") from None
    if values.size == 0:
        raise ValueError(f"{caller}: `thresholds` is empty; pass at least one threshold or leave thresholds=None")
    bad = values[~np.isfinite(values)]
    if bad.size:
        raise ValueError(f"{caller}: `thresholds` must be finite numbers, got {float(bad[0])!r}")
    return np.unique(values)


def _default_thresholds(scores: np.ndarray, max_thresholds: int) -> np.ndarray:
    """The distinct scores, or ``max_thresholds`` of them at evenly spaced quantiles when there are more."""
    distinct = np.unique(scores)
    # Scores a rounding error apart (0.6 and 0.6000000000000001, from averaging upstream) would give
    # rows that print alike; keep the smallest of each such run, so every score still passes it.
    apart = np.diff(distinct) > 1e-9 * np.maximum(1.0, np.abs(distinct[1:]))
    distinct = distinct[np.r_[True, apart]] if distinct.size else distinct
    if distinct.size <= max_thresholds:
        return distinct
    # Observed scores at evenly spaced quantiles: exact statistics at each, even steps in items.
    grid = np.quantile(scores, np.linspace(0, 1, max_thresholds), method="inverted_cdf")
    return np.unique(grid)


def _wilson(successes: np.ndarray, n: int, z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wilson score intervals for ``successes / n`` (one n, many successes); NaN when n is 0.

    The formula of :func:`raglab.stats.proportion_interval` (``method="wilson"``), on arrays.
    """
    if n == 0:
        nan = np.full(successes.shape, np.nan)
        return nan, nan.copy(), nan.copy()
    p = successes / n
    low, high = _wilson_arrays(p, n, z)
    return p, low, high


def threshold_sweep(
    human: Sequence[Hashable],
    judge: Sequence[float],
    thresholds: float | Sequence[float] | None = None,
    *,
    positive: Hashable | None = None,
    human_threshold: float | None = None,
    max_thresholds: int = 200,
    ci: float = 0.95,
    names: tuple[str, str] | None = None,
    rows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Sensitivity, specificity, miss rate and kappa of a scoring judge at every threshold.

    At threshold ``t`` the judge passes an item when its score is ``>= t``; each row is what
    :func:`raglab.agreement.report` gives with ``judge_threshold=t`` (kappa, agreement, rates and
    counts; the rates' intervals are Wilson's, as in the report), for the default pass label 1/True.

    Parameters
    ----------
    human : sequence of hashable
        Human labels of the items (0/1 or booleans, ``positive=`` picking the pass label; ratings
        or scores with ``human_threshold``), read as :func:`raglab.agreement.report` reads them: text labels,
        or numbers other than 0/1 without ``human_threshold``, raise :class:`LabelMismatchError`
        naming the fix; fractional scores without ``human_threshold`` raise ``ValueError``.
    judge : sequence of float
        The judge's scores for the same items, in the same order. Non-numeric values raise
        ``TypeError`` naming the first; missing scores (NaN/None) are excluded and counted.
    thresholds : float or sequence of float, optional
        The thresholds to evaluate (sorted, duplicates dropped). Default: every distinct score, or
        ``max_thresholds`` observed scores at evenly spaced quantiles when there are more.
    positive : label, optional
        The human pass label (inferred as 1/True for 0/1 or boolean labels; True with
        ``human_threshold``). With more than two labels, ``positive`` against the rest.
    human_threshold : float, optional
        Turns human ratings into pass/fail: ``rating >= human_threshold`` is a pass.
    max_thresholds : int
        At most this many default thresholds.
    ci : float
        Level of the Wilson intervals.
    names : (str, str), optional
        Names of the human and judge side for messages and the plot (default: the Series' names,
        else ``("human", "judge")``).
    rows : DataFrame, optional
        The row table the two columns come from (messages then name them as its columns).

    Returns
    -------
    DataFrame
        One row per threshold, ascending, with the columns of ``SWEEP_COLUMNS``: ``threshold``;
        ``n`` items compared and ``n_excluded`` (a missing label or score); the counts
        ``human_positive``, ``human_negative``, ``true_pass``, ``false_fail``, ``false_pass`` (people
        fail, judge passes) and ``true_fail``; ``judge_positive_rate``; ``sensitivity``,
        ``specificity`` and ``miss_rate`` with ``_low``/``_high`` bounds (NaN when people never pass,
        or never fail); Cohen's ``kappa`` (NaN when chance agreement is 1), ``agreement`` and
        ``attenuation`` (``sensitivity + specificity - 1``). ``df.attrs["raglab"]["threshold_sweep"]``
        holds the names, the pass label and the level.

    Raises
    ------
    LabelMismatchError
        Human labels that can never be compared with the judge's pass/fail (as in the report).
    TypeError, ValueError
        Non-numeric scores or thresholds, labels and scores of different lengths, no item with
        both a label and a score.

    See Also
    --------
    raglab.agreement.report : everything at one threshold, with kappa's interval and the disagreements.
    raglab.plots.judge_thresholds : the sweep drawn, with a chosen threshold marked.

    Examples
    --------
    >>> from raglab import agreement
    >>> human = [1, 1, 1, 1, 0, 0, 0, 1]
    >>> scores = [0.9, 0.8, 0.8, 0.4, 0.7, 0.2, 0.1, None]
    >>> sweep = agreement.threshold_sweep(human, scores)
    >>> print(sweep[["threshold", "sensitivity", "specificity", "miss_rate", "kappa"]].round(3).to_string(index=False))
     threshold  sensitivity  specificity  miss_rate  kappa
           0.1         1.00        0.000      1.000  0.000
           0.2         1.00        0.333      0.667  0.364
           0.4         1.00        0.667      0.333  0.696
           0.7         0.75        0.667      0.333  0.417
           0.8         0.75        1.000      0.000  0.720
           0.9         0.25        1.000      0.000  0.222
    >>> int(sweep["n"].iloc[0]), int(sweep["n_excluded"].iloc[0])    # the item without a score
    (7, 1)

    Each row is the report at that threshold:

    >>> rep = agreement.report(human, scores, judge_threshold=0.8)
    >>> row = sweep.set_index("threshold").loc[0.8]
    >>> round(rep.kappa, 3), round(float(row["kappa"]), 3), rep.miss_rate, float(row["miss_rate"])
    (0.72, 0.72, 0.0, 0.0)
    """
    caller = "rag.threshold_sweep" if rows is not None else "threshold_sweep"
    names, sides, caller = side_naming(human, judge, check_names(names), rows, None, caller)
    level = check_level(ci)
    max_thresholds = check_int(max_thresholds, "max_thresholds", 2)
    x, raw_y = pair_labels(human, judge, ("human", "judge"))
    check_rows(rows, len(x))
    scores = _scores(as_labels(raw_y, "judge"), sides[1].name, caller)
    # The human side exactly as report(..., judge_threshold=t) reads it: refusals, threshold, pass label.
    refuse_side(x, human_threshold, "human")
    x = binarize(x, human_threshold, "human")
    if positive is None:
        positive = True  # as the report does whenever a threshold makes pass/fail labels
    x, _ = check_comparable(x, np.array([True, False], dtype=object), sides, caller=caller, positive=positive)
    (codes,), labs, _ = label_codes([x], None, need_order=False)
    # The judge side's labels are True/False; the report's label list holds both sides' labels.
    labs_both = labs + [v for v in (False, True) if v not in labs]
    labs_both, positive = pass_label(labs_both, positive, None)
    keep = (codes >= 0) & ~np.isnan(scores)
    n, n_excluded = int(keep.sum()), int(len(x) - keep.sum())
    if n == 0:
        raise ValueError(
            f"{caller}: no item has both a human label and a judge score ({int((codes >= 0).sum())} labelled, "
            f"{int((~np.isnan(scores)).sum())} scored, of {len(x)}); nothing to compare"
        )
    human_pass = np.isin(codes[keep], [i for i, v in enumerate(labs) if _same(v, positive)])
    kept = scores[keep]
    if thresholds is None:
        grid = _default_thresholds(kept, max_thresholds)
    else:
        grid = _check_thresholds(thresholds, caller)

    table = _sweep_table(kept, human_pass, grid, level, n_excluded)
    update_meta(table, _META_SECTION, {
        "human_name": str(names[0]), "judge_name": str(names[1]), "positive": jsonable(positive),
        "human_threshold": human_threshold, "level": level,
    })
    return table


def _sweep_table(kept: np.ndarray, human_pass: np.ndarray, grid: np.ndarray, level: float,
                 n_excluded: int) -> pd.DataFrame:
    """One row per threshold of ``grid``: the 2x2 counts, the rates with Wilson intervals, kappa, agreement."""
    n = kept.size
    # Sort once; the number of scores >= t is the count minus those strictly below t.
    pos_scores, neg_scores = np.sort(kept[human_pass]), np.sort(kept[~human_pass])
    hp, hn = pos_scores.size, neg_scores.size
    tp = hp - np.searchsorted(pos_scores, grid, side="left")
    fp = hn - np.searchsorted(neg_scores, grid, side="left")
    fn, tn = hp - tp, hn - fp
    judge_pass = tp + fp
    z = normal_quantile(level)
    se, se_low, se_high = _wilson(tp, hp, z)
    sp, sp_low, sp_high = _wilson(tn, hn, z)
    miss, miss_low, miss_high = _wilson(fp, hn, z)
    observed = (tp + tn) / n
    # One 2x2 table (people x judge) per threshold; kappa as the report computes it.
    tables = np.stack([np.stack([tp, fn], -1), np.stack([fp, tn], -1)], axis=1).astype(float)
    kappa = kappa_many(tables, _NOMINAL_2X2)
    table = pd.DataFrame({
        "threshold": grid, "n": n, "n_excluded": n_excluded, "human_positive": hp, "human_negative": hn,
        "true_pass": tp, "false_fail": fn, "false_pass": fp, "true_fail": tn, "judge_positive_rate": judge_pass / n,
        "sensitivity": se, "sensitivity_low": se_low, "sensitivity_high": se_high,
        "specificity": sp, "specificity_low": sp_low, "specificity_high": sp_high,
        "miss_rate": miss, "miss_rate_low": miss_low, "miss_rate_high": miss_high,
        "kappa": kappa, "agreement": observed, "attenuation": se + sp - 1,
    }, columns=list(SWEEP_COLUMNS))
    for column in ("n", "n_excluded", "human_positive", "human_negative", "true_pass", "false_fail", "false_pass",
                   "true_fail"):
        table[column] = table[column].astype(np.int64)
    return table


def _same(label: Any, positive: Any) -> bool:
    """Whether a human label is the pass label, with the report's equality (1 == 1.0 == True)."""
    try:
        return bool(label == positive)
    except (TypeError, ValueError):
        return False
