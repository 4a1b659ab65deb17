"""Eval-set sizing: seed 000's standard error, statsmodels' normal-approximation power, simulation of
the returned n, monotonicity (hypothesis), df.rag.size and `raglab size`."""

from __future__ import annotations

import functools
import inspect
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

import raglab
from raglab import sizing
from raglab.cli import main
from raglab.sizing import (
    SizingResult,
    detectable_difference,
    paired_outcomes,
    power,
    questions_for_gate,
    questions_needed,
    size_from_pilot,
    standard_error,
)

Z95 = 1.959963984540054


# ---- seed numbers -----------------------------------------------------------------------------------


def test_seed_standard_error():
    # seed 000: "At p = 0.7 and n = 300 that is about 0.026 ... roughly plus or minus 5 points"
    assert round(standard_error(0.7, 300), 3) == 0.026
    assert round(Z95 * standard_error(0.7, 300), 2) == 0.05


def test_seed_unpaired_300_cannot_see_a_four_point_drop_but_paired_can():
    # seed 000: "With unpaired runs and 300 questions, a 4-point drop is inside the noise", while the
    # paired comparison (10% of questions flipped) found a drop of 0.043
    assert detectable_difference(300, p=0.717) > 0.04
    assert power(300, 0.043, p=0.717) < 0.5
    # exact McNemar (what compare reports): 0.594; the normal approximation said 0.63
    assert power(300, 0.043, paired=True, discordance=0.1) > 2 * power(300, 0.043, p=0.717) > 0.4


def test_seed_one_point_in_a_rare_slice_needs_thousands():
    # seed 000: "detecting a one-point change in a rare failure type needs thousands of questions of that type"
    assert questions_needed(0.01, paired=True, discordance=0.05) > 1000
    assert questions_needed(0.01, paired=True, discordance=0.05, slice_fraction=0.05) > 20 * 1000


# ---- statsmodels oracles ----------------------------------------------------------------------------


@pytest.mark.parametrize("p,mde", [(0.7, 0.03), (0.7, 0.05), (0.5, 0.1), (0.9, 0.02), (0.2, 0.05), (0.05, 0.03)])
@pytest.mark.parametrize("alternative", ["two-sided", "one-sided"])
def test_unpaired_matches_statsmodels_normal_ind_power(p, mde, alternative):
    # The change is taken in the direction that needs more questions (towards 0.5).
    p2 = p - mde if p > 0.5 else p + mde
    if p == 0.5:
        p2 = 0.5 + mde  # symmetric: either direction
    h = abs(proportion_effectsize(p2, p))
    sm_alt = "two-sided" if alternative == "two-sided" else "larger"
    sm_n = NormalIndPower().solve_power(effect_size=h, alpha=0.05, power=0.8, ratio=1, alternative=sm_alt)
    assert questions_needed(mde, p=p, alternative=alternative) == math.ceil(sm_n)
    for n in (50, 300, 2000):
        expected = NormalIndPower().power(h, nobs1=n, alpha=0.05, ratio=1, alternative=sm_alt)
        assert power(n, mde, p=p, alternative=alternative) == pytest.approx(expected, abs=1e-12)


def test_unpaired_detectable_difference_matches_statsmodels():
    for n in (100, 300, 1000):
        h = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=0.05, power=0.8, ratio=1)
        p2 = math.sin(math.asin(math.sqrt(0.7)) - h / 2) ** 2  # towards 0.5
        ours = detectable_difference(n, p=0.7)
        assert ours == pytest.approx(0.7 - p2, abs=1e-6)  # statsmodels' root finder is looser than ours
        h_ours = abs(proportion_effectsize(0.7 - ours, 0.7))
        assert NormalIndPower().power(h_ours, nobs1=n, alpha=0.05, ratio=1) == pytest.approx(0.8, abs=1e-10)


@pytest.mark.parametrize("sd,mde", [(1.0, 0.2), (0.3, 0.05), (0.25, 0.01)])
def test_continuous_matches_statsmodels_one_sample(sd, mde):
    # NormalIndPower with ratio=0 is the one-sample z-test: here on per-question differences
    sm_n = NormalIndPower().solve_power(effect_size=mde / sd, alpha=0.05, power=0.8, ratio=0)
    assert questions_needed(mde, sd_diff=sd) == math.ceil(sm_n)
    assert power(150, mde, sd_diff=sd) == pytest.approx(
        NormalIndPower().power(mde / sd, nobs1=150, alpha=0.05, ratio=0), abs=1e-12
    )


def _oracle_mcnemar_power(n, p_down, p_up, alpha=0.05):
    """Exact McNemar power by brute force: every (down, up) count with its multinomial probability, and the
    two-sided exact p-value min(1, 2 P[Bin(D, 1/2) <= min(down, up)]) (statsmodels' mcnemar(exact=True))."""
    q = p_down + p_up
    spread = 9 * math.sqrt(n * q * (1 - q)) + 5
    totals = np.arange(max(0, math.floor(n * q - spread)), min(n, math.ceil(n * q + spread)) + 1)
    total = np.repeat(totals, totals + 1)
    up = np.concatenate([np.arange(t + 1) for t in totals])
    down = total - up
    weight = sps.multinomial.pmf(np.stack([down, up, n - total], axis=-1), n, [p_down, p_up, 1 - q])
    p_value = np.where(total == 0, 1.0, np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(down, up), total, 0.5)))
    return float(weight[p_value < alpha].sum())


def test_oracle_p_value_is_statsmodels_exact_mcnemar():
    for down, up in [(3, 9), (10, 4), (0, 6), (25, 25), (40, 22)]:
        ours = min(1.0, 2 * sps.binom.cdf(min(down, up), down + up, 0.5))
        assert ours == pytest.approx(mcnemar([[0, down], [up, 0]], exact=True).pvalue, abs=1e-12)


@pytest.mark.parametrize("q,d", [(0.1, 0.03), (0.2, 0.05), (0.05, 0.02), (0.3, 0.1)])
def test_paired_n_is_the_exact_mcnemar_n(q, d):
    # The power promised is the exact McNemar test's (what compare reports): at n it is reached, at n - 1
    # not, by brute-force enumeration. Connor's (1987) normal approximation, (z_a sqrt(q) + z_b sqrt(q -
    # d^2))^2 / d^2, asks for a few per cent fewer and gets 0.76-0.79 from the exact test.
    n = questions_needed(d, paired=True, discordance=q)
    cells = ((q + d) / 2, (q - d) / 2)
    assert _oracle_mcnemar_power(n, *cells) >= 0.8 > _oracle_mcnemar_power(n - 1, *cells)
    assert power(n, d, paired=True, discordance=q) == pytest.approx(_oracle_mcnemar_power(n, *cells), abs=1e-9)
    closed = math.ceil((Z95 * math.sqrt(q) + sps.norm.ppf(0.8) * math.sqrt(q - d * d)) ** 2 / d**2)
    assert closed < n < 1.1 * closed
    assert 0.75 < _oracle_mcnemar_power(closed, *cells) < 0.8


# ---- simulation: the returned n reaches the asked power ---------------------------------------------


def test_unpaired_n_reaches_power_in_simulation():
    rng = np.random.default_rng(20240501)
    p, mde = 0.7, 0.05
    n = questions_needed(mde, p=p)
    sims = 20_000
    x1 = rng.binomial(n, p, sims)
    x2 = rng.binomial(n, p - mde, sims)
    pooled = (x1 + x2) / (2 * n)
    z = (x1 - x2) / n / np.sqrt(pooled * (1 - pooled) * 2 / n)  # the usual pooled two-proportion z-test
    achieved = np.mean(np.abs(z) > Z95)
    assert 0.785 <= achieved <= 0.83, achieved
    x3 = rng.binomial(n, p + mde, sims)  # a rise is easier to see than a fall towards 0.5
    pooled = (x1 + x3) / (2 * n)
    z_up = (x3 - x1) / n / np.sqrt(pooled * (1 - pooled) * 2 / n)
    assert np.mean(np.abs(z_up) > Z95) >= achieved - 0.01


def test_paired_n_reaches_power_in_simulation_with_mcnemar():
    # The exact McNemar test, as compare reports it, on simulated eval sets of the returned n.
    rng = np.random.default_rng(7)
    q, d = 0.1, 0.03
    n = questions_needed(d, paired=True, discordance=q)
    sims = 20_000
    counts = rng.multinomial(n, [(q + d) / 2, (q - d) / 2, 1 - q], size=sims)
    b, c = counts[:, 0], counts[:, 1]
    p_exact = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(b, c), b + c, 0.5))
    assert p_exact[0] == pytest.approx(mcnemar([[0, b[0]], [c[0], 0]], exact=True).pvalue)
    table = raglab.stats.compare(np.r_[np.ones(b[1]), np.zeros(c[1]), np.ones(n - b[1] - c[1])],
                                 np.r_[np.zeros(b[1]), np.ones(c[1]), np.ones(n - b[1] - c[1])])
    assert table["p_value"].iloc[0] == pytest.approx(p_exact[1])  # the p-value compare reports
    achieved = np.mean(p_exact < 0.05)
    assert 0.79 <= achieved <= 0.815, achieved


def test_continuous_n_reaches_power_in_simulation_with_a_t_test():
    rng = np.random.default_rng(11)
    sd, mde = 0.3, 0.05
    n = questions_needed(mde, sd_diff=sd)
    diffs = rng.normal(mde, sd, size=(10_000, n))
    achieved = np.mean(sps.ttest_1samp(diffs, 0.0, axis=1).pvalue < 0.05)
    assert 0.78 <= achieved <= 0.83, achieved  # the t-test is a hair below the z approximation


def test_attenuated_judge_in_simulation():
    # A judge with sensitivity 142/150 and specificity 28/50 (seed 000, J ~ 0.51) scores two configs whose
    # true pass rates are 0.75 and 0.70. Its pass rates move by J * 0.05, and questions_needed(...,
    # attenuation=J) from the judge's baseline rate reaches the power on the judge's labels.
    se, sp = 142 / 150, 28 / 50
    j = se + sp - 1
    judged = [pi * se + (1 - pi) * (1 - sp) for pi in (0.75, 0.70)]
    assert judged[0] - judged[1] == pytest.approx(j * 0.05)
    n = questions_needed(0.05, p=judged[0], attenuation=j)
    rng = np.random.default_rng(3)
    sims = 20_000
    x1, x2 = rng.binomial(n, judged[0], sims), rng.binomial(n, judged[1], sims)
    pooled = (x1 + x2) / (2 * n)
    z = (x1 - x2) / n / np.sqrt(pooled * (1 - pooled) * 2 / n)
    assert 0.785 <= np.mean(np.abs(z) > Z95) <= 0.83
    # about 1/J^2 times the questions a perfect judge would need
    ratio = n / questions_needed(0.05, p=judged[0])
    assert ratio == pytest.approx(1 / j**2, rel=0.1)


# ---- exact relations --------------------------------------------------------------------------------


def test_attenuation_scales_the_effect_and_slices_scale_the_total():
    assert questions_needed(0.04, sd_diff=0.3, attenuation=0.5) == questions_needed(0.02, sd_diff=0.3)
    assert questions_needed(0.04, paired=True, discordance=0.1, attenuation=0.5) == questions_needed(
        0.02, paired=True, discordance=0.1
    )
    whole = questions_needed(0.05, sd_diff=0.3)
    assert questions_needed(0.05, sd_diff=0.3, slice_fraction=0.1) == math.ceil(whole / 0.1)
    assert detectable_difference(3000, sd_diff=0.3, slice_fraction=0.1) == pytest.approx(
        detectable_difference(300, sd_diff=0.3)
    )
    assert detectable_difference(300, sd_diff=0.3, attenuation=0.5) == pytest.approx(
        2 * detectable_difference(300, sd_diff=0.3)
    )


@pytest.mark.parametrize(
    "kwargs",
    [dict(p=0.7), dict(p=0.2), dict(paired=True, discordance=0.15), dict(sd_diff=0.4),
     dict(p=0.6, attenuation=0.6, alternative="one-sided")],
)
def test_n_is_the_smallest_that_reaches_the_power(kwargs):
    n = questions_needed(0.04, **kwargs)
    assert power(n, 0.04, **kwargs) >= 0.8
    assert power(n - 1, 0.04, **kwargs) < 0.8
    d = detectable_difference(n, **kwargs)
    assert d <= 0.04 + 1e-9
    assert power(n, d, **kwargs) == pytest.approx(0.8, abs=1e-9)
    assert detectable_difference(n - 1, **kwargs) > 0.04


@settings(max_examples=60, deadline=None)
@given(
    p=st.floats(0.05, 0.95),
    mde=st.floats(0.01, 0.2),
    factor=st.floats(1.05, 3.0),
    pw=st.floats(0.5, 0.95),
    alpha=st.floats(0.01, 0.2),
)
def test_monotone_in_every_assumption(p, mde, factor, pw, alpha):
    assume(p + mde * factor <= 1 or p - mde * factor >= 0)
    n = questions_needed(mde, p=p, power=pw, alpha=alpha)
    assert questions_needed(mde * factor, p=p, power=pw, alpha=alpha) <= n  # bigger change, fewer questions
    assert questions_needed(mde, p=p, power=min(0.99, pw * factor), alpha=alpha) >= n
    assert questions_needed(mde, p=p, power=pw, alpha=min(0.5, alpha * factor)) <= n
    assert questions_needed(mde, p=p, power=pw, alpha=alpha, attenuation=1 / factor) >= n
    assert questions_needed(mde, p=p, power=pw, alpha=alpha, slice_fraction=1 / factor) >= n
    q = min(1.0, mde * factor)
    paired = questions_needed(mde, paired=True, discordance=q, power=pw, alpha=alpha)
    if q * factor <= 1:
        assert questions_needed(mde, paired=True, discordance=q * factor, power=pw, alpha=alpha) >= paired
    assert power(n, mde, p=p, alpha=alpha) >= pw
    assert power(2 * n, mde, p=p, alpha=alpha) >= power(n, mde, p=p, alpha=alpha)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(10, 100_000), sd=st.floats(0.05, 2.0))
def test_detectable_difference_shrinks_with_n(n, sd):
    assert detectable_difference(2 * n, sd_diff=sd) < detectable_difference(n, sd_diff=sd)
    # the power of sqrt(n) scaling: four times the questions halve the detectable change (z-test)
    assert detectable_difference(4 * n, sd_diff=sd) == pytest.approx(detectable_difference(n, sd_diff=sd) / 2, rel=1e-6)


# ---- errors ------------------------------------------------------------------------------------------


def test_errors_say_what_is_missing():
    with pytest.raises(ValueError, match="needs `discordance`"):
        questions_needed(0.03, paired=True)
    with pytest.raises(ValueError, match="pass paired=True"):
        questions_needed(0.03, discordance=0.1)
    with pytest.raises(ValueError, match="needs `p`"):
        questions_needed(0.03)
    with pytest.raises(ValueError, match="at most the discordance"):
        questions_needed(0.2, paired=True, discordance=0.1)
    with pytest.raises(ValueError, match=r"The value for `alternative` must be one of \['two-sided', 'one-sided'\]"):
        questions_needed(0.03, p=0.7, alternative="less")
    with pytest.raises(ValueError, match=r"`mde` must be a positive change"):
        questions_needed(-0.03, p=0.7)
    with pytest.raises(ValueError, match=r"`attenuation` must lie in \(0, 1\]"):
        questions_needed(0.03, p=0.7, attenuation=0)
    with pytest.raises(ValueError, match=r"`p` must lie in \(0, 1\)"):
        questions_needed(0.03, p=1.2)
    with pytest.raises(ValueError, match="not both"):
        questions_needed(0.03, paired=True, discordance=0.1, sd_diff=0.2)
    assert math.isnan(detectable_difference(10, paired=True, discordance=0.01))


# ---- df.rag.size ----------------------------------------------------------------------------------------


def _pilot(seed=0, n=200):
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < 0.72).astype(int)
    cand = np.where(rng.random(n) < 0.9, base, 1 - base)
    ids = [f"q{i}" for i in range(n)]
    b = pd.DataFrame({"question_id": ids, "hit@5": base, "faithfulness": rng.random(n)})
    c = pd.DataFrame({"question_id": ids, "hit@5": cand, "faithfulness": np.clip(b["faithfulness"] + rng.normal(0.02, 0.1, n), 0, 1)})
    return b, c


def test_size_from_a_pass_fail_pilot():
    b, c = _pilot()
    res = b.rag.size(c.sample(frac=1, random_state=1), metric="hit@5", mde=0.03)  # row order must not matter
    discordance = float((b["hit@5"] != c["hit@5"]).mean())
    assert isinstance(res, SizingResult) and res.kind == "pass/fail"
    assert res.assumptions["discordance"] == pytest.approx(discordance)
    assert res.assumptions["p_base"] == pytest.approx(b["hit@5"].mean())
    assert res.assumptions["p_cand"] == pytest.approx(c["hit@5"].mean())
    assert res.n == questions_needed(0.03, paired=True, discordance=discordance)
    assert res.n_unpaired == questions_needed(0.03, p=b["hit@5"].mean())
    assert res.n < res.n_unpaired
    assert res.n == sizing.size_from_pilot(b["hit@5"], c["hit@5"], metric="hit@5", mde=0.03).n
    text = repr(res)
    assert str(res.n) in text and "discordance" in text and "exact McNemar" in text
    frame = res.to_frame()
    assert frame.loc[0, "n"] == res.n and frame.loc[0, "discordance"] == pytest.approx(discordance)
    assert "<table" in res._repr_html_()


def test_size_from_a_continuous_pilot_with_missing_scores():
    b, c = _pilot()
    c.loc[[3, 7], "faithfulness"] = np.nan
    res = b.rag.size(c, metric="faithfulness", mde=0.02, attenuation=0.8, slice_fraction=0.5)
    diff = (c["faithfulness"] - b["faithfulness"]).dropna()
    assert res.kind == "continuous" and res.assumptions["n_pilot"] == 198 and res.assumptions["n_excluded"] == 2
    assert res.assumptions["sd_diff"] == pytest.approx(diff.std(ddof=1))
    assert res.n == questions_needed(0.02, sd_diff=diff.std(ddof=1), attenuation=0.8, slice_fraction=0.5)
    assert "2 pilot questions" in repr(res)


def test_size_refuses_bad_pilots():
    b, c = _pilot()
    with pytest.raises(raglab.RowTableError, match="same questions"):
        b.rag.size(c.iloc[:-3], metric="hit@5", mde=0.03)
    with pytest.raises(raglab.MissingColumnError, match="recall@5"):
        b.rag.size(c, metric="recall@5", mde=0.03)
    with pytest.raises(ValueError, match="never differ"):
        b.rag.size(b.copy(), metric="hit@5", mde=0.03)
    bad = c.assign(**{"hit@5": ["yes"] * len(c)})
    with pytest.raises(raglab.RowTableError, match="numeric scores"):
        b.rag.size(bad, metric="hit@5", mde=0.03)
    other = c.copy()
    b2 = b.copy()
    b2.attrs["raglab"] = {"evalset": {"name": "s", "version": 1, "hash": "aaa"}}
    other.attrs["raglab"] = {"evalset": {"name": "s", "version": 2, "hash": "bbb"}}
    with pytest.raises(raglab.EvalSetMismatchError):
        b2.rag.size(other, metric="hit@5", mde=0.03)


# ---- command line -----------------------------------------------------------------------------------


def test_cli_size_unpaired(capsys):
    assert main(["size", "--p", "0.7", "--mde", "0.03"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{questions_needed(0.03, p=0.7)} questions per run"
    assert "arcsine" in out and "0.8, 0.05" in out


def test_cli_size_paired_with_attenuation(capsys):
    assert main(["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--attenuation", "0.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{questions_needed(0.03, paired=True, discordance=0.1, attenuation=0.5)} questions")
    assert "attenuation" in out and "exact McNemar" in out
    assert "measured on the judge's labels" in out  # attenuation alone: the discordance is the labels'


@pytest.mark.parametrize(
    "argv",
    [
        ["size", "--mde", "0.03"],
        ["size", "--mde", "0.03", "--discordance", "0.1"],
        ["size", "--mde", "0.03", "--paired"],
        ["size", "--p", "1.4", "--mde", "0.03"],
        ["size", "--p", "0.7"],
        ["size", "--p", "0.7", "--mde", "lots"],
        ["size", "--p", "0.7", "--mde", "0.03", "--paired", "--discordance", "0.1"],  # p would be ignored
        ["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--sensitivity", "0.9"],
        ["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--sensitivity", "0.9", "--specificity", "0.8"],
        ["size", "--p", "0.7", "--mde", "0.03", "--paired", "--discordance", "0.1", "--sensitivity", "0.9",
         "--specificity", "0.8", "--attenuation", "0.5"],
        ["size", "--p", "0.02", "--mde", "0.03", "--paired", "--discordance", "0.1", "--sensitivity", "0.9",
         "--specificity", "0.9"],
        ["size", "--gate-margin", "0.02", "--mde", "0.03", "--paired", "--discordance", "0.1"],
        ["size", "--gate-margin", "0.02", "--paired", "--discordance", "0.1", "--alpha", "0.1"],
        ["size", "--gate-margin", "0.02"],
        ["size", "--gate-margin", "0.02", "--discordance", "0.1", "--p", "0.7"],
        ["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--ci", "0.9"],
    ],
)
def test_cli_size_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


# ---- a judge labels the answers: true outcomes in, power on the judge's labels ----------------------

ISSUE = dict(p=0.7, discordance=0.10, sensitivity=0.943, specificity=0.635)  # issue 9's design, mde 0.03


def _enumerate_labels(p, d, change, se, sp):
    """Oracle: the joint distribution of the judge's paired labels by brute-force enumeration of every
    (true base, true cand, label base, label cand), each answer judged independently."""
    true = {(1, 1): p - (d - change) / 2, (1, 0): (d - change) / 2, (0, 1): (d + change) / 2,
            (0, 0): 1 - p - (d + change) / 2}

    def judged(t, label):
        passes = se if t else 1 - sp
        return passes if label else 1 - passes

    seen = dict.fromkeys(true, 0.0)
    for (tb, tc), (lb, lc) in itertools.product(true, repeat=2):
        seen[(lb, lc)] += true[(tb, tc)] * judged(tb, lb) * judged(tc, lc)
    return seen


def _connor_n(q, d, z_a=Z95, z_b=0.8416212335729143):  # z_0.8
    return math.ceil((z_a * math.sqrt(q) + z_b * math.sqrt(q - d * d)) ** 2 / d**2)


def _connor_power(n, q, d, z=Z95):
    return sps.norm.sf((z * math.sqrt(q / n) - d) / math.sqrt((q - d * d) / n)) + sps.norm.cdf(
        (-z * math.sqrt(q / n) - d) / math.sqrt((q - d * d) / n)
    )


def _simulate_judged_mcnemar(p, d, change, se, sp, n, *, sims, seed, chunk=200):
    """Share of simulated eval sets in which McNemar's normal test (no continuity correction, 5%
    two-sided) on the JUDGE's labels rejects. Each question's true (base, cand) outcome is drawn from
    the true cells, then the judge labels each of the two answers independently."""
    rng = np.random.default_rng(seed)
    pass_fail, fail_pass = (d - change) / 2, (d + change) / 2
    pass_pass = p - pass_fail
    rejected = 0
    for start in range(0, sims, chunk):
        k = min(chunk, sims - start)
        u = rng.random((k, n))
        base = u < pass_pass + pass_fail  # cells in the order pass/pass, pass/fail, fail/pass, fail/fail
        cand = (u < pass_pass) | ((u >= pass_pass + pass_fail) & (u < pass_pass + pass_fail + fail_pass))
        label_base = rng.random((k, n)) < np.where(base, se, 1 - sp)
        label_cand = rng.random((k, n)) < np.where(cand, se, 1 - sp)
        b = np.sum(label_base & ~label_cand, axis=1)
        c = np.sum(~label_base & label_cand, axis=1)
        if start == 0:  # the statistic is statsmodels' McNemar chi-square without correction
            sm = mcnemar([[0, b[0]], [c[0], 0]], exact=False, correction=False)
            assert sm.statistic == pytest.approx((b[0] - c[0]) ** 2 / (b[0] + c[0]))
        rejected += int(np.sum((b - c) ** 2 > Z95**2 * np.maximum(b + c, 1)))
    return rejected / sims


@pytest.mark.parametrize("change", [0.03, -0.03, 0.0, 0.08])
@pytest.mark.parametrize("p,d,se,sp", [(0.7, 0.1, 0.943, 0.635), (0.5, 0.2, 0.85, 0.9), (0.15, 0.08, 1.0, 0.7)])
def test_judged_cells_match_exact_enumeration(p, d, change, se, sp):
    if abs(change) > d:
        change = d * np.sign(change)
    seen = paired_outcomes(p, discordance=d, change=change).through_judge(sensitivity=se, specificity=sp)
    oracle = _enumerate_labels(p, d, change, se, sp)
    assert seen.pass_pass == pytest.approx(oracle[(1, 1)], abs=1e-15)
    assert seen.pass_fail == pytest.approx(oracle[(1, 0)], abs=1e-15)
    assert seen.fail_pass == pytest.approx(oracle[(0, 1)], abs=1e-15)
    assert seen.fail_fail == pytest.approx(oracle[(0, 0)], abs=1e-15)
    assert sum(oracle.values()) == pytest.approx(1)
    j = se + sp - 1
    assert seen.difference == pytest.approx(j * change, abs=1e-15)  # the judge shows J x the change
    assert seen.base_rate == pytest.approx(p * se + (1 - p) * (1 - sp))  # the judge's pass rate (Rogan-Gladen forward)
    # closed form of the labels' discordance: concordant cells flip through one error, discordant ones stay
    true = paired_outcomes(p, discordance=d, change=change)
    closed = (true.pass_pass * 2 * se * (1 - se) + true.fail_fail * 2 * sp * (1 - sp)
              + d * (se * sp + (1 - se) * (1 - sp)))
    assert seen.discordance == pytest.approx(closed, abs=1e-15)


def test_issue_example_discordance_becomes_about_0_24():
    # issue 9: "Judge errors raise the discordance of the labels the test sees (here 0.10 -> 0.24)"
    rise = paired_outcomes(0.7, discordance=0.1, change=0.03).through_judge(sensitivity=0.943, specificity=0.635)
    fall = paired_outcomes(0.7, discordance=0.1, change=-0.03).through_judge(sensitivity=0.943, specificity=0.635)
    assert round(rise.discordance, 2) == 0.24 and 0.24 < fall.discordance < 0.26
    # the 1/J^2 rule (attenuation, true discordance) says 2,591 (Connor; the exact test needs a few per cent
    # more); the labels need about 2.5 times that
    j = 0.943 + 0.635 - 1
    old = questions_needed(0.03, paired=True, discordance=0.10, attenuation=round(j, 2))
    assert _connor_n(0.1, 0.03 * round(j, 2)) == 2591 < old < 1.06 * 2591
    new = questions_needed(0.03, paired=True, **ISSUE)
    assert new >= max(_connor_n(s.discordance, abs(s.difference)) for s in (rise, fall)) == 6604
    assert min(_oracle_mcnemar_power(new, s.pass_fail, s.fail_pass) for s in (rise, fall)) >= 0.8
    assert 2.4 < new / old < 2.6
    assert power(old, 0.03, paired=True, **ISSUE) < 0.5


@pytest.mark.parametrize(
    "p,d,mde,se,sp",
    [(0.7, 0.10, 0.03, 0.943, 0.635), (0.5, 0.2, 0.05, 0.85, 0.9), (0.9, 0.06, 0.03, 0.98, 0.7), (0.3, 0.15, 0.1, 0.8, 0.8)],
)
def test_judged_n_is_the_exact_mcnemar_n_on_the_enumerated_labels(p, d, mde, se, sp):
    ns, oracles = [], []
    for change in (mde, -mde):
        try:
            cells = _enumerate_labels(p, d, change, se, sp)
        except ValueError:
            continue
        if min(cells.values()) < 0 or p - (d + abs(change)) / 2 < 0 or 1 - p - (d + abs(change)) / 2 < 0:
            continue
        q = cells[(1, 0)] + cells[(0, 1)]
        ns.append(_connor_n(q, abs(cells[(0, 1)] - cells[(1, 0)])))
        oracles.append(functools.partial(_oracle_mcnemar_power, p_down=cells[(1, 0)], p_up=cells[(0, 1)]))
    kwargs = dict(paired=True, discordance=d, p=p, sensitivity=se, specificity=sp)
    n = questions_needed(mde, **kwargs)
    assert max(ns) <= n < 1.1 * max(ns)  # Connor's normal approximation is a little short
    assert min(f(n) for f in oracles) >= 0.8 > min(f(n - 1) for f in oracles)
    assert power(n, mde, **kwargs) >= 0.8 > power(n - 1, mde, **kwargs)
    found = detectable_difference(n, **kwargs)
    assert found <= mde + 1e-9 and power(n, found, **kwargs) == pytest.approx(0.8, abs=1e-6)
    assert detectable_difference(n - 1, **kwargs) > mde


def test_perfect_judge_and_consistent_attenuation_change_nothing():
    plain = questions_needed(0.03, paired=True, discordance=0.1)
    assert questions_needed(0.03, paired=True, discordance=0.1, p=0.6, sensitivity=1, specificity=1) == plain
    judged = questions_needed(0.03, paired=True, **ISSUE)
    assert questions_needed(0.03, paired=True, attenuation=0.943 + 0.635 - 1, **ISSUE) == judged


def test_unpaired_judged_matches_statsmodels_on_the_judges_rates():
    # unpaired runs: the judge's pass rates are p se + (1 - p)(1 - sp) and that +- J mde; worst direction
    p, mde, se, sp = 0.7, 0.04, 0.9, 0.8
    seen = p * se + (1 - p) * (1 - sp)
    j = se + sp - 1
    sm = max(
        math.ceil(NormalIndPower().solve_power(effect_size=abs(proportion_effectsize(seen + s * j * mde, seen)),
                                               alpha=0.05, power=0.8, ratio=1))
        for s in (1, -1)
    )
    assert questions_needed(mde, p=p, sensitivity=se, specificity=sp) == sm


@pytest.mark.slow  # about 13 s: small changes need up to 10^6 questions, each sized on the exact McNemar power
@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.05, 0.95), d=st.floats(0.02, 0.5), share=st.floats(0.05, 1.0),
       se=st.floats(0.55, 1.0), sp=st.floats(0.55, 1.0))
def test_a_judge_never_needs_fewer_questions_than_the_truth(p, d, share, se, sp):
    assume(se + sp > 1.1)
    mde = d * share
    try:
        judged = questions_needed(mde, paired=True, discordance=d, p=p, sensitivity=se, specificity=sp)
    except ValueError:
        assume(False)
    assert judged >= questions_needed(mde, paired=True, discordance=d)
    assert judged >= questions_needed(mde, paired=True, discordance=d, p=p, sensitivity=1.0, specificity=1.0)


def test_simulated_power_on_judge_labels_of_the_issue_design():
    # issue 9: the 1/J^2 rule (2,591) gave simulated power 0.48 instead of 0.80. Per-answer simulation:
    # true outcomes, then independent judge errors, then McNemar on the labels.
    p, d, mde, se, sp = 0.7, 0.10, 0.03, 0.943, 0.635
    n = questions_needed(mde, paired=True, **ISSUE)
    sims = 2000  # Monte Carlo sd about 0.009 at power 0.8
    for change, seed in ((-mde, 1), (mde, 2)):
        cells = paired_outcomes(p, discordance=d, change=change).through_judge(sensitivity=se, specificity=sp)
        expected = _connor_power(n, cells.discordance, abs(cells.difference))
        achieved = _simulate_judged_mcnemar(p, d, change, se, sp, n, sims=sims, seed=seed)
        assert abs(achieved - expected) < 0.035, (change, achieved, expected)
        assert achieved > 0.765, (change, achieved)  # the asked 0.80 within Monte Carlo error
    old = questions_needed(mde, paired=True, discordance=d, attenuation=se + sp - 1)
    assert _simulate_judged_mcnemar(p, d, -mde, se, sp, old, sims=1000, seed=3) < 0.55  # underpowered


@pytest.mark.slow
@pytest.mark.parametrize("p,d,mde,se,sp", [(0.5, 0.2, 0.05, 0.85, 0.9), (0.85, 0.08, 0.04, 0.97, 0.6)])
def test_simulated_power_on_judge_labels_other_designs(p, d, mde, se, sp):
    kwargs = dict(paired=True, discordance=d, p=p, sensitivity=se, specificity=sp)
    n = questions_needed(mde, **kwargs)
    powers = [_simulate_judged_mcnemar(p, d, s * mde, se, sp, n, sims=3000, seed=i) for i, s in enumerate((1, -1))]
    assert 0.77 <= min(powers) <= 0.84, powers


def test_judge_inputs_are_validated():
    with pytest.raises(ValueError, match="`specificity` is missing"):
        questions_needed(0.03, paired=True, discordance=0.1, p=0.7, sensitivity=0.9)
    with pytest.raises(ValueError, match="needs `p`, the baseline's TRUE"):
        questions_needed(0.03, paired=True, discordance=0.1, sensitivity=0.9, specificity=0.8)
    with pytest.raises(ValueError, match=r"`p` = 0.7 does not change paired sizing without a judge"):
        questions_needed(0.03, paired=True, discordance=0.1, p=0.7)  # never silently ignored
    with pytest.raises(ValueError, match=r"`attenuation` = 0.5 contradicts"):
        questions_needed(0.03, paired=True, attenuation=0.5, **ISSUE)
    with pytest.raises(ValueError, match="carry no information"):
        questions_needed(0.03, paired=True, discordance=0.1, p=0.7, sensitivity=0.5, specificity=0.5)
    with pytest.raises(ValueError, match=r"`sensitivity` must lie in \[0, 1\]"):
        questions_needed(0.03, paired=True, discordance=0.1, p=0.7, sensitivity=1.2, specificity=0.5)
    with pytest.raises(ValueError, match="continuous metric"):
        questions_needed(0.03, sd_diff=0.2, sensitivity=0.9, specificity=0.8)
    with pytest.raises(ValueError, match="drop `p`"):
        questions_needed(0.03, sd_diff=0.2, p=0.7)
    with pytest.raises(ValueError, match="at most the discordance"):
        questions_needed(0.2, paired=True, discordance=0.1, p=0.5, sensitivity=0.9, specificity=0.9)
    # impossible true cells name the input: 2% pass in the baseline, but 3.5% must go pass -> fail
    with pytest.raises(ValueError, match=r"`p` = 0.02 is impossible here.*pass in the baseline and fail"):
        questions_needed(0.03, paired=True, discordance=0.1, p=0.02, sensitivity=0.9, specificity=0.9)
    with pytest.raises(ValueError, match=r"`p` = 0.98 is impossible here.*fail rate"):
        paired_outcomes(0.98, discordance=0.1, change=0.03)
    with pytest.raises(ValueError, match=r"`discordance` must lie in \[0, 1\]"):
        paired_outcomes(0.5, discordance=1.5, change=0.0)
    # one direction impossible: the other is used
    only_fall = questions_needed(0.03, paired=True, discordance=0.1, p=0.96, sensitivity=0.9, specificity=0.9)
    cells = paired_outcomes(0.96, discordance=0.1, change=-0.03).through_judge(sensitivity=0.9, specificity=0.9)
    assert _oracle_mcnemar_power(only_fall, cells.pass_fail, cells.fail_pass) >= 0.8
    assert _oracle_mcnemar_power(only_fall - 1, cells.pass_fail, cells.fail_pass) < 0.8


# ---- sizing the gate itself -------------------------------------------------------------------------


@pytest.mark.parametrize("margin,v,pw,ci", [(0.02, 0.1, 0.8, 0.95), (0.01, 0.05, 0.9, 0.9), (0.05, 0.3, 0.8, 0.99)])
def test_gate_sizing_matches_statsmodels_one_sided_z(margin, v, pw, ci):
    # passing = the lower end of the two-sided ci interval clears -margin = a one-sided z-test at (1 - ci) / 2
    sm = NormalIndPower().solve_power(effect_size=margin / math.sqrt(v), alpha=(1 - ci) / 2, power=pw, ratio=0,
                                      alternative="larger")
    assert questions_for_gate(margin, sd_diff=math.sqrt(v), power=pw, ci=ci) == math.ceil(sm)
    # pass/fail rows use the gate's own Tango interval, summed exactly over the counts (checked count by count
    # against the real gate in test_sizing_release.py): a little more than the normal approximation
    n = questions_for_gate(margin, discordance=v, power=pw, ci=ci)
    assert math.ceil(sm) <= n < 1.05 * math.ceil(sm)
    assert sizing.release_pass_probability(n, margin, discordance=v, ci=ci).pass_probability >= pw
    assert sizing.release_pass_probability(n - 1, margin, discordance=v, ci=ci).pass_probability < pw
    assert questions_for_gate(margin, discordance=v, power=pw, ci=ci, slice_fraction=0.25) == math.ceil(n / 0.25)


def test_gate_sizing_with_a_judge_uses_the_labels_discordance():
    labels = paired_outcomes(0.7, discordance=0.1, change=0.0).through_judge(sensitivity=0.943, specificity=0.635)
    z = sps.norm.isf(0.025) + sps.norm.ppf(0.8)
    n = questions_for_gate(0.02, **ISSUE)
    assert n == questions_for_gate(0.02, discordance=labels.discordance)  # the labels' (symmetric) discordance
    assert math.ceil(z**2 * labels.discordance / 0.02**2) <= n  # the normal approximation asks a little less
    assert n > questions_for_gate(0.02, discordance=0.1)


def test_simulated_gate_pass_rate_of_an_unchanged_candidate():
    # per answer: true outcomes with no change, independent judge errors, then the gate's rule on the labels
    # (lower end of the 95% normal interval on the mean paired difference >= -margin)
    p, d, se, sp, margin = 0.7, 0.1, 0.943, 0.635, 0.03
    n = questions_for_gate(margin, **ISSUE)
    rng = np.random.default_rng(5)
    sims, passed = 2000, 0
    for _ in range(sims // 200):
        u = rng.random((200, n))
        base = u < p
        cand = np.where(u < p - d / 2, True, np.where(u < p, False, u < p + d / 2))
        lb = rng.random((200, n)) < np.where(base, se, 1 - sp)
        lc = rng.random((200, n)) < np.where(cand, se, 1 - sp)
        diff = lc.astype(float) - lb.astype(float)
        low = diff.mean(1) - Z95 * diff.std(1, ddof=1) / math.sqrt(n)
        passed += int(np.sum(low >= -margin))
    assert 0.765 <= passed / sims <= 0.835, passed / sims


@pytest.mark.slow
def test_stats_gate_passes_an_unchanged_candidate_at_the_sized_n():
    # the real gate (raglab.stats.gate, its default pass/fail interval) on 300 replicates
    d, margin = 0.1, 0.03
    n = questions_for_gate(margin, discordance=d)
    rng = np.random.default_rng(9)
    passes = 0
    for _ in range(300):
        u = rng.random(n)
        base = (u < 0.7).astype(float)
        cand = np.where(u < 0.7 - d / 2, 1.0, np.where(u < 0.7, 0.0, (u < 0.7 + d / 2).astype(float)))
        result = raglab.stats.gate({"m": base}, {"m": cand}, margin=margin, higher_is_better={"m": True})
        passes += result.decision == "pass"
    assert 0.72 <= passes / 300 <= 0.88, passes / 300


def test_gate_sizing_errors():
    with pytest.raises(ValueError, match="`margin` must be a positive drop"):
        questions_for_gate(0.0, discordance=0.1)
    with pytest.raises(ValueError, match="needs `discordance`"):
        questions_for_gate(0.02)
    with pytest.raises(ValueError, match="pass paired=True"):
        questions_for_gate(0.02, paired=False, discordance=0.1)
    with pytest.raises(ValueError, match=r"`p` = 0.7 does not change the gate's sizing"):
        questions_for_gate(0.02, discordance=0.1, p=0.7)
    with pytest.raises(ValueError, match="needs `p`"):
        questions_for_gate(0.02, discordance=0.1, sensitivity=0.9, specificity=0.9)
    with pytest.raises(ValueError, match="on its own"):
        questions_for_gate(0.02, sd_diff=0.2, sensitivity=0.9, specificity=0.9)
    with pytest.raises(ValueError, match=r"`ci` must lie in \(0, 1\)"):
        questions_for_gate(0.02, discordance=0.1, ci=95)


# ---- pilots with a judge, and pilots that cannot show the change -------------------------------------


def _judge_report():
    # seed 000's judge: 142 of 150 supported answers passed, 28 of 50 unsupported failed
    human = [1] * 150 + [0] * 50
    judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    return raglab.agreement.report(human, judge, positive=1, warn=False)


def test_pilot_with_a_judge_report_or_rates():
    b, c = _pilot()
    p_base = float(b["hit@5"].mean())
    d = float((b["hit@5"] != c["hit@5"]).mean())
    rep = _judge_report()
    res = size_from_pilot(b["hit@5"], c["hit@5"], metric="human", mde=0.03, judge=rep)
    expected = questions_needed(0.03, paired=True, discordance=d, p=p_base, sensitivity=142 / 150,
                                specificity=28 / 50)
    assert res.n == expected
    same = size_from_pilot(b["hit@5"], c["hit@5"], metric="human", mde=0.03, sensitivity=142 / 150,
                           specificity=28 / 50)
    assert same.n == expected and res.n > size_from_pilot(b["hit@5"], c["hit@5"], metric="human", mde=0.03).n
    assert res.n_unpaired == questions_needed(0.03, p=p_base, sensitivity=142 / 150, specificity=28 / 50)
    a = res.assumptions
    assert a["label_discordance"] > d and a["label_change"] == pytest.approx(0.03 * (142 / 150 + 28 / 50 - 1))
    text = repr(res)
    assert "TRUE outcomes" in text and "AgreementReport" in text and "sensitivity 0.947" in text
    # the pilot scores are the judge's own labels: its discordance is used as is, the change scaled by J
    own = size_from_pilot(b["hit@5"], c["hit@5"], metric="faithfulness", mde=0.03, judge=rep, pilot_labels="judge")
    assert own.n == questions_needed(0.03, paired=True, discordance=d, attenuation=rep.attenuation)
    assert "judge's own labels" in repr(own)


def test_pilot_with_attenuation_alone_says_the_discordance_is_the_labels():
    b, c = _pilot()
    res = size_from_pilot(b["hit@5"], c["hit@5"], metric="faithfulness", mde=0.03, attenuation=0.6)
    assert "measured on the judge's labels" in repr(res)
    assert "measured on the judge's labels" in res.assumptions["formula"]


def test_pilot_judge_errors():
    b, c = _pilot()
    with pytest.raises(ValueError, match="not both"):
        size_from_pilot(b["hit@5"], c["hit@5"], metric="m", mde=0.03, judge=_judge_report(), sensitivity=0.9)
    with pytest.raises(ValueError, match="AgreementReport with sensitivity"):
        size_from_pilot(b["hit@5"], c["hit@5"], metric="m", mde=0.03, judge=object())
    with pytest.raises(ValueError, match="continuous score"):
        size_from_pilot(b["faithfulness"], c["faithfulness"], metric="faithfulness", mde=0.03,
                        sensitivity=0.9, specificity=0.8)
    with pytest.raises(ValueError, match=r"The value for `pilot_labels` must be one of"):
        size_from_pilot(b["hit@5"], c["hit@5"], metric="m", mde=0.03, pilot_labels="human")


def test_pilot_discordance_below_the_mde_gets_a_planning_value():
    from statsmodels.stats.proportion import proportion_confint

    n = 200
    base = np.array([1] * 140 + [0] * 60)
    cand = base.copy()
    cand[0] = 0          # one pass -> fail
    cand[150:153] = 1    # three fail -> pass: discordance 0.02, below the mde 0.05
    res = size_from_pilot(base, cand, metric="hit@5", mde=0.05)
    # 95% one-sided Clopper-Pearson upper bound of the rarer flip (1 of 200) = statsmodels' 90% two-sided "beta"
    upper = proportion_confint(1, n, alpha=0.10, method="beta")[1]
    planned = 0.05 + 2 * upper
    assert res.assumptions["discordance"] == pytest.approx(0.02)
    assert res.assumptions["discordance_used"] == pytest.approx(planned)
    assert res.n == questions_needed(0.05, paired=True, discordance=planned)
    text = repr(res)
    assert "planning value" in text and f"{planned:.4f}" in text and "below the mde" in text
    # identical runs: still an error, now with a suggested value
    with pytest.raises(ValueError, match=r"never differ.*e\.g\. 0\.\d+"):
        size_from_pilot(base, base, metric="hit@5", mde=0.05)


def test_rag_size_passes_the_judge_through():
    from raglab.accessor import RagAccessor

    params = inspect.signature(RagAccessor.size).parameters
    if not {"sensitivity", "specificity", "judge"} <= set(params):
        pytest.skip("rag.size does not take sensitivity=/specificity=/judge= yet")
    b, c = _pilot()
    rep = _judge_report()
    via_accessor = b.rag.size(c, metric="hit@5", mde=0.03, judge=rep)
    assert via_accessor.n == size_from_pilot(b["hit@5"], c["hit@5"], metric="hit@5", mde=0.03, judge=rep).n
    assert b.rag.size(c, metric="hit@5", mde=0.03, sensitivity=0.9, specificity=0.8).n == size_from_pilot(
        b["hit@5"], c["hit@5"], metric="hit@5", mde=0.03, sensitivity=0.9, specificity=0.8).n


def test_cli_size_with_a_judge(capsys):
    argv = ["size", "--p", "0.7", "--mde", "0.03", "--paired", "--discordance", "0.1", "--sensitivity", "0.943",
            "--specificity", "0.635"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{questions_needed(0.03, paired=True, **ISSUE)} questions"
    assert "TRUE" in out and "judge's labels discordance 0.253" in out and "exact McNemar" in out


def test_cli_size_for_the_gate(capsys):
    assert main(["size", "--gate-margin", "0.02", "--paired", "--discordance", "0.1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{questions_for_gate(0.02, discordance=0.1)} questions"
    assert "unchanged" in out or "nothing truly changed" in out
    argv = ["size", "--gate-margin", "0.02", "--discordance", "0.1", "--p", "0.7", "--sensitivity", "0.943",
            "--specificity", "0.635", "--ci", "0.9", "--power", "0.9"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{questions_for_gate(0.02, ci=0.9, power=0.9, **ISSUE)} questions"
    assert "0.248 on the judge's labels" in out


def test_questions_for_gate_never_sizes_below_what_the_gate_decides_on():
    from raglab.gate import MIN_QUESTIONS, MIN_RESAMPLED
    from raglab.stats import gate

    # a continuous row without known bounds is a bootstrap row: the gate reviews it below 30 questions
    n = questions_for_gate(0.3, sd_diff=0.1)
    assert n == MIN_RESAMPLED
    rng = np.random.default_rng(0)
    scores = rng.random(n - 1)
    few = gate({"latency_s": scores}, {"latency_s": scores + rng.normal(0, 0.1, n - 1)}, margin=0.3,
               higher_is_better=False, n_resamples=200, n_permutations=0)
    assert few.decision == "review" and str(MIN_RESAMPLED) in few.table["reason"].iloc[0]
    assert questions_for_gate(0.3, discordance=0.1) >= MIN_QUESTIONS
    # at one question fewer the gate cannot decide at all
    few = gate([1.0, 0.0, 1.0] * 3, [1.0, 1.0, 0.0] * 3, margin=0.3, higher_is_better=True)
    assert few.decision == "review" and few.table["reason"].iloc[0].startswith(f"only {MIN_QUESTIONS - 1} paired")
    assert questions_for_gate(0.3, sd_diff=0.1, slice_fraction=0.5) == 2 * MIN_RESAMPLED
