"""Issue 18 §1: a pass must mean what it says when a few questions break badly.

The betting interval (Waudby-Smith & Ramdas 2023) on metrics known to lie in [0, 1] is checked
against exact enumeration (its coverage for every count vector of a small discrete distribution),
against a seeded simulation in which the old bootstrap rule fails, and for the properties the
gate relies on (row order, bounds, never zero-width).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from raglab import stats
from raglab.stats.intervals import _BETTING_LABEL, _betting_bounds, _betting_p_values
from raglab.stats.results import at_floor, floor_resolution
from raglab.stats.tests import holm

MARGIN = 0.02


def _multinomial(counts: tuple[int, ...], probs: np.ndarray) -> float:
    return float(sps.multinomial.pmf(counts, sum(counts), probs))


@pytest.mark.parametrize("n", [6, 12])
def test_betting_bounds_cover_exactly_by_enumeration(n):
    # Values {-1, -0.2, 0, 0.5} (differences of [0, 1] scores): the bounds depend only on the counts,
    # so the chance that each side misses is an exact sum over every count vector.
    support = np.array([-1.0, -0.2, 0.0, 0.5])
    compositions = [c for c in itertools.product(range(n + 1), repeat=3) if sum(c) <= n]
    bounds = {}
    for c in compositions:
        counts = (*c, n - sum(c))
        values = np.repeat(support, counts)
        bounds[counts] = _betting_bounds(values, -1.0, 1.0, 0.95, 0)
    rng = np.random.default_rng(0)
    for probs in [np.array([0.02, 0.03, 0.9, 0.05]), np.array([0.05, 0.0, 0.95, 0.0]), *rng.dirichlet(np.ones(4), 6)]:
        mean = float(probs @ support)
        miss_low = sum(_multinomial(k, probs) for k, (lo, _) in bounds.items() if lo > mean)
        miss_high = sum(_multinomial(k, probs) for k, (_, hi) in bounds.items() if hi < mean)
        assert miss_low <= 0.025 + 1e-12 and miss_high <= 0.025 + 1e-12


def test_betting_bounds_are_at_least_as_wide_as_the_exact_binomial_interval():
    # For 0/1 values Clopper-Pearson is the narrowest interval that is valid for every p in this sense
    # (exact tails); a valid betting interval can be wider but its tails cannot be shorter on average.
    # The check that can fail: betting on 0/1 data never excludes the Clopper-Pearson point estimate and
    # contains the mean, and at n = 1,000 it is at most 1.5 times as wide (the Chernoff price).
    for n, k in [(20, 3), (100, 50), (1000, 480)]:
        x = np.r_[np.ones(k), np.zeros(n - k)]
        lo, hi = _betting_bounds(x, 0.0, 1.0, 0.95, 1)
        cp = sps.binomtest(k, n).proportion_ci(0.95)
        assert lo <= k / n <= hi
        assert (hi - lo) >= 0.9 * (cp.high - cp.low)
        if n == 1000:
            assert (hi - lo) <= 1.5 * (cp.high - cp.low)


def test_betting_bounds_do_not_depend_on_row_order_and_stay_inside_the_range():
    rng = np.random.default_rng(3)
    d = np.where(rng.random(200) < 0.1, -rng.random(200), 0.0)
    first = _betting_bounds(d, -1.0, 1.0, 0.95, 7)
    assert _betting_bounds(rng.permutation(d), -1.0, 1.0, 0.95, 7) == first
    assert -1.0 <= first[0] < d.mean() < first[1] <= 1.0
    # Hoeffding's bound holds for any distribution on [-1, 1] but ignores the variance; betting adapts to
    # it, so on these mostly-unchanged differences each side is well inside Hoeffding's (2 sqrt(log(40) / 2n)).
    hoeffding = 2.0 * math.sqrt(math.log(40.0) / (2 * d.size))
    assert d.mean() - first[0] < 0.4 * hoeffding and first[1] - d.mean() < 0.4 * hoeffding
    # never zero-width, even when nothing changed; below two values there is no interval
    lo, hi = _betting_bounds(np.zeros(50), -1.0, 1.0, 0.95, 0)
    assert lo < 0 < hi
    assert all(np.isnan(_betting_bounds(np.zeros(1), -1.0, 1.0, 0.95, 0)))


def _left_skewed(rng, n, reps):
    """Every question moves a little (N(+0.01, 0.03)), 7.3% break (lose U(0.2, 0.6)): true mean -MARGIN."""
    share = (MARGIN + 0.01) / 0.41
    small = np.clip(rng.normal(0.01, 0.03, (n, reps)), -0.19, 0.21)
    return np.where(rng.random((n, reps)) < share, -rng.uniform(0.2, 0.6, (n, reps)), small)


def _pass_rate(d, method):
    base = np.full(d.shape, 0.6)
    cols = range(d.shape[1])
    table = stats.compare({f"r{j}": base[:, j] for j in cols}, {f"r{j}": base[:, j] + d[:, j] for j in cols},
                          method=method, n_resamples=400, n_permutations=0, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        decided = stats.gate_comparison(table, MARGIN, higher_is_better=True).table
    return float((decided["decision"] == "pass").mean()), float((table["low"] >= -MARGIN).mean())


@pytest.mark.parametrize("n", [15, 30, 120])
def test_a_drop_at_the_margin_passes_at_most_2_5_percent_with_the_betting_interval(n):
    # The same samples through the plain percentile bootstrap: its low end is above -margin far more
    # often than 2.5% (the simulation can see the failure the issue reports), the betting interval's is not.
    d = _left_skewed(np.random.default_rng(n), n, 200)
    betting, _ = _pass_rate(d, "betting")
    _, percentile = _pass_rate(d, "percentile")
    assert betting <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / 200)
    assert percentile > 0.05


def test_the_gate_uses_the_betting_interval_for_bounded_metrics_and_needs_no_changed_count():
    rng = np.random.default_rng(5)
    base = rng.random(400)
    result = stats.gate({"ndcg@10": base, "latency_s": 1 + base}, {"ndcg@10": base, "latency_s": 1 + base},
                        margin={"ndcg@10": 0.02, "latency_s": 0.5}, n_resamples=500, n_permutations=0,
                        higher_is_better={"ndcg@10": True, "latency_s": False})
    row = result.table.set_index("metric").loc["ndcg@10"]
    assert row["method"] == _BETTING_LABEL and row["n_changed"] == 0
    # 400 unchanged questions rule out a 0.02 drop for any distribution on [-1, 1] (0.98^400 < 0.1%)
    assert row["decision"] == "pass" and -MARGIN < row["low"] < 0 < row["high"]
    # the unbounded metric keeps the bootstrap, whose zero-width interval says nothing: review
    assert result.table.set_index("metric").loc["latency_s", "decision"] == "review"


def test_one_margin_for_several_metrics_including_unbounded_ones_warns():
    base = {"recall@5": [0.5, 1.0] * 20, "prompt_chars": [900.0, 1100.0] * 20}
    cand = {"recall@5": [0.5, 1.0] * 20, "prompt_chars": [950.0, 1000.0] * 20}
    with pytest.warns(UserWarning, match=r"one margin \(0.02\).*'prompt_chars'.*margin per metric"):
        stats.gate(base, cand, margin=0.02, n_resamples=200, n_permutations=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a margin per metric, or one metric: no warning
        stats.gate(base, cand, margin={"recall@5": 0.02, "prompt_chars": 50.0}, n_resamples=200, n_permutations=0)
        stats.gate({"latency_s": [1.0, 1.2] * 20}, {"latency_s": [1.1, 1.0] * 20}, margin=0.05,
                   n_resamples=200, n_permutations=0, higher_is_better=False)


def test_method_betting_refuses_scores_outside_zero_one():
    with pytest.raises(ValueError, match="method='betting' needs scores known to lie in"):
        stats.compare({"x": [0.0, 2.0, 1.0]}, {"x": [1.0, 0.0, 1.0]}, method="betting")


def test_bootstrap_rows_below_thirty_questions_or_clusters_are_review_whatever_their_shape():
    # A metric with no known bounds keeps the bootstrap; below 30 questions (or clusters) it has no
    # guarantee, and the rule looks at the count only (a skewness screen kept the samples that missed the tail).
    rng = np.random.default_rng(11)
    symmetric = rng.normal(0.0, 0.01, 25)
    row = stats.gate({"score": np.zeros(25)}, {"score": symmetric}, margin=0.5, higher_is_better=True,
                     n_resamples=300, n_permutations=0).table.iloc[0]
    assert row["decision"] == "review" and "only 25 questions for a bootstrap interval" in row["reason"]
    # clusters: 20 conversations of 10 questions, a bounded metric resampled by cluster -> review
    units = np.repeat(np.arange(20), 10)
    values = rng.random(200)
    row = stats.gate({"faithfulness": values}, {"faithfulness": np.clip(values + rng.normal(0, 0.01, 200), 0, 1)}, margin=0.5, units=units,
                     higher_is_better=True, n_resamples=300, n_permutations=0).table.iloc[0]
    assert row["decision"] == "review" and "only 20 clusters" in row["reason"]
    units = np.repeat(np.arange(40), 5)
    row = stats.gate({"faithfulness": values}, {"faithfulness": np.clip(values + rng.normal(0, 0.01, 200), 0, 1)}, margin=0.5,
                     units=units, higher_is_better=True, n_resamples=300, n_permutations=0).table.iloc[0]
    assert row["decision"] == "pass"


def test_betting_rows_take_no_draws_so_holm_never_warns_for_them_and_no_floor_is_shown():
    # Their p-values are 1 / capital, not counts of sign flips: a few flips cannot floor them, so the
    # "Holm can never block" warning and the resampling-floor display do not apply; a bootstrap row does.
    rng = np.random.default_rng(1)
    base = {name: rng.random(300) for name in ("rr", "ndcg@5", "recall@5")}
    cand = {k: np.clip(v + rng.normal(0, 0.05, 300), 0, 1) for k, v in base.items()}
    slices = np.repeat([f"s{i}" for i in range(8)], 300 // 8 + 1)[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        result = stats.gate(base, cand, margin=0.02, slices=slices, n_permutations=50, n_resamples=300,
                            higher_is_better=True)
    t = result.table
    assert set(t["method"]) == {_BETTING_LABEL} and set(t["test"]) == {"betting capital"}
    assert t["n_resamples"].isna().all() and t["n_permutations"].isna().all()
    assert not at_floor(t).any() and all(f is None for f in floor_resolution(t))
    # n_permutations=0 changes nothing for betting rows (no bootstrap is read)
    table = stats.compare(base, cand, n_permutations=0, n_resamples=300)
    again = stats.compare(base, cand, n_permutations=50, n_resamples=300)
    assert table["n_resamples"].isna().all() and np.allclose(table["p_decrease"], again["p_decrease"])
    # an unbounded metric beside them keeps its sign flips, and 50 flips still warn
    base["latency_s"], cand["latency_s"] = 1 + base["rr"], 1 + cand["rr"]
    with pytest.warns(UserWarning, match=r"Holm needs a one-sided p-value below .*50 sign flips"):
        stats.gate(base, cand, margin={"rr": 0.02, "ndcg@5": 0.02, "recall@5": 0.02, "latency_s": 0.1},
                   slices=slices, n_permutations=50, n_resamples=300,
                   higher_is_better={"rr": True, "ndcg@5": True, "recall@5": True, "latency_s": False})


# --------------------------------------------------------------------------------------------------
# Betting rows' one-sided p-values: min(1, 1 / capital at 0), valid without symmetry (issue 18 review)
# --------------------------------------------------------------------------------------------------

def _count_vectors(n: int) -> np.ndarray:
    return np.array([(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)])


def _mean_zero_family(support: np.ndarray, steps: int = 11) -> list[np.ndarray]:
    """Distributions on three points (one negative, one positive at the end) with mean exactly 0: the
    segment between the two-point mean-0 distributions the middle point allows."""
    lo, mid, hi = support
    ends = np.array([hi / (hi - lo), 0.0, -lo / (hi - lo)])
    if mid < 0:
        other = np.array([0.0, hi / (hi - mid), -mid / (hi - mid)])
    elif mid > 0:
        other = np.array([mid / (mid - lo), -lo / (mid - lo), 0.0])
    else:
        other = np.array([0.0, 1.0, 0.0])
    return [t * ends + (1 - t) * other for t in np.linspace(0.0, 1.0, steps)]


_SUPPORTS = [np.array([-1.0, -0.05, 1.0]), np.array([-1.0, 0.2, 0.6]), np.array([-1.0, 0.0, 1.0])]


@pytest.mark.parametrize("n", [30, 45, 60])
def test_betting_p_values_hold_their_level_on_each_side_by_exact_enumeration(n):
    # Three support points: the p-values depend only on the counts, so P(p < a) under a mean-0 law is an
    # exact sum over every count vector. Each side misses at most alpha / 2 = 0.025 (the gate's test), and
    # as p-values they are valid at every a (Markov on the capital): P(p <= a) <= a, two-sided too.
    counts = _count_vectors(n)
    for support in _SUPPORTS:
        p = np.array([_betting_p_values(np.repeat(support, c), -1.0, 1.0, 0.95, 0) for c in counts])
        two_sided = np.minimum(1.0, 2.0 * p.min(axis=1))
        for probs in _mean_zero_family(support):
            assert abs(probs @ support) < 1e-12 and probs.min() >= 0
            w = sps.multinomial.pmf(counts, n, probs)
            for side in (0, 1):
                assert w[p[:, side] < 0.025].sum() <= 0.025
                for a in (0.05, 0.25, 0.5):
                    assert w[p[:, side] <= a].sum() <= a
            for a in (0.05, 0.5):
                assert w[two_sided <= a].sum() <= a
        if support[1] == 0:  # symmetric support: both sides share one seed, so they are mirror images
            for probs in _mean_zero_family(support):
                w = sps.multinomial.pmf(counts, n, probs)
                assert w[p[:, 0] < 0.025].sum() == pytest.approx(w[p[:, 1] < 0.025].sum(), abs=1e-15)


def test_betting_p_values_agree_with_the_bounds_and_a_mutated_level_is_caught():
    # At every count vector (n = 30): the low bound above 0 <=> p_increase < 0.025 (the same capital read
    # two ways), up to the bound's 1e-7 grid, and likewise high below 0 <=> p_decrease < 0.025. Each side of
    # the bounds misses at most 0.025 for laws with other means too.
    n, support = 30, np.array([-1.0, 0.2, 0.6])
    counts = _count_vectors(n)
    samples = [np.repeat(support, c) for c in counts]
    p = np.array([_betting_p_values(x, -1.0, 1.0, 0.95, 0) for x in samples])
    bounds = np.array([_betting_bounds(x, -1.0, 1.0, 0.95, 0) for x in samples])
    assert ((bounds[:, 0] > 0) <= (p[:, 1] <= 0.025)).all() and ((bounds[:, 1] < 0) <= (p[:, 0] <= 0.025)).all()
    assert (bounds[p[:, 1] < 0.025, 0] > -1e-6).all() and (bounds[p[:, 0] < 0.025, 1] < 1e-6).all()
    assert (bounds[:, 0] > 0).any() and (bounds[:, 1] < 0).any()  # the agreement is not vacuous
    rng = np.random.default_rng(2)
    for probs in rng.dirichlet(np.ones(3), 8):
        mean, w = probs @ support, sps.multinomial.pmf(counts, n, probs)
        assert w[bounds[:, 0] > mean].sum() <= 0.025 and w[bounds[:, 1] < mean].sum() <= 0.025
    # Mutant 1: bounds at 0.9 (no two-sided split) read against the 0.95 p-values disagree somewhere.
    mutant = np.array([_betting_bounds(x, -1.0, 1.0, 0.9, 0) for x in samples])
    assert ((mutant[:, 0] > 0) & (p[:, 1] > 0.025)).any()
    # Mutant 2: a side at 10% (level 0.8) breaks the <= 0.025 check on a mean-0 law; the construction is
    # conservative (Markov on an averaged capital), so at 0.9 the enumeration alone (worst 0.012) would not.
    worst = 0.0
    loose = np.array([_betting_p_values(x, -1.0, 1.0, 0.8, 0) for x in samples])
    for probs in _mean_zero_family(support, 41):
        w = sps.multinomial.pmf(counts, n, probs)
        worst = max(worst, w[loose[:, 0] < 0.1].sum(), w[loose[:, 1] < 0.1].sum())
    assert worst > 0.025


def _skewed_null(rng, n, reps):
    """95% of questions lose 0.05 / 0.95, 5% gain 1: every difference in [-1, 1], true mean exactly 0."""
    return np.where(rng.random((n, reps)) < 0.05, 1.0, -0.05 / 0.95)


@pytest.mark.parametrize("n", [40, 60, 100])
def test_the_capital_p_value_holds_under_a_skewed_null_where_sign_flips_do_not(n):
    reps, flips = 300, 2000
    d = _skewed_null(np.random.default_rng(n), n, reps)
    capital = np.array([_betting_p_values(d[:, j], -1.0, 1.0, 0.95, [1, 2])[0] for j in range(reps)])
    # the sign-flip test (the old p-value of betting rows), written out: p = (1 + #{flipped mean <= mean}) / (B + 1)
    signs = np.where(np.random.default_rng(0).random((flips, n)) < 0.5, -1.0, 1.0)
    sign_flip = (1.0 + (signs @ d <= d.sum(axis=0) + 1e-12).sum(axis=0)) / (flips + 1.0)
    mc = 2 * math.sqrt(0.025 * 0.975 / reps)
    assert (capital < 0.025).mean() <= 0.025 + mc
    assert (sign_flip < 0.025).mean() > 0.025 + mc  # the simulation sees the failure the review reported


@pytest.mark.slow
def test_a_family_of_20_slices_with_nothing_changed_does_not_block_under_the_skewed_null():
    # The real gate: 20 slices x 100 questions plus overall, one bounded metric, Holm over the 21 rows.
    rng = np.random.default_rng(4)
    labels = np.repeat([f"s{i}" for i in range(20)], 100)
    blocked, p_min = 0, []
    for rep in range(30):
        d = _skewed_null(rng, 2000, 1)[:, 0]
        base = np.where(d > 0, 0.0, 0.5)
        result = stats.gate({"ndcg@5": base}, {"ndcg@5": base + d}, MARGIN, slices=labels, seed=rep,
                            higher_is_better=True)
        t = result.table
        assert set(t["test"]) == {"betting capital"} and t["n_permutations"].isna().all()
        np.testing.assert_allclose(t["p_worse_adjusted"], holm(t["p_decrease"].to_numpy()))
        blocked += result.decision == "block"
        p_min.append(float(t["p_worse_adjusted"].min()))
    assert blocked == 0 and min(p_min) > 0.025


# ---- declared bounds: the betting interval for metrics with no known bounds --------------------------------


def _latency_drop(rng, n, reps, margin=0.5):
    """Latency-like paired runs in [0, 30] s: most questions a little faster, a few time out (+5 to +25 s);
    the true mean change is +margin (worse by exactly the margin)."""
    share = (margin + 0.05) / 15.0
    base = 1.0 + 2.0 * rng.random((n, reps))
    small = np.clip(rng.normal(-0.05, 0.1, (n, reps)), -0.35, 0.35)
    d = np.where(rng.random((n, reps)) < share, rng.uniform(5.0, 25.0, (n, reps)), small)
    return base, base + d


@pytest.mark.parametrize("n", [30, 120])
def test_declared_bounds_keep_a_drop_at_the_margin_below_2_5_percent(n):
    base, cand = _latency_drop(np.random.default_rng(n), n, 200)
    cols = range(base.shape[1])
    b = {f"latency{j}": base[:, j] for j in cols}
    c = {f"latency{j}": cand[:, j] for j in cols}
    declared = stats.compare(b, c, bounds={name: (0, 30) for name in b}, n_permutations=0, n_resamples=200)
    plain = stats.compare(b, c, n_permutations=0, n_resamples=400, seed=1)
    assert set(declared["method"]) == {_BETTING_LABEL}
    assert declared.attrs["raglab"]["comparison"]["bounds"]["latency0"] == [0.0, 30.0]
    bound = 2 * math.sqrt(0.025 * 0.975 / 200)
    assert float((declared["high"] <= 0.5).mean()) <= 0.025 + bound  # lower is better: pass when high <= margin
    assert float((plain["high"] <= 0.5).mean()) > 0.05  # the bootstrap on the same samples misses the time-outs


def test_declared_bounds_are_the_betting_interval_on_that_range_and_refuse_values_outside():
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 20_000, 80)
    cand = np.clip(base + rng.normal(0, 800, 80), 0, 20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gated = stats.gate({"prompt_chars": base}, {"prompt_chars": cand}, margin=500.0,
                           bounds={"prompt_chars": (0, 20_000)}, n_permutations=200)
    scaled = stats.compare({"m": base / 20_000}, {"m": cand / 20_000}, method="betting", n_permutations=200)
    row = gated.table.iloc[0]
    assert row["method"] == _BETTING_LABEL
    # the same bet on a rescaled range: equal bounds (in the metric's own units)
    assert row["low"] == pytest.approx(scaled["low"].iloc[0] * 20_000, rel=1e-6, abs=1e-6)
    assert row["high"] == pytest.approx(scaled["high"].iloc[0] * 20_000, rel=1e-6, abs=1e-6)
    summary = stats.summary({"prompt_chars": base}, bounds={"prompt_chars": (0, 20_000)})
    assert summary["method"].iloc[0].startswith("betting") and summary["low"].iloc[0] >= 0
    assert summary["low"].iloc[0] < base.mean() < summary["high"].iloc[0]
    from raglab._errors import RowTableError

    bad = cand.copy()
    bad[[4, 9]] = [25_000, -3]
    with pytest.raises(RowTableError, match=r"'prompt_chars' was declared to lie in \[0, 20000\].*row 4.*row 9") as err:
        stats.compare({"prompt_chars": base}, {"prompt_chars": bad}, bounds={"prompt_chars": (0, 20_000)})
    assert err.value.column == "prompt_chars" and err.value.rows == [4, 9]
    with pytest.raises(ValueError, match="not scored here"):
        stats.compare({"a": base}, {"a": cand}, bounds={"b": (0, 1)})
    with pytest.raises(ValueError, match="low < high"):
        stats.summary({"a": base}, bounds={"a": (5, 5)})
    # without bounds nothing changes: the expanded percentile bootstrap
    assert "bootstrap" in stats.compare({"prompt_chars": base}, {"prompt_chars": cand}, n_permutations=0,
                                        n_resamples=200)["method"].iloc[0]


def test_row_tables_accessor_and_cli_pass_bounds_through(tmp_path, capsys):
    import pandas as pd

    import raglab  # noqa: F401  (df.rag)
    from raglab import runs
    from raglab.cli import main

    rng = np.random.default_rng(8)
    n = 60
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "latency_s": 1 + rng.random(n)})
    cand = base.assign(latency_s=base["latency_s"] + rng.normal(0, 0.05, n).clip(-0.5, 0.5))
    kw = dict(margin=0.5, metrics=["latency_s"], higher_is_better=False, bounds={"latency_s": (0, 30)},
              n_permutations=200)
    direct = stats.gate({"latency_s": base["latency_s"]}, {"latency_s": cand["latency_s"]}, 0.5,
                        higher_is_better=False, bounds={"latency_s": (0, 30)}, n_permutations=200)
    via_rows = runs.gate(base, cand, **kw)
    assert via_rows.table["method"].iloc[0] == _BETTING_LABEL
    assert via_rows.table["low"].iloc[0] == direct.table["low"].iloc[0]
    assert base.rag.gate(cand, **kw).table["high"].iloc[0] == via_rows.table["high"].iloc[0]
    assert base.rag.compare(cand, bounds={"latency_s": (0, 30)})["method"].iloc[0] == _BETTING_LABEL
    assert base.rag.summary(["latency_s"], bounds={"latency_s": (0, 30)})["method"].iloc[0].startswith("betting")
    base.to_csv(tmp_path / "b.csv", index=False)
    cand.to_csv(tmp_path / "c.csv", index=False)
    args = ["gate", str(tmp_path / "b.csv"), str(tmp_path / "c.csv"), "-m", "latency_s", "--margin", "0.5",
            "--lower-is-better", "latency_s", "--n-permutations", "200"]
    assert main([*args, "--bounds", "latency_s=0:30"]) in (0, 3)
    assert "betting" in capsys.readouterr().out
    assert main([*args, "--bounds", "latency_s=0:1.5"]) == 2  # values up to 2.0 s: refused, naming the column
    assert "'latency_s' was declared to lie in [0, 1.5]" in capsys.readouterr().err
    with pytest.raises(SystemExit) as code:
        main([*args, "--bounds", "latency_s=0-30"])
    assert code.value.code == 2 and "METRIC=LO:HI" in capsys.readouterr().err


def test_declared_bounds_are_stated_in_attrs():
    import pandas as pd

    from raglab import runs

    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "latency_s": np.linspace(0.5, 3.0, 40)})
    table = runs.summary(rows, ["latency_s"], bounds={"latency_s": (0, 30)})
    assert table.attrs["raglab"]["summary"]["bounds"] == {"latency_s": [0.0, 30.0]}
    assert "bounds" not in runs.summary(rows, ["latency_s"]).attrs["raglab"]["summary"]
    assert stats.summary({"latency_s": rows["latency_s"]}, bounds={"latency_s": (0, 30)}).attrs["raglab"] == {
        "summary": {"bounds": {"latency_s": [0.0, 30.0]}}}
