"""The judge-validation report: :class:`AgreementReport`, its displays and the pass-rate correction it carries.

:func:`raglab.agreement.report` and :func:`raglab.agreement.judge_vs_majority` build it; this module
holds only the result: its fields, the text and HTML displays, ``to_frame`` / ``to_dict``, and
:meth:`AgreementReport.correct` (Rogan-Gladen on a new run's pass rate).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab._interval import Interval
from raglab._results import DECISION_COLOURS, ResultBase
from raglab._validation import check_level, check_option
from raglab.agreement._common import (
    BINARY_STATISTICS,
    KAPPA_SUBSTANTIAL,
    KAPPA_UNTRUSTED,
    RG_METHODS,
    check_resamples,
    plain,
)
from raglab.agreement.correction import rogan_gladen, rogan_gladen_interval

__all__ = ["AgreementReport"]




def _number_text(value: Any) -> str:
    """A rate with three decimals, or n/a (with one human label only, some rates have no denominator)."""
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def _interpret(kappa: float) -> str:
    if math.isnan(kappa):
        return "undefined"
    if kappa < KAPPA_UNTRUSTED:
        return "should not be trusted"
    if kappa <= KAPPA_SUBSTANTIAL:
        return "moderate"
    return "substantial"


@dataclass(frozen=True, repr=False, eq=False)
class AgreementReport(ResultBase):
    """How well a judge agrees with people on the same items (see :func:`report`).

    Attributes
    ----------
    n, n_excluded : int
        Items compared, and items left out because a label was missing (or, for
        :func:`judge_vs_majority`, the human vote was tied and ``ties="drop"``).
    labels : list
        The categories in order (confusion rows and columns).
    positive : label or None
        The "pass" label (e.g. 1, "supported"); the binary statistics are None without it.
    kappa, kappa_low, kappa_high : float
        Cohen's kappa and its interval (``kappa_interval`` holds the method, level and seed).
    agreement : float
        Raw share of items with the same label.
    confusion : DataFrame
        Counts, human labels as rows and judge labels as columns.
    per_class_recall : Series
        For each human label, the share of those items the judge labelled the same.
    sensitivity, specificity : float or None
        Share of human-positive items the judge passed, and of human-negative items it failed.
    miss_rate : float or None
        Of the items people marked negative, the share the judge passed (``1 - specificity``).
    human_positive_rate, judge_positive_rate : float or None
        Pass rates by people and by the judge on the same items.
    attenuation : float or None
        ``sensitivity + specificity - 1`` (Youden's J): a true change ``d`` in the pass rate moves
        the judge's pass rate by ``J * d``, so about ``1 / J**2`` times as many questions are needed
        to detect it (see :func:`raglab.sizing.questions_needed`).
    corrected_pass_rate : Interval or None
        Rogan-Gladen estimate of the true pass rate from the judge's rate on these items. On the
        validation items themselves it reproduces the human rate (a check); its interval is a
        bootstrap over these items that re-estimates sensitivity, specificity and the judge's rate
        together in each resample (they come from the same items, so treating them as independent
        would be wrong). Use :meth:`correct` on a new run's judge pass rate.
    intervals : dict of str -> Interval
        Intervals for every statistic above: Wilson for rates, Newcombe for the attenuation, kappa's
        as chosen by ``method``; with ``units``, clusters as the sampling unit for every one of them
        (a cluster-robust Wilson interval for the rates, the expanded percentile of a cluster
        bootstrap for the others).
    disagreements : DataFrame
        The items where judge and people differ (the original rows when given a DataFrame).
    n_clusters : int or None
        With ``units``: the clusters (e.g. conversations) the items fall into.
    design_effects : dict of str -> float
        With ``units``: for each statistic, the variance of its cluster bootstrap over the variance
        of an item bootstrap that treats the items as independent (Kish's design effect; about the
        squared ratio of the interval widths). ``n / design_effect`` is the number of independent
        items the clustered ones are worth. NaN where a statistic rests on too few clusters.
    recommendation : str
        How to estimate the pass rate with these labels. Labels that are a recorded random sample
        of the run's own rows (``attrs["raglab"]["sampling"]["labelled"]``, as
        :func:`raglab.sampling.draw` records, or ``labels_from="run"``): prediction-powered
        inference (``raglab.stats.ppi_mean``, ``rows.rag.estimate``), which uses the judge on
        every row and the labels to remove its bias, and is narrower than the Rogan-Gladen
        correction. Labels from a separate validation set (``labels_from="validation"``): the
        Rogan-Gladen correction (:meth:`correct`), which carries the judge's error rates to
        another run. Unknown origin: both, each with its condition.
    warnings : list of str
        Why the report should be read with care (e.g. kappa below 0.4). Made with ``warn=True``
        (the default) they were issued as Python warnings (:class:`LowAgreementWarning`,
        :class:`FragileIntervalWarning`) when the report was made, so the report's text and HTML
        display only count them and point here (a notebook shows each once); with ``warn=False``
        they are printed in full in the report's display instead.
    """

    n: int
    n_excluded: int
    labels: list[Any]
    positive: Any
    kappa: float
    kappa_interval: Interval
    agreement: float
    confusion: pd.DataFrame
    per_class_recall: pd.Series
    weights: str | None
    distance: str
    sensitivity: float | None
    specificity: float | None
    miss_rate: float | None
    human_positive_rate: float | None
    judge_positive_rate: float | None
    attenuation: float | None
    corrected_pass_rate: Interval | None
    intervals: dict[str, Interval]
    disagreements: pd.DataFrame
    human_name: str = "human"
    judge_name: str = "judge"
    n_ties: int = 0
    ties: str | None = None
    n_clusters: int | None = None
    units_name: str | None = None
    design_effects: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    recommendation: str = ""
    _counts: dict[str, int] = field(default_factory=dict)
    _se_sp_draws: np.ndarray | None = None  # cluster-bootstrap (sensitivity, specificity) pairs, B x 2
    _warned: bool = False  # the warnings were issued as Python warnings (warn=True): the display only counts them

    @property
    def kappa_low(self) -> float:
        return self.kappa_interval.low

    @property
    def kappa_high(self) -> float:
        return self.kappa_interval.high

    @property
    def interpretation(self) -> str:
        """'substantial' (> 0.6), 'moderate' (0.4 to 0.6) or 'should not be trusted' (< 0.4)."""
        return _interpret(self.kappa)

    def correct(
        self,
        judge_pass_rate: float,
        n: int,
        *,
        ci: float | None = None,
        method: str = "delta",
        n_resamples: int = 10_000,
        seed: int | None = 0,
    ) -> Interval:
        """Rogan-Gladen corrected true pass rate of a new run judged by this judge.

        The new run's judge rate is a binomial over its ``n`` questions, independent of the
        validation items. The sensitivity and specificity carry the validation's uncertainty: as
        binomials over the human-positive and human-negative items, or -- for a report made with
        ``units`` -- as their joint cluster-bootstrap distribution (variances and covariance for the
        delta method, the replicates themselves for the bootstrap).

        Parameters
        ----------
        judge_pass_rate : float
            The judge's pass rate on the new run.
        n : int
            Questions in the new run.
        ci, method, n_resamples, seed
            See :func:`rogan_gladen` (the level defaults to this report's).

        Examples
        --------
        >>> from raglab.agreement import report
        >>> rep = report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1)
        >>> iv = rep.correct(0.70, 400)      # the judge passes 70% of a new run
        >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
        (0.513, 0.35, 0.676)
        """
        if self.sensitivity is None or self.specificity is None:
            raise ValueError("the pass-rate correction needs a binary report: pass positive=<the pass label>")
        if self._se_sp_draws is None:
            return rogan_gladen(
                judge_pass_rate,
                sensitivity=self.sensitivity,
                specificity=self.specificity,
                n=n,
                n_positive=self._counts["human_positive"],
                n_negative=self._counts["human_negative"],
                ci=self.kappa_interval.level if ci is None else ci,
                method=method,
                n_resamples=n_resamples,
                seed=seed,
            )
        check_option("method", method, RG_METHODS)
        if not 0 <= judge_pass_rate <= 1:
            raise ValueError(f"`judge_pass_rate` must be a rate between 0 and 1, got {judge_pass_rate!r}")
        if int(n) != n or n <= 0:
            raise ValueError(f"`n` must be a positive integer, got {n!r}")
        check_resamples(n_resamples)
        return rogan_gladen_interval(
            judge_pass_rate, self.sensitivity, self.specificity, n=int(n),
            level=check_level(self.kappa_interval.level if ci is None else ci), method=method, n_resamples=n_resamples,
            seed=seed, draws=self._se_sp_draws,
            source=f" (Se, Sp from a cluster bootstrap over {self.n_clusters} clusters)",
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per statistic: estimate, low, high, method, level, n, n_resamples, seed, design_effect.

        ``design_effect`` is NaN unless the report was made with ``units``.
        """
        rows = []
        for name, iv in self.intervals.items():
            rows.append({"statistic": name, **iv.to_dict(), "design_effect": self.design_effects.get(name, math.nan)})
        return pd.DataFrame(
            rows,
            columns=["statistic", "estimate", "low", "high", "method", "level", "n", "n_resamples", "seed",
                     "design_effect"],
        )

    def _lines(self) -> list[tuple[str, str]]:
        """The (label, text) lines of both displays."""
        out = [("items", self._items_text()), ("raw agreement", f"{self.agreement:.3f}"),
               ("Cohen's kappa", self._kappa_text())]
        if self.n_clusters is not None:
            out.append(("clusters", self._clusters_text()))
        if self.positive is not None:
            out += self._pass_fail_lines()
        else:
            recall = ", ".join(f"{k!r}: {v:.3f}" for k, v in self.per_class_recall.items())
            out.append(("per-class recall", recall))
        out.append(("disagreements", f"{len(self.disagreements)} items (report.disagreements)"))
        if self.recommendation:
            out.append(("recommendation", self.recommendation))
        return out

    def _items_text(self) -> str:
        """The items compared, and why any were left out."""
        items = f"{self.n}"
        if self.n_excluded:
            parts = []
            if self.n_ties:
                parts.append(f"{self.n_ties} with a tied human vote (ties={self.ties!r})")
            if self.n_excluded - self.n_ties:
                parts.append(f"{self.n_excluded - self.n_ties} with a missing label")
            items += f" ({self.n_excluded} excluded: {', '.join(parts)})"
        return items

    def _kappa_text(self) -> str:
        iv = self.kappa_interval
        bounds = (f"[{iv.low:.3f}, {iv.high:.3f}] {iv.level:.0%} {iv.method}" if np.isfinite(iv.low)
                  else f"(no interval: {iv.method})")
        return (f"{self.kappa:.3f} {bounds}: {self.interpretation}"
                + (f" ({self.weights} weights, distance={self.distance!r})" if self.weights else ""))

    def _clusters_text(self) -> str:
        """The clusters and the design effects of the headline statistics."""
        shown = [(label, self.design_effects.get(key, math.nan))
                 for key, label in (("kappa", "kappa"), ("agreement", "agreement"), ("miss_rate", "miss rate"))
                 if key in self.intervals]
        deff = ", ".join(f"{label} {value:.2f}" for label, value in shown if np.isfinite(value)) or "n/a"
        named = f" ({self.units_name!r})" if self.units_name else ""
        worth = self.design_effects.get("kappa", math.nan)
        worth_text = (f"; the {self.n} items are worth about {self.n / worth:.0f} independent ones for kappa"
                      if np.isfinite(worth) and worth > 1 else "")
        return (f"{self.n_clusters}{named}: intervals resample whole clusters (rates: cluster-robust Wilson over "
                f"them); design effect (variance with clusters / assuming independent items) {deff}{worth_text}")

    def _pass_fail_lines(self) -> list[tuple[str, str]]:
        """The lines against the pass label: miss rate, sensitivity, pass rates, attenuation, correction."""
        c = self._counts
        num = _number_text
        mr = self.intervals.get("miss_rate")
        miss = num(self.miss_rate) + (
            f" [{mr.low:.3f}, {mr.high:.3f}]" if mr is not None and np.isfinite(mr.low) else "")
        out = [
            ("miss rate", f"{miss}: the judge passed {c['false_pass']} of the {c['human_negative']} items people "
                          "marked negative"),
            ("sensitivity", f"{num(self.sensitivity)} ({c['true_pass']}/{c['human_positive']}), specificity "
                            f"{num(self.specificity)} ({c['true_fail']}/{c['human_negative']})"),
            ("pass rate", f"judge {num(self.judge_positive_rate)} vs people {num(self.human_positive_rate)}"),
            ("attenuation", f"{num(self.attenuation)}: a true change d in the pass rate shows as about "
                            + (f"{self.attenuation:.2f}*d" if num(self.attenuation) != "n/a" else "(n/a)")
                            + " in the judge's mean"),
        ]
        if self.corrected_pass_rate is not None:
            rg = self.corrected_pass_rate
            bounds = f" [{rg.low:.3f}, {rg.high:.3f}]" if np.isfinite(rg.low) else ""
            out.append(("corrected pass rate",
                        f"{rg.estimate:.3f}{bounds} (Rogan-Gladen on these items = the people's rate; a check. "
                        "report.correct(rate, n) for a new run)"))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict.

        Names, counts, every statistic, the confusion table (``labels`` in its row and column order,
        ``counts``), the intervals (as :meth:`raglab.stats.Interval.to_dict`), the design effects and the
        warnings.

        Examples
        --------
        >>> from raglab.agreement import report
        >>> d = report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1).to_dict()
        >>> d["n"], d["miss_rate"], d["confusion"]["counts"]
        (200, 0.44, [[142, 8], [22, 28]])
        """
        return {
            "human_name": self.human_name,
            "judge_name": self.judge_name,
            "n": self.n,
            "n_excluded": self.n_excluded,
            "n_ties": self.n_ties,
            "ties": self.ties,
            "labels": [plain(v) for v in self.labels],
            "positive": plain(self.positive),
            "weights": self.weights,
            "distance": self.distance,
            "kappa": self.kappa,
            "kappa_low": self.kappa_low,
            "kappa_high": self.kappa_high,
            "interpretation": self.interpretation,
            "agreement": self.agreement,
            **{name: getattr(self, name) for name in BINARY_STATISTICS},
            "n_clusters": self.n_clusters,
            "units_name": self.units_name,
            "confusion": {
                "labels": [plain(v) for v in self.confusion.index],
                "counts": self.confusion.to_numpy().tolist(),
            },
            "intervals": {name: iv.to_dict() for name, iv in self.intervals.items()},
            "design_effects": {name: float(value) for name, value in self.design_effects.items()},
            "warnings": list(self.warnings),
            "recommendation": self.recommendation,
        }

    def _title(self) -> str:
        return f"AgreementReport: judge {self.judge_name!r} vs {self.human_name!r}" + (
            f", positive label {self.positive!r}" if self.positive is not None else ""
        )

    def __repr__(self) -> str:
        lines = [self._title()]
        lines += [f"  {key:<20} {value}" for key, value in self._lines()]
        if self._warned and self.warnings:
            lines.append(f"  {'WARNINGS':<20} {self._warned_text()}")
        else:
            lines += [f"  WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _warned_text(self) -> str:
        n = len(self.warnings)
        return (f"{n} issued as Python warning{'s' if n > 1 else ''} when this report was made; "
                "their text is in report.warnings")

    def _repr_html_(self) -> str:
        e = html.escape
        title = e(self._title())
        rows = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:left'>{e(v)}</td></tr>"
                       for k, v in self._lines())
        colour = DECISION_COLOURS["block"]
        if self._warned and self.warnings:
            warn = f"<p style='color:{colour}'><b>Warnings:</b> {e(self._warned_text())}</p>"
        else:
            warn = "".join(f"<p style='color:{colour}'><b>Warning:</b> {e(w)}</p>" for w in self.warnings)
        confusion = self.confusion.to_html()
        return f"<div><b>{title}</b><table>{rows}</table>{warn}<p>Confusion (people in rows, judge in columns)</p>{confusion}</div>"
