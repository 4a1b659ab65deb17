"""Tidy tables, one row per metric x slice (``overall`` first).

* :func:`summary`: mean and interval per metric and slice for one run;
* :func:`compare`: the paired comparison of two runs, interval and tests per metric and slice
  (what :func:`raglab.stats.gate` decides on).

The row helpers count and sum per slice so that row order cannot change a bit of any number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab._registry import metric_info
from raglab._validation import check_int, check_level, check_option, warn
from raglab.stats._engine import (
    _BOOT_METHODS,
    OVERALL,
    _as_scores,
    _boot_label,
    _bootstrap_cells,
    _is_binary,
    _Resampler,
    _resolve_seed,
    _slice_codes,
    _unit_codes,
)
from raglab.stats.intervals import (
    _BETTING_LABEL,
    _CAPITAL_TEST,
    _PROPORTION_METHODS,
    _SCORE_LABEL,
    _betting_bounds,
    _betting_p_values,
    _bounded_t,
    _t_bounds,
    _tango_bounds,
    proportion_interval,
)
from raglab.stats.tests import _mcnemar_p, _one_sided_mcnemar, holm

__all__ = ["compare", "summary"]

_SUMMARY_METHODS = ("auto", "wilson", "exact", "normal", "t", "betting", "percentile", "bca")
_ADJUST = (None, "holm")
_COMPARE_METHODS = ("auto", "score", "betting", "percentile", "bca")
_FEW_DISCORDANT = 10  # below this many changed pass/fail questions a bootstrap interval under-covers


def _row_counts(codes: np.ndarray, n_groups: int, grouped: bool, mask: np.ndarray) -> np.ndarray:
    """Per (row, metric): how many questions have ``mask`` true, or the exact sum of integer values."""
    m = mask.shape[1]
    per_group = np.empty((n_groups, m))
    for j in range(m):
        column = mask[:, j]
        if column.dtype == bool:
            per_group[:, j] = np.bincount(codes[column], minlength=n_groups)
        else:
            per_group[:, j] = np.bincount(codes, weights=column, minlength=n_groups)
    overall = per_group.sum(axis=0, keepdims=True)
    return np.vstack([overall, per_group]) if grouped else overall


def _row_sums(codes: np.ndarray, n_groups: int, grouped: bool, values: np.ndarray) -> np.ndarray:
    """Per (row, metric) sums of the non-missing values; row order cannot change a bit of them."""
    filled = np.nan_to_num(values, nan=0.0)
    if np.array_equal(filled, np.round(filled)) and np.abs(filled).sum() < 2**52:
        return _row_counts(codes, n_groups, grouped, filled)  # integers add exactly in any order
    per_group = np.empty((n_groups, values.shape[1]))
    overall = np.empty((1, values.shape[1]))
    for j in range(values.shape[1]):
        order = np.argsort(filled[:, j])  # added in sorted order; equal values are interchangeable
        ordered = filled[order, j]
        per_group[:, j] = np.bincount(codes[order], weights=ordered, minlength=n_groups)
        overall[0, j] = ordered.sum()
    return np.vstack([overall, per_group]) if grouped else overall


def _row_skewness(diffs: np.ndarray, codes: np.ndarray, n_groups: int, grouped: bool, n: np.ndarray) -> np.ndarray:
    """Per (row, metric) sample skewness ``m3 / m2^1.5`` of the non-missing values (NaN below 3 or at zero spread)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        centre = np.nanmean(np.sort(diffs, axis=0), axis=0) if diffs.size else np.zeros(diffs.shape[1])  # sorted: row order cannot change a bit
    shifted = diffs - np.nan_to_num(centre)[None, :]  # shift for accuracy; skewness does not move
    s1, s2, s3 = (_row_sums(codes, n_groups, grouped, shifted**k) for k in (1, 2, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / n
        m2 = s2 / n - mean**2
        m3 = s3 / n - 3 * mean * s2 / n + 2 * mean**3
        out = m3 / m2**1.5
    return np.where((n >= 3) & (m2 > 1e-24), out, np.nan)


def _check_unit_range(
    names: list[str], values: np.ndarray, what: str, method: str,
    locate: Callable[[np.ndarray], tuple[list[str], list[int]]] | None = None,
) -> None:
    """Refuse scores of a metric registered in [0, 1] (recall, hit, ndcg, faithfulness...) that lie outside it.

    A recall of 1.7 or a faithfulness of -0.2 cannot be right (a percentage, a wrong column, a sign
    error upstream), and a mean and interval over it would look like evidence: refused, naming the
    metric, the rows and their values. Rounding slack of 1e-9 is allowed.

    ``what`` names the input in the message (``"`cand`"``). ``locate`` maps positions in ``values``
    to the user's rows, as ``(labels, positions)``: the row-table functions (:mod:`raglab.runs`) pass
    one that names the row of the user's table and its question id (the scores they pass are paired
    and re-indexed); without it the rows are the positions in ``values`` (``"row 5"``), which is
    what the user passed to :func:`summary` or :func:`compare`. ``RowTableError.rows`` holds the
    same positions as the message.
    """
    for j, name in enumerate(names):
        info = metric_info(name)
        if not info.bounded:
            continue
        column = values[:, j]
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero((column < -1e-9) | (column > 1 + 1e-9))  # NaN (no score) is not out of range
        if bad.size:
            labels, rows = locate(bad[:50]) if locate is not None else ([f"row {i}" for i in bad[:50]], bad[:50].tolist())
            shown = ", ".join(f"{column[i]:g} at {label}" for i, label in zip(bad[:5], labels)) + (", ..." if bad.size > 5 else "")
            scored = column[~np.isnan(column)]
            percent = scored.min() >= 0 and scored.max() <= 100 and (scored > 1).mean() >= 0.5
            hint = " (percentages? divide by 100)" if percent else ""
            raise RowTableError(
                f"{method}: {name!r} is a score in [0, 1] ({info.description or 'registered as bounded'}), but "
                f"{bad.size} value{'s lie' if bad.size > 1 else ' lies'} in {what} outside it: {shown}{hint}. Fix the "
                f"scores, or give the column another name if it is not {info.base}.",
                column=name, rows=rows, method=method,
            )


def _bounds_pair(name: str, value: Any) -> tuple[float, float]:
    """A declared range ``(low, high)`` for metric ``name``: two finite numbers, low < high."""
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"the bounds of {name!r} must be a pair (low, high), e.g. (0, 30), got {value!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"the bounds of {name!r} must be finite numbers with low < high, got {value!r}")
    return low, high


def _declared(bounds: Any, names: Sequence[str], method: str) -> dict[str, tuple[float, float]]:
    """``{metric: (low, high)}`` from ``bounds=``: the ranges the user declares for metrics with no known bounds."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise TypeError(f"{method}: `bounds` must be {{metric: (low, high)}}, e.g. {{'latency_s': (0, 30)}}, "
                        f"got {bounds!r}")
    unknown = sorted(set(map(str, bounds)) - set(names))
    if unknown:
        raise ValueError(f"{method}: `bounds` names metrics that are not scored here: {unknown}; scored: {list(names)}")
    return {name: _bounds_pair(name, bounds[name]) for name in names if name in bounds}


def _check_declared_range(declared: Mapping[str, tuple[float, float]], names: list[str], values: np.ndarray,
                          what: str, method: str) -> None:
    """Refuse values outside a declared range (rounding slack of 1e-9 of the range): the promise would not hold."""
    for name, (low, high) in declared.items():
        column = values[:, names.index(name)]
        slack = 1e-9 * (high - low)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero((column < low - slack) | (column > high + slack))
        if bad.size:
            shown = ", ".join(f"{column[i]:g} at row {i}" for i in bad[:5]) + (", ..." if bad.size > 5 else "")
            raise RowTableError(
                f"{method}: {name!r} was declared to lie in [{low:g}, {high:g}] (bounds=), but {bad.size} "
                f"value{'s lie' if bad.size > 1 else ' lies'} in `{what}` outside it: {shown}. Widen the declared "
                "bounds to what the metric can take (a timeout, a length cap), or fix the scores.",
                column=name, rows=bad[:50].tolist(), method=method,
            )


def _estimate_last(table: pd.DataFrame, estimate: str, *after: str) -> pd.DataFrame:
    """The table with ``estimate, low, high`` (then ``after``, e.g. the gate's decision) as its last columns
    (the others keep their order).

    A terminal's ``print(table)`` keeps a wide table's first and last few columns and elides the middle
    with ``...``; with the estimate and its interval last, an 80-column terminal shows
    ``metric slice n ... mean low high``. (Plain DataFrame, same columns: only their order.)
    """
    key = [estimate, "low", "high", *after]
    return table[[c for c in table.columns if c not in key] + key]


def _nullable_int(values: Sequence[Any]) -> pd.Series:
    return pd.Series(pd.array([None if pd.isna(v) else int(v) for v in values], dtype="Int64"))


def _layout(scores_len: int, slices: Any, units: Any) -> tuple[np.ndarray, list[str], bool, int, list[str], np.ndarray | None]:
    codes, labels = _slice_codes(slices, scores_len)
    grouped = slices is not None
    n_groups = max(len(labels), 1)
    rows = [OVERALL, *labels] if grouped else [OVERALL]
    return codes, labels, grouped, n_groups, rows, _unit_codes(units, scores_len)


def summary(
    scores: Any,
    *,
    slices: Any = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    units: Any = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    """Mean and interval per metric and slice for one run.

    Parameters
    ----------
    scores : dict of array-like, DataFrame, Series or 1-D array
        Per-question scores per metric (NaN = no score for that question).
    slices : array-like, optional
        A slice label per question (e.g. the question type). The table then has an ``overall`` row
        and one row per slice for each metric; missing labels form the slice ``"(missing)"``.
    ci : float
        Confidence level.
    method : {"auto", "wilson", "exact", "normal", "t", "betting", "percentile", "bca"}
        ``"auto"`` uses the Wilson interval for pass/fail data (every value 0 or 1); for other metrics
        known to lie in [0, 1] Wilson's interval at the effective n ``n mean (1 - mean) / s^2`` (it
        keeps its coverage near the bounds, where t's does not); the t interval otherwise; with ``units``, the expanded
        percentile cluster bootstrap (see :func:`compare`). ``"wilson"``, ``"exact"``
        (Clopper-Pearson) and ``"normal"`` need pass/fail data; ``"betting"`` (scores in [0, 1]) is
        the betting interval of :func:`compare`, valid at every n and for any shape (wider than t);
        ``"percentile"`` and ``"bca"`` are bootstrap intervals, computed for all metrics and slices
        from the same resamples.
    n_resamples, seed : int
        For the bootstrap methods; the seed is reported in the table.
    units : array-like, optional
        Cluster labels per question: resample whole clusters (bootstrap only).
    bounds : dict, optional
        ``{metric: (low, high)}``: the range a metric with no known bounds can take (a timeout, a
        length cap). With ``method="auto"`` or ``"betting"`` (no ``units``) it gets the betting
        interval on that range, valid at every n; a value outside the range is refused. Kept in
        ``attrs["raglab"]["summary"]["bounds"]``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_excluded, se, method, level, n_resamples, seed, mean, low, high``
        (the estimate and interval last, so that a terminal's truncated print keeps them in view).
        ``n`` counts the questions with a score; ``n_excluded`` those without one (NaN), which are
        left out of the mean and never silently. ``se`` is ``sqrt(p(1-p)/n)`` for pass/fail data,
        ``sd/sqrt(n)`` for the t interval and the bootstrap standard deviation for the bootstrap.

    Examples
    --------
    >>> from raglab.stats import summary
    >>> t = summary({"hit@5": [1, 0, 1, 1, float("nan")], "ndcg@5": [0.9, 0.1, 0.5, 0.7, 0.3]})
    >>> t[["metric", "slice", "n", "n_excluded", "mean", "method"]].to_string(index=False)
    'metric   slice  n  n_excluded  mean                              method\\n hit@5 overall  4           1  0.75                              wilson\\nndcg@5 overall  5           0  0.50 wilson (bounded score, effective n)'
    """
    check_option("method", method, _SUMMARY_METHODS)
    level = check_level(ci)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    names, values = _as_scores(scores, "scores")
    if values.shape[0] == 0:
        raise ValueError("summary needs at least one question (the scores are empty)")
    _check_unit_range(names, values, "`scores`", "summary")
    declared = _declared(bounds, names, "summary")
    _check_declared_range(declared, names, values, "scores", "summary")
    codes, _, grouped, n_groups, rows, unit_codes = _layout(values.shape[0], slices, units)
    present = ~np.isnan(values)
    n_valid = _row_counts(codes, n_groups, grouped, present)
    n_rows = np.repeat(_row_counts(codes, n_groups, grouped, np.ones((len(codes), 1), dtype=bool)), len(names), axis=1)
    sums = _row_sums(codes, n_groups, grouped, values)

    chosen = []
    for j, name in enumerate(names):
        binary = _is_binary(values[:, j])
        chosen_method = method
        if method == "auto":
            chosen_method = "percentile" if unit_codes is not None else ("wilson" if binary else "t")
            if name in declared and unit_codes is None and not binary:
                chosen_method = "betting"
        elif method in _PROPORTION_METHODS and not binary:
            raise ValueError(
                f"summary: method={method!r} is an interval for pass/fail scores, but {name!r} has values other "
                "than 0 and 1; use method='t' or a bootstrap method for it."
            )
        if chosen_method == "betting" and name not in declared and not (
                np.nanmin(values[:, j], initial=0.0) >= 0 and np.nanmax(values[:, j], initial=1.0) <= 1):
            raise ValueError(f"summary: method='betting' needs scores in [0, 1]; {name!r} has values outside it")
        if unit_codes is not None and chosen_method not in _BOOT_METHODS:
            raise ValueError(f"summary: units= needs a bootstrap method ('percentile' or 'bca'), not {chosen_method!r}")
        chosen.append(chosen_method)

    # Metrics known to lie in [0, 1] (recall, nDCG, faithfulness...) get intervals inside [0, 1].
    bounded = [
        metric_info(name).bounded and bool(np.nanmin(values[:, j], initial=0.0) >= 0 and np.nanmax(values[:, j], initial=1.0) <= 1)
        for j, name in enumerate(names)
    ]
    boot_columns = [j for j, m in enumerate(chosen) if m in _BOOT_METHODS]
    expand = method == "auto"  # the automatic cluster bootstrap is the expanded percentile (better at 20 clusters)
    seed_used = _resolve_seed(seed) if boot_columns or "betting" in chosen else None
    boot_low = boot_high = boot_se = None
    if boot_columns:
        boot_method = chosen[boot_columns[0]]
        engine, boot, boot_low, boot_high = _bootstrap_cells(
            values[:, boot_columns], codes, n_groups, grouped=grouped, units=unit_codes, level=level,
            method=boot_method, n_resamples=n_resamples, seed=seed_used, expand=expand,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells
            boot_se = np.nanstd(boot, axis=0, ddof=1)

    records = []
    for j, name in enumerate(names):
        m = chosen[j]
        for r, label in enumerate(rows):
            n = int(n_valid[r, j])
            mean = sums[r, j] / n if n else np.nan
            se = low = high = np.nan
            if m in _BOOT_METHODS:
                b = boot_columns.index(j)
                low, high = boot_low[r, b], boot_high[r, b]
                se = boot_se[r, b] if n else np.nan
                label_method = _boot_label("expanded percentile" if expand else m, paired=False,
                                           clustered=unit_codes is not None)
            elif m == "betting":
                selected = values[(codes == r - 1) if (grouped and r) else slice(None), j]
                selected = selected[~np.isnan(selected)]
                mean, se, _, _ = _t_bounds(selected, level)
                low, high = _betting_bounds(selected, *declared.get(name, (0.0, 1.0)), level, [seed_used, 3])
                label_method = _BETTING_LABEL.replace("paired ", "")
            elif m == "t":
                selected = values[(codes == r - 1) if (grouped and r) else slice(None), j]
                selected = selected[~np.isnan(selected)]
                mean, se, low, high = _t_bounds(selected, level)
                label_method = "t"
                if bounded[j] and selected.size:
                    mean, low, high, label_method = _bounded_t(selected, mean, low, high, level)
            else:
                label_method = m
                if n:
                    successes = int(round(sums[r, j]))
                    iv = proportion_interval(successes, n, ci=level, method=m)
                    mean, low, high = iv
                    se = math.sqrt(mean * (1 - mean) / n)
            resampled = m in _BOOT_METHODS
            records.append(
                {
                    "metric": name,
                    "slice": label,
                    "n": n,
                    "n_excluded": int(n_rows[r, j]) - n,
                    "mean": mean,
                    "se": se,
                    "low": low,
                    "high": high,
                    "method": label_method,
                    "level": level,
                    "n_resamples": n_resamples if resampled else None,
                    "seed": seed_used if resampled or m == "betting" else None,
                }
            )
    table = pd.DataFrame.from_records(records)
    table["n_resamples"] = _nullable_int(table["n_resamples"].tolist())
    table["seed"] = _nullable_int(table["seed"].tolist())
    table = _estimate_last(table, "mean")
    if declared:  # the range behind a betting interval is stated, never silent
        table.attrs["raglab"] = {"summary": {"bounds": {name: list(pair) for name, pair in declared.items()}}}
    return table


def compare(
    base: Any,
    cand: Any,
    *,
    slices: Any = None,
    units: Any = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    n_permutations: int = 10_000,
    adjust: str | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    """Paired comparison of two runs on the same questions: interval and test per metric and slice.

    Parameters
    ----------
    base, cand : dict of array-like, DataFrame, Series or 1-D array
        Per-question scores of the same questions **in the same order**, with the same metrics
        (use ``df.rag.compare`` to pair runs by question id). Pairs with NaN on either side are
        dropped for that metric and counted in ``n_dropped``.
    slices : array-like, optional
        A slice label per question: rows ``overall`` plus one per slice.
    units : array-like, optional
        Cluster labels per question: resample (and sign-flip) whole clusters.
    ci : float
        Confidence level.
    method : {"auto", "score", "betting", "percentile", "bca"}
        The interval on ``mean(cand - base)``. ``"auto"`` (the default) takes, per metric, the
        interval that keeps its coverage at small n: for pass/fail metrics (every value 0 or 1 on
        both sides, no ``units``) Tango's score interval for paired proportions
        (:func:`paired_proportion_interval`), never zero-width however few pairs differ; for other
        metrics known to lie in [0, 1] (``metric_info(name).bounded``: recall, nDCG, rr,
        faithfulness...; no ``units``) the *betting* interval of Waudby-Smith and Ramdas (2023) on
        differences in [-1, 1], whose each side holds at ``(1 - ci) / 2`` for any distribution and
        any n (a few questions breaking badly included), at the price of a wider interval (about
        1.4 times the t interval's width at large n); for the rest (and with ``units``) the
        *expanded* percentile bootstrap, whose level is widened by ``sqrt(n/(n-1)) * t(n-1) / z``
        for the row's ``n`` questions or clusters. ``"score"`` asks for the score interval
        (pass/fail metrics only), ``"betting"`` for the betting interval (scores in [0, 1]). ``"percentile"`` and ``"bca"`` give the
        plain bootstrap intervals for every metric (as ``scipy.stats.bootstrap``). All bootstrap
        rows of one call share the same resampled question sets; the same call with the same seed
        reproduces every number exactly (row order does not matter), while adding metrics or slices
        changes how the shared resamples are drawn (bounds move by Monte Carlo error).
    n_resamples, seed : int
        Bootstrap resamples and seed (``np.random.default_rng``); the permutations use a stream
        derived from the same seed. Both are reported on the rows that used them.
    n_permutations : int
        Random sign flips for the permutation tests of continuous metrics (0 skips them: the
        one-sided p-values then come from the bootstrap distribution). Pass/fail metrics get the
        exact McNemar test instead, unless ``units`` is given; betting rows their betting capital.
    adjust : {None, "holm"}
        Add ``p_adjusted``: Holm's adjustment of ``p_value`` over every row of the table (all
        metrics and slices). It adds a column and changes no interval; the gate's own use of Holm
        is described in :func:`gate`.
    bounds : dict, optional
        ``{metric: (low, high)}``: the range a metric with no known bounds can take (latency under a
        30 s timeout: ``{"latency_s": (0, 30)}``). With ``method="auto"`` or ``"betting"`` (no
        ``units``) such a metric gets the betting interval on differences in ``[low - high, high -
        low]``, valid at every n whatever the shape; a value outside the declared range is refused
        (naming the metric and rows). Kept in ``attrs["raglab"]["comparison"]["bounds"]``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_dropped, n_changed, base, cand, p_value, p_decrease, p_increase, skew,
        method, level, n_resamples, seed, test, n_permutations, diff, low, high`` (and
        ``p_adjusted`` after ``p_value``; with ``units``, ``n_clusters`` before ``diff``): the estimate
        and interval last, so that a terminal's truncated print keeps them in view. ``n_changed`` counts pairs whose score
        differs; ``skew`` is the sample skewness of the differences (the gate reviews bootstrap rows
        with fewer than 5 changed questions or fewer than 30 questions or clusters).
        ``diff`` is the mean of ``cand - base`` over the ``n`` complete pairs, ``base`` and ``cand``
        the means over the same pairs. ``p_value`` is the two-sided test's; ``p_decrease`` and
        ``p_increase`` are the one-sided p-values for the candidate being lower / higher (exact
        McNemar, sign flips, or the bootstrap distribution when ``n_permutations=0``; on betting
        rows ``min(1, 1 / K)``, ``K`` the betting capital at 0 the interval is read from, valid for
        any distribution on [-1, 1] without a symmetry assumption, ``test`` "betting capital",
        and ``p_value`` twice the smaller one, capped at 1). A row with
        fewer than two complete pairs (or clusters) has no interval (NaN ``low`` and ``high``; the
        gate sends it to review). The settings are kept in ``table.attrs["raglab"]["comparison"]``.

    Examples
    --------
    >>> from raglab.stats import compare
    >>> base = {"hit@5": [1, 1, 0, 1] * 50, "rr": [1.0, 0.5, 0.0, 0.25] * 50}
    >>> cand = {"hit@5": [1, 1, 1, 1] * 50, "rr": [1.0, 0.5, 0.2, 0.25] * 50}
    >>> t = compare(base, cand, seed=1)
    >>> t[["metric", "n", "diff", "test"]].to_string(index=False)
    'metric   n  diff            test\\n hit@5 200  0.25   exact McNemar\\n    rr 200  0.05 betting capital'
    >>> t["method"].tolist()
    ['paired score (Tango)', 'paired betting (Waudby-Smith-Ramdas)']
    """
    check_option("method", method, _COMPARE_METHODS)
    check_option("adjust", adjust, _ADJUST)
    level = check_level(ci)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    n_permutations = check_int(n_permutations, "n_permutations", 0)
    names, b = _as_scores(base, "base")
    cand_names, c = _as_scores(cand, "cand")
    if set(names) != set(cand_names):
        raise ValueError(
            f"`base` and `cand` must hold the same metrics; only in base: {sorted(set(names) - set(cand_names))}, "
            f"only in cand: {sorted(set(cand_names) - set(names))}"
        )
    c = c[:, [cand_names.index(name) for name in names]]
    if b.shape[0] != c.shape[0]:
        raise ValueError(
            f"`base` and `cand` must score the same questions in the same order: {b.shape[0]} vs {c.shape[0]} rows. "
            "Pair runs by question id with df.rag.compare(...)."
        )
    if b.shape[0] == 0:
        raise ValueError("compare needs at least one question (the scores are empty)")
    _check_unit_range(names, b, "`base`", "compare")
    _check_unit_range(names, c, "`cand`", "compare")
    declared = _declared(bounds, names, "compare")
    _check_declared_range(declared, names, b, "base", "compare")
    _check_declared_range(declared, names, c, "cand", "compare")
    seed = _resolve_seed(seed)
    codes, _, grouped, n_groups, rows, unit_codes = _layout(b.shape[0], slices, units)
    complete = ~(np.isnan(b) | np.isnan(c))
    diffs = np.where(complete, c - b, np.nan)
    n_pairs = _row_counts(codes, n_groups, grouped, complete)
    n_rows = np.repeat(_row_counts(codes, n_groups, grouped, np.ones((len(codes), 1), dtype=bool)), len(names), axis=1)
    base_sum = _row_sums(codes, n_groups, grouped, np.where(complete, b, np.nan))
    cand_sum = _row_sums(codes, n_groups, grouped, np.where(complete, c, np.nan))
    binary = [
        _is_binary(np.where(complete[:, j], b[:, j], np.nan)) and _is_binary(np.where(complete[:, j], c[:, j], np.nan))
        for j in range(len(names))
    ]
    score = [unit_codes is None and binary[j] and method in ("auto", "score") for j in range(len(names))]
    if method == "score" and not all(score):
        raise ValueError(
            "compare: method='score' is Tango's interval for pass/fail metrics without clusters; "
            f"{[n for n, s in zip(names, score) if not s]} are not pass/fail (or units= was given). "
            "Use method='auto' to take the bootstrap for those."
        )
    # Bounded continuous metrics (known to lie in [0, 1], so differences in [-1, 1]) get the betting
    # interval: valid at every n whatever the shape of the differences (a few questions breaking badly).
    in_unit = [bool(np.nanmin(np.r_[b[:, j], c[:, j]], initial=0.0) >= 0
                    and np.nanmax(np.r_[b[:, j], c[:, j]], initial=1.0) <= 1) for j in range(len(names))]
    betting = [not score[j] and unit_codes is None and (
                   (names[j] in declared and method in ("auto", "betting")) or (in_unit[j] and (
                       method == "betting" or (method == "auto" and metric_info(names[j]).bounded))))
               for j in range(len(names))]
    if method == "betting" and not all(betting):
        raise ValueError(
            "compare: method='betting' needs scores known to lie in [0, 1] (or declared bounds=) without units=; "
            f"{[n for n, s in zip(names, betting) if not s]} have values outside [0, 1] (or units= was given). "
            "Use method='auto' to take the bootstrap for those."
        )
    boot_method = "percentile" if method in ("auto", "score", "betting") else method
    needs_boot = any(not (s or w) for s, w in zip(score, betting))
    if not needs_boot:  # every interval is Tango's or a betting bound and no test reads a resample
        engine, boot = _Resampler(diffs, codes, n_groups, units=None, grouped=grouped), None
        low, high = np.full(engine.theta.shape, np.nan), np.full(engine.theta.shape, np.nan)
    else:
        engine, boot, low, high = _bootstrap_cells(
            diffs, codes, n_groups, grouped=grouped, units=unit_codes, level=level, method=boot_method,
            n_resamples=n_resamples, seed=seed, expand=method == "auto",
        )
    down = _row_counts(codes, n_groups, grouped, diffs == -1)
    up = _row_counts(codes, n_groups, grouped, diffs == 1)
    n_changed = _row_counts(codes, n_groups, grouped, complete & (diffs != 0))
    skew = _row_skewness(diffs, codes, n_groups, grouped, n_pairs)
    if method in ("percentile", "bca"):
        rare = [names[j] for j in range(len(names)) if binary[j] and ((down[:, j] + up[:, j]) < _FEW_DISCORDANT).any()]
        if rare:
            warn(
                f"compare: method={method!r} on pass/fail metrics {rare} with fewer than {_FEW_DISCORDANT} "
                "discordant pairs in some rows: bootstrap intervals under-cover there (they collapse towards the "
                "few changed questions). method='auto' uses Tango's score interval, which does not.",
                UserWarning,
            )
    scored = [j for j in range(len(names)) if score[j]]
    if scored:
        score_low, score_high = _tango_bounds(down[:, scored], up[:, scored], n_pairs[:, scored], level)
        low[:, scored], high[:, scored] = score_low, score_high
        no_pairs = n_pairs[:, scored] < 2  # one pair says nothing about sampling error, as for the bootstrap
        low[:, scored] = np.where(no_pairs, np.nan, low[:, scored])
        high[:, scored] = np.where(no_pairs, np.nan, high[:, scored])
    for j in (j for j in range(len(names)) if betting[j]):
        for r in range(len(rows)):
            mask = complete[:, j] & ((codes == r - 1) if (grouped and r) else True)
            lo, hi = declared.get(names[j], (0.0, 1.0))
            low[r, j], high[r, j] = _betting_bounds(diffs[mask, j], lo - hi, hi - lo, level, [seed, 2])

    # Paired tests: exact McNemar for pass/fail metrics, sign flips (shared across metrics) otherwise.
    p_values = np.full(engine.theta.shape, np.nan)
    p_decrease = np.full(engine.theta.shape, np.nan)
    p_increase = np.full(engine.theta.shape, np.nan)
    tests = ["none"] * len(names)
    permutations: list[int | None] = [None] * len(names)
    exact = [j for j in range(len(names)) if binary[j] and unit_codes is None]
    flipped = [j for j in range(len(names)) if j not in exact and not betting[j]]
    if exact:
        p_decrease[:, exact], p_increase[:, exact] = _one_sided_mcnemar(down[:, exact], up[:, exact])
        if n_permutations:
            p_values[:, exact] = _mcnemar_p(down[:, exact], up[:, exact])
            for j in exact:
                tests[j] = "exact McNemar"
    if flipped and n_permutations:
        rng = np.random.default_rng([seed, 1])  # a stream apart from the bootstrap's
        sided = engine.sign_flip(flipped, n_permutations, rng)
        p_values[:, flipped], p_decrease[:, flipped], p_increase[:, flipped] = sided
        for j in flipped:
            tests[j] = "sign-flip permutation" + (" (clusters)" if unit_codes is not None else "")
            permutations[j] = n_permutations
    elif flipped:  # no permutations: one-sided p-values from the bootstrap distribution
        with np.errstate(invalid="ignore"):
            drawn = (~np.isnan(boot[:, :, flipped])).sum(axis=0)
            p_decrease[:, flipped] = (1.0 + (boot[:, :, flipped] >= 0).sum(axis=0)) / (drawn + 1.0)
            p_increase[:, flipped] = (1.0 + (boot[:, :, flipped] <= 0).sum(axis=0)) / (drawn + 1.0)
    # Betting rows: one-sided p-values from the betting capital at 0 (min(1, 1 / K(0)), the capital the
    # interval is read from): valid for any distribution on [-1, 1], where sign flips assume symmetry.
    for j in (j for j in range(len(names)) if betting[j]):
        for r in range(len(rows)):
            mask = complete[:, j] & ((codes == r - 1) if (grouped and r) else True)
            p_decrease[r, j], p_increase[r, j] = _betting_p_values(diffs[mask, j], -1.0, 1.0, level, [seed, 2])
        p_values[:, j] = np.minimum(1.0, 2.0 * np.minimum(p_decrease[:, j], p_increase[:, j]))
        tests[j] = _CAPITAL_TEST
    for p in (p_values, p_decrease, p_increase):
        p[n_pairs == 0] = np.nan

    boot_label = _boot_label("expanded percentile" if method == "auto" else boot_method, paired=True,
                             clustered=unit_codes is not None)
    records = []
    for j, name in enumerate(names):
        label = _SCORE_LABEL if score[j] else _BETTING_LABEL if betting[j] else boot_label
        for r, row in enumerate(rows):
            n = int(n_pairs[r, j])
            records.append(
                {
                    "metric": name,
                    "slice": row,
                    "n": n,
                    "n_dropped": int(n_rows[r, j]) - n,
                    "n_changed": int(n_changed[r, j]),
                    "base": base_sum[r, j] / n if n else np.nan,
                    "cand": cand_sum[r, j] / n if n else np.nan,
                    "diff": engine.theta[r, j] if n else np.nan,
                    "low": low[r, j],
                    "high": high[r, j],
                    "p_value": p_values[r, j],
                    "p_decrease": p_decrease[r, j],
                    "p_increase": p_increase[r, j],
                    "skew": skew[r, j],
                    "method": label,
                    "level": level,
                    "n_resamples": None if score[j] or betting[j] else n_resamples,
                    "seed": None if score[j] and not permutations[j] else seed,
                    "test": tests[j],
                    "n_permutations": permutations[j],
                    "n_clusters": int(engine.units_per_cell[r, j]) if unit_codes is not None else None,
                }
            )
    table = pd.DataFrame.from_records(records)
    for column in ("n_resamples", "seed", "n_permutations", "n_clusters"):
        table[column] = _nullable_int(table[column].tolist())
    if unit_codes is None:
        table = table.drop(columns="n_clusters")
    if adjust == "holm":
        table.insert(table.columns.get_loc("p_value") + 1, "p_adjusted", holm(table["p_value"].to_numpy()))
    table = _estimate_last(table, "diff")
    table.attrs["raglab"] = {
        "comparison": {
            "ci": level,
            "method": method,
            "n_resamples": n_resamples,
            "seed": seed,
            "n_permutations": n_permutations,
            "adjust": adjust,
            "units": units is not None,
            **({"bounds": {name: list(pair) for name, pair in declared.items()}} if declared else {}),
        }
    }
    return table
