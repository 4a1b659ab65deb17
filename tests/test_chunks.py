"""Chunk tables (raglab.chunks): windows tile every document, respect their size, and number in order."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab import chunks
from raglab.chunks import COLUMNS, fixed, from_spans, sentences

WORDS = st.lists(st.sampled_from(["a", "bb", "ccc", "dd.", "e!", "f,g", "Hi?", "x"]), max_size=30)
SEPARATORS = st.sampled_from([" ", "  ", "\n", " \n\n "])


@st.composite
def texts(draw):
    words = draw(WORDS)
    seps = draw(st.lists(SEPARATORS, min_size=len(words) + 1, max_size=len(words) + 1))
    text = seps[0] if draw(st.booleans()) else ""
    for word, sep in zip(words, seps[1:]):
        text += word + (sep if draw(st.booleans()) or word is not words[-1] else "")
    return text


def _check_table(table, docs):
    """Structure shared by every chunk table: columns, per-document positions, offsets within the text."""
    assert table.columns.tolist() == COLUMNS
    for doc_id, group in table.groupby("doc_id", sort=False):
        length = docs[doc_id] if isinstance(docs[doc_id], int) else len(docs[doc_id])
        assert group["position"].tolist() == list(range(len(group)))
        assert group["chunk_id"].tolist() == [f"{doc_id}#{p}" for p in range(len(group))]
        assert (group["start"] < group["end"]).all() and (group["end"] <= length).all()
        assert group["start"].is_monotonic_increasing


def _covers_every_character(table, docs):
    for doc_id, value in docs.items():
        length = value if isinstance(value, int) else len(value)
        seen = np.zeros(length, dtype=bool)
        for s, e in table.loc[table["doc_id"] == doc_id, ["start", "end"]].itertuples(index=False):
            seen[s:e] = True
        assert seen.all(), (doc_id, np.flatnonzero(~seen)[:5])


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 80), min_size=1, max_size=5), size=st.integers(1, 20), data=st.data())
def test_fixed_chars_tile_every_document(lengths, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    docs = {f"d{i}": n for i, n in enumerate(lengths)}
    table = fixed(docs, size, overlap=overlap)
    _check_table(table, docs)
    _covers_every_character(table, docs)
    assert ((table["end"] - table["start"]) <= size).all()
    for doc_id, n in docs.items():
        group = table[table["doc_id"] == doc_id]
        if n == 0:
            assert group.empty
            continue
        assert group["start"].tolist() == list(range(0, len(group) * (size - overlap), size - overlap))
        assert group["end"].iloc[-1] == n
        # No redundant window: the one before the last does not already reach the end.
        if len(group) > 1:
            assert group["end"].iloc[-2] < n
            # Consecutive windows share exactly `overlap` characters.
            assert (group["end"].to_numpy()[:-1] - group["start"].to_numpy()[1:] == overlap).all()
    # A length and the text of that length give the same table.
    as_text = {d: "x" * n for d, n in docs.items()}
    pd.testing.assert_frame_equal(fixed(as_text, size, overlap=overlap), table)


def test_fixed_chars_worked_example():
    # 10 characters, size 4, overlap 1: windows start every 3 characters: [0,4) [3,7) [6,10).
    table = fixed(pd.Series({"a": "abcdefghij"}), 4, overlap=1)
    assert table[["start", "end", "position"]].values.tolist() == [[0, 4, 0], [3, 7, 1], [6, 10, 2]]
    assert table.attrs["raglab"]["chunks"] == {"method": "fixed", "size": 4, "overlap": 1, "unit": "chars"}


@settings(max_examples=200, deadline=None)
@given(text=texts(), size=st.integers(1, 6), data=st.data(), unit=st.sampled_from(["words", "tokens"]))
def test_fixed_words_and_tokens_tile_and_respect_size(text, size, data, unit):
    overlap = data.draw(st.integers(0, size - 1))
    docs = {"d": text}
    table = fixed(docs, size, overlap=overlap, unit=unit)
    _check_table(table, docs)
    _covers_every_character(table, docs)
    pattern = r"\S+" if unit == "words" else chunks.token_approximation
    units = [m.span() for m in re.finditer(pattern, text)]
    for s, e in table[["start", "end"]].itertuples(index=False):
        assert len(re.findall(pattern, text[s:e])) <= size
        # Windows start at a unit (the first at 0) and never split one.
        assert s == 0 or any(u[0] == s for u in units)
        assert not any(u[0] < s < u[1] or u[0] < e < u[1] for u in units)
    if units:
        assert table["end"].iloc[-1] == len(text)
        n = len(units)
        assert len(table) == 1 + -(-max(n - size, 0) // (size - overlap))
    if overlap == 0:
        assert "".join(text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)) == text


def test_fixed_words_worked_example():
    text = "One two three four five."
    table = fixed({"d": text}, 2, unit="words")
    assert [text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)] == ["One two ", "three four ", "five."]
    table = fixed({"d": text}, 3, overlap=1, unit="words")
    assert [text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)] == ["One two three ",
                                                                                       "three four five."]


def test_fixed_tokens_states_its_approximation():
    table = fixed({"d": "Hello, world! It's 42."}, 3, unit="tokens")
    tokenizer = table.attrs["raglab"]["chunks"]["tokenizer"]
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        assert tokenizer.startswith("approximation")
        # Tokens: Hello , world ! It ' s 42 .  -> windows of 3.
        text = "Hello, world! It's 42."
        assert [text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)] == ["Hello, world", "! It'",
                                                                                           "s 42."]
    else:  # pragma: no cover
        assert "tiktoken" in tokenizer


def test_fixed_empty_and_blank_documents():
    table = fixed({"empty": "", "blank": "   ", "x": "a"}, 2, unit="words")
    assert table[["doc_id", "start", "end"]].values.tolist() == [["blank", 0, 3], ["x", 0, 1]]
    assert fixed({}, 3).columns.tolist() == COLUMNS
    assert fixed({}, 3, unit="words").empty


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"size": 0}, ValueError, "`size` must be an integer >= 1"),
        ({"size": 3, "overlap": 3}, ValueError, "overlap < size"),
        ({"size": 3, "overlap": -1}, ValueError, "`overlap` must be an integer >= 0"),
        ({"size": 3, "unit": "lines"}, ValueError, "`unit`"),
        ({"size": 2.5}, ValueError, "`size`"),
    ],
)
def test_fixed_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        fixed({"a": "abc"}, **kwargs)


def test_fixed_docs_errors():
    with pytest.raises(TypeError, match="mapping or a pandas Series"):
        fixed(["abc"], 2)
    with pytest.raises(TypeError, match="lengths only work with unit='chars'"):
        fixed({"a": 10}, 2, unit="words")
    with pytest.raises(ValueError, match="negative length"):
        fixed({"a": -1}, 2)
    with pytest.raises(TypeError, match=r"`docs`\['a'\] must be the document's text"):
        fixed({"a": 1.5}, 2)
    with pytest.raises(ValueError, match="repeats doc_id 'a'"):
        fixed(pd.Series(["x", "y"], index=["a", "a"]), 2)


@settings(max_examples=200, deadline=None)
@given(text=texts(), max_chars=st.integers(1, 30))
def test_sentences_tile_and_respect_max_chars(text, max_chars):
    table = sentences({"d": text}, max_chars=max_chars)
    _check_table(table, {"d": text})
    pieces = [text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)]
    assert "".join(pieces) == text
    assert all(len(p) <= max_chars for p in pieces)
    # Every window ends at a sentence end, at the text's end, or (a long sentence) a multiple of max_chars in.
    ends = {m.end() for m in re.finditer(r"[.!?]+[\"'\u201d\u2019)\]]*\s+|\n\s*", text)} | {len(text)}
    starts = [0, *sorted(ends)]
    for s, e in table[["start", "end"]].itertuples(index=False):
        sentence_start = max(b for b in starts if b <= s)
        assert e in ends or (e - sentence_start) % max_chars == 0


def test_sentences_worked_example():
    text = "Cats purr. Dogs bark loudly! Fish swim.\nA very long sentence without end"
    table = sentences({"d": text}, max_chars=15)
    assert [text[s:e] for s, e in table[["start", "end"]].itertuples(index=False)] == [
        "Cats purr. ", "Dogs bark loudl", "y! ", "Fish swim.\n", "A very long sen", "tence without e", "nd"]
    # "Dogs bark loudly! " (18 characters) is split every 15 from its start; its last piece "y! " is not
    # packed with the next sentence, so every window starts at a sentence start or inside a long sentence.
    assert table.attrs["raglab"]["chunks"] == {"method": "sentences", "max_chars": 15}


def test_sentences_refuse_lengths():
    with pytest.raises(TypeError, match="lengths only work"):
        sentences({"d": 10})


def test_from_spans_sorts_numbers_and_keeps_ids():
    spans = [
        {"chunk_id": "b2", "doc_id": "b", "start": 5, "end": 9, "source": "x"},
        {"chunk_id": "a1", "doc_id": "a", "start": 10, "end": 20, "source": "y"},
        {"chunk_id": "b1", "doc_id": "b", "start": 0, "end": 5, "source": "z"},
        {"chunk_id": "a0", "doc_id": "a", "start": 0, "end": 12, "source": "w"},
    ]
    table = from_spans(spans)
    assert table.columns.tolist() == [*COLUMNS, "source"]
    assert table[["chunk_id", "position"]].values.tolist() == [["b1", 0], ["b2", 1], ["a0", 0], ["a1", 1]]
    made = from_spans(pd.DataFrame(spans).drop(columns="chunk_id"))
    assert made["chunk_id"].tolist() == ["b#0", "b#1", "a#0", "a#1"]
    renamed = pd.DataFrame({"doc": ["a"], "s": [3], "e": [4]})
    assert from_spans(renamed, doc_id="doc", start="s", end="e").values.tolist() == [["a#0", "a", 3, 4, 0]]
    # A table from fixed() is adopted unchanged.
    fixed_table = fixed({"a": 10, "b": 5}, 4, overlap=2)
    pd.testing.assert_frame_equal(from_spans(fixed_table), fixed_table)
    assert from_spans([]).columns.tolist() == COLUMNS


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (pd.DataFrame({"doc_id": ["a"], "start": [0]}), r"needs column\(s\) \['end'\]"),
        (pd.DataFrame({"doc_id": ["a"], "start": [0.5], "end": [3]}), "integer character offsets; row 0"),
        (pd.DataFrame({"doc_id": ["a"], "start": [3], "end": [3]}), "0 <= start < end"),
        (pd.DataFrame({"doc_id": ["a"], "start": [-1], "end": [3]}), "0 <= start < end"),
        (pd.DataFrame({"doc_id": [None], "start": [0], "end": [3]}), "missing in row 0"),
        (pd.DataFrame({"chunk_id": ["x", "x"], "doc_id": ["a", "a"], "start": [0, 3], "end": [3, 6]}),
         r"unique; \['x'\] repeat"),
        (pd.DataFrame({"chunk_id": ["x", None, None], "doc_id": ["a"] * 3, "start": [0, 3, 6], "end": [3, 6, 9]}),
         "has missing ids"),  # not "[None] repeat"
        ("not a table", "DataFrame or a list of dicts"),
    ],
)
def test_from_spans_errors(table, match):
    with pytest.raises((TypeError, ValueError), match=match):
        from_spans(table)


def _snap_oracle(text: str, size: int, fraction: float) -> list[tuple[int, int]]:
    # The SQuAD build's original chunker, written independently: end after the last space in the
    # window's final share, else cut at size; the last window ends at the text's end.
    spans, start, n = [], 0, len(text)
    while start < n:
        end = min(n, start + size)
        if end < n:
            cut = text.rfind(" ", start + int(size * (1 - fraction)), end)
            if cut > start:
                end = cut + 1
        spans.append((start, end))
        start = end
    return spans


@pytest.mark.parametrize("seed", range(5))
def test_snapped_windows_match_the_reference_chunker_and_tile_the_text(seed):
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list("abcdefgh"), size=rng.integers(1, 15))) for _ in range(400)]
    text = " ".join(words) + "\n\n" + " ".join(words[:50])
    for size in (20, 64, 100):
        table = chunks.fixed({"d": text}, size, snap=" ")
        got = list(zip(table["start"].tolist(), table["end"].tolist()))
        assert got == _snap_oracle(text, size, 0.2)
        assert got[0][0] == 0 and got[-1][1] == len(text)
        assert all(e1 == s2 for (_, e1), (s2, _) in zip(got, got[1:]))
        assert all(0 < e - s <= size for s, e in got)


def test_snap_needs_text_and_chars():
    with pytest.raises(TypeError, match="give only a length"):
        chunks.fixed({"d": 100}, 10, snap=" ")
    with pytest.raises(ValueError, match="unit='chars'"):
        chunks.fixed({"d": "a b c"}, 2, unit="words", snap=" ")


def test_from_spans_refuses_a_column_it_would_overwrite():
    # doc_id="doc" beside an unrelated 'doc_id' column: chunk ids were built from the wrong documents
    table = pd.DataFrame({"doc": ["a", "b"], "s": [0, 0], "e": [5, 5], "doc_id": ["z", "z"], "start": [9, 9]})
    with pytest.raises(ValueError, match=r"has column\(s\) \['doc_id', 'start'\] besides the ones it reads"):
        from_spans(table, doc_id="doc", start="s", end="e")
    numbered = pd.DataFrame({"chunk_id": ["c1"], "doc_id": ["a"], "start": [0], "end": [5]})
    with pytest.raises(ValueError, match=r"\['chunk_id'\].*chunk_id='chunk_id' to keep your chunk ids"):
        from_spans(numbered, chunk_id=None)
    assert from_spans(numbered)["chunk_id"].tolist() == ["c1"]


# --------------------------------------------------------------------------------------------------
# Doc ids that would make bad chunk ids (issue 19)
# --------------------------------------------------------------------------------------------------


def test_doc_ids_that_print_alike_are_refused_naming_both():
    with pytest.raises(ValueError, match=r"`docs` doc_id holds 1 and '1': different ids that print alike.*'1#0'"):
        chunks.fixed({1: 10, "1": 10}, size=5)
    with pytest.raises(ValueError, match=r"doc_id holds 1 and '1'"):
        chunks.sentences({1: "A b. C d.", "1": "E f."})
    spans = [{"doc_id": 1, "start": 0, "end": 5}, {"doc_id": "1", "start": 0, "end": 5}]
    with pytest.raises(ValueError, match=r"`table` column 'doc_id' holds 1 and '1'"):
        chunks.from_spans(spans)
    # with chunk ids of their own, no id is made from the doc ids: kept as given
    named = chunks.from_spans([{**s, "chunk_id": c} for s, c in zip(spans, ["x", "y"])])
    assert named["chunk_id"].tolist() == ["x", "y"] and named["doc_id"].tolist() == [1, "1"]


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NA])
def test_a_missing_doc_id_is_refused_not_turned_into_nan_chunk_ids(missing):
    with pytest.raises(ValueError, match=r"`docs` has a missing doc_id"):
        chunks.fixed({missing: 10, "a": 10}, size=5)
    with pytest.raises(ValueError, match=r"`docs` has a missing doc_id"):
        chunks.sentences({missing: "A b. C d."})
    with pytest.raises(ValueError, match=r"column 'doc_id' is missing in row 0"):
        chunks.from_spans([{"doc_id": missing, "start": 0, "end": 5}])
