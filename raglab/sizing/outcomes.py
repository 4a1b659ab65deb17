"""The joint distribution of paired pass/fail outcomes, true and as a judge labels them.

:func:`paired_outcomes` builds the true 2 x 2 distribution of (baseline, candidate) outcomes from
a pass rate, a discordance and a change; :meth:`PairedOutcomes.through_judge` passes it through a
judge with given sensitivity and specificity (errors independent per answer). The judged designs
of :func:`raglab.sizing.questions_needed` and :func:`raglab.sizing.questions_for_gate` are sized
on the judge's labels this way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from raglab.sizing._checks import _TOL, _is_number, _judge_rates, _rate

__all__ = ["PairedOutcomes", "paired_outcomes"]


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
