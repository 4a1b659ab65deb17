"""Eval-set sizing: seed 000's standard error, statsmodels' normal-approximation power, simulation of
the returned n, monotonicity (hypothesis), df.rag.size and `raglab size`."""

from __future__ import annotations

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
from raglab.sizing import SizingResult, detectable_difference, power, questions_needed, standard_error

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
    assert power(300, 0.043, paired=True, discordance=0.1) > 0.6


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


def test_paired_closed_form_of_connor():
    # Connor (1987): n = (z_a sqrt(q) + z_b sqrt(q - d^2))^2 / d^2, one tail; the two-sided answer
    # counts the far tail too, so it can be at most that (and is that for any realistic n).
    za, zb = Z95, sps.norm.ppf(0.8)
    for q, d in [(0.1, 0.03), (0.2, 0.05), (0.05, 0.01), (0.3, 0.1)]:
        closed = (za * math.sqrt(q) + zb * math.sqrt(q - d * d)) ** 2 / d**2
        assert questions_needed(d, paired=True, discordance=q) == math.ceil(closed)


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
    rng = np.random.default_rng(7)
    q, d = 0.1, 0.03
    n = questions_needed(d, paired=True, discordance=q)
    sims = 20_000
    counts = rng.multinomial(n, [(q + d) / 2, (q - d) / 2, 1 - q], size=sims)
    b, c = counts[:, 0], counts[:, 1]
    stat = (b - c) ** 2 / (b + c)  # McNemar's chi-square without continuity correction
    first = mcnemar([[0, b[0]], [c[0], 0]], exact=False, correction=False)
    assert first.statistic == pytest.approx(stat[0])  # statsmodels computes the same statistic
    achieved = np.mean(stat > Z95**2)
    assert 0.785 <= achieved <= 0.83, achieved


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
    assert str(res.n) in text and "discordance" in text and "Connor" in text
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
    assert main(["size", "--p", "0.7", "--mde", "0.03", "--paired", "--discordance", "0.1", "--attenuation", "0.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{questions_needed(0.03, paired=True, discordance=0.1, attenuation=0.5)} questions")
    assert "attenuation" in out and "Connor" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["size", "--mde", "0.03"],
        ["size", "--mde", "0.03", "--discordance", "0.1"],
        ["size", "--mde", "0.03", "--paired"],
        ["size", "--p", "1.4", "--mde", "0.03"],
        ["size", "--p", "0.7"],
        ["size", "--p", "0.7", "--mde", "lots"],
    ],
)
def test_cli_size_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err
