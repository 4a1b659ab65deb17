"""effective_labels: uniformly drawn labels, used alone, that would give the same variance (issue 21).

For a uniform draw it is labels x (human-only variance / PPI variance), as before; for other designs
the design's own gain (stratification) or cost (sharp active draws, whole conversations) is in it too,
so it can be read the same way whatever the draw.
"""

from __future__ import annotations

import numpy as np
import pytest

from raglab.stats import ppi_mean, ppi_mean_clustered, ppi_mean_sampled, ppi_mean_strata


def _weighted_var(y, w, pseudo):
    """The label variance by hand: weighted mean and variance, the four pseudo labels at the mean weight, ddof 1."""
    w = np.asarray(w, float) * len(y) / np.sum(w)
    if pseudo:
        y, w = np.r_[y, 0, 1, 1, 0], np.r_[w, 1, 1, 1, 1]
    m = np.sum(w * y) / np.sum(w)
    v = np.sum(w * (y - m) ** 2) / np.sum(w)
    return v * len(y) / (len(y) - 1) if pseudo else v


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(7)
    n = 6000
    stratum = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    truth = (rng.random(n) < np.select([stratum == "a", stratum == "b"], [0.92, 0.7], 0.4)).astype(float)
    judge = np.clip(np.where(rng.random(n) < 0.8, truth, 1 - truth) * 0.7 + 0.3 * rng.random(n), 0, 1)
    return stratum, truth, judge


def test_a_uniform_draw_keeps_the_ratio_of_variances(table):
    _, y, f = table
    for interval in ("adjusted", "wald"):
        ppi = ppi_mean(y[:300], f[:300], f[300:], interval=interval)
        human = ppi_mean(y[:300], f[:300], f[300:], lam=0, interval=interval)
        assert ppi.effective_labels == pytest.approx(300 * human.se**2 / ppi.se**2, rel=1e-12)
        assert human.effective_labels == pytest.approx(300, rel=1e-12)


def test_stratified_draws_count_the_design_s_gain(table):
    stratum, y, f = table
    rng = np.random.default_rng(1)
    take = np.zeros(y.size, bool)
    for h, k in (("a", 60), ("b", 90), ("c", 150)):  # far more labels in the small, uncertain strata
        take[rng.choice(np.flatnonzero(stratum == h), k, replace=False)] = True
    human = ppi_mean_strata(y[take], f[take], f[~take], stratum[take], stratum[~take], lam=0)
    shares = {h: (stratum == h).mean() for h in "abc"}
    w = np.array([shares[h] / take[stratum == h].sum() for h in stratum[take]])
    label_var = _weighted_var(y[take], w, pseudo=True)
    assert human.effective_labels == pytest.approx(label_var / human.se**2, rel=1e-12)
    ppi = ppi_mean_strata(y[take], f[take], f[~take], stratum[take], stratum[~take])
    assert ppi.effective_labels == pytest.approx(label_var / ppi.se**2, rel=1e-12)


def test_a_sharp_active_draw_is_charged_for_its_weights(table):
    _, y, f = table
    rng = np.random.default_rng(2)
    pi = np.where(np.abs(f - 0.5) < 0.15, 0.3, 0.01)  # most labels where the judge doubts, few elsewhere
    take = rng.random(y.size) < pi
    useless = rng.random(y.size)  # a judge independent of the truth: lam ~ 0
    iv = ppi_mean_sampled(y[take], useless[take], useless[~take], pi[take])
    label_var = _weighted_var(y[take], 1 / pi[take], pseudo=True)
    assert iv.effective_labels == pytest.approx(label_var / iv.se**2, rel=1e-12)
    # worth far fewer uniformly drawn labels than were drawn: the weights cost, the judge adds nothing
    assert iv.effective_labels < 0.5 * take.sum()


def test_whole_conversations_are_charged_for_their_correlation():
    rng = np.random.default_rng(3)
    conv = np.repeat(np.arange(400), 10)
    y = (rng.random(400)[conv] < 0.8).astype(float)  # every turn of a conversation alike
    f = np.clip(y + rng.normal(0, 0.8, y.size), 0, 1)
    lab = conv < 40
    iv = ppi_mean_clustered(y[lab], f[lab], f[~lab], conv[lab], conv[~lab], lam=0)
    assert iv.effective_labels < 0.2 * lab.sum()  # 400 labels from 40 conversations are worth about 40
