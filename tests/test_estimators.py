"""raglab.stats.estimators and raglab.stats.results: the estimator protocol, the typed rows and the
declared columns of the summary, comparison and gate tables."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from raglab.stats import compare, gate, gate_comparison, summary
from raglab.stats import estimators as est
from raglab.stats.results import (
    COMPARISON,
    GATE,
    SUMMARY,
    ComparisonRow,
    IntervalKind,
    TestKind,
    check_declared,
    names,
)

RNG = np.random.default_rng(3)
N = 120
BASE = {"hit@5": RNG.integers(0, 2, N).astype(float), "rr": RNG.random(N), "latency_s": RNG.gamma(2.0, 1.0, N)}
CAND = {"hit@5": np.where(RNG.random(N) < 0.2, 1 - BASE["hit@5"], BASE["hit@5"]),
        "rr": np.clip(BASE["rr"] + RNG.normal(0, 0.1, N), 0, 1),
        "latency_s": BASE["latency_s"] * RNG.uniform(0.8, 1.1, N)}
SLICES = RNG.choice(["a", "b"], N)
UNITS = RNG.integers(0, 30, N)


def test_the_declarations_are_what_the_tables_hold():
    assert len([c for c in COMPARISON if not c.optional]) == 20 and len(GATE) == 28  # 20 + 6, two optional
    for kw in ({}, {"slices": SLICES}, {"units": UNITS}, {"adjust": "holm"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = compare(BASE, CAND, n_resamples=200, n_permutations=200, **kw)
            check_declared(table, COMPARISON)
            check_declared(gate(BASE, CAND, 0.05, n_resamples=200, n_permutations=200, **kw).table, GATE)
            check_declared(summary(BASE, n_resamples=200, **{k: v for k, v in kw.items() if k != "adjust"}), SUMMARY)
    assert "p_adjusted" in compare(BASE, CAND, adjust="holm", n_resamples=100).columns
    assert names(GATE)[-4:] == ["diff", "low", "high", "decision"]


def test_auto_takes_one_estimator_per_metric():
    sample = est.PairedSample(tuple(BASE), np.column_stack(list(BASE.values())), np.column_stack(list(CAND.values())),
                              est.Layout.of(N, None, None))
    chosen = est.choose_paired(sample, "auto")
    assert [type(e) for e in chosen] == [est.TangoScore, est.Betting, est.ExpandedPercentileBootstrap]
    clustered = dataclasses.replace(sample, layout=est.Layout.of(N, None, UNITS))
    assert {type(e) for e in est.choose_paired(clustered, "auto")} == {est.ExpandedPercentileBootstrap}
    declared = dataclasses.replace(sample, bounds={"latency_s": (0.0, 30.0)})
    assert type(est.choose_paired(declared, "auto")[2]) is est.Betting
    with pytest.raises(ValueError, match=r"method='score' is Tango's interval .* \['rr', 'latency_s'\]"):
        est.choose_paired(sample, "score")


def test_every_label_maps_back_to_its_kind():
    table = compare(BASE, CAND, n_resamples=200, n_permutations=200)
    assert [est.interval_kind(m) for m in table["method"]] == [IntervalKind.SCORE, IntervalKind.BETTING,
                                                               IntervalKind.BOOTSTRAP]
    assert [est.test_kind(t) for t in table["test"]] == [TestKind.EXACT, TestKind.CAPITAL, TestKind.SIGN_FLIP]
    for estimator in (*est.PAIRED.values(), est.ExpandedPercentileBootstrap()):
        for label in estimator.labels():
            assert est.interval_kind(label) is estimator.kind
    assert est.interval_kind("a label nobody writes") is IntervalKind.BOOTSTRAP  # the bootstrap checks apply
    assert est.interval_kind(float("nan")) is IntervalKind.BOOTSTRAP


def test_typed_rows_know_their_resampling_floor():
    row = ComparisonRow("m", "overall", 50, 0, 10, 0.5, 0.4, -0.1, -0.2, 0.0, 2 / 1001, 1 / 1001, 1.0, 0.0,
                        "paired bootstrap (percentile)", 0.95, 1000, 0, "sign-flip permutation", 1000, None,
                        test_kind=TestKind.SIGN_FLIP)
    assert row.draws == 1000 and row.p_at_floor
    exact = dataclasses.replace(row, n_permutations=None, n_resamples=None, test_kind=TestKind.EXACT)
    assert exact.draws is None and not exact.p_at_floor


def test_the_gate_decides_from_the_kind_not_the_label():
    # two questions changed: a bootstrap row reviews (too few changed), a score row does not need that check
    base = {"hit@5": [1.0] * 200}
    cand = {"hit@5": [1.0] * 198 + [0.0] * 2}
    table = compare(base, cand)
    assert gate_comparison(table, 0.05, higher_is_better=True).decision == "pass"
    relabelled = table.assign(method="my own bootstrap")  # a label no estimator writes: taken for a bootstrap
    reason = gate_comparison(relabelled, 0.05, higher_is_better=True).table["reason"].iloc[0]
    assert "changed" in reason


def test_gate_comparison_takes_the_minimal_table():
    table = pd.DataFrame({"metric": ["hit@5"], "n": [100], "low": [-0.01], "high": [0.03]})
    result = gate_comparison(table, 0.02, higher_is_better=True)
    assert result.decision == "review" and list(result.table.columns)[-3:] == ["low", "high", "decision"]


class _Shifted(est.PairedEstimator):
    """A toy estimator for the test: its own estimate (the mean difference + 0.01) +- 0.05, valid at every
    n, p-values 0.5; it reads the sample's weights when given (as prediction-powered inference would)."""

    method = "shifted"
    kind = IntervalKind.BETTING
    label = "paired shifted (toy)"

    def eligible(self, sample, j, *, auto):
        return True

    def estimate(self, sample, columns, settings, shared):
        cols = list(columns)
        assert sample.weights is None or sample.weights.shape == (sample.base.shape[0],)
        theta = shared.engine.theta[:, cols] + 0.01
        half = np.full(theta.shape, 0.5)
        k = len(cols)
        return est.PairedBlock(tuple(cols), theta - 0.05, theta + 0.05, half, half, half, self.label, self.kind,
                               ("none",) * k, (TestKind.NONE,) * k, (None,) * k, (None,) * k, estimate=theta)


def test_a_new_estimator_is_one_class(monkeypatch):
    monkeypatch.setitem(est.PAIRED, "shifted", _Shifted())
    table = compare(BASE, CAND, method="shifted")
    check_declared(table, COMPARISON)
    assert set(table["method"]) == {"paired shifted (toy)"}
    np.testing.assert_allclose(table["high"] - table["low"], 0.1)
    np.testing.assert_allclose(table["diff"], compare(BASE, CAND, n_resamples=100)["diff"] + 0.01)  # its estimate
    gated = gate_comparison(table, {"hit@5": 0.2, "rr": 0.2, "latency_s": 1.0},
                            higher_is_better={"hit@5": True, "rr": True, "latency_s": False})
    assert not gated.table["reason"].str.contains("bootstrap").any()  # valid at every n: no bootstrap checks
    with pytest.raises(ValueError, match="method"):
        compare(BASE, CAND, method="nothing")


def test_the_sample_can_carry_labels_weights_and_strata():
    b, c = np.column_stack(list(BASE.values())), np.column_stack(list(CAND.values()))
    labelled = np.where(RNG.random((N, 1)) < 0.2, b, np.nan)
    sample = est.PairedSample(tuple(BASE), b, c, est.Layout.of(N, SLICES, None), labels=(labelled, labelled),
                              weights=np.full(N, 5.0), strata=(SLICES == "a").astype(int))
    blocks, shared = est.run_paired(sample, est.Settings("auto", 0.95, 100, 0, 0))
    assert sorted(j for block in blocks for j in block.columns) == [0, 1, 2]
    assert shared.engine.theta.shape == (3, 3)  # overall and two slices, three metrics


def test_the_statistics_never_import_the_gate_module():
    """raglab.gate re-exports raglab.stats._gate; nothing in raglab.stats imports raglab.gate (no cycle), and no
    module of raglab.stats imports another inside a function."""
    import ast
    import pathlib

    import raglab.stats

    for path in pathlib.Path(raglab.stats.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = set(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(n == "raglab.gate" or n.startswith("raglab.gate.") for n in names), path.name
                if any(n.startswith("raglab") for n in names):
                    assert node in top, f"{path.name}:{node.lineno} imports raglab inside a function"


def test_betting_p_values_on_declared_bounds_agree_with_the_interval():
    # mean-0 differences in [-30, 30], skewed: before, the p-values were read on [-1, 1] (clipped) and said 1e-19
    rng = np.random.default_rng(0)
    b = rng.uniform(5, 10, 400)
    c = b + np.where(rng.random(400) < 0.9, -0.5, 4.5)
    row = compare({"score_s": b}, {"score_s": c}, bounds={"score_s": (0, 30)}).iloc[0]
    assert row["low"] < 0 < row["high"] and row["test"] == "betting capital"
    assert min(row["p_decrease"], row["p_increase"]) >= 0.025  # 0 is inside the 95% interval: no one-sided evidence
