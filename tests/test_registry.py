"""Metric names: parsing and direction."""

import pytest

from raglab._registry import metric_info, register_metric


@pytest.mark.parametrize(
    ("name", "base", "k", "higher", "binary"),
    [
        ("recall@5", "recall", 5, True, False),
        ("hit@10", "hit", 10, True, True),
        ("ndcg@3", "ndcg", 3, True, False),
        ("rr", "rr", None, True, False),
        ("faithfulness", "faithfulness", None, True, False),
        ("latency", "latency", None, False, False),
        ("latency_ms", "latency_ms", None, False, False),
        ("hallucination_rate", "hallucination_rate", None, False, False),
        ("my_score", "my_score", None, True, False),
    ],
)
def test_metric_info(name, base, k, higher, binary):
    info = metric_info(name)
    assert (info.base, info.k, info.higher_is_better, info.binary) == (base, k, higher, binary)


def test_register_metric():
    register_metric("toxicity_free", higher_is_better=True, binary=True)
    assert metric_info("toxicity_free").binary


@pytest.mark.parametrize(
    ("name", "higher"),
    [("sentiment", True), ("uptime", True), ("timeliness", True), ("error_free_rate", True),
     ("no_hallucination", True), ("time_to_first_token", False), ("cost_usd", False), ("p95_latency_ms", False)],
)
def test_direction_is_guessed_from_whole_words(name, higher):
    info = metric_info(name)
    assert info.higher_is_better is higher and info.known is False


def test_gate_warns_when_it_guesses_a_direction():
    import pandas as pd

    import raglab  # noqa: F401

    ids = [f"q{i}" for i in range(50)]
    base = pd.DataFrame({"question_id": ids, "sentiment": 0.8, "recall@5": 1.0})
    cand = base.assign(sentiment=0.5)
    with pytest.warns(UserWarning, match=r"guessed from the metric name which way is better \('sentiment': higher is better\)"):
        result = base.rag.gate(cand, metrics=["sentiment"], margin=0.02, n_resamples=200)
    assert result.decision == "block"  # a clear drop of a higher-is-better score blocks
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        base.rag.gate(cand, metrics=["sentiment"], margin=0.02, higher_is_better={"sentiment": True}, n_resamples=200)
        base.rag.gate(cand, metrics=["recall@5"], margin=0.02, n_resamples=200)
