"""Typed records of df.attrs["raglab"]: tolerant reading, validation on update, one comparison rule."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers df.rag)
from raglab._errors import ConventionMismatchWarning, EvalSetMismatchError, JudgeMismatchWarning
from raglab._meta import (
    RECORDS,
    EvalSetStamp,
    JudgeFingerprint,
    RetrievalConventions,
    RetrievalCounts,
    SamplingDesign,
    get_meta,
    record_of,
    sampling_design_of,
    set_meta,
    update_meta,
)
from raglab._rowtable import (
    _check_evalsets,
    _warn_on_judge_or_convention_change,
    retrieval_convention_changes,
)
from raglab.io import read_rows, write_rows

RECORD_TYPES = [RetrievalConventions, RetrievalCounts, JudgeFingerprint, EvalSetStamp, SamplingDesign]


def _frame(meta: dict | None = None) -> pd.DataFrame:
    frame = pd.DataFrame({"question_id": ["q1", "q2"], "x": [0.5, 1.0]})
    if meta is not None:
        set_meta(frame, meta)
    return frame


@pytest.mark.parametrize("record_type", RECORD_TYPES)
def test_records_are_frozen_and_read_an_empty_dict(record_type):
    record = record_type.from_dict({})
    assert record.to_dict() == {}
    field = next(f.name for f in dataclasses.fields(record) if f.name != "extra")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, field, 1)


def test_every_known_section_has_its_record():
    assert set(RECORDS) == {"retrieval", "retrieval_counts", "judge", "evalset"}
    assert all(section == RECORDS[section].SECTION for section in RECORDS)


def test_a_record_from_an_older_raglab_keeps_unknown_keys_and_defaults_missing_ones():
    stored = {"name": "qa", "hash": "abc", "legacy_field": {"a": [1, 2]}}
    record = EvalSetStamp.from_dict(stored)
    assert record.version is None and record.n is None
    assert record.extra == {"legacy_field": {"a": [1, 2]}}
    assert record.to_dict() == stored


def test_retrieval_scoring_writes_records_that_round_trip(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["a", "b"], ["c"]], "gold": [["a"], ["d"]]})
    scored = rows.rag.retrieval(k=[1, 2])
    meta = get_meta(scored)
    for section in ("retrieval", "retrieval_counts"):
        assert RECORDS[section].from_dict(meta[section]).to_dict() == meta[section]
    conventions = record_of(scored, RetrievalConventions)
    assert conventions.k == [1, 2] and conventions.gold_unit == "ids" and conventions.extra == {}
    for name in ("rows.parquet", "rows.jsonl", "rows.csv"):
        write_rows(scored, tmp_path / name)
        assert record_of(read_rows(tmp_path / name), RetrievalConventions) == conventions


def test_a_judge_record_round_trips():
    judge = raglab.judge.LexicalJudge()
    record = {**judge.record(), "metrics": ["faithfulness"]}
    assert JudgeFingerprint.from_dict(record).to_dict() == {k: v for k, v in record.items() if v is not None}


@pytest.mark.parametrize(
    ("section", "values", "error", "match"),
    [
        ("retrieval", {"k": "five"}, TypeError, r"\['retrieval'\]\['k'\] must be a list of positive ints, got str 'five'"),
        ("retrieval", {"k": [0]}, TypeError, r"\['retrieval'\]\['k'\]"),
        ("retrieval_counts", {"n_questions": 2.5}, TypeError, r"\['retrieval_counts'\]\['n_questions'\] must be a count"),
        ("judge", {"fingerprint": 12}, TypeError, r"\['judge'\]\['fingerprint'\] must be text, got int 12"),
        ("evalset", {"hash": ["a"]}, TypeError, r"\['evalset'\]\['hash'\]"),
        ("evalset", "v1", TypeError, r"\['evalset'\] must be a dict"),
        ("sampling", {"labelled": {"method": "random"}}, ValueError, r"\['labelled'\]\['method'\] is 'random'"),
        ("sampling", {"humans": {}}, ValueError, r"has the key 'humans'"),
        ("sampling", {"judged": {"kind": "labelled"}}, ValueError, r"\['judged'\]\['kind'\] is 'labelled'"),
        ("sampling", {"labelled": {"n": 10, "population": 5}}, ValueError, "n=10 rows chosen out of a population of 5"),
        ("sampling", {"labelled": {"method": "stratified"}}, ValueError, "needs 'strata'"),
    ],
)
def test_update_meta_names_the_section_and_the_bad_key(section, values, error, match):
    frame = _frame({"run": {"name": "a"}})
    with pytest.raises(error, match=match):
        update_meta(frame, section, values)
    assert get_meta(frame) == {"run": {"name": "a"}}  # unchanged


def test_update_meta_leaves_unknown_sections_free_form_and_merges():
    frame = update_meta(_frame(), "my_section", {"anything": [1, "two"]})
    update_meta(frame, "evalset", {"name": "qa", "hash": "abc"})
    update_meta(frame, "evalset", {"version": 3})
    assert get_meta(frame) == {"my_section": {"anything": [1, "two"]},
                               "evalset": {"name": "qa", "hash": "abc", "version": 3}}


def test_sampling_designs_are_recorded_by_kind():
    labelled = {"kind": "labelled", "method": "neyman", "n": 50, "population": 400, "strata": "topic",
                "inclusion_probability": "pi", "seed": 7}
    judged = {"kind": "judged", "method": "uniform", "n": 400, "population": 400}
    frame = update_meta(_frame(), "sampling", {"labelled": labelled})
    update_meta(frame, "sampling", {"judged": judged})
    design = sampling_design_of(frame, "labelled")
    assert (design.method, design.n, design.population, design.strata, design.inclusion_probability, design.seed) == (
        "neyman", 50, 400, "topic", "pi", 7)
    assert design.to_dict() == labelled
    assert sampling_design_of(frame, "judged").to_dict() == judged
    assert sampling_design_of(_frame(), "judged") is None
    with pytest.raises(ValueError, match="kind must be one of"):
        sampling_design_of(frame, "human")
    # the seed is neutral: another draw of one design; the population is not
    other = SamplingDesign.from_dict({**labelled, "seed": 8, "population": 500})
    assert [d.field for d in design.differences(other)] == ["population"]


def test_differences_skip_neutral_fields_and_fields_only_one_record_holds():
    a = RetrievalConventions.from_dict({"k": [5], "gain": "exponential", "columns": ["recall@5"], "new_key": 1})
    b = RetrievalConventions.from_dict({"k": [10], "gain": "exponential", "columns": ["recall@10"], "new_key": 2,
                                        "precision": "divides by k"})
    assert [str(d) for d in a.differences(b)] == ["new_key: 1 vs 2"]
    with pytest.raises(TypeError, match="cannot compare"):
        a.differences(EvalSetStamp.from_dict({}))


def test_span_rules_are_compared_by_what_decides_their_numbers():
    rule = {"rule": "union", "min_overlap": 1.0, "unit": "fraction of the gold span", "recall": "text"}
    a = RetrievalConventions.from_dict({"span_rule": rule})
    assert a.differences(RetrievalConventions.from_dict({"span_rule": {**rule, "recall": "reworded"}})) == []
    (difference,) = a.differences(RetrievalConventions.from_dict({"span_rule": {**rule, "rule": "per_chunk"}}))
    assert difference.field == "span_rule" and difference.theirs["rule"] == "per_chunk"
    assert "recall" not in str(difference)


def test_judge_differences_ignore_the_scoring_run():
    a = JudgeFingerprint.from_dict({"fingerprint": "f1", "model": "m", "metrics": ["faithfulness"], "run": {"s": 1}})
    b = JudgeFingerprint.from_dict({"fingerprint": "f1", "model": "m", "metrics": ["relevance"], "run": {"s": 2}})
    assert a.differences(b) == []


def _pair(base: pd.DataFrame, cand: pd.DataFrame, *, allow: bool = False) -> None:
    _check_evalsets(base, cand, caller="rag.compare", allow=allow)
    _warn_on_judge_or_convention_change(base, cand, caller="rag.compare")


def test_the_three_pairing_checks_share_the_rule():
    stamp = {"name": "qa", "version": "v1", "hash": "aaa", "n": 2}
    judge = {"fingerprint": "f1", "model": "m-1", "run": {"seconds": 1.0}}
    conventions = {"gain": "exponential", "k": [5]}
    base = _frame({"evalset": stamp, "judge": judge, "retrieval": conventions})
    # labels, counts, the scoring run and the depths do not change numbers: no error, no warning
    same = _frame({"evalset": {**stamp, "version": "renamed", "n": 3}, "judge": {**judge, "run": {"seconds": 9.0}},
                   "retrieval": {**conventions, "k": [1, 5]}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _pair(base, same)
    other = _frame({"evalset": {**stamp, "hash": "bbb"}, "judge": {**judge, "fingerprint": "f2", "model": "m-2"},
                    "retrieval": {**conventions, "gain": "linear"}})
    with pytest.raises(EvalSetMismatchError, match=r"different eval sets.*'v1'.*hash aaa.*hash bbb"):
        _pair(base, other)
    with pytest.warns(JudgeMismatchWarning, match=r"DIFFERENT JUDGES.*differs in \['model'\]"), \
            pytest.warns(ConventionMismatchWarning, match="gain: 'exponential' vs 'linear'"), \
            pytest.warns(UserWarning, match="different eval sets"):
        _pair(base, other, allow=True)
    assert retrieval_convention_changes(base, other) == ["gain: 'exponential' vs 'linear'"]
    assert retrieval_convention_changes(base, _frame()) == []


def test_numpy_values_in_a_record_are_stored_as_plain_json():
    frame = update_meta(_frame(), "retrieval_counts", {"n_questions": np.int64(2)})
    assert type(frame.attrs["raglab"]["retrieval_counts"]["n_questions"]) is int


def test_a_judge_fingerprint_on_one_side_only_still_warns():
    import warnings

    from raglab._errors import JudgeMismatchWarning
    from raglab._meta import update_meta
    from raglab._rowtable import _warn_on_judge_or_convention_change

    base = pd.DataFrame({"question_id": ["q1"], "faithfulness": [1.0]})
    cand = base.copy()
    update_meta(base, "judge", {"fingerprint": "abc123", "model": "m"})
    update_meta(cand, "judge", {"model": "m"})  # a record without a fingerprint: the judge cannot be matched
    with pytest.warns(JudgeMismatchWarning, match="DIFFERENT JUDGES"):
        _warn_on_judge_or_convention_change(base, cand, caller="rag.compare")
    update_meta(cand, "judge", {"fingerprint": "abc123", "model": "m", "run": {"n_calls": 3}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_on_judge_or_convention_change(base, cand, caller="rag.compare")  # same judge: silent


def test_identity_fields_differ_even_when_one_record_lacks_them():
    from raglab._meta import EvalSetStamp, JudgeFingerprint, RetrievalConventions

    assert [d.field for d in EvalSetStamp(hash="abc").differences(EvalSetStamp(name="x"))] == ["hash"]
    assert [d.field for d in JudgeFingerprint(fingerprint="f").differences(JudgeFingerprint())] == ["fingerprint"]
    # other fields held by one side only are an older record, not a change
    assert RetrievalConventions(gain="linear").differences(RetrievalConventions()) == []
