"""The checks every sizing function shares: rates in [0, 1], a judge's error rates, a change, a count.

Also the numeric tolerances: the largest ``n`` worth reporting, the float slack for probabilities
that are exactly 0 or 1, and how closely a given attenuation must match ``se + sp - 1``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_N_MAX = 10**12
_TOL = 1e-12  # float slack for cell probabilities that are exactly 0 or 1 in exact arithmetic
_ATTENUATION_TOL = 1e-6


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def _rate(name: str, value: Any, *, open_low: bool = False, open_high: bool = False) -> float:
    if not _is_number(value) or math.isnan(value):
        raise ValueError(f"`{name}` must be a number between 0 and 1, got {value!r}")
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        bounds = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise ValueError(f"`{name}` must lie in {bounds}, got {value!r}")
    return float(value)


def _judge_rates(sensitivity: Any, specificity: Any) -> tuple[float, float] | None:
    """Validated (se, sp), or None when neither is given."""
    if sensitivity is None and specificity is None:
        return None
    if sensitivity is None or specificity is None:
        missing = "sensitivity" if sensitivity is None else "specificity"
        raise ValueError(
            f"a judge needs both `sensitivity` and `specificity`; `{missing}` is missing (take both from "
            "raglab.agreement.report(human, judge, positive=...), or pass 1.0 for a judge that never errs that way)"
        )
    se = _rate("sensitivity", sensitivity)
    sp = _rate("specificity", specificity)
    if se + sp - 1 <= 0:
        raise ValueError(
            f"sensitivity + specificity - 1 = {se + sp - 1:.4g} (sensitivity {se:g}, specificity {sp:g}): the "
            "judge's labels carry no information about the true outcome, so no number of questions detects a "
            "change; fix the judge (sensitivity + specificity must exceed 1)"
        )
    return se, sp


def _check_mde(mde: Any) -> float:
    if not _is_number(mde) or not mde > 0 or not math.isfinite(mde):
        raise ValueError(f"`mde` must be a positive change (e.g. 0.03 for 3 points), got {mde!r}")
    return float(mde)


def _check_n(n: Any) -> None:
    if not _is_number(n) or not n > 0:
        raise ValueError(f"`n` must be a positive number of questions, got {n!r}")


def _check_sd_diff(sd_diff: Any, discordance: Any) -> float:
    """A continuous metric's paired standard deviation, given instead of (never with) a discordance."""
    if discordance is not None:
        raise ValueError("pass either `discordance` (pass/fail metrics) or `sd_diff` (continuous), not both")
    if not (_is_number(sd_diff) and sd_diff > 0 and math.isfinite(sd_diff)):
        raise ValueError(f"`sd_diff` must be a positive standard deviation, got {sd_diff!r}")
    return float(sd_diff)
