"""What the agreement modules share: the kappa thresholds, the option lists, the warnings, small helpers.

Nothing here is specific to one statistic: the thresholds used to read a kappa, the options each
function accepts, the three warning classes the report and the correction issue, the normal
quantile, the percentile interval of a bootstrap, the resample-count check, the names of the
report's pass/fail statistics and :func:`plain` (a numpy scalar as Python). Names without an
underscore that are not in ``__all__`` are shared by the agreement modules, not public API.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as _sps

__all__ = [
    "FragileIntervalWarning",
    "ImpossibleRateWarning",
    "KAPPA_MIN_COUNT",
    "KAPPA_SUBSTANTIAL",
    "KAPPA_UNTRUSTED",
    "LowAgreementWarning",
]

KAPPA_SUBSTANTIAL = 0.6
"""Kappa above about this value is usually considered substantial agreement."""
KAPPA_UNTRUSTED = 0.4
"""Below this kappa a judge should not be trusted."""

THRESHOLDS_TEXT = (
    f"kappa above about {KAPPA_SUBSTANTIAL} is usually considered substantial; "
    f"below {KAPPA_UNTRUSTED} the judge should not be trusted"
)
WEIGHTS = (None, "linear", "quadratic")
DISTANCES = ("rank", "value")
KAPPA_METHODS = ("auto", "analytic", "adjusted", "bootstrap")
RG_METHODS = ("delta", "bootstrap")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
TIES = ("drop", "low", "high")
# The report's pass/fail statistics (None without a pass label).
BINARY_STATISTICS = ("sensitivity", "specificity", "miss_rate", "human_positive_rate", "judge_positive_rate",
                     "attenuation")


KAPPA_MIN_COUNT = 10
"""Below this smallest label count (either rater, any category) the analytic kappa interval under-covers.

Simulated (binary labels, prevalence 0.5-0.95, kappa 0.3-0.8, n 10-300; 2-4 categories, weighted and
not): a nominal 95% ``kappa +- 1.96 SE`` interval covered 67% of the time when the rarest label had
fewer than 5 items and 89% at 5-9; the percentile bootstrap was no better (65% at n = 10). Asking
for either there warns. The default (adjusted) interval needs no switch: it covers 94-99% from
n = 30 at every base rate and kappa ``benchmarks/agreement_coverage.py`` simulates.
"""


class LowAgreementWarning(UserWarning):
    """The judge agrees with people too little (kappa below 0.4) for its averages to be trusted."""


class FragileIntervalWarning(UserWarning):
    """An interval is known to under-cover here (a rare label, too few clusters), or none can be given."""


class ImpossibleRateWarning(UserWarning):
    """A judge's pass rate lies outside the range its sensitivity and specificity allow."""


def normal_quantile(level: float) -> float:
    return float(_sps.norm.ppf(0.5 + level / 2))


def percentile(boot: np.ndarray, level: float) -> tuple[float, float]:
    finite = boot[np.isfinite(boot)]
    if finite.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - level
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive integer, got {n_resamples!r}")


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for JSON and for messages)."""
    return value.item() if isinstance(value, np.generic) else value
