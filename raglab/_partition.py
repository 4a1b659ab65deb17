"""Per-partition statistics of one run's scores, their exact combine, and the summary made from them.

Floor 3 (kernels: numpy and pandas, and the interval functions of :mod:`raglab.stats`). A table too
large for one machine is cut into partitions; each worker turns its partition into ``Stats`` (per
slice and metric: the rows, the scores, their sum and sum of squares, min, max and the values that are
not 0 or 1), the statistics of all partitions are added with ``combine`` and ``summary_table`` turns
the total into the table :func:`raglab.stats.summary` makes from the rows (Wilson for pass/fail
metrics, Wilson at the effective n for other scores in [0, 1], t otherwise).

The sums are *exact*: a sum is kept as a short tuple of floats whose exact (unrounded) sum is the sum
of the scores (``_exact_sum``: Rump, Ogita and Oishi's vectorised error-free extraction, then
``_exact``, repeated ``math.fsum``), a square as the two floats of Dekker's exact product (exact for
scores between about 1e-150 and 1e150 in magnitude). Adding two partitions' tuples and compressing them again is exact too, so the combined
statistics do not depend on how the rows were partitioned, ordered or grouped, down to the last bit;
the mean and variance are then the exact values rounded once (``_moments``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from raglab._registry import metric_info
from raglab.stats._engine import OVERALL, _slice_codes, usable_cells
from raglab.stats.estimators import Proportion
from raglab.stats.intervals import _wilson_bounds, proportion_interval
from raglab.stats.results import SUMMARY, IntervalKind, SummaryRow, frame_of

__all__: list[str] = []

#: The one-sample methods computed from partition statistics (no raw rows needed).
ANALYTIC_METHODS = ("auto", *Proportion.methods, "t")

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two halves of 26 bits


def _two_product(a: np.ndarray, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(p, e)`` with ``p + e == a * b`` exactly, element-wise (Dekker; no overflow or underflow assumed)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _exact(terms: Iterable[float]) -> tuple[float, ...]:
    """Floats whose exact sum is the exact sum of ``terms``: the rounded sum, then what rounding left out.

    Examples
    --------
    >>> _exact([1e16, 1.0, -1e16 + 2.0])
    (3.0,)
    >>> _exact([1e16, 1.0])
    (1e+16, 1.0)
    """
    rest = list(terms)
    out: list[float] = []
    for _ in range(80):  # each round leaves at most 2**-53 of the last; doubles span < 2**2100
        total = math.fsum(rest)
        if total == 0.0:
            break
        out.append(total)
        rest.append(-total)
    return tuple(out)


def _exact_sum(x: np.ndarray) -> tuple[float, ...]:
    """The exact sum of a float array, as ``_exact`` gives it, in a few vectorised passes.

    Rump, Ogita and Oishi's error-free extraction (AccSum, 2008): with ``sigma = 2**(M + ceil(log2 max|x|))``
    and ``2**M >= n + 2``, ``q = (sigma + x) - sigma`` is ``x`` rounded to a grid of ``2**-53 sigma``,
    exactly, so ``x - q`` is exact and ``sum(q)`` is exact in floats in any order; repeating on ``x - q``
    (53 - M fewer bits each time) leaves nothing.
    """
    x = np.asarray(x, dtype=float).ravel()
    if not x.size:
        return ()
    terms: list[float] = []
    m = math.ceil(math.log2(x.size + 2))
    for _ in range(2200 // max(1, 52 - m) + 2):
        mu = float(np.max(np.abs(x)))
        if mu == 0.0:
            break
        sigma = math.ldexp(1.0, m + math.frexp(mu)[1])  # 2**m times a power of two >= mu
        q = (sigma + x) - sigma
        terms.append(float(q.sum()))
        x = x - q
    else:  # pragma: no cover  (the loop removes at least 52 - m bits a round)
        terms.extend(x.tolist())
    return _exact(terms)


@dataclass(frozen=True)
class Cell:
    """The statistics of one metric on one slice: ``n`` scores, ``nonbinary`` of them not 0 or 1, their
    ``low``/``high`` (inf/-inf with none), exact ``sums`` and ``squares`` (tuples of floats)."""

    n: int
    nonbinary: int
    low: float
    high: float
    sums: tuple[float, ...]
    squares: tuple[float, ...]

    @classmethod
    def of(cls, values: np.ndarray) -> Cell:
        """The statistics of a 1-D array of scores (NaN = no score)."""
        x = np.asarray(values, dtype=float)
        x = x[~np.isnan(x)]
        if not x.size:
            return EMPTY
        nonbinary = int((~np.isin(x, (0.0, 1.0))).sum())
        p, e = _two_product(x, x)
        sums, squares = _exact_sum(x), _exact_sum(np.concatenate([p, e]))
        return cls(int(x.size), nonbinary, float(x.min()), float(x.max()), sums, squares)

    def __add__(self, other: Cell) -> Cell:
        return Cell(self.n + other.n, self.nonbinary + other.nonbinary, min(self.low, other.low),
                    max(self.high, other.high), _exact(self.sums + other.sums),
                    _exact(self.squares + other.squares))


EMPTY = Cell(0, 0, math.inf, -math.inf, (), ())


@dataclass(frozen=True)
class Stats:
    """One partition's (or the combined) statistics: per slice key, the rows and one ``Cell`` per metric.

    ``keys`` are the slice labels as found (None for a missing label; one key ``None`` when the table
    is not sliced, ``grouped=False``), ``rows[k]`` counts the rows of key ``k`` (with or without
    scores), ``cells[k][j]`` is metric ``names[j]`` on key ``k``.
    """

    names: tuple[str, ...]
    grouped: bool
    keys: tuple[Hashable, ...]
    rows: tuple[int, ...]
    cells: tuple[tuple[Cell, ...], ...]

    def by_key(self) -> dict[Hashable, tuple[int, tuple[Cell, ...]]]:
        """``{key: (rows, cells)}``: the statistics without the order the keys were first seen in."""
        return {k: (r, c) for k, r, c in zip(self.keys, self.rows, self.cells)}

    def total(self, j: int) -> Cell:
        """Metric ``j`` over every key (the ``overall`` row)."""
        out = EMPTY
        for cells in self.cells:
            out = out + cells[j]
        return out


def _key(value: Any) -> Hashable:
    """A slice label as a plain, hashable Python value (None for a missing one)."""
    if value is None or (not isinstance(value, (list, tuple, dict, set, np.ndarray)) and pd.isna(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def partition_stats(values: np.ndarray, names: Sequence[str], slices: Any = None) -> Stats:
    """The statistics of one partition: ``values`` (rows, metrics) with NaN for no score, ``slices`` a
    label per row (None: not sliced).

    Examples
    --------
    >>> import numpy as np
    >>> s = partition_stats(np.array([[1.0, 0.5], [0.0, np.nan]]), ["hit@5", "recall@5"], ["a", "b"])
    >>> s.keys, s.rows, [c.n for c in s.cells[0]], s.cells[0][1].sums
    (('a', 'b'), (1, 1), [1, 1], (0.5,))
    """
    values = np.asarray(values, dtype=float).reshape(len(values), len(names))
    if slices is None:
        return Stats(tuple(names), False, (None,), (values.shape[0],),
                     (tuple(Cell.of(values[:, j]) for j in range(len(names))),))
    labels = pd.Series(list(slices), dtype=object)
    if len(labels) != values.shape[0]:
        raise ValueError(f"`slices` must give one label per row: {len(labels)} labels for {values.shape[0]} rows")
    codes, uniques = pd.factorize(labels, sort=False, use_na_sentinel=True)
    keys: list[Hashable] = [_key(u) for u in uniques]
    if (codes < 0).any():
        codes = np.where(codes < 0, len(keys), codes)
        keys.append(None)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
    rows, cells = [], []
    for k in range(len(keys)):
        block = values[order[bounds[k]:bounds[k + 1]]]
        rows.append(int(block.shape[0]))
        cells.append(tuple(Cell.of(block[:, j]) for j in range(len(names))))
    return _merged(tuple(names), True, keys, rows, cells)


def _merged(names: tuple[str, ...], grouped: bool, keys: Sequence[Hashable], rows: Sequence[int],
            cells: Sequence[tuple[Cell, ...]]) -> Stats:
    """Stats with equal keys added together (keys kept in first-seen order)."""
    at: dict[Hashable, int] = {}
    out_keys: list[Hashable] = []
    out_rows: list[int] = []
    out_cells: list[tuple[Cell, ...]] = []
    for key, r, c in zip(keys, rows, cells):
        if key in at:
            i = at[key]
            out_rows[i] += r
            out_cells[i] = tuple(a + b for a, b in zip(out_cells[i], c))
        else:
            at[key] = len(out_keys)
            out_keys.append(key)
            out_rows.append(r)
            out_cells.append(tuple(c))
    return Stats(names, grouped, tuple(out_keys), tuple(out_rows), tuple(out_cells))


def combine(*parts: Stats) -> Stats:
    """The statistics of the partitions together: exact, so any order or grouping gives the same bits.

    Examples
    --------
    >>> import numpy as np
    >>> a = partition_stats(np.array([[0.1], [0.2]]), ["x"])
    >>> b = partition_stats(np.array([[0.3]]), ["x"])
    >>> combine(a, b) == combine(b, a) == partition_stats(np.array([[0.3], [0.1], [0.2]]), ["x"])
    True
    """
    if not parts:
        raise ValueError("combine needs at least one partition's statistics")
    first = parts[0]
    for p in parts[1:]:
        if p.names != first.names or p.grouped != first.grouped:
            raise ValueError(f"cannot combine statistics of metrics {list(p.names)} with {list(first.names)}")
    return _merged(first.names, first.grouped, [k for p in parts for k in p.keys],
                   [r for p in parts for r in p.rows], [c for p in parts for c in p.cells])


def _moments(cell: Cell) -> tuple[float, float]:
    """Mean and sample variance (ddof 1; NaN below 2 scores), each the exact value rounded once.

    The sums are a few floats, so exact rational arithmetic on them costs nothing next to the rows.
    """
    n = cell.n
    if n == 0:
        return math.nan, math.nan
    s1 = sum(map(Fraction, cell.sums), Fraction(0))
    mean = float(s1 / n)
    if n == 1:
        return mean, math.nan
    s2 = sum(map(Fraction, cell.squares), Fraction(0))
    return mean, float((n * s2 - s1 * s1) / (n * (n - 1)))


def _t_cell(cell: Cell, level: float) -> tuple[float, float, float, float]:
    """``raglab.stats.intervals._t_bounds`` from statistics: mean, se, low, high."""
    from scipy import stats as _sps

    mean, variance = _moments(cell)
    if cell.n < 2:
        return mean, math.nan, math.nan, math.nan
    if cell.low == cell.high:
        return mean, 0.0, mean, mean
    se = math.sqrt(variance) / math.sqrt(cell.n)
    half = float(_sps.t.ppf(0.5 + level / 2.0, cell.n - 1)) * se
    return mean, se, mean - half, mean + half


def _bounded_cell(cell: Cell, mean: float, low: float, high: float, level: float) -> tuple[float, float, float, str]:
    """``raglab.stats.intervals._bounded_t`` from statistics: Wilson's interval at the effective n."""
    from scipy import stats as _sps

    n = cell.n
    if n >= 2 and cell.low == cell.high:
        z = float(_sps.norm.ppf(0.5 + level / 2.0))
        low, high = _wilson_bounds(mean, n, z)
        return mean, low, high, "wilson (bounded score, all values equal)"
    if n < 2 or not np.isfinite(low):
        return mean, low, high, "t"
    _, variance = _moments(cell)
    effective = n * mean * (1.0 - mean) / variance
    z = float(_sps.t.ppf(0.5 + level / 2.0, n - 1))
    low, high = _wilson_bounds(mean, effective, z)
    return mean, low, high, "wilson (bounded score, effective n)"


def choose(stats: Stats, method: str) -> list[str]:
    """The interval method per metric, as ``raglab.stats.estimators.choose_one_sample`` picks it
    (without clusters or declared bounds)."""
    if method not in ANALYTIC_METHODS:
        raise ValueError(f"summary from partition statistics takes method in {list(ANALYTIC_METHODS)}, got {method!r}")
    chosen = []
    for j, name in enumerate(stats.names):
        total = stats.total(j)
        binary = total.n > 0 and total.nonbinary == 0
        if method == "auto":
            chosen.append("wilson" if binary else "t")
            continue
        if method in Proportion.methods and not binary:
            raise ValueError(
                f"summary: method={method!r} is an interval for pass/fail scores, but {name!r} has values other "
                "than 0 and 1; use method='t' or a bootstrap method for it."
            )
        chosen.append(method)
    return chosen


def _key_series(keys: Sequence[Hashable], dtype: Any) -> pd.Series:
    """The slice keys as a Series of the slice column's dtype (so that they sort as the column's values do)."""
    if dtype is not None:
        try:
            return pd.Series(list(keys), dtype=dtype)
        except (TypeError, ValueError):
            pass
    return pd.Series(list(keys), dtype=object)


def summary_rows(stats: Stats, method: str = "auto", level: float = 0.95, slice_dtype: Any = None) -> list[SummaryRow]:
    """One typed row per metric and slice (``overall`` first, then the slices in
    :func:`raglab.stats.summary`'s order), from combined statistics. ``slice_dtype``: the dtype of the
    slice column (a categorical's slices follow its categories, as in pandas)."""
    if not sum(stats.rows):
        raise ValueError("summary needs at least one question (the scores are empty)")
    keys = list(stats.keys)
    if stats.grouped:
        codes, labels = _slice_codes(_key_series(keys, slice_dtype), len(keys))
        order = [[i for i, c in enumerate(codes) if c == g] for g in range(len(labels))]
        row_labels = [OVERALL, *labels]
    else:
        order, row_labels = [], [OVERALL]
    chosen = choose(stats, method)
    out = []
    for j, name in enumerate(stats.names):
        total = stats.total(j)
        in_unit = total.n == 0 or (total.low >= 0 and total.high <= 1)
        bounded = metric_info(name).bounded and in_unit
        cells = [(total, sum(stats.rows))]
        for members in order:
            cell = EMPTY
            for i in members:
                cell = cell + stats.cells[i][j]
            cells.append((cell, sum(stats.rows[i] for i in members)))
        for label, (cell, n_rows) in zip(row_labels, cells):
            pick = chosen[j]
            if pick in Proportion.methods:
                mean = se = low = high = math.nan
                if cell.n:
                    iv = proportion_interval(int(round(math.fsum(cell.sums))), cell.n, ci=level, method=pick)
                    mean, low, high = iv
                    se = math.sqrt(iv.estimate * (1 - iv.estimate) / cell.n)
                text, kind = pick, IntervalKind.PROPORTION
            else:
                mean, se, low, high = _t_cell(cell, level)
                text, kind = "t", IntervalKind.T
                if bounded and cell.n:
                    mean, low, high, text = _bounded_cell(cell, mean, low, high, level)
            out.append(SummaryRow(metric=name, slice=label, n=cell.n, n_excluded=n_rows - cell.n, mean=mean, se=se,
                                  low=low, high=high, method=text, level=level, n_resamples=None, seed=None,
                                  kind=kind))
    return out


def summary_table(stats: Stats, method: str = "auto", level: float = 0.95, slice_dtype: Any = None) -> pd.DataFrame:
    """The summary table (columns ``raglab.stats.results.SUMMARY``) from combined statistics.

    Examples
    --------
    >>> import numpy as np
    >>> s = partition_stats(np.array([[1.0], [0.0], [1.0], [1.0]]), ["hit@5"])
    >>> summary_table(s)[["metric", "slice", "n", "mean", "method"]].values.tolist()
    [['hit@5', 'overall', 4, 0.75, 'wilson']]
    """
    return frame_of(summary_rows(stats, method, level, slice_dtype), SUMMARY)


# --------------------------------------------------------------------------------------------------
# The paired comparison: per-partition statistics of two runs' paired scores
# --------------------------------------------------------------------------------------------------

#: The paired methods computed from partition statistics (no raw rows needed).
PAIRED_METHODS = ("score", "poisson")


def _fraction(terms: tuple[float, ...]) -> Fraction:
    return sum(map(Fraction, terms), Fraction(0))


@dataclass(frozen=True)
class PairCell:
    """The statistics of one metric's complete pairs on one slice: ``n`` pairs, ``nonbinary`` of them with
    a score not 0 or 1, ``changed`` with ``d = cand - base != 0``, ``down``/``up`` with ``d = -1``/``+1``
    (Tango's discordant pairs), the exact sums (tuples of floats) of ``base``, ``cand``, ``d``, ``d**2`` and
    ``d**3``."""

    n: int
    nonbinary: int
    changed: int
    down: int
    up: int
    base: tuple[float, ...]
    cand: tuple[float, ...]
    sums: tuple[float, ...]
    squares: tuple[float, ...]
    cubes: tuple[float, ...]

    @classmethod
    def of(cls, base: np.ndarray, cand: np.ndarray) -> PairCell:
        """The statistics of 1-D arrays of paired scores (NaN on either side: no pair)."""
        b, c = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
        keep = ~(np.isnan(b) | np.isnan(c))
        b, c = b[keep], c[keep]
        if not b.size:
            return PAIR_EMPTY
        d = c - b
        p, e = _two_product(d, d)
        p1, e1 = _two_product(p, d)
        p2, e2 = _two_product(e, d)
        nonbinary = int((~(np.isin(b, (0.0, 1.0)) & np.isin(c, (0.0, 1.0)))).sum())
        return cls(int(d.size), nonbinary, int(np.count_nonzero(d)), int((d == -1).sum()), int((d == 1).sum()),
                   _exact_sum(b), _exact_sum(c), _exact_sum(d), _exact_sum(np.concatenate([p, e])),
                   _exact_sum(np.concatenate([p1, e1, p2, e2])))

    def __add__(self, other: PairCell) -> PairCell:
        return PairCell(self.n + other.n, self.nonbinary + other.nonbinary, self.changed + other.changed,
                        self.down + other.down, self.up + other.up, _exact(self.base + other.base),
                        _exact(self.cand + other.cand), _exact(self.sums + other.sums),
                        _exact(self.squares + other.squares), _exact(self.cubes + other.cubes))

    def skew(self) -> float:
        """The sample skewness ``m3 / m2**1.5`` of the differences (NaN below 3 pairs or at zero spread)."""
        n = self.n
        if n < 3:
            return math.nan
        s1, s2, s3 = _fraction(self.sums), _fraction(self.squares), _fraction(self.cubes)
        mean = s1 / n
        m2 = s2 / n - mean * mean
        m3 = s3 / n - 3 * mean * s2 / n + 2 * mean ** 3
        if m2 <= Fraction(1, 10**24):
            return math.nan
        return float(m3) / float(m2) ** 1.5


PAIR_EMPTY = PairCell(0, 0, 0, 0, 0, (), (), (), (), ())


@dataclass(frozen=True)
class PairStats:
    """One partition's (or the combined) statistics of two paired runs: per slice key, the paired rows,
    one ``PairCell`` per metric and, with ``n_resamples``, the Poisson bootstrap's replicate sums
    (``raglab.stats.estimators.PoissonSums``, one group) keyed by (``seed``, question id, replicate).
    With clusters, the replicates are keyed by the cluster's label instead, and ``clusters`` holds per
    slice key and metric the sorted 64-bit hashes of the clusters with a complete pair there (a cluster
    spread over partitions is counted once: the sets are united)."""

    names: tuple[str, ...]
    grouped: bool
    keys: tuple[Hashable, ...]
    rows: tuple[int, ...]
    cells: tuple[tuple[PairCell, ...], ...]
    boot: tuple[Any, ...]
    n_resamples: int
    seed: int
    clusters: tuple[tuple[np.ndarray, ...], ...] | None = None

    def total(self, j: int) -> PairCell:
        """Metric ``j`` over every key."""
        out = PAIR_EMPTY
        for cells in self.cells:
            out = out + cells[j]
        return out


def pair_stats(base: np.ndarray, cand: np.ndarray, names: Sequence[str], slices: Any = None, ids: Any = None,
               n_resamples: int = 0, seed: int = 0, units: Any = None) -> PairStats:
    """The statistics of one partition of paired rows: ``base`` and ``cand`` (rows, metrics) with NaN for no
    score, ``slices`` a label per row (None: not sliced), ``ids`` the question id per row that keys the
    Poisson bootstrap's ``n_resamples`` replicates (0: none), ``units`` a cluster label per row (None: no
    clusters), which then keys the replicates instead, as :func:`raglab.stats.compare` does.

    Examples
    --------
    >>> import numpy as np
    >>> s = pair_stats(np.array([[1.0], [0.0], [1.0]]), np.array([[1.0], [1.0], [0.0]]), ["hit@5"])
    >>> c = s.cells[0][0]
    >>> c.n, c.up, c.down, c.changed
    (3, 1, 1, 2)
    """
    from raglab.stats.estimators import PoissonSums, _id_keys

    k = len(names)
    base = np.asarray(base, dtype=float).reshape(len(base), k)
    cand = np.asarray(cand, dtype=float).reshape(len(cand), k)
    n = base.shape[0]
    if slices is None:
        codes, keys = np.zeros(n, dtype=np.intp), [None]
    else:
        labels = pd.Series(list(slices), dtype=object)
        if len(labels) != n:
            raise ValueError(f"`slices` must give one label per row: {len(labels)} labels for {n} rows")
        codes, uniques = pd.factorize(labels, sort=False, use_na_sentinel=True)
        keys = [_key(u) for u in uniques]
        if (codes < 0).any():
            codes = np.where(codes < 0, len(keys), codes)
            keys.append(None)
    labels = None if units is None else pd.Series(list(units), dtype=object).astype(str).to_numpy(dtype=object)
    if labels is not None and labels.size != n:
        raise ValueError(f"`units` must give one cluster per row: {labels.size} labels for {n} rows")
    boot: list[Any] = [None] * len(keys)
    if n_resamples:
        if ids is None and labels is None:
            raise ValueError("pair_stats needs the question ids to key the Poisson bootstrap's weights")
        sums = PoissonSums.of(_id_keys(ids if labels is None else labels, seed), cand - base, codes, len(keys),
                              n_resamples)
        boot = [type(sums)(sums.weight[g:g + 1], sums.terms[g:g + 1]) for g in range(len(keys))]
    rows, cells = [], []
    clusters: list[tuple[np.ndarray, ...]] | None = None
    if labels is not None:
        hashed = pd.util.hash_array(labels, categorize=False)
        complete = ~(np.isnan(base) | np.isnan(cand))
        clusters = [tuple(np.unique(hashed[(codes == g) & complete[:, j]]) for j in range(k))
                    for g in range(len(keys))]
    for g in range(len(keys)):
        mask = codes == g
        rows.append(int(mask.sum()))
        cells.append(tuple(PairCell.of(base[mask, j], cand[mask, j]) for j in range(k)))
    return _pair_merged(tuple(names), slices is not None, keys, rows, cells, boot, n_resamples, seed, clusters)


def _pair_merged(names: tuple[str, ...], grouped: bool, keys: Sequence[Hashable], rows: Sequence[int],
                 cells: Sequence[tuple[PairCell, ...]], boot: Sequence[Any], n_resamples: int, seed: int,
                 clusters: Sequence[tuple[np.ndarray, ...]] | None = None) -> PairStats:
    """PairStats with equal keys added together (keys kept in first-seen order; cluster sets united)."""
    at: dict[Hashable, int] = {}
    out_keys: list[Hashable] = []
    out_rows: list[int] = []
    out_cells: list[tuple[PairCell, ...]] = []
    out_boot: list[Any] = []
    out_clusters: list[tuple[np.ndarray, ...]] = []
    for i_key, (key, r, c, s) in enumerate(zip(keys, rows, cells, boot)):
        u = None if clusters is None else clusters[i_key]
        if key in at:
            i = at[key]
            out_rows[i] += r
            out_cells[i] = tuple(a + b for a, b in zip(out_cells[i], c))
            out_boot[i] = None if s is None else out_boot[i] + s
            if u is not None:
                out_clusters[i] = tuple(np.union1d(a, b) for a, b in zip(out_clusters[i], u))
        else:
            at[key] = len(out_keys)
            out_keys.append(key)
            out_rows.append(r)
            out_cells.append(tuple(c))
            out_boot.append(s)
            if u is not None:
                out_clusters.append(tuple(u))
    return PairStats(names, grouped, tuple(out_keys), tuple(out_rows), tuple(out_cells), tuple(out_boot),
                     n_resamples, seed, None if clusters is None else tuple(out_clusters))


def combine_pairs(*parts: PairStats) -> PairStats:
    """The paired statistics of the partitions together: exact, so any order or grouping gives the same bits.

    Examples
    --------
    >>> import numpy as np
    >>> b, c = np.array([[0.1], [0.2], [0.7]]), np.array([[0.3], [0.2], [0.4]])
    >>> whole = pair_stats(b, c, ["x"], ids=["q1", "q2", "q3"], n_resamples=5)
    >>> parts = [pair_stats(b[i:i + 1], c[i:i + 1], ["x"], ids=[f"q{i + 1}"], n_resamples=5) for i in (2, 0, 1)]
    >>> combined = combine_pairs(*parts)
    >>> combined.cells == whole.cells, bool((combined.boot[0].weight == whole.boot[0].weight).all())
    (True, True)
    """
    if not parts:
        raise ValueError("combine_pairs needs at least one partition's statistics")
    first = parts[0]
    for p in parts[1:]:
        if ((p.names, p.grouped, p.n_resamples, p.seed, p.clusters is None)
                != (first.names, first.grouped, first.n_resamples, first.seed, first.clusters is None)):
            raise ValueError(f"cannot combine paired statistics of metrics {list(p.names)} with {list(first.names)} "
                             "(or of other slices, resamples, seeds or clusters)")
    clusters = None if first.clusters is None else [u for p in parts for u in p.clusters or ()]
    return _pair_merged(first.names, first.grouped, [k for p in parts for k in p.keys],
                        [r for p in parts for r in p.rows], [c for p in parts for c in p.cells],
                        [s for p in parts for s in p.boot], first.n_resamples, first.seed, clusters)


def compare_rows(stats: PairStats, method: str, level: float = 0.95, n_permutations: int = 10_000,
                 slice_dtype: Any = None) -> list[Any]:
    """One typed row (``raglab.stats.results.ComparisonRow``) per metric and slice, as
    :func:`raglab.stats.compare` makes them, from combined paired statistics: ``method="score"``
    (Tango's interval, pass/fail metrics) or ``"poisson"`` (the Poisson bootstrap with the statistics'
    ``n_resamples`` and ``seed``)."""
    from raglab.stats.estimators import PAIRED, Settings, _poisson_block, _poisson_replicates
    from raglab.stats.intervals import _tango_bounds
    from raglab.stats.results import MCNEMAR_TEST, NO_TEST, ComparisonRow, TestKind
    from raglab.stats.tests import _mcnemar_p, _one_sided_mcnemar

    if method not in PAIRED_METHODS:
        raise ValueError(f"compare from partition statistics takes method in {list(PAIRED_METHODS)}, got {method!r}")
    if not sum(stats.rows):
        raise ValueError("compare needs at least one question (the scores are empty)")
    keys = list(stats.keys)
    if stats.grouped:
        codes, labels = _slice_codes(_key_series(keys, slice_dtype), len(keys))
        groups = [[i for i in range(len(keys))]] + [[i for i, c in enumerate(codes) if c == g]
                                                    for g in range(len(labels))]
        row_labels = [OVERALL, *labels]
    else:
        groups, row_labels = [list(range(len(keys)))], [OVERALL]
    k = len(stats.names)
    cells = [[_sum_cells(stats.cells[i][j] for i in members) for j in range(k)] for members in groups]
    n_rows = [sum(stats.rows[i] for i in members) for members in groups]
    n = np.array([[c.n for c in row] for row in cells])
    down = np.array([[c.down for c in row] for row in cells])
    up = np.array([[c.up for c in row] for row in cells])
    binary = [stats.total(j).n > 0 and stats.total(j).nonbinary == 0 for j in range(k)]
    settings = Settings(method=method, level=level, n_resamples=stats.n_resamples, seed=stats.seed,
                        n_permutations=n_permutations)
    clustered = stats.clusters is not None
    n_clusters: np.ndarray | None = None
    if clustered:
        n_clusters = np.array([[np.unique(np.concatenate([stats.clusters[i][j] for i in members])).size
                                for j in range(k)] for members in groups])
        if method == "score":
            raise ValueError("compare: method='score' is Tango's interval for pass/fail metrics without clusters; "
                             "with clusters use method='poisson' (the Poisson bootstrap keyed by the cluster)")
    if method == "score":
        others = [name for j, name in enumerate(stats.names) if not binary[j]]
        if others:
            raise ValueError(f"compare: method='score' {PAIRED['score'].refusal(others)}. "
                             "Use method='auto' to take the bootstrap for those.")
        low, high = _tango_bounds(down, up, n, level)
        low, high = np.where(n < 2, np.nan, low), np.where(n < 2, np.nan, high)
        p_decrease, p_increase = _one_sided_mcnemar(down, up)
        p_value = _mcnemar_p(down, up) if n_permutations else np.full(down.shape, np.nan)
        test, test_kind = (MCNEMAR_TEST, TestKind.EXACT) if n_permutations else (NO_TEST, TestKind.NONE)
        label, kind, n_resamples, seeds = PAIRED["score"].label, IntervalKind.SCORE, None, [None] * k
        tests, test_kinds = [test] * k, [test_kind] * k
    else:
        if stats.n_resamples < 1 or any(s is None for s in stats.boot):
            raise ValueError("compare: method='poisson' needs statistics made with n_resamples >= 1")
        stacked = [_sum_boot(stats.boot[i] for i in members) for members in groups[1:]] or [
            _sum_boot(stats.boot[i] for i in groups[0])]
        total = type(stacked[0])(np.concatenate([s.weight for s in stacked]),
                                 tuple(t for s in stacked for t in s.terms))
        replicates = _poisson_replicates(total, stats.grouped)
        usable = usable_cells(n if n_clusters is None else n_clusters, clustered)
        block = _poisson_block(list(range(k)), replicates, usable, binary, clustered, down, up, settings)
        low, high, p_value, p_decrease, p_increase = (block.low, block.high, block.p_value, block.p_decrease,
                                                      block.p_increase)
        label, kind, n_resamples, seeds = block.label, block.kind, block.n_resamples, list(block.seeds)
        tests, test_kinds = list(block.tests), list(block.test_kinds)
    out = []
    for j, name in enumerate(stats.names):
        for r, label_r in enumerate(row_labels):
            cell = cells[r][j]
            m = cell.n
            base = float(_fraction(cell.base) / m) if m else math.nan
            cand = float(_fraction(cell.cand) / m) if m else math.nan
            diff = float(_fraction(cell.sums) / m) if m else math.nan
            p = [float(x[r, j]) if m else math.nan for x in (p_value, p_decrease, p_increase)]
            out.append(ComparisonRow(
                metric=name, slice=label_r, n=m, n_dropped=n_rows[r] - m, n_changed=cell.changed, base=base,
                cand=cand, diff=diff, low=float(low[r, j]), high=float(high[r, j]), p_value=p[0], p_decrease=p[1],
                p_increase=p[2], skew=cell.skew(), method=label, level=level, n_resamples=n_resamples,
                seed=seeds[j], test=tests[j], n_permutations=None,
                n_clusters=None if n_clusters is None else int(n_clusters[r, j]), kind=kind,
                test_kind=test_kinds[j]))
    return out


def _sum_cells(cells: Iterable[PairCell]) -> PairCell:
    out = PAIR_EMPTY
    for c in cells:
        out = out + c
    return out


def _sum_boot(parts: Iterable[Any]) -> Any:
    items = list(parts)
    out = items[0]
    for s in items[1:]:
        out = out + s
    return out


def compare_table(stats: PairStats, method: str, level: float = 0.95, n_permutations: int = 10_000,
                  slice_dtype: Any = None) -> pd.DataFrame:
    """The comparison table (columns ``raglab.stats.results.COMPARISON``) from combined paired statistics.

    Examples
    --------
    >>> import numpy as np
    >>> b = np.array([[1.0], [0.0], [1.0], [1.0]] * 10)
    >>> c = np.array([[1.0], [1.0], [1.0], [0.0]] * 10)
    >>> t = compare_table(pair_stats(b, c, ["hit@5"]), "score")
    >>> t[["metric", "n", "n_changed", "diff", "method"]].values.tolist()
    [['hit@5', 40, 20, 0.0, 'paired score (Tango)']]
    """
    from raglab.stats.results import COMPARISON

    return frame_of(compare_rows(stats, method, level, n_permutations, slice_dtype), COMPARISON)
