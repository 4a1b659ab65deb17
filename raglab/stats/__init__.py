"""Intervals on one run, paired comparisons between runs, and the release gate.

Every interval states its method, level, count and (for resampling) the number of resamples and
the seed; see :class:`raglab.stats.Interval`.

The pieces
----------
* :func:`proportion_interval`, :func:`mean_interval`: one run, one number.
* :func:`paired_bootstrap`: the interval on ``mean(cand - base)`` over questions answered by both;
  :func:`paired_proportion_interval`: Tango's score interval for two paired pass rates.
* :func:`mcnemar`, :func:`sign_flip_test`, :func:`holm`: paired tests beside the intervals.
* :func:`ppi_mean`, :func:`ppi_mean_strata`, :func:`ppi_mean_clustered`, :func:`ppi_table`:
  prediction-powered intervals (PPI++), a judge's scores on every row debiased by human labels on a
  random subset (:func:`ppi_mean_sampled` when it was drawn with unequal probabilities); ``compare(labels=...)`` and ``gate(labels=...)`` use them on paired differences,
  and the gate reviews below :data:`MIN_LABELS` labels (or :data:`MIN_LABELED_CLUSTERS` labelled
  clusters).
* :func:`summary`, :func:`compare`: tidy tables, one row per metric x slice (``overall`` first).
* :func:`gate`: :func:`compare` plus a non-inferiority decision per row, returned as a
  :class:`GateResult` that writes a JSON decision log; :func:`gate_comparison` decides on a
  comparison table you already have.

Where the code lives
--------------------
``raglab.stats._engine`` (the resampling engine and the input checks), ``raglab.stats.intervals``
(the interval formulas), ``raglab.stats.tests`` (paired tests), ``raglab.stats.estimators`` (one
class per interval method, and the ``"auto"`` choice), ``raglab.stats.results`` (the typed rows
and the tables' columns, declared once), ``raglab.stats.tables`` (summary, compare),
``raglab.stats.ppi`` (prediction-powered inference) and ``raglab.stats._gate`` (the gate, on top
of compare; also importable as :mod:`raglab.gate`). Nothing here imports upward: the gate imports the tables, never the reverse. Every public name is
importable from here.

How the bootstrap is computed
-----------------------------
Resampling ``n`` questions with replacement only matters through how many times each *distinct*
question profile is drawn, where a profile is the question's slice and its per-question differences
(one per metric). Profiles shared by many questions (pass/fail metrics take only the differences
-1, 0 and 1; most questions do not change at all) are drawn as one multinomial over the distinct
profiles; the remaining questions are drawn one by one, and the count of draws that fall among them
comes from the same multinomial. This is the *same distribution* as resampling rows, at a cost of
O(resamples x distinct profiles) instead of O(resamples x questions), in chunks of bounded memory.
Every metric and every slice of one call is computed from the same resampled counts, so their
intervals are jointly consistent (they describe the same resampled question sets). A slice's mean
in a resample is the mean over the slice's questions that were drawn (a domain estimate), so slice
sizes vary between resamples as they would between eval sets drawn from the same population.
With ``units=`` whole clusters (all questions of a document or conversation) are resampled instead.
"""

from __future__ import annotations

from raglab._interval import Interval
from raglab.stats._engine import (  # noqa: F401  (private names other modules and tests import from here)
    MIN_CLUSTERS,
    OVERALL,
    _is_binary,
    _Resampler,
    _unit_codes,
)
from raglab.stats._gate import (  # noqa: F401  (private names that tests use through raglab.stats)
    DECISIONS,
    GATE_RULE,
    GATE_TOLERANCE,
    MIN_CHANGED,
    MIN_QUESTIONS,
    MIN_RESAMPLED,
    GateResult,
    _decide,
    _gate_table,
    _worst,
    gate,
    gate_comparison,
)
from raglab.stats.intervals import (  # noqa: F401
    _SCORE_LABEL,
    _tango_bounds,
    mean_interval,
    paired_bootstrap,
    paired_proportion_interval,
    proportion_interval,
)
from raglab.stats.ppi import (
    MIN_LABELED_CLUSTERS,
    MIN_LABELS,
    PPIInterval,
    ppi_mean,
    ppi_mean_clustered,
    ppi_mean_sampled,
    ppi_mean_strata,
    ppi_table,
)
from raglab.stats.tables import compare, summary
from raglab.stats.tests import (  # noqa: F401
    TestResult,
    _one_sided_mcnemar,
    holm,
    mcnemar,
    sign_flip_test,
)

__all__ = [
    "DECISIONS",
    "OVERALL",
    "GATE_RULE",
    "MIN_QUESTIONS",
    "MIN_CLUSTERS",
    "MIN_CHANGED",
    "MIN_RESAMPLED",
    "MIN_LABELED_CLUSTERS",
    "MIN_LABELS",
    "PPIInterval",
    "GateResult",
    "Interval",
    "TestResult",
    "compare",
    "gate",
    "gate_comparison",
    "holm",
    "mcnemar",
    "mean_interval",
    "paired_bootstrap",
    "paired_proportion_interval",
    "ppi_mean",
    "ppi_mean_clustered",
    "ppi_mean_sampled",
    "ppi_mean_strata",
    "ppi_table",
    "proportion_interval",
    "sign_flip_test",
    "summary",
]
