"""Intervals on one run, paired comparisons between runs, and the release gate.

Every interval states its method, level, count and (for resampling) the number of resamples and
the seed; see :class:`raglab.stats.Interval`.

The pieces
----------
* :func:`proportion_interval`, :func:`mean_interval`: one run, one number.
* :func:`paired_bootstrap`: the interval on ``mean(cand - base)`` over questions answered by both.
* :func:`mcnemar`, :func:`sign_flip_test`, :func:`holm`: paired tests beside the intervals.
* :func:`summary`, :func:`compare`: tidy tables, one row per metric x slice (``overall`` first).
* :func:`gate`: :func:`compare` plus a non-inferiority decision per row, returned as a
  :class:`GateResult` that writes a JSON decision log.

How the bootstrap is computed
-----------------------------
Resampling ``n`` questions with replacement only matters through how many times each *distinct*
question profile is drawn, where a profile is the question's slice and its per-question differences
(one per metric). Profiles shared by many questions (pass/fail metrics take only the differences
-1, 0 and 1; most questions do not change at all) are drawn as one multinomial over the distinct
profiles; the remaining questions are drawn one by one, and the count of draws that fall among them
comes from the same multinomial. This is the *same distribution* as resampling rows, at a cost of
O(resamples x distinct profiles) instead of O(resamples x questions), in chunks of bounded memory.
Every metric and every slice of one call is computed from the same resampled counts, so their
intervals are jointly consistent (they describe the same resampled question sets). A slice's mean
in a resample is the mean over the slice's questions that were drawn (a domain estimate), so slice
sizes vary between resamples as they would between eval sets drawn from the same population.
With ``units=`` whole clusters (all questions of a document or conversation) are resampled instead.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special as _special
from scipy import stats as _sps
from threadpoolctl import threadpool_limits

from raglab._interval import Interval
from raglab._registry import metric_info
from raglab._results import DECISION_COLOURS, frame_to_html
from raglab._validation import check_int, check_level, check_option

__all__ = [
    "DECISIONS",
    "OVERALL",
    "GATE_RULE",
    "MIN_QUESTIONS",
    "GateResult",
    "Interval",
    "TestResult",
    "compare",
    "gate",
    "holm",
    "mcnemar",
    "mean_interval",
    "paired_bootstrap",
    "paired_proportion_interval",
    "proportion_interval",
    "sign_flip_test",
    "summary",
]

_PROPORTION_METHODS = ("wilson", "normal", "exact")
_SCORE_LABEL = "paired score (Tango)"


def proportion_interval(successes: int, n: int, ci: float = 0.95, method: str = "wilson") -> Interval:
    """Confidence interval for a pass rate ``successes / n``.

    Parameters
    ----------
    successes, n : int
        Number of passes and of questions (``0 <= successes <= n``, ``n > 0``).
    ci : float
        Confidence level.
    method : {"wilson", "normal", "exact"}
        ``"wilson"`` (score interval, the default: good coverage at small n and near 0 or 1),
        ``"normal"`` (Wald, ``p +- z * sqrt(p(1-p)/n)``, clipped to [0, 1]) or ``"exact"``
        (Clopper-Pearson, conservative).

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method``, ``level`` and ``n``.

    Examples
    --------
    >>> from raglab.stats import proportion_interval
    >>> iv = proportion_interval(210, 300)      # p = 0.7, n = 300
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.7, 0.646, 0.749)
    """
    check_option("method", method, _PROPORTION_METHODS)
    level = check_level(ci)
    if int(n) != n or n <= 0:
        raise ValueError(f"`n` must be a positive integer, got {n!r}")
    if int(successes) != successes or not 0 <= successes <= n:
        raise ValueError(f"`successes` must be an integer between 0 and n={n}, got {successes!r}")
    n = int(n)
    x = int(successes)
    p = x / n
    z = float(_sps.norm.ppf(0.5 + level / 2))
    if method == "normal":
        half = z * np.sqrt(p * (1 - p) / n)
        low, high = max(0.0, p - half), min(1.0, p + half)
    elif method == "wilson":
        low, high = _wilson_bounds(p, n, z)
    else:
        alpha = 1 - level
        low = 0.0 if x == 0 else float(_sps.beta.ppf(alpha / 2, x, n - x + 1))
        high = 1.0 if x == n else float(_sps.beta.ppf(1 - alpha / 2, x + 1, n - x))
    return Interval(p, low, high, method=method, level=level, n=n)


# --------------------------------------------------------------------------------------------------
# Input checks shared by the functions below
# --------------------------------------------------------------------------------------------------

OVERALL = "overall"  # the label of the row over all questions in every table
_MISSING_SLICE = "(missing)"  # the label of questions whose slice value is missing
DECISIONS = ("pass", "review", "block")  # gate decisions, from best to worst
_BOOT_METHODS = ("percentile", "bca")
_SUMMARY_METHODS = ("auto", "wilson", "exact", "normal", "t", "percentile", "bca")
_ADJUST = (None, "holm")
_COMPARE_METHODS = ("auto", "score", "percentile", "bca")
_FEW_DISCORDANT = 10  # below this many changed pass/fail questions a bootstrap interval under-covers


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


# --------------------------------------------------------------------------------------------------
# The resampling engine
# --------------------------------------------------------------------------------------------------

_HEAVY = 8  # a profile shared by this many units is one multinomial cell; rarer ones are drawn unit by unit
MIN_CLUSTERS = 10  # below this many clusters a cluster-bootstrap interval is not reported
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
        bounds = np.searchsorted(block, np.arange(self._n_blocks + 1))
        return [(int(bounds[g]), int(bounds[g + 1]), g * self._offset) for g in range(self._n_blocks)]

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

        def blocks(b: np.ndarray) -> list[tuple[int, int, int]]:
            bounds = np.searchsorted(b, np.arange(n_blocks + 1))
            return [(int(bounds[g]), int(bounds[g + 1]), g * offset) for g in range(n_blocks)]

        heavy_mask = nonzero & (weight >= _HEAVY)
        light_mask = nonzero & (weight < _HEAVY)
        heavy = _Atoms(sums[heavy_mask], weight[heavy_mask], blocks(block[heavy_mask]))
        reps = weight[light_mask].astype(np.int64)
        light = _Atoms(np.repeat(sums[light_mask], reps, axis=0), np.ones(int(reps.sum())), blocks(np.repeat(block[light_mask], reps)))
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
        warnings.warn(
            f"the BCa interval cannot be computed for {int(failed.sum())} cell(s) (a degenerate bootstrap "
            "distribution or jackknife); their bounds are NaN. Use method='percentile' for them.",
            RuntimeWarning,
            stacklevel=3,
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
    too_few = engine.units_per_cell < 2  # one question (or cluster) says nothing about sampling error
    if engine.clustered:
        # A cluster bootstrap over a handful of clusters gives intervals far too narrow: give none.
        few = (engine.units_per_cell < MIN_CLUSTERS) & ~too_few
        if few.any():
            counts = sorted({int(c) for c in np.asarray(engine.units_per_cell)[few]})
            warnings.warn(
                f"units=: some rows rest on only {counts} clusters; a cluster bootstrap needs at least "
                f"{MIN_CLUSTERS} to say anything about sampling error, so those rows get no interval (a gate "
                "sends them to review). Use finer clusters, fewer slices, or no units=.",
                UserWarning,
                stacklevel=4,
            )
        too_few = too_few | few
    low[too_few] = high[too_few] = np.nan
    return engine, boot, low, high


def _drop_missing_pairs(base: np.ndarray, cand: np.ndarray, units: Any, what: str) -> tuple[np.ndarray, ...]:
    keep = ~(np.isnan(base) | np.isnan(cand))
    if not keep.all():
        warnings.warn(
            f"{what}: dropped {int((~keep).sum())} of {len(keep)} pair(s) with a missing score on either side; "
            f"{int(keep.sum())} pairs remain.",
            UserWarning,
            stacklevel=3,
        )
    if units is not None:
        units = np.asarray(list(units), dtype=object)
        if len(units) != len(keep):
            raise ValueError(f"`units` must give one cluster label per question: {len(units)} labels for {len(keep)} pairs")
        units = units[keep]
    return base[keep], cand[keep], units


def _paired_vectors(base: Any, cand: Any) -> tuple[np.ndarray, np.ndarray]:
    b, c = _as_vector(base, "base"), _as_vector(cand, "cand")
    if len(b) != len(c):
        raise ValueError(
            f"`base` and `cand` must score the same questions in the same order: {len(b)} vs {len(c)} scores. "
            "Pair runs by question id with df.rag.compare(...)."
        )
    return b, c


# --------------------------------------------------------------------------------------------------
# One interval, one test
# --------------------------------------------------------------------------------------------------


def paired_bootstrap(
    base: Any,
    cand: Any,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int | None = 0,
    method: str = "percentile",
    units: Any = None,
) -> Interval:
    """Bootstrap interval on the mean paired difference ``mean(cand - base)``.

    Questions are resampled with replacement (or whole clusters, with ``units=``) and the mean
    difference is recomputed ``n_resamples`` times. The draw is exact and fast: resampling ``n``
    rows is the same distribution as one multinomial draw over the *distinct* per-question
    differences (three for a pass/fail metric), which is what is drawn; see the module notes.

    Parameters
    ----------
    base, cand : array-like of float
        Per-question scores of the same questions in the same order. Pairs with NaN on either side
        are dropped with a warning that gives the count.
    n_resamples : int
        Number of bootstrap resamples.
    ci : float
        Confidence level.
    seed : int or None
        Seed of ``np.random.default_rng``; None draws a fresh seed and reports it.
    method : {"percentile", "bca"}
        Percentile interval, or bias-corrected and accelerated (jackknife acceleration, as in
        ``scipy.stats.bootstrap(method="BCa")``).
    units : array-like, optional
        A cluster label per question (document, conversation): clusters are resampled whole.

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method`` such as ``"paired bootstrap (percentile)"``,
        ``level``, ``n`` (pairs), ``n_resamples`` and ``seed``. With fewer than two pairs (or
        clusters) there is no interval: ``low`` and ``high`` are NaN. Differences that are all the
        same give a zero-width interval.

    Examples
    --------
    >>> from raglab.stats import paired_bootstrap
    >>> base = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 30
    >>> cand = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1] * 30
    >>> iv = paired_bootstrap(base, cand, seed=0)
    >>> round(iv.estimate, 3), iv.low < iv.estimate < iv.high, iv.method
    (-0.1, True, 'paired bootstrap (percentile)')
    """
    check_option("method", method, _BOOT_METHODS)
    level = check_level(ci)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    seed = _resolve_seed(seed)
    b, c = _paired_vectors(base, cand)
    b, c, units = _drop_missing_pairs(b, c, units, "paired_bootstrap")
    if b.size == 0:
        raise ValueError("paired_bootstrap needs at least one pair with scores on both sides")
    diffs = (c - b)[:, None]
    codes = np.zeros(len(b), dtype=np.intp)
    engine, _, low, high = _bootstrap_cells(
        diffs, codes, 1, grouped=False, units=_unit_codes(units, len(b)), level=level, method=method,
        n_resamples=n_resamples, seed=seed,
    )
    return Interval(
        engine.theta[0, 0], low[0, 0], high[0, 0],
        method=_boot_label(method, paired=True, clustered=units is not None),
        level=level, n=len(b), n_resamples=n_resamples, seed=seed,
    )


def _t_bounds(values: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """Mean, standard error and t-interval bounds of a 1-D array without NaN."""
    n = values.size
    if n == 0:
        return (np.nan,) * 4
    values = np.sort(values)  # the same bits whatever the row order
    mean = float(values.mean())
    if n == 1:
        return mean, np.nan, np.nan, np.nan
    if values.min() == values.max():
        return mean, 0.0, mean, mean
    se = float(values.std(ddof=1) / math.sqrt(n))
    half = float(_sps.t.ppf(0.5 + level / 2.0, n - 1)) * se
    return mean, se, mean - half, mean + half


def _bounded_t(values: np.ndarray, mean: float, low: float, high: float, level: float) -> tuple[float, float, float, str]:
    """A t interval for a score known to lie in [0, 1], kept inside [0, 1].

    The t interval is clipped to [0, 1] (and says so in its method). When every value is the same (the t interval collapses to
    a point, e.g. ten questions that all score 1.0) it says nothing about sampling error; a
    [0, 1]-valued score has variance at most ``mean (1 - mean)``, so the Wilson score interval at
    that variance is used instead: never zero-width, never outside [0, 1].
    """
    n = values.size
    if n >= 2 and low == high:
        z = float(_sps.norm.ppf(0.5 + level / 2.0))
        low, high = _wilson_bounds(mean, n, z)
        return mean, low, high, "wilson (bounded score, all values equal)"
    clipped = (np.isfinite(low) and low < 0) or (np.isfinite(high) and high > 1)
    if clipped:
        return mean, max(0.0, low), min(1.0, high), "t (clipped to [0, 1])"
    return mean, low, high, "t"


def _wilson_bounds(p: float, n: int, z: float) -> tuple[float, float]:
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z**2 / (4 * n**2)) / denom
    # At 0 or 1 the bound is exactly 0 or 1; rounding would leave 1e-19.
    return (0.0 if p <= 0 else max(0.0, centre - half)), (1.0 if p >= 1 else min(1.0, centre + half))


def mean_interval(
    values: Any,
    *,
    ci: float = 0.95,
    method: str = "t",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    units: Any = None,
) -> Interval:
    """Interval on the mean of continuous per-question scores (one run).

    Parameters
    ----------
    values : array-like of float
        Per-question scores; NaN entries are dropped with a warning giving the count.
    ci : float
        Confidence level.
    method : {"t", "percentile", "bca"}
        Student t interval ``mean +- t(n-1) * sd / sqrt(n)``, or a bootstrap interval.
    n_resamples, seed : int
        For the bootstrap methods (the seed is reported with the interval).
    units : array-like, optional
        Cluster labels: resample whole clusters (bootstrap methods only).

    Returns
    -------
    Interval

    Examples
    --------
    >>> from raglab.stats import mean_interval
    >>> iv = mean_interval([0.2, 0.4, 0.6, 0.8])
    >>> round(iv.estimate, 2), round(iv.low, 3), round(iv.high, 3), iv.method
    (0.5, 0.089, 0.911, 't')
    """
    check_option("method", method, ("t", *_BOOT_METHODS))
    level = check_level(ci)
    x = _as_vector(values, "values")
    keep = ~np.isnan(x)
    if not keep.all():
        warnings.warn(f"mean_interval: dropped {int((~keep).sum())} missing value(s) of {len(x)}", UserWarning, stacklevel=2)
    if units is not None:
        if method == "t":
            raise ValueError("units= needs a bootstrap method: pass method='percentile' or 'bca'")
        units = np.asarray(list(units), dtype=object)[keep]
    x = x[keep]
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value that is not missing")
    if method == "t":
        mean, _, low, high = _t_bounds(x, level)
        return Interval(mean, low, high, method="t", level=level, n=x.size)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    seed = _resolve_seed(seed)
    engine, _, low, high = _bootstrap_cells(
        x[:, None], np.zeros(x.size, dtype=np.intp), 1, grouped=False, units=_unit_codes(units, x.size),
        level=level, method=method, n_resamples=n_resamples, seed=seed,
    )
    return Interval(
        engine.theta[0, 0], low[0, 0], high[0, 0],
        method=_boot_label(method, paired=False, clustered=units is not None),
        level=level, n=x.size, n_resamples=n_resamples, seed=seed,
    )


@dataclass(frozen=True)
class TestResult:
    """A paired test: ``statistic``, two-sided ``p_value``, ``method``, ``n`` pairs, and for
    permutation tests ``n_permutations`` and ``seed``."""

    __test__ = False  # not a pytest test class

    statistic: float
    p_value: float
    method: str
    n: int
    n_permutations: int | None = None
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "method": self.method,
            "n": self.n,
            "n_permutations": self.n_permutations,
            "seed": self.seed,
        }


def _mcnemar_p(down: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Exact two-sided McNemar p-value from the discordant counts (base 1 -> 0, base 0 -> 1)."""
    down, up = np.asarray(down, dtype=float), np.asarray(up, dtype=float)
    p = np.minimum(1.0, 2.0 * _sps.binom.cdf(np.minimum(down, up), down + up, 0.5))
    return np.where(down + up == 0, 1.0, p)


def _is_binary(values: np.ndarray) -> bool:
    present = values[~np.isnan(values)]
    return bool(present.size) and bool(np.isin(present, (0.0, 1.0)).all())


def mcnemar(base: Any, cand: Any) -> TestResult:
    """Exact McNemar test for paired pass/fail scores (a binomial test on the discordant pairs).

    Parameters
    ----------
    base, cand : array-like of 0/1
        Paired pass/fail scores; pairs with NaN on either side are dropped with a warning.

    Returns
    -------
    TestResult
        ``statistic`` is the smaller discordant count (as statsmodels reports it) and ``p_value``
        is ``min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)])``.

    Examples
    --------
    >>> from raglab.stats import mcnemar
    >>> r = mcnemar([1, 1, 1, 1, 0, 0], [0, 0, 0, 1, 0, 0])
    >>> r.statistic, r.p_value
    (0.0, 0.25)
    """
    b, c = _paired_vectors(base, cand)
    b, c, _ = _drop_missing_pairs(b, c, None, "mcnemar")
    if not (np.isin(b, (0.0, 1.0)).all() and np.isin(c, (0.0, 1.0)).all()):
        raise ValueError("mcnemar needs pass/fail scores (0 or 1) on both sides; use sign_flip_test for other scores")
    down, up = int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())
    return TestResult(float(min(down, up)), float(_mcnemar_p(down, up)), "exact McNemar", len(b))


# --------------------------------------------------------------------------------------------------
# Paired pass/fail: a score interval that stays honest at small n
# --------------------------------------------------------------------------------------------------


def _tango_statistic(delta: np.ndarray, down: np.ndarray, up: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Tango's score statistic for ``H0: P(up) - P(down) = delta`` (decreasing in ``delta``).

    ``down`` counts pairs that went 1 -> 0, ``up`` pairs that went 0 -> 1, of ``n`` pairs. The
    variance uses the restricted maximum-likelihood estimate of P(down) under ``delta``: the
    feasible root of ``2n q^2 - q (down + up - delta (2n + down - up)) - down delta (1 - delta) = 0``.
    """
    b = down + up - delta * (2 * n + down - up)
    q = (b + np.sqrt(np.maximum(b * b + 8 * n * down * delta * (1 - delta), 0.0))) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (up - down - n * delta) / np.sqrt(variance)


def _tango_bounds(down: Any, up: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Tango's score interval ``{delta : |T(delta)| <= z}`` by bisection, vectorised over cells.

    Never zero-width for n >= 1 (with no discordant pair at all it is about +-z^2/(n+z^2) wide) and
    always inside [-1, 1].
    """
    down, up, n = (np.asarray(x, dtype=float) for x in (down, up, n))
    z = float(_special.ndtri(0.5 + level / 2.0))
    estimate = np.where(n > 0, (up - down) / np.where(n > 0, n, 1), np.nan)
    bounds = []
    for side in (-1.0, 1.0):  # lower bound: T(delta) = z below the estimate; upper: T = -z above it
        inside, outside = estimate.copy(), np.full(estimate.shape, side)
        for _ in range(64):  # 2^-64 of the starting gap: exact to float precision
            mid = (inside + outside) / 2.0
            t = _tango_statistic(mid, down, up, n)
            beyond = (t > z) if side < 0 else (t < -z)
            outside = np.where(beyond, mid, outside)
            inside = np.where(beyond, inside, mid)
        # At delta = +-1 the statistic is infinite unless every pair moved that way: then the bound is +-1.
        edge = _tango_statistic(np.full(estimate.shape, side), down, up, n)
        at_edge = ~((edge > z) if side < 0 else (edge < -z))
        bounds.append(np.where(np.isnan(estimate), np.nan, np.where(at_edge, side, inside)))
    return bounds[0], bounds[1]


def paired_proportion_interval(base: Any, cand: Any, *, ci: float = 0.95) -> Interval:
    """Score interval for the difference of two paired pass rates (Tango, 1998).

    The interval inverts Tango's score test for ``P(cand passes) - P(base passes)``, using only the
    discordant counts (``down``: pass -> fail, ``up``: fail -> pass) and the number of pairs. Unlike
    the percentile bootstrap, it keeps its coverage when few pairs differ and is never zero-width:
    with no discordant pair among ``n`` it still spans about ``+-z^2 / (n + z^2)``. It is the
    interval the release gate uses for pass/fail metrics.

    Parameters
    ----------
    base, cand : array-like of 0/1
        Paired pass/fail scores of the same questions in the same order; pairs with NaN on either
        side are dropped with a warning.
    ci : float
        Confidence level.

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method="paired score (Tango)"``, ``level`` and ``n`` pairs.

    References
    ----------
    Tango T. (1998) Equivalence test and confidence interval for the difference in proportions for
    the paired-sample design. Statistics in Medicine 17:891-908.

    Examples
    --------
    >>> from raglab.stats import paired_proportion_interval
    >>> iv = paired_proportion_interval([1, 1, 1], [1, 1, 1])      # three questions: no evidence
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.0, -0.561, 0.561)
    """
    level = check_level(ci)
    b, c = _paired_vectors(base, cand)
    b, c, _ = _drop_missing_pairs(b, c, None, "paired_proportion_interval")
    if not (np.isin(b, (0.0, 1.0)).all() and np.isin(c, (0.0, 1.0)).all()):
        raise ValueError(
            "paired_proportion_interval needs pass/fail scores (0 or 1) on both sides; use paired_bootstrap for others"
        )
    if b.size == 0:
        raise ValueError("paired_proportion_interval needs at least one pair with scores on both sides")
    down, up = int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())
    low, high = _tango_bounds(down, up, b.size, level)
    return Interval((up - down) / b.size, float(low), float(high), method=_SCORE_LABEL, level=level, n=b.size)


def _one_sided_mcnemar(down: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided McNemar p-values: (evidence of a decrease, evidence of an increase)."""
    down, up = np.asarray(down, dtype=float), np.asarray(up, dtype=float)
    total = down + up
    p_decrease = np.where(total == 0, 1.0, _sps.binom.sf(down - 1, total, 0.5))
    p_increase = np.where(total == 0, 1.0, _sps.binom.sf(up - 1, total, 0.5))
    return p_decrease, p_increase


def sign_flip_test(
    base: Any, cand: Any, *, n_permutations: int = 10_000, seed: int | None = 0, units: Any = None
) -> TestResult:
    """Paired sign-flip permutation test of ``mean(cand - base) == 0`` (two-sided).

    Under the null hypothesis the sign of each question's difference (or of each cluster's total,
    with ``units=``) is as likely to be flipped; the p-value is ``(1 + #{|T*| >= |T|}) /
    (n_permutations + 1)`` over random flips, which is never zero.

    Examples
    --------
    >>> from raglab.stats import sign_flip_test
    >>> r = sign_flip_test([0.5, 0.6, 0.7, 0.2, 0.9] * 4, [0.6, 0.8, 0.7, 0.4, 1.0] * 4, seed=0)
    >>> r.p_value < 0.001, r.n_permutations
    (True, 10000)
    """
    n_permutations = check_int(n_permutations, "n_permutations", 1)
    seed = _resolve_seed(seed)
    b, c = _paired_vectors(base, cand)
    b, c, units = _drop_missing_pairs(b, c, units, "sign_flip_test")
    if b.size == 0:
        raise ValueError("sign_flip_test needs at least one pair with scores on both sides")
    engine = _Resampler((c - b)[:, None], np.zeros(len(b), dtype=np.intp), 1, units=_unit_codes(units, len(b)), grouped=False)
    p = engine.sign_flip([0], n_permutations, np.random.default_rng(seed))[0]
    label = "sign-flip permutation" + (" (clusters)" if units is not None else "")
    return TestResult(float(engine.theta[0, 0]), float(p[0, 0]), label, len(b), n_permutations, seed)


def holm(p_values: Any) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error), NaN entries left out of the family.

    Examples
    --------
    >>> from raglab.stats import holm
    >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = _as_vector(p_values, "p_values")
    out = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    if present.size == 0:
        return out
    if ((p[present] < 0) | (p[present] > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    order = present[np.argsort(p[present], kind="stable")]
    m = order.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


# --------------------------------------------------------------------------------------------------
# Tables: one row per metric x slice
# --------------------------------------------------------------------------------------------------


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
    method : {"auto", "wilson", "exact", "normal", "t", "percentile", "bca"}
        ``"auto"`` uses the Wilson interval for pass/fail data (every value 0 or 1) and the t interval
        otherwise (kept inside [0, 1] for metrics known to lie there); with ``units``, the expanded
        percentile cluster bootstrap (see :func:`compare`). ``"wilson"``, ``"exact"``
        (Clopper-Pearson) and ``"normal"`` need pass/fail data; ``"percentile"`` and ``"bca"`` are
        bootstrap intervals, computed for all metrics and slices from the same resamples.
    n_resamples, seed : int
        For the bootstrap methods; the seed is reported in the table.
    units : array-like, optional
        Cluster labels per question: resample whole clusters (bootstrap only).

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_excluded, mean, se, low, high, method, level, n_resamples, seed``.
        ``n`` counts the questions with a score; ``n_excluded`` those without one (NaN), which are
        left out of the mean and never silently. ``se`` is ``sqrt(p(1-p)/n)`` for pass/fail data,
        ``sd/sqrt(n)`` for the t interval and the bootstrap standard deviation for the bootstrap.

    Examples
    --------
    >>> from raglab.stats import summary
    >>> t = summary({"hit@5": [1, 0, 1, 1, float("nan")], "ndcg@5": [0.9, 0.1, 0.5, 0.7, 0.3]})
    >>> t[["metric", "slice", "n", "n_excluded", "mean", "method"]].to_string(index=False)
    'metric   slice  n  n_excluded  mean method\\n hit@5 overall  4           1  0.75 wilson\\nndcg@5 overall  5           0  0.50      t'
    """
    check_option("method", method, _SUMMARY_METHODS)
    level = check_level(ci)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    names, values = _as_scores(scores, "scores")
    if values.shape[0] == 0:
        raise ValueError("summary needs at least one question (the scores are empty)")
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
        elif method in _PROPORTION_METHODS and not binary:
            raise ValueError(
                f"summary: method={method!r} is an interval for pass/fail scores, but {name!r} has values other "
                "than 0 and 1; use method='t' or a bootstrap method for it."
            )
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
    seed_used = _resolve_seed(seed) if boot_columns else None
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
                    "seed": seed_used if resampled else None,
                }
            )
    table = pd.DataFrame.from_records(records)
    table["n_resamples"] = _nullable_int(table["n_resamples"].tolist())
    table["seed"] = _nullable_int(table["seed"].tolist())
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
    method : {"auto", "score", "percentile", "bca"}
        The interval on ``mean(cand - base)``. ``"auto"`` (the default) takes, per metric, the
        interval that keeps its coverage at small n: for pass/fail metrics (every value 0 or 1 on
        both sides, no ``units``) Tango's score interval for paired proportions
        (:func:`paired_proportion_interval`), never zero-width however few pairs differ; for other
        metrics (and with ``units``) the *expanded* percentile bootstrap, whose level is widened by
        ``sqrt(n/(n-1)) * t(n-1) / z`` for the row's ``n`` questions or clusters. ``"score"`` asks
        for the score interval (pass/fail metrics only). ``"percentile"`` and ``"bca"`` give the
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
        exact McNemar test instead, unless ``units`` is given.
    adjust : {None, "holm"}
        Add ``p_adjusted``: Holm's adjustment of ``p_value`` over every row of the table (all
        metrics and slices). It adds a column and changes no interval; the gate's own use of Holm
        is described in :func:`gate`.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_dropped, n_changed, base, cand, diff, low, high, p_value, p_decrease,
        p_increase, skew, method, level, n_resamples, seed, test, n_permutations`` (and
        ``p_adjusted``; with ``units``, ``n_clusters``). ``n_changed`` counts pairs whose score
        differs; ``skew`` is the sample skewness of the differences (the gate reviews bootstrap rows
        with fewer than 5 changed questions, or with |skew| > 1 below 30 questions).
        ``diff`` is the mean of ``cand - base`` over the ``n`` complete pairs, ``base`` and ``cand``
        the means over the same pairs. ``p_value`` is the two-sided test's; ``p_decrease`` and
        ``p_increase`` are the one-sided p-values for the candidate being lower / higher (exact
        McNemar, sign flips, or the bootstrap distribution when ``n_permutations=0``). A row with
        fewer than two complete pairs (or clusters) has no interval (NaN ``low`` and ``high``; the
        gate sends it to review). The settings are kept in ``table.attrs["raglab"]["comparison"]``.

    Examples
    --------
    >>> from raglab.stats import compare
    >>> base = {"hit@5": [1, 1, 0, 1] * 50, "rr": [1.0, 0.5, 0.0, 0.25] * 50}
    >>> cand = {"hit@5": [1, 1, 1, 1] * 50, "rr": [1.0, 0.5, 0.2, 0.25] * 50}
    >>> t = compare(base, cand, seed=1)
    >>> t[["metric", "n", "diff", "test"]].to_string(index=False)
    'metric   n  diff                  test\\n hit@5 200  0.25         exact McNemar\\n    rr 200  0.05 sign-flip permutation'
    >>> t["method"].tolist()
    ['paired score (Tango)', 'paired bootstrap (expanded percentile)']
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
    boot_method = "percentile" if method in ("auto", "score") else method
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
            warnings.warn(
                f"compare: method={method!r} on pass/fail metrics {rare} with fewer than {_FEW_DISCORDANT} "
                "discordant pairs in some rows: bootstrap intervals under-cover there (they collapse towards the "
                "few changed questions). method='auto' uses Tango's score interval, which does not.",
                UserWarning,
                stacklevel=2,
            )
    scored = [j for j in range(len(names)) if score[j]]
    if scored:
        score_low, score_high = _tango_bounds(down[:, scored], up[:, scored], n_pairs[:, scored], level)
        low[:, scored], high[:, scored] = score_low, score_high
        no_pairs = n_pairs[:, scored] < 2  # one pair says nothing about sampling error, as for the bootstrap
        low[:, scored] = np.where(no_pairs, np.nan, low[:, scored])
        high[:, scored] = np.where(no_pairs, np.nan, high[:, scored])

    # Paired tests: exact McNemar for pass/fail metrics, sign flips (shared across metrics) otherwise.
    p_values = np.full(engine.theta.shape, np.nan)
    p_decrease = np.full(engine.theta.shape, np.nan)
    p_increase = np.full(engine.theta.shape, np.nan)
    tests = ["none"] * len(names)
    permutations: list[int | None] = [None] * len(names)
    exact = [j for j in range(len(names)) if binary[j] and unit_codes is None]
    flipped = [j for j in range(len(names)) if j not in exact]
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
    for p in (p_values, p_decrease, p_increase):
        p[n_pairs == 0] = np.nan

    boot_label = _boot_label("expanded percentile" if method == "auto" else boot_method, paired=True,
                             clustered=unit_codes is not None)
    records = []
    for j, name in enumerate(names):
        label = _SCORE_LABEL if score[j] else boot_label
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
                    "n_resamples": None if score[j] else n_resamples,
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
    table.attrs["raglab"] = {
        "comparison": {
            "ci": level,
            "method": method,
            "n_resamples": n_resamples,
            "seed": seed,
            "n_permutations": n_permutations,
            "adjust": adjust,
            "units": units is not None,
        }
    }
    return table


# --------------------------------------------------------------------------------------------------
# The release gate
# --------------------------------------------------------------------------------------------------

MIN_QUESTIONS = 10  # below this many paired questions a gate row is review, whatever its interval says
MIN_CHANGED = 5  # a bootstrap row resting on fewer changed questions is review (benchmarks/gate_errors.py)
_SMALL_N, _MAX_SKEW = 30, 1.0  # below 30 questions, |skewness| above 1 makes bootstrap intervals under-cover
GATE_TOLERANCE = 1e-9  # bounds within this (times max(1, margin)) of a threshold count as on it

GATE_RULE = (
    "Per metric and slice, on the row's interval for mean(cand - base): PASS if low >= -margin (any drop is "
    "smaller than the margin); BLOCK if high < 0 and the drop is significant family-wise (Holm over every "
    "row's one-sided p-value at (1 - ci) / 2, so that with no real change the chance of any false block stays "
    "at most that); otherwise REVIEW. Lower-is-better metrics flip the signs (pass if high <= margin; block if "
    "low > 0). A row with fewer than 10 paired questions (or 10 clusters), no interval or a zero-width interval "
    "is REVIEW, with the reason. Bounds within 1e-9 x max(1, margin) of a threshold count as on it. The "
    "overall decision is the worst row: every row must pass for the change to pass."
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
        warnings.warn(
            f"gate: guessed from the metric name which way is better ({shown}); pass "
            "higher_is_better={metric: True/False} (CLI: --higher-is-better / --lower-is-better) to state it.",
            UserWarning,
            stacklevel=4,
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
    skew: float = float("nan"),
) -> tuple[str, str]:
    """One row's decision and its reason.

    ``p_worse`` is the row's one-sided p-value for the bad direction (Holm-adjusted over ``family``
    rows when ``family > 1``); a block needs it below ``alpha / 2`` as well as the interval on the
    bad side of zero. ``resampled`` rows (bootstrap intervals) also need :data:`MIN_CHANGED`
    questions whose score changed, and no strong skew below 30 questions: a bootstrap can only
    recombine the changes it saw (with no question worse in the sample, no resample is worse), and
    it under-covers with skewed differences at small n (``benchmarks/coverage.py``).
    """
    unit = "clusters" if clustered else "questions"
    if not (np.isfinite(low) and np.isfinite(high)):
        return "review", f"no interval (n={n} {unit}; at least 2, or {MIN_CLUSTERS} clusters, are needed)"
    if not clustered and n < MIN_QUESTIONS:
        return "review", f"only {n} paired questions: too few to decide (the gate needs at least {MIN_QUESTIONS})"
    if high - low <= GATE_TOLERANCE * max(1.0, abs(low), abs(high), margin):
        return "review", "zero-width interval: every paired difference is the same, so there is no evidence about sampling error"
    if resampled and n_changed is not None and n_changed < MIN_CHANGED:
        return "review", (
            f"only {n_changed} of {n} {unit} changed: a bootstrap interval cannot show changes the sample has "
            f"not seen (the gate needs at least {MIN_CHANGED} changed)"
        )
    if resampled and n < _SMALL_N and np.isfinite(skew) and abs(skew) > _MAX_SKEW:
        return "review", (
            f"{n} {unit} with skewed differences (skewness {skew:+.2g}): bootstrap intervals under-cover here "
            f"(below {_SMALL_N} {unit}, |skewness| > {_MAX_SKEW:g}); look at the rows or add questions"
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
        return "review", (
            f"interval on the bad side {shown} but not significant across the {family} rows gated "
            f"(Holm-adjusted one-sided p = {p_worse:.3g} >= {alpha / 2:g})"
        )
    return "review", f"inconclusive: the interval crosses both -{margin:g} and 0"


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
        warnings.warn(
            f"gate: with {family} rows, Holm needs a one-sided p-value below {needed:.2g} to block, but "
            f"{int(counts.min())} sign flips (or resamples) cannot give one below {float(smallest.max()):.2g}: "
            f"those rows can never block. Raise n_permutations to at least {least}.",
            UserWarning,
            stacklevel=4,
        )


def _gate_table(table: pd.DataFrame, margin: Any, higher_is_better: Any, adjust: str | None = "holm") -> pd.DataFrame:
    check_option("adjust", adjust, _ADJUST)
    names = list(dict.fromkeys(table["metric"]))
    margins, directions = _margins(margin, names), _directions(higher_is_better, names)
    out = table.copy()
    out.attrs = json.loads(json.dumps(table.attrs))
    position = out.columns.get_loc("high") + 1
    out.insert(position, "margin", out["metric"].map(margins).astype(float))
    out.insert(position + 1, "higher_is_better", out["metric"].map(directions).astype(bool))
    hib = out["higher_is_better"].to_numpy(dtype=bool)
    if "p_decrease" in out.columns:
        p_worse = np.where(hib, out["p_decrease"].to_numpy(dtype=float), out["p_increase"].to_numpy(dtype=float))
    else:  # a table from an older raglab: no one-sided p-values, so per-row blocks on the interval alone
        p_worse = np.zeros(len(out))
    adjusted = holm(p_worse) if adjust == "holm" else p_worse
    family = int(np.isfinite(p_worse).sum()) if adjust == "holm" else 1
    level = float(out["level"].iloc[0]) if "level" in out.columns and len(out) else 0.95
    clustered = "n_clusters" in out.columns
    counts = out["n_clusters"] if clustered else out["n"]
    resampled = (out["method"] != _SCORE_LABEL).to_numpy() if "method" in out.columns else np.zeros(len(out), bool)
    changed = out["n_changed"] if "n_changed" in out.columns else pd.Series([None] * len(out))
    skews = out["skew"] if "skew" in out.columns else pd.Series([np.nan] * len(out))
    _warn_if_holm_cannot_block(out, resampled, family, 1 - level)
    decided = [
        _decide(lo, hi, mg, hb, n=int(0 if pd.isna(k) else k), clustered=clustered, p_worse=p, alpha=1 - level,
                family=family, resampled=bool(rs), n_changed=None if pd.isna(ch) else int(ch),
                skew=float(sk) if pd.notna(sk) else float("nan"))
        for lo, hi, mg, hb, k, p, rs, ch, sk in zip(
            out["low"], out["high"], out["margin"], hib, counts, adjusted, resampled, changed, skews
        )
    ]
    out.insert(position + 2, "decision", [d for d, _ in decided])
    out.insert(position + 3, "reason", [r for _, r in decided])
    out["p_worse"] = p_worse
    if adjust == "holm":
        out["p_worse_adjusted"] = adjusted
    return out


def _worst(decisions: Sequence[str]) -> str:
    return max(decisions, key=DECISIONS.index) if len(decisions) else "review"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, str):
        return value
    return str(value)


_COLOURS = DECISION_COLOURS
_SHOWN_COLUMNS = ["metric", "slice", "n", "base", "cand", "diff", "low", "high", "margin", "decision", "reason"]


@dataclass
class GateResult:
    """The release gate's verdict: ``decision`` (``"pass"``, ``"review"`` or ``"block"``) and ``table``.

    ``table`` is the paired comparison (one row per metric x slice) with ``margin``,
    ``higher_is_better`` and ``decision`` per row; the overall decision is the worst row.
    ``to_json(path)`` writes the decision log for reviewers: every interval with its n, seed and
    method, the margins, the rule, and the eval-set version/hash and judge fingerprint of both runs.

    Examples
    --------
    >>> from raglab.stats import gate
    >>> result = gate([1, 1, 0, 1] * 50, [1, 0, 0, 1] * 50, margin=0.02)
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
        frame.attrs = json.loads(json.dumps(self.table.attrs))
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
                "rows": self.table.to_dict(orient="records"),
            }
        )

    def to_json(self, path: str | Path | None = None, *, indent: int = 2) -> str:
        """Write the decision log to ``path`` (when given) and return it as JSON text.

        Missing values (no interval for an empty slice) are written as ``null``.
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def _summary_line(self) -> str:
        counts = ", ".join(f"{v} {k}" for k, v in self.counts.items())
        level = self.settings.get("ci")
        methods = " / ".join(dict.fromkeys(self.table["method"])) if len(self.table) else ""
        how = f"{level:.0%} {methods}" if level is not None else ""
        if self.settings.get("adjust") == "holm":
            how += "; blocks Holm-adjusted"
        resamples = self.settings.get("n_resamples")
        resampled = "n_resamples" in self.table.columns and self.table["n_resamples"].notna().any()
        extra = f", {resamples} resamples, seed {self.settings.get('seed')}" if resampled else ""
        return f"GateResult: {self.decision.upper()} ({counts}; {how}{extra})"

    def _shown(self) -> pd.DataFrame:
        return self.table[[c for c in _SHOWN_COLUMNS if c in self.table.columns]]

    def __repr__(self) -> str:
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            body = self._shown().to_string(index=False, float_format=lambda v: f"{v:.4g}")
        return f"{self._summary_line()}\n{body}"

    def _repr_html_(self) -> str:
        colour = _COLOURS.get(self.decision, "#444")
        return (
            f'<div><p><b style="color:{colour}">{html.escape(self._summary_line())}</b></p>'
            f"{frame_to_html(self._shown())}"
            f"<p><small>{html.escape(GATE_RULE)}</small></p></div>"
        )


def _gate_result(table: pd.DataFrame, margin: Any, higher_is_better: Any, adjust: str | None = "holm") -> GateResult:
    """Gate a compare table; settings and run records come from ``table.attrs["raglab"]["comparison"]``."""
    from raglab._version import __version__

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
) -> GateResult:
    """Non-inferiority release gate on paired scores, per metric and slice.

    Each row of :func:`compare` (one per metric x slice) gets a decision from its interval on
    ``mean(cand - base)`` and its one-sided test:

    * **pass** if ``low >= -margin``: any drop is smaller than the margin. Every row must pass for
      the change to pass; requiring all rows needs no multiplicity adjustment.
    * **block** if ``high < 0`` (a real drop) *and* the row's one-sided p-value for a drop,
      Holm-adjusted over every row of the table, is below ``(1 - ci) / 2``: with no real change
      anywhere, the chance that any row blocks stays at most that, however many metrics and slices
      are gated. ``adjust=None`` blocks per row on the interval alone (more false blocks as rows
      multiply).
    * **review** otherwise, and always for a row with fewer than :data:`MIN_QUESTIONS` paired
      questions (or :data:`MIN_CLUSTERS` clusters), with no interval, or with a zero-width
      interval. The table's ``reason`` column says why.

    For a lower-is-better metric (latency, cost, hallucination rate) the signs flip: pass if
    ``high <= margin``, block if ``low > 0``. Bounds within ``GATE_TOLERANCE * max(1, margin)`` of a
    threshold count as on it, so float rounding never decides. The overall decision is the worst
    row. The intervals are :func:`compare`'s (``method="auto"``: Tango's score interval for
    pass/fail metrics, the expanded percentile bootstrap otherwise), and the one printed and drawn
    for a row is the one that decided it.

    Parameters
    ----------
    base, cand : dict of array-like, DataFrame, Series or 1-D array
        Paired per-question scores (same questions, same order); see :func:`compare`.
    margin : float or dict
        The largest drop (in the metric's units) to ship without discussion; one for all metrics
        or ``{metric: margin}`` covering every metric.
    higher_is_better : bool or dict, optional
        Direction per metric. Defaults come from the metric name (``raglab`` knows ``latency``,
        ``cost``, ``hallucination``... are lower-is-better); an explicit value always wins.
    slices, units, ci, method, n_resamples, seed, n_permutations
        As in :func:`compare`.
    adjust : {"holm", None}
        How blocks are protected against many rows: ``"holm"`` (the default) as above; ``None``
        lets each row block on its own interval.

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
        n_permutations=n_permutations,
    )
    return _gate_result(table, margin, higher_is_better, adjust)
