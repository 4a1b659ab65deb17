"""Cohen's kappa between two raters: the weights, the standard error, and its confidence interval.

:func:`cohen_kappa` and :func:`cohen_kappa_interval` (adjusted by default, analytic, or bootstrap),
and the count-table kernels the report and ``benchmarks/agreement_coverage.py`` reuse: the
disagreement weights, kappa and its Fleiss-Cohen-Everitt standard error for a stack of tables, the
interval bounds for a stack of tables (``_kappa_bounds``), and the item bootstrap drawn as one
multinomial.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from raglab._interval import Interval
from raglab._validation import check_level, check_option, warn
from raglab.agreement._common import (
    DISTANCES,
    KAPPA_METHODS,
    KAPPA_MIN_COUNT,
    WEIGHTS,
    FragileIntervalWarning,
    check_resamples,
    normal_quantile,
    percentile,
)
from raglab.agreement.labels import (
    Side,
    arg_side,
    categorical_order,
    check_comparable,
    label_codes,
    pair_labels,
    refuse_text_order,
)

__all__ = ["cohen_kappa", "cohen_kappa_interval"]


def disagreement_weights(labels: list[Any], weights: str | None, distance: str) -> np.ndarray:
    """K x K disagreement weights: 0 on the diagonal, at most 1."""
    k = len(labels)
    if weights is None:
        return 1.0 - np.eye(k)
    if distance == "rank":
        scores = np.arange(k, dtype=float)
    else:
        try:
            scores = np.asarray([float(v) for v in labels], dtype=float)
        except (TypeError, ValueError):
            raise TypeError(
                f"distance='value' needs numeric labels, got {labels!r}; use distance='rank' to weight by "
                "position in the label order"
            ) from None
    diff = np.abs(scores[:, None] - scores[None, :])
    if weights == "quadratic":
        diff = diff**2
    top = diff.max() if k > 1 else 0.0
    return diff / top if top > 0 else diff


def refuse_unordered(
    labs: list[Any], labels: Any, weights: str | None, distance: str, sides: tuple[Side, Side], caller: str
) -> None:
    """Weighted kappa by rank needs the categories' order: refuse text labels without ``labels=``."""
    if weights is not None and distance == "rank":
        refuse_text_order(
            labs, labels, needs=f"weights={weights!r} weighs each disagreement by how far apart the two categories are",
            holders=f"{sides[0].name} and {sides[1].name}", caller=caller, fix="labels",
        )


def _kappa_and_se_many(tables: np.ndarray, dis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kappa and its large-sample standard error (Fleiss, Cohen & Everitt 1969) for a stack of count tables.

    ``tables`` is B x K x K (counts, possibly fractional); NaN where chance agreement is 1.
    """
    n = tables.sum(axis=(1, 2))
    p = tables / n[:, None, None]
    row, col = p.sum(2), p.sum(1)
    w = 1.0 - dis  # agreement weights, 1 on the diagonal
    po = np.einsum("bij,ij->b", p, w)
    pe = np.einsum("bi,ij,bj->b", row, w, col)
    undefined = pe >= 1.0 - 1e-15
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (po - pe) / (1.0 - pe)
        w_row = col @ w.T  # mean agreement weight of row category i against the judge's margin
        w_col = row @ w
        term = (p * (w[None] - (w_row[:, :, None] + w_col[:, None, :]) * (1.0 - kappa)[:, None, None]) ** 2).sum((1, 2))
        var = (term - (kappa - pe * (1.0 - kappa)) ** 2) / ((1.0 - pe) ** 2 * n)
    kappa[undefined] = np.nan
    se = np.sqrt(np.maximum(var, 0.0))
    se[undefined] = np.nan
    return kappa, se


def _kappa_and_se(table: np.ndarray, dis: np.ndarray) -> tuple[float, float]:
    """Kappa and its large-sample standard error (Fleiss, Cohen & Everitt 1969) from one count table."""
    kappa, se = _kappa_and_se_many(np.asarray(table, dtype=float)[None], dis)
    return float(kappa[0]), float(se[0])


def kappa_many(tables: np.ndarray, dis: np.ndarray) -> np.ndarray:
    """Kappa for a stack of count tables (B x K x K), vectorised."""
    n = tables.sum(axis=(1, 2))
    p = tables / n[:, None, None]
    row, col = p.sum(2), p.sum(1)
    w = 1.0 - dis
    po = np.einsum("bij,ij->b", p, w)
    pe = np.einsum("bi,ij,bj->b", row, w, col)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (po - pe) / (1.0 - pe)
    out[pe >= 1.0 - 1e-15] = np.nan
    return out


def confusion_counts(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k).astype(float)


def _prepare_kappa(
    a: Any, b: Any, weights: str | None, labels: Any, distance: str, names=("a", "b"), caller: str = "cohen_kappa"
):
    check_option("weights", weights, WEIGHTS)
    check_option("distance", distance, DISTANCES)
    if labels is None and weights is not None:
        labels = categorical_order(a, b)  # ordered Categoricals carry the order a weighted kappa needs
    x, y = pair_labels(a, b, names)
    sides = (arg_side(names[0]), arg_side(names[1]))
    x, y = check_comparable(x, y, sides, caller=caller, labels=labels)
    (ca, cb), labs, _ = label_codes([x, y], labels, need_order=weights is not None)
    refuse_unordered(labs, labels, weights, distance, sides, caller)
    missing = (ca < 0) | (cb < 0)
    if missing.any():
        positions = np.flatnonzero(missing)
        raise ValueError(
            f"{missing.sum()} item(s) have a missing label (positions {positions[:5].tolist()}"
            f"{' ...' if len(positions) > 5 else ''}); drop them first, or use agreement.report(), which "
            "excludes them and reports the count"
        )
    if len(ca) == 0:
        raise ValueError("kappa needs at least one labelled item, got none")
    return ca, cb, labs, disagreement_weights(labs, weights, distance)


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
    distance: str = "rank",
) -> float:
    """Cohen's kappa between two raters: agreement corrected for chance.

    ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the observed and ``p_e`` the chance agreement
    from the two raters' label frequencies. Weighted kappa replaces "agree / disagree" by a
    disagreement weight that grows with the distance between categories.

    Parameters
    ----------
    a, b : sequence of hashable
        The two raters' labels for the same items, in the same order (any hashable labels:
        0/1, bools, strings, ratings). Missing labels raise; :func:`report` drops and counts them.
    weights : {None, "linear", "quadratic"}
        None: plain kappa. "linear": disagreement ``|i - j|``; "quadratic": ``(i - j)**2``.
    labels : sequence, optional
        The categories in their order (default: the sorted labels that occur). A label not listed
        raises. Weighted kappa with ``distance="rank"`` on text labels needs it: text sorts
        alphabetically ("high" < "low" < "mid"), so without it they raise
        :class:`LabelMismatchError`.
    distance : {"rank", "value"}
        For weighted kappa, what ``i - j`` is: "rank" (default) uses positions in the label order
        (scikit-learn's convention, statsmodels' default); "value" uses the numeric labels as
        category scores (statsmodels with ``weights=labels``).

    Returns
    -------
    float
        Kappa in [-1, 1]; NaN when chance agreement is 1 (both raters used one and the same label).

    Examples
    --------
    >>> cohen_kappa(["yes", "yes", "no", "no"], ["yes", "no", "no", "no"])
    0.5
    >>> round(cohen_kappa([1, 2, 3, 4], [1, 2, 4, 4], weights="quadratic"), 3)
    0.917
    """
    ca, cb, labs, dis = _prepare_kappa(a, b, weights, labels, distance)
    return _kappa_and_se(confusion_counts(ca, cb, len(labs)), dis)[0]


def _smallest_count(table: np.ndarray) -> int:
    """The rarest label's count on either rater's side, over the labels either rater used."""
    rows, cols = table.sum(1), table.sum(0)
    used = (rows + cols) > 0
    return int(min(rows[used].min(), cols[used].min())) if used.any() else 0


def item_bootstrap_tables(table: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap count tables: resampling n items with replacement, drawn as one multinomial."""
    n, k = int(table.sum()), table.shape[0]
    # Resampling n items gives multinomial cell counts with the observed cell shares: drawing the
    # counts directly is the same bootstrap, without an n-by-B index array.
    return rng.multinomial(n, (table / n).ravel(), size=n_resamples).reshape(n_resamples, k, k).astype(float)


def _pseudo_counts(tables: np.ndarray) -> np.ndarray:
    """The pseudo-items the adjusted interval adds: ``1 / (m - 1)**2`` to each cell of the ``m`` labels in use.

    One per cell for pass/fail (four in all, as Agresti and Caffo add four), a quarter per cell for
    three labels, a ninth for four: about two items in all beyond two labels, where more would pull
    kappa towards 0 (``benchmarks/agreement_coverage.py`` measured the choices).
    """
    used = (tables.sum(1) + tables.sum(2)) > 0  # B x K
    m = used.sum(1)
    per_cell = 1.0 / np.maximum(m - 1, 1) ** 2
    return per_cell[:, None, None] * (used[:, :, None] & used[:, None, :])


def _kappa_bounds(tables: np.ndarray, dis: np.ndarray, level: float, method: str) -> tuple[np.ndarray, ...]:
    """Kappa, low, high for a stack of count tables (B x K x K): the "analytic" or the "adjusted" interval.

    "analytic": ``kappa +- z * SE`` (Fleiss-Cohen-Everitt), clipped to [-1, 1]. "adjusted": the same
    on the table plus ``_pseudo_counts``, widened if needed to contain the estimate. The
    benchmark calls this kernel on many simulated tables at once.
    """
    kappa, se = _kappa_and_se_many(tables, dis)
    z = normal_quantile(level)
    if method == "adjusted":
        center, spread = _kappa_and_se_many(tables + _pseudo_counts(tables), dis)
    else:
        center, spread = kappa, se
    low, high = np.maximum(-1.0, center - z * spread), np.minimum(1.0, center + z * spread)
    if method == "adjusted":
        low, high = np.fmin(low, kappa), np.fmax(high, kappa)
    undefined = np.isnan(kappa)
    low[undefined] = high[undefined] = np.nan
    return kappa, low, high


_ADJUSTED_LABEL = "adjusted asymptotic-normal (Fleiss-Cohen-Everitt SE on the table plus 1/(m-1)^2 pseudo-items per cell)"


def table_kappa_interval(
    table: np.ndarray,
    dis: np.ndarray,
    *,
    ci: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    boot_tables: np.ndarray | None = None,
) -> tuple[Interval, str | None]:
    """Kappa and its interval from a count table, and a warning text when the method is fragile here."""
    n = int(table.sum())
    smallest = _smallest_count(table)
    fragile = smallest < KAPPA_MIN_COUNT
    note = None
    if method == "auto":
        method = "adjusted"
    elif fragile and method in ("analytic", "bootstrap"):
        note = (
            f"the {method} kappa interval under-covers when a label is this rare (the rarest has {smallest} < "
            f"{KAPPA_MIN_COUNT} items; in simulation a nominal 95% interval covered 65-89% of the time): leave "
            "method='auto' (the default) or pass method='adjusted', and label more items of the rare class"
        )
    if method == "bootstrap":
        kappa = _kappa_and_se(table, dis)[0]
        if boot_tables is None:
            boot_tables = item_bootstrap_tables(table, n_resamples, np.random.default_rng(seed))
        low, high = percentile(kappa_many(boot_tables, dis), ci)
        iv = Interval(kappa, low, high, method="bootstrap-percentile", level=ci, n=n, n_resamples=n_resamples,
                      seed=seed)
        return iv, note
    kappa, low, high = (float(v[0]) for v in _kappa_bounds(np.asarray(table, dtype=float)[None], dis, ci, method))
    if math.isnan(kappa):
        return Interval(kappa, math.nan, math.nan, method="undefined: chance agreement is 1", level=ci, n=n), note
    label = "asymptotic-normal (Fleiss-Cohen-Everitt SE)" if method == "analytic" else _ADJUSTED_LABEL
    return Interval(kappa, low, high, method=label, level=ci, n=n), note


def cohen_kappa_interval(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
    distance: str = "rank",
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> Interval:
    """Cohen's kappa with a confidence interval.

    Parameters
    ----------
    a, b, weights, labels, distance
        As in :func:`cohen_kappa`.
    ci : float
        Confidence level.
    method : {"auto", "analytic", "adjusted", "bootstrap"}
        "auto" (default) is "adjusted": ``kappa +- z * SE`` with the large-sample standard error of
        Fleiss, Cohen & Everitt (1969), computed on the table plus ``1 / (m - 1)**2`` pseudo-items
        in each cell of the ``m`` labels in use (one per cell for pass/fail, as Agresti and Caffo
        add four items), clipped to [-1, 1] and widened if needed to contain the estimate. In
        simulation (``benchmarks/agreement_coverage.py``: pass/fail, n 30-300, kappa 0.3-0.9, base
        rates 0.5-0.9) a nominal 95% interval covered 94-99% in every cell, where the plain one
        covered 40-95% (worst with a rare label or kappa near 1). "analytic": the plain interval,
        statsmodels' ``kappa_low``/``kappa_upp`` (``std_kappa``) clipped to [-1, 1]; asking for it
        when the rarest label (either rater) has fewer than :data:`KAPPA_MIN_COUNT` items warns
        with :class:`FragileIntervalWarning`. "bootstrap": percentile interval over
        ``n_resamples`` resamples of the items (seeded by ``seed``; warns like "analytic").

    Returns
    -------
    Interval
        ``(kappa, low, high)`` with method, level, n (and resamples and seed for the bootstrap).

    Examples
    --------
    >>> iv = cohen_kappa_interval([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28)
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.559, 0.41, 0.684)
    """
    check_option("method", method, KAPPA_METHODS)
    level = check_level(ci)
    check_resamples(n_resamples)
    ca, cb, labs, dis = _prepare_kappa(a, b, weights, labels, distance, caller="cohen_kappa_interval")
    iv, note = table_kappa_interval(
        confusion_counts(ca, cb, len(labs)), dis, ci=level, method=method, n_resamples=n_resamples, seed=seed
    )
    if note:
        warn(f"cohen_kappa_interval: {note}", FragileIntervalWarning)
    return iv
