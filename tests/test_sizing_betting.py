"""Sizing rows the gate decides with the betting interval (continuous metrics on known bounds, issue 18).

Oracles: the real ``raglab.stats.intervals._betting_bounds`` and ``raglab.stats.gate`` in seeded
simulations (the model's pass probability against the share of samples the real interval passes), and
the asymptotic width ``sqrt(2 log(1/alpha)) sd / sqrt(n)`` of Waudby-Smith & Ramdas' fixed-n bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from raglab import sizing, stats
from raglab.sizing import _exact
from raglab.stats.intervals import _betting_bounds


def _zero_inflated(rng, n, sd, kept=0.6):
    """Differences in [-1, 1]: ``kept`` unchanged, the rest uniform, scaled to sd ``sd``."""
    half = sd * math.sqrt(3 / (1 - kept))
    return np.where(rng.random(n) < kept, 0.0, rng.uniform(-half, half, n))


@pytest.mark.parametrize("n, sd, margin", [(150, 0.2, 0.05), (250, 0.12, 0.03), (60, 0.3, 0.1)])
def test_pass_probability_matches_the_real_betting_interval(n, sd, margin):
    rng = np.random.default_rng(n)
    reps = 250
    passed = sum(_betting_bounds(_zero_inflated(rng, n, sd), -1.0, 1.0, 0.95, r)[0] >= -margin for r in range(reps))
    model = _exact.betting_pass_probability(n, sd, margin=margin, level=0.95)
    assert 0.15 < model < 0.95  # a point where the probability is informative
    assert abs(passed / reps - model) < 3 * math.sqrt(model * (1 - model) / reps) + 0.03


def test_large_n_width_is_wsr_asymptotic_one():
    # at large n the model's bound is mean - sqrt(2 log(1/alpha)) sd / sqrt(n): pass = Phi(margin sqrt(n)/sd - c)
    n, sd, margin = 200_000, 0.2, 0.0015
    c = math.sqrt(2 * math.log(1 / 0.025))
    model = _exact.betting_pass_probability(n, sd, margin=margin, level=0.95)
    assert model == pytest.approx(sps.norm.cdf(margin * math.sqrt(n) / sd - c), abs=0.01)
    # and wider than the bootstrap's 1.96: the betting row needs more questions
    boot = sps.norm.cdf(margin * math.sqrt(n) / sd - 1.96)
    assert model < boot - 0.1


def test_the_interval_follows_the_metric_and_is_stated():
    kw = dict(slices=2, power=0.8)
    recall = sizing.questions_for_release(0.02, sd_diff={"recall@5": 0.15}, **kw)
    latency = sizing.questions_for_release(0.02, sd_diff={"latency_s": 0.15}, **kw)
    asked = sizing.questions_for_release(0.02, sd_diff=0.15, interval="betting", **kw)
    boot = sizing.questions_for_release(0.02, sd_diff={"recall@5": 0.15}, interval="bootstrap", **kw)
    assert set(recall.rows["interval"]) == {"betting"} and set(latency.rows["interval"]) == {"bootstrap"}
    assert "registered in [0, 1]" in recall.assumptions["interval"]["recall@5"]
    assert "no known bounds" in latency.assumptions["interval"]["latency_s"]
    assert asked.n == recall.n and boot.n == latency.n and recall.n > 1.3 * latency.n
    # declared bounds: differences in [-30, 30] for a metric on [0, 30] (sd 3 is sd 0.1 on the [0, 1] scale)
    declared = sizing.questions_for_release(0.6, sd_diff={"latency_s": 3.0}, bounds={"latency_s": (0, 30)}, **kw)
    scaled = sizing.questions_for_release(0.02, sd_diff={"recall@5": 0.1}, **kw)
    assert declared.n == scaled.n and "declared bounds [0, 30]" in declared.assumptions["interval"]["latency_s"]
    # clustered questions: the gate resamples clusters, so the bootstrap model
    clustered = sizing.questions_for_release(0.02, sd_diff={"recall@5": 0.15}, icc=0.1, cluster_size=5, **kw)
    assert set(clustered.rows["interval"]) == {"cluster bootstrap"}
    with pytest.raises(ValueError, match="at most 1"):
        sizing.questions_for_release(0.02, sd_diff={"recall@5": 1.2})
    with pytest.raises(ValueError, match="not continuous"):
        sizing.questions_for_release(0.02, discordance={"hit@5": 0.1}, interval={"hit@5": "betting"})
    with pytest.raises(ValueError, match="low < high"):
        sizing.questions_for_release(0.6, sd_diff={"latency_s": 3.0}, bounds={"latency_s": (30, 0)})


@pytest.mark.slow
def test_release_passes_the_real_gate_as_promised():
    """A recall-like release of the returned n through the real gate (betting rows), K = 2."""
    sd, margin, k = math.sqrt(0.4 * 0.3**2 / 3), 0.05, 2
    result = sizing.questions_for_release(margin, sd_diff={"recall@5": sd}, slices=k, power=0.8)
    n = result.n
    assert set(result.rows["interval"]) == {"betting"}
    rng = np.random.default_rng(11)
    labels = np.repeat(["a", "b"], n // 2)
    labels = np.concatenate([labels, np.full(n - labels.size, None, dtype=object)])
    reps, passed = 120, 0
    for _ in range(reps):
        base = 0.3 + 0.4 * rng.random(n)
        cand = base + _zero_inflated(rng, n, sd)
        passed += stats.gate({"recall@5": base}, {"recall@5": cand}, margin, slices=labels,
                             n_permutations=500).decision == "pass"
    assert passed / reps >= result.pass_probability - 3 * math.sqrt(0.16 / reps)
    # the bootstrap's n, which the sizing gave such rows before, is well short of the asked 0.8
    short = sizing.questions_for_release(margin, sd_diff={"recall@5": sd}, slices=k, interval="bootstrap").n
    assert sizing.release_pass_probability(short, margin, sd_diff={"recall@5": sd}, slices=k).pass_probability < 0.5


def test_one_row_sizing_takes_the_betting_interval_when_asked():
    one = sizing.questions_for_gate(0.01, sd_diff=0.15, interval="betting")
    assert one == sizing.questions_for_release(0.01, sd_diff={"recall@5": 0.15}).n
    assert one > 1.5 * sizing.questions_for_gate(0.01, sd_diff=0.15)
    # declared bounds scale: sd 3 on [0, 30] at margin 0.3 is sd 0.1 at margin 0.01 on [0, 1]
    assert sizing.questions_for_gate(0.3, sd_diff=3.0, bounds=(0, 30)) == sizing.questions_for_gate(
        0.01, sd_diff=0.1, interval="betting")
    with pytest.raises(ValueError, match="Tango"):
        sizing.questions_for_gate(0.02, discordance=0.1, interval="betting")


def test_pilot_sizing_takes_the_interval_from_the_metric_and_declared_bounds():
    import pandas as pd

    import raglab  # noqa: F401  (df.rag)
    from raglab import runs

    rng = np.random.default_rng(2)
    n = 300
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "faithfulness": 0.3 + 0.4 * rng.random(n),
                         "latency_s": 1 + rng.random(n)})
    cand = base.assign(faithfulness=base["faithfulness"] + _zero_inflated(rng, n, 0.1),
                       latency_s=base["latency_s"] + rng.normal(0, 0.3, n))
    kw = dict(metric=["faithfulness", "latency_s"], margin={"faithfulness": 0.02, "latency_s": 0.1})
    plain = runs.size(base, cand, **kw)
    declared = runs.size(base, cand, bounds={"latency_s": (0, 30)}, **kw)
    assert plain.assumptions["interval"]["faithfulness"].startswith("betting")
    assert plain.assumptions["interval"]["latency_s"].startswith("bootstrap")
    assert declared.assumptions["interval"]["latency_s"] == "betting on the declared bounds [0, 30]"
    assert declared.n > plain.n
    assert base.rag.size(cand, bounds={"latency_s": (0, 30)}, **kw).n == declared.n
    with pytest.raises(ValueError, match="margin="):
        runs.size(base, cand, metric="latency_s", mde=0.1, bounds={"latency_s": (0, 30)})
