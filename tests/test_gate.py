"""The release gate: the seed's rule and example, directions both ways, GateResult and its decision log."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab import stats
from raglab._meta import update_meta
from raglab._results import ResultBase
from raglab.stats import GateResult, compare, gate, gate_comparison
from raglab.stats._gate import _decide, _worst


def _seed_example():
    # Seed 000: two retriever configs on the same 300 questions (random.Random(1)).
    rng = random.Random(1)
    base = [1.0 if rng.random() < 0.72 else 0.0 for _ in range(300)]
    cand = [b if rng.random() < 0.9 else 1.0 - b for b in base]
    return base, cand


def _frames(base, cand, name="hit@5", **extra):
    ids = [f"q{i:03d}" for i in range(len(base))]
    b = pd.DataFrame({"question_id": ids, name: base, **extra})
    c = pd.DataFrame({"question_id": ids, name: cand, **extra})
    return b, c


def test_seed_example_blocks_at_margin_002():
    # Seed 000: "Applied to the example with a margin of 0.02, the lower bound of minus 0.077 fails the
    # pass test and the upper bound of minus 0.010 is below zero, so the gate blocks."
    base, cand = _seed_example()
    result = gate(base, cand, margin=0.02, higher_is_better=True)
    assert result.decision == "block"
    row = result.table.iloc[0]
    assert row["low"] < -0.02 and row["high"] < 0
    b, c = _frames(base, cand)
    via_accessor = b.rag.gate(c, margin=0.02, metrics=["hit@5"])
    assert via_accessor.decision == "block"
    assert via_accessor.table.iloc[0]["diff"] == pytest.approx(-0.0433, abs=5e-4)


@pytest.mark.parametrize(
    ("low", "high", "margin", "higher", "expected"),
    [
        (-0.010, 0.030, 0.02, True, "pass"),  # low >= -margin
        (-0.020, 0.030, 0.02, True, "pass"),  # boundary counts as pass
        (-0.077, -0.010, 0.02, True, "block"),  # the seed's example
        (-0.050, 0.010, 0.02, True, "review"),
        (-0.015, -0.005, 0.02, True, "pass"),  # a real drop inside the margin passes (rule order)
        (-0.030, 0.010, 0.02, False, "pass"),  # lower is better: high <= margin
        (0.005, 0.040, 0.02, False, "block"),  # lower is better: a real increase
        (-0.010, 0.050, 0.02, False, "review"),
        (float("nan"), float("nan"), 0.02, True, "review"),
        (-0.02 - 1e-17, 0.030, 0.02, True, "pass"),  # float rounding of an exact -0.02 never decides
        (0.0, 0.0, 0.02, True, "review"),  # a zero-width interval is no evidence
        (-0.5, -0.3, 0.02, True, "block"),
    ],
)
def test_decision_rule(low, high, margin, higher, expected):
    decision, reason = _decide(low, high, margin, higher)
    assert decision == expected and reason


def test_decision_rule_reviews_thin_evidence():
    assert _decide(-0.01, 0.01, 0.02, True, n=9)[0] == "review"
    assert "only 9 paired questions" in _decide(-0.01, 0.01, 0.02, True, n=9)[1]
    # Interval below zero but the Holm-adjusted one-sided p-value is not small enough: review, not block.
    decision, reason = _decide(-0.2, -0.01, 0.02, True, n=50, p_worse=0.04, family=24)
    assert decision == "review" and "24 rows" in reason
    assert _decide(-0.2, -0.01, 0.02, True, n=50, p_worse=0.001, family=24)[0] == "block"


def _gate_on(diffs, **kwargs):
    base = np.zeros(len(diffs))
    return gate({"m": base}, {"m": np.asarray(diffs, float)}, n_resamples=2_000, **kwargs)


def test_higher_is_better_flips_correctly_both_ways():
    rng = np.random.default_rng(0)
    drop = rng.normal(-0.1, 0.05, 200)  # clearly worse if higher is better
    assert _gate_on(drop, margin=0.02, higher_is_better=True).decision == "block"
    assert _gate_on(drop, margin=0.02, higher_is_better=False).decision == "pass"
    assert _gate_on(-drop, margin=0.02, higher_is_better=False).decision == "block"
    assert _gate_on(-drop, margin=0.02, higher_is_better=True).decision == "pass"


def test_negating_the_metric_and_its_direction_gives_the_same_decisions():
    rng = np.random.default_rng(1)
    slices = np.repeat(["a", "b", "c"], 100)
    effect = np.repeat([-0.1, 0.01, 0.0], 100)  # block, pass, review
    noise = np.repeat([0.05, 0.05, 0.1], 100)
    base = rng.random(300)
    cand = base + effect + rng.normal(0, 1, 300) * noise
    up = gate({"m": base}, {"m": cand}, margin=0.02, slices=slices, seed=4, higher_is_better=True)
    down = gate({"m": -base}, {"m": -cand}, margin=0.02, slices=slices, seed=4, higher_is_better=False)
    assert up.table["decision"].tolist() == down.table["decision"].tolist() == ["block", "block", "pass", "review"]
    np.testing.assert_allclose(up.table["diff"], -down.table["diff"], atol=1e-12)
    # Negation reorders the questions' canonical order, so the draws differ: equal within MC error.
    np.testing.assert_allclose(up.table["low"], -down.table["high"], atol=0.004)


def test_direction_defaults_from_the_name_and_explicit_values_win():
    rng = np.random.default_rng(2)
    base = rng.gamma(3, 100, 300)
    faster = base * 0.8  # latency fell: good
    guessed = r"guessed from the metric name which way is better \('latency_ms': lower is better\)"
    with pytest.warns(UserWarning, match=guessed):
        result = gate({"latency_ms": base}, {"latency_ms": faster}, margin=5.0)
    assert result.decision == "pass" and not result.table["higher_is_better"].iloc[0]
    overridden = gate({"latency_ms": base}, {"latency_ms": faster}, margin=5.0, higher_is_better={"latency_ms": True})
    assert overridden.decision == "block"
    b, c = _frames(base, faster, name="latency_ms")
    with pytest.warns(UserWarning, match=guessed):
        assert b.rag.gate(c, margin=5.0, metrics="latency_ms").decision == "pass"


def test_margin_per_metric_and_worst_row_wins():
    rng = np.random.default_rng(3)
    n = 400
    ok_b = rng.random(n)
    bad_b = (rng.random(n) < 0.7).astype(float)
    bad_c = np.where(rng.random(n) < 0.85, bad_b, 0.0)  # a real drop
    ok_c = ok_b + rng.normal(0.001, 0.01, n)  # no real change
    result = gate({"ok": ok_b, "bad": bad_b}, {"ok": ok_c, "bad": bad_c}, margin={"ok": 0.01, "bad": 0.5},
                  higher_is_better=True)
    assert result.table.set_index("metric")["margin"].to_dict() == {"ok": 0.01, "bad": 0.5}
    assert result.decision == "pass"  # a drop inside a 0.5 margin passes
    strict = gate({"ok": ok_b, "bad": bad_b}, {"ok": ok_c, "bad": bad_c}, margin={"ok": 0.01, "bad": 0.01},
                  higher_is_better=True)
    assert strict.counts == {"pass": 1, "review": 0, "block": 1} and strict.decision == "block"


def test_review_beats_pass_and_block_beats_review():
    assert _worst(["pass", "review", "pass"]) == "review"
    assert _worst(["review", "block", "pass"]) == "block"
    assert _worst(["pass"]) == "pass"


def test_slices_are_gated_too():
    rng = np.random.default_rng(5)
    n = 900
    slices = np.repeat(["a", "b", "c"], 300)
    base = (rng.random(n) < 0.8).astype(float)
    cand = base.copy()
    collapse = (slices == "c") & (rng.random(n) < 0.3)
    cand[collapse] = 0.0  # one slice collapses while the aggregate barely moves
    result = gate({"hit": base}, {"hit": cand}, margin=0.1, slices=slices)
    by_slice = result.table.set_index("slice")["decision"].to_dict()
    assert by_slice["c"] == "block" and by_slice["a"] == "pass" and result.decision == "block"


def test_margin_and_direction_errors():
    with pytest.raises(ValueError, match=r"gives no margin for \['b'\]"):
        gate({"a": [1, 0], "b": [1, 0]}, {"a": [1, 0], "b": [1, 1]}, margin={"a": 0.1})
    with pytest.raises(ValueError, match=r"names metrics that are not compared: \['c'\]"):
        gate({"a": [1, 0]}, {"a": [1, 1]}, margin={"a": 0.1, "c": 0.2})
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        gate({"a": [1, 0]}, {"a": [1, 1]}, margin=-0.02)
    with pytest.raises(TypeError, match="must be True or False"):
        gate({"a": [1, 0]}, {"a": [1, 1]}, margin=0.02, higher_is_better="yes")


# ---- GateResult -------------------------------------------------------------------------------------


def _stamped_runs():
    base, cand = _seed_example()
    rng = np.random.default_rng(0)
    qtype = rng.choice(["factoid", "howto"], 300)
    b, c = _frames(base, cand, qtype=qtype)
    b["faithfulness"] = rng.random(300)
    c["faithfulness"] = np.clip(b["faithfulness"] + rng.normal(0, 0.05, 300), 0, 1)
    for frame in (b, c):
        update_meta(frame, "evalset", {"name": "golden", "version": "3", "hash": "f00d"})
    update_meta(b, "judge", {"fingerprint": "judge-abc", "model": "m1"})
    update_meta(c, "judge", {"fingerprint": "judge-abc", "model": "m1"})
    return b, c


def test_decision_log_keeps_every_interval_and_the_run_records(tmp_path):
    b, c = _stamped_runs()
    result = b.rag.gate(c, margin={"hit@5": 0.02, "faithfulness": 0.01}, metrics=["hit@5", "faithfulness"],
                        by="qtype", seed=7, n_resamples=3_000)
    path = tmp_path / "gate.json"
    text = result.to_json(path)
    log = json.loads(path.read_text())
    assert log == json.loads(text)
    # hit@5 drops (one-sided p about 0.01), but over 6 gated rows Holm needs more: review, with the reason.
    assert log["decision"] == result.decision == "review"
    hit = result.table.set_index(["metric", "slice"]).loc[("hit@5", "overall")]
    assert hit["high"] < 0 and hit["decision"] == "review" and "6 rows" in hit["reason"]
    per_row = b.rag.gate(c, margin={"hit@5": 0.02, "faithfulness": 0.01}, metrics=["hit@5", "faithfulness"],
                         by="qtype", seed=7, n_resamples=3_000, adjust=None)
    assert per_row.decision == "block" and per_row.settings["adjust"] is None
    assert log["raglab_version"] == raglab.__version__ and log["created"].endswith("+00:00")
    assert log["settings"]["seed"] == 7 and log["settings"]["n_resamples"] == 3_000
    assert log["settings"]["margins"] == {"hit@5": 0.02, "faithfulness": 0.01}
    assert log["settings"]["by"] == ["qtype"]
    assert log["runs"]["base"]["evalset"] == {"name": "golden", "version": "3", "hash": "f00d"}
    assert log["runs"]["cand"]["judge"]["fingerprint"] == "judge-abc"
    assert "PASS if low >= -margin" in log["rule"] and "Holm" in log["rule"]
    assert len(log["rows"]) == len(result.table) == 6
    first = log["rows"][0]
    for key in ("metric", "slice", "n", "n_dropped", "diff", "low", "high", "margin", "higher_is_better",
                "decision", "p_value", "method", "level", "n_resamples", "seed"):
        assert key in first
    assert first["n"] == 300 and first["method"] == "paired score (Tango)" and first["seed"] is None
    faith = next(r for r in log["rows"] if r["metric"] == "faithfulness")
    assert faith["seed"] == 7 and faith["method"] == "paired betting (Waudby-Smith-Ramdas)"
    assert log["settings"]["adjust"] == "holm" and "Holm" in log["settings"]["block_rule"]
    assert all(r["reason"] for r in log["rows"])


def test_decision_log_writes_null_for_missing_numbers(tmp_path):
    base = pd.DataFrame({"question_id": list("abcd"), "t": ["x", "x", "y", "y"], "s": [0.1, 0.2, np.nan, np.nan]})
    result = base.rag.gate(base.assign(s=[0.1, 0.2, 0.5, 0.6]), margin=0.1, metrics=["s"], by="t", n_resamples=100,
                           higher_is_better=True)
    log = json.loads(result.to_json(tmp_path / "log.json"))
    y = next(r for r in log["rows"] if r["slice"] == "y")
    assert y["low"] is None and y["decision"] == "review" and result.decision == "review"


def test_gate_result_display_and_frame():
    b, c = _stamped_runs()
    result = b.rag.gate(c, margin=0.02, metrics=["hit@5"], n_resamples=2_000)
    assert isinstance(result, GateResult)
    text = repr(result)
    assert text.startswith("GateResult: BLOCK (0 pass, 0 review, 1 block; 95% paired score (Tango)")
    assert "resamples" not in text.splitlines()[0]  # no row of this table was resampled
    assert "hit@5" in text and "block" in text
    page = result._repr_html_()
    assert "<table>" in page and "BLOCK" in page and "#cf222e" in page
    frame = result.to_frame()
    pd.testing.assert_frame_equal(frame, result.table)
    frame.loc[0, "decision"] = "pass"
    assert result.table.loc[0, "decision"] == "block"  # a copy
    for column in ("margin", "higher_is_better", "decision"):
        assert column in frame.columns
    assert not result.passed


def test_gate_accessor_equals_the_pure_function():
    b, c = _stamped_runs()
    via_accessor = b.rag.gate(c, margin=0.02, metrics=["hit@5", "faithfulness"], by="qtype")
    direct = gate(b[["hit@5", "faithfulness"]], c[["hit@5", "faithfulness"]], margin=0.02, slices=b["qtype"])
    pd.testing.assert_frame_equal(via_accessor.table, direct.table)
    assert via_accessor.decision == direct.decision


def test_gate_is_compare_then_gate_comparison():
    b, c = _stamped_runs()
    metrics = ["hit@5", "faithfulness"]
    direct = gate(b[metrics], c[metrics], margin=0.02, slices=b["qtype"], higher_is_better=True, seed=3)
    table = stats.compare(b[metrics], c[metrics], slices=b["qtype"], seed=3)
    stepwise = gate_comparison(table, 0.02, higher_is_better=True)
    pd.testing.assert_frame_equal(stepwise.table, direct.table)
    assert stepwise.decision == direct.decision and stepwise.settings == direct.settings
    assert "decision" not in table.columns  # the comparison table is not modified


def test_gate_comparison_says_which_columns_a_table_needs():
    with pytest.raises(ValueError, match=r"columns \['low', 'high'\]; found \['metric', 'n'\].*compare"):
        gate_comparison(pd.DataFrame({"metric": ["m"], "n": [10]}), 0.02, higher_is_better=True)
    with pytest.raises(TypeError, match="comparison table"):
        gate_comparison({"metric": ["m"]}, 0.02)


def test_the_gate_lives_in_raglab_gate_and_raglab_stats_still_exports_it():
    import raglab.gate

    for name in raglab.gate.__all__:
        assert getattr(stats, name) is getattr(raglab.gate, name)
    assert set(raglab.gate.__all__) - {"GATE_TOLERANCE", "MIN_CHANGED"} <= set(stats.__all__)
    assert "gate_comparison" in dir(stats)
    assert issubclass(GateResult, ResultBase)


def test_gate_warnings_point_at_the_callers_line():
    with pytest.warns(UserWarning, match="guessed from the metric name") as record:
        gate({"a": [1, 0, 1] * 5}, {"a": [1, 1, 1] * 5}, margin=0.0)
    assert record[0].filename == __file__
    with pytest.warns(UserWarning, match="dropped 1 of 4 pair") as record:
        stats.paired_bootstrap([1.0, 0.0, np.nan, 1.0], [1.0, 1.0, 1.0, 0.0], n_resamples=100)
    assert record[0].filename == __file__


def test_a_slice_of_one_question_goes_to_review():
    result = gate({"a": [1, 0, 1]}, {"a": [1, 1, 1]}, margin=0.0, slices=["x", "y", "x"], higher_is_better=True)
    table = result.table.set_index("slice")
    assert table["decision"].to_dict() == {"overall": "review", "x": "review", "y": "review"}
    assert table.loc["y", "reason"].startswith("no interval")
    assert table.loc["x", "reason"].startswith("only 2 paired questions")
    assert result.decision == "review"


def test_a_handful_of_clusters_gives_no_interval_and_the_gate_reviews():
    rng = np.random.default_rng(0)
    ids = [f"q{i}" for i in range(200)]
    base = pd.DataFrame({"question_id": ids, "recall@5": 0.8 * rng.random(200), "doc": rng.integers(0, 2, 200).astype(str)})
    gain = 0.1 + rng.normal(0, 0.02, 200)
    cand = base.assign(**{"recall@5": base["recall@5"] + gain})  # a clear gain, but only 2 clusters
    with pytest.warns(UserWarning, match=r"only \[2\] clusters.*at least 10"):
        result = base.rag.gate(cand, metrics=["recall@5"], margin=0.02, units="doc", n_resamples=500)
    assert result.decision == "review" and result.table["low"].isna().all()
    many = base.assign(doc=rng.integers(0, 40, 200).astype(str))
    assert many.rag.gate(cand.assign(doc=many["doc"]), metrics=["recall@5"], margin=0.02, units="doc",
                         n_resamples=500).decision == "pass"


def test_gate_needs_named_metrics():
    base = pd.DataFrame({"question_id": ["q1", "q2"], "recall@5": [1.0, 0.0], "n_answers": [3, 5]})
    with pytest.raises(TypeError, match=r"rag.gate needs metrics=\[...\]: a release gate is a rule decided in advance"):
        base.rag.gate(base, margin=0.02, metrics=[])
    with pytest.raises(TypeError, match="metrics"):
        base.rag.gate(base, margin=0.02)


def test_too_few_clusters_review_even_with_a_narrow_interval():
    # GATE_RULE: fewer than 10 clusters is review, whatever interval a hand-built table carries
    decision, reason = _decide(0.01, 0.02, 0.02, True, n=3, clustered=True)
    assert decision == "review" and "only 3 paired clusters" in reason
    assert _decide(0.01, 0.02, 0.02, True, n=10, clustered=True)[0] == "pass"


def test_a_table_without_one_sided_p_values_never_blocks():
    table = compare({"m": [1.0, 0.9, 0.8, 1.0] * 30}, {"m": [0.5, 0.4, 0.3, 0.6] * 30}, n_resamples=500)
    assert gate_comparison(table, margin=0.02, higher_is_better=True).decision == "block"
    old = table.drop(columns=["p_decrease", "p_increase"])
    result = gate_comparison(old, margin=0.02, higher_is_better=True)
    assert result.decision == "review" and "no test p-value is available" in result.table["reason"].iloc[0]


def test_numpy_values_in_the_table_attrs_are_kept():
    table = compare({"m": [1.0, 0.9, 0.8, 1.0] * 30}, {"m": [1.0, 0.9, 0.8, 1.0] * 30}, n_resamples=500)
    table.attrs["note"] = np.int64(3)
    result = gate_comparison(table, margin=0.02, higher_is_better=True)
    assert result.table.attrs["note"] == 3 and json.loads(result.to_json())["decision"] == "review"  # zero-width


def test_a_row_held_above_the_block_threshold_by_the_flips_resolution_says_so_and_how_to_fix_it():
    # Eight clear drops (every question worse): no sign flip is as extreme, so each raw one-sided p-value
    # is the floor 1 / (99 + 1) = 0.01, and Holm over 8 rows makes it 8 x 0.01 = 0.08 (statsmodels below).
    # That bound cannot show p >= 0.025: the row is review because 99 flips cannot resolve Holm's threshold.
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    n = 200
    base = pd.DataFrame({f"m{i}": rng.uniform(0.5, 1, n) for i in range(8)})
    cand = (base - rng.uniform(0.05, 0.15, (n, 8))).clip(0, 1)
    with pytest.warns(UserWarning, match="can never block"):
        coarse = gate(base, cand, margin=0.02, n_permutations=99, n_resamples=300, higher_is_better=True)
    table = coarse.table
    np.testing.assert_allclose(table["p_worse"], 1 / 100)
    np.testing.assert_allclose(table["p_worse_adjusted"], multipletests(table["p_worse"], method="holm")[1])
    assert (table["decision"] == "review").all()
    # 1 / (N + 1) < 0.025 / 8 first holds at N = 320
    least = next(k for k in range(1, 10_000) if 1 / (k + 1) < 0.025 / 8)
    for reasons in (table["reason"], coarse._shown()["reason"], pd.Series([r["reason"] for r in coarse.to_dict()["rows"]])):
        for reason in reasons:
            assert "not significant" not in reason and ">= 0.025" not in reason, reason
            assert "99 sign flips cannot give a one-sided p-value below 0.01" in reason, reason
            assert "only known to be \N{LESS-THAN OR EQUAL TO} 0.08" in reason and "below 0.025" in reason, reason
            assert reason.endswith(f"Raise n_permutations (to at least {least})"), reason
    # the advice is right: with that many flips the same drops block
    assert gate(base, cand, margin=0.02, n_permutations=least, n_resamples=300, higher_is_better=True).decision == "block"


def test_the_resolution_reason_for_bootstrap_p_values_one_row_and_a_bound_capped_at_1():
    # one row (no Holm): 19 flips cannot go below 1/20 = 0.05 >= 0.025; 1/41 < 0.025 first at 40 flips
    decision, reason = _decide(-0.2, -0.01, 0.02, True, n=50, p_worse=0.05, floor=(19, "sign flips", "n_permutations"))
    assert decision == "review" and "19 sign flips cannot give a one-sided p-value below 0.05" in reason
    assert "Holm" not in reason and reason.endswith("Raise n_permutations (to at least 40)")
    # no permutations: the bootstrap's resamples are the draws; 1 / 201 = 0.004975 is stated rounded down
    decision, reason = _decide(-0.2, -0.01, 0.02, True, n=50, p_worse=1.0, family=300,
                               floor=(200, "bootstrap resamples", "n_resamples"))
    assert decision == "review" and "200 bootstrap resamples cannot give a one-sided p-value below 0.0049" in reason
    assert "only known to be \N{LESS-THAN OR EQUAL TO} 1," in reason and " p 1 " not in reason
    assert reason.endswith("Raise n_resamples (to at least 12000)")  # 1 / 12001 < 0.025 / 300 = 1 / 12000
    # a p-value that is not at its floor is a measurement: "not significant" stays
    assert "not significant" in _decide(-0.2, -0.01, 0.02, True, n=50, p_worse=0.04, family=24)[1]
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 1, 60)
    result = gate({"m": base}, {"m": base - rng.uniform(0.05, 0.15, 60)}, margin=0.02, n_permutations=0,
                  n_resamples=30, method="percentile", higher_is_better=True, adjust=None)
    assert result.table["test"].iloc[0] == "none" and result.table["p_worse"].iloc[0] == pytest.approx(1 / 31)
    assert "30 bootstrap resamples cannot give a one-sided p-value below 0.032" in result.table["reason"].iloc[0]
    assert result.table["reason"].iloc[0].endswith("Raise n_resamples (to at least 40)")
