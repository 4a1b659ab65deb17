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
whose power reaches the target. Three corrections:

* **A judge labels the answers** (``sensitivity=``, ``specificity=`` with ``p=``): ``p`` and the
  discordance describe the *true* outcomes. The four true cells (pass/pass, pass/fail, fail/pass,
  fail/fail; see :func:`paired_outcomes`) are passed through the judge independently for each answer
  (it passes a truly passing answer with probability ``se`` and a truly failing one with ``1 - sp``),
  giving the joint distribution of the judge's paired labels: their change is ``J * mde``
  (``J = se + sp - 1``) and their discordance is *larger* than the true one (judge errors flip
  labels on questions whose true outcome did not change). The test runs on the labels, so the
  design is sized on the labels' change and discordance. The change is applied in the direction (a
  rise or a fall from ``p``) that needs more questions.
* **Judge attenuation alone** ``J`` (``attenuation=``, :attr:`raglab.agreement.AgreementReport.attenuation`):
  the change is scaled to ``J * mde`` and nothing else, which is right only when the discordance
  (or ``sd_diff``) was *measured on the judge's labels*; the paired result says so. With a true
  discordance it underpowers badly (the ``1 / J**2`` rule: asked 0.80, about 0.5 in simulation).
* **Rare slices**: with ``slice_fraction=f`` the returned ``n`` is the *total* number of questions
  such that the slice (a share ``f`` of them) alone has enough: ``ceil(n_slice / f)``.

:func:`questions_for_gate` sizes the release gate itself: the ``n`` at which a truly unchanged
candidate passes a non-inferiority margin with the asked power.

Examples
--------
>>> from raglab import sizing
>>> round(sizing.standard_error(0.7, 300), 3)
0.026
>>> sizing.questions_needed(0.03, p=0.7)                     # two independent runs, per run
3762
>>> sizing.questions_needed(0.03, paired=True, discordance=0.1)  # paired: far fewer
870
>>> sizing.questions_needed(0.03, paired=True, discordance=0.1, p=0.7,
...                         sensitivity=0.943, specificity=0.635)  # judged labels: many more
6604
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

from raglab._validation import check_option

__all__ = [
    "PairedOutcomes",
    "SizingResult",
    "detectable_difference",
    "paired_outcomes",
    "power",
    "questions_for_gate",
    "questions_needed",
    "size_from_pilot",
    "standard_error",
]

_ALTERNATIVES = ("two-sided", "one-sided")
_PILOT_LABELS = ("true", "judge")
_N_MAX = 10**12
_TOL = 1e-12  # float slack for cell probabilities that are exactly 0 or 1 in exact arithmetic
_ATTENUATION_TOL = 1e-6
_PLANNING_LEVEL = 0.95


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


# --------------------------------------------------------------------------------------------------
# The joint distribution of paired pass/fail outcomes
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedOutcomes:
    """Joint distribution of the paired pass/fail outcomes of a baseline and a candidate on one question.

    Build the true distribution with :func:`paired_outcomes`; :meth:`through_judge` gives the
    distribution of a judge's labels of the same answers.

    Attributes
    ----------
    pass_pass, pass_fail, fail_pass, fail_fail : float
        Probabilities of (baseline, candidate) = (pass, pass), (pass, fail), (fail, pass) and
        (fail, fail); they sum to 1.

    Examples
    --------
    >>> true = paired_outcomes(0.7, discordance=0.10, change=0.03)
    >>> round(true.pass_fail, 3), round(true.fail_pass, 3), round(true.cand_rate, 2)
    (0.035, 0.065, 0.73)
    >>> seen = true.through_judge(sensitivity=0.943, specificity=0.635)
    >>> round(seen.discordance, 3), round(seen.difference, 4)    # 0.10 true becomes 0.24 on the labels
    (0.242, 0.0173)
    """

    pass_pass: float
    pass_fail: float
    fail_pass: float
    fail_fail: float

    @property
    def base_rate(self) -> float:
        """The baseline's pass rate."""
        return self.pass_pass + self.pass_fail

    @property
    def cand_rate(self) -> float:
        """The candidate's pass rate."""
        return self.pass_pass + self.fail_pass

    @property
    def difference(self) -> float:
        """``cand_rate - base_rate`` (= fail_pass - pass_fail)."""
        return self.fail_pass - self.pass_fail

    @property
    def discordance(self) -> float:
        """Share of questions whose pass/fail differs between the two (= pass_fail + fail_pass)."""
        return self.pass_fail + self.fail_pass

    def through_judge(self, *, sensitivity: float, specificity: float) -> PairedOutcomes:
        """The distribution of a judge's labels of both answers, its errors independent per answer.

        The judge passes a truly passing answer with probability ``sensitivity`` and a truly
        failing one with probability ``1 - specificity``, independently for the baseline's and the
        candidate's answer.

        Examples
        --------
        >>> seen = paired_outcomes(0.5, discordance=0.0, change=0.0).through_judge(
        ...     sensitivity=0.9, specificity=0.9)
        >>> round(seen.discordance, 3)                                # errors alone create flips
        0.18
        """
        se, sp = _judge_rates(sensitivity, specificity)  # type: ignore[misc]
        passes = {1: se, 0: 1 - sp}  # P(judge passes | true outcome)
        true = {(1, 1): self.pass_pass, (1, 0): self.pass_fail, (0, 1): self.fail_pass, (0, 0): self.fail_fail}
        seen = dict.fromkeys(true, 0.0)
        for (tb, tc), weight in true.items():
            for lb in (1, 0):
                pb = passes[tb] if lb else 1 - passes[tb]
                for lc in (1, 0):
                    pc = passes[tc] if lc else 1 - passes[tc]
                    seen[(lb, lc)] += weight * pb * pc
        return PairedOutcomes(seen[(1, 1)], seen[(1, 0)], seen[(0, 1)], seen[(0, 0)])

    def to_frame(self) -> pd.DataFrame:
        """The 2 x 2 table: baseline outcome as rows, candidate outcome as columns.

        Examples
        --------
        >>> table = paired_outcomes(0.7, discordance=0.1, change=0.0).to_frame()
        >>> table.round(2).to_numpy().tolist(), list(table.index), list(table.columns)
        ([[0.65, 0.05], [0.05, 0.25]], ['pass', 'fail'], ['pass', 'fail'])
        """
        return pd.DataFrame(
            [[self.pass_pass, self.pass_fail], [self.fail_pass, self.fail_fail]],
            index=pd.Index(["pass", "fail"], name="base"),
            columns=pd.Index(["pass", "fail"], name="cand"),
        )


def paired_outcomes(p: float, *, discordance: float, change: float) -> PairedOutcomes:
    """The true joint distribution of paired pass/fail outcomes from three numbers.

    With the baseline's pass rate ``p``, the share ``discordance`` of questions whose outcome
    differs and the change ``change`` in pass rate (candidate - baseline):
    ``pass_fail = (discordance - change) / 2``, ``fail_pass = (discordance + change) / 2``,
    ``pass_pass = p - pass_fail``, ``fail_fail = 1 - p - fail_pass``.

    Raises
    ------
    ValueError
        When a cell would leave [0, 1]; the message names the input that makes it impossible.

    Examples
    --------
    >>> t = paired_outcomes(0.7, discordance=0.1, change=-0.03)
    >>> round(t.pass_pass, 3), round(t.pass_fail, 3), round(t.fail_pass, 3), round(t.fail_fail, 3)
    (0.635, 0.065, 0.035, 0.265)
    """
    p = _rate("p", p)
    d = _rate("discordance", discordance)
    if not _is_number(change) or not math.isfinite(change):
        raise ValueError(f"`change` must be a number (candidate - baseline pass rate), got {change!r}")
    change = float(change)
    if abs(change) > d + _TOL:
        raise ValueError(
            f"a change of {abs(change):.4g} cannot happen when only {d:.4g} of the questions change pass/fail "
            "(discordance): the mean change is at most the discordance; raise `discordance` to at least the "
            "change or size for a smaller `mde`"
        )
    pass_fail = max((d - change) / 2, 0.0)
    fail_pass = max((d + change) / 2, 0.0)
    pass_pass = p - pass_fail
    fail_fail = 1 - p - fail_pass
    what = f"discordance {d:g} with a change of {change:+g}"
    if pass_pass < -_TOL:
        raise ValueError(
            f"`p` = {p:g} is impossible here: {what} needs {pass_fail:.4g} of the questions to pass in the "
            f"baseline and fail in the candidate, more than the baseline's pass rate {p:g}; raise `p` or "
            "lower `discordance`"
        )
    if fail_fail < -_TOL:
        raise ValueError(
            f"`p` = {p:g} is impossible here: {what} needs {fail_pass:.4g} of the questions to fail in the "
            f"baseline and pass in the candidate, more than the baseline's fail rate {1 - p:.4g}; lower `p` or "
            "`discordance`"
        )
    return PairedOutcomes(max(pass_pass, 0.0), pass_fail, fail_pass, max(fail_fail, 0.0))


# --------------------------------------------------------------------------------------------------
# Designs
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Design:
    kind: str  # "unpaired" | "paired" | "continuous"
    p: float | None
    discordance: float | None
    sd_diff: float | None
    power: float
    alpha: float
    attenuation: float  # J: the judge's (se + sp - 1) when a judge is given
    slice_fraction: float
    alternative: str
    judge: tuple[float, float] | None = None  # (sensitivity, specificity): outcomes are true, tests on labels
    attenuation_given: bool = False

    @property
    def z_alpha(self) -> float:
        tail = self.alpha / 2 if self.alternative == "two-sided" else self.alpha
        return float(_sps.norm.isf(tail))

    @property
    def z_beta(self) -> float:
        return float(_sps.norm.ppf(self.power))

    def describe(self) -> str:
        if self.kind == "unpaired":
            text = "unpaired pass rates: arcsine (Cohen's h) normal approximation, n per run"
            if self.judge:
                se, sp = self.judge
                text += (f"; on the judge's labels (sensitivity {se:g}, specificity {sp:g}): pass rate "
                         "p se + (1 - p)(1 - sp), change J x mde")
            return text
        if self.kind == "paired":
            text = "paired pass rates: McNemar-type normal approximation from the discordance (Connor 1987)"
            if self.judge:
                se, sp = self.judge
                text += (f", on the judge's labels: the true outcomes (p, discordance, mde) passed through a judge "
                         f"with sensitivity {se:g} and specificity {sp:g}, independently per answer")
            elif self.attenuation_given:
                text += (f"; the discordance is taken as measured on the judge's labels and the change scaled by "
                         f"the attenuation J = {self.attenuation:g} (for a TRUE discordance pass p=, sensitivity= "
                         "and specificity= instead)")
            return text
        return "paired continuous metric: z-test on per-question differences"


def _design(
    *,
    p: float | None,
    paired: bool,
    discordance: float | None,
    sd_diff: float | None,
    power: float,
    alpha: float,
    attenuation: float | None,
    slice_fraction: float,
    alternative: str,
    sensitivity: float | None = None,
    specificity: float | None = None,
) -> _Design:
    check_option("alternative", alternative, _ALTERNATIVES)
    alpha = _rate("alpha", alpha, open_low=True, open_high=True)
    power = _rate("power", power, open_low=True, open_high=True)
    tail = alpha / 2 if alternative == "two-sided" else alpha
    if power <= tail:
        raise ValueError(f"`power` ({power}) must exceed the false-positive rate of one tail ({tail})")
    slice_fraction = _rate("slice_fraction", slice_fraction, open_low=True)
    judge = _judge_rates(sensitivity, specificity)
    given = attenuation is not None
    att = 1.0 if attenuation is None else _rate("attenuation", attenuation, open_low=True)
    scaled = given and att != 1  # attenuation=1 (the old default) means no judge error
    if judge is not None:
        j = judge[0] + judge[1] - 1
        if given and abs(att - j) > _ATTENUATION_TOL:
            raise ValueError(
                f"`attenuation` = {att:g} contradicts sensitivity + specificity - 1 = {j:.6g}: the judge's "
                "sensitivity and specificity already fix its attenuation; drop `attenuation`"
            )
        att = j
    common = dict(power=power, alpha=alpha, attenuation=att, slice_fraction=slice_fraction, alternative=alternative,
                  judge=judge, attenuation_given=scaled)
    if sd_diff is not None:
        if discordance is not None:
            raise ValueError("pass either `discordance` (pass/fail metrics) or `sd_diff` (continuous), not both")
        if not (_is_number(sd_diff) and sd_diff > 0 and math.isfinite(sd_diff)):
            raise ValueError(f"`sd_diff` must be a positive standard deviation, got {sd_diff!r}")
        if judge is not None:
            raise ValueError(
                "`sensitivity` and `specificity` describe a judge's pass/fail labels; a continuous metric "
                "(`sd_diff`) takes `attenuation=` (how much of a true change the judge's score shows) instead"
            )
        if p is not None:
            raise ValueError(
                f"`p` = {p!r} is a pass rate and does not enter the sizing of a continuous metric (`sd_diff`); drop `p`"
            )
        return _Design("continuous", None, None, float(sd_diff), **common)
    if paired:
        if discordance is None:
            raise ValueError(
                "paired sizing of a pass rate needs `discordance`: the share of questions whose pass/fail "
                "differs between the two configs (estimate it from a pilot with df.rag.size), or pass "
                "`sd_diff` for a continuous metric"
            )
        q = _rate("discordance", discordance, open_low=True)
        if judge is not None:
            if p is None:
                raise ValueError(
                    "paired sizing with a judge's `sensitivity` and `specificity` needs `p`, the baseline's TRUE "
                    "pass rate: how many answers the judge can wrongly fail or pass depends on it (e.g. p=0.7)"
                )
            return _Design("paired", _rate("p", p), q, None, **common)
        if p is not None:
            raise ValueError(
                f"`p` = {p!r} does not change paired sizing without a judge: the paired test depends only on the "
                "discordance and the change. Drop `p`, or pass `sensitivity=` and `specificity=` too when a judge "
                "labels the answers (then `p` and `discordance` are the TRUE outcomes)"
            )
        return _Design("paired", None, q, None, **common)
    if discordance is not None:
        raise ValueError("`discordance` describes a paired design: pass paired=True with it")
    if p is None:
        raise ValueError("unpaired sizing of a pass rate needs `p`, the baseline pass rate (e.g. p=0.7)")
    p = _rate("p", p, open_low=True, open_high=True)
    return _Design("unpaired", p, None, None, **common)


@dataclass(frozen=True)
class _Scenario:
    """What the test sees for one direction of a true change."""

    effect: float  # |observed change| (paired, continuous) or |Cohen's h| (unpaired)
    q: float | None = None  # observed discordance (paired)
    direction: str = "either"
    outcomes: PairedOutcomes | None = None  # the judge's labels (paired with a judge)


def _check_mde(mde: Any) -> float:
    if not _is_number(mde) or not mde > 0 or not math.isfinite(mde):
        raise ValueError(f"`mde` must be a positive change (e.g. 0.03 for 3 points), got {mde!r}")
    return float(mde)


def _h(p: float, d: float) -> float:
    """|Cohen's h| for a change d from p, in the direction that gives the smaller h (towards 0.5)."""
    phi = 2 * math.asin(math.sqrt(p))
    candidates = []
    for p2 in (p + d, p - d):
        if 0 <= p2 <= 1:
            candidates.append(abs(2 * math.asin(math.sqrt(p2)) - phi))
    return min(candidates)


def _scenarios(mde: Any, design: _Design) -> list[_Scenario]:
    """Every direction of a true change of ``mde`` the design allows, as the test sees it."""
    m = _check_mde(mde)
    att = design.attenuation
    if design.kind == "continuous":
        return [_Scenario(m * att)]
    if design.kind == "unpaired":
        p = design.p
        if design.judge is None:
            d = m * att
            if d > max(p, 1 - p):
                raise ValueError(f"a change of {d:.4g} from p = {p} leaves [0, 1] in both directions")
            return [_Scenario(_h(p, d))]
        se, sp = design.judge
        seen = p * se + (1 - p) * (1 - sp)
        phi = 2 * math.asin(math.sqrt(seen))
        out = [
            _Scenario(abs(2 * math.asin(math.sqrt(seen + sign * att * m)) - phi), direction=name)
            for sign, name in ((1, "rise"), (-1, "fall"))
            if 0 <= p + sign * m <= 1
        ]
        if not out:
            raise ValueError(f"a change of {m:.4g} from p = {p} leaves [0, 1] in both directions")
        return out
    q = design.discordance
    if design.judge is None:
        d = m * att
        if d > q:
            raise ValueError(
                f"a change of {d:.4g} (mde {m:g} x attenuation {att:g}) cannot happen when only {q:.4g} of the "
                "questions change pass/fail (discordance): the mean change is at most the discordance; raise "
                "`discordance` or size for a smaller `mde`"
            )
        return [_Scenario(d, q)]
    if m > q:
        raise ValueError(
            f"a change of {m:.4g} cannot happen when only {q:.4g} of the questions change pass/fail "
            "(discordance): the mean change is at most the discordance; raise `discordance` or size for a "
            "smaller `mde`"
        )
    se, sp = design.judge
    out, errors = [], []
    for sign, name in ((1, "rise"), (-1, "fall")):
        try:
            true = paired_outcomes(design.p, discordance=q, change=sign * m)
        except ValueError as exc:
            errors.append(f"a {name}: {exc}")
            continue
        seen = true.through_judge(sensitivity=se, specificity=sp)
        out.append(_Scenario(abs(seen.difference), seen.discordance, name, seen))
    if not out:
        raise ValueError(f"neither a rise nor a fall of {m:g} is possible; " + "; ".join(errors))
    return out


def _max_mde(design: _Design) -> float:
    """Largest true change the design allows (in some direction)."""
    att = design.attenuation
    if design.kind == "unpaired":
        top = max(design.p, 1 - design.p)
        return top if design.judge else top / att
    if design.kind == "paired":
        q = design.discordance
        if design.judge is None:
            return q / att
        p = design.p
        tops = []
        for low, high in ((max(0.0, q - 2 * p), min(q, 2 * (1 - p) - q)),  # rise
                          (max(0.0, q - 2 * (1 - p)), min(q, 2 * p - q))):  # fall
            if high >= low and high > 0:
                tops.append(high)
        return max(tops) if tops else 0.0
    return math.inf


# --------------------------------------------------------------------------------------------------
# Power
# --------------------------------------------------------------------------------------------------


def _power_obs(n: float, sc: _Scenario, design: _Design) -> float:
    """Power at n questions (in the slice) for one scenario."""
    z = design.z_alpha
    if design.kind == "unpaired":
        mean, sd_null, sd_alt = sc.effect, math.sqrt(2 / n), math.sqrt(2 / n)
    elif design.kind == "paired":
        q, d = sc.q, sc.effect
        mean, sd_null, sd_alt = d, math.sqrt(q / n), math.sqrt(max(q - d * d, 0.0) / n)
    else:
        mean, sd_null = sc.effect, design.sd_diff / math.sqrt(n)
        sd_alt = sd_null
    if sd_alt == 0:
        return 1.0 if mean > z * sd_null else 0.0
    upper = _sps.norm.sf((z * sd_null - mean) / sd_alt)
    if design.alternative == "one-sided":
        return float(upper)
    return float(upper + _sps.norm.cdf((-z * sd_null - mean) / sd_alt))


def _n_closed(sc: _Scenario, design: _Design) -> float:
    """The one-tail closed form (an upper bound on the two-sided answer)."""
    za, zb = design.z_alpha, design.z_beta
    if design.kind == "unpaired":
        return 2 * ((za + zb) / sc.effect) ** 2
    if design.kind == "paired":
        q, d = sc.q, sc.effect
        return ((za * math.sqrt(q) + zb * math.sqrt(max(q - d * d, 0.0))) / d) ** 2
    return ((za + zb) * design.sd_diff / sc.effect) ** 2


def _n_slice(sc: _Scenario, design: _Design) -> int:
    """Smallest whole n whose power reaches the target."""
    if sc.effect <= 0:
        raise ValueError("the change is too small to detect with any practical number of questions")
    n = max(1, math.ceil(_n_closed(sc, design) - 1e-9))
    if n > _N_MAX:
        raise ValueError(f"the change {sc.effect:.3g} is too small to detect with any practical number of questions")
    while n > 1 and _power_obs(n - 1, sc, design) >= design.power:
        n -= 1
    while _power_obs(n, sc, design) < design.power:
        n += 1
    return n


def _worst(scenarios: list[_Scenario], design: _Design) -> tuple[int, _Scenario]:
    """The direction that needs the most questions, and that number (in the slice)."""
    sized = [(_n_slice(sc, design), sc) for sc in scenarios]
    return max(sized, key=lambda item: item[0])


def questions_needed(
    mde: float,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float | None = None,
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
        Baseline pass rate: the unpaired design's rate, or, with ``sensitivity``/``specificity``,
        the baseline's TRUE pass rate (paired or unpaired). Refused in a paired design without a
        judge, where it would change nothing.
    paired : bool
        Both configs answer the same questions; needs ``discordance``.
    discordance : float
        Share of questions whose pass/fail differs between the two configs (from a pilot; see
        ``df.rag.size``). With a judge it is the TRUE discordance; with ``attenuation`` alone it is
        taken as measured on the judge's labels. The mean change can be at most the discordance.
    sd_diff : float
        Standard deviation of the per-question differences of a continuous metric (paired).
    sensitivity, specificity : float, optional
        The judge that labels the answers (from :func:`raglab.agreement.report`): it passes a
        truly passing answer with probability ``sensitivity`` and fails a truly failing one with
        probability ``specificity``, independently for every answer. Needs ``p``; the power is
        that of the test on the judge's labels (see the module docstring).
    power : float
        Probability of detecting a true change of ``mde``.
    alpha : float
        False-positive rate of the test.
    attenuation : float, optional
        Judge attenuation ``J`` in (0, 1] (sensitivity + specificity - 1): a true change shows as
        ``J * mde``; nothing else changes, so the discordance (or ``sd_diff``) must have been
        measured on the judge's labels. With ``sensitivity``/``specificity`` it is refused unless
        equal to ``sensitivity + specificity - 1``.
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
    McNemar-type normal approximation of Connor (1987), continuous the normal z-test. With a judge,
    the paired test is sized on the joint distribution of the judge's labels
    (``paired_outcomes(p, ...).through_judge(...)``): change ``J * mde``, discordance larger than
    the true one. The change is applied in the direction (rise or fall) that needs more questions,
    among those the inputs allow. The result is the smallest ``n`` whose power (with both tails
    when two-sided) reaches ``power``.

    Examples
    --------
    >>> questions_needed(0.03, p=0.7)                                   # unpaired, per run
    3762
    >>> questions_needed(0.03, paired=True, discordance=0.1)            # paired
    870
    >>> questions_needed(0.03, paired=True, discordance=0.1, p=0.7,     # a judge labels both runs
    ...                  sensitivity=0.943, specificity=0.635)
    6604
    >>> questions_needed(0.03, paired=True, discordance=0.1, attenuation=0.5)  # discordance of the labels
    3487
    >>> questions_needed(0.05, sd_diff=0.3, slice_fraction=0.1)         # a slice of 10% of traffic
    2830
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=power, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        sensitivity=sensitivity, specificity=specificity,
    )
    n, _ = _worst(_scenarios(mde, design), design)
    return math.ceil(n / design.slice_fraction - 1e-9)


def power(
    n: int,
    mde: float,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    alpha: float = 0.05,
    attenuation: float | None = None,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> float:
    """Probability that ``n`` questions detect a true change of ``mde``.

    Parameters are as in :func:`questions_needed`; ``n`` is the total number of questions (per run
    when unpaired), of which a share ``slice_fraction`` is in the slice tested. When the change
    could be a rise or a fall, the smaller of the two powers.

    Examples
    --------
    >>> round(power(300, 0.05, p=0.7), 3)
    0.258
    >>> round(power(300, 0.05, paired=True, discordance=0.1), 3)
    0.785
    >>> round(power(2591, 0.03, paired=True, discordance=0.1, p=0.7,
    ...             sensitivity=0.943, specificity=0.635), 2)     # the 1/J^2 rule's n: about half
    0.42
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=0.5, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        sensitivity=sensitivity, specificity=specificity,
    )
    _check_n(n)
    return min(_power_obs(n * design.slice_fraction, sc, design) for sc in _scenarios(mde, design))


def _check_n(n: Any) -> None:
    if not _is_number(n) or not n > 0:
        raise ValueError(f"`n` must be a positive number of questions, got {n!r}")


def detectable_difference(
    n: int,
    *,
    p: float | None = None,
    paired: bool = False,
    discordance: float | None = None,
    sd_diff: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float | None = None,
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> float:
    """Smallest true change that ``n`` questions detect with the given power.

    The inverse of :func:`questions_needed` for a fixed ``n`` (solved numerically on the same power
    function, on the scale of the true change: a judge's attenuation and added discordance are
    accounted for). Returns NaN when no change the design allows reaches the power (e.g. paired
    with a discordance too small).

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
        sensitivity=sensitivity, specificity=specificity,
    )
    _check_n(n)
    n_slice = n * design.slice_fraction

    def gap(m: float) -> float:
        try:
            scenarios = _scenarios(m, design)
        except ValueError:  # no direction allows this change
            return -design.power
        return min(_power_obs(n_slice, sc, design) for sc in scenarios) - design.power

    top = _max_mde(design)
    if math.isinf(top):  # continuous: the one-tail closed form bounds the answer from above
        top = (design.z_alpha + design.z_beta) * design.sd_diff / design.attenuation / math.sqrt(n_slice) * 1.01
    if not top > 0 or gap(top) < 0:
        return math.nan
    tiny = top * 1e-12
    if gap(tiny) >= 0:
        return tiny
    return float(_opt.brentq(gap, tiny, top, xtol=1e-14, rtol=1e-12))


# --------------------------------------------------------------------------------------------------
# Sizing the release gate
# --------------------------------------------------------------------------------------------------


def _gate_variance(
    *, paired: bool, discordance: Any, sd_diff: Any, p: Any, sensitivity: Any, specificity: Any,
) -> tuple[float, PairedOutcomes | None]:
    """Variance of one question's difference (cand - base) when nothing truly changed."""
    if not paired:
        raise ValueError(
            "the release gate compares paired runs (both configs answer the same questions, paired by "
            "question id): pass paired=True (the default)"
        )
    judge = _judge_rates(sensitivity, specificity)
    if sd_diff is not None:
        if discordance is not None:
            raise ValueError("pass either `discordance` (pass/fail metrics) or `sd_diff` (continuous), not both")
        if not (_is_number(sd_diff) and sd_diff > 0 and math.isfinite(sd_diff)):
            raise ValueError(f"`sd_diff` must be a positive standard deviation, got {sd_diff!r}")
        if judge is not None or p is not None:
            raise ValueError(
                "`sd_diff` sizes a continuous metric on its own: drop `p`, `sensitivity` and `specificity` "
                "(pass/fail designs); measure `sd_diff` on the judge's scores if a judge gives them"
            )
        return float(sd_diff) ** 2, None
    if discordance is None:
        raise ValueError(
            "sizing the gate needs `discordance` (pass/fail: the share of questions whose pass/fail differs "
            "between two runs of an unchanged config) or `sd_diff` (continuous: sd of per-question differences)"
        )
    q = _rate("discordance", discordance, open_low=True)
    if judge is None:
        if p is not None:
            raise ValueError(
                f"`p` = {p!r} does not change the gate's sizing without a judge: the variance of a paired "
                "difference with no true change is the discordance. Drop `p`, or pass `sensitivity=` and "
                "`specificity=` too when a judge labels the answers (then `p` and `discordance` are the TRUE outcomes)"
            )
        return q, None
    if p is None:
        raise ValueError(
            "sizing the gate with a judge's `sensitivity` and `specificity` needs `p`, the baseline's TRUE pass "
            "rate (e.g. p=0.7)"
        )
    seen = paired_outcomes(p, discordance=q, change=0.0).through_judge(sensitivity=judge[0], specificity=judge[1])
    return seen.discordance, seen


def questions_for_gate(
    margin: float,
    *,
    paired: bool = True,
    discordance: float | None = None,
    sd_diff: float | None = None,
    p: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    power: float = 0.8,
    ci: float = 0.95,
    slice_fraction: float = 1.0,
) -> int:
    """Questions at which a truly unchanged candidate passes the non-inferiority gate with the asked power.

    The gate (:func:`raglab.stats.gate`) passes a row when the lower end of the two-sided ``ci``
    interval on ``mean(cand - base)`` is at least ``-margin``. With no true change and a
    per-question difference of variance ``v``, the lower end is about
    ``N(0, v / n) - z sqrt(v / n)`` with ``z = z_{1 - (1 - ci) / 2}``, so the gate passes with
    probability ``Phi(margin sqrt(n / v) - z)`` and

    ``n = ceil((z + z_power)**2 * v / margin**2)``.

    ``v`` is the discordance for a pass/fail metric (the share of questions whose outcome differs
    between two runs of equal quality) and ``sd_diff**2`` for a continuous one. With a judge
    (``sensitivity``, ``specificity`` and the TRUE ``p`` and ``discordance``), ``v`` is the
    discordance of the judge's labels, larger than the true one (see :func:`paired_outcomes`), and
    the margin applies to the judge's pass rate, which is what the gate sees.

    Parameters
    ----------
    margin : float
        The gate's non-inferiority margin (the largest drop to ship without discussion).
    paired : bool
        The gate is paired by question id; only True is accepted.
    discordance, sd_diff, p, sensitivity, specificity : float, optional
        As in :func:`questions_needed` (``p`` is used with a judge and refused without one).
    power : float
        Probability that an unchanged candidate passes.
    ci : float
        Level of the gate's two-sided interval (its ``ci=``).
    slice_fraction : float
        Share of the questions in the slice (every slice row must pass too): the total ``ceil(n / f)``.

    Returns
    -------
    int
        Total questions.

    Examples
    --------
    >>> questions_for_gate(0.02, discordance=0.1)               # (1.96 + 0.84)^2 x 0.1 / 0.02^2
    1963
    >>> questions_for_gate(0.02, discordance=0.1, p=0.7, sensitivity=0.943, specificity=0.635)
    4861
    >>> questions_for_gate(0.01, sd_diff=0.15)
    1766
    """
    if not _is_number(margin) or not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"`margin` must be a positive drop (e.g. 0.02 for 2 points), got {margin!r}")
    ci = _rate("ci", ci, open_low=True, open_high=True)
    power = _rate("power", power, open_low=True, open_high=True)
    slice_fraction = _rate("slice_fraction", slice_fraction, open_low=True)
    v, _ = _gate_variance(paired=paired, discordance=discordance, sd_diff=sd_diff, p=p,
                          sensitivity=sensitivity, specificity=specificity)
    z = float(_sps.norm.isf((1 - ci) / 2))
    zp = float(_sps.norm.ppf(power))
    if z + zp <= 0:
        raise ValueError(f"`power` = {power:g} is below what the gate gives an unchanged candidate with one question")
    n = max(1, math.ceil((z + zp) ** 2 * v / float(margin) ** 2 - 1e-9))
    if n > _N_MAX:
        raise ValueError(f"a margin of {margin:g} is too small to size with any practical number of questions")
    return math.ceil(n / slice_fraction - 1e-9)


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
        ``sd_diff``), the discordance used (``discordance_used``, a planning value when the pilot's
        is below the change), the judge (``sensitivity``, ``specificity``, ``pilot_labels``, and
        the labels' ``label_discordance`` and ``label_change``) and the formula.
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
        if a.get("planning_note"):
            lines.append(("planning value", a["planning_note"]))
        if a.get("sensitivity") is not None:
            source = f" from {a['judge_source']}" if a.get("judge_source") else ""
            lines.append(("judge", f"sensitivity {a['sensitivity']:.3f}, specificity {a['specificity']:.3f} "
                          f"(J = {a['attenuation']:.3f}){source}; errors independent per answer"))
            if a.get("pilot_labels") == "true":
                lines.append(("pilot labels", "taken as the TRUE outcomes (people or an exact metric); the judge's "
                              "errors are added on top. If the pilot scores are the judge's own labels, pass "
                              "pilot_labels='judge'"))
            else:
                lines.append(("pilot labels", "the judge's own labels: their discordance already includes its "
                              "errors; the change is scaled by J"))
            if a.get("label_discordance") is not None:
                lines.append(("judge's labels", f"discordance {a['label_discordance']:.3f}, change "
                              f"{a['label_change']:.4f} ({a['direction']}) as the paired test sees them"))
        elif a["attenuation"] != 1:
            extra = ("; the pilot's discordance is taken as measured on the judge's labels"
                     if self.kind == "pass/fail" else "")
            lines.append(("judge attenuation", f"{a['attenuation']:g} (the judge shows {a['attenuation']:g}x a true "
                          f"change){extra}"))
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


def _upper_rate(k: int, n: int, level: float = _PLANNING_LEVEL) -> float:
    """One-sided Clopper-Pearson upper bound of a rate with k events in n."""
    if k >= n:
        return 1.0
    return float(_sps.beta.ppf(level, k + 1, n - k))


def _planning_discordance(b: np.ndarray, c: np.ndarray, needed: float) -> tuple[float, float]:
    """Planning discordance ``needed + 2 U`` and ``U`` (see :func:`size_from_pilot`)."""
    n = len(b)
    losses = int(np.sum((b == 1) & (c == 0)))
    wins = int(np.sum((b == 0) & (c == 1)))
    u = _upper_rate(min(losses, wins), n)
    return min(1.0, needed + 2 * u), u


def _judge_from(judge: Any, sensitivity: Any, specificity: Any) -> tuple[Any, Any, str | None]:
    if judge is None:
        return sensitivity, specificity, None
    if sensitivity is not None or specificity is not None:
        raise ValueError(
            "pass either `judge=` (an AgreementReport) or `sensitivity=`/`specificity=`, not both"
        )
    se, sp = getattr(judge, "sensitivity", None), getattr(judge, "specificity", None)
    if se is None or sp is None:
        raise ValueError(
            f"`judge` must be an AgreementReport with sensitivity and specificity (made by raglab.agreement.report "
            f"with positive=... and both classes among the human labels), got {type(judge).__name__} with "
            f"sensitivity {se!r} and specificity {sp!r}"
        )
    name = f"AgreementReport ({getattr(judge, 'human_name', 'human')} vs {getattr(judge, 'judge_name', 'judge')}, " \
           f"{getattr(judge, 'n', '?')} items)"
    return float(se), float(sp), name


def size_from_pilot(
    base: np.ndarray,
    cand: np.ndarray,
    *,
    metric: str,
    mde: float,
    binary: bool | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    judge: Any = None,
    pilot_labels: str = "true",
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
) -> SizingResult:
    """Size a paired comparison from per-question pilot scores of two runs (same questions, same order).

    Pass/fail scores (all 0/1, or ``binary=True``) give ``p_base``, ``p_cand`` and the discordance;
    other scores the standard deviation of the differences (``ddof=1``). Pairs with a missing score
    are dropped and counted.

    Parameters
    ----------
    base, cand : array-like
        The pilot's per-question scores of the two runs.
    metric : str
        The score's name (for the report).
    mde, binary, power, alpha, slice_fraction, alternative
        As in :func:`questions_needed`.
    attenuation : float, optional
        Judge attenuation alone: the pilot's discordance is taken as measured on the judge's labels.
    sensitivity, specificity : float, optional
        The judge that will label the eval set (pass/fail metrics only).
    judge : AgreementReport, optional
        Takes ``sensitivity`` and ``specificity`` from a validation of the judge against people
        (:func:`raglab.agreement.report`); not together with them.
    pilot_labels : {"true", "judge"}
        With a judge: ``"true"`` (default) when the pilot's scores are the true outcomes (people's
        labels or an exact metric), so ``p_base`` and the discordance are true and the judge's
        errors are added on top (:func:`questions_needed` with ``p``, ``sensitivity``,
        ``specificity``); ``"judge"`` when they are the judge's own labels, whose discordance
        already includes its errors (only the change is scaled, by ``J``).

    Notes
    -----
    **Planning value.** A true change of ``mde`` needs at least ``mde`` of the questions to change
    outcome (``mde * J`` on judge labels). When the pilot's discordance is below that, the pilot
    cannot be the planning value, and the result is sized on
    ``needed + 2 U`` instead, said so in its text: ``U`` is the 95% one-sided Clopper-Pearson upper
    bound of the pilot's share of questions that flipped the less common way (pass to fail, or fail
    to pass). The reasoning: a change is ``wins - losses`` and the discordance ``wins + losses``;
    the planned change supplies the net ``mde`` and the pilot tells how often questions flip
    against the change (the churn that remains whatever the candidate does), taken at its upper
    bound because the pilot saw few flips. Pass your own value to
    ``sizing.questions_needed(discordance=...)`` if you have a better one.

    Examples
    --------
    >>> res = size_from_pilot([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1, 1, 1, 0, 1],
    ...                       metric="hit@5", mde=0.05)
    >>> res.n, res.n_unpaired, res.assumptions["discordance"]
    (626, 1376, 0.2)
    >>> size_from_pilot([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1, 1, 1, 0, 1], metric="human",
    ...                 mde=0.05, sensitivity=0.9, specificity=0.8).n   # a judge will label the eval set
    2071
    """
    check_option("pilot_labels", pilot_labels, _PILOT_LABELS)
    sensitivity, specificity, judge_source = _judge_from(judge, sensitivity, specificity)
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
    judged = _judge_rates(sensitivity, specificity)
    options = dict(power=power, alpha=alpha, slice_fraction=slice_fraction, alternative=alternative)
    common = {
        "mde": float(mde), "power": float(power), "alpha": float(alpha), "alternative": alternative,
        "attenuation": 1.0 if attenuation is None else float(attenuation), "slice_fraction": float(slice_fraction),
        "n_pilot": n, "n_excluded": n_excluded,
    }
    if not binary:
        if judged is not None:
            raise ValueError(
                f"`sensitivity`/`specificity`/`judge` describe a judge's pass/fail labels, but {metric!r} is a "
                "continuous score; pass `attenuation=` for a judge's continuous score, or binary=True for 0/1 scores"
            )
        diff = c - b
        sd = float(np.std(diff, ddof=1))
        if sd == 0:
            raise ValueError(
                f"the per-question differences of {metric!r} are all equal in the pilot ({n} questions), so their "
                "standard deviation is 0; run a larger pilot or pass sizing.questions_needed(sd_diff=...)"
            )
        design = _design(p=None, paired=True, discordance=None, sd_diff=sd, attenuation=attenuation, **options)
        needed = questions_needed(mde, sd_diff=sd, attenuation=attenuation, **options)
        sd_independent = math.sqrt(float(np.var(b, ddof=1)) + float(np.var(c, ddof=1)))
        unpaired = None
        if sd_independent > 0:
            unpaired = questions_needed(mde, sd_diff=sd_independent, attenuation=attenuation, **options)
        assumptions = {**common, "sd_diff": sd, "mean_diff": float(diff.mean()),
                       "sd_unpaired": sd_independent, "formula": design.describe()}
        return SizingResult(needed, unpaired, metric, "continuous", assumptions)

    discordance = float(np.mean(b != c))
    p_base, p_cand = float(b.mean()), float(c.mean())
    m = _check_mde(mde)
    # What the test needs: with a judge and true pilot labels the design works on true outcomes.
    if judged is not None and pilot_labels == "true":
        judge_kw: dict[str, Any] = dict(p=p_base, sensitivity=judged[0], specificity=judged[1],
                                         attenuation=attenuation)
        scale, needed_change = 1.0, m
    else:
        j = (judged[0] + judged[1] - 1) if judged is not None else None
        if j is not None and attenuation is not None and abs(float(attenuation) - j) > _ATTENUATION_TOL:
            raise ValueError(
                f"`attenuation` = {attenuation:g} contradicts sensitivity + specificity - 1 = {j:.6g}; drop `attenuation`"
            )
        att = j if j is not None else attenuation
        judge_kw = dict(attenuation=att)
        scale = 1.0 if att is None else float(att)
        needed_change = m * scale
    planning_note = None
    used = discordance
    if discordance < needed_change:
        used, u = _planning_discordance(b, c, needed_change)
        what = "the mde" if scale == 1 else f"the change the judge shows (mde x J = {needed_change:.4g})"
        if discordance == 0:
            raise ValueError(
                f"the two pilot runs never differ on {metric!r} ({n} questions), so the discordance cannot be "
                f"estimated; run a larger pilot or pass a planning value to sizing.questions_needed(discordance=...), "
                f"e.g. {used:.3f} ({what} + 2 x {u:.4f}, the 95% upper bound of the pilot's flip rate each way)"
            )
        planning_note = (
            f"the pilot's discordance {discordance:.4f} is below {what}, so it cannot show such a change; sized "
            f"with the planning value {used:.4f} = {needed_change:.4g} + 2 x {u:.4f} (95% upper bound of the "
            "pilot's share of questions flipping the less common way). Pass your own to "
            "sizing.questions_needed(discordance=...)"
        )
    design = _design(p=judge_kw.get("p"), paired=True, discordance=used, sd_diff=None,
                     sensitivity=judge_kw.get("sensitivity"), specificity=judge_kw.get("specificity"),
                     attenuation=judge_kw.get("attenuation"), **options)
    n_slice, worst = _worst(_scenarios(m, design), design)
    needed = math.ceil(n_slice / design.slice_fraction - 1e-9)
    unpaired = None
    if 0 < p_base < 1:
        if judged is not None and pilot_labels == "true":
            unpaired = questions_needed(mde, p=p_base, sensitivity=judged[0], specificity=judged[1], **options)
        else:
            unpaired = questions_needed(mde, p=p_base, attenuation=judge_kw.get("attenuation"), **options)
    assumptions = {**common, "attenuation": design.attenuation, "p_base": p_base, "p_cand": p_cand,
                   "discordance": discordance, "discordance_used": used, "formula": design.describe()}
    if planning_note:
        assumptions["planning_note"] = planning_note
    if judged is not None:
        assumptions.update(sensitivity=judged[0], specificity=judged[1], pilot_labels=pilot_labels,
                           judge_source=judge_source)
        if worst.outcomes is not None:
            assumptions.update(label_discordance=worst.outcomes.discordance, label_change=worst.effect,
                               direction=worst.direction)
    return SizingResult(needed, unpaired, metric, "pass/fail", assumptions)
