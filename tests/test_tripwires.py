"""Tripwires: citation validity and the lexical support check (no LLM)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.tripwires import (
    STOP_WORDS,
    citation_validity,
    content_words,
    lexical_support,
    sentence_support,
    split_sentences,
)

# Seed 001, section 4 ("Faithfulness"): the covering-index example, scored with the seed's own stop
# list and without removing citation markers. Expected support computed by hand from the seed's
# definition |content words of sentence & content words of context| / |content words of sentence|:
#   S1 covering index holds every column query needs 1      -> 6/8 (holds, 1 missing)
#   S2 explain then shows using index 1                     -> 4/6 (then, 1 missing)
#   S3 covering indexes also compress table about 90 percent 1 -> 2/9 (covering, table found)
SEED_STOP = set(["a", "an", "the", "is", "are", "was", "of", "to", "in", "on", "for", "and", "or", "it", "its", "this", "that", "with", "by", "as", "at", "be", "can"])
SEED_CONTEXT = ("A covering index contains every column the query needs, so InnoDB can answer "
                "from the index alone without looking up the table rows. EXPLAIN shows 'Using index'.")
SEED_ANSWER = ("A covering index holds every column the query needs [1]. "
               "EXPLAIN then shows 'Using index' [1]. "
               "Covering indexes also compress the table by about 90 percent [1].")


def test_seed_covering_index_example():
    out = lexical_support([SEED_ANSWER], [SEED_CONTEXT], stop_words=SEED_STOP, strip_citations=False)
    assert out.loc[0, "support"] == pytest.approx([6 / 8, 4 / 6, 2 / 9])
    assert out.loc[0, "n_sentences"] == 3
    assert out.loc[0, "n_supported"] == 2  # OK, OK, CHECK at the seed's 0.6 threshold
    assert out.loc[0, "supported_share"] == pytest.approx(2 / 3)
    assert out.loc[0, "min_support"] == pytest.approx(2 / 9)
    assert bool(out.loc[0, "flagged"])


def test_default_strips_citations_and_uses_own_stop_words():
    out = lexical_support([SEED_ANSWER], [SEED_CONTEXT])
    # S1 without "[1]": 6 of 7 words (holds missing); S2: "then" is a stop word here -> 4/4;
    # S3: covering indexes compress table 90 percent -> 2/6.
    assert out.loc[0, "support"] == pytest.approx([6 / 7, 1.0, 2 / 6])


def test_missing_and_empty_answers_and_contexts():
    out = lexical_support([None, "", "Paris is big.", "Paris is big."], ["x", "x", None, ["Paris", "is big"]])
    assert out["n_sentences"].tolist() == [0, 0, 1, 1]
    assert np.isnan(out.loc[0, "supported_share"]) and np.isnan(out.loc[1, "supported_share"])
    assert out.loc[2, "support"] == [0.0]  # no context: nothing supports
    assert out.loc[3, "support"] == [1.0]  # a list of passages is joined
    assert out["flagged"].tolist() == [False, False, True, False]


def test_sentences_without_content_words_are_skipped():
    out = lexical_support(["It is. Paris is big."], ["Paris is big"])
    assert out.loc[0, "sentences"] == ["Paris is big."]


def test_series_index_is_kept():
    answers = pd.Series(["Paris is big.", "Rome."], index=["a", "b"])
    out = lexical_support(answers, pd.Series(["Paris is big", "Lyon"], index=["a", "b"]))
    assert out.index.tolist() == ["a", "b"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="same length"):
        lexical_support(["a"], ["a", "b"])
    with pytest.raises(ValueError, match=r"`threshold` must be a number in \[0, 1\]"):
        lexical_support(["a"], ["a"], threshold=1.5)
    with pytest.raises(TypeError, match="position 1 holds int"):
        lexical_support(["a", 3], ["a", "b"])
    with pytest.raises(TypeError, match="not a single string"):
        lexical_support("a", ["a"])


def _oracle(answer: str, context: str, threshold: float) -> list[tuple[float, bool]]:
    """Plain-Python support per sentence, written from the seed's definition."""
    def words(text: str) -> set[str]:
        text = re.sub(r"\[\s*\d+(?:\s*(?:,|-)\s*\d+)*\s*\]", " ", text)
        return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS}

    ctx = words(context)
    out = []
    for sentence in split_sentences(answer):
        w = words(sentence)
        if w:
            s = len(w & ctx) / len(w)
            out.append((s, s >= threshold))
    return out


VOCAB = ["paris", "rome", "is", "the", "capital", "big", "old", "not", "1937", "river", "[2]", "[1, 3]"]
sentence_st = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=6).map(lambda ws: " ".join(ws))
text_st = st.lists(sentence_st, min_size=0, max_size=4).map(lambda ss: ". ".join(ss) + ("." if ss else ""))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(text_st, text_st), min_size=1, max_size=6), st.sampled_from([0.0, 0.5, 0.6, 1.0]))
def test_matches_a_per_sentence_oracle(pairs, threshold):
    answers, contexts = zip(*pairs)
    out = lexical_support(list(answers), list(contexts), threshold=threshold)
    for i, (answer, context) in enumerate(pairs):
        expected = _oracle(answer, context, threshold)
        assert out.loc[i, "support"] == pytest.approx([s for s, _ in expected])
        assert out.loc[i, "n_supported"] == sum(ok for _, ok in expected)
        assert out.loc[i, "n_sentences"] == len(expected)


def test_sentence_support_and_content_words():
    assert content_words("The bridge is NOT open [2].") == {"bridge", "not", "open"}
    assert np.isnan(sentence_support("It is.", "anything"))
    assert sentence_support("Bridges open", "bridges") == 0.5
    assert split_sentences(None) == []


# ---- citation validity ----------------------------------------------------------------------------


def test_citation_validity_examples():
    out = citation_validity(
        ["Paris [1]. Lyon [2].", "Rome [3].", "No citations.", "Range [1-3] and list [2, 4].", None, "Zero [0]."],
        [["a", "b"], ["a", "b"], ["a"], 4, None, ["a"]],
    )
    assert out["citations"].tolist() == [[1, 2], [3], [], [1, 2, 3, 2, 4], [], [0]]
    assert out["invalid"].tolist() == [[], [3], [], [], [], [0]]
    assert out["valid"].tolist() == [True, False, True, True, True, False]
    assert out["has_citations"].tolist() == [True, True, False, True, False, True]
    assert out["n_passages"].tolist() == [2, 2, 1, 4, 0, 1]


def test_citation_validity_zero_based_and_str_context():
    out = citation_validity(["A [0] [1].", "B [1]."], [["x", "y"], "one passage"], base=0)
    assert out["valid"].tolist() == [True, False]
    assert out["invalid"].tolist() == [[], [1]]


def test_citation_validity_errors():
    with pytest.raises(ValueError, match=r"The value for `base` must be one of \[0, 1\], but 2 was passed."):
        citation_validity(["a"], [["x"]], base=2)
    with pytest.raises(ValueError, match="same length"):
        citation_validity(["a"], [])
    with pytest.raises(TypeError, match=r"`contexts` position 0: expected a list of passages"):
        citation_validity(["a [1]"], [{"x": 1}])
    with pytest.raises(ValueError, match="cannot be negative"):
        citation_validity(["a [1]"], [-1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 6), max_size=5), st.integers(0, 5)), min_size=1, max_size=8))
def test_citation_validity_matches_a_set_oracle(cases):
    answers = [" ".join(f"claim [{n}]." for n in cited) for cited, _ in cases]
    contexts = [["p"] * k for _, k in cases]
    out = citation_validity(answers, contexts)
    for i, (cited, k) in enumerate(cases):
        assert out.loc[i, "citations"] == cited
        assert out.loc[i, "invalid"] == [n for n in cited if not 1 <= n <= k]
        assert out.loc[i, "valid"] == all(1 <= n <= k for n in cited)


def test_vectorised_on_a_log_sized_batch():
    rng = np.random.default_rng(0)
    n = 5_000
    answers = [f"The value is {v} [{c}]." for v, c in zip(rng.integers(0, 100, n), rng.integers(1, 6, n))]
    contexts = [[f"The value is {v}."] * 3 for v in rng.integers(0, 100, n)]
    cites = citation_validity(answers, contexts)
    support = lexical_support(answers, contexts)
    assert cites["valid"].sum() == sum(int(re.search(r"\[(\d)\]", a).group(1)) <= 3 for a in answers)
    assert len(support) == n and support["n_sentences"].eq(1).all()
