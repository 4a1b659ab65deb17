"""The resampling engine under every interval and test of :mod:`raglab.stats` (private).

What is here, bottom to top:

* input checks shared by the statistics: scores to a float matrix (``_as_vector``, ``_as_scores``),
  slice and cluster labels to integer codes (``_slice_codes``, ``_unit_codes``), the seed, pairing;
* ``_Resampler``: bootstrap and sign-flip distributions of per-cell means, drawn over the distinct
  question (or cluster) profiles with ``_Atoms`` (rows with multiplicities); how and why the draw is
  exact is told in the :mod:`raglab.stats` overview, "How the bootstrap is computed";
* the bounds: percentile and BCa quantiles (``_bootstrap_bounds``), the expanded percentile level
  (``_expanded_levels``), and ``_bootstrap_cells``, which every bootstrap interval goes through.

The public functions built on it live in :mod:`raglab.stats.intervals`, :mod:`raglab.stats.tests`
and :mod:`raglab.stats.tables`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import special as _special
from scipy import stats as _sps
from threadpoolctl import threadpool_limits

from raglab._validation import warn

# --------------------------------------------------------------------------------------------------
# Input checks shared by the statistics
# --------------------------------------------------------------------------------------------------

OVERALL = "overall"  # the label of the row over all questions in every table
_MISSING_SLICE = "(missing)"  # the label of questions whose slice value is missing
_BOOT_METHODS = ("percentile", "bca")


def _resolve_seed(seed: int | None) -> int:
    """The seed to use and report; None draws a fresh one (reported, so the run can be repeated)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % 2**32)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(
            f"`seed` must be a non-negative integer (or None for a fresh seed, which is then reported), got {seed!r}"
        )
    return int(seed)


def _as_vector(values: Any, name: str) -> np.ndarray:
    """A 1-D float array (NaN for missing) from a list, array or Series of numbers."""
    try:
        if isinstance(values, pd.Series):
            array = values.to_numpy(dtype=float, na_value=np.nan)
        else:
            array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        kind = getattr(values, "dtype", type(values).__name__)
        raise TypeError(
            f"`{name}` must hold numbers (one score per question, NaN or None for missing); got {kind}. "
            "Convert the column first, e.g. pd.to_numeric(df[col])."
        ) from None
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional (one score per question), got shape {array.shape}")
    bad = np.flatnonzero(np.isinf(array))
    if bad.size:
        raise ValueError(
            f"`{name}` holds infinite values at positions {bad[:5].tolist()}; scores must be finite (NaN for missing)."
        )
    return array


def _as_scores(scores: Any, name: str) -> tuple[list[str], np.ndarray]:
    """Metric names and an (n, metrics) float matrix from a dict, DataFrame, Series or 1-D array."""
    if isinstance(scores, pd.DataFrame):
        items = [(str(column), scores[column]) for column in scores.columns]
    elif isinstance(scores, Mapping):
        items = [(str(key), value) for key, value in scores.items()]
    elif isinstance(scores, pd.Series):
        items = [("score" if scores.name is None else str(scores.name), scores)]
    else:
        if np.ndim(scores) != 1:
            raise ValueError(
                f"`{name}` must be one score per question (1-D) or a dict {{metric: scores}}, "
                f"got an array of shape {np.shape(scores)}"
            )
        items = [("score", scores)]
    if not items:
        raise ValueError(f"`{name}` holds no score columns")
    names = [key for key, _ in items]
    if len(set(names)) != len(names):
        raise ValueError(f"`{name}` names a metric twice: {names}")
    columns = [_as_vector(value, f"{name}[{key!r}]" if len(items) > 1 else name) for key, value in items]
    lengths = {len(column) for column in columns}
    if len(lengths) > 1:
        raise ValueError(f"every metric in `{name}` needs one score per question; lengths differ: {sorted(lengths)}")
    return names, np.column_stack(columns) if columns[0].size else np.empty((0, len(columns)))


def _slice_codes(slices: Any, n: int) -> tuple[np.ndarray, list[str]]:
    """Integer slice codes (0..G-1, labels sorted) and the labels; no slices -> zeros and []."""
    if slices is None:
        return np.zeros(n, dtype=np.intp), []
    series = slices.reset_index(drop=True) if isinstance(slices, pd.Series) else pd.Series(list(slices), dtype=object)
    if len(series) != n:
        raise ValueError(f"`slices` must give one label per question: {len(series)} labels for {n} questions")
    try:
        codes, uniques = pd.factorize(series, sort=True)
    except TypeError:  # labels of mixed types do not sort: sort their text
        codes, uniques = pd.factorize(series.astype(str).where(series.notna()), sort=True)
    labels = [str(u) for u in uniques]
    codes = np.asarray(codes, dtype=np.intp)
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels.append(_MISSING_SLICE)
    if len(set(labels)) != len(labels):
        raise ValueError(f"slice labels must be distinct as text; {labels} repeat (e.g. 1 and '1')")
    if OVERALL in labels:
        raise ValueError(
            f"a slice is labelled {OVERALL!r}, which names the row over all questions; rename that slice value"
        )
    return codes, labels


def _unit_codes(units: Any, n: int) -> np.ndarray | None:
    if units is None:
        return None
    series = units.reset_index(drop=True) if isinstance(units, pd.Series) else pd.Series(list(units), dtype=object)
    if len(series) != n:
        raise ValueError(f"`units` must give one cluster label per question: {len(series)} labels for {n} questions")
    missing = np.flatnonzero(series.isna().to_numpy())
    if missing.size:
        raise ValueError(
            f"`units` has missing cluster labels at positions {missing[:5].tolist()}; every question needs one "
            "(use the question id for questions that form a cluster of their own)"
        )
    codes, _ = pd.factorize(series, sort=False)
    return np.asarray(codes, dtype=np.intp)


def _is_binary(values: np.ndarray) -> bool:
    present = values[~np.isnan(values)]
    return bool(present.size) and bool(np.isin(present, (0.0, 1.0)).all())


# ---- per-row counts and sums (row order cannot change a bit of them) ----------------------------


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


# --------------------------------------------------------------------------------------------------
# The resampling engine
# --------------------------------------------------------------------------------------------------

_HEAVY = 8  # a profile shared by this many units is one multinomial cell; rarer ones are drawn unit by unit
#: Below this many clusters a cluster-bootstrap interval is not reported (and a gate row is review).
MIN_CLUSTERS = 10


def usable_cells(units: Any, clustered: bool) -> np.ndarray:
    """Which cells have enough resampling units for an interval: 2 questions, or ``MIN_CLUSTERS`` clusters.

    One question (or cluster) says nothing about sampling error, and a cluster bootstrap over a handful
    of clusters gives intervals far too narrow: those cells get none, and a warning names the counts.

    Examples
    --------
    >>> usable_cells([1, 2, 30], clustered=False).tolist()
    [False, True, True]
    """
    units = np.asarray(units)
    usable = units >= (MIN_CLUSTERS if clustered else 2)
    short = (units >= 2) & ~usable
    if clustered and short.any():
        counts = sorted({int(c) for c in units[short]})
        warn(f"units=: some rows rest on only {counts} clusters; a cluster bootstrap needs at least "
             f"{MIN_CLUSTERS} to say anything about sampling error, so those rows get no interval (a gate "
             "sends them to review). Use finer clusters, fewer slices, or no units=.", UserWarning)
    return usable
_CHUNK_BYTES = 32 * 2**20  # memory for one chunk of resampled counts


def _sorted_codes(column: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of a column's values numbered in sorted order (NaN last; -0.0 equals 0.0), and their count."""
    codes, uniques = pd.factorize(column + 0.0, use_na_sentinel=True)  # hashing: O(n)
    rank = np.empty(len(uniques) + 1, dtype=np.int64)
    rank[np.argsort(uniques, kind="stable")] = np.arange(len(uniques))
    rank[-1] = len(uniques)  # NaN (code -1) after every number
    levels = len(uniques) + int((codes < 0).any())
    return rank[codes], levels


def _dense_ranks(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace integer keys by their rank among the distinct keys (0, 1, ...), and their count."""
    codes, uniques = pd.factorize(ids)
    rank = np.empty(len(uniques), dtype=np.int64)
    rank[np.argsort(uniques, kind="stable")] = np.arange(len(uniques))
    return rank[codes], len(uniques)


def _representatives(ids: np.ndarray, k: int) -> np.ndarray:
    """A row index for each of the ``k`` groups (rows of one group are identical, so any will do)."""
    first = np.empty(k, dtype=np.intp)
    first[ids] = np.arange(len(ids))
    return first


def _group_rows(matrix: np.ndarray) -> tuple[np.ndarray, int]:
    """Number the distinct rows of a float matrix in lexicographic order (NaN equals NaN, -0.0 equals 0.0)."""
    ids = np.zeros(matrix.shape[0], dtype=np.int64)
    levels = 1
    for column in matrix.T:
        codes, count = _sorted_codes(column)
        if levels * count >= 2**62:  # keep the combined key in int64
            ids, levels = _dense_ranks(ids)
        ids = ids * count + codes
        levels *= count
    return _dense_ranks(ids)


def _one_blas_thread(work: int) -> Any:
    """Limit BLAS to one thread for large resampling jobs.

    The products here are thin (a few dozen columns): BLAS threads cost more than they give, and
    several times more on a busy machine. Small jobs skip the (millisecond) switch.
    """
    return threadpool_limits(1, user_api="blas") if work > 2**18 else contextlib.nullcontext()


def _block_spans(block: np.ndarray, n_blocks: int, offset: int) -> list[tuple[int, int, int]]:
    """``_Atoms.blocks`` for rows sorted by block code: (start, end, first output column) per block,
    block g writing from column ``g * offset``. Shared by the bootstrap and the sign-flip layouts."""
    bounds = np.searchsorted(block, np.arange(n_blocks + 1))
    return [(int(bounds[g]), int(bounds[g + 1]), g * offset) for g in range(n_blocks)]


@dataclass
class _Atoms:
    """Rows of contributions (``values``) with multiplicities, in blocks that add into output columns."""

    values: np.ndarray  # (A, width)
    weight: np.ndarray  # (A,) multiplicities (1.0 for units drawn one by one)
    blocks: list[tuple[int, int, int]]  # (start, end, first output column)

    def __post_init__(self) -> None:
        # Identical columns (e.g. the "has a value" indicators of metrics without NaN) are multiplied once.
        keep: list[int] = []
        inverse = np.empty(self.values.shape[1], dtype=np.intp)
        for j in range(self.values.shape[1]):
            column = self.values[:, j]
            match = next((i for i, k in enumerate(keep) if np.array_equal(self.values[:, k], column)), None)
            if match is None:
                match = len(keep)
                keep.append(j)
            inverse[j] = match
        self._distinct = np.ascontiguousarray(self.values[:, keep])
        self._inverse = inverse
        # Few rows in several blocks: one product with a block-diagonal matrix beats one per block.
        self._stacked = None
        n_distinct, width = len(keep), self.values.shape[1]
        if len(self.blocks) > 1 and self.values.shape[0] * len(self.blocks) * n_distinct <= 2**20:
            stacked = np.zeros((self.values.shape[0], len(self.blocks) * n_distinct))
            out_index, src_index = [], []
            for b, (start, end, offset) in enumerate(self.blocks):
                stacked[start:end, b * n_distinct : (b + 1) * n_distinct] = self._distinct[start:end]
                out_index.extend(range(offset, offset + width))
                src_index.extend(b * n_distinct + inverse)
            self._stacked = stacked
            self._out_index, self._src_index = np.asarray(out_index), np.asarray(src_index)

    @property
    def size(self) -> int:
        return len(self.weight)

    def apply(self, weights: np.ndarray, out: np.ndarray) -> None:
        """``out[:, block columns] += weights[:, block rows] @ values[block rows]`` for every block."""
        if self._stacked is not None:
            out[:, self._out_index] += np.dot(weights, self._stacked)[:, self._src_index]
            return
        width = self.values.shape[1]
        for start, end, offset in self.blocks:
            if end > start:
                out[:, offset : offset + width] += np.dot(weights[:, start:end], self._distinct[start:end])[:, self._inverse]


class _Resampler:
    """Bootstrap and sign-flip distributions of per-cell means for a matrix of per-question values.

    ``values`` is (n, m) with NaN where a question has no value for a metric; ``codes`` gives each
    question's slice (0..G-1). Output cells are (row, metric), rows being ``overall`` followed by
    the G slices when ``grouped`` (else the single overall row). With ``units`` (cluster codes per
    question) clusters are the resampled units.
    """

    def __init__(
        self, values: np.ndarray, codes: np.ndarray, n_groups: int, *, units: np.ndarray | None, grouped: bool
    ) -> None:
        n, m = values.shape
        self.m, self.G, self.grouped = m, n_groups, grouped
        self.R = n_groups + 1 if grouped else 1
        self.clustered = units is not None
        self.dense = False  # True: a unit's profile spans every slice (clusters that cross slices)
        if units is None:
            # A question's profile: its slice, then its value per metric (NaN = no value).
            ids, k = _group_rows(np.column_stack([codes.astype(float), values]))
            first = _representatives(ids, k)
            rep = values[first]
            profiles = np.concatenate([np.nan_to_num(rep, nan=0.0) + 0.0, (~np.isnan(rep)).astype(float)], axis=1)
            block = codes[first]
            self.n_units = n
        else:
            # A cluster's profile: the sum and the count of its values per metric (per slice when the
            # cluster's questions fall in several slices).
            order = np.lexsort([*values.T[::-1], codes, units])  # canonical order: float sums repeat exactly
            values, codes, units = values[order], codes[order], units[order]
            n_units = int(units.max()) + 1
            valid = ~np.isnan(values)
            filled = np.where(valid, values, 0.0)
            unit_slice = np.full(n_units, -1)
            unit_slice[units] = codes
            nested = bool((unit_slice[units] == codes).all())
            self.dense = not nested
            cells = n_units if nested else n_units * n_groups
            if cells * 2 * m * 8 > 2**31:
                raise ValueError(
                    f"units=: {n_units} clusters that cross {n_groups} slices need {cells * 2 * m * 8 / 2**30:.1f} GB; "
                    "use clusters nested in the slices, fewer slices or fewer metrics per call"
                )
            cell = units if nested else units * n_groups + codes
            per_unit = np.zeros((cells, 2, m))
            for j in range(m):
                per_unit[:, 0, j] = np.bincount(cell, weights=filled[:, j], minlength=cells)
                per_unit[:, 1, j] = np.bincount(cell, weights=valid[:, j], minlength=cells)
            per_unit = per_unit.reshape(n_units, -1) + 0.0
            key = np.column_stack([unit_slice.astype(float), per_unit]) if nested else per_unit
            ids, k = _group_rows(key)
            first = _representatives(ids, k)
            profiles = per_unit[first]
            block = unit_slice[first] if nested else np.zeros(k, dtype=np.intp)
            self.n_units = n_units
        self._offset, self._n_blocks = (0, 1) if self.dense else (2 * m, n_groups)
        weight = np.bincount(ids, minlength=k).astype(float)
        self.profiles, self.profile_weight, self.profile_block = profiles, weight, block
        self.heavy, self.light = self._split(profiles, weight, block)
        full = _Atoms(profiles, weight, self._blocks(block))
        sums, counts = self._totals(self._accumulate(full, weight[None, :]))
        self.sums, self.counts = sums[0], counts[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.theta = self.sums / self.counts
        self.units_per_cell = self._units_per_cell()

    def _units_per_cell(self) -> np.ndarray:
        """(R, m): how many resampling units (questions or clusters) have a value in each cell."""
        m, weight = self.m, self.profile_weight
        if self.dense:
            present = self.profiles.reshape(len(weight), self.G, 2, m)[:, :, 1, :] > 0
            per_group = np.einsum("k,kgj->gj", weight, present.astype(float))
            overall = weight @ present.any(axis=1).astype(float)
        else:
            present = (self.profiles[:, m:] > 0).astype(float) * weight[:, None]
            per_group = np.stack([present[self.profile_block == g].sum(axis=0) for g in range(self.G)])
            overall = per_group.sum(axis=0)
        return np.vstack([overall, per_group]) if self.grouped else overall[None, :]

    # ---- layout ----------------------------------------------------------------------------------
    def _blocks(self, block: np.ndarray) -> list[tuple[int, int, int]]:
        return _block_spans(block, self._n_blocks, self._offset)

    def _split(self, values: np.ndarray, weight: np.ndarray, block: np.ndarray) -> tuple[_Atoms, _Atoms]:
        """Heavy profiles stay one row with their multiplicity; light ones become one row per unit."""
        heavy = weight >= _HEAVY
        counts = weight[~heavy].astype(np.int64)
        light_values = np.repeat(values[~heavy], counts, axis=0)
        light_block = np.repeat(block[~heavy], counts)
        return (
            _Atoms(values[heavy], weight[heavy], self._blocks(block[heavy])),
            _Atoms(light_values, np.ones(len(light_block)), self._blocks(light_block)),
        )

    def _accumulate(self, atoms: _Atoms, weights: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.zeros((weights.shape[0], self.G * 2 * self.m))
        atoms.apply(weights, out)
        return out

    def _totals(self, flat: np.ndarray, width: int | None = None) -> tuple[np.ndarray, ...]:
        """(c, G*parts*width) accumulations -> per part (c, R, width), with the overall row first."""
        width = self.m if width is None else width
        parts = flat.shape[1] // (self.G * width)
        cube = flat.reshape(flat.shape[0], self.G, parts, width)
        out = []
        for p in range(parts):
            part = cube[:, :, p, :]
            if self.grouped:
                full = np.empty((flat.shape[0], self.R, width))
                full[:, 1:] = part
                np.sum(full[:, 1:], axis=1, out=full[:, 0])
                part = full
            out.append(part)
        return tuple(out)

    # ---- bootstrap -------------------------------------------------------------------------------
    def bootstrap(self, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        """(n_resamples, R, m) resampled means (NaN where a resample drew no value for a cell)."""
        with _one_blas_thread(n_resamples * (self.heavy.size + self.light.size)):
            return self._bootstrap(n_resamples, rng)

    def _bootstrap(self, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
        heavy, light, n = self.heavy, self.light, self.n_units
        h, l_ = heavy.size, light.size
        chunk = int(max(1, min(n_resamples, _CHUNK_BYTES // (8 * max(h + l_, self.G * 2 * self.m, 1)))))
        pvals = np.append(heavy.weight, float(l_)) / n if h else None
        out = np.empty((n_resamples, self.R, self.m))
        buffer = np.empty((chunk, l_)) if l_ > 4096 else None
        for start in range(0, n_resamples, chunk):
            c = min(chunk, n_resamples - start)
            acc = np.zeros((c, self.G * 2 * self.m))
            if h:
                counts = rng.multinomial(n, pvals, size=c)
                heavy.apply(counts[:, :h].astype(float), acc)
                drawn = counts[:, h]
            else:
                drawn = np.full(c, n, dtype=np.int64)
            if l_:
                draws = rng.integers(0, l_, size=int(drawn.sum()), dtype=np.uint32 if l_ < 2**32 else np.int64)
                if buffer is None:  # small: count all resamples of the chunk at once
                    if h:
                        flat = np.repeat(np.arange(c, dtype=np.int64) * l_, drawn) + draws
                    else:  # every resample draws all n units from the light rows
                        flat = (draws.reshape(c, n) + np.arange(c, dtype=np.int64)[:, None] * l_).reshape(-1)
                    weights = np.bincount(flat, minlength=c * l_).reshape(c, l_).astype(float)
                else:  # large: one resample at a time keeps the counts in cache
                    weights = buffer[:c]
                    ends = np.cumsum(drawn)
                    for r in range(c):
                        weights[r] = np.bincount(draws[ends[r] - drawn[r] : ends[r]], minlength=l_)
                light.apply(weights, acc)
            sums, counts_ = self._totals(acc)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start : start + c] = sums / counts_
        return out

    def acceleration(self) -> np.ndarray:
        """BCa acceleration per cell from the leave-one-unit-out jackknife (as scipy.stats.bootstrap)."""
        values, weight, m, n = self.profiles, self.profile_weight, self.m, self.n_units
        accel = np.full((self.R, m), np.nan)
        cube = values.reshape(len(weight), self.G, 2, m) if self.dense else None
        for r in range(self.R):
            g = r - 1 if (self.grouped and r > 0) else None
            if self.dense:
                s = cube[:, :, 0, :].sum(axis=1) if g is None else cube[:, g, 0, :]
                v = cube[:, :, 1, :].sum(axis=1) if g is None else cube[:, g, 1, :]
            else:
                mask = np.ones(len(weight)) if g is None else (self.profile_block == g).astype(float)
                s, v = values[:, :m] * mask[:, None], values[:, m:] * mask[:, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                left_out = (self.sums[r] - s) / (self.counts[r] - v)
                dot = weight @ left_out / n
                u = (n - 1) * (dot - left_out)
                accel[r] = (weight @ u**3) / (6.0 * (weight @ u**2) ** 1.5)
        return accel

    # ---- sign-flip permutations ------------------------------------------------------------------
    def sign_flip(self, columns: Sequence[int], n_permutations: int, rng: np.random.Generator) -> np.ndarray:
        """Sign-flip p-values (3, R, len(columns)) for ``mean == 0`` per cell: two-sided, then the
        one-sided p-values for a decrease (flipped totals at or below the observed one) and an increase."""
        with _one_blas_thread(n_permutations * len(self.profile_weight)):
            return self._sign_flip(columns, n_permutations, rng)

    def _sign_flip(self, columns: Sequence[int], n_permutations: int, rng: np.random.Generator) -> np.ndarray:
        cols = np.asarray(columns, dtype=np.intp)
        k, width = len(self.profile_weight), len(cols)
        if self.dense:
            sums = self.profiles.reshape(k, self.G, 2, self.m)[:, :, 0, :][:, :, cols].reshape(k, self.G * width)
            offset, n_blocks = 0, 1
        else:
            sums = self.profiles[:, cols]
            offset, n_blocks = width, self.G
        nonzero = (sums != 0).any(axis=1)
        weight, block = self.profile_weight, self.profile_block

        heavy_mask = nonzero & (weight >= _HEAVY)
        light_mask = nonzero & (weight < _HEAVY)
        # The same block split as the bootstrap (_block_spans), at this call's output width.
        heavy = _Atoms(sums[heavy_mask], weight[heavy_mask], _block_spans(block[heavy_mask], n_blocks, offset))
        reps = weight[light_mask].astype(np.int64)
        light = _Atoms(np.repeat(sums[light_mask], reps, axis=0), np.ones(int(reps.sum())),
                       _block_spans(np.repeat(block[light_mask], reps), n_blocks, offset))
        columns_out = self.G * width

        def totals(acc: np.ndarray) -> np.ndarray:
            return self._totals(acc, width)[0]

        observed = np.zeros((1, columns_out))
        heavy.apply(heavy.weight[None, :], observed)
        light.apply(light.weight[None, :], observed)
        scale = np.zeros((1, columns_out))
        _Atoms(np.abs(heavy.values), heavy.weight, heavy.blocks).apply(heavy.weight[None, :], scale)
        _Atoms(np.abs(light.values), light.weight, light.blocks).apply(light.weight[None, :], scale)
        signed, tol = totals(observed)[0], 1e-9 * totals(scale)[0]
        observed_t = np.abs(signed)
        exceed = np.zeros((3, self.R, width))  # two-sided, at or below, at or above the observed total
        h, l_ = heavy.size, light.size
        if h + l_ == 0:  # every difference is zero: nothing can flip
            return np.ones((3, self.R, width))
        chunk = int(max(1, min(n_permutations, _CHUNK_BYTES // (8 * max(h + l_, columns_out)))))
        heavy_n = heavy.weight.astype(np.int64)
        light_total = np.zeros((1, columns_out))
        light.apply(np.ones((1, l_)), light_total)
        for start in range(0, n_permutations, chunk):
            c = min(chunk, n_permutations - start)
            acc = np.zeros((c, columns_out))
            if h:  # a profile shared by w units: Binomial(w, 1/2) of them flip
                heavy.apply(heavy.weight - 2.0 * rng.binomial(heavy_n, 0.5, size=(c, h)), acc)
            if l_:  # one fair bit per unit; flipping the units with bit 1 subtracts twice their sum
                bits = np.unpackbits(rng.integers(0, 256, size=(c, (l_ + 7) // 8), dtype=np.uint8), axis=1, count=l_)
                flipped = np.zeros((c, columns_out))
                light.apply(bits.astype(float), flipped)
                acc += light_total - 2.0 * flipped
            flipped_totals = totals(acc)
            exceed[0] += (np.abs(flipped_totals) >= observed_t - tol).sum(axis=0)
            exceed[1] += (flipped_totals <= signed + tol).sum(axis=0)
            exceed[2] += (flipped_totals >= signed - tol).sum(axis=0)
        return (1.0 + exceed) / (n_permutations + 1.0)


def _sorted_quantile(ordered: np.ndarray, count: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per column, the ``q`` quantile of the first ``count`` sorted values (numpy's "linear" method)."""
    cols = np.arange(ordered.shape[1])
    position = q * (count - 1)
    below = np.clip(np.floor(position).astype(np.intp), 0, np.maximum(count - 1, 0))
    above = np.minimum(below + 1, np.maximum(count - 1, 0))
    t = position - below
    a, b = ordered[below, cols], ordered[above, cols]
    diff = b - a
    out = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)  # as numpy's _lerp
    return np.where(a == b, a, out)


def _bootstrap_bounds(
    boot: np.ndarray,
    theta: np.ndarray,
    level: float,
    method: str,
    accel: np.ndarray | None,
    constant: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile or BCa bounds per cell from a (B, R, m) bootstrap distribution (NaN resamples skipped).

    ``level`` is one confidence level or one per cell (the expanded percentile interval)."""
    flat = boot.reshape(boot.shape[0], -1)
    estimate = theta.reshape(-1)
    alpha = (1.0 - np.broadcast_to(np.asarray(level, dtype=float), theta.shape).reshape(-1)) / 2.0
    count = np.count_nonzero(~np.isnan(flat), axis=0)
    ordered = np.sort(flat, axis=0)  # NaN sort last
    usable = (count > 0) & ~np.isnan(estimate)
    top = ordered[np.maximum(count - 1, 0), np.arange(flat.shape[1])]
    flat_width = usable & (constant.reshape(-1) | (ordered[0] == top))
    if method == "percentile":
        q_low, q_high = alpha, 1.0 - alpha
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (np.count_nonzero(flat < estimate, axis=0) + np.count_nonzero(flat <= estimate, axis=0)) / (
                2.0 * count
            )
            z0, a, z = _special.ndtri(share), accel.reshape(-1), _special.ndtri(alpha)
            q_low = _special.ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
            q_high = _special.ndtr(z0 + (z0 - z) / (1.0 - a * (z0 - z)))
    failed = usable & ~flat_width & ~(np.isfinite(q_low) & np.isfinite(q_high))
    good = usable & ~flat_width & ~failed
    low = np.full(estimate.shape, np.nan)
    high = np.full(estimate.shape, np.nan)
    if good.any():
        low[good] = _sorted_quantile(ordered[:, good], count[good], q_low[good])
        high[good] = _sorted_quantile(ordered[:, good], count[good], q_high[good])
    low[flat_width] = high[flat_width] = estimate[flat_width]
    if failed.any():
        warn(
            f"the BCa interval cannot be computed for {int(failed.sum())} cell(s) (a degenerate bootstrap "
            "distribution or jackknife); their bounds are NaN. Use method='percentile' for them.",
            RuntimeWarning,
        )
    return low.reshape(theta.shape), high.reshape(theta.shape)


def _cell_extremes(
    values: np.ndarray, codes: np.ndarray, n_groups: int, grouped: bool, engine: _Resampler | None = None
) -> np.ndarray:
    """True per (row, metric) cell where every non-missing value is the same (a zero-width interval)."""
    if engine is not None and not engine.clustered:  # from the distinct question profiles: cheap
        m = engine.m
        sums, valid = engine.profiles[:, :m], engine.profiles[:, m:] > 0
        lo, hi = np.where(valid, sums, np.inf), np.where(valid, sums, -np.inf)
        rows = [lo.min(axis=0, initial=np.inf) == hi.max(axis=0, initial=-np.inf)]
        for g in range(n_groups if grouped else 0):
            mask = engine.profile_block == g
            rows.append(lo[mask].min(axis=0, initial=np.inf) == hi[mask].max(axis=0, initial=-np.inf))
        return np.vstack(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        rows = [np.nanmin(values, axis=0) == np.nanmax(values, axis=0)]
    if grouped:
        by = pd.DataFrame(values).groupby(codes)
        glo = by.min().reindex(range(n_groups)).to_numpy()
        ghi = by.max().reindex(range(n_groups)).to_numpy()
        rows.extend(glo == ghi)
    return np.vstack(rows)


def _expanded_levels(units: np.ndarray, level: float) -> np.ndarray:
    """Per cell, the level of the expanded percentile interval for ``units`` questions or clusters."""
    n = np.asarray(units, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = _sps.t.ppf(0.5 + level / 2.0, np.maximum(n - 1, 1))
        z = np.sqrt(n / np.maximum(n - 1, 1)) * t
    return np.where(n >= 2, 2.0 * _special.ndtr(z) - 1.0, level)


def _boot_label(method: str, *, paired: bool, clustered: bool) -> str:
    kind = "cluster bootstrap" if clustered else "bootstrap"
    return f"{'paired ' if paired else ''}{kind} ({method})"


def _bootstrap_cells(
    values: np.ndarray,
    codes: np.ndarray,
    n_groups: int,
    *,
    grouped: bool,
    units: np.ndarray | None,
    level: float,
    method: str,
    n_resamples: int,
    seed: int,
    expand: bool = False,
) -> tuple[_Resampler, np.ndarray, np.ndarray, np.ndarray]:
    """Resampler, bootstrap distribution and bounds for every (row, metric) cell of ``values``.

    ``expand=True`` gives the expanded percentile interval (Hesterberg 2015): the percentile
    interval at the level whose normal quantile is ``sqrt(n / (n - 1)) * t(n - 1)``, ``n`` being the
    cell's questions (or clusters). The plain percentile interval is too narrow at small n (it
    uses the plug-in variance and normal tails); the expansion corrects both and vanishes as n grows.
    """
    cells = (n_groups + 1 if grouped else 1) * values.shape[1]
    if 16 * n_resamples * cells > 2**31:
        raise ValueError(
            f"{cells} metric x slice cells x {n_resamples} resamples need {16 * n_resamples * cells / 2**30:.1f} GB "
            "for the bootstrap distributions; slice by a column with fewer values, compare fewer metrics per "
            "call or lower n_resamples"
        )
    engine = _Resampler(values, codes, n_groups, units=units, grouped=grouped)
    boot = engine.bootstrap(n_resamples, np.random.default_rng(seed))
    accel = engine.acceleration() if method == "bca" else None
    constant = _cell_extremes(values, codes, n_groups, grouped, engine)
    levels = _expanded_levels(engine.units_per_cell, level) if expand else level
    low, high = _bootstrap_bounds(boot, engine.theta, levels, method, accel, constant)
    too_few = ~usable_cells(engine.units_per_cell, engine.clustered)
    low[too_few] = high[too_few] = np.nan
    return engine, boot, low, high


def _drop_missing_pairs(base: np.ndarray, cand: np.ndarray, units: Any, what: str) -> tuple[np.ndarray, ...]:
    keep = ~(np.isnan(base) | np.isnan(cand))
    if not keep.all():
        warn(
            f"{what}: dropped {int((~keep).sum())} of {len(keep)} pair(s) with a missing score on either side; "
            f"{int(keep.sum())} pairs remain.",
            UserWarning,
        )
    if units is not None:
        units = np.asarray(list(units), dtype=object)
        if len(units) != len(keep):
            raise ValueError(f"`units` must give one cluster label per question: {len(units)} labels for {len(keep)} pairs")
        units = units[keep]
    return base[keep], cand[keep], units


def _complete_pairs(
    base: Any, cand: Any, units: Any, what: str, *, allow_empty: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The paired score vectors without pairs missing a score (dropped with a warning), and their units."""
    b, c = _paired_vectors(base, cand)
    b, c, units = _drop_missing_pairs(b, c, units, what)
    if b.size == 0 and not allow_empty:
        raise ValueError(f"{what} needs at least one pair with scores on both sides")
    return b, c, units


def _paired_vectors(base: Any, cand: Any) -> tuple[np.ndarray, np.ndarray]:
    b, c = _as_vector(base, "base"), _as_vector(cand, "cand")
    if len(b) != len(c):
        raise ValueError(
            f"`base` and `cand` must score the same questions in the same order: {len(b)} vs {len(c)} scores. "
            "Pair runs by question id with df.rag.compare(...)."
        )
    return b, c
