"""Paired tests beside the intervals: exact McNemar (statsmodels), sign flips (exact enumeration and
scipy.stats.permutation_test) and Holm's adjustment (statsmodels)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.stats import compare, holm, mcnemar, sign_flip_test

contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
multitest = pytest.importorskip("statsmodels.stats.multitest")


def _pairs_from_table(a, b, c, d):
    """base/cand 0-1 vectors for the 2x2 table [[a, b], [c, d]] (rows: base 1/0, columns: cand 1/0)."""
    base = [1] * (a + b) + [0] * (c + d)
    cand = [1] * a + [0] * b + [1] * c + [0] * d
    return base, cand


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_matches_statsmodels(a, b, c, d):
    if a + b + c + d == 0:
        return
    base, cand = _pairs_from_table(a, b, c, d)
    mine = mcnemar(base, cand)
    ref = contingency.mcnemar([[a, b], [c, d]], exact=True)
    assert mine.statistic == ref.statistic
    assert mine.p_value == pytest.approx(ref.pvalue, abs=1e-12)
    assert mine.method == "exact McNemar" and mine.n == a + b + c + d


def test_mcnemar_on_the_seed_example():
    import random

    rng = random.Random(1)
    base = [1.0 if rng.random() < 0.72 else 0.0 for _ in range(300)]
    cand = [b if rng.random() < 0.9 else 1.0 - b for b in base]
    b = sum(1 for x, y in zip(base, cand) if x == 1 and y == 0)
    c = sum(1 for x, y in zip(base, cand) if x == 0 and y == 1)
    ref = contingency.mcnemar([[0, b], [c, 0]], exact=True)
    assert mcnemar(base, cand).p_value == pytest.approx(ref.pvalue, abs=1e-12)
    assert ref.pvalue < 0.05  # the drop the seed calls real is significant here too


def test_mcnemar_needs_pass_fail_scores():
    with pytest.raises(ValueError, match="pass/fail scores"):
        mcnemar([0.5, 1], [1, 0])


def _exact_sign_flip_p(d):
    """Two-sided exact sign-flip p-value by enumerating all 2^n sign patterns."""
    d = np.asarray(d, float)
    observed = abs(d.sum())
    signs = np.array(list(itertools.product([1, -1], repeat=len(d))))
    return float(np.mean(np.abs(signs @ d) >= observed - 1e-12))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_matches_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    base = rng.random(12)
    cand = base + rng.normal(0.15, 0.3, 12)
    exact = _exact_sign_flip_p(cand - base)
    mine = sign_flip_test(base, cand, n_permutations=40_000, seed=seed)
    # Monte Carlo standard error of a p-value from 40,000 flips is at most 0.0025.
    assert mine.p_value == pytest.approx(exact, abs=0.01)
    assert mine.n_permutations == 40_000 and mine.seed == seed


def test_sign_flip_matches_scipy_permutation_test():
    rng = np.random.default_rng(4)
    base = rng.beta(2, 2, 200)
    cand = base + rng.normal(0.02, 0.15, 200)
    ref = scipy.stats.permutation_test(
        (base, cand), lambda x, y, axis=-1: np.mean(y - x, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=20_000, rng=1,
    )
    mine = sign_flip_test(base, cand, n_permutations=20_000, seed=3)
    assert mine.p_value == pytest.approx(ref.pvalue, abs=0.012)


def test_sign_flip_with_few_distinct_differences_is_exact_in_distribution():
    # Pass/fail differences: the sign-flip test is the two-sided exact binomial (McNemar) test.
    base = [1] * 30 + [0] * 12 + [1] * 100
    cand = [0] * 30 + [1] * 12 + [1] * 100
    mine = sign_flip_test(base, cand, n_permutations=50_000, seed=0)
    ref = contingency.mcnemar([[100, 30], [12, 0]], exact=True).pvalue
    assert mine.p_value == pytest.approx(ref, abs=0.004)


def test_sign_flip_on_zero_differences_is_one():
    assert sign_flip_test([0.2, 0.4, 0.9], [0.2, 0.4, 0.9]).p_value == 1.0


def test_cluster_sign_flip_flips_whole_clusters():
    # Two clusters of 20 identical gains: flipping questions finds a clear effect, but flipping the
    # two clusters has 4 equally likely patterns (+-10 +- 6) of which 2 reach |16|: p = 1/2.
    base = np.zeros(40)
    cand = np.r_[np.full(20, 0.5), np.full(20, 0.3)]
    units = np.repeat(["a", "b"], 20)
    clustered = sign_flip_test(base, cand, units=units, n_permutations=20_000, seed=1)
    assert clustered.p_value == pytest.approx(0.5, abs=0.015)
    assert clustered.method == "sign-flip permutation (clusters)"
    assert sign_flip_test(base, cand, seed=1).p_value < 0.001


@settings(max_examples=25, deadline=None)  # statsmodels' multipletests takes ~50 ms a call here
@given(st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=30))
def test_holm_matches_statsmodels(p):
    p = np.asarray(p, float)
    mine = holm(p)
    present = ~np.isnan(p)
    assert np.isnan(mine[~present]).all()
    if present.any():
        _, ref, _, _ = multitest.multipletests(p[present], method="holm")
        np.testing.assert_allclose(mine[present], ref, rtol=1e-12, atol=1e-15)


def test_compare_reports_tests_per_metric():
    rng = np.random.default_rng(7)
    n = 400
    hit_b = (rng.random(n) < 0.7).astype(float)
    hit_c = np.where(rng.random(n) < 0.9, hit_b, 1 - hit_b)
    nd_b = rng.random(n)
    nd_c = np.clip(nd_b + rng.normal(0.02, 0.1, n), 0, 1)  # an nDCG stays in [0, 1] (compare refuses others)
    slices = rng.choice(["a", "b"], n)
    # method="percentile": nDCG's sign-flip test (auto gives bounded metrics the betting capital's p-value)
    table = compare({"hit@5": hit_b, "ndcg@5": nd_b}, {"hit@5": hit_c, "ndcg@5": nd_c}, slices=slices, adjust="holm",
                    method="percentile")
    hit = table[table["metric"] == "hit@5"]
    assert (hit["test"] == "exact McNemar").all() and hit["n_permutations"].isna().all()
    for _, row in hit.iterrows():
        mask = slice(None) if row["slice"] == "overall" else slices == row["slice"]
        ref = mcnemar(hit_b[mask], hit_c[mask])
        assert row["p_value"] == pytest.approx(ref.p_value, abs=1e-12)
    nd = table[table["metric"] == "ndcg@5"]
    assert (nd["test"] == "sign-flip permutation").all() and (nd["n_permutations"] == 10_000).all()
    for _, row in nd.iterrows():
        mask = slice(None) if row["slice"] == "overall" else slices == row["slice"]
        ref = sign_flip_test(nd_b[mask], nd_c[mask], n_permutations=10_000, seed=5).p_value
        assert row["p_value"] == pytest.approx(ref, abs=max(0.01, 0.2 * ref))
    _, expected, _, _ = multitest.multipletests(table["p_value"], method="holm")
    np.testing.assert_allclose(table["p_adjusted"], expected, rtol=1e-12)


def test_compare_can_skip_tests():
    table = compare({"s": [0.1, 0.5, 0.3]}, {"s": [0.2, 0.5, 0.1]}, n_permutations=0, n_resamples=100)
    assert table["p_value"].isna().all() and (table["test"] == "none").all()
