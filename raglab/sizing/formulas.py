"""Sample-size formulas: standard errors, questions needed, power and the detectable difference.

One design object (:class:`_Design`: unpaired, paired or continuous; with or without a judge)
and the scenarios it allows (a rise or a fall, as the test sees them) feed one power function;
:func:`questions_needed`, :func:`power` and :func:`detectable_difference` are three ways of
reading it. The formulas are stated in :mod:`raglab.sizing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import optimize as _opt
from scipy import stats as _sps

from raglab._validation import check_option
from raglab.sizing import _exact
from raglab.sizing._checks import (
    _ATTENUATION_TOL,
    _N_MAX,
    _check_mde,
    _check_n,
    _check_sd_diff,
    _design_effect,
    _judge_rates,
    _rate,
)
from raglab.sizing.outcomes import PairedOutcomes, paired_outcomes

__all__ = ["detectable_difference", "power", "questions_needed", "standard_error"]

_ALTERNATIVES = ("two-sided", "one-sided")


def standard_error(p: float, n: int) -> float:
    """Standard error of a pass rate ``p`` measured on ``n`` questions: ``sqrt(p (1 - p) / n)``.

    Examples
    --------
    >>> round(standard_error(0.7, 300), 4)       # about +-5 points at 95%
    0.0265
    """
    _rate("p", p)
    _check_n(n)
    return math.sqrt(p * (1 - p) / n)


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
    design_effect: float = 1.0  # clustered questions: n is inflated by it

    @property
    def z_alpha(self) -> float:
        tail = self.alpha / 2 if self.alternative == "two-sided" else self.alpha
        return float(_sps.norm.isf(tail))

    @property
    def z_beta(self) -> float:
        return float(_sps.norm.ppf(self.power))

    def describe(self) -> str:
        text = self._describe()
        if self.design_effect != 1:
            text += (f"; clustered questions: design effect {self.design_effect:.4g}, so n is "
                     f"{self.design_effect:.4g} x the independent-question n (normal approximation on n / design "
                     "effect; compare and the gate resample whole clusters)")
        return text

    def _describe(self) -> str:
        if self.kind == "unpaired":
            text = "unpaired pass rates: arcsine (Cohen's h) normal approximation, n per run"
            if self.judge:
                se, sp = self.judge
                text += (f"; on the judge's labels (sensitivity {se:g}, specificity {sp:g}): pass rate "
                         "p se + (1 - p)(1 - sp), change J x mde")
            return text
        if self.kind == "paired":
            text = ("paired pass rates: the exact McNemar test (as raglab.stats.compare reports it), power summed over "
                    "the discordant counts" if self.design_effect == 1 else
                    "paired pass rates: McNemar-type normal approximation from the discordance (Connor 1987)")
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
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
) -> _Design:
    check_option("alternative", alternative, _ALTERNATIVES)
    deff, _ = _design_effect(design_effect, icc, cluster_size)
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
                  judge=judge, attenuation_given=scaled, design_effect=deff)
    if sd_diff is not None:
        sd_diff = _check_sd_diff(sd_diff, discordance)
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
    """Power at n questions (in the slice) for one scenario.

    Paired pass/fail without clusters: the exact McNemar test that :func:`raglab.stats.compare`
    reports (``p < alpha``), summed over the discordant counts of ``floor(n)`` questions. Otherwise
    (unpaired, continuous, clustered, or beyond ``raglab.sizing._exact.EXACT_MAX`` questions) the
    normal approximations of the module docstring, on ``n / design_effect`` questions.
    """
    z = design.z_alpha
    if design.kind == "paired" and design.design_effect == 1 and n <= _exact.EXACT_MAX:
        q, d = sc.q, sc.effect
        p_down, p_up = max((q - d) / 2, 0.0), max((q + d) / 2, 0.0)
        sided = "two-sided" if design.alternative == "two-sided" else "increase"
        return _exact.mcnemar_power(math.floor(n + 1e-9), p_down, p_up, alpha=design.alpha, alternative=sided)
    n = n / design.design_effect
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
    """Smallest whole n whose power reaches the target (in the slice, clusters included).

    The normal approximation's closed form starts the search. The exact McNemar power is not
    monotone in n (it saw-tooths by a few thousandths as the critical counts step), so the search
    walks down from the first n that reaches the target while the power stays reached, and the
    answer is the smallest n from which the next 20 reach it too (checked up to 20,000 questions;
    beyond, the random number of discordant pairs smooths the saw-tooth away).
    """
    if sc.effect <= 0:
        raise ValueError("the change is too small to detect with any practical number of questions")
    n = max(1, math.ceil(_n_closed(sc, design) * design.design_effect - 1e-9))
    if n > _N_MAX:
        raise ValueError(f"the change {sc.effect:.3g} is too small to detect with any practical number of questions")

    def reached(m: int) -> bool:
        return _power_obs(m, sc, design) >= design.power

    if not reached(n):  # the exact test is conservative: bracket upwards, then bisect
        low, step = n, max(1, n // 16)
        high = n + step
        while not reached(high):
            low, step = high, step * 2
            high = low + step
            if high > _N_MAX:
                raise ValueError(f"the change {sc.effect:.3g} is too small to detect with any practical number "
                                 "of questions")
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if reached(mid) else (mid, high)
        n = high
    while n > 1 and reached(n - 1):
        n -= 1
    if design.kind == "paired" and design.design_effect == 1 and n <= 20_000:  # the saw-tooth: keep n if it holds
        while True:
            failed = next((m for m in range(n + 1, n + 21) if not reached(m)), None)
            if failed is None:
                break
            n = failed + 1
            while not reached(n):
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
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
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
    >>> questions_needed(0.03, paired=True, discordance=0.1)            # paired (exact McNemar)
    920
    >>> questions_needed(0.03, paired=True, discordance=0.1, p=0.7,     # a judge labels both runs
    ...                  sensitivity=0.943, specificity=0.635)
    6713
    >>> questions_needed(0.03, paired=True, discordance=0.1, attenuation=0.5)  # discordance of the labels
    3601
    >>> questions_needed(0.05, sd_diff=0.3, slice_fraction=0.1)         # a slice of 10% of traffic
    2830
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=power, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        sensitivity=sensitivity, specificity=specificity, design_effect=design_effect, icc=icc,
        cluster_size=cluster_size,
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
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
) -> float:
    """Probability that ``n`` questions detect a true change of ``mde``.

    Parameters are as in :func:`questions_needed`; ``n`` is the total number of questions (per run
    when unpaired), of which a share ``slice_fraction`` is in the slice tested. When the change
    could be a rise or a fall, the smaller of the two powers.

    Examples
    --------
    >>> round(power(300, 0.05, p=0.7), 3)
    0.258
    >>> round(power(300, 0.05, paired=True, discordance=0.1), 3)     # exact McNemar (the normal approximation: 0.785)
    0.744
    >>> round(power(2591, 0.03, paired=True, discordance=0.1, p=0.7,
    ...             sensitivity=0.943, specificity=0.635), 2)     # the 1/J^2 rule's n: about half
    0.4
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=0.5, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        sensitivity=sensitivity, specificity=specificity, design_effect=design_effect, icc=icc,
        cluster_size=cluster_size,
    )
    _check_n(n)
    return min(_power_obs(n * design.slice_fraction, sc, design) for sc in _scenarios(mde, design))


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
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
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
    0.053
    """
    design = _design(
        p=p, paired=paired, discordance=discordance, sd_diff=sd_diff, power=power, alpha=alpha,
        attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        sensitivity=sensitivity, specificity=specificity, design_effect=design_effect, icc=icc,
        cluster_size=cluster_size,
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
