"""What raglab's tables and results show when printed: estimate and interval in view, p-values at a
resampling floor as bounds, impossible scores refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from raglab import stats


def _scores(n=300, seed=0):
    rng = np.random.default_rng(seed)
    slices = np.repeat(["what", "when", "who"], n // 3)
    base = {"recall@5": rng.random(n), "hit@5": (rng.random(n) < 0.7).astype(float),
            "prompt_chars": rng.gamma(3.0, 1500.0, n)}
    cand = {"recall@5": np.clip(base["recall@5"] + 0.03, 0, 1), "hit@5": (rng.random(n) < 0.72).astype(float),
            "prompt_chars": base["prompt_chars"] * 1.4}
    return base, cand, slices


def _printed(table, monkeypatch):
    """``print(table)`` in an 80-column terminal (pandas fits a wide table to it, eliding middle columns)."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "50")
    with pd.option_context("display.width", 80, "display.max_columns", 0):
        return str(table)


@pytest.mark.parametrize("kind", ["summary", "summary-clusters", "compare", "compare-holm"])
def test_a_printed_table_shows_the_estimate_and_its_interval_in_80_columns(kind, monkeypatch):
    base, cand, slices = _scores()
    if kind == "summary":
        table, estimate = stats.summary(base, slices=slices), "mean"
    elif kind == "summary-clusters":
        table, estimate = stats.summary(base, slices=slices, units=np.arange(300) // 3, n_resamples=200), "mean"
    else:
        table, estimate = stats.compare(base, cand, slices=slices, n_resamples=200, n_permutations=200,
                                        adjust="holm" if kind == "compare-holm" else None), "diff"
    lines = _printed(table, monkeypatch).splitlines()
    assert "..." in lines[0]  # the table is too wide: pandas did elide columns
    header = lines[0].split()
    assert header[:2] == ["metric", "slice"] and header[-3:] == [estimate, "low", "high"]
    assert max(len(line) for line in lines) <= 80
    for i in range(len(table)):  # and each row's numbers are the table's
        shown = [float(v) for v in lines[1 + i].split()[-3:]]
        np.testing.assert_allclose(shown, table.loc[i, [estimate, "low", "high"]].to_numpy(float), rtol=1e-3, atol=1e-3)


def test_p_values_at_the_resampling_floor_print_as_bounds():
    import json

    rng = np.random.default_rng(0)
    n, flips = 400, 999
    slices = np.repeat(list("abcd"), 100)
    # "score" has no known bounds, so it keeps sign flips (a bounded metric's p-value is its betting capital)
    base = {"score": 0.2 + 0.8 * rng.random(n), "hit@5": (rng.random(n) < 0.8).astype(float)}
    cand = {"score": base["score"] - 0.2 * rng.random(n), "hit@5": np.where(rng.random(n) < 0.3, 0.0, base["hit@5"])}
    result = stats.gate(base, cand, margin={"score": 0.02, "hit@5": 0.02}, slices=slices, n_resamples=300,
                        n_permutations=flips, higher_is_better=True)
    table = result.table
    flipped = (table["test"] == "sign-flip permutation").to_numpy()
    blocks = (table["decision"] == "block").to_numpy()
    assert (flipped & blocks).sum() == 5 and (~flipped & blocks).any()
    # the numbers stay: no flip was as extreme, so p = 1 / (999 + 1); Holm (statsmodels) over 10 rows, after
    # the five smaller exact McNemar p-values, makes it 5 / 1000: still a bound, as the raw p-value is
    from statsmodels.stats.multitest import multipletests

    np.testing.assert_allclose(table.loc[flipped, "p_worse"], 1 / (flips + 1))
    holm = multipletests(table["p_worse"], method="holm")[1]
    np.testing.assert_allclose(table["p_worse_adjusted"], holm)
    np.testing.assert_allclose(holm[flipped], 5 / (flips + 1))
    logged = json.loads(result.to_json())["rows"]
    for shown in (result._shown()["reason"], pd.Series([row["reason"] for row in logged])):
        for reason, floor, block, p in zip(shown, flipped, blocks, table["p_worse_adjusted"]):
            if block and floor:  # at the floor: a bound, never the draws' number
                assert reason.endswith("Holm-adjusted over 10 rows p \N{LESS-THAN OR EQUAL TO} 0.005"), reason
            elif block:  # exact McNemar p-values are measurements
                assert reason.endswith(f"p = {p:.3g}") and p < 1 / (flips + 1), reason
    assert "p \N{LESS-THAN OR EQUAL TO} 0.005" in repr(result) and "p = 0.005" not in repr(result)
    assert "p \N{LESS-THAN OR EQUAL TO} 0.005" in result._repr_html_()
    assert [row["p_worse"] for row in logged][:5] == pytest.approx([1 / (flips + 1)] * 5)
    assert table["reason"].str.contains("p = 0.005").sum() == 5  # the table keeps the computed words


def test_p_text_bounds():
    from raglab._results import p_text
    from raglab.stats.results import at_floor

    assert p_text(0.012345) == "0.0123"
    assert p_text(1 / 10_001, bound=True) == "< 0.0001"  # 9.999e-05
    assert p_text(27 / 334, bound=True) == "< 0.09" and p_text(1 / 334, bound=True) == "< 0.003"
    assert p_text(0.001, bound=True) == "\N{LESS-THAN OR EQUAL TO} 0.001"
    # a Holm-adjusted bound capped at 1 is still a bound, never a bare '1' ("p 1 >= 0.025")
    assert p_text(1.0, bound=True) == "\N{LESS-THAN OR EQUAL TO} 1" and p_text(1.0) == "1"
    rows = pd.DataFrame({"p_worse": [1 / 301, 2 / 301, 1 / 301, 1e-9],
                         "n_permutations": pd.array([None, None, 300, None], dtype="Int64"),
                         "n_resamples": pd.array([300, 300, 300, None], dtype="Int64"),
                         "test": ["none", "none", "sign-flip permutation", "exact McNemar"]})
    assert at_floor(rows).tolist() == [True, False, True, False]  # bootstrap floor, one exceedance, flips, exact


def test_a_registered_unit_score_outside_0_1_is_refused_naming_column_rows_and_values():
    import raglab  # noqa: F401  (registers df.rag)
    from raglab._errors import RowTableError
    from raglab._registry import metric_info

    assert metric_info("recall@5").bounded and metric_info("faithfulness").bounded
    assert not metric_info("latency_ms").bounded and not metric_info("prompt_chars").bounded
    good = [0.2, 0.5, np.nan, 1.0, 0.0, 1 + 1e-12]  # NaN is no score; rounding slack is allowed
    with pytest.raises(RowTableError, match=r"summary: 'recall@5' is a score in \[0, 1\] .* 2 values lie in "
                                            r"`scores` outside it: 1\.7 at row 1, -0\.2 at row 3\. Fix") as caught:
        stats.summary({"recall@5": [0.2, 1.7, 0.5, -0.2], "latency_ms": [900.0, 2.0, 3.0, 4.0]})
    assert caught.value.column == "recall@5" and caught.value.rows == [1, 3] and caught.value.method == "summary"
    with pytest.raises(RowTableError, match=r"compare: 'faithfulness' .* 3 values lie in `cand` outside it: 20 at "
                                            r"row 0, 70 at row 1, 50 at row 2 \(percentages\? divide by 100\)"):
        stats.compare({"faithfulness": [0.2, 0.7, 0.5]}, {"faithfulness": [20.0, 70.0, 50.0]})
    rows = pd.DataFrame({"question_id": list("abcd"), "em": [1.0, 0.0, 2.0, 1.0]})
    with pytest.raises(RowTableError, match=r"rag\.summary: 'em' .* 1 value lies in the run outside it: 2 at row 2 "
                                            r"\(question_id 'c'\)\."):
        rows.rag.summary(metrics=["em"])
    # what is not registered in [0, 1] is summarised as before
    assert stats.summary({"recall@5": good})["n"].iloc[0] == 5
    assert stats.summary({"latency_ms": [900.0, 2.0], "my_score": [1.7, -0.2]})["n"].tolist() == [2, 2]


def test_an_out_of_range_score_through_the_accessor_names_the_users_row_and_question_id():
    # The reviewer's case: q5's recall is 1.7 in the candidate, whose rows are in another order (q5 is
    # its row 34) and whose index is not 0..n-1. The accessor pairs the runs by id, re-indexing them;
    # the error must name the row of the table the user passed and the question, not a paired position.
    import raglab  # noqa: F401  (registers df.rag)
    from raglab._errors import RowTableError

    n = 40
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "recall@5": np.linspace(0, 1, n)})
    cand = base.copy()
    cand.loc[5, "recall@5"] = 1.7
    cand = cand.iloc[::-1].reset_index(drop=True)
    assert cand.index[cand["question_id"] == "q5"].tolist() == [34]
    expected = r"1 value lies in the candidate run outside it: 1\.7 at row 34 \(question_id 'q5'\)\."
    for name, call in (
        ("rag.compare", lambda: base.rag.compare(cand, metrics=["recall@5"], n_resamples=50, n_permutations=50)),
        ("rag.gate", lambda: base.rag.gate(cand, margin=0.02, metrics=["recall@5"], n_resamples=50, n_permutations=50)),
    ):
        with pytest.raises(RowTableError, match=rf"^{name.replace('.', '[.]')}: 'recall@5' is a score in \[0, 1\].*{expected}") as caught:
            call()
        assert caught.value.rows == [34] and caught.value.method == name and caught.value.column == "recall@5"
    # an index of labels: the label is shown, the position is kept in .rows; the baseline side too
    labelled = base.set_axis([f"r{i}" for i in range(n)]).iloc[::-1]
    labelled.loc["r7", "recall@5"] = -0.5
    with pytest.raises(RowTableError, match=r"lies in the baseline run outside it: -0\.5 at row r7 \(question_id 'q7'\)") as caught:
        labelled.rag.compare(cand.assign(**{"recall@5": 0.5}), metrics=["recall@5"], n_resamples=50, n_permutations=50)
    assert caught.value.rows == [n - 1 - 7]
    with pytest.raises(RowTableError, match=r"^rag\.summary: .* -0\.5 at row r7 \(question_id 'q7'\)") as caught:
        labelled.rag.summary(metrics=["recall@5"])
    assert caught.value.rows == [n - 1 - 7]
    # the pure functions on arrays keep positions in the arrays passed
    with pytest.raises(RowTableError, match=r"^compare: .* in `cand` outside it: 1\.7 at row 34\.") as caught:
        stats.compare({"recall@5": base["recall@5"].to_numpy()}, {"recall@5": cand["recall@5"].to_numpy()})
    assert caught.value.rows == [34]


def test_the_row_table_docstrings_list_the_columns_their_tables_hold_in_order():
    # runs.summary / compare / gate (rows.rag.*) document their columns; the tables end with the
    # estimate and interval (and the gate's decision), and the docstrings must say so, in that order.
    import warnings

    from raglab import runs

    rng = np.random.default_rng(0)
    n = 60
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "recall@5": rng.uniform(0, 1, n)})
    cand = base.assign(**{"recall@5": rng.uniform(0, 1, n)})
    fast = {"n_resamples": 100, "n_permutations": 100}

    def doc(function):
        return " ".join(function.__doc__.split())

    def listed(columns):
        return "``" + ", ".join(columns) + "``"

    summary = list(runs.summary(base, metrics=["recall@5"]).columns)
    compared = list(runs.compare(base, cand, metrics=["recall@5"], **fast).columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        gated = list(runs.gate(base, cand, margin=0.02, metrics=["recall@5"], **fast).table.columns)
    assert summary[-3:] == ["mean", "low", "high"] and compared[-3:] == ["diff", "low", "high"]
    assert listed(summary) in doc(runs.summary)
    assert listed(compared) in doc(runs.compare)
    assert gated[: len(compared) - 3] == compared[:-3]  # the compare columns, then the gate's
    assert listed(gated[len(compared) - 3: -4]) in doc(runs.gate) and listed(gated[-4:]) in doc(runs.gate)
