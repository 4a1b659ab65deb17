"""The Poisson bootstrap of the paired comparison (issue 23): weights keyed by (seed, id, replicate)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from raglab import runs
from raglab.stats import compare
from raglab.stats.estimators import (
    PAIRED,
    Layout,
    PairedSample,
    PoissonBootstrap,
    _id_keys,
    _poisson_weights,
    choose_paired,
    interval_kind,
)
from raglab.stats.results import IntervalKind


def _runs(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    base = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(["a", "b", "c"], n),
        "hit@5": rng.integers(0, 2, n),
        "latency_s": rng.gamma(2.0, 1.0, n),
    })
    cand = base.assign(**{"hit@5": np.where(rng.random(n) < 0.2, 1 - base["hit@5"], base["hit@5"]),
                          "latency_s": base["latency_s"] + rng.normal(0.1, 0.5, n)})
    cand.loc[3, "latency_s"] = np.nan  # a dropped pair
    return base, cand


def test_weights_are_a_pure_function_of_seed_id_and_replicate() -> None:
    ids = np.array([f"q{i}" for i in range(50)], dtype=object)
    w = _poisson_weights(_id_keys(ids, 7), 0, 30)
    order = np.random.default_rng(1).permutation(ids.size)
    assert (_poisson_weights(_id_keys(ids[order], 7), 0, 30) == w[order]).all()  # row order
    split = np.hstack([_poisson_weights(_id_keys(ids, 7), 0, 11), _poisson_weights(_id_keys(ids, 7), 11, 30)])
    assert (split == w).all()  # each replicate on its own
    assert (_poisson_weights(_id_keys(ids[:5], 7), 0, 30) == w[:5]).all()  # the other rows do not matter
    assert not (_poisson_weights(_id_keys(ids, 8), 0, 30) == w).all()  # the seed does
    assert (_poisson_weights(_id_keys([1, 2], 7), 0, 3) == _poisson_weights(_id_keys(["1", "2"], 7), 0, 3)).all()


def test_weights_are_poisson_one() -> None:
    w = _poisson_weights(_id_keys(np.arange(5000), 0), 0, 40).ravel().astype(float)
    assert abs(w.mean() - 1.0) < 0.01 and abs(w.var() - 1.0) < 0.02
    observed = np.bincount(np.minimum(w.astype(int), 6), minlength=7)
    expected = np.r_[sps.poisson.pmf(np.arange(6), 1.0), sps.poisson.sf(5, 1.0)] * w.size
    assert sps.chisquare(observed, expected).pvalue > 1e-3
    # across replicates of one id and across ids of one replicate: no correlation
    matrix = _poisson_weights(_id_keys(np.arange(2000), 3), 0, 2).astype(float)
    assert abs(np.corrcoef(matrix.T)[0, 1]) < 0.08


def test_registered_named_only() -> None:
    assert isinstance(PAIRED["poisson"], PoissonBootstrap) and not PAIRED["poisson"].in_auto
    base, cand = _runs()
    t = runs.compare(base, cand, metrics=["hit@5", "latency_s"])
    assert "Poisson" not in " ".join(t["method"])
    sample = PairedSample(("x",), np.zeros((3, 1)), np.ones((3, 1)), Layout.of(3, None, None))
    assert [type(e).__name__ for e in choose_paired(sample, "poisson")] == ["PoissonBootstrap"]


def _loop_interval(ids: list[str], d: np.ndarray, seed: int, n_resamples: int, level: float) -> tuple[float, float]:
    """The interval by a plain loop: one id and one replicate at a time."""
    weights = {i: _poisson_weights(_id_keys([i], seed), 0, n_resamples)[0] for i in ids}
    estimates = []
    for b in range(n_resamples):
        num = den = 0.0
        for i, x in zip(ids, d):
            if not np.isnan(x):
                num += float(weights[i][b]) * x
                den += float(weights[i][b])
        if den > 0:
            estimates.append(num / den)
    alpha = (1 - level) / 2
    return tuple(np.quantile(estimates, [alpha, 1 - alpha]))


def test_interval_equals_a_plain_loop() -> None:
    base, cand = _runs(120)
    t = runs.compare(base, cand, metrics=["hit@5", "latency_s"], by="qtype", method="poisson",
                     n_resamples=200, seed=5, ci=0.9)
    for metric in ("hit@5", "latency_s"):
        d = (cand[metric] - base[metric]).to_numpy(dtype=float)
        for label in ("overall", "a", "b", "c"):
            rows = slice(None) if label == "overall" else (base["qtype"] == label).to_numpy()
            low, high = _loop_interval(list(base["question_id"][rows]), d[rows], 5, 200, 0.9)
            row = t[(t["metric"] == metric) & (t["slice"] == label)].iloc[0]
            assert row["low"] == pytest.approx(low, rel=1e-12, abs=1e-14)
            assert row["high"] == pytest.approx(high, rel=1e-12, abs=1e-14)
            assert row["method"] == "paired bootstrap (Poisson)"
            assert row["n_resamples"] == 200 and row["seed"] == 5 and row["level"] == 0.9


def test_typed_rows_and_p_values() -> None:
    base, cand = _runs()
    t = compare(base[["latency_s"]], cand[["latency_s"]], method="poisson", n_resamples=300, seed=2,
                ids=base["question_id"], n_permutations=0)
    assert interval_kind(t["method"].iloc[0]) is IntervalKind.BOOTSTRAP
    row = t.iloc[0]
    assert row["low"] <= row["diff"] <= row["high"]
    assert 0 < row["p_increase"] < 0.05 < row["p_decrease"]  # the latency rose by about 0.1 s
    assert row["test"] == "none"


def test_row_order_invariance() -> None:
    base, cand = _runs()
    kw = dict(metrics=["hit@5", "latency_s"], by="qtype", method="poisson", n_resamples=300, seed=11)
    t = runs.compare(base, cand, **kw)
    rng = np.random.default_rng(4)
    t2 = runs.compare(base.iloc[rng.permutation(len(base))], cand.iloc[rng.permutation(len(cand))], **kw)
    pd.testing.assert_frame_equal(t, t2, check_exact=True)
    # with clusters the cluster label keys the weights
    base["cluster"] = base["question_id"].str[:3]
    cand["cluster"] = base["cluster"]
    kw["units"] = "cluster"
    t = runs.compare(base, cand, **kw)
    t2 = runs.compare(base.iloc[::-1], cand.iloc[rng.permutation(len(cand))], **kw)
    pd.testing.assert_frame_equal(t, t2, check_exact=True)
    assert t["method"].iloc[0] == "paired cluster bootstrap (Poisson)"


def test_coverage_near_nominal() -> None:
    rng = np.random.default_rng(123)
    n, sims, hits = 80, 150, 0
    ids = [f"q{i}" for i in range(n)]
    for s in range(sims):
        b = rng.gamma(2.0, 1.0, n)
        c = b + rng.exponential(0.5, n) - 0.5 + rng.normal(0, 0.3, n)  # true mean difference 0
        t = compare({"latency_s": b}, {"latency_s": c}, method="poisson", n_resamples=400, seed=s, ids=ids,
                    n_permutations=0)
        hits += bool(t["low"].iloc[0] <= 0.0 <= t["high"].iloc[0])
    print(f"Poisson bootstrap coverage at 95%: {hits / sims:.3f}")
    assert 0.86 <= hits / sims <= 0.99, hits / sims


def test_replicate_sums_are_exact() -> None:
    from fractions import Fraction

    from raglab.stats.estimators import PoissonSums

    rng = np.random.default_rng(8)
    d = rng.normal(size=300) * 10.0 ** rng.integers(-12, 12, 300)  # a wide range of magnitudes
    d[:3] = [1e15, 1.0, -1e15]  # cancellation
    ids = np.arange(300)
    sums = PoissonSums.of(_id_keys(ids, 1), d[:, None], np.zeros(300, dtype=int), 1, 20)
    w = _poisson_weights(_id_keys(ids, 1), 0, 20)
    total, weight = sums.cell([(0, 0)])
    for b in range(20):
        exact = sum((Fraction(int(w[i, b])) * Fraction(float(d[i])) for i in range(300)), Fraction(0))
        assert total[b] == float(exact)  # the exact sum, rounded once
        assert weight[b] == int(w[:, b].sum())
    # the same sums from two halves, added
    halves = [PoissonSums.of(_id_keys(ids[s], 1), d[s, None], np.zeros(150, dtype=int), 1, 20)
              for s in (slice(150, None), slice(0, 150))]
    again, _ = (halves[0] + halves[1]).cell([(0, 0)])
    np.testing.assert_array_equal(again, total)


def test_few_clusters_give_no_interval() -> None:
    base, cand = _runs(60)
    units = np.repeat(np.arange(6), 10)
    with pytest.warns(UserWarning, match=r"only \[6\] clusters"):
        t = compare(base[["latency_s"]], cand[["latency_s"]], units=units, method="poisson", n_resamples=50)
    assert np.isnan(t["low"].iloc[0]) and t["n_clusters"].iloc[0] == 6
