"""Tidy tables, one row per metric x slice (``overall`` first).

* :func:`summary`: mean and interval per metric and slice for one run;
* :func:`compare`: the paired comparison of two runs, interval and tests per metric and slice
  (what :func:`raglab.stats.gate` decides on).

The row helpers count and sum per slice so that row order cannot change a bit of any number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab._registry import metric_info
from raglab._validation import check_int, check_level, check_option
from raglab.stats._engine import (  # noqa: F401  (_row_counts, _row_sums: their old home was here)
    _as_scores,
    _resolve_seed,
    _row_counts,
    _row_skewness,
    _row_sums,
)
from raglab.stats.estimators import (
    SUMMARY_METHODS,
    Layout,
    OneSample,
    PairedBlock,
    PairedSample,
    Settings,
    SummaryBlock,
    _unequal,
    choose_one_sample,
    compare_methods,
    run_one_sample,
    run_paired,
)
from raglab.stats.results import COMPARISON, SUMMARY, ComparisonRow, SummaryRow, frame_of
from raglab.stats.tests import holm

__all__ = ["compare", "summary"]

_ADJUST = (None, "holm")


def _check_unit_range(
    names: list[str], values: np.ndarray, what: str, caller: str,
    locate: Callable[[np.ndarray], tuple[list[str], list[int]]] | None = None,
) -> None:
    """Refuse scores of a metric registered in [0, 1] (recall, hit, ndcg, faithfulness...) that lie outside it.

    A recall of 1.7 or a faithfulness of -0.2 cannot be right (a percentage, a wrong column, a sign
    error upstream), and a mean and interval over it would look like evidence: refused, naming the
    metric, the rows and their values. Rounding slack of 1e-9 is allowed.

    ``what`` names the input in the message (``"`cand`"``), ``caller`` the function the user called. ``locate`` maps positions in ``values``
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
                f"{caller}: {name!r} is a score in [0, 1] ({info.description or 'registered as bounded'}), but "
                f"{bad.size} value{'s lie' if bad.size > 1 else ' lies'} in {what} outside it: {shown}{hint}. Fix the "
                f"scores, or give the column another name if it is not {info.base}.",
                column=name, rows=rows, method=caller,
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


def _declared(bounds: Any, names: Sequence[str], caller: str) -> dict[str, tuple[float, float]]:
    """``{metric: (low, high)}`` from ``bounds=``: the ranges the user declares for metrics with no known bounds."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise TypeError(f"{caller}: `bounds` must be {{metric: (low, high)}}, e.g. {{'latency_s': (0, 30)}}, "
                        f"got {bounds!r}")
    unknown = sorted(set(map(str, bounds)) - set(names))
    if unknown:
        raise ValueError(f"{caller}: `bounds` names metrics that are not scored here: {unknown}; scored: {list(names)}")
    return {name: _bounds_pair(name, bounds[name]) for name in names if name in bounds}


def _check_declared_range(declared: Mapping[str, tuple[float, float]], names: list[str], values: np.ndarray,
                          what: str, caller: str) -> None:
    """Refuse values outside a declared range (rounding slack of 1e-9 of the range): the promise would not hold."""
    for name, (low, high) in declared.items():
        column = values[:, names.index(name)]
        slack = 1e-9 * (high - low)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero((column < low - slack) | (column > high + slack))
        if bad.size:
            shown = ", ".join(f"{column[i]:g} at row {i}" for i in bad[:5]) + (", ..." if bad.size > 5 else "")
            raise RowTableError(
                f"{caller}: {name!r} was declared to lie in [{low:g}, {high:g}] (bounds=), but {bad.size} "
                f"value{'s lie' if bad.size > 1 else ' lies'} in `{what}` outside it: {shown}. Widen the declared "
                "bounds to what the metric can take (a timeout, a length cap), or fix the scores.",
                column=name, rows=bad[:50].tolist(), method=caller,
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


def _settings(method: str, ci: float, n_resamples: int, seed: int | None, n_permutations: int = 0) -> Settings:
    return Settings(method=method, level=check_level(ci), n_resamples=check_int(n_resamples, "n_resamples", 1),
                    seed=seed, n_permutations=check_int(n_permutations, "n_permutations", 0))


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
    check_option("method", method, SUMMARY_METHODS)
    settings = _settings(method, ci, n_resamples, seed)
    sample = _one_sample(scores, slices, units, bounds)
    chosen = choose_one_sample(sample, method)
    if any(m in ("percentile", "bca", "betting") for m in chosen):
        settings = replace(settings, seed=_resolve_seed(seed))
    else:
        settings = replace(settings, seed=None)
    blocks = run_one_sample(sample, chosen, settings)
    table = frame_of(_summary_rows(sample, blocks, settings), SUMMARY)
    if sample.bounds:  # the range behind a betting interval is stated, never silent
        table.attrs["raglab"] = {"summary": {"bounds": {name: list(pair) for name, pair in sample.bounds.items()}}}
    return table


def _one_sample(scores: Any, slices: Any, units: Any, bounds: Any) -> OneSample:
    """The checked scores of one run, as the one-sample estimators receive them."""
    names, values = _as_scores(scores, "scores")
    if values.shape[0] == 0:
        raise ValueError("summary needs at least one question (the scores are empty)")
    _check_unit_range(names, values, "`scores`", "summary")
    declared = _declared(bounds, names, "summary")
    _check_declared_range(declared, names, values, "scores", "summary")
    return OneSample(tuple(names), values, Layout.of(values.shape[0], slices, units), declared)


def _summary_rows(sample: OneSample, blocks: Sequence[SummaryBlock], settings: Settings) -> list[SummaryRow]:
    """One typed row per metric and slice, metrics in the order given."""
    layout = sample.layout
    n_rows = layout.counts(np.ones((len(layout.codes), 1), dtype=bool))[:, 0]
    where = {j: (block, c) for block in blocks for c, j in enumerate(block.columns)}
    rows = []
    for j, name in enumerate(sample.names):
        block, c = where[j]
        for r, label in enumerate(layout.rows):
            n = int(sample.n_valid[r, j])
            rows.append(SummaryRow(
                metric=name, slice=label, n=n, n_excluded=int(n_rows[r]) - n, mean=block.mean[r, c],
                se=block.se[r, c], low=block.low[r, c], high=block.high[r, c], method=block.labels[r, c],
                level=settings.level, n_resamples=block.n_resamples, seed=block.seed, kind=block.kind,
            ))
    return rows


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
    labels: Mapping[str, tuple[Any, Any]] | None = None,
    weights: Any = None,
    strata: Any = None,
    ids: Any = None,
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
    method : {"auto", "ppi", "score", "betting", "percentile", "bca", "poisson"}
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
        plain bootstrap intervals for every metric (as ``scipy.stats.bootstrap``). ``"ppi"`` (and ``"auto"`` for
        metrics given ``labels``) is the paired prediction-powered interval (see ``labels``). ``"poisson"`` is the
        Poisson bootstrap (``raglab.stats.estimators.PoissonBootstrap``; percentile interval, every metric):
        replicate ``b`` weighs question ``i`` by ``Poisson(1)`` drawn from a hash of (seed, ``ids[i]`` or
        its cluster's label, ``b``), so it depends on no row order or partitioning (it is what
        ``raglab.dask`` computes). All bootstrap
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
    labels : dict, optional
        ``{metric: (base_labels, cand_labels)}``: human labels of both runs' answers, per question in
        the same order (NaN where a question was not labelled), for judged metrics whose labels were
        given to a *random* subset of questions in both runs. Those metrics get the paired
        prediction-powered interval (``method="auto"`` or ``"ppi"``; ``raglab.stats.estimators.PredictionPowered``):
        the judge's difference on every pair debiased by the human differences on the labelled pairs;
        ``diff`` is then the estimate of the *human* mean difference, and
        ``attrs["raglab"]["comparison"]["n_labeled"]`` holds ``{metric: {slice: labelled questions}}``
        (the gate reviews rows below :data:`raglab.stats.MIN_LABELS`).
    weights : array-like, optional
        Per question ``1 / inclusion probability`` of being labelled (with ``labels``).
    strata : array-like, optional
        Per question the stratum of the label draw: the ``overall`` prediction-powered row is stratified.
    ids : array-like, optional
        Per question its id: ``method="poisson"`` (a Poisson bootstrap whose weights are keyed by the
        id, or by the cluster label with ``units``, so that row order does not matter) reads it; by
        default a question's id is its position.

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
    check_option("method", method, compare_methods())
    check_option("adjust", adjust, _ADJUST)
    settings = _settings(method, ci, n_resamples, seed, n_permutations)
    sample, resolved = _paired_sample(base, cand, slices, units, bounds, seed)
    sample = _with_ids(sample, ids, units)
    if labels is not None:
        sample = _with_labels(sample, labels, weights, strata)
    settings = replace(settings, seed=resolved)
    blocks, shared = run_paired(sample, settings)
    rows = _comparison_rows(sample, blocks, shared, settings)
    if adjust == "holm":
        adjusted = holm(np.array([row.p_value for row in rows], dtype=float))
        rows = [replace(row, p_adjusted=float(p)) for row, p in zip(rows, adjusted)]
    table = frame_of(rows, COMPARISON)
    table.attrs["raglab"] = {
        "comparison": {
            "ci": settings.level,
            "method": method,
            "n_resamples": settings.n_resamples,
            "seed": settings.seed,
            "n_permutations": settings.n_permutations,
            "adjust": adjust,
            "units": units is not None,
            **({"bounds": {name: list(pair) for name, pair in sample.bounds.items()}} if sample.bounds else {}),
            **({"labels": list(labels)} if labels else {}),
            **({"n_labeled": _labelled_counts(sample, blocks)} if labels else {}),
            **({"unequal_weights": _unequal_label_weights(sample)} if labels else {}),
        }
    }
    return table


def _unequal_label_weights(sample: PairedSample) -> dict[str, float]:
    """``{slice: effective labels}`` for the rows whose labelled questions were drawn with unequal
    probabilities (within a stratum on the stratified ``overall`` row; an active draw, or a Neyman one
    read without its strata); empty when none were. The effective labels are Kish's ``(sum w)^2 / sum w^2``
    of the labelled questions' weights (summed over strata on the stratified row): the gate reviews such
    rows below ``MIN_LABELS`` of them (the design-based interval undercovered with few, benchmarks/ppi.py
    section 10). Labelled means labelled in both runs on some metric."""
    if sample.weights is None or sample.labels is None:
        return {}
    labelled = np.isfinite(sample.labels[1] - sample.labels[0]).any(axis=1)  # labelled in both runs
    out: dict[str, float] = {}
    for r, label in enumerate(sample.layout.rows):
        rows = np.zeros(labelled.size, dtype=bool)
        rows[sample.layout.select(r)] = True
        lab = rows & labelled
        strata = sample.strata if r == 0 else None
        if not lab.any() or not _unequal(sample.weights, lab, strata):
            continue
        groups = [lab] if strata is None else [lab & (strata == h) for h in np.unique(strata[lab])]
        out[str(label)] = float(sum(sample.weights[g].sum() ** 2 / float(sample.weights[g] @ sample.weights[g])
                                    for g in groups))
    return out


def _labelled_counts(sample: PairedSample, blocks: Sequence[PairedBlock]) -> dict[str, dict[str, int]]:
    """``{metric: {slice: questions labelled in both runs}}`` for the prediction-powered rows (the gate
    reviews those below ``MIN_LABELS``)."""
    out: dict[str, dict[str, int]] = {}
    for block in blocks:
        if block.n_labeled is None:
            continue
        for c, j in enumerate(block.columns):
            out[sample.names[j]] = {str(label): int(block.n_labeled[r, c]) for r, label in enumerate(sample.layout.rows)}
    return out


def _paired_sample(base: Any, cand: Any, slices: Any, units: Any, bounds: Any,
                   seed: int | None) -> tuple[PairedSample, int]:
    """The checked, aligned scores of two paired runs, as the paired estimators receive them, and the seed
    (resolved after the scores are checked, before the slices and clusters)."""
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
    return PairedSample(tuple(names), b, c, Layout.of(b.shape[0], slices, units), declared), seed


def _with_ids(sample: PairedSample, ids: Any, units: Any) -> PairedSample:
    """The sample with the labels the Poisson bootstrap keys its weights by: the cluster labels with
    ``units``, else the question ids (None when neither is given: positions)."""
    keys = units if units is not None else ids
    if keys is None:
        return sample
    values = np.asarray(pd.Series(list(keys), dtype=object).astype(str), dtype=object)
    n = sample.base.shape[0]
    if values.size != n:
        raise ValueError(f"ids must have one value per question ({n}), got {values.size}")
    return replace(sample, ids=values)


def _with_labels(sample: PairedSample, labels: Mapping[str, tuple[Any, Any]], weights: Any,
                 strata: Any) -> PairedSample:
    """The sample with the human labels of both runs (NaN where unlabelled), their weights and strata."""
    if not isinstance(labels, Mapping):
        raise TypeError(f"labels must be {{metric: (base_labels, cand_labels)}}, got {type(labels).__name__}")
    n, k = sample.base.shape
    lb, lc = np.full((n, k), np.nan), np.full((n, k), np.nan)
    for name, pair in labels.items():
        if name not in sample.names:
            raise ValueError(f"labels name {name!r}, which is not a compared metric {list(sample.names)}")
        j = sample.names.index(name)
        b, c = (np.asarray(pair[i], dtype=float).reshape(-1) for i in (0, 1))
        if b.size != n or c.size != n:
            raise ValueError(f"labels of {name!r} must have one value per question ({n}), got {b.size} and {c.size}")
        lb[:, j], lc[:, j] = b, c
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.size != n or not (np.isfinite(w) & (w > 0)).all():
            raise ValueError(f"weights must be {n} positive numbers (1 / inclusion probability)")
    st = None if strata is None else np.asarray(pd.Series(list(strata)).astype(str))
    if st is not None and st.size != n:
        raise ValueError(f"strata must have one value per question ({n}), got {st.size}")
    return replace(sample, labels=(lb, lc), weights=w, strata=st)


def _comparison_rows(sample: PairedSample, blocks: Sequence[PairedBlock], shared: Any,
                     settings: Settings) -> list[ComparisonRow]:
    """One typed row per metric and slice, metrics in the order given."""
    layout, complete = sample.layout, sample.complete
    n_pairs = sample.n_pairs
    n_rows = layout.counts(np.ones((len(layout.codes), 1), dtype=bool))[:, 0]
    base_sum = layout.sums(np.where(complete, sample.base, np.nan))
    cand_sum = layout.sums(np.where(complete, sample.cand, np.nan))
    n_changed = layout.counts(complete & (sample.diffs != 0))
    skew = _row_skewness(sample.diffs, layout.codes, layout.n_groups, layout.grouped, n_pairs)
    clusters = shared.engine.units_per_cell
    where = {j: (block, c) for block in blocks for c, j in enumerate(block.columns)}
    # each cell's estimate: the block's own, else the mean difference over the complete pairs
    theta = shared.engine.theta.copy()
    for block in blocks:
        if block.estimate is not None:
            theta[:, list(block.columns)] = block.estimate
    rows = []
    for j, name in enumerate(sample.names):
        block, c = where[j]
        for r, label in enumerate(layout.rows):
            n = int(n_pairs[r, j])
            p_value, p_decrease, p_increase = (
                float(p[r, c]) if n else np.nan for p in (block.p_value, block.p_decrease, block.p_increase))
            rows.append(ComparisonRow(
                metric=name, slice=label, n=n, n_dropped=int(n_rows[r]) - n, n_changed=int(n_changed[r, j]),
                base=base_sum[r, j] / n if n else np.nan, cand=cand_sum[r, j] / n if n else np.nan,
                diff=theta[r, j] if n else np.nan, low=block.low[r, c], high=block.high[r, c],
                p_value=p_value, p_decrease=p_decrease, p_increase=p_increase, skew=skew[r, j],
                method=block.label, level=settings.level, n_resamples=block.n_resamples, seed=block.seeds[c],
                test=block.tests[c], n_permutations=block.n_permutations[c],
                n_clusters=int(clusters[r, j]) if layout.clustered else None,
                kind=block.kind, test_kind=block.test_kinds[c],
            ))
    return rows
