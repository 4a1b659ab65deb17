"""How many questions an eval set needs: standard errors, sample sizes, detectable changes and power.

Three designs, all normal approximations stated in every docstring:

* **Unpaired pass rates** (two runs on independent question samples, ``paired=False``): the
  arcsine (Cohen's h) approximation, ``h = |2 asin sqrt(p2) - 2 asin sqrt(p1)|`` with the
  statistic's variance ``2 / n``; exactly what statsmodels' ``NormalIndPower`` computes with
  ``proportion_effectsize`` and ``ratio=1``. ``n`` is questions *per run*. The change is applied in
  the direction that needs more questions (towards 0.5), so the answer holds for a rise or a fall.
* **Paired pass rates** (both configs answer the same questions, ``paired=True``): from the
  *discordance* ``q``, the share of questions whose pass/fail differs between the configs, with the
  McNemar-type normal approximation of Connor (1987): a true change ``d`` (``|d| <= q``) is detected
  by ``|b - c| / sqrt(b + c) > z`` with power
  ``Phi((d sqrt(n) - z sqrt(q)) / sqrt(q - d**2))`` (plus the far tail when two-sided), so
  ``n ~ ((z_a sqrt(q) + z_b sqrt(q - d**2)) / d)**2``.
* **Continuous metrics** (paired, ``sd_diff=``): a z-test on per-question differences with standard
  deviation ``sd``: power ``Phi(d sqrt(n) / sd - z)``, so ``n ~ ((z_a + z_b) sd / d)**2``
  (statsmodels' ``NormalIndPower`` with ``ratio=0``). For two independent runs pass
  ``sd_diff = sqrt(sd_base**2 + sd_cand**2)``.

Two-sided power includes both tails, and :func:`questions_needed` returns the smallest whole ``n``
whose power reaches the target. Two corrections apply to every design:

* **Judge attenuation** ``J`` (:attr:`raglab.agreement.AgreementReport.attenuation`): a true change
  ``d`` shows in a judge's pass rate as ``J * d``, so the detectable change is ``J * mde`` (about
  ``1 / J**2`` times as many questions).
* **Rare slices**: with ``slice_fraction=f`` the returned ``n`` is the *total* number of questions
  such that the slice (a share ``f`` of them) alone has enough: ``ceil(n_slice / f)``.

Examples
--------
>>> from raglab import sizing
>>> round(sizing.standard_error(0.7, 300), 3)
0.026
>>> sizing.questions_needed(0.03, p=0.7)                     # two independent runs, per run
3762
>>> sizing.questions_needed(0.03, paired=True, discordance=0.1)  # paired: far fewer
870
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize as _opt
from scipy import stats as _sps

from raglab._rowtable import check_option

__all__ = [
    "SizingResult",
    "detectable_difference",
    "power",
    "questions_needed",
    "size_from_pilot",
    "standard_error",
]

_ALTERNATIVES = ("two-sided", "one-sided")
_N_MAX = 10**12


def standard_error(p: float, n: int) -> float:
    """Standard error of a pass rate ``p`` measured on ``n`` questions: ``sqrt(p (1 - p) / n)``.

    Examples
    --------
    >>> round(standard_error(0.7, 300), 4)       # about +-5 points at 95%
    0.0265
    """
    _rate("p", p)
    if isinstance(n, bool) or not n > 0:
        raise ValueError(f"`n` must be a positive number of questions, got {n!r}")
    return math.sqrt(p * (1 - p) / n)


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


def _rate(name: str, value: Any, *, open_low: bool = False, open_high: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or math.isnan(value):
        raise ValueError(f"`{name}` must be a number between 0 and 1, got {value!r}")
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        bounds = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise ValueError(f"`{name}` must lie in {bounds}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class _Design:
    kind: str  # "unpaired" | "paired" | "continuous"
    p: float | None
    discordance: float | None
    sd_diff: float | None
    power: float
    alpha: float
    attenuation: float
    slice_fraction: float
    alternative: str

    @property
    def z_alpha(self) -> float:
        tail = self.alpha / 2 if self.alternative == "two-sided" else self.alpha
        return float(_sps.norm.isf(tail))

    @property
    def z_beta(self) -> float:
        return float(_sps.norm.ppf(self.power))

    def max_effect(self) -> float:
        """Largest observable change the design allows."""
        if self.kind == "unpaired":
            return max(self.p, 1 - self.p)
        if self.kind == "paired":
            return self.discordance
        return math.inf

    def describe(self) -> str:
        if self.kind == "unpaired":
            return "unpaired pass rates: arcsine (Cohen's h) normal approximation, n per run"
        if self.kind == "paired":
            return "paired pass rates: McNemar-type normal approximation from the discordance (Connor 1987)"
        return "paired continuous metric: z-test on per-question differences"


def _design(
    *,
    p: float | None,
    paired: bool,
    discordance: float | None,
    sd_diff: float | None,
    power: float,
    alpha: float,
    attenuation: float,
    slice_fraction: float,
    alternative: str,
) -> _Design:
    check_option("alternative", alternative, _ALTERNATIVES)
    alpha = _rate("alpha", alpha, open_low=True, open_high=True)
    power = _rate("power", power, open_low=True, open_high=True)
    tail = alpha / 2 if alternative == "two-sided" else alpha
    if power <= tail:
        raise ValueError(f"`power` ({power}) must exceed the false-positive rate of one tail ({tail})")
    attenuation = _rate("attenuation", attenuation, open_low=True)
    slice_fraction = _rate("slice_fraction", slice_fraction, open_low=True)
    if sd_diff is not None:
        if discordance is not None:
            raise ValueError("pass either `discordance` (pass/fail metrics) or `sd_diff` (continuous), not both")
        if isinstance(sd_diff, bool) or not (isinstance(sd_diff, (int, float, np.integer, np.floating))
                                              and sd_diff > 0 and math.isfinite(sd_diff)):
            raise ValueError(f"`sd_diff` must be a positive standard deviation, got {sd_diff!r}")
        return _Design("continuous", None, None, float(sd_diff), power, alpha, attenuation, slice_fraction, alternative)
    if paired:
        if discordance is None:
            raise ValueError(
                "paired sizing of a pass rate needs `discordance`: the share of questions whose pass/fail "
                "differs between the two configs (estimate it from a pilot with df.rag.size), or pass "
                "`sd_diff` for a continuous metric"
            )
        q = _rate("discordance", discordance, open_low=True)
        return _Design("paired", None, q, None, power, alpha, attenuation, slice_fraction, alternative)
    if discordance is not None:
        raise ValueError("`discordance` describes a paired design: pass paired=True with it")
    if p is None:
        raise ValueError("unpaired sizing of a pass rate needs `p`, the baseline pass rate (e.g. p=0.7)")
    p = _rate("p", p, open_low=True, open_high=True)
    return _Design("unpaired", p, None, None, power, alpha, attenuation, slice_fraction, alternative)


def _effect(mde: Any, design: _Design) -> float:
    if isinstance(mde, bool) or not isinstance(mde, (int, float, np.integer, np.floating)) or not mde > 0:
        raise ValueError(f"`mde` must be a positive change (e.g. 0.03 for 3 points), got {mde!r}")
    d = float(mde) * design.attenuation
    top = design.max_effect()
    if d > top:
        if design.kind == "paired":
            raise ValueError(
                f"a change of {d:.4g} (mde {mde} x attenuation {design.attenuation}) cannot happen when only "
                f"{design.discordance:.4g} of the questions change pass/fail (discordance): the mean change "
                "is at most the discordance"
            )
        raise ValueError(f"a change of {d:.4g} from p = {design.p} leaves [0, 1] in both directions")
    return d


# --------------------------------------------------------------------------------------------------
# Power
# --------------------------------------------------------------------------------------------------


def _h(p: float, d: float) -> float:
    """|Cohen's h| for a change d from p, in the direction that gives the smaller h (towards 0.5)."""
    phi = 2 * math.asin(math.sqrt(p))
    candidates = []
    for p2 in (p + d, p - d):
        if 0 <= p2 <= 1:
            candidates.append(abs(2 * math.asin(math.sqrt(p2)) - phi))
    return min(candidates)


def _power_obs(n: float, d: float, design: _Design) -> float:
    """Power at n questions (in the slice) for an observed change d."""
    z = design.z_alpha
    if design.kind == "unpaired":
        mean, sd_null, sd_alt = _h(design.p, d), math.sqrt(2 / n), math.sqrt(2 / n)
    elif design.kind == "paired":
        q = design.discordance
        mean, sd_null, sd_alt = d, math.sqrt(q / n), math.sqrt(max(q - d * d, 0.0) / n)
    else:
        mean, sd_null = d, design.sd_diff / math.sqrt(n)
        sd_alt = sd_null
    if sd_alt == 0:
        return 1.0 if mean > z * sd_null else 0.0
    upper = _sps.norm.sf((z * sd_null - mean) / sd_alt)
    if design.alternative == "one-sided":
        return float(upper)
    return float(upper + _sps.norm.cdf((-z * sd_null - mean) / sd_alt))


def _n_closed(d: float, design: _Design) -> float:
    """The one-tail closed form (an upper bound on the two-sided answer)."""
    za, zb = design.z_alpha, design.z_beta
    if design.kind == "unpaired":
        return 2 * ((za + zb) / _h(design.p, d)) ** 2
    if design.kind == "paired":
        q = design.discordance
        return ((za * math.sqrt(q) + zb * math.sqrt(max(q - d * d, 0.0))) / d) ** 2
    return ((za + zb) * design.sd_diff / d) ** 2


def _n_slice(d: float, design: _Design) -> int:
    """Smallest whole n whose power reaches the target."""
    n = max(1, math.ceil(_n_closed(d, design) - 1e-9))
    if n > _N_MAX:
        raise ValueError(f"the change {d:.3g} is too small to detect with any practical number of questions")
    while n > 1 and _power_obs(n - 1, d, design) >= design.power:
        n -= 1
    while _power_obs(n, d, design) < design.power:
        n += 1
    return n


def questions_needed(
    mde: float,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float = 1.0,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> int:
    """Questions needed to detect a true change of ``mde`` with the given power.

    Parameters
    ----------
    mde : float
        Minimum detectable effect: the smallest true change worth detecting, in the metric's units
        (0.03 = 3 points of pass rate).
    p : float
        Baseline pass rate (unpaired design).
    paired : bool
        Both configs answer the same questions; needs ``discordance``.
    discordance : float
        Share of questions whose pass/fail differs between the two configs (from a pilot; see
        ``df.rag.size``). The mean change can be at most the discordance.
    sd_diff : float
        Standard deviation of the per-question differences of a continuous metric (paired).
    power : float
        Probability of detecting a true change of ``mde``.
    alpha : float
        False-positive rate of the test.
    attenuation : float
        Judge attenuation ``J`` in (0, 1] (sensitivity + specificity - 1): a true change shows as
        ``J * mde``; about ``1 / J**2`` times as many questions.
    slice_fraction : float
        Share ``f`` of the questions that fall in the slice to be tested; the result is the total
        ``ceil(n_slice / f)``.
    alternative : {"two-sided", "one-sided"}
        Two-sided (any change, default) or one-sided (a change in a stated direction).

    Returns
    -------
    int
        Total questions (per run for the unpaired design).

    Notes
    -----
    The formulas are in the module docstring: unpaired uses the arcsine normal approximation
    (as statsmodels' ``NormalIndPower`` with ``proportion_effectsize``), paired pass/fail the
    McNemar-type normal approximation of Connor (1987), continuous the normal z-test. The result is
    the smallest ``n`` whose power (with both tails when two-sided) reaches ``power``.

    Examples
    --------
    >>> questions_needed(0.03, p=0.7)                                   # unpaired, per run
    3762
    >>> questions_needed(0.03, paired=True, discordance=0.1)            # paired
    870
    >>> questions_needed(0.03, paired=True, discordance=0.1, attenuation=0.5)  # a judge with J = 0.5
    3487
    >>> questions_needed(0.05, sd_diff=0.3, slice_fraction=0.1)         # a slice of 10% of traffic
    2830
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=power, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
    )
    n = _n_slice(_effect(mde, design), design)
    return math.ceil(n / design.slice_fraction - 1e-9)


def power(
    n: int,
    mde: float,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    alpha: float = 0.05,
    attenuation: float = 1.0,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> float:
    """Probability that ``n`` questions detect a true change of ``mde``.

    Parameters are as in :func:`questions_needed`; ``n`` is the total number of questions (per run
    when unpaired), of which a share ``slice_fraction`` is in the slice tested.

    Examples
    --------
    >>> round(power(300, 0.05, p=0.7), 3)
    0.258
    >>> round(power(300, 0.05, paired=True, discordance=0.1), 3)
    0.785
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=0.5, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
    )
    _check_n(n)
    return _power_obs(n * design.slice_fraction, _effect(mde, design), design)


def _check_n(n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)) or not n > 0:
        raise ValueError(f"`n` must be a positive number of questions, got {n!r}")


def detectable_difference(
    n: int,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float = 1.0,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> float:
    """Smallest true change that ``n`` questions detect with the given power.

    The inverse of :func:`questions_needed` for a fixed ``n`` (solved numerically on the same power
    function); divided by ``attenuation`` for a judge metric. Returns NaN when no change the design
    allows reaches the power (e.g. paired with a discordance too small).

    Examples
    --------
    >>> round(detectable_difference(300, p=0.7), 3)
    0.109
    >>> round(detectable_difference(300, paired=True, discordance=0.1), 3)
    0.051
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=power, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
    )
    _check_n(n)
    n_slice = n * design.slice_fraction

    def gap(d: float) -> float:
        return _power_obs(n_slice, d, design) - design.power

    top = design.max_effect()
    if math.isinf(top):  # continuous: the one-tail closed form bounds the answer from above
        top = (design.z_alpha + design.z_beta) * design.sd_diff / math.sqrt(n_slice) * 1.01
    if gap(top) < 0:
        return math.nan
    tiny = top * 1e-12
    if gap(tiny) >= 0:
        return tiny / design.attenuation
    d = _opt.brentq(gap, tiny, top, xtol=1e-14, rtol=1e-12)
    return float(d / design.attenuation)


# --------------------------------------------------------------------------------------------------
# Sizing from a pilot (df.rag.size)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class SizingResult:
    """Questions needed for a comparison, with the assumptions estimated from a pilot.

    Attributes
    ----------
    n : int
        Questions needed (total, paired).
    n_unpaired : int or None
        What two independent runs would need per run, for comparison.
    metric, kind : str
        The score column and "pass/fail" or "continuous".
    assumptions : dict
        Every number the answer rests on: mde, power, alpha, alternative, attenuation,
        slice_fraction, the pilot's size and estimates (``p_base``, ``p_cand``, ``discordance`` or
        ``sd_diff``) and the formula.
    """

    n: int
    n_unpaired: int | None
    metric: str
    kind: str
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row: metric, n, n_unpaired and every assumption."""
        return pd.DataFrame([{"metric": self.metric, "kind": self.kind, "n": self.n,
                              "n_unpaired": self.n_unpaired, **self.assumptions}])

    def _lines(self) -> list[tuple[str, str]]:
        a = self.assumptions
        lines = [("questions needed", f"{self.n} (paired: both configs answer the same questions)")]
        if self.n_unpaired is not None:
            lines.append(("unpaired, per run", f"{self.n_unpaired}"))
        lines.append(("to detect", f"a true change of {a['mde']:g} in {self.metric} ({self.kind})"))
        lines.append(("power, alpha", f"{a['power']:g}, {a['alpha']:g} ({a['alternative']})"))
        if self.kind == "pass/fail":
            lines.append(("pilot estimates", f"p_base {a['p_base']:.3f}, p_cand {a['p_cand']:.3f}, "
                          f"discordance {a['discordance']:.3f} on {a['n_pilot']} paired questions"))
        else:
            lines.append(("pilot estimates", f"sd of differences {a['sd_diff']:.4g} (mean diff "
                          f"{a['mean_diff']:+.4g}) on {a['n_pilot']} paired questions"))
        if a.get("n_excluded"):
            lines.append(("excluded", f"{a['n_excluded']} pilot questions with a missing score"))
        if a["attenuation"] != 1:
            lines.append(("judge attenuation", f"{a['attenuation']:g} (the judge shows {a['attenuation']:g}x a true change)"))
        if a["slice_fraction"] != 1:
            lines.append(("slice fraction", f"{a['slice_fraction']:g} (total questions so the slice has enough)"))
        lines.append(("formula", a["formula"]))
        return lines

    def __repr__(self) -> str:
        return "\n".join(["SizingResult"] + [f"  {k:<18} {v}" for k, v in self._lines()])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in self._lines()
        )
        return f"<div><b>SizingResult</b><table>{rows}</table></div>"


def size_from_pilot(
    base: np.ndarray,
    cand: np.ndarray,
    *,
    metric: str,
    mde: float,
    binary: bool | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float = 1.0,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> SizingResult:
    """Size a paired comparison from per-question pilot scores of two runs (same questions, same order).

    Pass/fail scores (all 0/1, or ``binary=True``) give ``p_base``, ``p_cand`` and the discordance;
    other scores the standard deviation of the differences (``ddof=1``). Pairs with a missing score
    are dropped and counted.

    Examples
    --------
    >>> res = size_from_pilot([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1, 1, 1, 0, 1],
    ...                       metric="hit@5", mde=0.05)
    >>> res.n, res.n_unpaired, res.assumptions["discordance"]
    (626, 1376, 0.2)
    """
    b = np.asarray(base, dtype=float)
    c = np.asarray(cand, dtype=float)
    if b.shape != c.shape or b.ndim != 1:
        raise ValueError(f"base and cand must be 1-D with the same length, got shapes {b.shape} and {c.shape}")
    keep = ~(np.isnan(b) | np.isnan(c))
    n_excluded = int((~keep).sum())
    b, c = b[keep], c[keep]
    n = len(b)
    if n < 2:
        raise ValueError(f"a pilot needs at least 2 questions scored in both runs, got {n}")
    is_binary = bool(np.isin(b, (0.0, 1.0)).all() and np.isin(c, (0.0, 1.0)).all())
    if binary is None:
        binary = is_binary
    elif binary and not is_binary:
        raise ValueError(f"binary=True but {metric!r} has values other than 0 and 1")
    common = {
        "mde": float(mde), "power": float(power), "alpha": float(alpha), "alternative": alternative,
        "attenuation": float(attenuation), "slice_fraction": float(slice_fraction),
        "n_pilot": n, "n_excluded": n_excluded,
    }
    if binary:
        discordance = float(np.mean(b != c))
        if discordance == 0:
            raise ValueError(
                f"the two pilot runs never differ on {metric!r} ({n} questions), so the discordance cannot be "
                "estimated; run a larger pilot or pass a planning value to sizing.questions_needed(discordance=...)"
            )
        p_base, p_cand = float(b.mean()), float(c.mean())
        design = _design(p=None, paired=True, discordance=discordance, sd_diff=None, power=power, alpha=alpha,
                         attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative)
        needed = questions_needed(mde, paired=True, discordance=discordance, power=power, alpha=alpha,
                                  attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative)
        unpaired = None
        if 0 < p_base < 1:
            unpaired = questions_needed(mde, p=p_base, power=power, alpha=alpha, attenuation=attenuation,
                                        slice_fraction=slice_fraction, alternative=alternative)
        assumptions = {**common, "p_base": p_base, "p_cand": p_cand, "discordance": discordance,
                       "formula": design.describe()}
        return SizingResult(needed, unpaired, metric, "pass/fail", assumptions)
    diff = c - b
    sd = float(np.std(diff, ddof=1))
    if sd == 0:
        raise ValueError(
            f"the per-question differences of {metric!r} are all equal in the pilot ({n} questions), so their "
            "standard deviation is 0; run a larger pilot or pass sizing.questions_needed(sd_diff=...)"
        )
    design = _design(p=None, paired=True, discordance=None, sd_diff=sd, power=power, alpha=alpha,
                     attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative)
    needed = questions_needed(mde, sd_diff=sd, power=power, alpha=alpha, attenuation=attenuation,
                              slice_fraction=slice_fraction, alternative=alternative)
    sd_independent = math.sqrt(float(np.var(b, ddof=1)) + float(np.var(c, ddof=1)))
    unpaired = None
    if sd_independent > 0:
        unpaired = questions_needed(mde, sd_diff=sd_independent, power=power, alpha=alpha, attenuation=attenuation,
                                    slice_fraction=slice_fraction, alternative=alternative)
    assumptions = {**common, "sd_diff": sd, "mean_diff": float(diff.mean()),
                   "sd_unpaired": sd_independent, "formula": design.describe()}
    return SizingResult(needed, unpaired, metric, "continuous", assumptions)
