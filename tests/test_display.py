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
