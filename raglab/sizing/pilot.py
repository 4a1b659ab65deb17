"""Sizing from a pilot: :func:`size_from_pilot` and its result, :class:`SizingResult`.

Per-question scores of two runs on the same pilot questions give the numbers the formulas need
(pass rates and discordance, or the standard deviation of the differences); a discordance too small
to show the change is replaced by a stated planning value. ``df.rag.size`` calls it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._results import ResultBase
from raglab._validation import check_option
from raglab.sizing._checks import _ATTENUATION_TOL, _check_mde, _design_effect, _judge_rates
from raglab.sizing.formulas import _design, _scenarios, _worst, questions_needed
from raglab.sizing.release import _cluster_design_effect

__all__ = ["SizingResult", "size_from_pilot"]

_PILOT_LABELS = ("true", "judge")
_PLANNING_LEVEL = 0.95


@dataclass(frozen=True, repr=False)
class SizingResult(ResultBase):
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

    def to_dict(self) -> dict[str, Any]:
        """The result as a flat dict: metric, kind, n, n_unpaired and every assumption (``to_frame``'s row).

        Examples
        --------
        >>> res = size_from_pilot([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1, 1, 1, 0, 1],
        ...                       metric="hit@5", mde=0.05)
        >>> d = res.to_dict()
        >>> d["n"], d["kind"], d["discordance"]
        (658, 'pass/fail', 0.2)
        """
        return {"metric": self.metric, "kind": self.kind, "n": self.n, "n_unpaired": self.n_unpaired,
                **self.assumptions}

    def to_frame(self) -> pd.DataFrame:
        """One row: metric, n, n_unpaired and every assumption."""
        return pd.DataFrame([self.to_dict()])

    def _title(self) -> str:
        return "SizingResult"

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
        if a.get("design_effect", 1) != 1:
            lines.append(("design effect", f"{a['design_effect']:.3f} ({a['design_effect_source']}): n inflated "
                          "for clustered questions"))
        if a["slice_fraction"] != 1:
            lines.append(("slice fraction", f"{a['slice_fraction']:g} (total questions so the slice has enough)"))
        lines.append(("formula", a["formula"]))
        return lines

    def __repr__(self) -> str:
        return "\n".join([self._title()] + [f"  {k:<18} {v}" for k, v in self._lines()])

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in self._lines()
        )
        return f"<div><b>{html.escape(self._title())}</b><table>{rows}</table></div>"


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
    units: Any = None,
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
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
    units : array-like, optional
        A cluster label per pilot question (conversation, document): the design effect of the mean
        difference is estimated from the pilot (cluster-robust variance over the independent-question
        variance, at least 1) and ``n`` is inflated by it. Not with ``design_effect``/``icc``.
    design_effect, icc, cluster_size : float, optional
        A stated design effect, or ``icc`` with the mean ``cluster_size``, as in :func:`questions_needed`.

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
    (658, 1376, 0.2)
    >>> size_from_pilot([1, 1, 0, 1, 0, 1, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1, 1, 1, 0, 1], metric="human",
    ...                 mde=0.05, sensitivity=0.9, specificity=0.8).n   # a judge will label the eval set
    2124
    """
    check_option("pilot_labels", pilot_labels, _PILOT_LABELS)
    sensitivity, specificity, judge_source = _judge_from(judge, sensitivity, specificity)
    b, c, n_excluded, binary = _pilot_scores(base, cand, binary, metric)
    judged = _judge_rates(sensitivity, specificity)
    deff, deff_source = _pilot_design_effect(base, cand, units, design_effect, icc, cluster_size)
    options = dict(power=power, alpha=alpha, slice_fraction=slice_fraction, alternative=alternative,
                   design_effect=deff)
    common = {
        "mde": float(mde), "power": float(power), "alpha": float(alpha), "alternative": alternative,
        "attenuation": 1.0 if attenuation is None else float(attenuation), "slice_fraction": float(slice_fraction),
        "n_pilot": len(b), "n_excluded": n_excluded, "design_effect": deff, "design_effect_source": deff_source,
    }
    if not binary:
        if judged is not None:
            raise ValueError(
                f"`sensitivity`/`specificity`/`judge` describe a judge's pass/fail labels, but {metric!r} is a "
                "continuous score; pass `attenuation=` for a judge's continuous score, or binary=True for 0/1 scores"
            )
        return _size_continuous(b, c, metric=metric, mde=mde, attenuation=attenuation, options=options,
                                common=common)
    return _size_pass_fail(b, c, metric=metric, mde=mde, attenuation=attenuation, judged=judged,
                           judge_source=judge_source, pilot_labels=pilot_labels, options=options, common=common)


def _pilot_design_effect(base: Any, cand: Any, units: Any, design_effect: Any, icc: Any,
                         cluster_size: Any) -> tuple[float, str]:
    """The design effect to size with, and where it came from."""
    if units is None:
        deff, _ = _design_effect(design_effect, icc, cluster_size)
        if design_effect is not None:
            return deff, "stated"
        return deff, ("1 + (cluster_size - 1) x icc" if icc is not None else "none (questions independent)")
    if design_effect is not None or icc is not None or cluster_size is not None:
        raise ValueError("pass either `units` (estimated from the pilot) or `design_effect`/`icc`, not both")
    labels = np.asarray(units, dtype=object)
    b, c = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    if labels.shape != b.shape:
        raise ValueError(f"`units` must hold one cluster label per pilot question: {labels.shape[0]} for {b.shape[0]}")
    keep = ~(np.isnan(b) | np.isnan(c))
    if pd.isna(pd.Series(labels[keep])).any():
        raise ValueError("`units` has missing cluster labels for scored pilot questions; label every question")
    deff = _cluster_design_effect((c - b)[keep], labels[keep])
    clusters = len(pd.unique(labels[keep]))
    return deff, f"estimated from the pilot's {clusters} clusters (cluster-robust / independent variance, at least 1)"


def _pilot_scores(base: Any, cand: Any, binary: bool | None, metric: str) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """The pilot's paired scores without the pairs missing one, the count dropped, and whether they are 0/1."""
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
    return b, c, n_excluded, binary


def _size_continuous(
    b: np.ndarray, c: np.ndarray, *, metric: str, mde: float, attenuation: float | None,
    options: dict[str, Any], common: dict[str, Any],
) -> SizingResult:
    """A continuous score: sized on the standard deviation of the pilot's per-question differences."""
    diff = c - b
    sd = float(np.std(diff, ddof=1))
    if sd == 0:
        raise ValueError(
            f"the per-question differences of {metric!r} are all equal in the pilot ({len(b)} questions), so their "
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


def _size_pass_fail(
    b: np.ndarray, c: np.ndarray, *, metric: str, mde: float, attenuation: float | None,
    judged: tuple[float, float] | None, judge_source: str | None, pilot_labels: str,
    options: dict[str, Any], common: dict[str, Any],
) -> SizingResult:
    """Pass/fail scores: sized on the pilot's discordance (or a planning value when it is too small)."""
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
    used, planning_note = _planning_value(b, c, discordance, needed_change, scale, metric)
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


def _planning_value(
    b: np.ndarray, c: np.ndarray, discordance: float, needed_change: float, scale: float, metric: str
) -> tuple[float, str | None]:
    """The discordance to size on, and the note saying why when it is not the pilot's (see Notes above)."""
    if discordance >= needed_change:
        return discordance, None
    used, u = _planning_discordance(b, c, needed_change)
    what = "the mde" if scale == 1 else f"the change the judge shows (mde x J = {needed_change:.4g})"
    if discordance == 0:
        raise ValueError(
            f"the two pilot runs never differ on {metric!r} ({len(b)} questions), so the discordance cannot be "
            f"estimated; run a larger pilot or pass a planning value to sizing.questions_needed(discordance=...), "
            f"e.g. {used:.3f} ({what} + 2 x {u:.4f}, the 95% upper bound of the pilot's flip rate each way)"
        )
    note = (
        f"the pilot's discordance {discordance:.4f} is below {what}, so it cannot show such a change; sized "
        f"with the planning value {used:.4f} = {needed_change:.4g} + 2 x {u:.4f} (95% upper bound of the "
        "pilot's share of questions flipping the less common way). Pass your own to "
        "sizing.questions_needed(discordance=...)"
    )
    return used, note
