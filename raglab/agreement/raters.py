"""Agreement between several raters: Fleiss' kappa, Krippendorff's alpha and the majority vote.

Rating matrices have one row per item and one column per rater (missing = NaN or None), the
transpose of the ``krippendorff`` package's ``reliability_data``. :func:`judge_vs_majority`, which
compares a judge with the majority, lives with the report in :mod:`raglab.agreement.reporting`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._validation import check_option
from raglab.agreement._common import LEVELS, TIES
from raglab.agreement.labels import label_codes, plain_numeric, refuse_text_order

__all__ = ["fleiss_kappa", "krippendorff_alpha", "majority_vote"]


def as_matrix(ratings: Any, name: str = "ratings") -> np.ndarray:
    """Items x raters object matrix from a DataFrame, nested lists or a 2-D array."""
    if isinstance(ratings, pd.DataFrame):
        if len(ratings.columns) and all(plain_numeric(t) for t in ratings.dtypes):
            matrix = ratings.to_numpy()
        else:
            matrix = ratings.to_numpy(dtype=object, na_value=None)
    else:
        try:
            matrix = np.asarray(ratings)
        except (TypeError, ValueError):
            matrix = np.asarray(ratings, dtype=object)
        if not plain_numeric(matrix.dtype):
            matrix = np.asarray(ratings, dtype=object)
    if matrix.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D table with one row per item and one column per rater, got "
            f"{matrix.ndim} dimension(s)"
        )
    return matrix


def _unit_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """Items x categories counts from an items x raters code matrix (missing = -1)."""
    items = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
    flat = codes.ravel()
    ok = flat >= 0
    return np.bincount(items[ok] * k + flat[ok], minlength=codes.shape[0] * k).reshape(codes.shape[0], k).astype(float)


def fleiss_kappa(
    ratings: Any, *, counts: bool = False, labels: Sequence[Hashable] | None = None
) -> float:
    """Fleiss' kappa: chance-corrected agreement of several raters on nominal labels.

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater (any hashable labels; missing as NaN or None). The
        raters may differ between items, but every item needs the same number of ratings; otherwise
        use :func:`krippendorff_alpha`.
    counts : bool
        True when ``ratings`` is already an items x categories table of counts (statsmodels'
        ``fleiss_kappa`` input).
    labels : sequence, optional
        The categories (default: those that occur).

    Returns
    -------
    float

    Examples
    --------
    >>> round(fleiss_kappa([[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 1, 0]]), 3)
    0.333
    """
    if counts:
        table = np.asarray(ratings, dtype=float)
        if table.ndim != 2 or (table < 0).any():
            raise ValueError("with counts=True, `ratings` must be an items x categories table of non-negative counts")
    else:
        matrix = as_matrix(ratings)
        (codes,), labs, _ = label_codes([matrix], labels, need_order=False)
        table = _unit_counts(codes, len(labs))
    per_item = table.sum(1)
    m = per_item.max() if len(per_item) else 0
    if len(per_item) == 0 or (per_item != m).any() or m < 2:
        counts_seen = sorted({int(c) for c in per_item})
        raise ValueError(
            f"Fleiss' kappa needs the same number (at least 2) of ratings for every item, found {counts_seen} "
            "ratings per item; use krippendorff_alpha(ratings, level='nominal'), which allows missing ratings"
        )
    share = table.sum(0) / table.sum()
    p_item = ((table * table).sum(1) - m) / (m * (m - 1))
    p_bar, p_e = p_item.mean(), float((share**2).sum())
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha(
    ratings: Any,
    *,
    level: str = "nominal",
    labels: Sequence[Hashable] | None = None,
) -> float:
    """Krippendorff's alpha for several raters, with missing ratings allowed.

    ``alpha = 1 - D_o / D_e``: observed disagreement within items over the disagreement expected
    from all pairable values. Items with fewer than two ratings do not count.

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater; missing ratings as NaN or None. (The
        ``krippendorff`` package takes the transpose, raters x items.)
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement: which differences count as disagreement. "ordinal" uses the ranks of
        the values (Krippendorff's ordinal metric, built from the value frequencies); "interval" the
        squared difference; "ratio" ``((c - k) / (c + k))**2``.
    labels : sequence, optional
        The values in order (for "ordinal", values that do not occur do not change alpha).

    Returns
    -------
    float

    Examples
    --------
    >>> ratings = [[1, 1, None], [2, 2, 3], [3, 3, 3], [4, 3, 4]]
    >>> round(krippendorff_alpha(ratings, level="ordinal"), 3)
    0.774
    """
    check_option("level", level, LEVELS)
    matrix = as_matrix(ratings)
    (codes,), labs, _ = label_codes([matrix], labels, need_order=level != "nominal")
    if level == "ordinal":
        refuse_text_order(labs, labels, needs="level='ordinal' measures disagreement by the ranks of the values",
                           holders="`ratings`", caller="krippendorff_alpha", fix="labels")
    k = len(labs)
    table = _unit_counts(codes, k)
    m = table.sum(1)
    table, m = table[m >= 2], m[m >= 2]
    if table.shape[0] == 0:
        raise ValueError("Krippendorff's alpha needs at least one item rated by two or more raters")
    coincidence = (table / (m - 1)[:, None]).T @ table
    coincidence[np.diag_indices(k)] -= (table / (m - 1)[:, None]).sum(0)
    n_c = coincidence.sum(1)
    total = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "ordinal":
        cum = np.cumsum(n_c)
        lo, hi = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
        between = cum[hi] - cum[lo] + n_c[lo]
        delta = (between - (n_c[lo] + n_c[hi]) / 2) ** 2
    else:
        try:
            values = np.asarray([float(v) for v in labs], dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"level={level!r} needs numeric ratings, got labels {labs!r}") from None
        if level == "interval":
            delta = (values[:, None] - values[None, :]) ** 2
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                delta = ((values[:, None] - values[None, :]) / (values[:, None] + values[None, :])) ** 2
            delta = np.nan_to_num(delta)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected <= 0:
        raise ValueError(
            "Krippendorff's alpha is undefined when all pairable ratings have one value (no expected disagreement)"
        )
    return float(1.0 - (total - 1) * (coincidence * delta).sum() / expected)


def _majority_codes(codes: np.ndarray, k: int, ties: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Majority code per item (-1 when dropped or unrated), a tie mask and the vote counts."""
    table = _unit_counts(codes, k)
    top = table.max(1) if k else np.zeros(codes.shape[0])
    winners = table == top[:, None]
    rated = top > 0
    tied = rated & (winners.sum(1) > 1)
    if k == 0:
        return np.full(codes.shape[0], -1), tied, table
    # "high": the last tied label in label order; otherwise the first
    chosen = k - 1 - np.argmax(winners[:, ::-1], axis=1) if ties == "high" else np.argmax(winners, axis=1)
    chosen = np.where(rated, chosen, -1)
    if ties == "drop":
        chosen = np.where(tied, -1, chosen)
    return chosen, tied, table


def majority_vote(
    ratings: Any, *, ties: str = "drop", labels: Sequence[Hashable] | None = None
) -> np.ndarray:
    """The most frequent label per item across raters (missing ratings ignored).

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater; missing as NaN or None.
    ties : {"drop", "low", "high"}
        When two or more labels share the top count: "drop" (default) gives None for the item;
        "low" / "high" pick the first / last tied label in the label order (for 0/1 or False/True
        labels, "low" counts a split vote as a fail, the cautious choice for faithfulness).
    labels : sequence, optional
        The label order (default: sorted labels that occur).

    Returns
    -------
    numpy.ndarray of object
        One label per item; None for unrated items and dropped ties.

    Examples
    --------
    >>> majority_vote([[1, 1, 0], [1, 0, None], [0, 0, 0]]).tolist()
    [1, None, 0]
    >>> majority_vote([[1, 1, 0], [1, 0, None], [0, 0, 0]], ties="low").tolist()
    [1, 0, 0]
    """
    check_option("ties", ties, TIES)
    return majority_labels(as_matrix(ratings), labels, ties)[0]


def majority_labels(
    matrix: np.ndarray, labels: Any, ties: str, holders: str = "`ratings`", caller: str = "majority_vote"
) -> tuple[np.ndarray, np.ndarray]:
    """The majority label per item (None when unrated or a dropped tie), and which items were tied.

    ``holders`` and ``caller`` name the raters and the caller in the error that refuses text labels
    for ``ties="low"`` / ``"high"`` without ``labels=`` (their order is not known).
    """
    (codes,), labs, _ = label_codes([matrix], labels, need_order=ties != "drop")
    if ties != "drop":
        refuse_text_order(labs, labels, needs=f"ties={ties!r} picks the {'lowest' if ties == 'low' else 'highest'} "
                           "of the tied labels", holders=holders, caller=caller, fix="labels")
    chosen, tied, _ = _majority_codes(codes, len(labs), ties)
    out = np.empty(len(chosen), dtype=object)
    lookup = np.empty(len(labs) + 1, dtype=object)
    lookup[: len(labs)] = labs
    lookup[-1] = None
    out[:] = lookup[chosen]
    return out, tied
