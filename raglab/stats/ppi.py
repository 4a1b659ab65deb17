"""Prediction-powered intervals: a judge's scores on every row, people's labels on a random few.

Prediction-powered inference (PPI, Angelopoulos et al. 2023) estimates the mean of the human label
``Y`` from ``n`` labelled rows (where both ``Y`` and the judge's score ``f`` are known) and ``N``
unlabelled rows (judge only)::

    estimate = lam * mean(f_unlabelled) + mean(Y - lam * f_labelled)

The second term (the *rectifier*) removes the judge's bias, so the estimate is unbiased for any
judge and any ``lam``; the variance is ``lam^2 var(f)/N + var(Y - lam f)/n``. ``lam=1`` is plain PPI,
``lam=0`` the human-only interval, and ``lam=None`` (PPI++, Angelopoulos, Duchi & Zrnic,
arXiv 2311.01453) takes the ``lam`` that minimises the variance, clipped to [0, 1], so a useless judge
costs (asymptotically) nothing. The estimate and ``lam`` equal ``ppi_py.ppi_mean_pointestimate``
(with and without weights); with ``interval="wald"`` the interval equals ``ppi_py.ppi_mean_ci``
(ppi-python is a test oracle only).

The default interval is *adjusted* for small samples: with labels and scores in [0, 1], the
rectifier's variance counts four pseudo-rows, one in each cell of the label x judge 2 x 2 table (a
plus-four adjustment, as Agresti and Caffo (2000) and Bonett and Price (2012) do for proportions and
paired differences), and the quantile is Student's t on ``labels - 1`` degrees of freedom
(``labelled clusters - 1`` for clusters; Welch-Satterthwaite over strata). ``benchmarks/ppi.py``
measured the Wald interval at 77% coverage (nominal 95%) with 50 labels at a 0.95 pass rate, and
the adjusted one at 94-99% over judge kappa 0.2-0.9, rates 0.5-0.95 and 50-500 labels; it is 1.5%
wider than ppi_py's on FRANK (225 labels) and tends to it as labels grow.

Every statistic is a sum over rows (counts, sums, sums of squares and cross-products, held by
``_Sums``), so partitions of a table combine by adding their sums. Each estimator is finished by one
core from the labelled rows and the unlabelled rows' sums per stratum and cluster (``_Unlabelled``):
the array functions and ``raglab.engines.estimate`` (a partitioned table, whose workers send their
few labelled rows and those sums) call the same code.

The saving is bounded: when the judge is no better than the system judged, labels are worth at most
about twice as many (Dorner et al., ICLR 2025). ``effective_labels`` on every interval says how many
human labels, drawn uniformly at random and used alone, would give the same variance.

The pieces
----------
* :func:`ppi_mean`: one mean (optionally weighted by inverse inclusion probabilities).
* :func:`ppi_mean_strata`: one PPI estimate per stratum, combined with stratum weights ``N_h / N``.
* :func:`ppi_mean_clustered`: whole conversations (clusters) as the independent units, with a
  cluster-robust variance and ``lam`` tuned on it.
* :func:`ppi_mean_sampled`: labels drawn with unequal, known probabilities (an active or Neyman
  draw of :func:`raglab.sampling.draw`): the design-based (Horvitz-Thompson) estimator over every
  row, stratified and clustered as needed.
* :func:`ppi_table`: the tidy table of :func:`raglab.runs.estimate` (one row per metric and slice,
  with the human-only and judge-only intervals beside the PPI one).
* :data:`MIN_LABELS`: below it a PPI interval is flagged (and the gate reviews instead of deciding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._interval import Interval
from raglab._validation import check_level, warn
from raglab.stats.results import PPI_TABLE, frame_of

__all__ = ["MIN_LABELED_CLUSTERS", "MIN_LABELS", "PPIInterval", "ppi_mean", "ppi_mean_clustered", "ppi_mean_sampled", "ppi_mean_strata",
           "ppi_table"]

#: Fewest human labels for a PPI interval to be trusted: below it the interval is flagged
#: (``below_min_labels``), :func:`ppi_table` warns, and the gate reviews instead of deciding. With few
#: labels the rectifier's variance and the tuned ``lam`` rest on a handful of disagreements: the Wald
#: interval (ppi_py's) covered 77-87% below 100 labels at pass rates near 0.95 (``benchmarks/ppi.py``);
#: the default adjusted interval keeps 94% there, but its width then depends on 4 pseudo-rows, and the
#: paired rows the gate decides on use the Wald interval.
MIN_LABELS = 100

#: Fewest labelled clusters (conversations) for a clustered PPI interval to be decided on: with the
#: Wald interval the cluster-robust variance covered 80-93% of a nominal 95% below about 25 labelled
#: conversations; the adjusted one (CR1 by sample, a leave-one-conversation-out jackknife with the
#: tuning's share) covers 94.2% or more down to 6 conversations in ``benchmarks/ppi.py`` section 4,
#: but that rests on one family of conversation shapes, and its width on a handful of clusters. So
#: ``ppi_table`` warns and the gate reviews below it.
MIN_LABELED_CLUSTERS = 30

_METHOD_TUNED = "prediction-powered (PPI++)"
_METHOD_FIXED = "prediction-powered (PPI, fixed lam)"
#: the small-sample adjustment's name in ``method`` (see :func:`ppi_mean`'s ``interval``)
_ADJUSTED = "plus-four, t"
_INTERVALS = ("adjusted", "wald")
#: pseudo-rows (label, judge) of the adjusted variance: one in each cell of the 2 x 2 table
_PSEUDO = ((0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0))


class PPIInterval(Interval):
    """An :class:`~raglab.stats.Interval` from prediction-powered inference, with its ingredients.

    Beyond ``estimate, low, high, method, level, n`` it carries ``lam`` (the judge's weight: 1 is
    plain PPI, 0 human-only), ``n_labeled`` and ``n_unlabeled`` (rows with a human label, rows with
    the judge only), ``effective_labels`` (how many human labels, drawn uniformly at random and used
    alone, would give the same variance: for a uniform draw, labels x human-only variance / this
    variance; for a stratified, active or clustered draw the design's own gain or cost is in it too),
    ``se`` (the standard error) and ``below_min_labels`` (fewer than :data:`MIN_LABELS` labels).

    Examples
    --------
    >>> from raglab.stats import ppi_mean
    >>> iv = ppi_mean([1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 1, 1, 0], lam=1)
    >>> iv.lam, iv.n_labeled, iv.n_unlabeled
    (1.0, 4, 6)
    """

    lam: float
    n_labeled: int
    n_unlabeled: int
    effective_labels: float
    se: float
    below_min_labels: bool

    def __new__(
        cls,
        estimate: float,
        low: float,
        high: float,
        *,
        method: str,
        level: float,
        n: int | None = None,
        n_resamples: int | None = None,
        seed: int | None = None,
        lam: float = float("nan"),
        n_labeled: int = 0,
        n_unlabeled: int = 0,
        effective_labels: float = float("nan"),
        se: float = float("nan"),
    ) -> PPIInterval:
        self = super().__new__(
            cls, estimate, low, high, method=method, level=level, n=n, n_resamples=n_resamples, seed=seed
        )
        self.lam = float(lam)
        self.n_labeled = int(n_labeled)
        self.n_unlabeled = int(n_unlabeled)
        self.effective_labels = float(effective_labels)
        self.se = float(se)
        self.below_min_labels = self.n_labeled < MIN_LABELS
        return self

    def metadata(self) -> dict[str, Any]:
        """The method, level, counts, ``lam`` and effective labels as a dict."""
        return {
            **super().metadata(),
            "lam": self.lam,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "effective_labels": self.effective_labels,
            "se": self.se,
        }

    def __repr__(self) -> str:
        return (
            f"PPIInterval(estimate={self.estimate:.4g}, low={self.low:.4g}, high={self.high:.4g}, "
            f"method={self.method!r}, level={self.level:g}, lam={self.lam:.3g}, n_labeled={self.n_labeled}, "
            f"n_unlabeled={self.n_unlabeled}, effective_labels={self.effective_labels:.4g})"
        )


class _Sums(NamedTuple):
    """Sums over rows from which a (weighted) PPI mean and its variance follow; ``a + b`` combines partitions.

    ``r`` are the labelled rows' raw weights, ``u`` the unlabelled rows' (1 when unweighted).
    """

    n: float
    r: float
    ry: float
    rf: float
    r2: float
    r2y: float
    r2f: float
    r2yy: float
    r2ff: float
    r2yf: float
    N: float
    u: float
    uf: float
    u2: float
    u2f: float
    u2ff: float

    def __add__(self, other: object) -> _Sums:  # type: ignore[override]
        if not isinstance(other, _Sums):
            return NotImplemented
        return _Sums(*(a + b for a, b in zip(self, other)))


def _vector(values: Any, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).reshape(-1)
    if np.isnan(x).any():
        raise ValueError(f"{name} has {int(np.isnan(x).sum())} missing value(s): drop them before estimating")
    return x


def _weights(values: Any, size: int, name: str) -> np.ndarray:
    if values is None:
        return np.ones(size)
    w = _vector(values, name)
    if w.size != size:
        raise ValueError(f"{name} has {w.size} values for {size} rows")
    if (w <= 0).any() or not np.isfinite(w).all():
        raise ValueError(f"{name} must be positive and finite (a weight is 1 / inclusion probability)")
    return w


def _labelled_sums(y: np.ndarray, f: np.ndarray, r: np.ndarray) -> tuple[float, ...]:
    """The labelled rows' fields of :class:`_Sums` (``n`` to ``r2yf``)."""
    r2 = r * r
    return (float(y.size), float(r.sum()), float(r @ y), float(r @ f), float(r2.sum()), float(r2 @ y), float(r2 @ f),
            float(r2 @ (y * y)), float(r2 @ (f * f)), float(r2 @ (y * f)))


#: the fields of one group of :class:`_Unlabelled`: rows, sum u, sum u f, sum u^2, sum u^2 f, sum u^2 f^2 (the
#: unlabelled fields of :class:`_Sums`) and the number of scores outside [0, 1]
_UNL_FIELDS = ("N", "u", "uf", "u2", "u2f", "u2ff", "outside")


def _unlabelled_row(fu: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One group's sums (:data:`_UNL_FIELDS`) of the unlabelled scores ``fu`` with weights ``u``."""
    u2 = u * u
    return np.array([float(fu.size), float(u.sum()), float(u @ fu), float(u2.sum()), float(u2 @ fu),
                     float(u2 @ (fu * fu)), float(((fu < 0) | (fu > 1)).sum())])


class _Unlabelled(NamedTuple):
    """The unlabelled (judge-only) rows as sums per group, a group being a stratum and (when clustered) a cluster.

    ``strata`` and ``units`` hold each group's keys as text (``strata`` all ``""`` without strata;
    ``units`` None when unclustered), ``sums`` a ``(groups, 7)`` array of :data:`_UNL_FIELDS`. Every
    estimator here needs only these sums of the rows it does not have labels for, so a partitioned
    table ships them instead of its unlabelled rows, and :func:`_merge_unlabelled` adds them up.
    """

    strata: np.ndarray
    units: np.ndarray | None
    sums: np.ndarray

    def total(self) -> np.ndarray:
        """The sums over every group."""
        return self.sums.sum(axis=0) if len(self.sums) > 1 else (
            self.sums[0].copy() if len(self.sums) else np.zeros(len(_UNL_FIELDS)))

    def stratum(self, key: str) -> _Unlabelled:
        """The groups of one stratum."""
        m = self.strata == key
        return _Unlabelled(self.strata[m], None if self.units is None else self.units[m], self.sums[m])

    def flat(self) -> _Unlabelled:
        """The same rows without strata: one group, or one per cluster."""
        return _regroup(np.full(len(self.sums), ""), self.units, self.sums)


def _keys(strata: np.ndarray, units: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The distinct (stratum, cluster) keys, sorted: each one's first row, each row's key, and how many."""
    if len(strata) == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int), 0
    codes, _ = pd.factorize(strata, sort=True)
    if units is not None:
        unit_codes, unit_names = pd.factorize(units, sort=True)
        codes = codes.astype(np.int64) * len(unit_names) + unit_codes
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1), first.size


def _regroup(strata: np.ndarray, units: np.ndarray | None, sums: np.ndarray) -> _Unlabelled:
    """Groups with the same keys added (keys sorted as text)."""
    strata = np.asarray(strata).astype(str)
    units = None if units is None else np.asarray(units).astype(str)
    first, inverse, size = _keys(strata, units)
    out = np.stack([np.bincount(inverse, sums[:, j], minlength=size) for j in range(sums.shape[1])], axis=1) \
        if size else np.zeros((0, len(_UNL_FIELDS)))
    return _Unlabelled(strata[first], None if units is None else units[first], out)


def _unlabelled(fu: np.ndarray, u: np.ndarray | None = None, strata: np.ndarray | None = None,
                units: np.ndarray | None = None) -> _Unlabelled:
    """The sums per stratum (and cluster) of the unlabelled scores ``fu`` (weights ``u``, default 1)."""
    u = np.ones(fu.size) if u is None else u
    keys = np.full(fu.size, "") if strata is None else np.asarray(strata).astype(str)
    if units is None:
        names = sorted(set(keys.tolist()))
        rows = [_unlabelled_row(fu, u)] if len(names) == 1 and strata is None else [
            _unlabelled_row(fu[keys == h], u[keys == h]) for h in names]
        return _Unlabelled(np.asarray(names, dtype=str), None,
                           np.asarray(rows).reshape(len(names), len(_UNL_FIELDS)))
    u2 = u * u
    columns = (np.ones(fu.size), u, u * fu, u2, u2 * fu, u2 * fu * fu, ((fu < 0) | (fu > 1)).astype(float))
    return _regroup(keys, units, np.stack(columns, axis=1))


def _merge_unlabelled(*parts: _Unlabelled) -> _Unlabelled:
    """Partitions' unlabelled sums as one (groups with the same keys added)."""
    units = None if parts[0].units is None else np.concatenate([p.units for p in parts])  # type: ignore[misc]
    return _regroup(np.concatenate([p.strata for p in parts]), units, np.concatenate([p.sums for p in parts]))


def _sums(y: np.ndarray, f: np.ndarray, fu: np.ndarray, r: np.ndarray, u: np.ndarray) -> _Sums:
    return _Sums(*_labelled_sums(y, f, r), *_unlabelled_row(fu, u)[:6])


class _Fit(NamedTuple):
    estimate: float
    var: float  # variance of the estimate
    lam: float
    var_human: float  # variance of the human-only estimate (lam = 0)
    judge_mean: float  # weighted mean of the judge on the unlabelled rows
    var_judge: float  # its variance
    df: float = math.inf  # degrees of freedom of the t quantile (inf: normal)


def _lam_opt(s: _Sums) -> float:
    """PPI++'s variance-minimising ``lam``, clipped to [0, 1] (ppi_py's ``_calc_lam_glm`` for a mean)."""
    n, N = s.n, s.N
    c, cu = n / s.r, N / s.u  # ppi_py normalises weights to mean 1
    theta = s.uf / s.u + (s.ry - s.rf) / s.r  # plain PPI point estimate
    # population covariance of w(y - theta) and w(f - theta) over the labelled rows
    e_gg = c * c * (s.r2yf - theta * s.r2y - theta * s.r2f + theta * theta * s.r2) / n
    cov = e_gg - (s.ry / s.r - theta) * (s.rf / s.r - theta)
    # sample variance (ddof 1) of w(f - theta) over labelled and unlabelled rows together
    total = c * (s.rf - theta * s.r) + cu * (s.uf - theta * s.u)
    squares = c * c * (s.r2ff - 2 * theta * s.r2f + theta * theta * s.r2) + cu * cu * (
        s.u2ff - 2 * theta * s.u2f + theta * theta * s.u2
    )
    m = n + N
    var_f = (squares - total * total / m) / (m - 1)
    if not var_f > 0:
        return 0.0
    return float(min(1.0, max(0.0, cov / ((1 + n / N) * var_f))))


def _pseudo_sums(s: _Sums) -> _Sums:
    """The labelled sums with the four pseudo-rows of ``_PSEUDO`` added, each with the mean labelled weight."""
    w = s.r / s.n
    k = float(len(_PSEUDO))
    ys, fs = sum(y for y, _ in _PSEUDO), sum(f for _, f in _PSEUDO)
    yy, ff, yf = (sum(y * y for y, _ in _PSEUDO), sum(f * f for _, f in _PSEUDO),
                  sum(y * f for y, f in _PSEUDO))
    return s + _Sums(k, k * w, w * ys, w * fs, k * w * w, w * w * ys, w * w * fs, w * w * yy, w * w * ff,
                     w * w * yf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def _rect_var(s: _Sums, lam: float, ddof: int) -> tuple[float, float]:
    """Variance of the labelled rows' ``w (y - lam f)`` and of ``w y`` (weights normalised to mean 1)."""
    n, c = s.n, s.n / s.r
    mean_y, mean_f = s.ry / s.r, s.rf / s.r
    e_rect2 = c * c * (s.r2yy - 2 * lam * s.r2yf + lam * lam * s.r2ff) / n
    var_rect = max(e_rect2 - (mean_y - lam * mean_f) ** 2, 0.0) * n / (n - ddof)
    var_y = max(c * c * s.r2yy / n - mean_y**2, 0.0) * n / (n - ddof)
    return var_rect, var_y


def _bounded(*arrays: np.ndarray) -> bool:
    """Whether every value lies in [0, 1] (rates and bounded scores: the adjusted interval applies)."""
    return all(bool(((a >= 0) & (a <= 1)).all()) for a in arrays)


def _fit(s: _Sums, lam: float | None, adjusted: bool = False) -> _Fit:
    """The PPI fit; ``adjusted``: the rectifier's variance with the four pseudo-rows (ddof 1) and ``n - 1`` df."""
    n, N = s.n, s.N
    cu = N / s.u
    lam_ = _lam_opt(s) if lam is None else float(lam)
    mean_y, mean_f, mean_fu = s.ry / s.r, s.rf / s.r, s.uf / s.u
    estimate = lam_ * mean_fu + mean_y - lam_ * mean_f
    # population variances (ddof 0) of w(y - lam f) and of w lam fu, as ppi_py
    var_fu = max(cu * cu * s.u2ff / N - mean_fu**2, 0.0)
    var_rect, var_y = _rect_var(_pseudo_sums(s), lam_, 1) if adjusted else _rect_var(s, lam_, 0)
    return _Fit(
        estimate=estimate, var=lam_ * lam_ * var_fu / N + var_rect / n, lam=lam_, var_human=var_y / n,
        judge_mean=mean_fu, var_judge=var_fu / N, df=n - 1 if adjusted else math.inf,
    )


def _z(level: float, df: float = math.inf) -> float:
    if math.isfinite(df):
        return float(_sps.t.ppf(0.5 + level / 2, max(df, 1.0)))
    return float(_sps.norm.ppf(0.5 + level / 2))


def _check_interval(interval: str) -> str:
    if interval not in _INTERVALS:
        raise ValueError(f"interval must be one of {_INTERVALS}, got {interval!r}")
    return interval


def _method(lam: float | None, adjusted: bool, *suffixes: str) -> str:
    """``prediction-powered (PPI++[, plus-four, t])`` and the design's suffixes (``stratified``, ``clustered``)."""
    base = _METHOD_TUNED if lam is None else _METHOD_FIXED
    if adjusted:
        base = base[:-1] + f", {_ADJUSTED})"
    return ", ".join([base, *[x for x in suffixes if x]])


def _label_variance(y: np.ndarray, row_weights: np.ndarray | None, adjusted: bool) -> float:
    """The variance of one human label drawn uniformly from the whole table, estimated from the labelled rows.

    ``row_weights``: how much of the table each labelled row stands for (``1 / p``, times the stratum's
    share when stratified); ``None``: equally. ``adjusted`` adds the four pseudo-rows' labels with the
    mean weight and uses ddof 1 (as the adjusted intervals do); otherwise ddof 0 (as ppi_py). With
    equal weights it is the human-only interval's ``n x variance``, so effective labels of a uniform
    draw are unchanged by this definition.
    """
    w = np.ones(y.size) if row_weights is None else row_weights * (y.size / row_weights.sum())
    values = y
    if adjusted:
        values = np.concatenate([y, [py for py, _ in _PSEUDO]])
        w = np.concatenate([w, np.ones(len(_PSEUDO))])
    mean = float(w @ values / w.sum())
    var = float(w @ (values - mean) ** 2 / w.sum())
    return var * values.size / (values.size - 1) if adjusted else var


def _effective(label_var: float, var: float, n_labeled: float) -> float:
    """Labels drawn uniformly at random that, used alone, give variance ``var``: ``label_var / var``."""
    if var > 0:
        return float(label_var / var)
    return float("inf") if label_var > 0 else float(n_labeled)


def _strata_weights(keys: np.ndarray, shares: dict[str, float], weights: np.ndarray) -> np.ndarray:
    """Each labelled row's share of the table under a stratified design: the stratum's share split by weight."""
    out = np.empty(keys.size)
    for h, share in shares.items():
        m = keys == h
        if m.any():
            out[m] = share * weights[m] / weights[m].sum()
    return out


def _interval(
    estimate: float, var: float, *, level: float, lam: float, tuned: bool, n_labeled: int, n_unlabeled: int,
    label_var: float, method: str | None = None, df: float = math.inf,
) -> PPIInterval:
    se = math.sqrt(max(var, 0.0))
    half = _z(level, df) * se
    return PPIInterval(
        estimate, estimate - half, estimate + half,
        method=method or (_METHOD_TUNED if tuned else _METHOD_FIXED), level=level, n=n_labeled + n_unlabeled,
        lam=lam, n_labeled=n_labeled, n_unlabeled=n_unlabeled,
        effective_labels=_effective(label_var, var, n_labeled), se=se,
    )


def _check_lam(lam: float | None) -> float | None:
    if lam is None:
        return None
    lam = float(lam)
    if not math.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None (tuned), got {lam!r}")
    return lam


def _inputs(
    labels: Any, judged_labeled: Any, judged_unlabeled: Any, weights: Any, weights_unlabeled: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    y = _vector(labels, "labels")
    f = _vector(judged_labeled, "judged_labeled")
    fu = _vector(judged_unlabeled, "judged_unlabeled")
    if y.size != f.size:
        raise ValueError(f"labels ({y.size}) and judged_labeled ({f.size}) must have one value per labelled row")
    if y.size < 2:
        raise ValueError(f"PPI needs at least 2 labelled rows, got {y.size}")
    if fu.size < 1:
        raise ValueError("PPI needs at least 1 unlabelled (judged only) row; with every row labelled use mean_interval")
    return y, f, fu, _weights(weights, y.size, "weights"), _weights(weights_unlabeled, fu.size, "weights_unlabeled")


def ppi_mean(
    labels: Any,
    judged_labeled: Any,
    judged_unlabeled: Any,
    *,
    lam: float | None = None,
    ci: float = 0.95,
    weights: Any = None,
    weights_unlabeled: Any = None,
    interval: str = "adjusted",
) -> PPIInterval:
    """Prediction-powered interval on the mean of a human label, helped by a judge's scores.

    Parameters
    ----------
    labels : array-like of float
        The human labels (0/1 or scores) on the labelled rows, a *random sample* of the table.
    judged_labeled : array-like of float
        The judge's scores on the same labelled rows, in the same order.
    judged_unlabeled : array-like of float
        The judge's scores on the rows without a human label.
    lam : float, optional
        The judge's weight: ``None`` (the default) tunes it (PPI++, clipped to [0, 1]); ``1`` is plain
        PPI; ``0`` is the human-only interval.
    ci : float
        Confidence level (two-sided normal interval).
    weights, weights_unlabeled : array-like of float, optional
        Row weights (``1 / inclusion probability`` when rows were drawn unequally); each set is
        normalised to mean 1, as ``ppi_py`` does.
    interval : {"adjusted", "wald"}
        ``"adjusted"`` (the default), for labels and scores in [0, 1]: the rectifier's variance is
        computed with four pseudo-rows added, one in each cell of the label x judge 2 x 2 table
        (``(0, 0), (1, 1), (1, 0), (0, 1)``, each with the mean weight; ddof 1), and the quantile is
        Student's t on ``labels - 1`` degrees of freedom: a plus-four adjustment in the spirit of
        Agresti and Caffo (2000) and Bonett and Price (2012) for a rectifier that is a difference of
        paired proportions. The estimate and ``lam`` are PPI++'s; the interval tends to PPI++'s as
        labels grow (it is 1-3% wider at 50 labels, where the Wald one covers as little as 78% for a
        nominal 95%; ``benchmarks/ppi.py``). Values outside [0, 1] (differences, say) get the Wald
        interval. ``"wald"``: the normal interval of ``ppi_py.ppi_mean_ci``, exactly.

    Returns
    -------
    PPIInterval
        ``(estimate, low, high)`` with ``method``, ``level``, ``lam``, ``n_labeled``,
        ``n_unlabeled`` and ``effective_labels`` (how many labels alone would give the same
        variance). Intervals from fewer than :data:`MIN_LABELS` labels have ``below_min_labels``.

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.stats import ppi_mean
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(2000) < 0.7
    >>> judge = np.where(rng.random(2000) < 0.85, truth, ~truth).astype(float)
    >>> iv = ppi_mean(truth[:200], judge[:200], judge[200:])
    >>> iv.method, iv.n_labeled, iv.n_unlabeled
    ('prediction-powered (PPI++, plus-four, t)', 200, 1800)
    >>> iv.width < ppi_mean(truth[:200], judge[:200], judge[200:], lam=0).width
    True
    >>> ppi_mean(truth[:200], judge[:200], judge[200:], interval="wald").method
    'prediction-powered (PPI++)'
    """
    level = check_level(ci)
    lam = _check_lam(lam)
    adjusted = _check_interval(interval) == "adjusted"
    y, f, fu, r, u = _inputs(labels, judged_labeled, judged_unlabeled, weights, weights_unlabeled)
    return _mean_core(y, f, None if weights is None else r, _unlabelled(fu, u), lam, level, adjusted)


def _adjusts(adjusted: bool, y: np.ndarray, f: np.ndarray, unl: _Unlabelled) -> bool:
    """Whether the adjusted interval applies: asked for, and every label and score in [0, 1]."""
    return adjusted and _bounded(y, f) and not unl.total()[6]


def _mean_core(y: np.ndarray, f: np.ndarray, r: np.ndarray | None, unl: _Unlabelled, lam: float | None,
               level: float, adjusted: bool) -> PPIInterval:
    """:func:`ppi_mean` from the labelled rows and the unlabelled rows' sums (``r``: weights, None for equal)."""
    adjusted = _adjusts(adjusted, y, f, unl)
    total = unl.total()
    fit = _fit(_Sums(*_labelled_sums(y, f, np.ones(y.size) if r is None else r), *total[:6]), lam, adjusted)
    return _interval(
        fit.estimate, fit.var, level=level, lam=fit.lam, tuned=lam is None, n_labeled=y.size,
        n_unlabeled=int(total[0]), label_var=_label_variance(y, r, adjusted), method=_method(lam, adjusted),
        df=fit.df,
    )


def _codes(values: Any, size: int, name: str) -> np.ndarray:
    arr = np.asarray(list(values), dtype=object) if not isinstance(values, np.ndarray) else values
    arr = np.asarray(arr).reshape(-1)
    if arr.size != size:
        raise ValueError(f"{name} has {arr.size} values for {size} rows")
    return arr


def _clustered_fit(
    y: np.ndarray, f: np.ndarray, r: np.ndarray, units_l: np.ndarray, unl: _Unlabelled, lam: float | None,
    adjusted: bool = False,
) -> tuple[_Fit, int]:
    """PPI with a cluster-robust variance: the influence of each cluster summed over its rows.

    With weights normalised to mean 1 in each set, the estimate's influence from cluster ``g`` is
    ``A_g + lam * B_g`` with ``A_g = sum_L (w y - mean(w y)) / n`` and ``B_g = sum_U (w f - mean) / N -
    sum_L (w f - mean) / n``; the variance is ``G/(G-1) sum_g (A_g + lam B_g)^2`` and the tuned ``lam``
    minimises it (``-sum A B / sum B^2``, clipped to [0, 1]).

    ``adjusted`` (``lam`` and the estimate are unchanged; ``_cluster_label`` names it): the variance is
    ``max(V_CR1, V_J) + max(V_JT - V_J, 0) / 2``. ``V_CR1``, cluster-robust by sample: ``G_L/(G_L-1)``
    times the sum over the ``G_L`` labelled clusters (any labelled row) and the four pseudo-rows of
    ``_PSEUDO`` as four one-row labelled clusters, plus ``G_U/(G_U-1)`` times the sum over the ``G_U``
    unlabelled-only clusters (two independent samples: each small-sample factor counts its own
    clusters). ``V_J``: the delete-one-cluster jackknife of ``_cluster_jackknife`` at the fit's ``lam``;
    ``V_JT``: the same jackknife re-tuning ``lam`` in every replicate (``V_JT = V_J`` for a fixed
    ``lam``). Their difference is the cost of tuning ``lam``, a second-order term (the error of the
    tuned ``lam`` times the difference of the judge's means), which the delete-one jackknife counts
    about twice (Efron and Stein 1981): half of it is added. The t quantile has ``G_L - 1`` degrees of
    freedom. With one labelled cluster ``V_CR1`` uses ``(G+4)/(G+3)`` over every cluster and the
    pseudo-rows, and there is no jackknife; nor when a replicate would leave no unlabelled row.

    ``unl``: the unlabelled rows' sums per cluster (:class:`_Unlabelled` without strata): a cluster's
    unlabelled term is its weighted sum less its rows times the weighted mean.
    """
    assert unl.units is not None
    n = y.size
    cnt_u, su, suf = unl.sums[:, 0], unl.sums[:, 1], unl.sums[:, 2]
    big_n, total_u = float(cnt_u.sum()), float(su.sum())
    w = r * n / r.sum()
    wy, wf = w * y, w * f
    mean_fu = float(suf.sum()) / total_u  # the weighted mean of the unlabelled scores (weights normalised to mean 1)
    _, inverse = np.unique(np.concatenate([units_l.astype(str), unl.units]), return_inverse=True)
    groups = int(inverse.max()) + 1
    il, iu = inverse[:n], inverse[n:]
    a = np.bincount(il, (wy - wy.mean()) / n, minlength=groups)
    judge = np.bincount(iu, (suf * (big_n / total_u) - cnt_u * mean_fu) / big_n, minlength=groups)
    b = judge - np.bincount(il, (wf - wf.mean()) / n, minlength=groups)
    scale = groups / (groups - 1) if groups > 1 else float("inf")
    if lam is None:
        bb = float(b @ b)
        lam_ = float(min(1.0, max(0.0, -float(a @ b) / bb))) if bb > 0 else 0.0
    else:
        lam_ = float(lam)
    estimate = lam_ * mean_fu + wy.mean() - lam_ * wf.mean()
    var_judge = scale * float(judge @ judge)
    influence = a + lam_ * b
    if not adjusted:
        return _Fit(
            estimate=float(estimate), var=scale * float(influence @ influence), lam=lam_,
            var_human=scale * float(a @ a), judge_mean=mean_fu, var_judge=var_judge,
        ), groups
    pa = np.array([(py - wy.mean()) / n for py, _ in _PSEUDO])
    pb = np.array([-(pf - wf.mean()) / n for _, pf in _PSEUDO])
    labelled = np.bincount(il, minlength=groups) > 0
    g_l, g_u = int(labelled.sum()), int((~labelled).sum())

    def by_sample(x: np.ndarray, px: np.ndarray) -> float:
        inside, outside = float(x[labelled] @ x[labelled] + px @ px), float(x[~labelled] @ x[~labelled])
        if g_l < 2:
            total = groups + px.size
            return total / (total - 1) * (inside + outside)
        return g_l / (g_l - 1) * inside + (g_u / (g_u - 1) if g_u > 1 else scale) * outside

    var, var_human = by_sample(influence, pa + lam_ * pb), by_sample(a, pa)
    if g_l > 1:
        jack, tuned, jack_human = _cluster_jackknife(
            il, iu, groups, y, f, r, unl.sums, lam_, lam is None, float(estimate), float(wy.mean())
        )
        if math.isfinite(jack):  # nan: a replicate left no labelled or no unlabelled row
            var = max(var, jack) + max(tuned - jack, 0.0) / 2
            var_human = max(var_human, jack_human)
    return _Fit(
        estimate=float(estimate), var=var, lam=lam_, var_human=var_human, judge_mean=mean_fu,
        var_judge=var_judge, df=float(g_l - 1),
    ), groups


def _cluster_jackknife(
    il: np.ndarray, iu: np.ndarray, groups: int, y: np.ndarray, f: np.ndarray, r: np.ndarray,
    unl_sums: np.ndarray, lam: float, tune: bool, estimate: float, human: float,
) -> tuple[float, float, float]:
    """Delete-one-cluster jackknife variances: at ``lam``, re-tuning ``lam``, and of the human-only estimate.

    Each replicate drops one cluster (its labelled and unlabelled rows) and refits from the remaining
    clusters' sums, with ``lam`` and, when ``tune``, with ``lam`` re-tuned on them (as ``_clustered_fit``
    tunes it; without ``tune`` the second variance is the first). The replicates are computed together
    from per-cluster sums: the fit's totals minus one cluster's, and the sums of squares and
    cross-products of the clusters' influences from their 5 x 5 Gram matrix minus the dropped cluster's. Labelled clusters (any labelled row) and unlabelled-only clusters are
    two independent samples: ``(G_s - 1) / G_s sum_s (theta_(g) - theta)^2`` in each (a stratified
    jackknife, centred on the full-sample estimate). ``nan`` when a replicate leaves no labelled or no
    unlabelled row. ``unl_sums``: the unlabelled rows' sums per cluster (:data:`_UNL_FIELDS`, cluster ``iu``).
    """
    cnt_l = np.bincount(il, minlength=groups).astype(float)
    cnt_u = np.bincount(iu, unl_sums[:, 0], minlength=groups)
    sums = [np.bincount(il, x, minlength=groups) for x in (r, r * y, r * f)]
    sums += [np.bincount(iu, unl_sums[:, j], minlength=groups) for j in (1, 2)]
    n_, rr, ry, rf, big_n, uu, uf = (float(t.sum()) - t for t in (cnt_l, *sums[:3], cnt_u, *sums[3:]))
    if not ((n_ > 0).all() and (big_n > 0).all()):
        return math.nan, math.nan, math.nan
    # a cluster's influences are linear in v = (labelled rows, sum r y, sum r f, unlabelled rows, sum u fu)
    v = np.stack([cnt_l, sums[1], sums[2], cnt_u, sums[4]], axis=1)
    gram, gram_abs = v.T @ v, np.abs(v).T @ np.abs(v)
    my, mf, mu = ry / rr, rf / rr, uf / uu
    zero = np.zeros(groups)
    alpha = np.stack([-my / n_, 1 / rr, zero, zero, zero], axis=1)
    beta = np.stack([mf / n_, zero, -1 / rr, -mu / big_n, 1 / uu], axis=1)

    def cross(p: np.ndarray, q: np.ndarray, m: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.einsum("gi,ij,gj->g", p, m, q) - (p * x).sum(1) * (q * x).sum(1)

    thetas = [lam * mu + my - lam * mf]
    if tune:
        bb = cross(beta, beta, gram, v)
        size = cross(np.abs(beta), np.abs(beta), gram_abs, np.zeros_like(v))
        ok = bb > 1e-10 * size  # a judge constant on the remaining rows: no tuning (lam 0), as the full fit
        lam_g = np.where(ok, np.clip(-cross(alpha, beta, gram, v) / np.where(ok, bb, 1.0), 0.0, 1.0), 0.0)
        thetas.append(lam_g * mu + my - lam_g * mf)
    labelled = cnt_l > 0

    def spread(reps: np.ndarray, centre: float) -> float:
        total = 0.0
        for part in (labelled, ~labelled):
            g = int(part.sum())
            if g > 0:
                total += (g - 1) / g * float(np.sum((reps[part] - centre) ** 2))
        return total

    fixed = spread(thetas[0], estimate)
    return fixed, spread(thetas[-1], estimate), spread(my, human)


#: the clustered adjusted interval's variance, in ``method`` (see ``_clustered_fit``)
_CLUSTER_ADJUSTED = "clustered, max(CR1, jackknife) variance"
#: ... and with a tuned ``lam``, the half re-tuning increment of the jackknife added
_CLUSTER_TUNED = "clustered, max(CR1, jackknife) + lam-tuning variance"


def _cluster_label(adjusted: bool, tuned: bool) -> str:
    """The design's suffix in ``method``: ``clustered`` and, when adjusted, the variance used."""
    if not adjusted:
        return "clustered"
    return _CLUSTER_TUNED if tuned else _CLUSTER_ADJUSTED


def ppi_mean_clustered(
    labels: Any,
    judged_labeled: Any,
    judged_unlabeled: Any,
    units_labeled: Any,
    units_unlabeled: Any,
    *,
    lam: float | None = None,
    ci: float = 0.95,
    weights: Any = None,
    weights_unlabeled: Any = None,
    interval: str = "adjusted",
) -> PPIInterval:
    """Prediction-powered interval when rows come in clusters (the turns of one conversation).

    Rows of one cluster are not independent; the variance here is cluster-robust (the influence of
    each whole cluster, labelled and unlabelled rows together), and ``lam=None`` tunes the judge's
    weight to minimise that variance (clipped to [0, 1]). With ``interval="wald"`` the variance is
    ``G / (G - 1)`` times the sum of the squared influences over all ``G`` clusters (CR1), with the
    normal quantile; with one row per cluster it is :func:`ppi_mean`'s ``"wald"`` interval up to that
    factor.

    Parameters
    ----------
    labels, judged_labeled, judged_unlabeled, lam, ci, weights, weights_unlabeled
        As for :func:`ppi_mean`.
    units_labeled, units_unlabeled : array-like
        The cluster (e.g. conversation id) of each labelled and each unlabelled row.
    interval : {"adjusted", "wald"}
        ``"adjusted"`` (the default, for labels and scores in [0, 1]), with the quantile Student's t on
        ``G_L - 1`` degrees of freedom (``G_L`` clusters with a labelled row): the variance is
        ``max(V_CR1, V_J) + max(V_JT - V_J, 0) / 2``. ``V_CR1``, CR1 by sample: ``G_L / (G_L - 1)``
        times the sum of squared influences over the labelled clusters and the four pseudo-rows of
        :func:`ppi_mean` (as four one-row labelled clusters), plus ``G_U / (G_U - 1)`` times the sum
        over the ``G_U`` clusters with unlabelled rows only. ``V_J``, the delete-one-cluster
        jackknife, ``(G_s - 1) / G_s sum_g (theta_(g) - theta)^2`` within each of the two sets of
        clusters, ``theta_(g)`` refitted without cluster ``g`` at the same ``lam``; ``V_JT``, the same
        with ``lam`` re-tuned in every replicate (for a fixed ``lam``, ``V_JT = V_J``). Their
        difference is the price of tuning ``lam`` on few clusters; the jackknife counts such a
        second-order term about twice (Efron and Stein 1981), so half is added. With 6-13 labelled
        conversations of unequal size the former interval (CR1 over all clusters) covered 91.7-93% of
        a nominal 95% at a poor judge, this one 94.2-99.5% (``benchmarks/ppi.py``, section 4); it is
        19-22% wider at 6 conversations, 4-6% at 25 and about 2% at 63, and the two agree as clusters
        grow. The estimate and ``lam`` are those of ``"wald"``, and ``method`` names the variance.

    Returns
    -------
    PPIInterval
        Its ``method`` says ``clustered``; ``n`` counts rows.

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.stats import ppi_mean_clustered
    >>> rng = np.random.default_rng(0)
    >>> conv = np.repeat(np.arange(500), 4)                 # 500 conversations of 4 turns
    >>> truth = (rng.random(500)[conv] + rng.random(2000)) > 0.8
    >>> judge = np.where(rng.random(2000) < 0.85, truth, ~truth).astype(float)
    >>> iv = ppi_mean_clustered(truth[:400], judge[:400], judge[400:], conv[:400], conv[400:])
    >>> iv.method
    'prediction-powered (PPI++, plus-four, t), clustered, max(CR1, jackknife) + lam-tuning variance'
    >>> ppi_mean_clustered(truth[:400], judge[:400], judge[400:], conv[:400], conv[400:], interval="wald").method
    'prediction-powered (PPI++), clustered'
    """
    level = check_level(ci)
    lam = _check_lam(lam)
    adjusted = _check_interval(interval) == "adjusted"
    y, f, fu, r, u = _inputs(labels, judged_labeled, judged_unlabeled, weights, weights_unlabeled)
    ul = _codes(units_labeled, y.size, "units_labeled")
    uu = _codes(units_unlabeled, fu.size, "units_unlabeled")
    return _clustered_core(y, f, None if weights is None else r, ul, _unlabelled(fu, u, units=uu), lam, level,
                           adjusted)


def _clustered_core(y: np.ndarray, f: np.ndarray, r: np.ndarray | None, ul: np.ndarray, unl: _Unlabelled,
                    lam: float | None, level: float, adjusted: bool) -> PPIInterval:
    """:func:`ppi_mean_clustered` from the labelled rows and the unlabelled rows' sums per cluster."""
    adjusted = _adjusts(adjusted, y, f, unl)
    fit, _ = _clustered_fit(y, f, np.ones(y.size) if r is None else r, ul, unl.flat(), lam, adjusted)
    return _interval(
        fit.estimate, fit.var, level=level, lam=fit.lam, tuned=lam is None, n_labeled=y.size,
        n_unlabeled=int(unl.total()[0]), label_var=_label_variance(y, r, adjusted),
        method=_method(lam, adjusted, _cluster_label(adjusted, lam is None)), df=fit.df,
    )


def _strata_fits(
    y: np.ndarray, f: np.ndarray, r: np.ndarray, sl: np.ndarray, units_l: np.ndarray | None, unl: _Unlabelled,
    lam: float | None, adjusted: bool = False,
) -> list[tuple[Any, float, _Fit]]:
    """One fit per stratum with its share ``N_h / N`` of all rows (labelled and unlabelled).

    ``unl``: the unlabelled rows' sums per stratum (and per cluster with ``units_l``).
    """
    keys_l = sl.astype(str)
    present = unl.strata[unl.sums[:, 0] > 0]
    strata = sorted(set(keys_l) | set(present.tolist()))
    total = y.size + float(unl.sums[:, 0].sum())
    out = []
    for h in strata:
        ml = keys_l == h
        part = unl.stratum(h)
        nl, nu = int(ml.sum()), int(part.total()[0])
        if nl < 2 or nu < 1:
            raise ValueError(
                f"stratum {str(h)!r} has {nl} labelled and {nu} unlabelled row(s); stratified PPI needs at least 2 "
                "and 1 in every stratum (label more rows there, or merge strata)"
            )
        if units_l is not None and part.units is not None:
            fit, _ = _clustered_fit(y[ml], f[ml], r[ml], units_l[ml], part.flat(), lam, adjusted)
        else:
            fit = _fit(_Sums(*_labelled_sums(y[ml], f[ml], r[ml]), *part.total()[:6]), lam, adjusted)
        out.append((h, (nl + nu) / total, fit))
    return out


def _combine_strata(fits: Sequence[tuple[float, _Fit]], adjusted: bool, n_labeled: int
                    ) -> tuple[float, float, float, float]:
    """Strata fits ``(share, fit)`` as one: estimate ``sum W_h theta_h``, variance ``sum W_h^2 var_h``, the
    share-weighted ``lam``, and (adjusted) the t degrees of freedom by Welch-Satterthwaite
    (``(sum v_h)^2 / sum v_h^2 / df_h`` with ``v_h = W_h^2 var_h``; one stratum keeps its own)."""
    estimate = sum(share * fit.estimate for share, fit in fits)
    parts = [share * share * fit.var for share, fit in fits]
    var = sum(parts)
    lam = sum(share * fit.lam for share, fit in fits)
    if not adjusted:
        return estimate, var, lam, math.inf
    if len(fits) == 1:
        return estimate, var, lam, fits[0][1].df
    spread = sum(v * v / max(fit.df, 1.0) for v, (_, fit) in zip(parts, fits))
    return estimate, var, lam, var * var / spread if spread > 0 else float(n_labeled - len(fits))


def ppi_mean_strata(
    labels: Any,
    judged_labeled: Any,
    judged_unlabeled: Any,
    strata_labeled: Any,
    strata_unlabeled: Any,
    *,
    lam: float | None = None,
    ci: float = 0.95,
    weights: Any = None,
    weights_unlabeled: Any = None,
    units_labeled: Any = None,
    units_unlabeled: Any = None,
    interval: str = "adjusted",
) -> PPIInterval:
    """Stratified prediction-powered interval: one PPI estimate per stratum, weighted by its size.

    The estimate is ``sum_h W_h theta_h`` with ``W_h = N_h / N`` (the stratum's share of all rows,
    labelled and unlabelled) and variance ``sum_h W_h^2 var_h``. Each stratum tunes its own ``lam``
    (the reported ``lam`` is their ``W_h``-weighted mean). Strata sampled at different rates (a
    stratified or Neyman label plan) are estimated without bias, and a judge that is good in one
    stratum and poor in another is used only where it helps.

    Parameters
    ----------
    labels, judged_labeled, judged_unlabeled, lam, ci, weights, weights_unlabeled
        As for :func:`ppi_mean` (weights are normalised within each stratum).
    strata_labeled, strata_unlabeled : array-like
        The stratum of each labelled and each unlabelled row. Every stratum needs 2 labels and 1
        unlabelled row.
    units_labeled, units_unlabeled : array-like, optional
        Clusters, for a cluster-robust variance within each stratum (see :func:`ppi_mean_clustered`).
    interval : {"adjusted", "wald"}
        As for :func:`ppi_mean`, within each stratum; the t quantile's degrees of freedom combine the
        strata's (Welch-Satterthwaite: ``(sum v_h)^2 / sum v_h^2 / df_h`` with ``v_h = W_h^2 var_h``).

    Returns
    -------
    PPIInterval

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.stats import ppi_mean_strata
    >>> rng = np.random.default_rng(0)
    >>> topic = np.repeat(["a", "b"], [1500, 500])
    >>> truth = rng.random(2000) < np.where(topic == "a", 0.9, 0.5)
    >>> judge = np.where(rng.random(2000) < 0.85, truth, ~truth).astype(float)
    >>> lab = np.r_[0:100, 1500:1600]                       # 100 labels in each stratum
    >>> rest = np.setdiff1d(np.arange(2000), lab)
    >>> iv = ppi_mean_strata(truth[lab], judge[lab], judge[rest], topic[lab], topic[rest])
    >>> iv.method, iv.n_labeled
    ('prediction-powered (PPI++, plus-four, t), stratified', 200)
    """
    level = check_level(ci)
    lam = _check_lam(lam)
    adjusted = _check_interval(interval) == "adjusted"
    y, f, fu, r, u = _inputs(labels, judged_labeled, judged_unlabeled, weights, weights_unlabeled)
    sl = _codes(strata_labeled, y.size, "strata_labeled")
    su = _codes(strata_unlabeled, fu.size, "strata_unlabeled")
    clustered = units_labeled is not None and units_unlabeled is not None
    ul = _codes(units_labeled, y.size, "units_labeled") if clustered else None
    uu = _codes(units_unlabeled, fu.size, "units_unlabeled") if clustered else None
    return _strata_core(y, f, r, sl, ul, _unlabelled(fu, u, su, uu), lam, level, adjusted)


def _strata_core(y: np.ndarray, f: np.ndarray, r: np.ndarray, sl: np.ndarray, ul: np.ndarray | None,
                 unl: _Unlabelled, lam: float | None, level: float, adjusted: bool) -> PPIInterval:
    """:func:`ppi_mean_strata` from the labelled rows and the unlabelled rows' sums per stratum (and cluster)."""
    adjusted = _adjusts(adjusted, y, f, unl)
    clustered = ul is not None and unl.units is not None
    fits = _strata_fits(y, f, r, sl, ul if clustered else None, unl, lam, adjusted)
    estimate, var, lam_mean, df = _combine_strata([(share, fit) for _, share, fit in fits], adjusted, y.size)
    label_var = _label_variance(y, _strata_weights(sl.astype(str), {str(h): share for h, share, _ in fits}, r),
                                adjusted)
    method = _method(lam, adjusted, "stratified", _cluster_label(adjusted, lam is None) if clustered else "")
    return _interval(
        estimate, var, level=level, lam=lam_mean, tuned=lam is None, n_labeled=y.size,
        n_unlabeled=int(unl.total()[0]), label_var=label_var, method=method, df=df,
    )


#: ``method`` suffix of the design-based estimator (:func:`ppi_mean_sampled`)
_HT = "Horvitz-Thompson"


def _ht_finish(rows: float, groups: float, mean_a: float, mean_b: float, aa: float, bb: float, ab: float,
               lam: float | None, rate: float | None, df: float) -> tuple[float, float, float]:
    """The active-inference fit of ``z = a + lam b`` over ``rows`` rows in ``groups`` independent units.

    ``aa, bb, ab``: sums of squares and cross-products of the units' deviations (a unit's ``a`` and ``b``
    less its rows times the means). The tuned ``lam`` minimises the variance ``G / (G - 1) sum_g (A_g +
    lam B_g)^2 / rows^2`` (``-ab / bb``, clipped to [0, 1]). ``rate`` (adjusted): the four pseudo-rows of
    ``_PSEUDO`` labelled at that sampling rate are counted as extra one-row units in the variance only.
    Returns (estimate, variance, lam).
    """
    lam_ = (float(min(1.0, max(0.0, -ab / bb))) if bb > 0 else 0.0) if lam is None else float(lam)
    total = aa + 2 * lam_ * ab + lam_ * lam_ * bb
    if rate is not None:
        for py, pf in _PSEUDO:
            total += (py / rate - mean_a + lam_ * (pf * (1 - 1 / rate) - mean_b)) ** 2
        groups += len(_PSEUDO)
    var = groups / (groups - 1) / (rows * rows) * max(total, 0.0) if groups > 1 else float("inf")
    return mean_a + lam_ * mean_b, var, lam_


def _ht_from_sums(rows: float, n_labeled: float, sa: float, sb: float, saa: float, sbb: float, sab: float,
                  lam: float | None, adjusted: bool) -> tuple[float, float, float, float]:
    """The Horvitz-Thompson fit without clusters, from sums over the rows of ``a = y xi / p`` and ``b = f (1 - xi / p)``.

    Returns (estimate, variance of the estimate, lam, df); partitions combine by adding their sums.
    """
    mean_a, mean_b = sa / rows, sb / rows
    aa, bb, ab = saa - rows * mean_a**2, sbb - rows * mean_b**2, sab - rows * mean_a * mean_b
    estimate, var, lam_ = _ht_finish(rows, rows, mean_a, mean_b, aa, bb, ab, lam,
                                     n_labeled / rows if adjusted else None, math.inf)
    return estimate, var, lam_, n_labeled - 1 if adjusted else math.inf


def _ht_stratum(y: np.ndarray, f: np.ndarray, w: np.ndarray, units_l: np.ndarray | None, unl: _Unlabelled,
                lam: float | None, adjusted: bool) -> _Fit:
    """One stratum's Horvitz-Thompson fit from its labelled rows (weights ``w = 1 / p``) and unlabelled sums.

    Every row has ``a = y xi / p`` and ``b = f (1 - xi / p)``: on an unlabelled row ``a = 0`` and ``b = f``,
    so the unlabelled rows enter through their count, sum and sum of squares (per cluster when clustered).
    Only the estimate, variance, ``lam`` and ``df`` of the fit are set (the others are NaN).
    """
    a, b = y * w, f * (1.0 - w)
    total = unl.total()
    nl = y.size
    rows = nl + float(total[0])
    if units_l is None:
        estimate, var, lam_, df = _ht_from_sums(
            rows, nl, float(a.sum()), float(b.sum()) + float(total[2]), float(a @ a), float(b @ b) + float(total[5]),
            float(a @ b), lam, adjusted)
        return _Fit(estimate=estimate, var=var, lam=lam_, var_human=float("nan"), judge_mean=float("nan"),
                    var_judge=float("nan"), df=df)
    flat = unl.flat()
    assert flat.units is not None
    keys, inverse = np.unique(np.concatenate([units_l.astype(str), flat.units]), return_inverse=True)
    il, iu = inverse[:nl], inverse[nl:]
    count = np.bincount(il, minlength=keys.size) + np.bincount(iu, flat.sums[:, 0], minlength=keys.size)
    sa = np.bincount(il, a, minlength=keys.size)
    sb = np.bincount(il, b, minlength=keys.size) + np.bincount(iu, flat.sums[:, 2], minlength=keys.size)
    mean_a, mean_b = float(sa.sum()) / rows, float(sb.sum()) / rows
    da, db = sa - count * mean_a, sb - count * mean_b
    df = float(np.unique(units_l.astype(str)).size - 1) if adjusted else math.inf
    estimate, var, lam_ = _ht_finish(rows, keys.size, mean_a, mean_b, float(da @ da), float(db @ db), float(da @ db),
                                     lam, nl / rows if adjusted else None, df)
    return _Fit(estimate=estimate, var=var, lam=lam_, var_human=float("nan"), judge_mean=float("nan"),
                var_judge=float("nan"), df=df)


def ppi_mean_sampled(
    labels: Any,
    judged_labeled: Any,
    judged_unlabeled: Any,
    inclusion_labeled: Any,
    *,
    lam: float | None = None,
    ci: float = 0.95,
    strata_labeled: Any = None,
    strata_unlabeled: Any = None,
    units_labeled: Any = None,
    units_unlabeled: Any = None,
    interval: str = "adjusted",
) -> PPIInterval:
    """Prediction-powered interval when the labelled rows were drawn with known, unequal probabilities.

    Design-based (Horvitz-Thompson) prediction-powered inference for Poisson sampling, the
    active-inference estimator of Zrnic and Candes (2024): every row ``i`` of the table (labelled or
    not, ``N`` in all) gets ``z_i = lam f_i + (y_i - lam f_i) xi_i / pi_i`` (``xi_i`` 1 when labelled,
    ``pi_i`` its inclusion probability), the estimate is ``mean(z)`` and its variance
    ``var(z, ddof=1) / N``. The labelled rows are part of the table, not a second sample beside it,
    so the judge's mean and the rectifier share their rows and their covariance is in ``var(z)``
    (:func:`ppi_mean` with weights ``1 / pi`` treats them as independent samples). ``lam=None``
    takes the ``lam`` that minimises that variance, clipped to [0, 1]. The estimate is unbiased for
    the mean of ``y`` over the table under the design, whatever the judge and ``lam``; rows drawn
    with a fixed size (stratified, Neyman) are treated as Poisson draws, which is conservative.
    With equal probabilities ``pi = n / N`` and a fixed ``lam`` it is :func:`ppi_mean`'s estimate
    with the judge's mean over every row.

    Parameters
    ----------
    labels : array-like of float
        The human labels on the labelled rows.
    judged_labeled : array-like of float
        The judge's scores on the same rows.
    judged_unlabeled : array-like of float
        The judge's scores on every other row of the table (the rows that were not drawn).
    inclusion_labeled : array-like of float
        Each labelled row's inclusion probability, in (0, 1] (``inclusion_probability`` of
        :func:`raglab.sampling.draw`).
    lam : float, optional
        The judge's weight: ``None`` (the default) tunes it; ``0`` is the Horvitz-Thompson mean of
        the labels alone.
    ci : float
        Confidence level.
    strata_labeled, strata_unlabeled : array-like, optional
        The stratum of each labelled and unlabelled row: one estimate (and ``lam``) per stratum,
        combined with the strata's shares of the rows ``N_h / N``. Every stratum needs 2 labels.
    units_labeled, units_unlabeled : array-like, optional
        Clusters (conversations): ``z`` is summed per cluster and the variance is cluster-robust
        (``G / (G - 1)``).
    interval : {"adjusted", "wald"}
        ``"adjusted"`` (the default), for labels and scores in [0, 1]: the variance also counts the
        four pseudo-rows of :func:`ppi_mean` (label, judge) = (0, 0), (1, 1), (1, 0), (0, 1), each
        labelled with the mean sampling rate ``n / N`` (as one-row clusters; the estimate and ``lam``
        are unchanged), and the quantile is Student's t on ``labels - 1`` degrees of freedom
        (labelled clusters - 1; Welch-Satterthwaite over strata). Values outside [0, 1] (paired
        differences) get ``"wald"``: the normal quantile, no pseudo-rows.

    Returns
    -------
    PPIInterval
        Its ``method`` says ``Horvitz-Thompson``; ``n_labeled`` and ``n_unlabeled`` count rows and
        ``effective_labels`` compares with the variance of the ``1 / pi``-weighted (Hajek) mean of the
        labels alone.

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.stats import ppi_mean_sampled
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(4000) < 0.7).astype(float)
    >>> judge = np.clip(truth + rng.normal(0, 0.4, 4000), 0, 1)
    >>> pi = np.clip(0.2 * (1 - np.abs(2 * judge - 1)) + 0.02, 0, 1)   # label where the judge is unsure
    >>> chosen = rng.random(4000) < pi
    >>> iv = ppi_mean_sampled(truth[chosen], judge[chosen], judge[~chosen], pi[chosen])
    >>> iv.method
    'prediction-powered (PPI++, plus-four, t), Horvitz-Thompson'
    >>> bool(iv.low < truth.mean() < iv.high)
    True
    """
    level = check_level(ci)
    lam = _check_lam(lam)
    adjusted = _check_interval(interval) == "adjusted"
    y, f, fu, _, _ = _inputs(labels, judged_labeled, judged_unlabeled, None, None)
    pi = _vector(inclusion_labeled, "inclusion_labeled")
    if pi.size != y.size:
        raise ValueError(f"inclusion_labeled has {pi.size} values for {y.size} labelled rows")
    if not (np.isfinite(pi).all() and ((pi > 0) & (pi <= 1)).all()):
        raise ValueError("inclusion_labeled must be probabilities in (0, 1] (a labelled row was drawn with them)")
    stratified = strata_labeled is not None and strata_unlabeled is not None
    clustered = units_labeled is not None and units_unlabeled is not None
    sl = _codes(strata_labeled, y.size, "strata_labeled") if stratified else None
    su = _codes(strata_unlabeled, fu.size, "strata_unlabeled") if stratified else None
    ul = _codes(units_labeled, y.size, "units_labeled") if clustered else None
    uu = _codes(units_unlabeled, fu.size, "units_unlabeled") if clustered else None
    return _sampled_core(y, f, pi, sl, ul, _unlabelled(fu, None, su, uu), lam, level, adjusted)


def _sampled_core(y: np.ndarray, f: np.ndarray, pi: np.ndarray, sl: np.ndarray | None, ul: np.ndarray | None,
                  unl: _Unlabelled, lam: float | None, level: float, adjusted: bool) -> PPIInterval:
    """:func:`ppi_mean_sampled` from the labelled rows and the unlabelled rows' sums (per stratum and cluster)."""
    adjusted = _adjusts(adjusted, y, f, unl)
    stratified = sl is not None
    clustered = ul is not None and unl.units is not None
    w = 1.0 / pi
    keys = np.full(y.size, "0") if sl is None else sl.astype(str)
    if sl is None:
        unl = _Unlabelled(np.full(len(unl.sums), "0"), unl.units, unl.sums)
    n_rows = y.size + float(unl.sums[:, 0].sum())
    strata = sorted(set(keys.tolist()) | set(unl.strata[unl.sums[:, 0] > 0].tolist()))
    fits: list[tuple[float, _Fit]] = []
    shares: dict[str, float] = {}
    for h in strata:
        m = keys == h
        part = unl.stratum(h)
        nl = int(m.sum())
        if nl < 2:
            raise ValueError(f"stratum {str(h)!r} has {nl} labelled row(s); the Horvitz-Thompson PPI needs at least 2 "
                             "in every stratum (label more rows there, or merge strata)")
        shares[h] = (nl + float(part.total()[0])) / n_rows
        fit = _ht_stratum(y[m], f[m], w[m], ul[m] if clustered and ul is not None else None, part, lam, adjusted)
        fits.append((shares[h], fit))
    estimate, var, lam_mean, df = _combine_strata(fits, adjusted, y.size)
    label_var = _label_variance(y, _strata_weights(keys, shares, w), adjusted)
    method = _method(lam, adjusted, _HT, "stratified" if stratified else "", "clustered" if clustered else "")
    return _interval(
        estimate, var, level=level, lam=lam_mean, tuned=lam is None,
        n_labeled=y.size, n_unlabeled=int(unl.total()[0]), label_var=label_var, method=method, df=df,
    )


class _Row(NamedTuple):
    metric: str
    slice: str
    n_labeled: int
    n_judged: int
    lam: float
    effective_labels: float
    below_min_labels: bool
    method: str
    level: float
    human_only: float
    human_only_low: float
    human_only_high: float
    judge_only: float
    judge_only_low: float
    judge_only_high: float
    estimate: float
    low: float
    high: float


_NAN = float("nan")


def _judge_only(f: np.ndarray, units: np.ndarray | None, unl: _Unlabelled, level: float
                ) -> tuple[float, float, float]:
    """The judge's mean over every judged row with a normal interval (cluster-robust with ``units``).

    ``f`` and ``units``: the labelled rows' scores and clusters; ``unl``: the unlabelled rows' sums (unit
    weights; per cluster with ``units``). The standard error is ``sd / sqrt(n)``, or from the clusters'
    totals of ``f - mean``: ``sqrt(G / (G - 1) sum_g T_g^2)`` with ``T_g = sum_g (f - mean) / n``.
    """
    total = unl.total()
    size = f.size + int(total[0])
    mean = (float(f.sum()) + float(total[2])) / size if size else _NAN
    if size < 2:
        return mean, _NAN, _NAN
    if units is None:
        dev = f - mean
        squares = float(dev @ dev) + max(float(total[5]) - 2 * mean * float(total[2]) + float(total[0]) * mean * mean, 0.0)
        se = math.sqrt(squares / (size - 1)) / math.sqrt(size)
    else:
        flat = unl.flat()
        unit_keys = np.empty(0, dtype=str) if flat.units is None else flat.units
        _, inverse = np.unique(np.concatenate([units.astype(str), unit_keys]), return_inverse=True)
        g = int(inverse.max()) + 1
        il, iu = inverse[: f.size], inverse[f.size:]
        totals = (np.bincount(il, f - mean, minlength=g)
                  + np.bincount(iu, flat.sums[:, 2] - flat.sums[:, 0] * mean, minlength=g)) / size
        se = math.sqrt(g / (g - 1) * float(totals @ totals)) if g > 1 else _NAN
    half = _z(level) * se
    return mean, mean - half, mean + half


def _cell(
    y: np.ndarray, f: np.ndarray, prob: np.ndarray | None, strata: np.ndarray | None, units: np.ndarray | None,
    unl: _Unlabelled, lam: float | None, level: float,
) -> tuple[PPIInterval, PPIInterval] | str:
    """The PPI interval and the human-only one (lam = 0) on one slice; a reason text when it cannot be made.

    ``y, f, prob, strata, units``: the labelled rows' labels, scores, inclusion probabilities, strata and
    clusters; ``unl``: the judged rows without a label, as sums (per stratum when ``strata`` is given, per
    cluster with ``units``). When the labelled rows were drawn with unequal probabilities (within a
    stratum, if stratified), the PPI interval is the design-based one over every judged row
    (:func:`ppi_mean_sampled`, Horvitz-Thompson); the human-only one stays the ``1 / p``-weighted
    (Hajek) mean of the labels, which has no judge term to share rows with.
    """
    n_lab = y.size
    if n_lab < 2:
        return f"too few labels ({n_lab})"
    unequal = False
    if prob is not None:
        groups = [np.ones(prob.size, dtype=bool)] if strata is None else [strata == h for h in np.unique(strata)]
        unequal = any(np.ptp(prob[g]) > 1e-12 for g in groups if g.any())
    if not unl.total()[0]:
        return "every judged row is labelled (use summary on the labels)"
    try:
        ppi = _sampled_core(y, f, prob, strata, units, unl, lam, level, True) if unequal and prob is not None else None
        r = None if prob is None else 1.0 / prob
        lams = (0.0,) if ppi is not None else (lam, 0.0)
        if strata is not None:
            made = [_strata_core(y, f, np.ones(n_lab) if r is None else r, strata, units, unl, x, level, True)
                    for x in lams]
        elif units is not None:
            made = [_clustered_core(y, f, r, units, unl, x, level, True) for x in lams]
        else:
            made = [_mean_core(y, f, r, unl, x, level, True) for x in lams]
    except ValueError as error:
        return str(error)
    if ppi is not None:
        ppi.method += ", weighted 1/p over every judged row"
        return ppi, made[0]
    if prob is not None:
        made[0].method += ", weighted 1/p"
    return made[0], made[1]


def _one_cell(
    y: np.ndarray, f: np.ndarray, labelled: np.ndarray, *, prob: np.ndarray | None, strata: np.ndarray | None,
    units: np.ndarray | None, lam: float | None, level: float,
) -> tuple[PPIInterval, PPIInterval] | str:
    """:func:`_cell` on one slice's rows (``labelled``: which have a label; unlabelled ones become sums)."""
    unl = ~labelled
    sums = _unlabelled(f[unl], None, None if strata is None else strata[unl], None if units is None else units[unl])
    return _cell(y[labelled], f[labelled], None if prob is None else prob[labelled],
                 None if strata is None else strata[labelled], None if units is None else units[labelled],
                 sums, lam, level)


class _MetricCells(NamedTuple):
    """What :func:`ppi_table` needs of one metric: the labelled judged rows and the unlabelled ones' sums.

    ``metric`` as given; ``dropped`` labelled rows without a judge score (left out); ``y, f`` the labels and
    scores of the labelled judged rows with their ``prob`` (inclusion probability), ``slices`` and
    ``units`` (text; None when not given); ``unl`` the unlabelled judged rows as sums per slice (``""``
    without slices) and cluster. A partitioned table makes these per partition and adds them up
    (:func:`_merge_cells`); the table follows from them alone.
    """

    metric: Any
    dropped: int
    y: np.ndarray
    f: np.ndarray
    prob: np.ndarray | None
    slices: np.ndarray | None
    units: np.ndarray | None
    unl: _Unlabelled


def _metric_cells(metric: Any, f_all: np.ndarray, y_all: np.ndarray, prob: np.ndarray | None,
                  slices: np.ndarray | None, units: np.ndarray | None) -> _MetricCells:
    """One metric's :class:`_MetricCells` from its rows (``f_all``, ``y_all``: NaN when not judged, not labelled)."""
    keep = ~np.isnan(f_all)
    missing = np.isnan(y_all)
    lab, unl = keep & ~missing, keep & missing
    return _MetricCells(
        metric, int((~keep & ~missing).sum()), y_all[lab], f_all[lab], None if prob is None else prob[lab],
        None if slices is None else slices[lab].astype(str), None if units is None else units[lab].astype(str),
        _unlabelled(f_all[unl], None, None if slices is None else slices[unl], None if units is None else units[unl]),
    )


def _merge_cells(*parts: _MetricCells) -> _MetricCells:
    """Partitions' :class:`_MetricCells` of one metric as one (rows concatenated, sums added)."""
    first = parts[0]

    def join(name: str) -> np.ndarray | None:
        values = [getattr(p, name) for p in parts]
        return None if values[0] is None else np.concatenate(values)

    return _MetricCells(first.metric, sum(p.dropped for p in parts), np.concatenate([p.y for p in parts]),
                        np.concatenate([p.f for p in parts]), join("prob"), join("slices"), join("units"),
                        _merge_unlabelled(*[p.unl for p in parts]))


def _table_of_cells(metrics: Sequence[_MetricCells], *, sliced: bool, stratify: bool, lam: float | None,
                    level: float) -> Any:
    """:func:`ppi_table`'s table (and warnings) from each metric's :class:`_MetricCells`."""
    rows: list[_Row] = []
    low_cells: list[str] = []
    few_clusters: list[str] = []
    for cells_of in metrics:
        metric, unl = cells_of.metric, cells_of.unl
        if cells_of.dropped:
            warn(f"ppi_table: {cells_of.dropped} labelled row(s) of {metric!r} have no judge score and are left out")
        cells: list[tuple[str, Any, bool]] = [("overall", None, sliced and stratify)]
        if sliced and cells_of.slices is not None:
            present = set(cells_of.slices.tolist()) | set(unl.strata[unl.sums[:, 0] > 0].tolist())
            cells += [(str(h), h, False) for h in sorted(present)]
        for label, key, stratified in cells:
            m = np.ones(cells_of.y.size, dtype=bool) if key is None else cells_of.slices == key
            flat = (unl if key is None else unl.stratum(key)).flat()
            y, f = cells_of.y[m], cells_of.f[m]
            u = None if cells_of.units is None else cells_of.units[m]
            p = None if cells_of.prob is None else cells_of.prob[m]
            strata = cells_of.slices[m] if stratified and cells_of.slices is not None else None
            made = _cell(y, f, p, strata, u, unl if strata is not None else flat, lam, level)
            if isinstance(made, str) and strata is not None:
                warn(f"ppi_table: stratified PPI for {metric!r} overall is not possible ({made}); "
                     "using unstratified PPI over all rows")
                made = _cell(y, f, p, None, u, flat, lam, level)
            judge = _judge_only(f, u, flat, level)
            n_lab = int(y.size)
            n_judged = n_lab + int(flat.total()[0])
            if isinstance(made, str):
                rows.append(_Row(str(metric), label, n_lab, n_judged, _NAN, _NAN, n_lab < MIN_LABELS, made,
                                 level, _NAN, _NAN, _NAN, *judge, _NAN, _NAN, _NAN))
                continue
            ppi, only = made
            if ppi.below_min_labels:
                low_cells.append(f"{metric}/{label} ({n_lab})")
            if u is not None and (n_clusters := len(np.unique(u))) < MIN_LABELED_CLUSTERS:
                few_clusters.append(f"{metric}/{label} ({n_clusters})")
            rows.append(_Row(
                str(metric), label, n_lab, n_judged, ppi.lam, ppi.effective_labels, ppi.below_min_labels,
                ppi.method, level, only.estimate, only.low, only.high, *judge, ppi.estimate, ppi.low, ppi.high,
            ))
    if low_cells:
        warn(f"ppi_table: {len(low_cells)} cell(s) have fewer than MIN_LABELS={MIN_LABELS} human labels, where "
             f"PPI intervals rest on a handful of judge-human disagreements: {', '.join(low_cells[:5])}"
             f"{' ...' if len(low_cells) > 5 else ''}; review them, do not decide on them")
    if few_clusters:
        warn(f"ppi_table: {len(few_clusters)} cell(s) rest on fewer than MIN_LABELED_CLUSTERS={MIN_LABELED_CLUSTERS} "
             f"labelled clusters, where a cluster-robust interval rests on a handful of conversations (the Wald "
             f"one covered 80-93% for a nominal 95% below 25; the adjusted one 94% or more on the conversation "
             f"shapes of benchmarks/ppi.py): {', '.join(few_clusters[:5])}"
             f"{' ...' if len(few_clusters) > 5 else ''}; label more conversations before deciding on them")
    return frame_of(rows, PPI_TABLE)


def ppi_table(
    judged: Any,
    human: Any,
    *,
    slices: Any = None,
    stratify: bool = True,
    units: Any = None,
    probability: Any = None,
    lam: float | None = None,
    ci: float = 0.95,
) -> Any:
    """Prediction-powered intervals per metric and slice, with the human-only and judge-only ones beside.

    Parameters
    ----------
    judged : pandas.DataFrame
        The judge's scores, one column per metric (NaN: not judged; such rows are left out).
    human : pandas.DataFrame
        The human labels, the same columns and rows (NaN: not labelled).
    slices : array-like, optional
        A slice label per row: one row per slice, and (with ``stratify=True``) the ``overall`` row is
        stratified PPI over the slices (:func:`ppi_mean_strata`); a slice with fewer than 2 labels
        falls back to unstratified PPI for ``overall`` with a warning.
    stratify : bool
        Whether ``overall`` is stratified by ``slices``.
    units : array-like, optional
        A cluster per row (a conversation): cluster-robust variances (:func:`ppi_mean_clustered`).
    probability : array-like, optional
        Each row's inclusion probability in the labelled sample: labels are weighted by ``1 / p``.
    lam : float, optional
        The judge's weight; ``None`` tunes it (PPI++).
    ci : float
        Confidence level.

    Returns
    -------
    pandas.DataFrame
        The columns of ``raglab.stats.results.PPI_TABLE``: ``metric, slice, n_labeled, n_judged, lam,
        effective_labels, below_min_labels, method, level, human_only, human_only_low,
        human_only_high, judge_only, judge_only_low, judge_only_high, estimate, low, high``. A cell
        that cannot be estimated has NaN numbers and its reason as ``method``. Cells below
        :data:`MIN_LABELS` labels are flagged and warned about.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from raglab.stats import ppi_table
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(3000) < 0.7).astype(float)
    >>> judge = np.where(rng.random(3000) < 0.85, truth, 1 - truth)
    >>> labels = np.where(np.arange(3000) < 300, truth, np.nan)
    >>> table = ppi_table(pd.DataFrame({"faithful": judge}), pd.DataFrame({"faithful": labels}))
    >>> table[["metric", "slice", "n_labeled", "n_judged"]].to_string(index=False)
    '  metric   slice  n_labeled  n_judged\\nfaithful overall        300      3000'
    >>> bool(table.high[0] - table.low[0] < table.human_only_high[0] - table.human_only_low[0])
    True
    """
    level = check_level(ci)
    lam = _check_lam(lam)
    judged = pd.DataFrame(judged)
    human = pd.DataFrame(human)
    if list(judged.columns) != list(human.columns) or len(judged) != len(human):
        raise ValueError("judged and human must have the same columns (one per metric) and rows")
    size = len(judged)
    slice_arr = None if slices is None else _codes(np.asarray(pd.Series(slices).astype(str)), size, "slices")
    unit_arr = None if units is None else _codes(np.asarray(pd.Series(units).astype(str)), size, "units")
    prob = None
    if probability is not None:
        prob = _vector(probability, "probability")
        if prob.size != size:
            raise ValueError(f"probability has {prob.size} values for {size} rows")
        if ((prob <= 0) | (prob > 1)).any():
            raise ValueError("inclusion probabilities must lie in (0, 1]")
    parts = [_metric_cells(metric, judged[metric].to_numpy(dtype=float), human[metric].to_numpy(dtype=float), prob,
                           slice_arr, unit_arr) for metric in judged.columns]
    return _table_of_cells(parts, sliced=slice_arr is not None, stratify=stratify, lam=lam, level=level)


def _subset_summary(
    scores: pd.DataFrame,
    predictors: dict[str, np.ndarray | None],
    *,
    probability: np.ndarray | None,
    strata: np.ndarray | None,
    slices: np.ndarray | None,
    units: np.ndarray | None,
    lam: float | None,
    level: float,
    names: dict[str, str],
) -> list[dict[str, Any]]:
    """Whole-set rows of ``summary`` for metrics judged on a random sample (NaN off the sample).

    With a predictor (a cheap score on every row) the judge scores on the sampled rows are the labels
    and the predictor the predictions (:func:`ppi_mean`, :func:`ppi_mean_strata` over the design's
    strata, weighted ``1 / probability``); without one, the design-weighted mean of the sampled rows
    (the same estimators at ``lam = 0``: the stratified mean, or the ``1 / p``-weighted mean) with their
    interval (plus-four, t for scores in [0, 1]; normal otherwise). Rows without a predictor score get the predictor's mean as their prediction.
    """
    out: list[dict[str, Any]] = []
    low_cells: list[str] = []
    for metric in scores.columns:
        y_all = scores[metric].to_numpy(dtype=float)
        pred = predictors.get(metric)
        # a row without a predictor score (no checkable sentence for the lexical tripwire) stays in the
        # whole set with the predictor's mean as its prediction: PPI is unbiased for any fixed prediction
        keep = np.ones(y_all.size, dtype=bool)
        filled = 0 if pred is None else int(np.isnan(pred).sum())
        if pred is not None and filled == pred.size:
            raise ValueError(f"the predictor of {metric!r} ({names[metric]!r}) has no score on any row")
        f_all = np.zeros(y_all.size) if pred is None else np.where(np.isnan(pred), np.nanmean(pred), pred)
        cells: list[tuple[str, np.ndarray]] = [("overall", np.ones(y_all.size, dtype=bool))]
        if slices is not None:
            cells += [(str(h), slices == h) for h in sorted(set(slices.tolist()))]
        for label, where in cells:
            mask = where & keep
            y, f = y_all[mask], f_all[mask]
            labelled = ~np.isnan(y)
            p = None if probability is None else probability[mask]
            st = None if strata is None else strata[mask]
            u = None if units is None else units[mask]
            use_lam = lam if pred is not None else 0.0
            made = _one_cell(y, f, labelled, prob=p, strata=st, units=u, lam=use_lam, level=level)
            if isinstance(made, str) and st is not None:
                warn(f"summary: the stratified estimate of {metric!r} ({label}) is not possible ({made}); "
                     "using the unstratified one")
                st = None
                made = _one_cell(y, f, labelled, prob=p, strata=None, units=u, lam=use_lam, level=level)
            n_lab = int(labelled.sum())
            row: dict[str, Any] = {"metric": str(metric), "slice": label, "n": n_lab,
                                   "n_excluded": int((where & ~keep).sum()), "level": level,
                                   "n_resamples": pd.NA, "seed": pd.NA}
            if isinstance(made, str):
                row.update(se=_NAN, method=made, mean=_NAN, low=_NAN, high=_NAN)
                out.append(row)
                continue
            iv = made[0] if pred is not None else made[1]
            unequal = ", weighted 1/p" if ", weighted 1/p" in made[0].method else ""
            if pred is not None:
                method = f"{made[0].method}, predictor {names[metric]!r} on {int(mask.sum())} rows" + (
                    f" ({filled} without a score given its mean)" if filled else "")
            else:
                shape = _ADJUSTED if _ADJUSTED in made[1].method else "normal"  # the interval made[1] has
                method = (f"design-weighted mean of the judged sample ({shape})" + (", stratified" if st is not None else "")
                          + (", clustered" if u is not None else "") + unequal + f", over {int(mask.sum())} rows")
            if n_lab < MIN_LABELS:
                low_cells.append(f"{metric}/{label} ({n_lab})")
            row.update(se=iv.se, method=method, mean=iv.estimate, low=iv.low, high=iv.high)
            out.append(row)
    if low_cells:
        warn(f"summary: {len(low_cells)} cell(s) have fewer than MIN_LABELS={MIN_LABELS} judged rows, where "
             f"normal intervals from a sample undercover: {', '.join(low_cells[:5])}"
             f"{' ...' if len(low_cells) > 5 else ''}")
    return out
