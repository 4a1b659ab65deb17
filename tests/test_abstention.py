"""The lexical refusal detector."""

import numpy as np
import pytest

from raglab.abstention import detect_declined

REFUSALS = [
    "I don't know.",
    "I do not know the answer to that.",
    "Sorry, I cannot answer this question.",
    "The context does not mention when the bridge opened.",
    "There is not enough information in the passages to say.",
    "The opening date is not mentioned in the documents.",
    "I'm unable to determine that from the sources.",
]
ANSWERS = [
    "The bridge opened in 1932.",
    "Paris is the capital of France [1].",
    "It knows no bounds: the river floods every spring.",
    "Information retrieval systems rank documents.",
]


def test_refusals_and_answers():
    assert detect_declined(REFUSALS).all()
    assert not detect_declined(ANSWERS).any()


def test_empty_and_missing():
    assert detect_declined(["", "   ", None]).tolist() == [True, True, True]
    assert detect_declined(["", None], empty_is_declined=False).tolist() == [False, False]


def test_custom_patterns_replace_the_defaults():
    out = detect_declined(["NO_ANSWER", "I don't know"], patterns=[r"^NO_ANSWER$"])
    assert out.tolist() == [True, False]


def test_bad_input():
    with pytest.raises(TypeError, match=r"answers must be str or None; position 1 holds int 3"):
        detect_declined(["a", 3])
    with pytest.raises(ValueError, match="`patterns` is empty"):
        detect_declined(["a"], patterns=[])


def test_returns_numpy_bool():
    out = detect_declined(np.array(["I don't know", "yes"], dtype=object))
    assert out.dtype == bool and out.tolist() == [True, False]
