"""Paired tests beside the intervals: exact McNemar, sign flips, and Holm's adjustment.

* :func:`mcnemar`: the exact two-sided test for paired pass/fail scores (``_mcnemar_p`` is its
  vectorised p-value, ``_one_sided_mcnemar`` the one-sided pair the gate uses);
* :func:`sign_flip_test`: the paired permutation test for any scores, per question or per cluster;
* :func:`holm`: Holm's step-down adjustment of a family of p-values.

Each test returns a :class:`TestResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _sps

from raglab._validation import check_int
from raglab.stats._engine import (
    _as_vector,
    _complete_pairs,
    _Resampler,
    _resolve_seed,
    _unit_codes,
)

__all__ = ["TestResult", "holm", "mcnemar", "sign_flip_test"]


@dataclass(frozen=True)
class TestResult:
    """A paired test: ``statistic``, two-sided ``p_value``, ``method``, ``n`` pairs, and for
    permutation tests ``n_permutations`` and ``seed``.

    Examples
    --------
    >>> from raglab.stats import mcnemar
    >>> r = mcnemar([1, 1, 0], [0, 1, 1])
    >>> r.method, r.n
    ('exact McNemar', 3)
    """

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
    b, c, _ = _complete_pairs(base, cand, None, "mcnemar", allow_empty=True)
    if not (np.isin(b, (0.0, 1.0)).all() and np.isin(c, (0.0, 1.0)).all()):
        raise ValueError("mcnemar needs pass/fail scores (0 or 1) on both sides; use sign_flip_test for other scores")
    down, up = int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())
    return TestResult(float(min(down, up)), float(_mcnemar_p(down, up)), "exact McNemar", len(b))


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
    b, c, units = _complete_pairs(base, cand, units, "sign_flip_test")
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
