"""raglab.sizing.plan_labels against ppi_py (the test-only oracle), statsmodels and simulation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from raglab.sizing import LabelPlan, effective_labels, plan_labels

ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is the test oracle: pip install ppi-python")
from ppi_py.ppi_power_analysis import _get_costs  # noqa: E402

GRID = [(rho, gamma) for rho in (0.2, 0.45, 0.6, 0.75, 0.9) for gamma in (0.001, 0.01, 0.05, 0.2)]


def _same_split(ours: LabelPlan, theirs: dict) -> None:
    """Same labels as ppi_py (its continuous optimum, rounded), and both judge or both do not.

    The judged-only count is not compared row for row: the cost is flat in it near the optimum, so
    ppi_py's rounding of n moves its N by up to 20% at a cost difference under 0.5%.
    """
    assert (ours.n_judge == 0) == (theirs["N"] == 0), (ours, theirs)
    assert abs(ours.n_label - theirs["n"]) <= max(2, 0.02 * theirs["n"]), (ours.n_label, theirs)


def _rows_needed(n: int, target: float, rho: float) -> int:
    """The fewest judged-only rows that make n labels worth ``target`` (brute force)."""
    big_n = 0
    while effective_labels(n, big_n, rho) < target - 1e-9:
        big_n += 1
    return big_n


@pytest.mark.parametrize("rho, gamma", GRID)
@pytest.mark.parametrize("target", [150.0, 1067.07, 20_000.0])
def test_cheapest_plan_matches_ppi_power(rho, gamma, target):
    theirs = ppi_py.ppi_power(rho, cost_X=0.0, cost_Y=1.0, cost_Yhat=gamma, effective_n=target)
    ours = plan_labels(rho=rho, effective_n=target, cost_label=1.0, cost_judge=gamma)
    assert ours.effective_n >= target - 1e-9
    _same_split(ours, theirs)
    # ppi_py's continuous optimum costs target * min(PPI cost, classical cost) per effective label: a
    # lower bound that whole numbers reach within one label and a judged row or two
    _, ppi_cost, classical_cost = _get_costs(rho, 0.0, 1.0, gamma)
    bound = target * min(ppi_cost, classical_cost)
    assert bound - 1e-9 <= ours.cost <= bound + 1.0 + 2 * gamma, (ours.cost, bound)
    if theirs["N"]:  # ppi_py's labels, with the judged rows topped up to reach the target, are never cheaper
        topped = theirs["n"] * 1.0 + (theirs["n"] + _rows_needed(theirs["n"], target, rho)) * gamma
        assert ours.cost <= topped + 1e-9


@pytest.mark.parametrize("rho, gamma", GRID)
@pytest.mark.parametrize("budget", [200.0, 5_000.0])
def test_most_precise_plan_within_a_budget_matches_ppi_power(rho, gamma, budget):
    theirs = ppi_py.ppi_power(rho, cost_X=0.0, cost_Y=1.0, cost_Yhat=gamma, budget=budget)
    ours = plan_labels(rho=rho, budget=budget, cost_label=1.0, cost_judge=gamma)
    assert ours.cost <= budget + 1e-9  # ppi_py's rounded pair may overspend (by up to 0.45 here)
    _same_split(ours, theirs)
    assert abs(ours.effective_n - theirs["effective_n"]) <= 1 + 1e-3 * theirs["effective_n"]  # theirs is rounded
    if theirs["N"]:  # ppi_py's labels with the judged rows the budget really affords are never worth more
        fits = math.floor((budget - theirs["n"] * (1.0 + gamma)) / gamma + 1e-9)
        assert ours.effective_n >= effective_labels(theirs["n"], fits, rho) - 1e-9


def test_cost_of_producing_a_row_is_ppi_pys_cost_x():
    theirs = ppi_py.ppi_power(0.7, cost_X=0.05, cost_Y=2.0, cost_Yhat=0.02, effective_n=800)
    ours = plan_labels(rho=0.7, effective_n=800, cost_label=2.0, cost_judge=0.02, cost_row=0.05)
    _same_split(ours, theirs)
    assert ours.cost == pytest.approx(theirs["cost"], rel=5e-3)
    assert ours.human_only_cost == pytest.approx(800 * 2.05)


@pytest.mark.parametrize("n_max", [3_000, 1_500])
def test_rows_available_matches_ppi_pys_n_max(n_max):
    theirs = ppi_py.ppi_power(0.8, cost_X=0.0, cost_Y=1.0, cost_Yhat=0.01, effective_n=1000, n_max=n_max)
    ours = plan_labels(rho=0.8, effective_n=1000, cost_label=1.0, cost_judge=0.01, rows_available=n_max)
    assert ours.n_judge <= n_max and ours.effective_n >= 1000 - 1e-9
    _same_split(ours, theirs)
    assert ours.cost == pytest.approx(theirs["cost"], rel=5e-3)


def test_a_target_beyond_the_rows_available_is_refused():
    with pytest.raises(ValueError, match="more than the 900 rows available"):
        plan_labels(rho=0.8, effective_n=1000, cost_label=1.0, cost_judge=0.01, rows_available=900)


def test_pilot_labels_and_scores_match_ppi_mean_power():
    rng = np.random.default_rng(3)
    z = rng.normal(size=300)
    labels = (z + rng.normal(size=300) > 0).astype(float)
    scores = 1 / (1 + np.exp(-1.5 * z))
    theirs = ppi_py.ppi_mean_power(labels, scores, cost_Y=1.0, cost_Yhat=0.02, effective_n=600)
    ours = plan_labels(labels=labels, scores=scores, effective_n=600, cost_label=1.0, cost_judge=0.02)
    assert ours.rho == pytest.approx(theirs["ppi_corr"], abs=1e-12)
    assert ours.sd == pytest.approx(labels.std(ddof=1))
    _same_split(ours, theirs)
    assert ours.cost == pytest.approx(theirs["cost"], rel=5e-3)
    # the PPI++ weight at the plan: cov / ((1 + n/N) var f)
    slope = np.cov(labels, scores, ddof=0)[0, 1] / scores.var()
    assert ours.lam == pytest.approx(slope / (1 + ours.n_label / ours.n_judge_only))


def test_effective_labels_is_the_variance_of_the_optimal_ppi_mean():
    """Var* = [var Y - 2 lam cov + lam^2 (1 + n/N) var f] / n at lam* equals var Y / n_eff."""
    var_y, var_f, cov = 0.25, 0.09, 0.081  # rho = 0.54
    rho = cov / math.sqrt(var_y * var_f)
    for n, big_n in [(100, 1000), (200, 20_000), (500, 500)]:
        lam = cov / ((1 + n / big_n) * var_f)
        variance = (var_y - 2 * lam * cov + lam**2 * (1 + n / big_n) * var_f) / n
        weights = np.linspace(0, 1.5, 30_001)
        brute = ((var_y - 2 * weights * cov + weights**2 * (1 + n / big_n) * var_f) / n).min()
        assert variance == pytest.approx(brute, rel=1e-6)
        assert var_y / effective_labels(n, big_n, rho) == pytest.approx(variance, rel=1e-12)


def test_planned_half_width_is_what_ppi_mean_ci_delivers():
    """Simulate the planned sizes; ppi_py's PPI++ interval has the planned half-width (the oracle of the variance)."""
    rho, target = 0.7, 0.05
    plan = plan_labels(rho=rho, sd=1.0, half_width=target, cost_label=1.0, cost_judge=0.01)
    assert plan.half_width <= target + 1e-12
    widths = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        z = rng.normal(size=plan.n_judge)
        y = rho * z + math.sqrt(1 - rho**2) * rng.normal(size=plan.n_judge)
        n = plan.n_label
        low, high = ppi_py.ppi_mean_ci(y[:n], z[:n], z[n:], alpha=0.05)
        widths.append((float(np.ravel(high)[0]) - float(np.ravel(low)[0])) / 2)
    assert np.mean(widths) == pytest.approx(plan.half_width, rel=0.02), (np.mean(widths), plan.half_width)


def test_half_width_worked_numbers():
    plan = plan_labels(rho=0.0, p=0.5, half_width=0.03, cost_label=1.0, cost_judge=0.01)
    assert plan.human_only_labels == math.ceil((stats.norm.ppf(0.975) * 0.5 / 0.03) ** 2) == 1068
    assert (plan.n_label, plan.n_judge, plan.saving, plan.labels_factor) == (1068, 0, 1.0, 1.0)  # useless judge


def test_power_target_matches_statsmodels():
    from statsmodels.stats.power import NormalIndPower

    n = NormalIndPower().solve_power(effect_size=0.05 / 0.4, alpha=0.05, power=0.9, ratio=0)
    plan = plan_labels(rho=0.5, sd=0.4, effect=0.05, power=0.9, cost_label=1.0, cost_judge=0.01)
    assert plan.details["target_effective_n"] == pytest.approx(n, rel=1e-6)
    assert plan.human_only_labels == math.ceil(n)


def test_an_expensive_or_negative_judge_means_label_only():
    assert plan_labels(rho=0.6, effective_n=500, cost_label=1.0, cost_judge=0.5).n_judge == 0
    assert plan_labels(rho=-0.8, effective_n=500, cost_label=1.0, cost_judge=0.01).n_judge == 0


def test_the_ceiling_is_always_stated():
    modest = plan_labels(rho=0.6, effective_n=1000, cost_label=1.0, cost_judge=0.001)
    strong = plan_labels(rho=0.9, effective_n=1000, cost_label=1.0, cost_judge=0.001)
    for plan in (modest, strong):
        assert "Dorner et al. (ICLR 2025)" in repr(plan) and "2x" in plan.ceiling
        assert plan.labels_factor <= 1 / (1 - plan.rho**2) + 1e-9
    assert not modest.above_ceiling and "EXCEEDS" not in repr(modest)
    assert strong.above_ceiling and "EXCEEDS" in repr(strong)
    assert strong.to_frame().loc[0, "above_ceiling"]


def test_rho_of_one_over_root_two_is_the_ceiling():
    """1 / (1 - rho^2) = 2 at rho^2 = 1/2: even unlimited free judging cannot pass 2x."""
    plan = plan_labels(rho=math.sqrt(0.5) - 1e-9, budget=100.0, cost_label=1.0, cost_judge=0.0,
                       rows_available=10_000_000)
    assert 1.99 < plan.labels_factor <= 2.0 and not plan.above_ceiling


def test_a_budget_too_small_for_the_target():
    plan = plan_labels(rho=0.6, effective_n=1000, budget=300.0, cost_label=1.0, cost_judge=0.01)
    assert not plan.details["meets_target"] and plan.cost <= 300 and "NOT met" in repr(plan)
    assert plan.details["mode"] == "budget"
    fits = plan_labels(rho=0.6, effective_n=200, budget=300.0, cost_label=1.0, cost_judge=0.01)
    assert fits.details["meets_target"] and fits.effective_n >= 200


def test_to_frame_and_html():
    plan = plan_labels(rho=0.6, sd=0.5, half_width=0.03, cost_label=1.0, cost_judge=0.01)
    frame = plan.to_frame()
    assert frame.shape[0] == 1
    assert {"n_label", "n_judge", "effective_n", "cost", "saving", "half_width", "ceiling"} <= set(frame.columns)
    assert "<table>" in plan._repr_html_()


@pytest.mark.parametrize("kwargs, match", [
    (dict(rho=0.5, cost_label=1.0, cost_judge=0.01), "give a target"),
    (dict(rho=1.0, effective_n=10, cost_label=1.0, cost_judge=0.01), "strictly between -1 and 1"),
    (dict(effective_n=10, cost_label=1.0, cost_judge=0.01), "give rho="),
    (dict(rho=0.5, half_width=0.1, cost_label=1.0, cost_judge=0.01), "needs the labels' spread"),
    (dict(rho=0.5, half_width=0.1, effective_n=5, sd=1.0, cost_label=1.0, cost_judge=0.01), "give one target"),
    (dict(rho=0.5, effective_n=10, cost_label=0.0, cost_judge=0.01), "cost_label=0.0 must be > 0"),
    (dict(rho=0.5, effective_n=10, cost_label=1.0, cost_judge=-1), "cost_judge=-1"),
    (dict(rho=0.5, budget=0.5, cost_label=1.0, cost_judge=0.01), "buys no label"),
    (dict(rho=0.5, budget=50.0, cost_label=1.0, cost_judge=0.0), "give rows_available="),
    (dict(labels=[1, 0, 1], effective_n=10, cost_label=1.0, cost_judge=0.01), "labels= and scores= together"),
    (dict(labels=[1, 1, 1, 1], scores=[0.2, 0.4, 0.1, 0.9], effective_n=10, cost_label=1.0, cost_judge=0.01),
     "labels are all equal"),
    (dict(rho=0.5, p=1.2, effective_n=10, cost_label=1.0, cost_judge=0.01), "p=1.2"),
])
def test_clear_errors(kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            plan_labels(**kwargs)
