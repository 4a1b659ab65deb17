"""The judge's known biases measured on labelled rows (verbosity, self-preference, position), and the
agreement report's advice: prediction-powered inference for labels from the run, Rogan-Gladen for
error rates carried over from a separate validation set."""

from __future__ import annotations

import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab import agreement
from raglab._meta import update_meta

HUMAN = [1] * 150 + [0] * 50
JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28


# ---- the report's recommendation -----------------------------------------------------------------


def test_labels_from_the_run_recommend_ppi():
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "human": HUMAN, "judge": JUDGE})
    update_meta(rows, "sampling", {"labelled": {"kind": "labelled", "method": "uniform", "n": 200,
                                                "population": 2000, "seed": 0}})
    rep = rows.rag.agreement("human", "judge", positive=1, warn=False)
    text = rep.recommendation
    assert text.startswith("The labels are a random sample of this run's rows")
    assert "prediction-powered" in text and "raglab.stats.ppi_mean" in text and "rows.rag.estimate" in text
    assert "Rogan-Gladen only for other runs" in text
    assert "recommendation" in repr(rep) and "prediction-powered" in rep._repr_html_()
    assert rep.to_dict()["recommendation"] == text


def test_labels_from_a_validation_set_keep_rogan_gladen():
    rep = agreement.report(HUMAN, JUDGE, positive=1, labels_from="validation", warn=False)
    assert rep.recommendation.startswith("The labels come from a separate validation set: the Rogan-Gladen")
    assert "report.correct" in rep.recommendation
    # the recommended correction is the one the report carries
    assert round(rep.correct(0.70, 400).estimate, 3) == 0.513


def test_unknown_origin_gives_both_with_their_conditions():
    rep = agreement.report(HUMAN, JUDGE, positive=1, warn=False)
    text = rep.recommendation
    assert text.startswith("If the labels are a random sample of the rows")
    assert "prediction-powered" in text and "If they come from a separate validation set" in text
    assert "Rogan-Gladen" in text and "reused across systems support neither" in text
    assert agreement.report(HUMAN, JUDGE, positive=1, labels_from="run", warn=False).recommendation.startswith(
        "The labels are a random sample")
    with pytest.raises(ValueError, match="labels_from"):
        agreement.report(HUMAN, JUDGE, positive=1, labels_from="elsewhere")


def test_no_pass_label_no_rate_advice():
    rep = agreement.report(["a", "b", "a", "c"] * 10, ["a", "b", "b", "c"] * 10, warn=False)
    assert rep.recommendation == ""
