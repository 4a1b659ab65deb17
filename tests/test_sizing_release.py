"""Sizing the release (issue 18, section 2): every gate row, the exact tests compare and the gate run, clusters.

Oracles: the real ``raglab.stats.compare`` / ``gate_comparison`` on every possible count (exact enumeration,
small n), a seeded Monte Carlo through the real gate, statsmodels' exact McNemar, and the Kish design effect
against a simulated cluster-robust variance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from raglab import runs, sizing, stats
from raglab.cli import main
from raglab.sizing import _exact
from raglab.sizing.release import _cluster_design_effect

# ---- the exact row probabilities are the real gate's, count by count ------------------------------------


def _every_count(n, p_down, p_up, margin, level=0.95):
    """Pass, block and McNemar-reject probabilities by gating every (down, up) count with the real functions."""
    counts, weights = [], []
    for down in range(n + 1):
        for up in range(n + 1 - down):
            counts.append((down, up))
            weights.append(sps.multinomial.pmf([down, up, n - down - up], n, [p_down, p_up, 1 - p_down - p_up]))
    base, cand, labels = [], [], []
    for i, (down, up) in enumerate(counts):
        rest = n - down - up
        base += [1.0] * down + [0.0] * up + [1.0] * rest
        cand += [0.0] * down + [1.0] * up + [1.0] * rest
        labels += [f"c{i}"] * n
    table = stats.compare({"m": np.array(base)}, {"m": np.array(cand)}, slices=np.array(labels), ci=level)
    table = table[table["slice"] != "overall"]
    gated = stats.gate_comparison(table, margin, higher_is_better=True, adjust=None).table
    w = np.array(weights)[gated["slice"].str[1:].astype(int).to_numpy()]
    return (w[(gated["decision"] == "pass").to_numpy()].sum(), w[(gated["decision"] == "block").to_numpy()].sum(),
            w[(gated["p_value"] < 0.05).to_numpy()].sum())


@pytest.mark.parametrize("n,p_down,p_up,margin", [(12, 0.1, 0.05, 0.3), (20, 0.15, 0.05, 0.2), (25, 0.05, 0.05, 0.15),
                                                  (30, 0.2, 0.02, 0.1), (9, 0.1, 0.1, 0.5)])
def test_exact_row_probabilities_are_the_real_gates(n, p_down, p_up, margin):
    passed, blocked, rejected = _every_count(n, p_down, p_up, margin)
    assert _exact.tango_pass_probability(n, p_down, p_up, margin=margin) == pytest.approx(passed, abs=1e-12)
    assert _exact.tango_block_probability(n, p_down, p_up) == pytest.approx(blocked, abs=1e-12)
    assert _exact.mcnemar_power(n, p_down, p_up) == pytest.approx(rejected, abs=1e-12)


def test_the_pass_rule_is_monotone_so_the_product_is_a_lower_bound():
    # Harris' inequality needs each row's pass event to be increasing in every question's difference:
    # one more fail -> pass, or one fewer pass -> fail, never turns a pass into a fail.
    from raglab.stats.intervals import _tango_statistic

    for n in (10, 31, 200):
        down, up = np.meshgrid(np.arange(n + 1.0), np.arange(n + 1.0), indexing="ij")
        t = _tango_statistic(np.full(down.shape, -0.05), down, up, np.full(down.shape, float(n)))
        t = np.where(down + up <= n, t, np.nan)
        assert not (np.diff(t, axis=1) < -1e-12).any() and not (np.diff(t, axis=0) > 1e-12).any()


def test_exact_mcnemar_power_matches_statsmodels_one_count_at_a_time():
    from statsmodels.stats.contingency_tables import mcnemar

    n, p_down, p_up = 40, 0.2, 0.05
    total = 0.0
    for down in range(n + 1):
        for up in range(n + 1 - down):
            if down + up and mcnemar([[0, down], [up, 0]], exact=True).pvalue < 0.05:
                total += sps.multinomial.pmf([down, up, n - down - up], n, [p_down, p_up, 1 - p_down - p_up])
    assert sizing.power(n, 0.15, paired=True, discordance=0.25) == pytest.approx(total, abs=1e-12)


# ---- the release: every row must pass ------------------------------------------------------------------


def test_issue_figures_one_row_sizing_fails_the_release():
    # issue 18: at questions_for_gate(slice_fraction=1/K) an unchanged release with K equal slices passes far
    # less often than 0.80; a 2,000-question run passes 97-98% only at discordance 0.05.
    for k, low, high in ((2, 0.55, 0.70), (4, 0.30, 0.45), (8, 0.08, 0.22)):
        n = sizing.questions_for_gate(0.02, discordance=0.1, slice_fraction=1 / k)
        p = sizing.release_pass_probability(n, 0.02, discordance=0.1, slices=k).pass_probability
        assert low < p < high, (k, p)
    one = [sizing.release_pass_probability(2000, 0.02, discordance=q).pass_probability for q in (0.05, 0.1, 0.2)]
    assert 0.97 < one[0] < 0.98 and 0.79 < one[1] < 0.81 and 0.50 < one[2] < 0.53
    assert sizing.release_pass_probability(2000, 0.02, discordance=0.1, slices=4).pass_probability < 0.01


def test_release_n_is_the_smallest_that_reaches_the_asked_probability():
    r = sizing.questions_for_release(0.02, discordance={"hit@5": 0.1}, slices=4)
    assert r.pass_probability >= 0.8
    before = sizing.release_pass_probability(r.n - 1, 0.02, discordance={"hit@5": 0.1}, slices=4)
    assert before.pass_probability < 0.8
    rows = r.rows
    assert rows["slice"].tolist() == ["overall", "slice 1", "slice 2", "slice 3", "slice 4"]
    assert rows["n"].tolist() == [r.n] + [r.n // 4] * 4
    # the release probability is the product of the rows' (a lower bound): each slice needs about 0.8^(1/4)
    assert r.pass_probability == pytest.approx(float(np.prod(rows["p_pass"])))
    assert (rows["p_pass"].iloc[1:] > 0.8 ** 0.25 - 1e-9).all()
    assert r.n > sizing.questions_for_gate(0.02, discordance=0.1, slice_fraction=0.25)
    assert "ReleaseSizing" in repr(r) and "<table" in r._repr_html_() and r.to_dict()["n"] == r.n


@pytest.mark.slow
def test_release_pass_probability_in_a_seeded_simulation_through_the_real_gate():
    # A small fast configuration: margin 0.1, discordance 0.2, 3 equal slices; 400 unchanged releases gated by
    # raglab.stats.gate. The sized n must pass at least the asked 0.8 (Monte Carlo sd 0.023) and the one-row n
    # (questions_for_gate with slice_fraction=1/3) visibly less (about 0.5).
    margin, q, k = 0.1, 0.2, 3
    n = sizing.questions_for_release(margin, discordance=q, slices=k).n
    row_n = sizing.questions_for_gate(margin, discordance=q, slice_fraction=1 / k)
    rng = np.random.default_rng(18)

    def rate(size, reps):
        labels = np.repeat(np.arange(k), size // k + 1)[:size]
        passed = 0
        for _ in range(reps):
            u = rng.random(size)
            base = np.where(u < q / 2, 1.0, np.where(u < q, 0.0, (rng.random(size) < 0.7).astype(float)))
            cand = np.where(u < q / 2, 0.0, np.where(u < q, 1.0, base))
            passed += stats.gate({"m": base}, {"m": cand}, margin, higher_is_better=True, slices=labels).decision == "pass"
        return passed / reps

    assert rate(n, 300) >= 0.8 - 2 * 0.023
    assert rate(row_n, 150) < 0.7


def test_power_to_block_is_a_lower_bound_on_the_real_gates_block_rate():
    # family 1 (one metric, no slices): exact; with slices the Bonferroni bound sits below the real Holm gate.
    n = 600
    one = sizing.release_pass_probability(n, 0.05, discordance=0.2, drop=0.05)
    exact = _exact.tango_block_probability(n, 0.125, 0.075)
    assert one.power_to_block["pass/fail"] == pytest.approx(exact)
    sliced = sizing.release_pass_probability(n, 0.05, discordance=0.2, slices=2, drop=0.05)
    assert sliced.power_to_block["pass/fail"] < exact
    rng = np.random.default_rng(5)
    labels = np.repeat(["a", "b"], n // 2)
    blocked = 0
    for _ in range(300):
        u = rng.random(n)
        base = np.where(u < 0.125, 1.0, np.where(u < 0.2, 0.0, 1.0))
        cand = np.where(u < 0.125, 0.0, np.where(u < 0.2, 1.0, 1.0))
        blocked += stats.gate({"m": base}, {"m": cand}, 0.05, higher_is_better=True, slices=labels).decision == "block"
    assert blocked / 300 >= sliced.power_to_block["pass/fail"] - 2 * math.sqrt(0.25 / 300)


def test_several_metrics_and_unequal_slices():
    r = sizing.questions_for_release({"hit@5": 0.02, "faithfulness": 0.03}, discordance={"hit@5": 0.1},
                                     sd_diff={"faithfulness": 0.25}, slices={"why": 0.1, "what": 0.9},
                                     interval={"faithfulness": "bootstrap"})
    assert set(r.rows["metric"]) == {"hit@5", "faithfulness"} and len(r.rows) == 6
    why = r.rows[(r.rows["slice"] == "why")]
    assert (why["n"] == math.floor(0.1 * r.n)).all()
    # the rare slice drives the size: at least what the why-slice row alone needs for its share of 0.8
    assert r.n > sizing.questions_for_release(0.02, discordance=0.1, slices=[0.9]).n
    # continuous rows decided by the bootstrap: the normal approximation with the expanded (t) critical value
    row = r.rows[(r.rows["metric"] == "faithfulness") & (r.rows["slice"] == "overall")].iloc[0]
    c = sps.t.isf(0.025, r.n - 1) * math.sqrt(r.n / (r.n - 1))
    assert row["p_pass"] == pytest.approx(sps.norm.cdf(0.03 * math.sqrt(r.n) / 0.25 - c))


def _label_cells(p, q, change, se, sp):
    """The judge's (pass -> fail, fail -> pass) label probabilities, by brute force over true and labelled outcomes."""
    true = {(1, 1): p - (q - change) / 2, (1, 0): (q - change) / 2, (0, 1): (q + change) / 2,
            (0, 0): 1 - p - (q + change) / 2}
    passes = {1: se, 0: 1 - sp}
    down = up = 0.0
    for (tb, tc), w in true.items():
        for lb in (0, 1):
            for lc in (0, 1):
                prob = w * (passes[tb] if lb else 1 - passes[tb]) * (passes[tc] if lc else 1 - passes[tc])
                down += prob if (lb, lc) == (1, 0) else 0.0
                up += prob if (lb, lc) == (0, 1) else 0.0
    return down, up


def test_release_with_a_judge_sizes_the_labels():
    judge = dict(p=0.7, sensitivity=0.943, specificity=0.635)
    one = sizing.questions_for_release(0.02, discordance=0.1, **judge)
    assert one.n == sizing.questions_for_gate(0.02, discordance=0.1, **judge)  # one row: the same sizing
    down, up = _label_cells(0.7, 0.1, 0.0, 0.943, 0.635)
    assert one.rows["discordance"].iloc[0] == pytest.approx(down + up)
    r = sizing.release_pass_probability(3000, 0.03, discordance=0.1, slices=2, drop=0.05, **judge)
    down, up = _label_cells(0.7, 0.1, -0.05, 0.943, 0.635)
    assert r.power_to_block["pass/fail"] == pytest.approx(_exact.tango_block_probability(3000, down, up, family=3))
    assert r.assumptions["judge"].startswith("pass/fail rows on a judge's labels")
    with pytest.raises(ValueError, match="need `p`"):
        sizing.questions_for_release(0.02, discordance=0.1, sensitivity=0.9, specificity=0.9)
    with pytest.raises(ValueError, match="impossible"):
        sizing.questions_for_release(0.02, discordance=0.1, drop=0.1, p=0.05, sensitivity=0.9, specificity=0.9)


def test_release_inputs_are_validated():
    with pytest.raises(ValueError, match="needs, per metric"):
        sizing.questions_for_release(0.02)
    with pytest.raises(ValueError, match="no margin for 'b'"):
        sizing.questions_for_release({"a": 0.02}, discordance={"a": 0.1, "b": 0.1})
    with pytest.raises(ValueError, match="sum to 1.2"):
        sizing.questions_for_release(0.02, discordance=0.1, slices=[0.6, 0.6])
    with pytest.raises(ValueError, match="at most the discordance"):
        sizing.questions_for_release(0.02, discordance=0.1, drop=0.2)
    with pytest.raises(ValueError, match="both a discordance"):
        sizing.questions_for_release(0.02, discordance={"a": 0.1}, sd_diff={"a": 0.2})
    with pytest.raises(ValueError, match="`icc` needs `cluster_size`"):
        sizing.questions_for_release(0.02, discordance=0.1, icc=0.1)
    with pytest.raises(ValueError, match="design_effect"):
        sizing.questions_for_release(0.02, discordance=0.1, design_effect=0.5)
    with pytest.raises(TypeError, match="slices"):
        sizing.questions_for_release(0.02, discordance=0.1, slices="four")


# ---- clusters ----------------------------------------------------------------------------------------------


def test_design_effect_inflates_n_and_icc_is_kish():
    plain = sizing.questions_needed(0.05, sd_diff=0.3)
    assert sizing.questions_needed(0.05, sd_diff=0.3, design_effect=2.0) == pytest.approx(2 * plain, abs=2)
    assert sizing.questions_needed(0.05, sd_diff=0.3, icc=0.1, cluster_size=11) == sizing.questions_needed(
        0.05, sd_diff=0.3, design_effect=2.0)
    assert sizing.power(2 * plain, 0.05, sd_diff=0.3, design_effect=2.0) == pytest.approx(
        sizing.power(plain, 0.05, sd_diff=0.3), abs=1e-12)
    clustered = sizing.questions_for_release(0.05, sd_diff=0.3, slices=2, icc=0.2, cluster_size=6)
    assert clustered.n > 1.9 * sizing.questions_for_release(0.05, sd_diff=0.3, slices=2).n
    with pytest.raises(ValueError, match="cluster_size"):
        sizing.questions_needed(0.05, sd_diff=0.3, cluster_size=5)


def test_pilot_design_effect_estimates_kish_in_simulation():
    # clusters of 8 questions with an ICC of 0.25 in the differences: design effect 1 + 7 x 0.25 = 2.75
    rng = np.random.default_rng(3)
    estimates = []
    for _ in range(40):
        shared = np.repeat(rng.normal(0, math.sqrt(0.25), 250), 8)
        diff = shared + rng.normal(0, math.sqrt(0.75), 2000)
        estimates.append(_cluster_design_effect(diff, np.repeat(np.arange(250), 8)))
    assert np.mean(estimates) == pytest.approx(2.75, rel=0.08)
    assert _cluster_design_effect(rng.normal(size=2000), np.repeat(np.arange(250), 8)) < 1.3


def _clustered_pilot(seed=0, n=600, size=6):
    rng = np.random.default_rng(seed)
    conv = np.repeat(np.arange(n // size), size)
    base = (rng.random(n) < 0.7).astype(float)
    # each conversation churns at its own rate and mostly one way (better or worse): clustered differences
    flip = rng.random(n) < np.repeat(rng.uniform(0.0, 0.4, n // size), size)
    target = np.repeat((rng.random(n // size) < 0.5).astype(float), size)
    cand = np.where(flip, target, base)
    ids = [f"q{i}" for i in range(n)]
    qtype = np.where(np.arange(n) % 3 == 0, "why", "what")
    b = pd.DataFrame({"question_id": ids, "conversation_id": conv, "qtype": qtype, "hit@5": base,
                      "faithfulness": rng.random(n)})
    c = pd.DataFrame({"question_id": ids, "hit@5": cand, "faithfulness": b["faithfulness"] + rng.normal(0, 0.2, n)})
    return b, c


def test_size_takes_units_and_no_longer_raises():
    b, c = _clustered_pilot()
    plain = runs.size(b, c, metric="hit@5", mde=0.05)
    clustered = runs.size(b, c, metric="hit@5", mde=0.05, units="conversation_id")
    deff = clustered.assumptions["design_effect"]
    diff = (c["hit@5"] - b["hit@5"]).to_numpy()
    assert deff == pytest.approx(_cluster_design_effect(diff, b["conversation_id"].to_numpy())) and deff > 1.2
    assert clustered.n == sizing.questions_needed(0.05, paired=True, discordance=plain.assumptions["discordance"],
                                                  design_effect=deff)
    assert clustered.n > plain.n and "design effect" in repr(clustered)
    assert b.rag.size(c, metric="hit@5", mde=0.05, units="conversation_id").n == clustered.n  # accessor parity
    with pytest.raises(ValueError, match="not both"):
        runs.size(b, c, metric="hit@5", mde=0.05, units="conversation_id", design_effect=2.0)
    with pytest.raises(Exception, match="conv"):
        runs.size(b, c, metric="hit@5", mde=0.05, units="conv")


def test_release_from_a_pilot_by_slice_with_units():
    b, c = _clustered_pilot()
    r = runs.size(b, c, metric=["hit@5", "faithfulness"], margin={"hit@5": 0.03, "faithfulness": 0.03}, by="qtype",
                  units="conversation_id", drop=0.03)
    assert set(r.rows["slice"]) == {"overall", "why", "what"}
    why = r.rows[(r.rows["metric"] == "hit@5") & (r.rows["slice"] == "why")].iloc[0]
    mask = b["qtype"] == "why"
    assert why["fraction"] == pytest.approx(mask.mean())
    assert why["discordance"] == pytest.approx((b.loc[mask, "hit@5"] != c.loc[mask, "hit@5"]).mean())
    assert r.assumptions["design_effect"]["hit@5"] > 1.2 and r.pass_probability >= 0.8
    same = b.rag.size(c, metric=["hit@5", "faithfulness"], margin={"hit@5": 0.03, "faithfulness": 0.03}, by="qtype",
                      units="conversation_id", drop=0.03)
    assert same.n == r.n and same.rows.equals(r.rows)  # accessor parity
    with pytest.raises(ValueError, match="exactly one"):
        runs.size(b, c, metric="hit@5")
    with pytest.raises(ValueError, match="size a change"):
        runs.size(b, c, metric="hit@5", margin=0.03, sensitivity=0.9, specificity=0.9)


# ---- command line ----------------------------------------------------------------------------------------


def test_cli_sizes_the_release(capsys):
    assert main(["size", "--gate-margin", "0.02", "--paired", "--discordance", "0.1", "--slices", "4",
                 "--drop", "0.02"]) == 0
    out = capsys.readouterr().out
    expected = sizing.questions_for_release(0.02, discordance={"metric": 0.1}, slices=4, drop=0.02)
    assert out.splitlines()[0] == f"{expected.n} questions"
    assert "overall + 4 slices" in out and "power to block" in out
    assert main(["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--icc", "0.1",
                 "--cluster-size", "6"]) == 0
    out = capsys.readouterr().out
    n = sizing.questions_needed(0.03, paired=True, discordance=0.1, icc=0.1, cluster_size=6)
    assert out.splitlines()[0] == f"{n} questions" and "design effect 1.5" in out
    with pytest.raises(SystemExit):
        main(["size", "--mde", "0.03", "--paired", "--discordance", "0.1", "--slices", "4"])
