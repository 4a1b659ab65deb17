"""How many answers people should label and how many a judge should score: :func:`plan_labels`.

Prediction-powered inference (PPI++, Angelopoulos, Duchi and Zrnic 2023, arXiv 2311.01453) estimates
a mean from human labels ``Y`` on ``n`` rows plus a judge's scores ``f`` on those rows and on ``N``
more rows: ``theta = lam * mean_N(f) + mean_n(Y - lam f)``. Its variance is

    ``Var = lam^2 var(f) / N + var(Y - lam f) / n
          = [var(Y) - 2 lam cov(Y, f) + lam^2 (1 + n/N) var(f)] / n``,

smallest at ``lam* = cov(Y, f) / ((1 + n/N) var(f))``, where

    ``Var* = [var(Y) - cov(Y, f)^2 / ((1 + n/N) var(f))] / n
           = var(Y) / n * (1 - rho^2 N / (n + N))``

with ``rho`` the judge-human correlation. So ``n`` labels and ``N`` extra judged rows are worth
``n_eff = n (n + N) / (n + (1 - rho^2) N)`` labels alone (the effective sample size of Broska, Howes
and van Loon 2024, which ``ppi_py.ppi_power`` uses), never more than ``n / (1 - rho^2)``. A label
costs ``cost_label``; every row the estimate uses is judged (``cost_judge``) and may cost
``cost_row`` to produce (an answer generated); people-only rows are not judged. :func:`plan_labels`
searches the whole numbers ``n`` and ``n + N`` for the cheapest plan reaching a target (an interval
half-width, a power, or an effective sample size), or the most effective plan within a budget, and
compares it with labelling alone.

**The ceiling.** Dorner, Nastl and Hardt (ICLR 2025, "Limits to scalable evaluation at the frontier:
LLM as judge won't beat twice the data") prove that when the judge is no more accurate than the
system it judges, the factor ``n_eff / n`` cannot exceed 2, whatever a pilot's correlation suggests.
A pilot ``rho`` with ``rho^2 > 1/2`` (a factor above 2) is plausible only for a judge better than the
system; every :class:`LabelPlan` states this.

The normal approximation and the optimal ``lam`` are assumed known (the tuned weight is estimated in
practice and clipped to [0, 1], so a negative ``rho`` gives no gain here), labels are a simple random
sample of the judged rows, and ``rho`` is a planning value: a pilot of a few dozen rows estimates it
loosely.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._validation import check_level

__all__ = ["LabelPlan", "effective_labels", "plan_labels"]

#: The largest effective sample size :func:`plan_labels` searches (beyond it the target is unrealistic).
MAX_EFFECTIVE = 5_000_000

CEILING = ("Dorner et al. (ICLR 2025): when the judge is no more accurate than the system it judges, a judge cannot "
           "make labels worth more than 2x (labels_factor <= 2), whatever the pilot's correlation says")


def effective_labels(n_label: int | float, n_judge_only: int | float, rho: float) -> float:
    """Labels alone worth ``n_label`` labels plus ``n_judge_only`` more judged rows: ``n (n + N) / (n + (1 - rho^2) N)``.

    Parameters
    ----------
    n_label : int or float
        Rows people label (the judge scores them too).
    n_judge_only : int or float
        Further rows only the judge scores (``N``).
    rho : float
        Judge-human correlation on the labelled rows; a negative one gives no gain (the PPI++
        weight is clipped at 0).

    Returns
    -------
    float
        The effective sample size: the human-only labels with the same variance as PPI++ with the
        optimal weight.

    Examples
    --------
    >>> round(effective_labels(200, 20_000, 0.6), 1)
    310.8
    >>> effective_labels(200, 0, 0.9)
    200.0
    """
    if n_label <= 0 or n_judge_only < 0:
        raise ValueError(f"effective_labels: n_label={n_label!r} must be > 0 and n_judge_only={n_judge_only!r} >= 0")
    r2 = _r2(rho)
    return float(n_label * (n_label + n_judge_only) / (n_label + (1 - r2) * n_judge_only))


@dataclass(frozen=True, repr=False)
class LabelPlan:
    """How many rows to label and to judge, and what they are worth.

    Attributes
    ----------
    n_label : int
        Rows people label (a random sample of the judged rows; the judge scores them too).
    n_judge : int
        Rows the judge scores in all (``n_label`` of them labelled); 0 for a people-only plan.
    effective_n : float
        What the plan is worth in labels alone (the PPI++ effective sample size).
    cost : float
        ``n_label * cost_label + n_judge * (cost_judge + cost_row)`` (``n_label * (cost_label +
        cost_row)`` for a people-only plan).
    human_only_labels : int
        Labels alone needed for the same precision (target mode) or bought by the same budget.
    human_only_cost : float
        Their cost.
    saving : float
        ``human_only_cost / cost`` in target mode; ``effective_n / human_only_labels`` (precision
        bought per unit of budget) in budget mode.
    labels_factor : float
        ``effective_n / n_label``: what each label is worth with the judge (the quantity Dorner et
        al. bound by 2 for a judge no better than the system).
    rho, sd : float or None
        The judge-human correlation and the labels' standard deviation planned with.
    half_width : float or None
        The plan's interval half-width at ``ci`` (when ``sd`` is known).
    lam : float or None
        The PPI++ weight at this plan, ``cov / ((1 + n/N) var f)`` (when the judge's scores were given).
    details : dict
        The inputs (costs, budget, target, ci, source of rho and sd) and notes.
    """

    n_label: int
    n_judge: int
    effective_n: float
    cost: float
    human_only_labels: int
    human_only_cost: float
    saving: float
    labels_factor: float
    rho: float
    sd: float | None
    half_width: float | None
    lam: float | None
    details: dict[str, Any]

    @property
    def n_judge_only(self) -> int:
        """Rows only the judge scores (``N``)."""
        return max(self.n_judge - self.n_label, 0)

    @property
    def ceiling(self) -> str:
        """The 2x ceiling of Dorner et al. (ICLR 2025), in words."""
        return CEILING

    @property
    def above_ceiling(self) -> bool:
        """True when this plan counts on labels worth more than 2x: plausible only for a judge better than the system."""
        return self.labels_factor > 2

    def to_dict(self) -> dict[str, Any]:
        """The plan as a flat dict (``to_frame``'s row)."""
        out = {"n_label": self.n_label, "n_judge": self.n_judge, "n_judge_only": self.n_judge_only,
               "effective_n": self.effective_n, "cost": self.cost, "human_only_labels": self.human_only_labels,
               "human_only_cost": self.human_only_cost, "saving": self.saving, "labels_factor": self.labels_factor,
               "above_ceiling": self.above_ceiling, "rho": self.rho, "sd": self.sd, "half_width": self.half_width,
               "lam": self.lam}
        out.update({k: v for k, v in self.details.items() if k not in out})
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row: the plan, the people-only alternative and the inputs."""
        return pd.DataFrame([self.to_dict()])

    def _lines(self) -> list[tuple[str, str]]:
        d = self.details
        lines = [("label", f"{self.n_label} rows (a random sample of the judged rows)"),
                 ("judge", f"{self.n_judge} rows ({self.n_judge_only} judged only)" if self.n_judge
                  else "none: the judge does not pay for itself at these costs; label only")]
        worth = f"{self.effective_n:.1f} labels alone (x{self.labels_factor:.2f} per label)"
        if self.half_width is not None:
            worth += f"; half-width {self.half_width:.4g} at {d['ci']:g}"
        lines.append(("worth", worth))
        lines.append(("cost", f"{self.cost:.6g} vs {self.human_only_cost:.6g} for {self.human_only_labels} labels "
                      f"alone (saving x{self.saving:.2f}{', precision per budget' if d['mode'] == 'budget' else ''})"))
        if not d.get("meets_target", True):
            lines.append(("target", f"NOT met within the budget: {d['target_note']}"))
        pilot = f"rho {self.rho:.3f} ({d['rho_source']})"
        if self.sd is not None:
            pilot += f", sd {self.sd:.4g} ({d['sd_source']})"
        if self.lam is not None:
            pilot += f", PPI++ weight {self.lam:.3f}"
        lines.append(("pilot", pilot))
        lines.append(("ceiling", CEILING + (" -- THIS PLAN EXCEEDS IT: trust it only for a judge better than the "
                                            "system judged" if self.above_ceiling else "")))
        lines.append(("assumes", "the labelled rows are a simple random sample of the judged rows; normal "
                      "approximation; rho is a planning value"))
        return lines

    def __repr__(self) -> str:
        return "\n".join(["LabelPlan"] + [f"  {k:<8} {v}" for k, v in self._lines()])

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{html.escape(v)}</td></tr>" for k, v in self._lines())
        return f"<div><b>LabelPlan</b><table>{rows}</table></div>"


def plan_labels(
    *,
    cost_label: float,
    cost_judge: float,
    rho: float | None = None,
    labels: Any = None,
    scores: Any = None,
    sd: float | None = None,
    p: float | None = None,
    half_width: float | None = None,
    effect: float | None = None,
    power: float = 0.8,
    effective_n: float | None = None,
    budget: float | None = None,
    ci: float = 0.95,
    cost_row: float = 0.0,
    rows_available: int | None = None,
) -> LabelPlan:
    """Plan how many rows people label and how many a judge scores, for a PPI++ mean.

    Give the judge-human agreement (``rho``, or a pilot's ``labels`` and ``scores``), a target
    (``half_width``, ``effect`` with ``power``, or ``effective_n``) and/or a ``budget``, and the
    costs. With a target the plan is the cheapest reaching it; with only a budget, the most precise
    within it; with both, the cheapest reaching the target when the budget allows it, else the most
    precise within the budget (``details['meets_target']`` False). Every plan states the 2x ceiling
    of Dorner et al. (ICLR 2025).

    Parameters
    ----------
    cost_label : float
        Cost of one human label (> 0).
    cost_judge : float
        Cost of judging one row (>= 0).
    rho : float, optional
        Judge-human correlation in (-1, 1). Or give ``labels`` and ``scores``.
    labels, scores : array-like, optional
        A pilot's human labels and the judge's scores on the same rows: ``rho`` is their Pearson
        correlation (capped at ``1 - 1/n`` as ``ppi_py`` does), ``sd`` the labels' standard deviation.
    sd : float, optional
        Standard deviation of the labels (needed for ``half_width`` and ``effect``).
    p : float, optional
        For pass/fail labels, the planned pass rate: ``sd = sqrt(p (1 - p))``.
    half_width : float, optional
        Target half-width of the ``ci`` interval of the mean: ``effective_n = (z sd / half_width)^2``.
    effect, power : float, optional
        Target: a two-sided test at level ``1 - ci`` detects a mean ``effect`` away from a reference
        value with this power: ``effective_n = ((z_{1-a/2} + z_power) sd / effect)^2``. For a paired
        difference of two runs pass the ``sd`` and ``rho`` of per-question differences.
    effective_n : float, optional
        Target effective sample size directly (labels alone worth as much).
    budget : float, optional
        Total budget.
    ci : float
        Interval level (and ``1 - alpha`` for ``effect``).
    cost_row : float
        Cost of producing one row (an answer generated) for any row used, labelled or judged.
    rows_available : int, optional
        Rows there are to judge (the eval set's size): ``n_judge <= rows_available``.

    Returns
    -------
    LabelPlan

    Notes
    -----
    PPI++ estimates ``theta = lam mean_N(f) + mean_n(Y - lam f)`` from ``n`` labels ``Y`` with the
    judge's scores ``f`` and ``N`` further judged rows. Its variance
    ``[var Y - 2 lam cov(Y, f) + lam^2 (1 + n/N) var f] / n`` is smallest at
    ``lam* = cov(Y, f) / ((1 + n/N) var f)``, where it is ``var Y / n_eff`` with
    ``n_eff = n (n + N) / (n + (1 - rho^2) N)`` (:func:`effective_labels`; the effective sample
    size ``ppi_py.ppi_power`` uses). The plan minimises ``n cost_label + (n + N)(cost_judge +
    cost_row)`` over whole numbers with ``n_eff`` at least the target, against labels alone at
    ``cost_label + cost_row`` each; ``n_eff / n <= 1 / (1 - rho^2)``, which exceeds 2 only for
    ``rho^2 > 1/2``: Dorner, Nastl and Hardt (ICLR 2025) prove a judge no more accurate than the
    system it judges cannot pass 2x, so such a pilot ``rho`` deserves doubt. Assumes the normal
    approximation, the optimal weight known (it is estimated and clipped to [0, 1] in practice, so
    a negative ``rho`` gains nothing here) and labels drawn at random from the judged rows.

    Examples
    --------
    >>> plan = plan_labels(rho=0.6, sd=0.5, half_width=0.03, cost_label=1.0, cost_judge=0.01)
    >>> plan.n_label, plan.n_judge, round(plan.effective_n), plan.human_only_labels
    (734, 5521, 1067, 1068)
    >>> round(plan.saving, 2), plan.above_ceiling
    (1.35, False)
    >>> plan_labels(rho=0.6, budget=300.0, cost_label=1.0, cost_judge=0.01).n_label
    279
    """
    for name, value in (("cost_label", cost_label), ("cost_judge", cost_judge), ("cost_row", cost_row)):
        if not _finite(value) or value < 0:
            raise ValueError(f"plan_labels: {name}={value!r} must be a finite number >= 0")
    if cost_label <= 0:
        raise ValueError(f"plan_labels: cost_label={cost_label!r} must be > 0 (free labels need no plan)")
    level = check_level(ci)
    rho, sd, lam_ratio, rho_source, sd_source = _pilot(rho, labels, scores, sd, p)
    target, target_source = _target(half_width, effect, power, effective_n, sd, level)
    if target is None and budget is None:
        raise ValueError("plan_labels: give a target (half_width=, effect=, or effective_n=) and/or budget=")
    if budget is not None and (not _finite(budget) or budget <= 0):
        raise ValueError(f"plan_labels: budget={budget!r} must be a positive number")
    if rows_available is not None and (isinstance(rows_available, bool) or not isinstance(rows_available, (int, np.integer))
                                       or rows_available < 1):
        raise ValueError(f"plan_labels: rows_available={rows_available!r} must be an int >= 1")
    r2 = _r2(rho)
    judged = float(cost_judge) + float(cost_row)  # per row the estimate judges
    alone = float(cost_label) + float(cost_row)  # per row people label without a judge

    details: dict[str, Any] = {"cost_label": float(cost_label), "cost_judge": float(cost_judge),
                               "cost_row": float(cost_row), "budget": budget, "rows_available": rows_available,
                               "ci": level, "rho_source": rho_source, "sd_source": sd_source,
                               "target_effective_n": target, "target_source": target_source,
                               "meets_target": True, "ceiling": CEILING}
    plan: tuple[int, int, float, float] | None = None
    mode = "target"
    if target is not None:
        if rows_available is not None and target > rows_available:
            hw = f"; labelling all of them gives a half-width of {_half(sd, rows_available, level):.4g}" if sd else ""
            raise ValueError(f"plan_labels: the target needs labels worth {target:.1f}, more than the "
                             f"{rows_available} rows available (n_judge <= rows_available bounds the effective "
                             f"sample size){hw}")
        if target > MAX_EFFECTIVE:
            raise ValueError(f"plan_labels: the target needs labels worth {target:.4g}, over {MAX_EFFECTIVE:,}; "
                             "ask for a wider interval or a larger effect")
        plan = _cheapest(target, r2, float(cost_label), judged, alone, rows_available)
        human_n = math.ceil(target - 1e-9)
        if budget is not None and plan[3] > budget * (1 + 1e-12):
            details["meets_target"] = False
            details["target_note"] = (f"the cheapest plan reaching it costs {plan[3]:.6g} > budget {budget:.6g}")
            plan = None
    if plan is None:
        assert budget is not None
        mode = "budget"
        plan = _most_effective(float(budget), r2, float(cost_label), judged, alone, rows_available)
        human_n = int(math.floor(budget / alone + 1e-9))
        if rows_available is not None:
            human_n = min(human_n, rows_available)
    details["mode"] = mode
    n, total, eff, cost = plan
    human_cost = human_n * alone
    saving = human_cost / cost if mode == "target" else eff / max(human_n, 1)
    lam = None
    if lam_ratio is not None and total > n:
        lam = float(lam_ratio / (1 + n / (total - n)))
    return LabelPlan(n_label=n, n_judge=total, effective_n=eff, cost=cost, human_only_labels=human_n,
                     human_only_cost=human_cost, saving=float(saving), labels_factor=eff / n, rho=rho, sd=sd,
                     half_width=_half(sd, eff, level) if sd is not None else None, lam=lam, details=details)


# --------------------------------------------------------------------------------------------------


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and math.isfinite(float(value))


def _r2(rho: float) -> float:
    return float(rho) ** 2 if rho > 0 else 0.0


def _half(sd: float | None, n_eff: float, level: float) -> float:
    assert sd is not None
    return float(_sps.norm.ppf(0.5 + level / 2) * sd / math.sqrt(n_eff))


def _pilot(rho: Any, labels: Any, scores: Any, sd: Any, p: Any
           ) -> tuple[float, float | None, float | None, str, str | None]:
    """rho, sd, cov/var(f) (for the weight), and where rho and sd came from."""
    lam_ratio = None
    sd_source = None
    if (labels is None) != (scores is None):
        raise ValueError("plan_labels: give the pilot's labels= and scores= together (the judge's scores on the "
                         "labelled rows)")
    if labels is not None:
        if rho is not None:
            raise ValueError("plan_labels: give rho= or a pilot's labels= and scores=, not both")
        y = np.asarray(labels, dtype=float).ravel()
        f = np.asarray(scores, dtype=float).ravel()
        if y.shape != f.shape:
            raise ValueError(f"plan_labels: labels ({y.size}) and scores ({f.size}) must have the same length")
        keep = np.isfinite(y) & np.isfinite(f)
        y, f = y[keep], f[keep]
        if y.size < 3:
            raise ValueError(f"plan_labels: the pilot has {y.size} rows with both a label and a score; need at least 3")
        if y.std() == 0 or f.std() == 0:
            which = "labels" if y.std() == 0 else "scores"
            raise ValueError(f"plan_labels: the pilot's {which} are all equal; their correlation is undefined")
        yc, fc = y - y.mean(), f - f.mean()
        value = float((yc @ fc) / math.sqrt((yc @ yc) * (fc @ fc)))
        rho = min(value, 1 - 1 / y.size)  # as ppi_py caps it
        lam_ratio = float((yc @ fc) / (fc @ fc))
        rho_source = f"pilot of {y.size} labelled rows"
        if sd is None and p is None:
            sd = float(y.std(ddof=1))
            sd_source = f"pilot of {y.size} labels"
    else:
        if rho is None:
            raise ValueError("plan_labels: give rho= (the judge-human correlation) or a pilot's labels= and scores=")
        if not _finite(rho) or not -1 < rho < 1:
            raise ValueError(f"plan_labels: rho={rho!r} must be strictly between -1 and 1")
        rho = float(rho)
        rho_source = "given"
    if sd is not None and p is not None:
        raise ValueError("plan_labels: give sd= or p=, not both")
    if p is not None:
        if not _finite(p) or not 0 < p < 1:
            raise ValueError(f"plan_labels: p={p!r} must be a pass rate strictly between 0 and 1")
        sd, sd_source = math.sqrt(p * (1 - p)), f"pass rate {p:g}"
    elif sd is not None and sd_source is None:
        if not _finite(sd) or sd <= 0:
            raise ValueError(f"plan_labels: sd={sd!r} must be a positive number")
        sd, sd_source = float(sd), "given"
    return float(rho), sd, lam_ratio, rho_source, sd_source


def _target(half_width: Any, effect: Any, power: Any, effective_n: Any, sd: float | None, level: float
            ) -> tuple[float | None, str | None]:
    given = [name for name, v in (("half_width", half_width), ("effect", effect), ("effective_n", effective_n))
             if v is not None]
    if len(given) > 1:
        raise ValueError(f"plan_labels: give one target, not {' and '.join(given)}")
    if not given:
        return None, None
    name = given[0]
    value = {"half_width": half_width, "effect": effect, "effective_n": effective_n}[name]
    if not _finite(value) or value <= 0:
        raise ValueError(f"plan_labels: {name}={value!r} must be a positive number")
    if name == "effective_n":
        return float(value), "effective_n"
    if sd is None:
        raise ValueError(f"plan_labels: {name}= needs the labels' spread: sd=, p= (pass rate) or a pilot's labels=")
    z = float(_sps.norm.ppf(0.5 + level / 2))
    if name == "half_width":
        return (z * sd / value) ** 2, f"half-width {value:g} at {level:g}"
    if not _finite(power) or not 0 < power < 1:
        raise ValueError(f"plan_labels: power={power!r} must be strictly between 0 and 1")
    return ((z + float(_sps.norm.ppf(power))) * sd / value) ** 2, (
        f"power {power:g} for an effect of {value:g} (two-sided, alpha {1 - level:g})")


def _eff(n: np.ndarray, total: np.ndarray, r2: float) -> np.ndarray:
    return n * total / (r2 * n + (1 - r2) * total)


def _cheapest(target: float, r2: float, c_label: float, c_judged: float, c_alone: float,
              rows: int | None) -> tuple[int, int, float, float]:
    """(n, n_judge, effective n, cost): the cheapest whole-number plan worth at least ``target``."""
    human = math.ceil(target - 1e-9)
    best = (human, 0, float(human), human * c_alone)
    if r2 <= 0:
        return best
    n = np.arange(1, human + 1, dtype=float)
    gap = n - target * (1 - r2)
    ok = gap > 0
    n, gap = n[ok], gap[ok]
    total = np.ceil(target * r2 * n / gap - 1e-9)
    total = np.maximum(total, n)
    if rows is not None:
        keep = total <= rows
        n, total = n[keep], total[keep]
    if n.size == 0:
        return best
    cost = n * c_label + total * c_judged
    i = int(np.argmin(cost))
    if cost[i] < best[3]:
        return int(n[i]), int(total[i]), float(_eff(n[i], total[i], r2)), float(cost[i])
    return best


def _most_effective(budget: float, r2: float, c_label: float, c_judged: float, c_alone: float,
                    rows: int | None) -> tuple[int, int, float, float]:
    """(n, n_judge, effective n, cost): the whole-number plan worth most within ``budget``."""
    human = int(math.floor(budget / c_alone + 1e-9))
    if rows is not None:
        human = min(human, rows)
    best = (human, 0, float(human), human * c_alone) if human >= 1 else None
    if r2 > 0:
        top = int(math.floor(budget / (c_label + c_judged) + 1e-9))
        if rows is not None:
            top = min(top, rows)
        if top >= 1:
            n = np.arange(1, top + 1, dtype=float)
            if c_judged > 0:
                total = np.floor((budget - n * c_label) / c_judged + 1e-9)
                if rows is not None:
                    total = np.minimum(total, rows)
            elif rows is not None:
                total = np.full_like(n, float(rows))
            else:
                raise ValueError("plan_labels: judging costs nothing here (cost_judge + cost_row = 0), so a budget "
                                 "buys unlimited judged rows; give rows_available=, the rows there are to judge")
            eff = _eff(n, total, r2)
            i = int(np.argmax(eff))
            if best is None or eff[i] > best[2] + 1e-9:
                best = (int(n[i]), int(total[i]), float(eff[i]), float(n[i] * c_label + total[i] * c_judged))
    if best is None:
        raise ValueError(f"plan_labels: budget={budget:g} buys no label (one costs {c_alone:g}, "
                         f"{c_label + c_judged:g} with its judging)")
    return best
