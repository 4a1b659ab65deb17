"""Validating a judge against people, and agreement between people.

A judge is a classifier: before its averages are trusted, its error rates against human labels are
measured. :func:`report` compares a judge's labels with human labels on the same items and returns
an :class:`AgreementReport` with raw agreement, Cohen's kappa with an interval, the confusion
matrix, the judge's *miss rate* (of the items people marked negative, e.g. unsupported, the share the
judge passed), sensitivity and specificity, the *attenuation* ``J = sensitivity + specificity - 1``
(a true change ``d`` in the pass rate moves the judge's mean by about ``J * d``) and the
Rogan-Gladen corrected pass rate.

The judge's known biases (verbosity, self-preference, position), each with an interval, on rows
people labelled: :func:`judge_biases`.

A judge that returns a score: :func:`threshold_sweep` gives sensitivity, specificity, miss rate
and kappa at every threshold at once (each row is the report with ``judge_threshold=t``).

Several human raters: :func:`fleiss_kappa`, :func:`krippendorff_alpha` (nominal, ordinal, interval
or ratio; missing ratings allowed) and :func:`judge_vs_majority`.

Conventions (stated here once and in every result):

* Kappa thresholds: above about 0.6 is usually considered substantial agreement; below 0.4 the
  judge should not be trusted (the report warns with :class:`LowAgreementWarning`).
* Weighted kappa needs a distance between categories. ``distance="rank"`` (default) places the
  categories at their positions in the label order, 0, 1, 2, ... -- scikit-learn's convention and
  statsmodels' default. ``distance="value"`` uses the numeric labels themselves as category scores
  (statsmodels' ``cohens_kappa(table, weights=labels, wt=...)``); the two agree when the labels are
  equally spaced. Text labels have no order raglab can know (sorted, "high" < "low" < "mid"):
  weighted kappa by rank, ``krippendorff_alpha(level="ordinal")`` and the tie rules "low"/"high"
  refuse them with :class:`LabelMismatchError` unless ``labels=[...]`` gives the order.
* Rating matrices for several raters have one row per item and one column per rater (missing =
  NaN or None), the transpose of the ``krippendorff`` package's ``reliability_data``.
* Comparable labels: numbers with numbers (``1 == 1.0``), text with text, booleans with booleans,
  and booleans with numbers that are all 0 or 1 (True counts as 1 and False as 0, as in Python;
  the booleans are shown as 0/1). Text against numbers or booleans, booleans against other
  numbers, or human and judge labels with no label in common raise :class:`LabelMismatchError`
  naming both sides and the conversion that fixes it -- never a kappa of 0 that blames the judge.
* Kappa's interval (``method="auto"``): the adjusted one, statsmodels' ``kappa +- z * std_kappa``
  on the table plus ``1 / (m - 1)**2`` pseudo-items per cell of the ``m`` labels in use (one per
  cell for pass/fail), clipped to [-1, 1] and containing the estimate. Simulated
  (``benchmarks/agreement_coverage.py``), a nominal 95% interval covered 93.9-97.9% on pass/fail
  labels at n = 30-300, kappa 0.3-0.9 and base rates 0.5-0.9, where the plain one
  (``method="analytic"``) covered 40-95%.
* Clusters (``units=``): items from one conversation or document are not independent. The rates
  (agreement, pass rates, sensitivity, specificity, miss rate) then get a cluster-robust Wilson
  interval (effective sample size, t with G - 1 df), kappa and the rest the expanded percentile of
  a cluster bootstrap, and the report shows each statistic's *design effect*, the cluster-bootstrap
  variance over the item-bootstrap variance. Simulated at 10, 15, 20 and 40 clusters, agreement
  covered 94.3-96.3%, the miss rate 93.3-94.9% and kappa 93.7-94.6% (the plain percentile: 88.5-93.0%
  for agreement): about a point short of 95% at up to 40 clusters when the clusters' rates are
  skewed. Fewer than ``raglab.stats.MIN_CLUSTERS`` clusters: no interval, with a
  :class:`FragileIntervalWarning`.
* Rogan-Gladen outside [0, 1]: an :class:`ImpossibleRateWarning`, the estimate clipped, and the
  interval's part inside [0, 1] (none when all of it lies outside) -- never a zero-width interval.

The functions live in :mod:`~raglab.agreement.kappa` (Cohen's kappa and its interval),
:mod:`~raglab.agreement.raters` (Fleiss, Krippendorff, majority vote),
:mod:`~raglab.agreement.reporting` (:func:`report`, :func:`judge_vs_majority`),
:mod:`~raglab.agreement.result` (:class:`AgreementReport`), :mod:`~raglab.agreement.correction`
(Rogan-Gladen), :mod:`~raglab.agreement.clusters` (cluster bootstrap, design effects) and
:mod:`~raglab.agreement.labels` (label coding and the label-mismatch checks),
:mod:`~raglab.agreement.thresholds` (:func:`threshold_sweep`); import them from
``raglab.agreement``.

Examples
--------
>>> from raglab import agreement
>>> human = [1] * 150 + [0] * 50
>>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
>>> round(agreement.cohen_kappa(human, judge), 3)
0.559
>>> rep = agreement.report(human, judge, positive=1)
>>> rep.agreement, rep.miss_rate, round(rep.attenuation, 2)
(0.85, 0.44, 0.51)
"""

from __future__ import annotations

from raglab.agreement._biases import JudgeBiases, JudgeBiasWarning, judge_biases
from raglab.agreement._common import (
    KAPPA_MIN_COUNT,
    KAPPA_SUBSTANTIAL,
    KAPPA_UNTRUSTED,
    FragileIntervalWarning,
    ImpossibleRateWarning,
    LowAgreementWarning,
)
from raglab.agreement.correction import rogan_gladen
from raglab.agreement.kappa import cohen_kappa, cohen_kappa_interval
from raglab.agreement.labels import LabelMismatchError
from raglab.agreement.raters import fleiss_kappa, krippendorff_alpha, majority_vote
from raglab.agreement.reporting import judge_vs_majority, report
from raglab.agreement.result import AgreementReport
from raglab.agreement.thresholds import threshold_sweep

__all__ = [
    "AgreementReport",
    "FragileIntervalWarning",
    "ImpossibleRateWarning",
    "JudgeBiasWarning",
    "JudgeBiases",
    "KAPPA_MIN_COUNT",
    "LabelMismatchError",
    "LowAgreementWarning",
    "KAPPA_SUBSTANTIAL",
    "KAPPA_UNTRUSTED",
    "cohen_kappa",
    "cohen_kappa_interval",
    "fleiss_kappa",
    "judge_biases",
    "judge_vs_majority",
    "krippendorff_alpha",
    "majority_vote",
    "report",
    "rogan_gladen",
    "threshold_sweep",
]
