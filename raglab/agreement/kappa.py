"""Cohen's kappa between two raters: the weights, the standard error, and its confidence interval.

:func:`cohen_kappa` and :func:`cohen_kappa_interval` (analytic, adjusted for rare labels, or
bootstrap; see :data:`KAPPA_MIN_COUNT`), and the count-table kernels the report reuses: the
disagreement weights, kappa and its Fleiss-Cohen-Everitt standard error from one table, kappa for a
stack of bootstrap tables, and the item bootstrap drawn as one multinomial.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from raglab._interval import Interval
from raglab._validation import check_level, check_option, warn
from raglab.agreement._common import (
    _DISTANCES,
    _KAPPA_METHODS,
    _WEIGHTS,
    KAPPA_MIN_COUNT,
    FragileIntervalWarning,
    _check_resamples,
    _percentile,
    _z,
)
from raglab.agreement.labels import _arg_side, _check_comparable, _label_codes, _pair

__all__ = ["cohen_kappa", "cohen_kappa_interval"]


def _disagreement_weights(labels: list[Any], weights: str | None, distance: str) -> np.ndarray:
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


def _kappa_and_se(table: np.ndarray, dis: np.ndarray) -> tuple[float, float]:
    """Kappa and its large-sample standard error (Fleiss, Cohen & Everitt 1969) from a count table."""
    n = table.sum()
    p = table / n
    row, col = p.sum(1), p.sum(0)
    expected = np.outer(row, col)
    w = 1.0 - dis  # agreement weights, 1 on the diagonal
    po, pe = float((w * p).sum()), float((w * expected).sum())
    if pe >= 1.0 - 1e-15:
        return math.nan, math.nan
    kappa = (po - pe) / (1.0 - pe)
    w_row = w @ col  # mean agreement weight of row category i against the judge's margin
    w_col = row @ w
    term = (p * (w - (w_row[:, None] + w_col[None, :]) * (1.0 - kappa)) ** 2).sum()
    var = (term - (kappa - pe * (1.0 - kappa)) ** 2) / ((1.0 - pe) ** 2 * n)
    return float(kappa), float(math.sqrt(max(var, 0.0)))


def _kappa_many(tables: np.ndarray, dis: np.ndarray) -> np.ndarray:
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


def _confusion(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k).astype(float)


def _prepare_kappa(
    a: Any, b: Any, weights: str | None, labels: Any, distance: str, names=("a", "b"), where: str = "cohen_kappa"
):
    check_option("weights", weights, _WEIGHTS)
    check_option("distance", distance, _DISTANCES)
    x, y = _pair(a, b, names)
    x, y = _check_comparable(x, y, (_arg_side(names[0]), _arg_side(names[1])), where=where, labels=labels)
    (ca, cb), labs, _ = _label_codes([x, y], labels, need_order=weights is not None)
    missing = (ca < 0) | (cb < 0)
    if missing.any():
        where = np.flatnonzero(missing)
        raise ValueError(
            f"{missing.sum()} item(s) have a missing label (positions {where[:5].tolist()}"
            f"{' ...' if len(where) > 5 else ''}); drop them first, or use agreement.report(), which "
            "excludes them and reports the count"
        )
    if len(ca) == 0:
        raise ValueError("kappa needs at least one labelled item, got none")
    return ca, cb, labs, _disagreement_weights(labs, weights, distance)


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
        raises.
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
    return _kappa_and_se(_confusion(ca, cb, len(labs)), dis)[0]


def _smallest_count(table: np.ndarray) -> int:
    """The rarest label's count on either rater's side, over the labels either rater used."""
    rows, cols = table.sum(1), table.sum(0)
    used = (rows + cols) > 0
    return int(min(rows[used].min(), cols[used].min())) if used.any() else 0


def _item_tables(table: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap count tables: resampling n items with replacement, drawn as one multinomial."""
    n, k = int(table.sum()), table.shape[0]
    # Resampling n items gives multinomial cell counts with the observed cell shares: drawing the
    # counts directly is the same bootstrap, without an n-by-B index array.
    return rng.multinomial(n, (table / n).ravel(), size=n_resamples).reshape(n_resamples, k, k).astype(float)


def _kappa_interval(
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
    kappa, se = _kappa_and_se(table, dis)
    smallest = _smallest_count(table)
    fragile = smallest < KAPPA_MIN_COUNT
    note, why = None, ""
    if method == "auto":
        method = "adjusted" if fragile else "analytic"
        why = f"; chosen because the rarest label has {smallest} < {KAPPA_MIN_COUNT} items" if fragile else ""
    elif fragile and method in ("analytic", "bootstrap"):
        note = (
            f"the {method} kappa interval under-covers when a label is this rare (the rarest has {smallest} < "
            f"{KAPPA_MIN_COUNT} items; in simulation a nominal 95% interval covered 65-89% of the time): leave "
            "method='auto' (the default) or pass method='adjusted', and label more items of the rare class"
        )
    if method == "bootstrap":
        if boot_tables is None:
            boot_tables = _item_tables(table, n_resamples, np.random.default_rng(seed))
        low, high = _percentile(_kappa_many(boot_tables, dis), ci)
        iv = Interval(kappa, low, high, method="bootstrap-percentile", level=ci, n=n, n_resamples=n_resamples,
                      seed=seed)
        return iv, note
    if math.isnan(kappa):
        return Interval(kappa, math.nan, math.nan, method="undefined: chance agreement is 1", level=ci, n=n), note
    z = _z(ci)
    if method == "analytic":
        low, high = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
        return Interval(kappa, low, high, method="asymptotic-normal (Fleiss-Cohen-Everitt SE)", level=ci, n=n), note
    # "adjusted": the same normal interval on the table plus two pseudo-items spread evenly over the
    # cells of the labels in use (0.5 per cell for pass/fail, as Agresti-Coull add two successes and
    # two failures), widened if needed to contain the estimate.
    rows, cols = table.sum(1), table.sum(0)
    used = (rows + cols) > 0
    pseudo = 2.0 / used.sum() ** 2
    adj_kappa, adj_se = _kappa_and_se(table + pseudo * np.outer(used, used), dis)
    low, high = max(-1.0, adj_kappa - z * adj_se), min(1.0, adj_kappa + z * adj_se)
    low, high = min(low, kappa), max(high, kappa)
    label = f"adjusted asymptotic-normal (Fleiss-Cohen-Everitt SE, 2 pseudo-items over the cells{why})"
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
        "analytic": ``kappa +- z * SE`` with the large-sample standard error of Fleiss, Cohen &
        Everitt (1969) -- statsmodels' ``std_kappa`` -- clipped to [-1, 1]. "adjusted": the same on
        the table plus two pseudo-items spread evenly over its cells (0.5 per cell for pass/fail),
        widened to contain the estimate. "bootstrap": percentile interval over ``n_resamples``
        resamples of the items (seeded by ``seed``). "auto" (default): "analytic", or "adjusted" when
        the rarest label (either rater) has fewer than :data:`KAPPA_MIN_COUNT` items, where the
        analytic and bootstrap intervals under-cover (asking for either there warns with
        :class:`FragileIntervalWarning`).

    Returns
    -------
    Interval
        ``(kappa, low, high)`` with method, level, n (and resamples and seed for the bootstrap).

    Examples
    --------
    >>> iv = cohen_kappa_interval([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28)
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.559, 0.421, 0.697)
    """
    check_option("method", method, _KAPPA_METHODS)
    level = check_level(ci)
    _check_resamples(n_resamples)
    ca, cb, labs, dis = _prepare_kappa(a, b, weights, labels, distance, where="cohen_kappa_interval")
    iv, note = _kappa_interval(
        _confusion(ca, cb, len(labs)), dis, ci=level, method=method, n_resamples=n_resamples, seed=seed
    )
    if note:
        warn(f"cohen_kappa_interval: {note}", FragileIntervalWarning)
    return iv
