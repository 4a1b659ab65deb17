"""Prediction-powered intervals (raglab.stats.ppi) against ppi_py, the reference implementation."""

from __future__ import annotations

import numpy as np
import pytest

from raglab.stats import MIN_LABELS, ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python (the test-only oracle) is not installed")


def _draw(rng: np.random.Generator, t: int) -> tuple[np.ndarray, ...]:
    n, big_n = int(rng.integers(3, 300)), int(rng.integers(1, 3000))
    if t % 3 == 0:  # pass/fail labels, a judge right 80% of the time
        y = (rng.random(n) < 0.7).astype(float)
        f = np.where(rng.random(n) < 0.8, y, 1 - y)
        fu = (rng.random(big_n) < 0.65).astype(float)
    else:  # continuous scores, a judge of random quality (possibly anti-correlated)
        y = rng.random(n)
        f = y * rng.normal() + rng.normal(0, 0.3, n)
        fu = rng.normal(0.5, 0.3, big_n)
    w = wu = None
    if t % 2:
        w, wu = rng.uniform(0.5, 5, n), rng.uniform(0.5, 5, big_n)
    return y, f, fu, w, wu


@pytest.mark.parametrize("lam", [None, 0.0, 1.0, 0.37])
def test_ppi_mean_equals_ppi_py(lam: float | None) -> None:
    rng = np.random.default_rng(7)
    worst = 0.0
    for t in range(200):
        y, f, fu, w, wu = _draw(rng, t)
        level = (0.8, 0.9, 0.95)[t % 3]
        iv = ppi_mean(y, f, fu, lam=lam, ci=level, weights=w, weights_unlabeled=wu, interval="wald")
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=1 - level, lam=lam, w=w, w_unlabeled=wu)
        point = ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam, w=w, w_unlabeled=wu)
        worst = max(
            worst, abs(iv.low - float(low[0])), abs(iv.high - float(high[0])),
            abs(iv.estimate - float(np.ravel(point)[0])),
        )
        assert iv.level == level and iv.n_labeled == y.size and iv.n_unlabeled == fu.size
        if lam is not None:
            assert iv.lam == lam
        else:
            assert 0.0 <= iv.lam <= 1.0
    assert worst < 1e-10


def test_lam_zero_is_the_human_only_normal_interval() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(150)
    f = rng.random(150)
    iv = ppi_mean(y, f, rng.random(1000), lam=0, interval="wald")
    se = y.std() / np.sqrt(y.size)  # ppi_py's (and so raglab's) population sd
    assert iv.estimate == pytest.approx(y.mean(), abs=1e-12)
    assert iv.high - iv.estimate == pytest.approx(1.959963984540054 * se, abs=1e-12)
    assert iv.effective_labels == pytest.approx(150)


def test_effective_labels_and_the_useless_judge() -> None:
    rng = np.random.default_rng(11)
    truth = rng.random(20_000) < 0.7
    good = np.where(rng.random(truth.size) < 0.9, truth, ~truth).astype(float)
    y = truth[:300].astype(float)
    iv = ppi_mean(y, good[:300], good[300:])
    assert iv.method == "prediction-powered (PPI++, plus-four, t)"
    assert iv.effective_labels > 1.5 * 300  # a 90%-accurate judge on 20,000 rows is worth many labels
    assert iv.width < ppi_mean(y, good[:300], good[300:], lam=0).width
    noise = rng.random(truth.size)
    useless = ppi_mean(y, noise[:300], noise[300:])
    assert useless.lam < 0.2  # tuned weight near zero
    assert useless.width < ppi_mean(y, noise[:300], noise[300:], lam=0).width * 1.02


def test_min_labels_flag_and_input_checks() -> None:
    rng = np.random.default_rng(0)
    small = ppi_mean(rng.random(MIN_LABELS - 1), rng.random(MIN_LABELS - 1), rng.random(500))
    assert small.below_min_labels
    assert not ppi_mean(rng.random(MIN_LABELS), rng.random(MIN_LABELS), rng.random(500)).below_min_labels
    with pytest.raises(ValueError, match="one value per labelled row"):
        ppi_mean([1, 0, 1], [1, 0], [1])
    with pytest.raises(ValueError, match="missing"):
        ppi_mean([1, np.nan, 1], [1, 0, 1], [1])
    with pytest.raises(ValueError, match="positive"):
        ppi_mean([1, 0, 1], [1, 0, 1], [1], weights=[1, 0, 1])


def test_strata_combine_ppi_py_per_stratum() -> None:
    """Stratified PPI is sum_h W_h theta_h with variance sum_h W_h^2 var_h, each stratum ppi_py's PPI++."""
    from raglab.stats import ppi_mean_strata

    rng = np.random.default_rng(5)
    sizes = {"a": (60, 900), "b": (150, 400), "c": (40, 1200)}  # (labelled, unlabelled): unequal rates
    y, f, fu, sl, su = [], [], [], [], []
    for h, (n, big_n) in sizes.items():
        p = {"a": 0.9, "b": 0.6, "c": 0.3}[h]
        acc = {"a": 0.95, "b": 0.7, "c": 0.55}[h]
        t = rng.random(n) < p
        y.append(t.astype(float))
        f.append(np.where(rng.random(n) < acc, t, ~t).astype(float))
        fu.append((rng.random(big_n) < p).astype(float))
        sl += [h] * n
        su += [h] * big_n
    iv = ppi_mean_strata(np.concatenate(y), np.concatenate(f), np.concatenate(fu), sl, su, ci=0.9, interval="wald")
    total = sum(n + m for n, m in sizes.values())
    est = var = 0.0
    for i, (n, m) in enumerate(sizes.values()):
        share = (n + m) / total
        point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y[i], f[i], fu[i]))[0])
        low, high = ppi_py.ppi_mean_ci(y[i], f[i], fu[i], alpha=0.1)
        se = (float(high[0]) - float(low[0])) / 2 / 1.6448536269514722
        est += share * point
        var += share**2 * se**2
    assert iv.estimate == pytest.approx(est, abs=1e-10)
    assert iv.high - iv.estimate == pytest.approx(1.6448536269514722 * np.sqrt(var), abs=1e-10)
    assert iv.method == "prediction-powered (PPI++), stratified"
    with pytest.raises(ValueError, match="stratum 'z'"):
        ppi_mean_strata([1, 0, 1], [1, 0, 1], [1, 1], ["a", "a", "z"], ["a", "z"])


def test_clustered_with_singletons_is_ppi_py_times_g_over_g_minus_1() -> None:
    from raglab.stats import ppi_mean_clustered

    rng = np.random.default_rng(2)
    y, f, fu = rng.random(120), rng.random(120), rng.random(700)
    f = 0.6 * y + 0.4 * f
    for lam in (0.0, 1.0, 0.5):
        iv = ppi_mean_clustered(y, f, fu, np.arange(120), np.arange(120, 820), lam=lam, interval="wald")
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
        half = (float(high[0]) - float(low[0])) / 2
        assert iv.high - iv.estimate == pytest.approx(half * np.sqrt(820 / 819), abs=1e-10)
        assert iv.estimate == pytest.approx((float(high[0]) + float(low[0])) / 2, abs=1e-10)


def test_clustered_coverage_on_a_simulated_law() -> None:
    """Conversations share a quality level: the cluster-robust interval keeps its coverage, the naive one does not."""
    from raglab.stats import ppi_mean_clustered

    rng = np.random.default_rng(0)
    conversations, turns, reps = 300, 5, 300
    truth_mean = 0.5  # E[1{u + e > 1}] for u, e ~ U(0, 1)
    covered = covered_naive = 0
    for _ in range(reps):
        conv = np.repeat(np.arange(conversations), turns)
        y = ((rng.random(conversations)[conv] + rng.random(conv.size)) > 1).astype(float)
        judge = np.where(rng.random(conv.size) < 0.8, y, 1 - y)
        lab = rng.random(conv.size) < 0.15
        iv = ppi_mean_clustered(y[lab], judge[lab], judge[~lab], conv[lab], conv[~lab])
        naive = ppi_mean(y[lab], judge[lab], judge[~lab])
        covered += iv.low <= truth_mean <= iv.high
        covered_naive += naive.low <= truth_mean <= naive.high
    assert covered / reps >= 0.91  # nominal 95%; 300 reps give a Monte Carlo sd of about 1.3 points
    assert covered_naive < covered


def _paired_law(rng: np.random.Generator, n: int, rate: float, lift: float = 0.05) -> tuple[np.ndarray, ...]:
    """Two runs on the same questions; the candidate fixes some answers; a judge right 85% of the time."""
    base = (rng.random(n) < 0.7).astype(float)
    cand = np.where(rng.random(n) < lift / 0.3, 1.0, base)
    judge_b = np.where(rng.random(n) < 0.85, base, 1 - base)
    judge_c = np.where(rng.random(n) < 0.85, cand, 1 - cand)
    lab = rng.random(n) < rate
    return base, cand, judge_b, judge_c, lab


def test_paired_ppi_in_compare_equals_ppi_py_on_the_differences() -> None:
    from raglab.stats import compare
    from raglab.stats.estimators import PredictionPowered, interval_kind
    from raglab.stats.results import COMPARISON, check_declared

    rng = np.random.default_rng(4)
    base, cand, jb, jc, lab = _paired_law(rng, 1500, 0.15)
    labels = {"faithfulness": (np.where(lab, base, np.nan), np.where(lab, cand, np.nan))}
    table = compare({"faithfulness": jb, "hit@5": jb}, {"faithfulness": jc, "hit@5": jc}, labels=labels,
                    n_permutations=0, n_resamples=200)
    check_declared(table, COMPARISON)
    row = table.iloc[0]
    assert row.method == "paired prediction-powered (PPI++)" and interval_kind(row.method) is PredictionPowered.kind
    assert row.test == "normal (prediction-powered)"
    assert table.method[1] == "paired score (Tango)"  # no labels: the usual interval
    dy, df = (cand - base)[lab], (jc - jb)[lab]
    low, high = ppi_py.ppi_mean_ci(dy, df, (jc - jb)[~lab], alpha=0.05)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(dy, df, (jc - jb)[~lab]))[0])
    assert (row["diff"], row.low, row.high) == pytest.approx((point, float(low[0]), float(high[0])), abs=1e-10)
    assert table.attrs["raglab"]["comparison"]["n_labeled"] == {"faithfulness": {"overall": int(lab.sum())}}
    with pytest.raises(ValueError, match="method='ppi'"):
        compare({"a": jb, "b": jb}, {"a": jc, "b": jc}, labels={"a": labels["faithfulness"]}, method="ppi")


def test_paired_ppi_coverage_on_a_simulated_law() -> None:
    from raglab.stats import compare

    rng = np.random.default_rng(8)
    reps, covered, narrower = 150, 0, 0
    for _ in range(reps):
        base, cand, jb, jc, lab = _paired_law(rng, 800, 0.2)
        truth = 0.05  # P(the candidate fixes an answer) * P(it failed) = (0.05 / 0.3) * 0.3
        labels = {"faithfulness": (np.where(lab, base, np.nan), np.where(lab, cand, np.nan))}
        row = compare({"faithfulness": jb}, {"faithfulness": jc}, labels=labels, n_permutations=0,
                      n_resamples=50).iloc[0]
        covered += row.low <= truth <= row.high
        human = ppi_mean((cand - base)[lab], (jc - jb)[lab], (jc - jb)[~lab], lam=0)
        narrower += (row.high - row.low) < human.width
    assert covered / reps >= 0.9  # nominal 95%; Monte Carlo sd about 1.8 points at 150 reps
    assert narrower / reps >= 0.9  # the judge helps on almost every draw


def test_gate_reviews_paired_ppi_below_min_labels() -> None:
    import pandas as pd

    from raglab import runs

    rng = np.random.default_rng(2)
    n = 3000
    base, cand, jb, jc, _ = _paired_law(rng, n, 0.0, lift=0.1)
    q = [f"q{i}" for i in range(n)]
    for rate, decision in ((0.01, "review"), (0.2, "pass")):
        lab = rng.random(n) < rate
        b = pd.DataFrame({"question_id": q, "faithfulness": jb, "human": np.where(lab, base, np.nan)})
        c = pd.DataFrame({"question_id": q, "faithfulness": jc, "human": np.where(lab, cand, np.nan)})
        with pytest.warns(UserWarning, match="not a recorded random sample"):
            result = runs.gate(b, c, metrics=["faithfulness"], human={"faithfulness": "human"}, margin=0.05,
                               higher_is_better=True)
        assert result.decision == decision, result.table.reason.tolist()
        if decision == "review":
            assert f"below {MIN_LABELS} labels" in result.table.reason[0]


def test_ppi_interval_states_its_ingredients_and_pickles() -> None:
    import pickle

    rng = np.random.default_rng(1)
    iv = ppi_mean(rng.random(150), rng.random(150), rng.random(900), ci=0.9)
    back = pickle.loads(pickle.dumps(iv))
    assert tuple(back) == tuple(iv) and back.metadata() == iv.metadata()
    meta = iv.to_dict()
    assert meta["method"] == "prediction-powered (PPI++, plus-four, t)" and meta["level"] == 0.9
    assert meta["n"] == 1050 and meta["n_labeled"] == 150 and meta["n_unlabeled"] == 900
    assert {"lam", "effective_labels", "se"} <= set(meta)
    assert "lam=" in repr(iv)


def _adjusted_by_hand(y, f, fu, lam, level, w=None, wu=None):
    """The adjusted interval from its definition: four pseudo-rows in the rectifier's variance (ddof 1), t(n - 1)."""
    from scipy import stats

    n, big_n = y.size, fu.size
    w = np.ones(n) if w is None else w * n / w.sum()
    wu = np.ones(big_n) if wu is None else wu * big_n / wu.sum()
    est = np.mean(wu * lam * fu) + np.mean(w * (y - lam * f))
    py, pf = np.array([0.0, 1.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0, 1.0])
    rect = np.concatenate([w * (y - lam * f), py - lam * pf])  # pseudo-rows weigh the mean weight, 1
    se = np.sqrt(np.var(wu * lam * fu) / big_n + np.var(rect, ddof=1) / n)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * se
    return est, est - half, est + half


@pytest.mark.parametrize("weighted", [False, True])
def test_adjusted_interval_from_its_definition(weighted: bool) -> None:
    rng = np.random.default_rng(12)
    for t in range(30):
        n, big_n = int(rng.integers(5, 200)), int(rng.integers(10, 2000))
        y = (rng.random(n) < 0.9).astype(float)
        f = np.where(rng.random(n) < 0.8, y, 1 - y) if t % 2 else rng.random(n)
        fu = (rng.random(big_n) < 0.9).astype(float) if t % 2 else rng.random(big_n)
        w, wu = (rng.uniform(0.5, 4, n), rng.uniform(0.5, 4, big_n)) if weighted else (None, None)
        for lam in (0.0, 1.0, 0.6):
            iv = ppi_mean(y, f, fu, lam=lam, ci=0.9, weights=w, weights_unlabeled=wu)
            assert tuple(iv) == pytest.approx(_adjusted_by_hand(y, f, fu, lam, 0.9, w, wu), abs=1e-12)
        tuned = ppi_mean(y, f, fu, weights=w, weights_unlabeled=wu)
        wald = ppi_mean(y, f, fu, weights=w, weights_unlabeled=wu, interval="wald")
        assert tuned.lam == wald.lam and tuned.estimate == wald.estimate  # same PPI++ estimate and weight
        assert tuple(tuned) == pytest.approx(_adjusted_by_hand(y, f, fu, tuned.lam, 0.95, w, wu), abs=1e-12)


def test_adjusted_worked_numbers_and_limits() -> None:
    # 10 labels, all passing and the judge agreeing: Wald has zero width, the adjusted interval does not
    y = f = np.ones(10)
    fu = np.ones(90)
    wald = ppi_mean(y, f, fu, lam=1, interval="wald")
    assert wald.width == 0
    adj = ppi_mean(y, f, fu, lam=1)
    # rectifier y - f: ten 0s and pseudo 0, 0, 1, -1: sample variance 2/13; se sqrt(2/13/10); t(9) 97.5% 2.2621571628
    assert adj.high - adj.estimate == pytest.approx(2.2621571627982053 * np.sqrt(2 / 13 / 10), abs=1e-12)
    # many labels: the adjusted interval tends to PPI++'s (ppi_py's)
    rng = np.random.default_rng(0)
    truth = rng.random(60_000) < 0.8
    judge = np.where(rng.random(truth.size) < 0.85, truth, ~truth).astype(float)
    y = truth[:20_000].astype(float)
    a, w = ppi_mean(y, judge[:20_000], judge[20_000:]), ppi_mean(y, judge[:20_000], judge[20_000:], interval="wald")
    assert a.width / w.width == pytest.approx(1, abs=2e-3)
    # outside [0, 1] (differences): the Wald interval, and the method says so
    d = rng.integers(-1, 2, 50).astype(float)
    assert ppi_mean(d, d, rng.integers(-1, 2, 300)).method == "prediction-powered (PPI++)"
    assert ppi_mean(y[:50], judge[:50], judge[50:300], lam=0.5).method == (
        "prediction-powered (PPI, fixed lam, plus-four, t)")
    with pytest.raises(ValueError, match="interval must be one of"):
        ppi_mean(y[:50], judge[:50], judge[50:300], interval="score")


def test_adjusted_strata_and_clusters() -> None:
    from scipy import stats

    from raglab.stats import ppi_mean_clustered, ppi_mean_strata

    rng = np.random.default_rng(9)
    y = (rng.random(60) < 0.85).astype(float)
    f = np.where(rng.random(60) < 0.8, y, 1 - y)
    fu = (rng.random(600) < 0.85).astype(float)
    sl, su = np.repeat(["a", "b"], [40, 20]), np.repeat(["a", "b"], [400, 200])
    iv = ppi_mean_strata(y, f, fu, sl, su)
    assert iv.method == "prediction-powered (PPI++, plus-four, t), stratified"
    parts, est = [], 0.0
    for h, share in (("a", 440 / 660), ("b", 220 / 660)):
        one = ppi_mean(y[sl == h], f[sl == h], fu[su == h])
        est += share * one.estimate
        parts.append((share**2 * one.se**2, (sl == h).sum() - 1))
    var = sum(v for v, _ in parts)
    df = var**2 / sum(v * v / d for v, d in parts)  # Welch-Satterthwaite
    assert iv.estimate == pytest.approx(est, abs=1e-12)
    assert iv.high - iv.estimate == pytest.approx(stats.t.ppf(0.975, df) * np.sqrt(var), abs=1e-12)
    # clusters: t on labelled clusters - 1 df, and never narrower than the Wald cluster-robust interval
    conv_l, conv_u = np.arange(60) // 6, 10 + np.arange(600) // 6
    c_adj = ppi_mean_clustered(y, f, fu, conv_l, conv_u)
    c_wald = ppi_mean_clustered(y, f, fu, conv_l, conv_u, interval="wald")
    assert c_adj.method == "prediction-powered (PPI++, plus-four, t), clustered, max(CR1, jackknife) + lam-tuning variance"
    assert c_adj.estimate == c_wald.estimate and c_adj.lam == c_wald.lam
    ratio = (c_adj.high - c_adj.estimate) / c_adj.se
    assert ratio == pytest.approx(stats.t.ppf(0.975, 9), abs=1e-12)
    assert c_adj.width > c_wald.width


def test_adjusted_interval_covers_where_wald_does_not() -> None:
    """Rate 0.95, 50 labels, a judge right ~97% of the time: the Wald interval covers about 80%."""
    rng = np.random.default_rng(21)
    reps, n, rows = 400, 50, 2000
    cov_adj = cov_wald = 0
    for _ in range(reps):
        y = (rng.random(rows) < 0.95).astype(float)
        f = np.where(rng.random(rows) < 0.6, y, (rng.random(rows) < 0.975).astype(float))
        truth = y.mean()
        a = ppi_mean(y[:n], f[:n], f[n:])
        w = ppi_mean(y[:n], f[:n], f[n:], interval="wald")
        cov_adj += a.low <= truth <= a.high
        cov_wald += w.low <= truth <= w.high
    assert cov_adj / reps >= 0.92  # nominal 95%; Monte Carlo sd about 1.1 points
    assert cov_wald / reps < 0.88
