"""Tango's score interval for paired pass rates, and the gate decisions it supports (issue: decisions
you can trust). Oracles: the restricted maximum-likelihood score statistic computed numerically with
scipy, exact enumeration of the trinomial for coverage, statsmodels' exact binomial test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

import raglab  # noqa: F401  (registers df.rag)
from raglab import stats
from raglab.stats import gate, paired_proportion_interval
from raglab.stats._gate import _decide
from raglab.stats.intervals import _tango_bounds
from raglab.stats.tests import _one_sided_mcnemar


def _score_oracle(delta: float, down: int, up: int, n: int) -> float:
    """Score statistic with P(down) maximised numerically under P(up) - P(down) = delta."""
    lo, hi = max(0.0, -delta) + 1e-12, (1.0 - delta) / 2.0 - 1e-12

    def negloglik(q: float) -> float:
        p_up, p_same = q + delta, 1.0 - 2.0 * q - delta
        terms = [(down, q), (up, p_up), (n - down - up, p_same)]
        return -sum(k * np.log(p) for k, p in terms if k)

    q = optimize.minimize_scalar(negloglik, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}).x
    return (up - down - n * delta) / np.sqrt(n * (2 * q + delta * (1 - delta)))


def _interval_oracle(down: int, up: int, n: int, z: float) -> tuple[float, float]:
    est = (up - down) / n
    f = lambda d, target: _score_oracle(d, down, up, n) - target  # noqa: E731
    low = -1.0 if f(-1 + 1e-9, z) <= 0 else optimize.brentq(f, -1 + 1e-9, est - 1e-12, args=(z,), xtol=1e-12)
    high = 1.0 if f(1 - 1e-9, -z) >= 0 else optimize.brentq(f, est + 1e-12, 1 - 1e-9, args=(-z,), xtol=1e-12)
    return low, high


@pytest.mark.parametrize(("down", "up", "n"), [(5, 0, 46), (12, 4, 300), (0, 0, 3), (3, 9, 40), (2, 2, 20), (30, 10, 60)])
def test_tango_interval_matches_a_numerical_score_inversion(down, up, n):
    base = np.array([1] * down + [0] * up + [1] * (n - down - up), float)
    cand = np.array([0] * down + [1] * up + [1] * (n - down - up), float)
    iv = paired_proportion_interval(base, cand)
    low, high = _interval_oracle(down, up, n, sps.norm.ppf(0.975))
    assert iv.estimate == pytest.approx((up - down) / n)
    assert iv.low == pytest.approx(low, abs=2e-6) and iv.high == pytest.approx(high, abs=2e-6)
    assert -1 <= iv.low < iv.estimate < iv.high <= 1 or (down == up == 0 and iv.low < 0 < iv.high)


def test_tango_interval_never_has_zero_width_and_shrinks_with_n():
    widths = [paired_proportion_interval([1.0] * n, [1.0] * n).width for n in (3, 10, 30, 100, 1000)]
    assert all(w > 0 for w in widths) and widths == sorted(widths, reverse=True)
    z2 = sps.norm.ppf(0.975) ** 2
    for n, w in zip((3, 10, 30, 100, 1000), widths):  # with no discordant pair the bound is z^2 / (n + z^2)
        assert w / 2 == pytest.approx(z2 / (n + z2), rel=1e-6)


def _exact_coverage(n: int, p_down: float, p_up: float, level: float = 0.95) -> float:
    """Exact coverage by enumerating every (down, up) outcome of n pairs."""
    truth = p_up - p_down
    downs, ups = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = downs + ups <= n
    downs, ups = downs[ok], ups[ok]
    low, high = _tango_bounds(downs, ups, np.full(downs.shape, n), level)
    prob = sps.multinomial.pmf(np.column_stack([downs, ups, n - downs - ups]), n, [p_down, p_up, 1 - p_down - p_up])
    covered = (low <= truth + 1e-12) & (truth - 1e-12 <= high)
    return float(prob[covered].sum())


@pytest.mark.parametrize("n", [10, 20, 30])
def test_tango_coverage_at_small_n_by_exact_enumeration(n):
    grid = [(pd_, pu) for pd_ in (0.01, 0.05, 0.1, 0.2) for pu in (0.01, 0.05, 0.1, 0.2)]
    coverage = np.array([_exact_coverage(n, pd_, pu) for pd_, pu in grid])
    # The score interval holds near its nominal 95% where the percentile bootstrap collapses.
    assert coverage.mean() >= 0.94 and coverage.min() >= 0.90


def test_percentile_bootstrap_under_covers_where_tango_does_not():
    # Few discordant pairs: the case the issue found passing a true 8-point drop.
    n, p_down, p_up = 20, 0.10, 0.02
    rng = np.random.default_rng(0)
    hits_boot = hits_score = 0
    reps = 300
    for _ in range(reps):
        cells = rng.choice(3, size=n, p=[p_down, p_up, 1 - p_down - p_up])
        base = (cells == 0).astype(float)
        cand = (cells == 1).astype(float)
        truth = p_up - p_down
        boot = stats.paired_bootstrap(base, cand, n_resamples=1_000, seed=1)
        score = paired_proportion_interval(base, cand)
        hits_boot += bool(boot.low <= truth <= boot.high)
        hits_score += bool(score.low <= truth <= score.high)
    assert hits_score / reps >= 0.93
    assert hits_boot / reps < hits_score / reps


def test_one_sided_mcnemar_matches_the_exact_binomial_test():
    for down, up in [(5, 0), (7, 2), (0, 0), (10, 10), (3, 12)]:
        p_dec, p_inc = _one_sided_mcnemar(down, up)
        total = down + up
        if total:
            assert p_dec == pytest.approx(sps.binomtest(down, total, 0.5, alternative="greater").pvalue)
            assert p_inc == pytest.approx(sps.binomtest(up, total, 0.5, alternative="greater").pvalue)
            two = sm_mcnemar([[0, down], [up, 0]], exact=True).pvalue
            assert min(1.0, 2 * min(p_dec, p_inc)) == pytest.approx(two)
        else:
            assert p_dec == p_inc == 1.0


def test_three_identical_questions_are_review_not_pass():
    b = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "m": [1.0, 1.0, 1.0]})
    result = b.rag.gate(b.copy(), metrics=["m"], margin=0.01, higher_is_better=True)
    row = result.table.iloc[0]
    assert result.decision == "review" and row["high"] - row["low"] > 0.5
    assert "too few" in row["reason"]


def test_a_46_question_slice_does_not_block_when_the_exact_test_does_not():
    # 5 discordant pairs, all down: Tango's interval lies below zero, but the exact one-sided McNemar
    # p = 1/32 > 0.025, so the evidence is not there: review, and the printed p agrees.
    base = np.ones(46)
    cand = base.copy()
    cand[:5] = 0
    result = gate({"hit@5": base}, {"hit@5": cand}, margin=0.02)
    row = result.table.iloc[0]
    assert row["high"] < 0 and row["p_value"] == pytest.approx(0.0625)
    assert row["decision"] == "review" and row["p_worse"] == pytest.approx(1 / 32)


def test_zero_variance_continuous_differences_are_review():
    base = np.linspace(0, 0.9, 50)
    # a metric with no known bounds keeps the bootstrap, whose interval is zero-width here
    result = gate({"score": base}, {"score": base + 0.01}, margin=0.02, n_resamples=500, higher_is_better=True)
    assert result.decision == "review" and "zero-width" in result.table["reason"].iloc[0]
    # a [0, 1] metric gets the betting interval, never zero-width: 50 questions cannot show +0.01 is within 0.02
    result = gate({"ndcg@5": base}, {"ndcg@5": base + 0.01}, margin=0.02, n_resamples=500)
    assert result.decision == "review" and result.table["low"].iloc[0] < -0.02 < 0 < result.table["high"].iloc[0]


def test_an_exact_margin_drop_is_not_decided_by_float_rounding():
    # Differences of exactly -0.02 in every question: the bound is -0.02 up to rounding, so it sits on
    # the margin; with some variance the same holds for the score interval's arithmetic.
    for low in (-0.02, -0.020000000000000004, -(0.1 + 0.1 + 0.1 - 0.28)):
        assert _decide(low, 0.01, 0.02, True, n=100)[0] == "pass"
    assert _decide(-0.0201, 0.01, 0.02, True, n=100)[0] == "review"


def test_many_rows_do_not_multiply_false_blocks():
    # 3 metrics x 8 slices with no true change: per-row blocks fire far more often than Holm's.
    rng = np.random.default_rng(11)
    n, reps = 800, 30
    slices = np.repeat([f"s{i}" for i in range(8)], n // 8)
    blocks = {"holm": 0, None: 0}
    for _ in range(reps):
        cells = {f"m{j}": rng.choice(4, size=n, p=[0.05, 0.05, 0.65, 0.25]) for j in range(3)}  # down, up, 1-1, 0-0
        base = {k: np.isin(v, (0, 2)).astype(float) for k, v in cells.items()}
        cand = {k: np.isin(v, (1, 2)).astype(float) for k, v in cells.items()}
        for adjust in blocks:
            result = gate(base, cand, margin=0.02, slices=slices, adjust=adjust, higher_is_better=True,
                          n_permutations=0, n_resamples=200)
            blocks[adjust] += result.decision == "block"
    assert blocks["holm"] <= 3  # nominal 2.5% of 30; the per-row rule sits near 45%
    assert blocks[None] > blocks["holm"]


def test_bounded_metrics_get_intervals_inside_their_bounds():
    # nDCG@5 over ten questions near 1: a plain t interval reaches above 1.
    values = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5])
    t_high = values.mean() + sps.t.ppf(0.975, 9) * values.std(ddof=1) / np.sqrt(10)
    assert t_high > 1  # the failure the bound prevents (scipy's t)
    row = stats.summary({"ndcg@5": values}).iloc[0]
    assert row["high"] < 1.0 and row["method"] == "wilson (bounded score, effective n)"
    # All values equal: a t interval collapses to a point; the bounded score gets Wilson's instead.
    flat = stats.summary({"faithfulness": np.full(12, 0.8)}).iloc[0]
    z = sps.norm.ppf(0.975)
    centre = (0.8 + z**2 / 24) / (1 + z**2 / 12)
    half = z * np.sqrt(0.8 * 0.2 / 12 + z**2 / (4 * 144)) / (1 + z**2 / 12)
    assert flat["low"] == pytest.approx(centre - half) and flat["high"] == pytest.approx(centre + half)
    assert flat["high"] - flat["low"] > 0.2 and "all values equal" in flat["method"]
    # An unknown metric keeps the plain t interval: raglab does not know its range.
    assert stats.summary({"score_x": values}).iloc[0]["high"] == pytest.approx(t_high)


def test_bootstrap_on_rare_discordance_warns_and_names_the_better_method():
    base = np.ones(200)
    cand = base.copy()
    cand[:3] = 0
    with pytest.warns(UserWarning, match=r"fewer than 10 discordant pairs.*method='auto'"):
        stats.compare({"hit@5": base}, {"hit@5": cand}, method="bca", n_resamples=200)


@pytest.mark.parametrize("n", [10, 20, 30])
def test_a_true_drop_of_four_margins_rarely_passes_exact_enumeration(n):
    # The regime: a slice of n questions with a true 8-point drop (margin 0.02) and few changed
    # questions (P(down) = 0.10, P(up) = 0.02). Enumerate every outcome and apply the gate's rule.
    p_down, p_up, margin = 0.10, 0.02, 0.02
    downs, ups = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = downs + ups <= n
    downs, ups = downs[ok], ups[ok]
    prob = sps.multinomial.pmf(np.column_stack([downs, ups, n - downs - ups]), n, [p_down, p_up, 1 - p_down - p_up])
    low, high = _tango_bounds(downs, ups, np.full(downs.shape, n), 0.95)
    passes = np.array([_decide(lo, hi, margin, True, n=n)[0] == "pass" for lo, hi in zip(low, high)])
    assert prob[passes].sum() <= 0.05
    # The plain percentile bootstrap passes far more often in the same regime (the issue: 32% at n = 10).
    if n == 10:
        rng = np.random.default_rng(2)
        draws = rng.choice(len(prob), size=200, p=prob / prob.sum())
        boot_pass = 0
        for k in draws:
            base = np.r_[np.ones(downs[k]), np.zeros(ups[k]), np.ones(n - downs[k] - ups[k])]
            cand = np.r_[np.zeros(downs[k]), np.ones(ups[k]), np.ones(n - downs[k] - ups[k])]
            iv = stats.paired_bootstrap(base, cand, n_resamples=500, seed=int(k))
            boot_pass += bool(iv.low >= -margin)
        assert boot_pass / 200 > 0.15


def test_compare_reports_changed_pairs_and_skewness_like_scipy():
    rng = np.random.default_rng(8)
    base = rng.random(120)
    cand = base + np.where(rng.random(120) < 0.4, rng.lognormal(-2, 1, 120), 0.0)
    slices = np.repeat(["a", "b", "c"], 40)
    table = stats.compare({"score": base}, {"score": cand}, slices=slices, n_resamples=200, n_permutations=100)
    diffs = cand - base
    for label, mask in [("overall", np.ones(120, bool)), *((s, slices == s) for s in "abc")]:
        row = table.set_index("slice").loc[label]
        assert row["n_changed"] == int((diffs[mask] != 0).sum())
        assert row["skew"] == pytest.approx(sps.skew(diffs[mask], bias=True), rel=1e-9)


def test_bootstrap_rows_with_few_changed_or_few_questions_are_review():
    # A metric with no known bounds (bootstrap rows), 12 questions of which only 3 changed (all better): a
    # bootstrap cannot show a drop it never saw, so passing here would rest on luck.
    base = np.linspace(0.2, 0.8, 12)
    cand = base.copy()
    cand[:3] += [0.3, 0.2, 0.25]
    row = gate({"score": base}, {"score": cand}, margin=0.02, n_resamples=500, higher_is_better=True).table.iloc[0]
    assert row["decision"] == "review" and "only 3 of 12 questions changed" in row["reason"]
    # 20 questions: below MIN_RESAMPLED a bootstrap row is review whatever the sample's shape.
    changed = np.r_[np.full(17, 0.01), 0.02, 0.03, 0.04] + np.linspace(0, 0.001, 20)
    row = gate({"score": np.zeros(20)}, {"score": changed}, margin=0.5, n_resamples=500,
               higher_is_better=True).table.iloc[0]
    assert row["decision"] == "review" and "only 20 questions for a bootstrap interval" in row["reason"]


def test_gate_warns_when_holm_can_never_block_a_resampled_row():
    rng = np.random.default_rng(1)
    base = {f"m{j}": rng.random(300) for j in range(3)}
    cand = {k: v + rng.normal(0, 0.05, 300) for k, v in base.items()}
    slices = np.repeat([f"s{i}" for i in range(8)], 300 // 8 + 1)[:300]
    with pytest.warns(UserWarning, match=r"27 rows, Holm needs a one-sided p-value below 0.00093.*at least 1080"):
        gate(base, cand, margin=0.02, slices=slices, n_permutations=500, n_resamples=300, higher_is_better=True)


def test_summary_with_clusters_uses_the_expanded_percentile_bootstrap():
    rng = np.random.default_rng(2)
    units = np.repeat(np.arange(25), 4)
    values = rng.random(100)
    auto = stats.summary({"faithfulness": values}, units=units, n_resamples=2_000).iloc[0]
    plain = stats.summary({"faithfulness": values}, units=units, n_resamples=2_000, method="percentile").iloc[0]
    assert auto["method"] == "cluster bootstrap (expanded percentile)"
    assert plain["method"] == "cluster bootstrap (percentile)"
    assert auto["high"] - auto["low"] > plain["high"] - plain["low"]
