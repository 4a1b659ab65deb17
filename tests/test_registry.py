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
