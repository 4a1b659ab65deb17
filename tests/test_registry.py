"""Metric names: parsing and direction."""

import pytest

from raglab._registry import NoDirection, NoDirectionError, is_id_name, metric_info, register_metric


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
        ("correct_decline", "correct_decline", None, True, True),
        ("false_decline", "false_decline", None, False, True),
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
    sentiment = [0.6 + 0.3 * ((7 * i) % 11) / 10 for i in range(50)]
    base = pd.DataFrame({"question_id": ids, "sentiment": sentiment, "recall@5": 1.0})
    cand = base.assign(sentiment=[s - 0.3 - 0.05 * (i % 3) for i, s in enumerate(sentiment)])  # a clear, varying drop
    with pytest.warns(UserWarning, match=r"guessed from the metric name which way is better \('sentiment': higher is better\)"):
        result = base.rag.gate(cand, metrics=["sentiment"], margin=0.02, n_resamples=200)
    assert result.decision == "block"  # a clear drop of a higher-is-better score blocks
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        base.rag.gate(cand, metrics=["sentiment"], margin=0.02, higher_is_better={"sentiment": True}, n_resamples=200)
        base.rag.gate(cand, metrics=["recall@5"], margin=0.02, n_resamples=200)


# ---- metrics without a direction: the pooled decline flag -------------------------------------------


def test_declined_has_no_direction_and_refuses_to_be_used_as_one():
    info = metric_info("declined")
    assert info.known and info.binary and not info.has_direction
    assert isinstance(info.higher_is_better, NoDirection) and repr(info.higher_is_better) == "no direction"
    with pytest.raises(NoDirectionError, match=r"'declined' has no direction: declining an unanswerable question is good"):
        bool(info.higher_is_better)
    with pytest.raises(ValueError, match=r"Compare `correct_decline` \(higher is better.*`false_decline` \(lower is better"):
        assert ("higher" if info.higher_is_better else "lower") is None  # raises before comparing
    assert metric_info("correct_decline").has_direction and metric_info("false_decline").has_direction


@pytest.mark.parametrize(
    ("name", "higher"),
    [("declined_mean", None), ("refusal_rate", None), ("abstention", None), ("declined@3", None),
     ("false_refusal_rate", False), ("wrongly_declined", False), ("answerable_declined", False),
     ("correct_refusal", True), ("unanswerable_declined", True)],
)
def test_names_built_on_a_decline_word_have_no_direction_unless_a_word_says_which_questions(name, higher):
    info = metric_info(name)
    if higher is None:
        assert not info.has_direction
        with pytest.raises(NoDirectionError, match=f"'{name}' has no direction"):
            bool(info.higher_is_better)
    else:
        assert info.higher_is_better is higher


def test_register_metric_without_a_direction():
    register_metric("verbosity_shift", higher_is_better=None, bounded=False, description="answer length change")
    info = metric_info("verbosity_shift")
    assert info.known and not info.has_direction
    with pytest.raises(NoDirectionError, match="registered without one"):
        bool(info.higher_is_better)
    with pytest.raises(TypeError, match="must be True, False or None"):
        register_metric("bad", higher_is_better="up")


def test_gate_on_the_pooled_decline_flag_refuses_unless_given_a_direction():
    import numpy as np
    import pandas as pd

    import raglab  # noqa: F401

    ids = [f"q{i}" for i in range(400)]
    base = pd.DataFrame({"question_id": ids, "declined": (np.arange(400) < 40).astype(float)})  # 10% declined
    cand = base.assign(declined=(np.arange(400) < 120).astype(float))                           # 30% declined
    with pytest.raises(NoDirectionError, match=r"'declined' has no direction.*higher_is_better=\{'declined': False\}"):
        base.rag.gate(cand, metrics=["declined"], margin=0.02, n_resamples=500)
    stated = base.rag.gate(cand, metrics=["declined"], margin=0.02, n_resamples=500, higher_is_better={"declined": False})
    assert stated.decision == "block"  # with the direction stated, the rise from 10% to 30% blocks


@pytest.mark.parametrize(
    ("name", "is_id"),
    [("question_id", True), ("id", True), ("ID", True), ("doc_ids", True), ("passage-id", True), ("questionId", True),
     ("qid", True), ("docid", True), ("uuid", True), ("valid", False), ("paid", False), ("rapid_score", False),
     ("idf", False), ("recall@5", False), ("identity_match", False)],
)
def test_id_names(name, is_id):
    assert is_id_name(name) is is_id

