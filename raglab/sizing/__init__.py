"""How many questions an eval set needs: standard errors, sample sizes, detectable changes and power.

Three designs, all normal approximations stated in every docstring:

* **Unpaired pass rates** (two runs on independent question samples, ``paired=False``): the
  arcsine (Cohen's h) approximation, ``h = |2 asin sqrt(p2) - 2 asin sqrt(p1)|`` with the
  statistic's variance ``2 / n``; exactly what statsmodels' ``NormalIndPower`` computes with
  ``proportion_effectsize`` and ``ratio=1``. ``n`` is questions *per run*. The change is applied in
  the direction that needs more questions (towards 0.5), so the answer holds for a rise or a fall.
* **Paired pass rates** (both configs answer the same questions, ``paired=True``): from the
  *discordance* ``q``, the share of questions whose pass/fail differs between the configs. The power
  is that of the **exact McNemar test** that :func:`raglab.stats.compare` reports (``p < alpha``;
  two-sided ``min(1, 2 P[Bin(D, 1/2) <= min(down, up)])``), summed exactly over the discordant
  counts of ``n`` questions (``D ~ Bin(n, q)``). The McNemar-type normal approximation of Connor
  (1987), ``n ~ ((z_a sqrt(q) + z_b sqrt(q - d**2)) / d)**2``, only starts the search: at its ``n``
  the exact test has 0.76-0.79 power where 0.80 was asked, so the exact answer is 2-6% larger.
  With clustered questions (``design_effect``) compare runs a cluster sign-flip test instead, and
  the normal approximation is used on ``n / design_effect``.
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
* **Clustered questions** (several per conversation or document): ``design_effect=``, or ``icc=``
  with ``cluster_size=`` (design effect ``1 + (cluster_size - 1) icc``), inflate ``n``;
  ``size_from_pilot(units=...)`` (``df.rag.size(units="conversation_id")``) estimates it.

:func:`questions_for_gate` sizes one row of the release gate: the ``n`` at which a truly unchanged
candidate passes a non-inferiority margin with the asked power. A release passes only when every
row passes (overall, every slice, every metric): :func:`questions_for_release` sizes that, and
:func:`release_from_pilot` estimates its inputs per slice from a pilot (:mod:`raglab.sizing.release`).
Each row is sized on the interval the gate will use: Tango's (pass/fail), the betting interval
(continuous metrics registered in [0, 1], or with ``bounds=`` declared; about 1.6-2 times the
questions of the bootstrap's), or the bootstrap (other continuous metrics, clusters).

The functions live in :mod:`~raglab.sizing.formulas` (standard error, questions needed, power,
detectable difference), :mod:`~raglab.sizing.outcomes` (paired outcomes, true and through a
judge), :mod:`~raglab.sizing.gate` (:func:`questions_for_gate`) and :mod:`~raglab.sizing.pilot`
(:func:`size_from_pilot`, :class:`SizingResult`); import them from ``raglab.sizing``.

When a judge scores every answer and people label a random subset, :func:`plan_labels`
(:mod:`~raglab.sizing.labels`) says how many to label and how many to judge for a PPI++ mean, what
the judge saves against labels alone, and the 2x ceiling of Dorner et al. (ICLR 2025) on that saving
for a judge no better than the system judged.

Examples
--------
>>> from raglab import sizing
>>> round(sizing.standard_error(0.7, 300), 3)
0.026
>>> sizing.questions_needed(0.03, p=0.7)                     # two independent runs, per run
3762
>>> sizing.questions_needed(0.03, paired=True, discordance=0.1)  # paired: far fewer
920
>>> sizing.questions_needed(0.03, paired=True, discordance=0.1, p=0.7,
...                         sensitivity=0.943, specificity=0.635)  # judged labels: many more
6713
"""

from __future__ import annotations

from raglab.sizing.formulas import detectable_difference, power, questions_needed, standard_error
from raglab.sizing.gate import questions_for_gate
from raglab.sizing.labels import LabelPlan, effective_labels, plan_labels
from raglab.sizing.outcomes import PairedOutcomes, paired_outcomes
from raglab.sizing.pilot import SizingResult, size_from_pilot
from raglab.sizing.release import (
    ReleaseSizing,
    questions_for_release,
    release_from_pilot,
    release_pass_probability,
)

__all__ = [
    "LabelPlan",
    "PairedOutcomes",
    "ReleaseSizing",
    "SizingResult",
    "detectable_difference",
    "effective_labels",
    "paired_outcomes",
    "plan_labels",
    "power",
    "questions_for_gate",
    "questions_needed",
    "release_from_pilot",
    "release_pass_probability",
    "questions_for_release",
    "size_from_pilot",
    "standard_error",
]
