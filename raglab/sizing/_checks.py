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


def _design_effect(design_effect: Any = None, icc: Any = None, cluster_size: Any = None) -> tuple[float, float | None]:
    """The design effect of clustered questions, and the mean cluster size when known.

    ``design_effect`` directly, or ``1 + (cluster_size - 1) * icc`` (Kish) from the intra-cluster
    correlation of the per-question differences and the mean number of questions per cluster.
    Neither: 1 (questions independent).
    """
    if design_effect is not None:
        if icc is not None:
            raise ValueError("pass either `design_effect` or `icc` (with `cluster_size`), not both")
        if not _is_number(design_effect) or not math.isfinite(design_effect) or design_effect < 1:
            raise ValueError(
                f"`design_effect` must be a number >= 1 (1 + (cluster_size - 1) x ICC; 1 = independent questions), "
                f"got {design_effect!r}"
            )
        size = None
        if cluster_size is not None:
            size = _cluster_size(cluster_size)
        return float(design_effect), size
    if icc is None:
        if cluster_size is not None:
            raise ValueError(
                "`cluster_size` needs `icc` (the intra-cluster correlation of the per-question differences): the "
                "design effect is 1 + (cluster_size - 1) x icc"
            )
        return 1.0, None
    icc = _rate("icc", icc)
    if cluster_size is None:
        raise ValueError(
            "`icc` needs `cluster_size`, the mean number of questions per cluster (conversation, document): the "
            "design effect is 1 + (cluster_size - 1) x icc"
        )
    size = _cluster_size(cluster_size)
    return 1.0 + (size - 1.0) * icc, size


def _cluster_size(value: Any) -> float:
    if not _is_number(value) or not math.isfinite(value) or value < 1:
        raise ValueError(f"`cluster_size` must be the mean number of questions per cluster (>= 1), got {value!r}")
    return float(value)
