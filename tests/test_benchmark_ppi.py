"""Smoke and oracle tests for benchmarks/ppi.py (the PPI++ coverage simulation of issue 21).

The benchmark's vectorised intervals are checked against ``ppi_py`` (a test-only oracle) and worked
numbers; its core runs on a tiny grid so that a broken data-generating process or estimator fails
here rather than in a long benchmark run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_ppi", REPO / "benchmarks" / "ppi.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_ppi"] = module  # dataclasses look their module up while the file loads
    spec.loader.exec_module(module)
    return module


def test_vectorised_ppi_equals_ppi_py(bench):
    ppi_py = bench.import_ppi_py()
    if ppi_py is None:
        pytest.skip("ppi-python is not installed (the test-only oracle: pip install ppi-python)")
    rng = np.random.default_rng(3)
    y = (rng.random((5, 60)) < 0.7).astype(float)
    s = np.clip(0.6 * y + 0.4 * rng.random((5, 60)), 0, 1)
    yu = rng.random((5, 900))
    for lam in (None, 0.0, 1.0, 0.4):
        vec = bench.ppi_vec(y, s, yu, lam=lam)
        for d in range(5):
            lo, hi = ppi_py.ppi_mean_ci(y[d], s[d], yu[d], alpha=0.05, lam=lam)
            assert float(np.ravel(lo)[0]) == pytest.approx(vec.low[d], abs=1e-12)
            assert float(np.ravel(hi)[0]) == pytest.approx(vec.high[d], abs=1e-12)


def test_human_only_is_the_wald_interval(bench):
    y = np.array([[1.0, 0.0, 1.0, 1.0]])
    fit = bench.ppi_vec(y, np.zeros_like(y), np.zeros((1, 10)), lam=0.0)
    assert fit.est[0] == pytest.approx(0.75)
    assert fit.se[0] == pytest.approx(np.sqrt(0.1875 / 4))
    human = bench.human_vec(y)
    assert human.low[0] == pytest.approx(fit.low[0]) and human.high[0] == pytest.approx(fit.high[0])


@pytest.mark.parametrize("kappa", [0.2, 0.6, 0.9])
@pytest.mark.parametrize("p", [0.5, 0.95])
def test_judge_reaches_the_kappa_asked_for(bench, kappa, p):
    q = bench.lenient(p)
    copy = bench.copy_for_kappa(kappa, p, q)
    assert bench.kappa_of(copy, p, q) == pytest.approx(kappa, abs=1e-9)
    # and the simulated judge has that kappa (sklearn-free Cohen's kappa on a large table)
    y, yh = bench.binary_table(np.random.default_rng(0), 1, 400_000, p, kappa)
    po = (y == yh).mean()
    pe = y.mean() * yh.mean() + (1 - y.mean()) * (1 - yh.mean())
    assert (po - pe) / (1 - pe) == pytest.approx(kappa, abs=0.02)


def test_uniform_cell_covers_and_gains(bench):
    cell = bench.uniform_cell(np.random.default_rng(1), 600, 0.7, 0.9, 200)
    assert 0.92 <= cell["cov"] <= 1.0
    assert cell["width"] < 0.7 * cell["width_h"]  # a good judge narrows the interval
    assert cell["eff"] > 200


def test_useless_judge_is_not_wider(bench):
    cell = bench.uniform_cell(np.random.default_rng(2), 400, 0.7, 0.0, 100)
    ratio = cell["ratio"][np.isfinite(cell["ratio"])]
    assert ratio.mean() <= 1 + 3 * ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert cell["lam"] < 0.2


def test_cluster_interval_with_single_row_clusters_is_the_row_interval(bench):
    rng = np.random.default_rng(4)
    y = (rng.random((3, 400)) < 0.8).astype(float)
    yh = np.where(rng.random((3, 400)) < 0.7, y, 1.0)
    starts = np.arange(400)
    labelled = np.zeros((3, 400), bool)
    labelled[:, :100] = True
    for lam in (0.0, 0.5, 1.0):
        clus = bench.ppi_cluster_vec(y, yh, starts, labelled, lam=lam)
        rows = bench.ppi_vec(y[:, :100], yh[:, :100], yh[:, 100:], lam=lam)
        np.testing.assert_allclose(clus.est, rows.est, atol=1e-12)
        np.testing.assert_allclose(clus.se, rows.se, rtol=0.02)  # ddof 1 against ddof 0


def test_horvitz_thompson_estimate_is_unbiased(bench):
    rng = np.random.default_rng(5)
    y = (rng.random((4000, 500)) < 0.75).astype(float)
    s = np.clip(0.5 * y + 0.5 * rng.random(y.shape), 0.01, 0.99)
    pi = bench.inclusion(s, 50, "active")
    assert np.allclose(pi.sum(1), 50) and pi.max() <= 1 and pi.min() >= 0.1 * 50 / 500 * 0.999
    xi = (rng.random(y.shape) < pi).astype(float)
    fit = bench.active_vec(y, s, pi, xi, lam=0.5)
    err = fit.est - y.mean(1)
    assert abs(err.mean()) < 4 * err.std() / np.sqrt(err.size)


def test_quick_run_prints_tables(bench, capsys):
    bench.main(["--quick", "--reps", "40", "--draws", "20", "--parts", "23589"])
    out = capsys.readouterr().out
    for title in ("useless judge", "Stratified", "Paired", "2x ceiling", "Diagnostic", "Claims"):
        assert title in out
    ratio = float(out.split("measured ratio ")[1].split()[0])
    assert 1.0 < ratio <= 2.0


def test_adjusted_vectorised_equals_raglab(bench):
    """The benchmark's adjusted intervals are raglab's defaults (ppi_mean, ppi_mean_strata), seed by seed."""
    from raglab.stats import ppi_mean, ppi_mean_strata

    rng = np.random.default_rng(6)
    y, yh = bench.binary_table(rng, 4, 700, 0.9, 0.5)
    for lam in (None, 0.0, 0.7):
        vec = bench.ppi_vec(y[:, :60], yh[:, :60], yh[:, 60:], lam=lam, interval="adjusted")
        for d in range(4):
            iv = ppi_mean(y[d, :60], yh[d, :60], yh[d, 60:], lam=lam)
            assert (iv.low, iv.high) == pytest.approx((vec.low[d], vec.high[d]), abs=1e-12)
    human = bench.human_vec(y[:, :60], interval="adjusted")
    iv = ppi_mean(y[0, :60], yh[0, :60], yh[0, 60:], lam=0.0)
    assert (iv.low, iv.high) == pytest.approx((human.low[0], human.high[0]), abs=1e-12)
    parts = [(y[:, :30], yh[:, :30], yh[:, 30:400]), (y[:, 400:420], yh[:, 400:420], yh[:, 420:])]
    shares = np.array([400, 300]) / 700
    vec = bench.ppi_strata_vec(parts, shares, interval="adjusted")
    codes_l, codes_u = np.repeat([0, 1], [30, 20]), np.repeat([0, 1], [370, 280])
    for d in range(4):
        iv = ppi_mean_strata(np.r_[parts[0][0][d], parts[1][0][d]], np.r_[parts[0][1][d], parts[1][1][d]],
                             np.r_[parts[0][2][d], parts[1][2][d]], codes_l, codes_u)
        assert (iv.low, iv.high) == pytest.approx((vec.low[d], vec.high[d]), abs=1e-12)


def test_wilson_reference_interval(bench):
    from statsmodels.stats.proportion import proportion_confint

    y = np.r_[np.ones(47), np.zeros(3)][None, :]
    lo, hi = bench.wilson_vec(y)
    ref = proportion_confint(47, 50, alpha=0.05, method="wilson")
    assert (lo[0], hi[0]) == pytest.approx(ref, abs=1e-12)
