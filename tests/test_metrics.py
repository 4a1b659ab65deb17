"""Per-question retrieval metrics and the bulk kernel: definitions, worked numbers, exact agreement."""

from __future__ import annotations

import doctest
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import raglab
from raglab import metrics
from raglab._registry import metric_info
from raglab.metrics import _kernel

SEED_RANKED = ["d7", "d2", "d9", "d4", "d1"]
SEED_GRADES = {"d2": 3, "d4": 1, "d5": 2}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


# --------------------------------------------------------------------------------------------------
# The seed's worked example (seed 000, "Retrieval metrics, defined exactly")
# --------------------------------------------------------------------------------------------------


def test_seed_worked_example():
    # Printed by the seed: recall@5 = 0.667, precision@5 = 0.400, RR = 0.500, nDCG@5 = 0.516.
    assert f"{metrics.recall_at_k(SEED_RANKED, set(SEED_GRADES), 5):.3f}" == "0.667"
    assert f"{metrics.precision_at_k(SEED_RANKED, set(SEED_GRADES), 5):.3f}" == "0.400"
    assert f"{metrics.reciprocal_rank(SEED_RANKED, set(SEED_GRADES)):.3f}" == "0.500"
    assert f"{metrics.ndcg_at_k(SEED_RANKED, SEED_GRADES, 5):.3f}" == "0.516"
    # The seed's arithmetic: (7 / log2 3 + 1 / log2 5) / (7 + 3 / log2 3 + 1 / 2).
    assert metrics.ndcg_at_k(SEED_RANKED, SEED_GRADES, 5) == pytest.approx(
        (7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 1 / 2), rel=1e-15
    )


def test_seed_what_ifs():
    # Seed: "Moving d2 to rank 1 alone would raise nDCG to 0.791, while fetching d5 at rank 3 would give 0.676."
    moved = ["d2", "d7", "d9", "d4", "d1"]
    fetched = ["d7", "d2", "d5", "d4", "d1"]
    assert f"{metrics.ndcg_at_k(moved, SEED_GRADES, 5):.3f}" == "0.791"
    assert f"{metrics.ndcg_at_k(fetched, SEED_GRADES, 5):.3f}" == "0.676"


def test_seed_example_through_the_accessor():
    rows = pd.DataFrame(
        {
            "question_id": ["seed", "moved", "fetched"],
            "retrieved": [SEED_RANKED, ["d2", "d7", "d9", "d4", "d1"], ["d7", "d2", "d5", "d4", "d1"]],
            "gold": [SEED_GRADES] * 3,
        }
    )
    scored = rows.rag.retrieval(k=5)
    assert scored["recall@5"].round(3).tolist() == [0.667, 0.667, 1.0]
    assert scored["precision@5"].round(3).tolist() == [0.4, 0.4, 0.6]
    assert scored["rr"].round(3).tolist() == [0.5, 1.0, 0.5]
    assert scored["ndcg@5"].round(3).tolist() == [0.516, 0.791, 0.676]  # the seed's three numbers


# --------------------------------------------------------------------------------------------------
# Definitions and edge cases
# --------------------------------------------------------------------------------------------------


def test_unanswerable_is_nan_everywhere():
    for gold in (None, [], {}, {"d1": 0, "d2": -1}, float("nan"), pd.NA):
        assert math.isnan(metrics.recall_at_k(["d1"], gold, 5))
        assert math.isnan(metrics.hit_at_k(["d1"], gold, 5))
        assert math.isnan(metrics.precision_at_k(["d1"], gold, 5))
        assert math.isnan(metrics.reciprocal_rank(["d1"], gold))
        assert math.isnan(metrics.ndcg_at_k(["d1"], gold, 5))
        assert math.isnan(metrics.average_precision(["d1"], gold))
        assert math.isnan(metrics.r_precision(["d1"], gold))


def test_nothing_retrieved_scores_zero():
    for fn in (metrics.recall_at_k, metrics.hit_at_k, metrics.precision_at_k, metrics.ndcg_at_k):
        assert fn([], ["d1"], 3) == 0.0
    assert metrics.reciprocal_rank([], ["d1"]) == 0.0
    assert metrics.average_precision([], ["d1"]) == 0.0
    assert metrics.r_precision([], ["d1"]) == 0.0


def test_precision_divides_by_k_even_when_fewer_were_retrieved():
    # trec_eval P_k: 2 retrieved, both relevant, P_5 = 2/5.
    assert metrics.precision_at_k(["d1", "d2"], ["d1", "d2"], 5) == 0.4
    assert metrics.r_precision(["d1"], ["d1", "d2", "d3"]) == pytest.approx(1 / 3)


def test_grades_at_or_below_zero_are_not_relevant():
    gold = {"d1": 0, "d2": -1, "d3": 2}
    assert metrics.recall_at_k(["d1", "d2"], gold, 2) == 0.0
    assert metrics.reciprocal_rank(["d1", "d2", "d3"], gold) == pytest.approx(1 / 3)
    # The ideal uses the grades > 0 only: d3 alone at rank 1 is perfect.
    assert metrics.ndcg_at_k(["d3", "d1"], gold, 2) == 1.0


def test_repeated_id_counts_once_at_its_first_rank():
    assert metrics.precision_at_k(["d1", "d1", "d1"], ["d1"], 3) == pytest.approx(1 / 3)
    assert metrics.ndcg_at_k(["d1", "d1"], {"d1": 3}, 2) == 1.0
    assert metrics.average_precision(["d0", "d1", "d1"], ["d1"]) == 0.5
    assert metrics.recall_at_k(["d1"], ["d1", "d1"], 1) == 1.0  # a repeated gold id is one gold id


def test_reciprocal_rank_and_ap_cut_offs():
    assert metrics.reciprocal_rank(["a", "b", "c"], ["c"], k=2) == 0.0
    assert metrics.reciprocal_rank(["a", "b", "c"], ["c"], k=3) == pytest.approx(1 / 3)
    # AP@2 of relevant {a, c} with a at 1, c at 3: only a counts, divided by R = 2 (trec_eval map_cut_2).
    assert metrics.average_precision(["a", "b", "c"], ["a", "c"], k=2) == 0.5


def test_hit_is_seed_001s_any_relevant_in_top_k():
    assert metrics.hit_at_k(["x", "y", "a"], ["a", "b"], 2) == 0.0
    assert metrics.hit_at_k(["x", "y", "a"], ["a", "b"], 3) == 1.0


def test_linear_and_exponential_gain_agree_for_binary_gold():
    ranked = ["x", "a", "y", "b"]
    assert metrics.ndcg_at_k(ranked, ["a", "b"], 4, gain="linear") == metrics.ndcg_at_k(ranked, ["a", "b"], 4)
    # and differ for graded gold (the seed's example: 0.516 exponential; linear computed by hand below)
    linear = (3 / math.log2(3) + 1 / math.log2(5)) / (3 + 2 / math.log2(3) + 1 / 2)
    assert metrics.ndcg_at_k(SEED_RANKED, SEED_GRADES, 5, gain="linear") == pytest.approx(linear, rel=1e-15)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"The value for `gain` must be one of \['exponential', 'linear'\], but 'exp'"):
        metrics.ndcg_at_k(["a"], ["a"], 1, gain="exp")
    with pytest.raises(ValueError, match="`k` must be a positive integer"):
        metrics.recall_at_k(["a"], ["a"], 0)
    with pytest.raises(ValueError, match="`k` must be a positive integer"):
        metrics.recall_at_k(["a"], ["a"], True)
    with pytest.raises(TypeError, match="ranked must be a list of ids.*wrap a single id"):
        metrics.recall_at_k("d1", ["d1"], 1)
    with pytest.raises(TypeError, match="gold must be a list/set of ids.*string"):
        metrics.recall_at_k(["d1"], "d1", 1)
    with pytest.raises(TypeError, match="grades must be numbers"):
        metrics.ndcg_at_k(["d1"], {"d1": "high"}, 1)
    with pytest.raises(ValueError, match="`k` is empty"):
        metrics.retrieval_scores([["a"]], [["a"]], k=[])


# --------------------------------------------------------------------------------------------------
# Bulk kernel == per-question functions, exactly
# --------------------------------------------------------------------------------------------------

IDS = st.one_of(st.sampled_from([f"d{i}" for i in range(8)]), st.integers(0, 4))
GOLD = st.one_of(
    st.none(),
    st.lists(IDS, max_size=6),
    st.dictionaries(IDS, st.integers(-1, 3), max_size=6),
    st.dictionaries(IDS, st.sampled_from([0.5, 1.0, 1.5, 2.5]), max_size=4),
)
ROWS = st.lists(st.tuples(st.lists(IDS, max_size=12), GOLD), min_size=1, max_size=25)
KS = st.lists(st.integers(1, 14), min_size=1, max_size=3)


def assert_bulk_equals_scalar(rows, ks, gain):
    out = metrics.retrieval_scores([r for r, _ in rows], [g for _, g in rows], ks, gain=gain)
    assert list(out) == metrics.score_columns(sorted(set(ks)))
    for i, (ranked, gold) in enumerate(rows):
        for k in sorted(set(ks)):
            assert same(out[f"recall@{k}"][i], metrics.recall_at_k(ranked, gold, k))
            assert same(out[f"hit@{k}"][i], metrics.hit_at_k(ranked, gold, k))
            assert same(out[f"precision@{k}"][i], metrics.precision_at_k(ranked, gold, k))
            assert same(out[f"ndcg@{k}"][i], metrics.ndcg_at_k(ranked, gold, k, gain=gain))
        assert same(out["rr"][i], metrics.reciprocal_rank(ranked, gold))
        assert same(out["ap"][i], metrics.average_precision(ranked, gold))
        assert same(out["r_precision"][i], metrics.r_precision(ranked, gold))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, ks=KS, gain=st.sampled_from(metrics.GAINS))
def test_bulk_equals_scalar_functions_exactly(rows, ks, gain):
    assert_bulk_equals_scalar(rows, ks, gain)


@settings(max_examples=60, deadline=None)
@given(rows=ROWS, ks=KS, blocks=st.sampled_from([3, 1 << 22]), scan_max=st.sampled_from([0, 2, 12]))
def test_bulk_equals_scalar_on_every_path(rows, ks, blocks, scan_max):
    """Gold ids scanned for in each list, or retrieved ids hashed (questions with many gold ids); tiny blocks."""
    saved = _kernel._BLOCK_SLOTS, _kernel._SCAN_MAX_GOLD
    try:
        _kernel._BLOCK_SLOTS, _kernel._SCAN_MAX_GOLD = blocks, scan_max
        assert_bulk_equals_scalar(rows, ks, "exponential")
    finally:
        _kernel._BLOCK_SLOTS, _kernel._SCAN_MAX_GOLD = saved


TEXT_IDS = st.sampled_from([f"d{i}" for i in range(8)])
ARROW_ROWS = st.lists(
    st.tuples(
        st.lists(TEXT_IDS, max_size=12),
        st.one_of(st.none(), st.lists(TEXT_IDS, max_size=6), st.dictionaries(TEXT_IDS, st.integers(-1, 3), max_size=6)),
    ),
    min_size=1,
    max_size=25,
)


def as_arrow(cells, kind=None):
    return pd.Series(list(cells), dtype=pd.ArrowDtype(pa.list_(kind or pa.string())))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ARROW_ROWS, ks=KS, gain=st.sampled_from(metrics.GAINS), blocks=st.sampled_from([3, 1 << 22]))
def test_arrow_backed_lists_score_exactly_like_python_lists(rows, ks, gain, blocks):
    ranked, gold = [r for r, _ in rows], [g for _, g in rows]
    expected = metrics.retrieval_scores(ranked, gold, ks, gain=gain)
    saved = _kernel._ARROW_BLOCK_SLOTS
    try:
        _kernel._ARROW_BLOCK_SLOTS = blocks
        got = metrics.retrieval_scores(as_arrow(ranked), gold, ks, gain=gain)
        if all(g is None or isinstance(g, list) for g in gold):  # list gold can be Arrow-backed too
            both = metrics.retrieval_scores(as_arrow(ranked), as_arrow(gold), ks, gain=gain)
            for name, values in expected.items():
                np.testing.assert_array_equal(both[name], values, err_msg=name)
    finally:
        _kernel._ARROW_BLOCK_SLOTS = saved
    assert list(got) == list(expected)
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)


def test_arrow_inputs_of_every_shape():
    ranked = [["d1", "d2", "d3"], ["d4"], [], ["d2", "d2", "d9"]]
    gold = [{"d3": 2, "d1": 1}, ["d4"], ["d1"], ["d2"]]
    expected = metrics.retrieval_scores(ranked, gold, [1, 3])
    chunked = pa.chunked_array([pa.array(ranked[:2], pa.list_(pa.string())), pa.array(ranked[2:], pa.list_(pa.string()))])
    sliced = pa.array([["x"], *ranked], pa.list_(pa.large_string())).slice(1)
    dictionary = pa.array(ranked, pa.list_(pa.dictionary(pa.int32(), pa.string())))
    for arrow in (chunked, sliced, dictionary, pd.Series(pd.arrays.ArrowExtensionArray(chunked))):
        got = metrics.retrieval_scores(arrow, gold, [1, 3])
        for name, values in expected.items():
            np.testing.assert_array_equal(got[name], values, err_msg=name)
    # integer ids: an int64 list column against int gold (and never against the text "7")
    ints = metrics.retrieval_scores(as_arrow([[7, 8], [9]], pa.int64()), [[8], {9: 1, "9": 1}], 2)
    assert ints["rr"].tolist() == [0.5, 1.0] and ints["recall@2"].tolist() == [1.0, 0.5]
    assert metrics.retrieval_scores(as_arrow([["7"]]), [[7]], 1)["rr"].tolist() == [0.0]


def test_arrow_bad_cells_name_their_row():
    with pytest.raises(metrics.BadCellError, match=r"retrieved\[1\] must be a list of ids, got a missing value.*use \[\]") as caught:
        metrics.retrieval_scores(as_arrow([["a"], None]), [["a"], ["b"]])
    assert (caught.value.what, caught.value.row) == ("retrieved", 1)
    with pytest.raises(metrics.BadCellError, match=r"retrieved\[2\] holds NoneType None in its list") as caught:
        metrics.retrieval_scores(as_arrow([["a"], [], ["b", None]]), [["a"], ["b"], ["b"]])
    assert caught.value.row == 2
    with pytest.raises(metrics.BadCellError, match=r"retrieved\[1\] holds float 1.5 in its list; ids must be str or int"):
        metrics.retrieval_scores(as_arrow([[], [1.5]], pa.float64()), [["a"], ["b"]])
    missing_gold = metrics.retrieval_scores(as_arrow([["a"], ["b"]]), as_arrow([["a"], None]), 1)
    assert missing_gold["rr"][0] == 1.0 and np.isnan(missing_gold["rr"][1])


def judged_with_nothing_relevant(gold) -> bool:
    """The oracle for no_relevant="zero": gold that judges ids but grades none above 0."""
    if isinstance(gold, dict):
        return bool(gold) and all(grade <= 0 for grade in gold.values())
    return False  # a list/set grades each id 1; None or [] judges nothing


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, ks=KS, gain=st.sampled_from(metrics.GAINS))
def test_no_relevant_zero_scores_judged_but_irrelevant_questions_zero_and_nothing_else(rows, ks, gain):
    ranked, gold = [r for r, _ in rows], [g for _, g in rows]
    default = metrics.retrieval_scores(ranked, gold, ks, gain=gain)
    assert_equal = np.testing.assert_array_equal
    for name, values in metrics.retrieval_scores(ranked, gold, ks, gain=gain, no_relevant="exclude").items():
        assert_equal(values, default[name])  # "exclude" is the default
    zero = metrics.retrieval_scores(ranked, gold, ks, gain=gain, no_relevant="zero")
    judged = np.array([judged_with_nothing_relevant(g) for g in gold])
    for name, values in zero.items():
        assert (values[judged] == 0).all(), name
        assert_equal(values[~judged], default[name][~judged])  # every other question is untouched
        assert np.isnan(default[name][judged]).all()


def test_no_relevant_worked_example_and_bad_value():
    ranked = [["d1", "d2"], ["d1"], ["d1"], ["d1"], []]
    gold = [["d2"], {"d1": 0, "d7": -1}, None, [], {"d3": 0}]
    def shown(values):
        return [None if math.isnan(v) else v for v in values.tolist()]

    assert shown(metrics.retrieval_scores(ranked, gold, 2)["rr"]) == [0.5, None, None, None, None]
    zero = metrics.retrieval_scores(ranked, gold, 2, no_relevant="zero")
    # judged with nothing relevant -> 0 (retrieved or not); missing or empty gold (nothing judged) -> NaN
    assert shown(zero["rr"]) == [0.5, 0.0, None, None, 0.0]
    assert zero["ndcg@2"].tolist()[1] == 0.0 and zero["recall@2"].tolist()[4] == 0.0
    with pytest.raises(ValueError, match=r"The value for `no_relevant` must be one of \['exclude', 'zero'\], but 'drop'"):
        metrics.retrieval_scores(ranked, gold, 2, no_relevant="drop")


def test_many_gold_ids_per_question():
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(60):
        gold = {f"d{j}": int(rng.integers(0, 4)) for j in rng.choice(200, size=int(rng.integers(0, 120)), replace=False)}
        ranked = [f"d{j}" for j in rng.choice(200, size=int(rng.integers(0, 80)), replace=False)]
        rows.append((ranked, gold))
    assert max(len(g) for _, g in rows) > 64
    assert_bulk_equals_scalar(rows, [1, 10, 50, 200], "linear")


def test_ids_whose_hashes_collide_are_still_told_apart():
    collide = 5 + (2**61 - 1)  # hash(5) == hash(5 + 2**61 - 1) in CPython
    assert hash(5) == hash(collide)
    rows = [([collide, 5], [5]), ([5], [collide]), ([collide, 5, 7], [5, collide]), ([collide], {5: 2, collide: 1}),
            ([5, 5, collide], [collide, 5, collide])]
    saved = _kernel._SCAN_MAX_GOLD
    try:
        for scan_max in (0, 12):  # hashed or scanned
            _kernel._SCAN_MAX_GOLD = scan_max
            assert_bulk_equals_scalar(rows, [1, 2], "exponential")
    finally:
        _kernel._SCAN_MAX_GOLD = saved


def test_ragged_lists_and_shared_objects():
    shared = [f"doc{i}" for i in range(50)]
    rows = [(shared[: (i * 7) % 50], shared[i % 50 : i % 50 + 3]) for i in range(300)]
    rows.append((shared * 40, ["doc3"]))  # one very long list: the flat layout, not the padded matrix
    assert_bulk_equals_scalar(rows, [1, 5, 2000], "exponential")


def test_no_module_reads_object_pointers_or_pandas_internals():
    root = Path(raglab.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        assert "ctypes" not in text and "pandas._libs" not in text, path


def test_inputs_may_be_series_arrays_or_tuples():
    retrieved = pd.Series([("a", "b"), np.array(["c", "a"], dtype=object), []])
    gold = pd.Series([{"a": 1}, frozenset({"a"}), ["z"]])
    out = metrics.retrieval_scores(retrieved, gold, k=2)
    assert out["recall@2"].tolist() == [1.0, 1.0, 0.0]


def test_bulk_reports_bad_cells_with_their_row():
    with pytest.raises(metrics.BadCellError, match=r"retrieved\[1\] holds float nan") as caught:
        metrics.retrieval_scores([["a"], ["b", float("nan")]], [["a"], ["b"]])
    assert (caught.value.what, caught.value.row) == ("retrieved", 1)
    with pytest.raises(metrics.BadCellError, match=r"retrieved\[0\] must be a list of ids.*use \[\]"):
        metrics.retrieval_scores([None], [["a"]])
    with pytest.raises(metrics.BadCellError, match=r"gold\[1\] holds bool True") as caught:
        metrics.retrieval_scores([["a"], ["b"]], [["a"], [True]])
    assert (caught.value.what, caught.value.row) == ("gold", 1)
    with pytest.raises(metrics.BadCellError, match=r"gold\[0\] has a NaN grade"):
        metrics.retrieval_scores([["a"]], [{"a": float("nan")}])
    with pytest.raises(ValueError, match="retrieved has 1 rows but gold has 2"):
        metrics.retrieval_scores([["a"]], [["a"], ["b"]])


def test_bulk_does_not_modify_its_inputs():
    from collections import OrderedDict

    gold = pd.Series([OrderedDict(a=1), None], dtype=object)
    before = gold.copy()
    metrics.retrieval_scores([["a"], ["b"]], gold)
    assert gold.tolist() == before.tolist() and isinstance(gold[0], OrderedDict)


# --------------------------------------------------------------------------------------------------
# Properties of every rank metric, parametrised over the metric registry
# --------------------------------------------------------------------------------------------------

ID_METRICS = [spec.base for spec in metrics.METRICS.values() if "ids" in spec.units]
RANK_COLUMNS = [name for name in metrics.score_columns([3], metrics=ID_METRICS) if metric_info(name).base in metrics.RANK_METRICS]


def test_rank_columns_cover_every_registered_id_metric_and_the_defaults_come_first():
    assert {metric_info(c).base for c in RANK_COLUMNS} == set(ID_METRICS) >= {"recall", "ndcg", "rr", "map"}
    assert metrics.score_columns([3]) == [c for c in RANK_COLUMNS if metrics.METRICS[metric_info(c).base].default]


@pytest.mark.parametrize("base", ID_METRICS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=ROWS, ks=KS, gain=st.sampled_from(metrics.GAINS))
def test_every_registered_kernel_equals_its_definition_exactly(base, rows, ks, gain):
    spec = metrics.METRICS[base]
    out = metrics.retrieval_scores([r for r, _ in rows], [g for _, g in rows], ks, gain=gain, metrics=[base])
    assert list(out) == spec.columns(sorted(set(ks)))
    for i, (ranked, gold) in enumerate(rows):
        for k in sorted(set(ks)) if spec.per_k else [None]:
            name = spec.base if k is None else f"{spec.base}@{k}"
            assert same(out[name][i], spec.score(ranked, gold, k, gain=gain)), (name, i)


def test_registry_specs_are_complete_and_read_by_metric_info():
    for spec in metrics.METRICS.values():
        info = metric_info(spec.columns([5])[0])
        assert (info.higher_is_better, info.binary, info.bounded, info.description) == (
            spec.higher_is_better, spec.binary, spec.bounded, spec.description)
        assert info.known and spec.description and spec.units
        if "ids" in spec.units:
            assert spec.definition is not None and spec.bulk is not None, spec.base
        assert f"{spec.base}@k" in metrics.__doc__ or spec.base in metrics.__doc__  # the docs table reads the registry
    with pytest.raises(ValueError, match=r"`metrics` must name registered metrics for gold ids.*got \['coverage'\].*spans"):
        metrics.retrieval_scores([["a"]], [["a"]], 1, metrics=["coverage"])


def test_map_at_k_worked_example():
    # AP cut at k (trec_eval map_cut_k): relevant {d1, d2, d3}; d1 at rank 1, d2 at rank 3.
    out = metrics.retrieval_scores([["d1", "d7", "d2"]], [["d1", "d2", "d3"]], [1, 2, 3], metrics=["map"])
    assert out["map@1"].tolist() == [1 / 3] and out["map@2"].tolist() == [1 / 3]
    assert out["map@3"].tolist() == [(1 + 2 / 3) / 3] == [metrics.average_precision(["d1", "d7", "d2"], ["d1", "d2", "d3"])]
    assert metric_info("map@10").higher_is_better and metric_info("map@10").bounded


@pytest.mark.parametrize("column", RANK_COLUMNS)
def test_registry_knows_every_rank_metric(column):
    info = metric_info(column)
    assert info.higher_is_better and info.bounded and info.description
    assert info.binary == (info.base == "hit")


@pytest.mark.parametrize("column", RANK_COLUMNS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, seed=st.integers(0, 2**32 - 1))
def test_row_order_does_not_matter_and_values_are_bounded(column, rows, seed):
    ranked, gold = [r for r, _ in rows], [g for _, g in rows]
    out = metrics.retrieval_scores(ranked, gold, 3, metrics=ID_METRICS)[column]
    order = np.random.default_rng(seed).permutation(len(rows))
    shuffled = metrics.retrieval_scores([ranked[i] for i in order], [gold[i] for i in order], 3, metrics=ID_METRICS)[column]
    np.testing.assert_array_equal(shuffled, out[order])
    values = out[~np.isnan(out)]
    if metric_info(column).bounded:
        assert np.all((values >= 0) & (values <= 1))
    if metric_info(column).binary:
        assert set(values.tolist()) <= {0.0, 1.0}


@pytest.mark.parametrize("column", RANK_COLUMNS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(grades=st.dictionaries(st.sampled_from([f"g{i}" for i in range(6)]), st.integers(1, 3), min_size=3, max_size=6),
       noise=st.lists(st.sampled_from(["n1", "n2", "n3"]), max_size=3, unique=True))
def test_a_perfect_ranking_scores_one(column, grades, noise):
    perfect = sorted(grades, key=lambda d: -grades[d]) + noise  # every relevant id first, best grade first
    k = len(grades)  # at k = R both recall (<= k/R) and precision (<= R/k) can reach 1
    name = column.replace("@3", f"@{k}")
    value = metrics.retrieval_scores([perfect], [grades], k, metrics=ID_METRICS)[name][0]
    assert value == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("column", RANK_COLUMNS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, data=st.data())
def test_promoting_a_relevant_id_never_lowers_a_score(column, rows, data):
    """Swap a relevant id with the non-relevant id just above it: higher-is-better metrics cannot drop."""
    ranked, gold = rows[0]
    relevant = metrics._relevant(gold) or {}
    first_seen = {d: i for i, d in reversed(list(enumerate(ranked)))}
    spots = [i for i in range(1, len(ranked)) if ranked[i] in relevant and first_seen[ranked[i]] == i
             and ranked[i - 1] not in relevant]
    if not spots:
        return
    i = data.draw(st.sampled_from(spots))
    promoted = list(ranked)
    promoted[i - 1], promoted[i] = promoted[i], promoted[i - 1]
    before, after = metrics.retrieval_scores([ranked, promoted], [gold, gold], 3, metrics=ID_METRICS)[column]
    assert metric_info(column).higher_is_better
    assert after >= before - 1e-12


# --------------------------------------------------------------------------------------------------
# Runnable docstring examples
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [
    "raglab.metrics", "raglab.metrics.definitions", "raglab.metrics.specs", "raglab.metrics.spans",
    "raglab.metrics._common", "raglab.metrics._kernel", "raglab.retrieval", "raglab.abstention", "raglab.accessor",
])
def test_docstring_examples_run(module):
    mod = __import__(module, fromlist=["_"])
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_metrics_module_is_reachable_from_the_package():
    assert raglab.metrics is metrics
    assert set(metrics.__all__) >= {"recall_at_k", "hit_at_k", "precision_at_k", "reciprocal_rank", "ndcg_at_k"}


@pytest.mark.parametrize("module", ["raglab.metrics", "raglab.metrics.spans", "raglab.metrics.specs",
                                    "raglab.abstention"])
def test_public_names_have_docstrings(module):
    mod = __import__(module, fromlist=["_"])
    for name in mod.__all__:
        obj = getattr(mod, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), f"{module}.{name} has no docstring"
    for method in ("retrieval", "depth_gap", "abstention"):
        assert "Examples" in getattr(raglab.accessor.RagAccessor, method).__doc__


def test_graded_gold_takes_the_arrow_conversion_only_when_it_is_exact():
    """Dict gold of str -> int/float goes through Arrow in one pass; anything else takes the general path."""
    ranked = [["a", "b"], ["c"], ["d"]]
    for gold in (
        [{"a": 1, "b": 2.5}, None, {"d": 0}],            # the fast path (missing cells and grade 0 included)
        [{"a": 1, "b": 2.5}, float("nan"), {"d": 0}],    # NaN for a missing cell
        [{"a": np.int64(1), "b": 2.5}, None, {"d": 0}],  # numpy grades: the general path
        [{"a": 1, "b": 2.5}, [], {"d": 0}],              # a list among the dicts
    ):
        for retrieved in (ranked, as_arrow(ranked)):
            out = metrics.retrieval_scores(retrieved, gold, 2)
            assert out["recall@2"][0] == 1.0 and np.isnan(out["rr"][1:]).all(), gold
            assert metrics.retrieval_scores(retrieved, gold, 2, no_relevant="zero")["rr"].tolist()[2] == 0.0
    for bad, message in (({"a": True}, r"gold\[0\] has grade True"), ({"a": None}, r"gold\[0\] has grade None"),
                         ({"a": float("nan")}, r"gold\[0\] has a NaN grade")):
        for retrieved in (ranked, as_arrow(ranked)):
            with pytest.raises(metrics.BadCellError, match=message) as caught:
                metrics.retrieval_scores(retrieved, [bad, None, None], 2)
            assert (caught.value.what, caught.value.row) == ("gold", 0)
    ints = metrics.retrieval_scores([[7, 8]], [{8: 2, 2**70: 1}], 2)  # int ids, huge ones too
    assert ints["recall@2"].tolist() == [0.5]
