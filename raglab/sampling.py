"""Which rows people should label (or a judge should judge), with each row's known probability.

:func:`draw` marks a sample of a row table and records how it was drawn, so that every estimator
can weight a chosen row by ``1 / inclusion_probability`` (Horvitz-Thompson) and a later reader can
tell a random sample from labels picked by hand. Three designs:

* ``"uniform"``: a simple random sample of ``n`` rows without replacement (every row has
  probability ``n / N``), or with ``by=`` a stratified sample with proportional allocation
  (``n_h`` close to ``n N_h / N``, at least one per stratum; probability ``n_h / N_h``), recorded as
  method ``"stratified"``.
* ``"neyman"``: stratified (``by=`` is required) with Neyman allocation, ``n_h`` proportional to
  ``N_h S_h`` where ``S_h`` is the standard deviation of a pilot ``score`` column in the stratum,
  at least 2 per stratum (or the whole stratum when smaller) and never more than the stratum holds.
* ``"active"``: Poisson sampling (each row chosen independently) with probabilities higher where
  the judge is least sure: ``score`` near ``threshold`` (the uncertainty is
  ``max|s - t| - |s_i - t|``), or, without a threshold, ``score`` is itself a non-negative
  uncertainty (a claim-verdict disagreement, a judge's spread over repeats). The probabilities are
  ``n (floor / N + (1 - floor) u_i / sum u)``, capped at 1 with the excess spread over the other
  rows, so they sum to ``n`` (the *expected* sample size) and every row has at least
  ``floor * n / N``: no row is unreachable, which keeps the weighted estimate unbiased. With
  ``by=`` the expected size is split proportionally across strata first.

The design is recorded in ``df.attrs["raglab"]["sampling"][kind]`` as a
``raglab._meta.SamplingDesign`` record (it survives :func:`raglab.io.write_rows` and
:func:`raglab.io.read_rows`); read it back with ``raglab._meta.sampling_design_of``.

Examples
--------
>>> import pandas as pd
>>> from raglab.sampling import draw
>>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(10)], "topic": ["a"] * 6 + ["b"] * 4})
>>> marked = draw(rows, 5, by="topic", seed=1)
>>> int(marked["selected"].sum()), marked.groupby("topic")["inclusion_probability"].first().tolist()
(5, [0.5, 0.5])
>>> marked.attrs["raglab"]["sampling"]["labelled"]["method"]
'stratified'
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import MissingColumnError
from raglab._meta import SAMPLING_KINDS, carry_meta, get_meta, update_meta

__all__ = ["METHODS", "draw"]

#: The designs :func:`draw` knows (``"stratified"`` is ``"uniform"`` with ``by=``).
METHODS = ("uniform", "stratified", "neyman", "active")

SELECTED = "selected"
PROBABILITY = "inclusion_probability"


def draw(
    rows: pd.DataFrame,
    n: int,
    *,
    by: str | None = None,
    method: str = "uniform",
    seed: int = 0,
    score: str | None = None,
    threshold: float | None = None,
    floor: float = 0.1,
    kind: str = "labelled",
) -> pd.DataFrame:
    """Mark which rows to label (or judge), each with its probability of being chosen.

    Parameters
    ----------
    rows : pandas.DataFrame
        The row table to sample from (one row per question, or per answer).
    n : int
        How many rows to choose: exactly ``n`` for ``"uniform"``, ``"stratified"`` and ``"neyman"``,
        the expected number for ``"active"`` (Poisson sampling). ``1 <= n <= len(rows)``.
    by : str, optional
        A column naming each row's stratum: rows are sampled within each stratum.
    method : {"uniform", "stratified", "neyman", "active"}
        The design (see the module docstring). ``"stratified"`` is ``"uniform"`` with ``by=``.
    seed : int
        Seeds the numpy Generator: the same arguments choose the same rows.
    score : str, optional
        A numeric (or bool) column: the pilot score whose spread sets the Neyman allocation (NaN on
        rows not piloted; at least 2 piloted rows per stratum), or the judge's score (with
        ``threshold``) or uncertainty (without, e.g. a claim-verdict disagreement) that ``"active"``
        favours (every row needs one).
    threshold : float, optional
        For ``"active"``: rows whose ``score`` is nearest this value are the least sure.
    floor : float
        For ``"active"``: the share of the expected sample spread uniformly, ``0 < floor <= 1``;
        every row has probability at least ``floor * n / N``.
    kind : {"labelled", "judged"}
        What the chosen rows are for; the design is recorded under this key.

    Returns
    -------
    pandas.DataFrame
        A copy of ``rows`` (same order, same index) with a bool column ``selected`` and a float
        column ``inclusion_probability`` in (0, 1]; ``attrs["raglab"]["sampling"][kind]`` holds the
        design (kind, method, n, population, strata, inclusion_probability column, seed).

    Raises
    ------
    ValueError
        ``n`` out of range, an unknown method, a stratum too small for its allocation, a ``score``
        that is missing, not numeric or NaN, a negative uncertainty, ``floor`` outside (0, 1].
    raglab.MissingColumnError
        ``by`` or ``score`` is not a column of ``rows``.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"verdict_score": [0.05, 0.48, 0.52, 0.95, 0.9, 0.1]})
    >>> marked = draw(rows, 3, method="active", score="verdict_score", threshold=0.5, floor=0.2, seed=0)
    >>> marked["inclusion_probability"].round(3).tolist()
    [0.154, 1.0, 1.0, 0.154, 0.346, 0.346]
    >>> round(float(marked["inclusion_probability"].sum()), 6)   # the expected sample size
    3.0
    >>> draw(rows, 7)
    Traceback (most recent call last):
    ...
    ValueError: draw: n=7 rows asked of a table of 6 rows; n must be between 1 and 6
    """
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"draw: rows must be a pandas DataFrame, got {type(rows).__name__}")
    if method not in METHODS:
        raise ValueError(f"draw: method={method!r}; choose one of {METHODS}")
    if kind not in SAMPLING_KINDS:
        raise ValueError(f"draw: kind={kind!r}; choose one of {SAMPLING_KINDS}")
    population = len(rows)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"draw: n must be an int, got {type(n).__name__} {n!r}")
    n = int(n)
    if not 1 <= n <= population:
        raise ValueError(f"draw: n={n} rows asked of a table of {population} rows; n must be between 1 and "
                         f"{population}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"draw: seed must be an int >= 0, got {seed!r}")
    if method == "stratified" and by is None:
        raise ValueError("draw: method='stratified' needs by=, the column naming each row's stratum")
    if method == "neyman" and by is None:
        raise ValueError("draw: method='neyman' allocates across strata; pass by=, the column naming each row's "
                         "stratum (without strata use method='uniform')")
    if method in ("neyman", "active") and score is None:
        what = "a pilot score whose spread per stratum sets the allocation" if method == "neyman" else \
            "the judge's score (with threshold=) or its uncertainty (without)"
        raise ValueError(f"draw: method={method!r} needs score=, the column holding {what}")
    if method != "active" and threshold is not None:
        raise ValueError(f"draw: threshold= is used by method='active' only, not {method!r}")
    if method == "active" and (isinstance(floor, bool) or not isinstance(floor, (int, float))
                               or not 0 < floor <= 1):
        raise ValueError(f"draw: floor={floor!r}; it must be in (0, 1] so that every row can be chosen "
                         "(a row with probability 0 makes the weighted estimate biased)")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number))
                                  or not math.isfinite(float(threshold))):
        raise ValueError(f"draw: threshold={threshold!r}; it must be a finite number")

    strata = _strata(rows, by)
    values = _score(rows, score, partial=method == "neyman") if score is not None else None
    rng = np.random.default_rng(int(seed))

    probability = np.zeros(population, dtype=float)
    selected = np.zeros(population, dtype=bool)
    if method == "active":
        assert values is not None
        uncertainty = _uncertainty(values, threshold, score)
        for positions in strata.values():
            expected = n * len(positions) / population
            probability[positions] = _active_probabilities(uncertainty[positions], expected, float(floor))
        selected = rng.random(population) < probability
        recorded = "active"
    else:
        sizes = {key: len(pos) for key, pos in strata.items()}
        if method == "neyman":
            assert values is not None
            spreads = _spreads(values, strata, sizes, score, by)
            targets = {key: sizes[key] * spreads[key] for key in strata}
            if sum(targets.values()) == 0:  # no spread anywhere: proportional
                targets = {key: float(sizes[key]) for key in strata}
            minimum = {key: min(2, sizes[key]) for key in strata}
        else:
            targets = {key: float(sizes[key]) for key in strata}
            minimum = {key: 1 for key in strata}
        allocation = _allocate(n, targets, sizes, minimum, by)
        for key, positions in strata.items():
            take = allocation[key]
            probability[positions] = take / len(positions)
            chosen = rng.choice(len(positions), size=take, replace=False)
            selected[positions[chosen]] = True
        recorded = "neyman" if method == "neyman" else ("stratified" if by is not None else "uniform")

    out = rows.copy()
    carry_meta(rows, out)
    _check_columns_free(out, kind)
    out[SELECTED] = selected
    out[PROBABILITY] = probability
    design: dict[str, Any] = {"kind": kind, "method": recorded, "n": n, "population": population,
                              "inclusion_probability": PROBABILITY, "seed": int(seed)}
    if by is not None:
        design["strata"] = by
    if score is not None:
        design["score"] = score
    if method == "active":
        design["floor"] = float(floor)
        if threshold is not None:
            design["threshold"] = float(threshold)
        design["poisson"] = True
    update_meta(out, "sampling", {kind: design})
    return out


# --------------------------------------------------------------------------------------------------


def _strata(rows: pd.DataFrame, by: str | None) -> dict[Hashable, np.ndarray]:
    """Stratum -> positions (sorted), in the order of the sorted stratum values (all rows when by is None)."""
    if by is None:
        return {None: np.arange(len(rows))}
    if by not in rows.columns:
        raise MissingColumnError(f"draw: by={by!r} is not a column of the rows; columns are {list(rows.columns)}")
    column = rows[by]
    missing = int(column.isna().sum())
    if missing:
        raise ValueError(f"draw: the stratum column {by!r} is missing on {missing} rows; every row needs a stratum "
                         "(fill them, e.g. rows[by].fillna('unknown'))")
    codes, uniques = pd.factorize(column, sort=True)
    return {uniques[i]: np.flatnonzero(codes == i) for i in range(len(uniques))}


def _score(rows: pd.DataFrame, score: str, *, partial: bool = False) -> np.ndarray:
    """The score column as floats; NaN refused unless ``partial`` (a pilot scored on some rows only)."""
    if score not in rows.columns:
        raise MissingColumnError(f"draw: score={score!r} is not a column of the rows; columns are "
                                 f"{list(rows.columns)}")
    try:
        values = pd.to_numeric(rows[score], errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"draw: the score column {score!r} must be numeric") from None
    if np.isinf(values).any():
        raise ValueError(f"draw: the score column {score!r} is infinite on {int(np.isinf(values).sum())} rows")
    bad = ~np.isfinite(values)
    if bad.any() and not partial:
        first = rows.index[int(np.flatnonzero(bad)[0])]
        raise ValueError(f"draw: the score column {score!r} is NaN or infinite on {int(bad.sum())} rows (first: "
                         f"index {first!r}); every row needs a score to set its probability")
    return values


def _spreads(values: np.ndarray, strata: dict[Hashable, np.ndarray], sizes: dict[Hashable, int], score: str | None,
             by: str | None) -> dict[Hashable, float]:
    """Each stratum's standard deviation of the pilot scores it has (NaN = not piloted)."""
    spreads = {}
    for key, positions in strata.items():
        piloted = values[positions][np.isfinite(values[positions])]
        if sizes[key] > 1 and piloted.size < 2:
            raise ValueError(f"draw: the pilot score {score!r} has {piloted.size} values in the stratum {by}={key!r} "
                             f"({sizes[key]} rows); Neyman allocation needs at least 2 per stratum to estimate its "
                             "spread (pilot it, merge it with a neighbour, or use method='uniform')")
        spreads[key] = float(np.std(piloted, ddof=1)) if piloted.size > 1 else 0.0
    return spreads


def _uncertainty(values: np.ndarray, threshold: float | None, score: str | None) -> np.ndarray:
    if threshold is None:
        if (values < 0).any():
            raise ValueError(f"draw: without threshold=, the score column {score!r} is read as an uncertainty "
                             f"(higher = less sure) and must be >= 0; its minimum is {values.min()!r}. Pass "
                             "threshold= when it is a judge's score")
        return values
    distance = np.abs(values - float(threshold))
    return distance.max() - distance


def _active_probabilities(uncertainty: np.ndarray, expected: float, floor: float) -> np.ndarray:
    """``expected * (floor / N + (1 - floor) u / sum u)`` capped at 1, the excess re-spread; sums to ``expected``."""
    size = len(uncertainty)
    total = uncertainty.sum()
    share = uncertainty / total if total > 0 else np.full(size, 1.0 / size)
    base = floor / size + (1.0 - floor) * share  # sums to 1
    probability = expected * base
    capped = np.zeros(size, dtype=bool)
    for _ in range(size):
        over = (probability > 1.0) & ~capped
        if not over.any():
            break
        capped |= over
        left = expected - capped.sum()
        free = ~capped
        probability[capped] = 1.0
        if free.any():
            probability[free] = left * base[free] / base[free].sum()
    return np.minimum(probability, 1.0)


def _allocate(n: int, targets: dict[Hashable, float], sizes: dict[Hashable, int],
              minimum: dict[Hashable, int], by: str | None) -> dict[Hashable, int]:
    """Integer n_h summing to n, close to n * target_h / sum(target), within [minimum_h, N_h]."""
    keys = list(targets)
    need = sum(minimum.values())
    if need > n:
        raise ValueError(f"draw: {len(keys)} strata of {by!r} need at least {need} rows "
                         f"({max(minimum.values())} per stratum), but n={n}; raise n or merge small strata")
    # Real allocation within the bounds: a stratum whose share exceeds its size takes all of it, one whose share
    # is below its minimum takes the minimum, and the others re-share what is left (until nothing moves).
    real = {key: 0.0 for key in keys}
    fixed: dict[Hashable, float] = {}
    for _ in range(2 * len(keys) + 1):
        free = [key for key in keys if key not in fixed]
        left = n - sum(fixed.values())
        weight = sum(targets[key] for key in free)
        for key in free:
            real[key] = left * targets[key] / weight if weight > 0 else left / len(free)
        moved = False
        for key in free:
            if real[key] > sizes[key]:
                fixed[key] = real[key] = float(sizes[key])
                moved = True
            elif real[key] < minimum[key]:
                fixed[key] = real[key] = float(minimum[key])
                moved = True
        if not moved:
            break
    alloc = {key: min(sizes[key], max(minimum[key], math.floor(real[key]))) for key in keys}
    while sum(alloc.values()) < n:  # largest remainder first
        key = max((k for k in keys if alloc[k] < sizes[k]), key=lambda k: (real[k] - alloc[k], -keys.index(k)))
        alloc[key] += 1
    while sum(alloc.values()) > n:  # the minimums pushed past n: take from the most over-allocated
        key = min((k for k in keys if alloc[k] > minimum[k]), key=lambda k: (real[k] - alloc[k], keys.index(k)))
        alloc[key] -= 1
    return alloc


def _check_columns_free(out: pd.DataFrame, kind: str) -> None:
    """Refuse to overwrite the columns of a design of the other kind recorded on this table."""
    stored = get_meta(out).get("sampling")
    if not isinstance(stored, dict):
        return
    for other, design in stored.items():
        if other == kind or not isinstance(design, dict):
            continue
        if design.get("inclusion_probability") == PROBABILITY and PROBABILITY in out.columns:
            raise ValueError(f"draw: the table already holds the {other!r} design's columns {SELECTED!r} and "
                             f"{PROBABILITY!r}, which this {kind!r} draw would overwrite; draw the {kind!r} rows on "
                             "a table without them (one design per table for now) and join the results by id")
