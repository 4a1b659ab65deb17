"""Sizing the release, not one row: the questions at which an unchanged release passes the whole gate.

The gate (:func:`raglab.stats.gate`) passes a release only when every row passes: the overall row
and every slice row, for every metric. :func:`questions_for_release` takes the gate as it will run
(metrics and their margins, slices as fractions or estimated from a pilot, the interval level,
Holm's family for blocks, clustered questions) and returns the total ``n`` at which a truly
unchanged release passes with the asked probability, with the power to block a stated drop.
:func:`release_from_pilot` estimates the same inputs, per slice, from two pilot runs.

How each row's probability is computed:

* **pass/fail metrics** (without clusters): exactly, by summing the gate's own rule (Tango's
  score interval, ``low >= -margin``) over every discordant count of the row
  (``raglab.sizing._exact``); the block probability sums ``high < 0`` and the one-sided exact
  McNemar p-value times the number of rows in Holm's family (Holm's adjusted p-value is at most
  that, so this is a lower bound on the power to block).
* **continuous metrics on known bounds** (registered in [0, 1] such as recall, nDCG, rr,
  faithfulness, or declared with ``bounds=``; without clusters): the gate's betting interval
  (``raglab.sizing._exact.betting_pass_probability``): its bound behaves like
  ``mean - sqrt(2 log(1/alpha)) sd / sqrt(n)`` (``alpha = (1 - ci) / 2``: 2.72 sd / sqrt(n) at ci
  0.95, against the bootstrap's 1.96) plus a small-n excess computed from the interval's own bet
  sizes; the block probability is the mirror of a pass at margin 0 and the one-sided test.
* **other continuous metrics, and every metric with clusters**: a normal approximation of the gate's
  bootstrap interval, ``P(mean - c sd / sqrt(n) >= -margin)`` with the expanded-percentile critical
  value ``c = t_{m-1} sqrt(m / (m - 1))`` over the row's ``m`` questions (or clusters), on
  ``n / design_effect`` questions.

Which interval a continuous row is sized on follows the metric (``interval=`` overrides it) and is
stated in the result (``assumptions["interval"]`` and the rows' ``interval`` column).

The release passes when every row does. Slice rows hold disjoint questions, so they are
independent; the overall row is positively associated with them (every pass rule is increasing in
each question's paired difference, and questions are independent: Harris' inequality), so the
product of the rows' pass probabilities is a lower bound on the release's, nearly tight once the
overall row has many more questions than any slice. Metrics are multiplied too, which is a lower
bound when they are independent or positively associated on a question (the usual case) and is
stated as an assumption. Slice ``k`` holds ``floor(f_k n)`` questions; a row below the gate's
minimum (10 questions, or 10 clusters) reviews, so it never passes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab._registry import metric_info
from raglab._results import ResultBase
from raglab.sizing import _exact
from raglab.sizing._checks import _N_MAX, _design_effect, _is_number, _judge_rates, _rate
from raglab.sizing.outcomes import paired_outcomes
from raglab.stats._engine import MIN_CLUSTERS
from raglab.stats._gate import MIN_QUESTIONS, MIN_RESAMPLED
from raglab.stats.tables import _bounds_pair as _declared_bounds

__all__ = ["ReleaseSizing", "questions_for_release", "release_from_pilot", "release_pass_probability"]

_OVERALL = "overall"


@dataclass(frozen=True)
class _Row:
    metric: str
    slice: str
    fraction: float  # share of the questions in the row (1 for overall)
    kind: str  # "pass/fail" | "continuous"
    spread: float  # discordance (pass/fail) or sd of the per-question differences (continuous)
    margin: float
    design_effect: float = 1.0
    cluster_size: float | None = None
    judge: tuple[float, float, float, float] | None = None  # (true p, true discordance, sensitivity, specificity)
    span: float | None = None  # continuous metric on known bounds: the range of its differences (2 for [0, 1])
    note: str = ""  # how the gate decides a continuous row, and why (stated in the result)

    def drop_cells(self, drop: float) -> tuple[float, float]:
        """(pass -> fail, fail -> pass) probabilities of the gate's pass/fail outcomes under a true drop."""
        if self.judge is None:
            return (self.spread + drop) / 2, (self.spread - drop) / 2
        p, q, se, sp = self.judge
        seen = paired_outcomes(p, discordance=q, change=-drop).through_judge(sensitivity=se, specificity=sp)
        return seen.pass_fail, seen.fail_pass


@dataclass(frozen=True, repr=False)
class ReleaseSizing(ResultBase):
    """Questions at which an unchanged release passes the whole gate, and the power to block a drop.

    Attributes
    ----------
    n : int
        Total questions (every row: overall and slices, every metric).
    pass_probability : float
        Probability that a truly unchanged release passes at ``n`` (a lower bound; see
        :mod:`raglab.sizing.release`).
    power_to_block : dict
        ``{metric: probability}`` that a true drop of ``drop`` in that metric, in every slice,
        makes the gate block (a lower bound: the overall row alone, Bonferroni over Holm's family);
        empty when no ``drop`` was given.
    rows : pandas.DataFrame
        One row per gate row: ``metric, slice, fraction, n, kind, discordance, sd_diff, margin,
        design_effect, interval, p_pass`` and, with a drop, ``p_block`` (that row blocking a drop confined to it).
    assumptions : dict
        Target, level, Holm family, drop, design effects and how each probability was computed.
    """

    n: int
    pass_probability: float
    power_to_block: dict[str, float]
    rows: pd.DataFrame
    assumptions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``n``, ``pass_probability``, ``power_to_block``, the rows (as records) and the assumptions.

        Examples
        --------
        >>> d = questions_for_release(0.02, discordance=0.1, slices=2).to_dict()
        >>> d["n"], len(d["rows"]), d["holm_family"]
        (5258, 3, 3)
        """
        return {"n": self.n, "pass_probability": self.pass_probability, "power_to_block": dict(self.power_to_block),
                "rows": self.rows.to_dict("records"), **self.assumptions}

    def to_frame(self) -> pd.DataFrame:
        """The gate rows with their probabilities at ``n``.

        Examples
        --------
        >>> questions_for_release(0.02, discordance=0.1, slices=2).to_frame()[["slice", "n"]].values.tolist()
        [['overall', 5258], ['slice 1', 2629], ['slice 2', 2629]]
        """
        return self.rows.copy()

    def _title(self) -> str:
        a = self.assumptions
        asked = f"asked {a['power']:g}, " if math.isfinite(a["power"]) else ""
        text = (f"ReleaseSizing: {self.n:,} questions; an unchanged release passes every one of the "
                f"{len(self.rows)} gate rows with probability >= {self.pass_probability:.3f} "
                f"({asked}ci {a['ci']:g})")
        if self.power_to_block:
            shown = ", ".join(f"{m} {p:.3f}" for m, p in self.power_to_block.items())
            text += f"; a drop of {a['drop']:g} in every slice blocks with probability >= {shown}"
        return text


# --------------------------------------------------------------------------------------------------
# Row probabilities
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _tango_pass(n: int, p_down: float, p_up: float, margin: float, level: float) -> float:
    return _exact.tango_pass_probability(n, p_down, p_up, margin=margin, level=level)


@functools.lru_cache(maxsize=4096)
def _tango_block(n: int, p_down: float, p_up: float, level: float, family: int) -> float:
    return _exact.tango_block_probability(n, p_down, p_up, level=level, family=family)


def _row_size(row: _Row, n: int) -> int:
    return n if row.slice == _OVERALL else math.floor(row.fraction * n + 1e-9)


def _normal(row: _Row, m: int) -> tuple[float, float, float | None]:
    """Effective questions, sd and the t degrees of freedom of a row decided by a (cluster) bootstrap."""
    sd = row.spread if row.kind == "continuous" else math.sqrt(row.spread)
    n_eff = m / row.design_effect
    units = m / row.cluster_size if row.cluster_size else n_eff
    return n_eff, sd, units - 1


def _too_few(row: _Row, m: int) -> bool:
    """The gate reviews the row whatever its interval: too few questions (or clusters), or a bootstrap row
    (continuous without known bounds, or clustered) below MIN_RESAMPLED questions (or clusters)."""
    if m < MIN_QUESTIONS:
        return True
    units = m / row.cluster_size if row.cluster_size else m
    if row.cluster_size is not None and units < MIN_CLUSTERS:
        return True
    clustered = row.design_effect != 1 or row.cluster_size is not None
    bootstrap = not _betting_row(row) and (row.kind == "continuous" or clustered)
    return bootstrap and units < MIN_RESAMPLED


def _exact_row(row: _Row, m: int) -> bool:
    # clustered questions go to the gate's cluster bootstrap even when the pilot's design effect came out as 1
    return row.kind == "pass/fail" and row.design_effect == 1 and row.cluster_size is None and m <= _exact.EXACT_MAX


def _betting_row(row: _Row) -> bool:
    """The gate decides this row with the betting interval: a continuous metric on known bounds, no clusters."""
    return row.kind == "continuous" and row.span is not None and row.design_effect == 1 and row.cluster_size is None


@functools.lru_cache(maxsize=4096)
def _betting_pass(n: int, sd: float, margin: float, level: float, span: float) -> float:
    return _exact.betting_pass_probability(n, sd, margin=margin, level=level, span=span)


def _interval_of(row: _Row, m: int) -> str:
    if _exact_row(row, m):
        return "score (Tango)"
    if _betting_row(row):
        return "betting"
    return "cluster bootstrap" if row.design_effect != 1 else "bootstrap"


def _row_pass(row: _Row, n: int, level: float) -> float:
    m = _row_size(row, n)
    if _too_few(row, m):
        return 0.0
    if _exact_row(row, m):
        return _tango_pass(m, row.spread / 2, row.spread / 2, row.margin, level)
    if _betting_row(row):
        return _betting_pass(m, row.spread, row.margin, level, row.span)
    n_eff, sd, df = _normal(row, m)
    return _exact.normal_pass_probability(n_eff, sd, margin=row.margin, level=level, df=df)


def _row_block(row: _Row, n: int, level: float, drop: float, family: int) -> float:
    m = _row_size(row, n)
    if _too_few(row, m):
        return 0.0
    if _exact_row(row, m):
        return _tango_block(m, *row.drop_cells(drop), level, family)
    if _betting_row(row):
        return _exact.betting_block_probability(m, row.spread, drop=drop, level=level, family=family, span=row.span)
    n_eff, sd, df = _normal(row, m)
    return _exact.normal_block_probability(n_eff, sd, drop=drop, level=level, family=family, df=df)


def _evaluate(rows: Sequence[_Row], n: int, level: float) -> tuple[float, np.ndarray]:
    probs = np.array([_row_pass(row, n, level) for row in rows])
    return float(np.prod(probs)), probs


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------


def _per_metric(value: Any, what: str) -> dict[str, float]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    return {"pass/fail" if what == "discordance" else "continuous": value}


def _fractions(slices: Any) -> dict[str, float]:
    """``{slice: fraction}`` from K (equal slices), a list of fractions or a mapping."""
    if slices is None:
        return {}
    if _is_number(slices) and float(slices).is_integer():
        k = int(slices)
        if k < 1:
            raise ValueError(f"`slices` as a number is how many equal slices the gate has (>= 1), got {slices!r}")
        return {} if k == 1 else {f"slice {i + 1}": 1.0 / k for i in range(k)}
    if isinstance(slices, Mapping):
        items = [(str(k), v) for k, v in slices.items()]
    elif isinstance(slices, Sequence) and not isinstance(slices, str):
        items = [(f"slice {i + 1}", v) for i, v in enumerate(slices)]
    else:
        raise TypeError(
            f"`slices` must be a number of equal slices, a list of fractions or {{slice: fraction}}, got {slices!r}"
        )
    out = {name: _rate(f"slices[{name!r}]", value, open_low=True) for name, value in items}
    total = sum(out.values())
    if total > 1 + 1e-9:
        raise ValueError(f"the slice fractions sum to {total:.4g}: they are shares of the questions, at most 1 in all")
    return out


def _margin_for(margin: Any, metric: str) -> float:
    value = margin.get(metric) if isinstance(margin, Mapping) else margin
    if value is None:
        raise ValueError(f"`margin` gives no margin for {metric!r}; give every metric one, e.g. {{{metric!r}: 0.02}}")
    if not _is_number(value) or not math.isfinite(value) or not value > 0:
        raise ValueError(f"the margin for {metric!r} must be a positive drop (e.g. 0.02), got {value!r}")
    return float(value)


def _intervals(kinds: Mapping[str, str], interval: Any, bounds: Any) -> dict[str, tuple[float | None, str]]:
    """``{continuous metric: (span of its differences or None, how the gate decides it)}``.

    The gate decides a continuous metric with the betting interval when its bounds are known: declared
    (``bounds={metric: (lo, hi)}``, differences in ``[lo - hi, hi - lo]``), asked for
    (``interval="betting"``: a score in [0, 1]) or registered (``metric_info(name).bounded``); with
    the bootstrap otherwise, or when ``interval="bootstrap"``.
    """
    continuous = [m for m, kind in kinds.items() if kind == "continuous"]
    for what, given in (("interval", interval), ("bounds", bounds)):
        if isinstance(given, Mapping):
            unknown = sorted(set(map(str, given)) - set(continuous))
            if unknown:
                raise ValueError(f"`{what}` names {unknown}, which are not continuous metrics here (sd_diff= or a "
                                 "pilot's non-0/1 scores); pass/fail rows always use Tango's interval")
    if bounds is not None and not isinstance(bounds, Mapping):
        raise TypeError(f"`bounds` must be {{metric: (low, high)}}, got {bounds!r}")
    out: dict[str, tuple[float | None, str]] = {}
    for m in continuous:
        choice = interval.get(m) if isinstance(interval, Mapping) else interval
        if choice not in (None, "betting", "bootstrap"):
            raise ValueError(f"`interval` for {m!r} must be 'betting', 'bootstrap' or None (from the metric), "
                             f"got {choice!r}")
        declared = bounds.get(m) if bounds is not None else None
        if declared is not None:
            lo, hi = _declared_bounds(m, declared)
        if choice == "bootstrap":
            out[m] = (None, "bootstrap (asked)")
        elif declared is not None:
            out[m] = (2.0 * (hi - lo), f"betting on the declared bounds [{lo:g}, {hi:g}]")
        elif choice == "betting":
            out[m] = (2.0, "betting on [0, 1] (asked)")
        elif metric_info(m).bounded:
            out[m] = (2.0, "betting: registered in [0, 1]")
        else:
            out[m] = (None, "bootstrap: no known bounds (declare bounds= to size it on the betting interval)")
    return out


def _check_spread(metric: str, sd: float, span: float | None) -> None:
    if span is not None and sd > span / 2 + 1e-12:
        raise ValueError(f"an sd_diff of {sd:g} is impossible for {metric!r}: its differences lie in a range of "
                         f"{span:g}, so their sd is at most {span / 2:g}")


def _check_drop(drop: Any, rows: Sequence[_Row]) -> float | None:
    if drop is None:
        return None
    if not _is_number(drop) or not math.isfinite(drop) or not drop > 0:
        raise ValueError(f"`drop` must be a positive true drop to block (e.g. 0.05), got {drop!r}")
    for row in rows:
        if row.judge is not None:
            row.drop_cells(drop)  # raises, naming the input, when the true cells cannot hold such a drop
        elif row.kind == "pass/fail" and drop > row.spread:
            raise ValueError(
                f"a drop of {drop:g} cannot happen in {row.metric!r} ({row.slice}) when only {row.spread:.4g} of the "
                "questions change pass/fail (discordance): the mean change is at most the discordance"
            )
    return float(drop)


# --------------------------------------------------------------------------------------------------
# Search and the public functions
# --------------------------------------------------------------------------------------------------


def _result(rows: list[_Row], n: int, *, power: float, ci: float, drop: float | None,
            extra: dict[str, Any]) -> ReleaseSizing:
    family = len(rows)
    total, probs = _evaluate(rows, n, ci)
    table = pd.DataFrame({
        "metric": [r.metric for r in rows],
        "slice": [r.slice for r in rows],
        "fraction": [r.fraction for r in rows],
        "n": [_row_size(r, n) for r in rows],
        "kind": [r.kind for r in rows],
        "discordance": [r.spread if r.kind == "pass/fail" else np.nan for r in rows],
        "sd_diff": [r.spread if r.kind == "continuous" else np.nan for r in rows],
        "margin": [r.margin for r in rows],
        "design_effect": [r.design_effect for r in rows],
        "interval": [_interval_of(r, _row_size(r, n)) for r in rows],
        "p_pass": probs,
    })
    blocks: dict[str, float] = {}
    if drop is not None:
        table["p_block"] = [_row_block(r, n, ci, drop, family) for r in rows]
        for r, p in zip(rows, table["p_block"]):
            if r.slice == _OVERALL:
                blocks[r.metric] = float(p)
    methods = sorted({"exact (Tango's interval, exact McNemar)" if _exact_row(r, _row_size(r, n)) else
                      "betting interval (mean - sqrt(2 log(1/alpha)) sd / sqrt(n) and its small-n excess, from the "
                      "interval's own bet sizes)" if _betting_row(r) else
                      "normal approximation (bootstrap interval" + (", clusters)" if r.design_effect != 1 else ")")
                      for r in rows})
    intervals = {r.metric: ("cluster bootstrap (clustered questions)" if r.design_effect != 1 or r.cluster_size
                            else "score (Tango)" if r.kind == "pass/fail" else r.note) for r in rows}
    assumptions = {
        "power": power, "ci": ci, "drop": drop, "holm_family": family, "n_rows": len(rows),
        "method": "; ".join(methods), "interval": intervals,
        "combination": ("release pass = product of the rows' pass probabilities: a lower bound (slices independent, "
                        "the overall row positively associated with them; metrics taken as independent or "
                        "positively associated)"),
        "block_rule": (f"power to block = the overall row of the metric blocking with its one-sided p-value x {family} "
                       "(Bonferroni; Holm's adjusted p-value is at most that): a lower bound"),
        **extra,
    }
    return ReleaseSizing(int(n), total, blocks, table, assumptions)


def _search(rows: list[_Row], power: float, ci: float) -> int:
    """Smallest total n whose release pass probability reaches ``power`` and keeps it for the next 20."""
    smallest = max(MIN_QUESTIONS, *(math.ceil(MIN_QUESTIONS / r.fraction - 1e-9) for r in rows))

    def reached(n: int) -> bool:
        return _evaluate(rows, n, ci)[0] >= power

    low, high = smallest - 1, smallest
    while not reached(high):
        low, high = high, high * 2
        if high > _N_MAX:
            raise ValueError("no practical number of questions makes this release pass with the asked probability")
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    n = high
    while True:  # slice sizes are floors of f n, so the probability saw-tooths a little: keep n only if it holds
        failed = next((m for m in range(n + 1, n + 21) if not reached(m)), None)
        if failed is None:
            return n
        n = failed + 1
        while not reached(n):
            n += 1


def _build_rows(margin: Any, discordance: Any, sd_diff: Any, slices: Any, deff: float,
                cluster_size: float | None, judge: tuple[float, float, float] | None = None,
                interval: Any = None, bounds: Any = None) -> list[_Row]:
    kinds = {**{m: ("pass/fail", v) for m, v in _per_metric(discordance, "discordance").items()}}
    for m, v in _per_metric(sd_diff, "sd_diff").items():
        if m in kinds:
            raise ValueError(f"metric {m!r} has both a discordance (pass/fail) and an sd_diff (continuous): give one")
        kinds[m] = ("continuous", v)
    if not kinds:
        raise ValueError(
            "sizing the release needs, per metric, `discordance` (pass/fail: the share of questions whose pass/fail "
            "differs between two runs of an unchanged config) or `sd_diff` (continuous: sd of per-question "
            "differences); e.g. discordance={'hit@5': 0.1}, sd_diff={'faithfulness': 0.15}"
        )
    fractions = _fractions(slices)
    spans = _intervals({m: kind for m, (kind, _) in kinds.items()}, interval, bounds)
    rows = []
    for metric, (kind, value) in kinds.items():
        labels = None
        if kind == "pass/fail":
            spread = _rate(f"discordance for {metric!r}", value, open_low=True)
            if judge is not None:  # the gate sees the judge's labels: their discordance, larger than the true one
                p, se, sp = judge
                labels = (p, spread, se, sp)
                spread = paired_outcomes(p, discordance=spread, change=0.0).through_judge(
                    sensitivity=se, specificity=sp).discordance
        else:
            if not _is_number(value) or not math.isfinite(value) or not value > 0:
                raise ValueError(f"`sd_diff` for {metric!r} must be a positive standard deviation, got {value!r}")
            spread = float(value)
        span, note = spans.get(metric, (None, ""))
        _check_spread(metric, spread, span)
        mg = _margin_for(margin, metric)
        for name, frac in [(_OVERALL, 1.0), *fractions.items()]:
            rows.append(_Row(metric, name, frac, kind, spread, mg, deff, cluster_size, labels, span, note))
    if judge is not None and not any(kind == "pass/fail" for kind, _ in kinds.values()):
        raise ValueError("`p`, `sensitivity` and `specificity` describe a judge's pass/fail labels; no metric here "
                         "has a discordance")
    if isinstance(margin, Mapping):
        unknown = sorted(set(map(str, margin)) - set(kinds))
        if unknown:
            raise ValueError(f"`margin` names metrics with no discordance or sd_diff: {unknown}")
    return rows


def questions_for_release(
    margin: float | Mapping[str, float],
    *,
    discordance: float | Mapping[str, float] | None = None,
    sd_diff: float | Mapping[str, float] | None = None,
    slices: int | Sequence[float] | Mapping[str, float] | None = None,
    power: float = 0.8,
    ci: float = 0.95,
    drop: float | None = None,
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
    p: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    interval: str | Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> ReleaseSizing:
    """Questions at which a truly unchanged release passes the whole gate with probability ``power``.

    The gate passes a release only when the overall row and every slice row pass, for every
    metric. This sizes that joint event (a lower bound on it: see :mod:`raglab.sizing.release`),
    with pass/fail rows computed exactly on the gate's own rule (Tango's score interval),
    continuous rows on known bounds on its betting interval, and other continuous or clustered rows
    by a normal approximation of its bootstrap interval.

    Parameters
    ----------
    margin : float or dict
        The gate's margin, one for every metric or ``{metric: margin}``.
    discordance : float or dict
        Pass/fail metrics: the share of questions whose pass/fail differs between two runs of an
        unchanged config, ``{metric: discordance}`` (a bare number is one metric, ``"pass/fail"``).
    sd_diff : float or dict
        Continuous metrics: the standard deviation of the per-question differences.
    slices : int, list of float or dict, optional
        The gate's slices: ``K`` equal slices, their fractions of the questions, or
        ``{slice: fraction}``. Fractions need not sum to 1 (questions outside every slice still
        count in the overall row). Each slice row holds ``floor(fraction * n)`` questions.
    power : float
        Asked probability that an unchanged release passes.
    ci : float
        The gate's interval level (its ``ci=``).
    drop : float, optional
        A true drop (in the metric's units, in every slice) whose power to block is reported.
    design_effect, icc, cluster_size : float, optional
        Clustered questions (several per conversation or document): the design effect, or
        ``icc`` with the mean ``cluster_size`` (design effect ``1 + (cluster_size - 1) icc``). The
        gate then uses cluster bootstrap intervals for every metric: rows are sized by the normal
        approximation on ``n / design_effect`` questions, and with ``cluster_size`` a row needs
        10 clusters.
    p, sensitivity, specificity : float, optional
        A judge labels the pass/fail answers (as in :func:`questions_for_gate`): ``discordance`` and
        ``p`` are then the TRUE outcomes and every pass/fail row is sized on the judge's labels
        (their larger discordance; a true ``drop`` shows as the labels' smaller change).
    interval : {"betting", "bootstrap"} or dict, optional
        How the gate decides a continuous metric (or ``{metric: ...}``). By default from the metric:
        the betting interval for a metric with known bounds (registered in [0, 1] such as recall,
        nDCG, rr, faithfulness: ``metric_info(name).bounded``, or declared in ``bounds``), the
        bootstrap otherwise (a bare ``sd_diff`` number names no metric: bootstrap unless
        ``interval="betting"``, which means a score in [0, 1]). Clustered questions always take the
        cluster bootstrap, as the gate does. The result states the choice per metric
        (``assumptions["interval"]``, column ``interval``).
    bounds : dict, optional
        ``{metric: (low, high)}``: the range declared to the gate (its ``bounds=``); the metric is
        sized on the betting interval over differences in ``[low - high, high - low]``.

    Returns
    -------
    ReleaseSizing
        ``n``, ``pass_probability`` at ``n``, ``power_to_block`` per metric, and ``rows``.

    See Also
    --------
    questions_for_gate : one row only (``slice_fraction=1/K`` sizes one slice, not the release).
    release_from_pilot : the same, with every slice's discordance or sd estimated from a pilot.

    Examples
    --------
    >>> r = questions_for_release(0.02, discordance={"hit@5": 0.1}, slices=4, drop=0.04)
    >>> r.n, round(r.pass_probability, 3), round(r.power_to_block["hit@5"], 3)
    (12852, 0.8, 1.0)
    >>> questions_for_release(0.02, discordance=0.1).n      # one row: the overall pass rate only
    1994
    >>> r = questions_for_release(0.02, sd_diff={"recall@5": 0.15}, slices=4)   # [0, 1]: betting rows
    >>> r.n, r.assumptions["interval"]["recall@5"]
    (4264, 'betting: registered in [0, 1]')
    >>> questions_for_release(0.02, sd_diff={"recall@5": 0.15}, slices=4, interval="bootstrap").n
    2868
    """
    power = _rate("power", power, open_low=True, open_high=True)
    ci = _rate("ci", ci, open_low=True, open_high=True)
    deff, size = _design_effect(design_effect, icc, cluster_size)
    rows = _build_rows(margin, discordance, sd_diff, slices, deff, size, _judge(p, sensitivity, specificity),
                       interval, bounds)
    drop = _check_drop(drop, rows)
    n = _search(rows, power, ci)
    return _result(rows, n, power=power, ci=ci, drop=drop,
                   extra={"design_effect": deff, "cluster_size": size, "source": "stated",
                          "judge": _judge_note(p, sensitivity, specificity)})


def release_pass_probability(
    n: int,
    margin: float | Mapping[str, float],
    *,
    discordance: float | Mapping[str, float] | None = None,
    sd_diff: float | Mapping[str, float] | None = None,
    slices: int | Sequence[float] | Mapping[str, float] | None = None,
    ci: float = 0.95,
    drop: float | None = None,
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
    p: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    interval: str | Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> ReleaseSizing:
    """The release's pass probability (and power to block ``drop``) at a given total ``n``.

    Parameters are as in :func:`questions_for_release` (``p``, ``sensitivity`` and ``specificity``
    for a judge too, ``interval`` and ``bounds``); the result's ``n`` is the one given.

    Examples
    --------
    >>> r = release_pass_probability(2000, 0.02, discordance=0.1, slices=4)
    >>> round(r.pass_probability, 3), r.rows["n"].tolist()
    (0.005, [2000, 500, 500, 500, 500])
    """
    if not _is_number(n) or not float(n).is_integer() or n < 1:
        raise ValueError(f"`n` must be a whole number of questions, got {n!r}")
    ci = _rate("ci", ci, open_low=True, open_high=True)
    deff, size = _design_effect(design_effect, icc, cluster_size)
    rows = _build_rows(margin, discordance, sd_diff, slices, deff, size, _judge(p, sensitivity, specificity),
                       interval, bounds)
    drop = _check_drop(drop, rows)
    return _result(rows, int(n), power=math.nan, ci=ci, drop=drop,
                   extra={"design_effect": deff, "cluster_size": size, "source": "stated",
                          "judge": _judge_note(p, sensitivity, specificity)})


def _judge(p: Any, sensitivity: Any, specificity: Any) -> tuple[float, float, float] | None:
    rates = _judge_rates(sensitivity, specificity)
    if rates is None:
        if p is not None:
            raise ValueError(f"`p` = {p!r} changes nothing without a judge; drop it, or pass `sensitivity=` and "
                             "`specificity=` too (then `p` and `discordance` are the TRUE outcomes)")
        return None
    if p is None:
        raise ValueError("a judge's `sensitivity` and `specificity` need `p`, the baseline's TRUE pass rate (e.g. p=0.7)")
    return _rate("p", p), rates[0], rates[1]


def _judge_note(p: Any, sensitivity: Any, specificity: Any) -> str | None:
    if sensitivity is None:
        return None
    return (f"pass/fail rows on a judge's labels (sensitivity {sensitivity:g}, specificity {specificity:g}, TRUE p "
            f"{p:g}): the rows' discordance is the labels'")


def _cluster_design_effect(diff: np.ndarray, units: np.ndarray) -> float:
    """Design effect of the mean difference: cluster-robust variance over the independent-question variance."""
    n = len(diff)
    codes, _ = pd.factorize(pd.Series(units), use_na_sentinel=False)
    g = int(codes.max()) + 1
    centred = diff - diff.mean()
    total = np.bincount(codes, weights=centred, minlength=g)
    iid = float(np.sum(centred**2))
    if iid == 0 or g < 2:
        return 1.0
    robust = float(np.sum(total**2)) * g / (g - 1)
    return max(1.0, robust / (iid * n / (n - 1)))


def release_from_pilot(
    base: Mapping[str, Any] | pd.DataFrame,
    cand: Mapping[str, Any] | pd.DataFrame,
    margin: float | Mapping[str, float],
    *,
    slices: Any = None,
    units: Any = None,
    power: float = 0.8,
    ci: float = 0.95,
    drop: float | None = None,
    interval: str | Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> ReleaseSizing:
    """:func:`questions_for_release` with each metric's and slice's spread estimated from pilot runs.

    Parameters
    ----------
    base, cand : dict of array-like or DataFrame
        Per-question scores of two pilot runs of configs of equal quality (e.g. the baseline run
        twice, or baseline and a harmless change), same questions in the same order, one column per
        metric. 0/1 columns are pass/fail (their discordance per slice), others continuous (the sd of
        the differences per slice, ``ddof=1``). Pairs with a missing score are dropped.
    margin : float or dict
        The gate's margin (or ``{metric: margin}``).
    slices : array-like, optional
        A slice label per pilot question, as for the gate's ``slices=``: the slices' fractions and
        spreads come from the pilot.
    units : array-like, optional
        A cluster label per pilot question (conversation, document): the design effect of each
        metric (cluster-robust over independent variance of the mean difference, at least 1) and
        the mean cluster size are estimated and n is inflated.
    power, ci, drop, interval, bounds
        As in :func:`questions_for_release` (continuous metrics registered in [0, 1] are sized on the
        betting interval by default).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> base = {"hit@5": (rng.random(400) < 0.7).astype(float)}
    >>> cand = {"hit@5": np.where(rng.random(400) < 0.1, 1 - base["hit@5"], base["hit@5"])}
    >>> r = release_from_pilot(base, cand, 0.02, slices=np.repeat(["a", "b"], 200))
    >>> r.rows[["slice", "fraction"]].values.tolist()
    [['overall', 1.0], ['a', 0.5], ['b', 0.5]]
    """
    power = _rate("power", power, open_low=True, open_high=True)
    ci = _rate("ci", ci, open_low=True, open_high=True)
    b, c = pd.DataFrame(base), pd.DataFrame(cand)
    if list(b.columns) != list(c.columns) or len(b) != len(c):
        raise ValueError(
            f"`base` and `cand` must hold the same metrics for the same questions in the same order; got columns "
            f"{list(b.columns)} and {list(c.columns)}, {len(b)} and {len(c)} rows"
        )
    n_pilot = len(b)
    labels = None if slices is None else np.asarray(pd.Series(slices, dtype=object).astype(str))
    clusters = None if units is None else np.asarray(units, dtype=object)
    for what, values in (("slices", labels), ("units", clusters)):
        if values is not None and len(values) != n_pilot:
            raise ValueError(f"`{what}` has {len(values)} labels for {n_pilot} pilot questions")
    rows: list[_Row] = []
    effects: dict[str, float] = {}
    size = None
    if clusters is not None:
        size = n_pilot / len(pd.unique(clusters))
    columns = {}
    for metric in b.columns:
        bv = pd.to_numeric(b[metric], errors="coerce").to_numpy(dtype=float)
        cv = pd.to_numeric(c[metric], errors="coerce").to_numpy(dtype=float)
        keep = ~(np.isnan(bv) | np.isnan(cv))
        if keep.sum() < 2:
            raise ValueError(f"metric {metric!r}: fewer than 2 pilot questions scored in both runs")
        binary = bool(np.isin(bv[keep], (0.0, 1.0)).all() and np.isin(cv[keep], (0.0, 1.0)).all())
        columns[str(metric)] = (bv, cv, keep, binary)
    spans = _intervals({m: "pass/fail" if v[3] else "continuous" for m, v in columns.items()}, interval, bounds)
    for metric, (bv, cv, keep, binary) in columns.items():
        diff = (cv - bv)[keep]
        deff = 1.0 if clusters is None else _cluster_design_effect(diff, clusters[keep])
        effects[str(metric)] = deff
        groups = [(_OVERALL, np.ones(keep.sum(), dtype=bool))]
        if labels is not None:
            kept_labels = labels[keep]
            groups += [(name, kept_labels == name) for name in pd.unique(kept_labels)]
        mg = _margin_for(margin, str(metric))
        for name, mask in groups:
            part = diff[mask]
            frac = float(mask.mean())
            if binary:
                spread = float(np.mean(part != 0))
                if spread == 0:
                    raise ValueError(
                        f"metric {metric!r}, slice {name!r}: the two pilot runs never differ ({mask.sum()} questions), "
                        "so its discordance cannot be estimated; run a larger pilot or pass a planning value to "
                        "sizing.questions_for_release(discordance=...)"
                    )
            else:
                spread = float(np.std(part, ddof=1)) if part.size > 1 else 0.0
                if not spread > 0:
                    raise ValueError(
                        f"metric {metric!r}, slice {name!r}: the per-question differences do not vary in the pilot "
                        f"({part.size} questions); run a larger pilot or pass sizing.questions_for_release(sd_diff=...)"
                    )
            span, note = spans.get(metric, (None, ""))
            if span is not None:
                _check_spread(f"{metric}, slice {name}", spread, span)
            rows.append(_Row(str(metric), str(name), frac, "pass/fail" if binary else "continuous", spread, mg,
                             deff, size, span=span, note=note))
    drop = _check_drop(drop, rows)
    n = _search(rows, power, ci)
    return _result(rows, n, power=power, ci=ci, drop=drop,
                   extra={"design_effect": effects, "cluster_size": size, "source": f"pilot of {n_pilot} questions"})
