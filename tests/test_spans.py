"""Gold as character spans: relevance by overlap, recall over spans, coverage, re-chunking.

Oracles: hand-computed cases (the arithmetic is in the comments), the equivalence with id gold when
every chunk is a whole document (scored by raglab.metrics' per-question functions, which are checked
against trec_eval elsewhere), and the per-question span definition for the bulk path.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import raglab
from raglab import metrics
from raglab.metrics.spans import check_min_overlap, span_metrics, span_retrieval_scores


def span(doc, start, end, **extra):
    return {"doc_id": doc, "start": start, "end": end, **extra}


GOLD = [span("a", 100, 200)]  # 100 gold characters in document "a"
# The same corpus cut two ways; each retrieved list holds the span of each chunk that reached the model.
CHUNKS_100 = [span("a", 200, 300), span("a", 100, 200), span("b", 0, 100)]  # 100-char chunks
CHUNKS_150 = [span("a", 150, 300), span("a", 0, 150)]  # 150-char chunks: the gold span is split in two


def test_same_labels_score_two_chunkings_without_relabelling():
    rows = pd.DataFrame(
        {
            "question_id": ["q1", "q1"],
            "run": ["100-char chunks", "150-char chunks"],
            "gold_spans": [GOLD, GOLD],
            "retrieved_spans": [CHUNKS_100, CHUNKS_150],
        }
    )
    small = rows[rows["run"] == "100-char chunks"].rag.retrieval(k=[1, 2, 3]).iloc[0]
    with pytest.warns(UserWarning, match=r"k=\[3\] is larger than the longest list in 'retrieved_spans' \(2\)"):
        large = rows[rows["run"] == "150-char chunks"].rag.retrieval(k=[1, 2, 3]).iloc[0]
    # 100-char chunks: a[200,300) misses; a[100,200) holds all 100 gold characters at rank 2.
    assert (small["recall@1"], small["recall@2"], small["rr"]) == (0.0, 1.0, 0.5)
    assert small["precision@3"] == pytest.approx(1 / 3)
    assert (small["coverage@1"], small["coverage@2"]) == (0.0, 1.0)
    # 150-char chunks: each chunk holds 50 of the 100 gold characters. The span is found at rank 2, where
    # the two pieces together hold all of it; the chunk completing it is the one relevant chunk.
    assert (large["recall@1"], large["recall@2"], large["rr"]) == (0.0, 1.0, 0.5)
    assert (large["precision@1"], large["precision@2"]) == (0.0, 0.5)
    assert (large["coverage@1"], large["coverage@2"]) == (0.5, 1.0)
    # rank 2: nDCG = (1/log2 3) / 1, AP = (1/2) / 1, R-precision = precision at R = 1: 0
    assert (large["ndcg@2"], large["ap"], large["r_precision"]) == (1 / math.log2(3), 0.5, 0.0)
    assert large.name == 1 and rows.loc[[1]].rag.retrieval(k=2).attrs["raglab"]["retrieval"]["span_rule"]["rule"] == "union"
    # the old rule: each half counts alone, so the cut span is "found" at rank 1 and both halves are relevant
    old = rows.loc[[1]].rag.retrieval(k=[1, 2], span_rule="per_chunk").iloc[0]
    assert (old["recall@1"], old["rr"], old["precision@2"], old["ndcg@2"]) == (1.0, 1.0, 1.0, 1.0)


def test_min_overlap_in_characters_and_as_a_fraction():
    # one chunk alone (per_chunk): each 150-char chunk overlaps the 100-char gold span by exactly 50 characters
    assert span_metrics(CHUNKS_150, GOLD, k=2, min_overlap=50, span_rule="per_chunk")["recall@2"] == 1.0
    assert span_metrics(CHUNKS_150, GOLD, k=2, min_overlap=51, span_rule="per_chunk")["recall@2"] == 0.0
    assert span_metrics(CHUNKS_150, GOLD, k=2, min_overlap=0.5, span_rule="per_chunk")["recall@2"] == 1.0
    split = span_metrics(CHUNKS_150, GOLD, k=2, min_overlap=0.6, span_rule="per_chunk")
    assert split["recall@2"] == 0.0 and split["precision@2"] == 0.0
    assert split["coverage@2"] == 1.0  # coverage counts characters whatever the matching rule
    # the union (default): measured over both chunks together: 50 characters at rank 1, 100 at rank 2
    for min_overlap, rr in ((50, 1.0), (51, 0.5), (0.5, 1.0), (0.6, 0.5), (1.0, 0.5), (100, 0.5), (None, 0.5)):
        assert span_metrics(CHUNKS_150, GOLD, k=2, min_overlap=min_overlap)["rr"] == rr, min_overlap
    # a character threshold longer than the gold span is capped at the span: a 10-char span inside a chunk counts
    for rule in ("union", "per_chunk"):
        assert span_metrics([span("a", 0, 500)], [span("a", 10, 20)], k=1, min_overlap=200, span_rule=rule)["recall@1"] == 1.0
        # the whole gold span inside one chunk, as a fraction
        assert span_metrics([span("a", 0, 199), span("a", 0, 200)], GOLD, k=2, min_overlap=1.0, span_rule=rule)["rr"] == 0.5


def test_one_chunk_covering_several_spans():
    gold = [span("a", 0, 50), span("a", 60, 100)]
    out = span_metrics([span("a", 0, 100), span("b", 0, 10)], gold, k=[1, 2])
    assert out["recall@1"] == 1.0 and out["rr"] == 1.0 and out["ap"] == 1.0
    # both spans are credited at rank 1: DCG 2 beats the one-span-per-rank ideal (1 + 1/log2 3); capped at 1
    assert out["ndcg@1"] == 1.0 and out["ndcg@2"] == 1.0
    assert out["precision@2"] == 0.5 and out["coverage@1"] == 1.0


def test_coverage_counts_each_character_once():
    gold = [span("a", 0, 100), span("a", 50, 150)]  # union [0, 150): 150 gold characters
    chunks = [span("a", 0, 60), span("a", 40, 120), span("b", 0, 1000)]  # union on "a": [0, 120)
    out = span_metrics(chunks, gold, k=[1, 3])
    assert out["coverage@1"] == pytest.approx(60 / 150)
    assert out["coverage@3"] == pytest.approx(120 / 150)
    # documents are kept apart: a chunk of "b" at the same offsets covers nothing of "a"
    assert span_metrics([span("b", 0, 150)], gold, k=1)["coverage@1"] == 0.0


def test_graded_spans_and_duplicates():
    gold = [span("a", 0, 10, grade=3), span("a", 20, 30, grade=1), span("a", 0, 10, grade=2), span("a", 40, 50, grade=0)]
    out = span_metrics([span("a", 20, 30), span("a", 0, 10)], gold, k=2, gain="linear")
    # the duplicate span counts once (first label, grade 3); grade 0 is not relevant: R = 2
    ideal = 3 + 1 / math.log2(3)
    assert out["ndcg@2"] == pytest.approx((1 + 3 / math.log2(3)) / ideal)
    assert out["recall@2"] == 1.0 and out["r_precision"] == 1.0


def test_unanswerable_spans_are_nan():
    for gold in (None, [], [span("a", 0, 10, grade=0)]):
        out = span_metrics([span("a", 0, 10)], gold, k=1)
        assert all(math.isnan(v) for v in out.values())


def test_fractional_min_overlap_is_exact_the_issue_case():
    gold = [span("a", 0, 100)]
    assert 0.07 * 100 > 7  # the float product is 7.000000000000001: a float comparison would need 8 characters
    seven, six = [span("a", 93, 300)], [span("a", 94, 300)]  # overlaps of exactly 7 and 6 characters
    assert span_metrics(seven, gold, k=1, min_overlap=0.07)["recall@1"] == 1.0
    assert span_metrics(six, gold, k=1, min_overlap=0.07)["recall@1"] == 0.0
    out = span_retrieval_scores([seven, six], [gold, gold], k=1, min_overlap=0.07)
    assert out["recall@1"].tolist() == [1.0, 0.0]


def written(min_overlap) -> Fraction:
    """The fraction the user wrote: a float's decimal (0.07 -> 7/100), or the Fraction given."""
    return min_overlap if isinstance(min_overlap, Fraction) else Fraction(repr(min_overlap))


FRACTIONS = [round(0.01 * i, 2) for i in range(1, 101)] + [0.07, 0.1 + 0.2, 0.35, 0.15, 1 / 3, 2 / 3, 0.999,
                                                           Fraction(1, 3), Fraction(2, 7), Fraction(7, 100)]


def test_fractional_min_overlap_equals_exact_rationals_for_every_length_and_overlap():
    # every gold span length 1..120 and every overlap 1..length: one question each, scored in bulk
    lengths = np.repeat(np.arange(1, 121), np.arange(1, 121))
    overlaps = np.concatenate([np.arange(1, n + 1) for n in range(1, 121)])
    gold = [[span("a", 0, int(n))] for n in lengths]
    chunks = [[span("a", int(n - o), int(n - o) + 500)] for n, o in zip(lengths, overlaps)]
    shares = [Fraction(int(o), int(n)) for o, n in zip(overlaps, lengths)]  # the oracle: exact rationals
    disagreements_with_floats = 0
    for seen, fraction in enumerate(FRACTIONS):
        got = span_retrieval_scores(chunks, gold, k=1, min_overlap=fraction)["recall@1"] == 1.0
        wanted = written(fraction)
        expected = np.array([share >= wanted for share in shares])
        np.testing.assert_array_equal(got, expected, err_msg=str(fraction))
        disagreements_with_floats += int((expected != (overlaps >= float(fraction) * lengths)).sum())
        for i in range(seen % 487, lengths.size, 487):  # and the per-question definition, on a sample
            one = span_metrics(chunks[i], gold[i], k=1, min_overlap=fraction)["recall@1"] == 1.0
            assert one == expected[i], (fraction, int(lengths[i]), int(overlaps[i]))
    assert disagreements_with_floats > 0  # the float comparison gets some of these wrong; the exact one none


def test_fractional_min_overlap_is_exact_on_huge_spans_and_long_decimals():
    # 10**15-character span, a 13-decimal fraction: products beyond int64, compared in Python integers
    length, fraction = 10**15, 0.1234567890123
    need = 123456789012300  # = fraction * length exactly
    gold = [span("a", 0, length)]
    rows = [[span("a", length - need, length)], [span("a", length - need + 1, length)]]
    assert [span_metrics(r, gold, k=1, min_overlap=fraction)["recall@1"] for r in rows] == [1.0, 0.0]
    assert span_retrieval_scores(rows, [gold, gold], k=1, min_overlap=fraction)["recall@1"].tolist() == [1.0, 0.0]
    # a Fraction is used as given: 1/3 of 300 characters is exactly 100
    third = [[span("a", 200, 400)], [span("a", 201, 400)]]
    assert span_retrieval_scores(third, [[span("a", 0, 300)]] * 2, k=1, min_overlap=Fraction(1, 3))["recall@1"].tolist() == [1.0, 0.0]
    assert check_min_overlap(Fraction(1, 3)) == (1 / 3, "fraction of the gold span")
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        check_min_overlap(Fraction(3, 2))


def test_nothing_retrieved_scores_zero():
    out = span_metrics([], GOLD, k=[1, 5])
    assert all(v == 0.0 for v in out.values())


def test_bad_spans_and_rules_are_refused():
    with pytest.raises(ValueError, match="must be >= 1"):
        check_min_overlap(0)
    with pytest.raises(ValueError, match=r"in \(0, 1\].*pass an int"):
        check_min_overlap(1.5)
    with pytest.raises(ValueError, match="number of characters"):
        check_min_overlap(True)
    with pytest.raises(ValueError, match="empty"):
        span_metrics([], [span("a", 5, 5)], k=1)
    with pytest.raises(TypeError, match="doc_id, start, end"):
        span_metrics([{"doc": "a", "start": 0, "end": 1}], GOLD, k=1)
    with pytest.raises(ValueError, match="0 <= start <= end"):
        span_metrics([span("a", 9, 1)], GOLD, k=1)


# --------------------------------------------------------------------------------------------------
# Whole-document spans give the id metrics; the bulk path equals the definition
# --------------------------------------------------------------------------------------------------

DOCS = [f"d{i}" for i in range(8)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.lists(st.sampled_from(DOCS), max_size=8, unique=True),
            st.one_of(st.lists(st.sampled_from(DOCS), max_size=5, unique=True),
                      st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), max_size=5)),
        ),
        min_size=1,
        max_size=15,
    ),
    gain=st.sampled_from(["exponential", "linear"]),
)
def test_whole_document_spans_equal_id_gold(rows, gain):
    def whole(doc, grade=None):
        return span(doc, 0, 10) if grade is None else span(doc, 0, 10, grade=grade)

    retrieved = [r for r, _ in rows]
    gold = [g for _, g in rows]
    retrieved_spans = [[whole(d) for d in r] for r in retrieved]
    gold_spans = [[whole(d, g) for d, g in gd.items()] if isinstance(gd, dict) else [whole(d) for d in gd] for gd in gold]
    by_ids = metrics.retrieval_scores(retrieved, gold, [1, 3, 5], gain=gain)
    by_spans = span_retrieval_scores(retrieved_spans, gold_spans, [1, 3, 5], gain=gain)
    for name, values in by_ids.items():
        np.testing.assert_array_equal(by_spans[name], values, err_msg=name)


SPAN_DOCS = st.sampled_from(["a", "b", 7])
# every registered metric defined for span gold (the defaults plus those asked for by name, e.g. map)
SPAN_METRICS = [spec.base for spec in metrics.METRICS.values() if "spans" in spec.units]


@st.composite
def a_span(draw, *, gold):
    start = draw(st.integers(0, 120))
    length = draw(st.integers(1 if gold else 0, 60))
    out = span(draw(SPAN_DOCS), start, start + length)
    if gold and draw(st.booleans()):
        out["grade"] = draw(st.sampled_from([-1, 0, 1, 2, 3, 1.5]))
    return out


def test_the_int_one_is_refused_under_the_union_rule_it_would_mean_one_character():
    # The span holds 100 characters; the chunk clips 1 of them. Under the union rule 1.0 (and None) mean
    # the whole span, so the span is not found; the int 1 would mean one character and find it, the
    # cutting reward the rule removes, so it is refused with both meanings and the ways out.
    clip = [span("a", 199, 600)]
    assert span_metrics(clip, GOLD, k=1)["recall@1"] == 0.0
    assert span_metrics(clip, GOLD, k=1, min_overlap=1.0)["recall@1"] == 0.0
    for value in (1, np.int64(1), True):
        for call, args in (
            (span_metrics, (clip, GOLD, 1)),
            (span_retrieval_scores, ([clip], [GOLD], 1)),
        ):
            with pytest.raises(ValueError, match=r"(?s)min_overlap=(1|True)`.*one character.*whole span.*min_overlap=1\.0"
                               r".*character count >= 2.*span_rule='per_chunk'"):
                call(*args, min_overlap=value)
        with pytest.raises(ValueError, match="ambiguous under span_rule='union'"):
            check_min_overlap(value, span_rule="union")
    rows = pd.DataFrame({"question_id": ["q1"], "gold_spans": [GOLD], "retrieved_spans": [clip]})
    with pytest.raises(ValueError, match="ambiguous under span_rule='union'"):
        rows.rag.retrieval(k=1, min_overlap=1)
    # the old rule keeps its one-character default, spelled out or not; a character count >= 2 is a count
    assert span_metrics(clip, GOLD, k=1, min_overlap=1, span_rule="per_chunk")["recall@1"] == 1.0
    assert rows.rag.retrieval(k=1, min_overlap=1, span_rule="per_chunk")["recall@1"].tolist() == [1.0]
    assert span_metrics(clip, GOLD, k=1, min_overlap=2)["recall@1"] == 0.0
    assert span_metrics([span("a", 198, 600)], GOLD, k=1, min_overlap=2)["recall@1"] == 1.0
    assert check_min_overlap(1) == (1, "characters")  # no rule given: only the type and range are checked


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.lists(a_span(gold=False), max_size=8), st.one_of(st.none(), st.lists(a_span(gold=True), max_size=4))),
        min_size=1,
        max_size=20,
    ),
    ks=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    min_overlap=st.sampled_from([1, 5, 30, 0.25, 0.5, 1.0, 0.07, 0.1 + 0.2, 1 / 3, Fraction(2, 7)]),
    gain=st.sampled_from(["exponential", "linear"]),
    which=st.sampled_from([None, SPAN_METRICS]),
    span_rule=st.sampled_from(["union", "per_chunk"]),
)
def test_bulk_spans_equal_the_per_question_definition_exactly(rows, ks, min_overlap, gain, which, span_rule):
    assume(not (span_rule == "union" and min_overlap == 1 and isinstance(min_overlap, int)))  # refused: see below
    out = span_retrieval_scores([r for r, _ in rows], [g for _, g in rows], ks, min_overlap=min_overlap, gain=gain,
                                metrics=which, span_rule=span_rule)
    for i, (chunks, gold) in enumerate(rows):
        expected = span_metrics(chunks, gold, ks, min_overlap=min_overlap, gain=gain, metrics=which, span_rule=span_rule)
        assert list(out) == list(expected)
        for name, value in expected.items():
            got = out[name][i]
            assert (math.isnan(value) and math.isnan(got)) or got == value, (name, i)


# --------------------------------------------------------------------------------------------------
# Through the accessor
# --------------------------------------------------------------------------------------------------


def span_rows():
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "retrieved": [["a#2", "a#1", "b#0"], ["a#0"], []],
            "retrieved_spans": [CHUNKS_100, [span("a", 0, 100)], []],
            "gold": [["a#1"], [], ["a#1"]],
            "gold_spans": [GOLD, [], GOLD],
        }
    )


def test_accessor_uses_spans_when_both_span_columns_exist_and_records_the_rule():
    rows = span_rows()
    scored = rows.rag.retrieval(k=3, min_overlap=0.5)
    expected = span_retrieval_scores(rows["retrieved_spans"], rows["gold_spans"], 3, min_overlap=0.5)
    for name, values in expected.items():
        np.testing.assert_array_equal(scored[name].to_numpy(), values)
    conventions = scored.attrs["raglab"]["retrieval"]
    assert conventions["gold_unit"] == "character spans"
    assert conventions["span_rule"]["min_overlap"] == 0.5
    assert conventions["span_rule"]["unit"] == "fraction of the gold span"
    assert "coverage@3" in conventions["columns"]
    counts = scored.attrs["raglab"]["retrieval_counts"]
    assert (counts["n_unanswerable"], counts["n_nothing_retrieved"]) == (1, 1)
    # ids can still be asked for explicitly, and say so
    by_ids = rows.rag.retrieval(k=3, gold_by="ids")
    assert by_ids.attrs["raglab"]["retrieval"]["gold_unit"] == "ids"
    assert "coverage@3" not in by_ids.columns and "span_rule" not in by_ids.attrs["raglab"]["retrieval"]


def test_accessor_span_errors_name_the_column_and_row():
    rows = span_rows()
    bad = rows.assign(retrieved_spans=[CHUNKS_100, [{"doc_id": "a", "start": 0}], []])
    with pytest.raises(raglab.RowTableError, match=r"'retrieved_spans'.*row 1 \(question_id 'q2'\).*doc_id, start, end"):
        bad.rag.retrieval(k=1)
    empty_gold = rows.assign(gold_spans=[[span("a", 5, 5)], [], GOLD])
    with pytest.raises(raglab.RowTableError, match=r"'gold_spans'.*question_id 'q1'.*empty span"):
        empty_gold.rag.retrieval(k=1)
    missing = rows.assign(retrieved_spans=[CHUNKS_100, None, []])
    with pytest.raises(raglab.RowTableError, match=r"'retrieved_spans'.*use \[\] when nothing was retrieved"):
        missing.rag.retrieval(k=1)
    with pytest.raises(ValueError, match="`gold_by` must be one of"):
        rows.rag.retrieval(gold_by="chars")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows.rag.retrieval(k=3)  # no warning at a depth that reached the model


def test_span_metrics_are_public_and_take_plain_lists():
    assert metrics.span_metrics is span_metrics
    assert {"map", "coverage", "recall"} <= set(SPAN_METRICS)
    out = span_metrics(CHUNKS_100, GOLD, k=[2], metrics=["map", "coverage"])
    assert out == {"map@2": 0.5, "coverage@2": 1.0}  # the span is found at rank 2: AP@2 = (1/2) / 1


def test_span_bad_cells_carry_the_input_and_row():
    with pytest.raises(metrics.BadCellError) as caught:
        span_retrieval_scores([CHUNKS_100, [{"doc_id": "a", "start": 0}]], [GOLD, GOLD], 1)
    assert (caught.value.what, caught.value.row) == ("retrieved_spans", 1)
    with pytest.raises(metrics.BadCellError) as caught:
        span_retrieval_scores([CHUNKS_100, []], [GOLD, [span("a", 5, 5)]], 1)
    assert (caught.value.what, caught.value.row) == ("gold_spans", 1)
    with pytest.raises(metrics.BadCellError) as caught:
        span_retrieval_scores([CHUNKS_100, []], [[span("a", 0, 9, grade="x")], GOLD], 1)
    assert (caught.value.what, caught.value.row) == ("gold_spans", 0)


# --------------------------------------------------------------------------------------------------
# The union rule does not reward cutting (properties; the oracle is character sets)
# --------------------------------------------------------------------------------------------------

DOC_LENGTH = 120


def chars(spans):
    """The set of (doc, character) pairs of some spans."""
    return {(s["doc_id"], c) for s in spans for c in range(s["start"], s["end"])}


def wholly_reached(ranked, gold, r):
    """Indices of the gold spans all of whose characters are in the top r chunks (the oracle, by sets)."""
    seen = chars(ranked[:r])
    return {i for i, g in enumerate(gold) if chars([g]) <= seen}


@st.composite
def a_question(draw):
    gold = []
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, DOC_LENGTH - 2))
        end = draw(st.integers(start + 1, min(DOC_LENGTH, start + 40)))
        gold.append(span(draw(st.sampled_from(["a", "b"])), start, end, grade=draw(st.sampled_from([1, 2]))))
    ranked = []
    for _ in range(draw(st.integers(1, 6))):
        start = draw(st.integers(0, DOC_LENGTH - 1))
        ranked.append(span(draw(st.sampled_from(["a", "b"])), start, draw(st.integers(start + 1, DOC_LENGTH))))
    return ranked, gold


RANK_METRICS = ("recall", "hit", "ndcg")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(question=a_question(), data=st.data())
def test_cutting_so_that_only_part_of_a_span_reaches_the_model_never_raises_the_score(question, data):
    ranked, gold = question
    cut = []  # re-chunk: shrink, shift or drop chunks, or move a chunk's tail to the end of the list
    tails = []
    for chunk in ranked:
        action = data.draw(st.sampled_from(["keep", "shrink", "shift", "split", "drop"]))
        start, end = chunk["start"], chunk["end"]
        if action == "shrink":
            start = data.draw(st.integers(start, end))
            end = data.draw(st.integers(start, end))
        elif action == "shift":
            delta = data.draw(st.integers(-20, 20))
            start, end = min(max(0, start + delta), DOC_LENGTH), min(max(0, end + delta), DOC_LENGTH)
        elif action == "split" and end - start > 1:
            middle = data.draw(st.integers(start + 1, end - 1))
            tails.append(span(chunk["doc_id"], middle, end))
            end = middle
        elif action == "drop":
            start, end = 0, 0
        cut.append(span(chunk["doc_id"], start, end))
    cut += tails
    depth = len(cut)
    # only re-chunkings under which no gold span is wholly reached at a rank where it was not before
    assume(all(wholly_reached(cut, gold, r) <= wholly_reached(ranked, gold, r) for r in range(1, depth + 1)))
    ks = list(range(1, depth + 1))
    before = span_metrics(ranked, gold, ks)
    after = span_metrics(cut, gold, ks)
    bulk = span_retrieval_scores([ranked, cut], [gold, gold], ks)
    for k in ks:
        for name in (f"{m}@{k}" for m in RANK_METRICS):  # (coverage@k counts the parts, by design)
            assert after[name] <= before[name] + 1e-12, (name, before[name], after[name])
            assert bulk[name].tolist() == [before[name], after[name]]
    assert after["rr"] <= before["rr"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=a_question(), data=st.data())
def test_rechunking_without_changing_what_reaches_the_model_leaves_every_score_equal(question, data):
    ranked, gold = question
    gold_chars = chars(gold)
    moved = []  # move each chunk boundary across characters that are not gold (so each chunk holds the same gold)
    for chunk in ranked:
        doc, start, end = chunk["doc_id"], chunk["start"], chunk["end"]

        def free(a, b, doc=doc):
            return not any((doc, c) in gold_chars for c in range(min(a, b), max(a, b)))

        starts = [x for x in range(0, end) if free(x, start)]
        start2 = data.draw(st.sampled_from(starts))
        ends = [x for x in range(start2 + 1, DOC_LENGTH + 1) if free(x, end)]
        moved.append(span(doc, start2, data.draw(st.sampled_from(ends))) if ends else chunk)
    for r in range(1, len(ranked) + 1):  # the oracle: the same gold characters reach the model at every depth
        assert chars(moved[:r]) & gold_chars == chars(ranked[:r]) & gold_chars
    ks = list(range(1, len(ranked) + 1))
    before, after = span_metrics(ranked, gold, ks), span_metrics(moved, gold, ks)
    assert after == before
    bulk = span_retrieval_scores([ranked, moved], [gold, gold], ks)
    for name, value in before.items():
        assert bulk[name].tolist() == [value, value], name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(question=a_question())
def test_a_span_is_found_exactly_when_all_of_it_reached_the_model(question):
    ranked, gold = question
    out = span_metrics(ranked, gold, list(range(1, len(ranked) + 1)))
    for r in range(1, len(ranked) + 1):
        # distinct spans (a repeated label counts once): recall@r is the share of them wholly in the top r
        distinct = {(g["doc_id"], g["start"], g["end"]) for g in gold}
        whole = {(g["doc_id"], g["start"], g["end"]) for i, g in enumerate(gold) if i in wholly_reached(ranked, gold, r)}
        assert out[f"recall@{r}"] == len(whole) / len(distinct)
        assert out[f"hit@{r}"] == float(bool(whole))


def test_the_old_per_chunk_rule_rewards_cutting_the_union_rule_does_not():
    gold = [span("a", 10, 30), span("a", 60, 80)]
    whole = [span("a", 0, 40)]   # holds the first span entirely
    cut = [span("a", 20, 70)]    # a window across both: half of each, neither entirely
    assert wholly_reached(cut, gold, 1) <= wholly_reached(whole, gold, 1)
    old = [span_metrics(c, gold, 1, span_rule="per_chunk")["recall@1"] for c in (whole, cut)]
    new = [span_metrics(c, gold, 1)["recall@1"] for c in (whole, cut)]
    assert old == [0.5, 1.0]  # the trap: cutting both spans doubles recall
    assert new == [0.5, 0.0]
    rows = pd.DataFrame({"question_id": ["whole", "cut"], "gold_spans": [gold, gold], "retrieved_spans": [whole, cut]})
    record = rows.rag.retrieval(k=1).attrs["raglab"]["retrieval"]["span_rule"]
    assert (record["rule"], record["min_overlap"], record["unit"]) == ("union", 1.0, "fraction of the gold span")
    assert {"recall", "hit", "ndcg", "precision", "relevant_chunk", "found_at"} <= set(record)
    old_record = rows.rag.retrieval(k=1, span_rule="per_chunk").attrs["raglab"]["retrieval"]["span_rule"]
    assert (old_record["rule"], old_record["min_overlap"], old_record["unit"]) == ("per_chunk", 1, "characters")
    with pytest.raises(ValueError, match=r"`span_rule` must be one of \['union', 'per_chunk'\]"):
        rows.rag.retrieval(k=1, span_rule="any")


def test_union_rule_bulk_kernel_on_many_overlapping_pieces():
    # 40 nested and overlapping windows over one 1000-character span: found where the union first covers it
    gold = [span("a", 100, 1100)]
    ranked = [span("a", 100 + 10 * i, 600 + 10 * i) for i in range(40)] + [span("a", 980, 1200)]
    out = span_retrieval_scores([ranked], [gold], [40, 41])
    assert out["recall@40"].tolist() == [0.0] and out["recall@41"].tolist() == [1.0]  # [100, 990), then [980, 1200)
    assert span_metrics(ranked, gold, [40, 41])["rr"] == out["rr"][0] == 1 / 41


def test_union_rule_on_thousands_of_nested_pieces_of_one_span():
    # each window sits inside the one before, so no union of them covers the span until the whole-span chunk
    # comes (rank 3001); the kernel's work grows with pairs x log(ranks), not pairs squared
    gold = [span("a", 0, 10**6)]
    ranked = [span("a", 100 * i, 10**6 - 100 * i - 1) for i in range(3000)] + [span("a", 0, 10**6)]
    out = span_retrieval_scores([ranked] * 20, [gold] * 20, [3000, 3001])
    assert out["rr"].tolist() == [1 / 3001] * 20
    assert out["recall@3000"].tolist() == [0.0] * 20 and out["recall@3001"].tolist() == [1.0] * 20
    # half the span: the first window alone covers 999,999 characters
    assert span_retrieval_scores([ranked], [gold], 1, min_overlap=0.5)["rr"].tolist() == [1.0]


def test_depth_gap_on_span_gold_follows_the_rule_and_records_it():
    # the context holds half of the gold span; the candidates hold both halves
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["a#1"]], "retrieved_spans": [[span("a", 150, 300)]],
                         "candidates": [["a#1", "a#0"]], "candidate_spans": [CHUNKS_150], "gold_spans": [GOLD]})
    gap = rows.rag.depth_gap(candidate_spans="candidate_spans").set_index("metric")
    assert (gap.loc["recall", "context"], gap.loc["recall", "candidates"], gap.loc["recall", "n_lost"]) == (0.0, 1.0, 1)
    assert gap.attrs["raglab"]["depth_gap"]["span_rule"]["rule"] == "union"
    old = rows.rag.depth_gap(candidate_spans="candidate_spans", span_rule="per_chunk").set_index("metric")
    assert (old.loc["recall", "context"], old.loc["recall", "gap"]) == (1.0, 0.0)  # the old rule hid the loss
