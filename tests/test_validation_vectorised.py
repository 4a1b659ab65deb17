"""The vectorised fast paths of raglab._rowtable.check_column agree with the per-cell checkers.

The fast path may only say "every cell is fine"; the per-cell checker (``_CHECKS``) alone rejects and
words the error. These tests compare, on random good and bad columns, the fast path's verdict and the
outcome of ``check_column`` (accepted, or the exact exception and message) with the per-cell checker.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from raglab import _rowtable, _validation
from raglab._errors import RowTableError
from raglab._rowtable import _column_is_clean, check_column, validate_rows

KINDS = ["id", "text", "text_or_list", "id_list", "gold", "span_list", "gold_span_list"]


class Str(str):
    pass


def _span(doc: Any = "d", start: Any = 0, end: Any = 5) -> dict[str, Any]:
    return {"doc_id": doc, "start": start, "end": end}


MISSING = [None, float("nan"), np.nan, np.float32("nan"), pd.NA, pd.NaT]
IDS = ["a", "b7", 0, 3, np.int64(4), np.int32(-2), Str("s"), ""]
NOT_IDS = [True, np.bool_(False), 1.5, np.float64(2.0), None, float("nan"), b"x", ("t",), ["l"], {"k": 1}]

GOOD = {
    "id": IDS,
    "text": ["", "an answer", Str("sub"), *MISSING],
    "text_or_list": ["x", [], ["a", "b"], ("a",), np.array(["a", "b"]), np.array(["a"], dtype=object), *MISSING],
    "id_list": [[], ["a"], ["a", 1], ("a", np.int64(2)), np.array([1, 2]), np.array(["x", "y"], dtype=object),
                np.array([], dtype=object), [Str("s")]],
    "gold": [[], ["a", 2], ("b",), np.array([1, 2]), {}, {"a": 1}, {"a": 0, 3: 2.5}, {"a": np.float32(1)},
             {"a": Fraction(1, 2)}, {"a": np.int64(2)}, OrderedDict(a=1), *MISSING],
    "span_list": [[], [_span()], [_span(start=3, end=3)], (_span(1, 2, 9),), np.array([_span()], dtype=object),
                  [_span(np.int64(3), np.int64(0), np.int64(2))], *MISSING,
                  # Fine, though beyond the fast path (not a plain dict; offsets beyond int64):
                  [OrderedDict(_span())], [_span(start=2**70, end=2**70 + 1)],
                  [_span(start=np.uint64(2**63 + 3), end=np.uint64(2**63 + 5))]],
    "gold_span_list": [[], [_span()], [_span("d", 0, 1), _span(7, 2, 9)], (_span(),),
                       np.array([_span()], dtype=object), *MISSING],
}

BAD = {
    "id": [*NOT_IDS, pd.NA],
    "text": [1, 2.5, True, ["a"], {"a": 1}, b"b", np.int64(1)],
    "text_or_list": [1, ["a", 1], ["a", None], [np.nan], {"a": 1}, np.array([1, 2]), np.array([["a"]]), [["a"]]],
    "id_list": ["a", '["a"]', None, float("nan"), pd.NA, {"a": 1}, [None], ["a", True], [1.0], np.array([1.5]),
                np.array([True]), [["a"]], 5, OrderedDict()],
    "gold": ["a", '{"a": 1}', [None], [1.5], ("a", False), {None: 1}, {"a": "1"}, {"a": True}, {"a": float("nan")},
             {"a": float("inf")}, {1.5: 1}, {"a": None}, 7, OrderedDict(a="x")],
    "span_list": ["[]", {"doc_id": "d"}, [{"doc_id": "d", "start": 0}], [_span(start=-1)], [_span(start=5, end=2)],
                  [_span(start=1.0)], [_span(end=True)], [_span(doc=None)], [_span(doc=1.5)], [_span(doc=True)],
                  [["d", 0, 1]], 3, [_span(start=np.uint64(2**64 - 1))],
                  [_span(start=np.uint64(2**63 + 5), end=np.uint64(2**63 + 3))]],
    "gold_span_list": [[_span(start=3, end=3)], [_span(), _span(start=0, end=0)], [_span(start=-2)],
                       [_span(start=4, end=1)], [_span(doc=None)], "x", [_span(start=np.float64(1))]],
}

# Cells on which the per-cell checker itself raises (not a RowTableError): the outcome must match too.
RAISING = [np.array(3), np.array("a", dtype=object)]


def _per_cell_outcome(df: pd.DataFrame, column: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(_rowtable, "_column_is_clean", lambda series, kind: False)
        return _outcome(df, column, kind)


def _outcome(df: pd.DataFrame, column: str, kind: str) -> Any:
    try:
        check_column(df, column, kind, caller="test", id_column="question_id")
    except Exception as exc:  # noqa: BLE001  (compare whatever the per-cell path does)
        return type(exc).__name__, str(exc)
    return None


def _per_cell_accepts(series: pd.Series, kind: str) -> bool:
    try:
        return all(_rowtable._CHECKS[kind](cell) is None for cell in series.array)
    except Exception:  # noqa: BLE001
        return False


def _frame(cells: list[Any], *, infer: bool) -> pd.DataFrame:
    """One column of cells: object dtype, or whatever dtype pandas infers (str, float, ...)."""
    values = pd.Series(cells) if infer else pd.Series(cells, dtype=object)
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(len(cells))], "col": values})


def _random_cells(rng: random.Random, kind: str, n: int, bad_rate: float) -> list[Any]:
    cells = []
    for _ in range(n):
        roll = rng.random()
        if roll < bad_rate:
            cells.append(rng.choice(BAD[kind]))
        elif roll < bad_rate + 0.02:
            cells.append(rng.choice(RAISING))
        else:
            cells.append(rng.choice(GOOD[kind]))
    return cells


def _assert_agree(df: pd.DataFrame, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    accepts = _per_cell_accepts(df["col"], kind)
    if _column_is_clean(df["col"], kind):
        assert accepts, f"fast path accepted a column the per-cell checker rejects: {df['col'].tolist()!r}"
    assert _outcome(df, "col", kind) == _per_cell_outcome(df, "col", kind, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(40))
def test_random_columns_agree_with_per_cell_checker(kind: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(f"{kind}-{seed}")
    n = rng.choice([0, 1, 2, 5, 30])
    bad_rate = rng.choice([0.0, 0.0, 0.02, 0.2, 1.0])
    cells = _random_cells(rng, kind, n, bad_rate)
    for infer in (False, True):
        _assert_agree(_frame(cells, infer=infer), kind, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
def test_every_single_cell_agrees(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each listed cell alone, and next to a good cell, gets the per-cell checker's verdict and message."""
    for cell in [*GOOD[kind], *BAD[kind], *RAISING, *MISSING]:
        for cells in ([cell], [GOOD[kind][0], cell]):
            _assert_agree(_frame(cells, infer=False), kind, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
def test_good_cells_are_good_and_bad_cells_bad(kind: str) -> None:
    """The fixtures mean what they say (otherwise the agreement tests prove little)."""
    assert all(_rowtable._CHECKS[kind](cell) is None for cell in GOOD[kind])
    assert all(_rowtable._CHECKS[kind](cell) is not None for cell in BAD[kind])


COMMON = {
    "id": pd.Series([f"q{i}" for i in range(50)], dtype=object),
    "text": pd.Series([f"answer {i}" if i % 7 else None for i in range(50)], dtype=object),
    "text_or_list": pd.Series([["p1", "p2"] if i % 2 else "p" for i in range(50)], dtype=object),
    "id_list": pd.Series([[f"c{i}", i, np.int64(i)] if i % 5 else [] for i in range(50)], dtype=object),
    "gold": pd.Series([[f"c{i}"] if i % 3 else ({f"c{i}": 2, "x": 0.5} if i % 2 else None) for i in range(50)],
                      dtype=object),
    "span_list": pd.Series([[_span(f"d{i}", i, i + 10), _span(i, 0, 0)] if i % 4 else np.nan for i in range(50)],
                           dtype=object),
    "gold_span_list": pd.Series([[_span(f"d{i}", i, i + 1)] if i % 3 else [] for i in range(50)], dtype=object),
}


@pytest.mark.parametrize("kind", KINDS)
def test_common_clean_columns_skip_the_per_cell_loop(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    series = COMMON[kind]
    assert _per_cell_accepts(series, kind)
    assert _column_is_clean(series, kind)

    def refuse(value: Any) -> str | None:
        raise AssertionError("the per-cell checker ran on a clean column")

    monkeypatch.setitem(_rowtable._CHECKS, kind, refuse)
    df = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(series))], "col": series})
    check_column(df, "col", kind, caller="test")


@pytest.mark.parametrize(
    ("series", "kind", "clean"),
    [
        (pd.Series(["a", None, "b"], dtype="string"), "text", True),
        (pd.Series(["a", None, "b"], dtype="string"), "text_or_list", True),
        (pd.Series(["a", None], dtype="string"), "gold", False),
        (pd.Series([np.nan, np.nan]), "text", True),
        (pd.Series([np.nan, np.nan]), "gold_span_list", True),
        (pd.Series([np.nan, np.nan]), "id_list", False),
        (pd.Series([np.nan, 1.0]), "text", False),
        (pd.Series([1, 2]), "text", False),
        (pd.Series(["a", "b"], dtype="category"), "text", False),
        (pd.Series(["a", None], dtype=pd.StringDtype("pyarrow")), "text", True),
        (pd.Series([None, None], dtype="Float64"), "gold", True),
        (pd.Series([None], dtype=pd.ArrowDtype(pa.float64())), "text", False),
        (pd.Series([float("nan")], dtype=pd.ArrowDtype(pa.float64())), "text", False),
        # Arrow-backed columns (read_rows(lists="arrow")): decided from the Arrow type and null counts
        (pd.Series(["a", None], dtype=pd.ArrowDtype(pa.string())), "text", True),
        (pd.Series(["a", None], dtype=pd.ArrowDtype(pa.large_string())), "text_or_list", True),
        (pd.Series([["a"], []], dtype=pd.ArrowDtype(pa.list_(pa.string()))), "id_list", True),
        (pd.Series([[1, 2], [3]], dtype=pd.ArrowDtype(pa.large_list(pa.int64()))), "id_list", True),
        (pd.Series([["a"], None], dtype=pd.ArrowDtype(pa.list_(pa.string()))), "id_list", False),
        (pd.Series([["a", None]], dtype=pd.ArrowDtype(pa.list_(pa.string()))), "id_list", False),
        (pd.Series([[1.5]], dtype=pd.ArrowDtype(pa.list_(pa.float64()))), "id_list", False),
        (pd.Series([[True]], dtype=pd.ArrowDtype(pa.list_(pa.bool_()))), "id_list", False),
        (pd.Series([["a"]], dtype=pd.ArrowDtype(pa.list_(pa.string()))), "gold", False),
    ],
)
def test_typed_columns(series: pd.Series, kind: str, clean: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _column_is_clean(series, kind) is clean
    assert _per_cell_accepts(series, kind) or not clean
    df = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(series))], "col": series})
    assert _outcome(df, "col", kind) == _per_cell_outcome(df, "col", kind, monkeypatch)


def test_error_lists_every_bad_row_and_words_the_first() -> None:
    df = pd.DataFrame({"question_id": ["q0", "q1", "q2", "q3"],
                       "retrieved": pd.Series([["a"], None, ["b"], ["c", 1.5]], dtype=object)})
    with pytest.raises(RowTableError) as info:
        check_column(df, "retrieved", "id_list", caller="rag.retrieval")
    assert str(info.value) == (
        "rag.retrieval: column 'retrieved' must hold a list of str/int ids per row ([] when nothing was retrieved); "
        "rows 1, 3 (question_id 'q1', 'q3') hold NaN/None (use [] when nothing was retrieved)."
    )


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "id"])  # "id" always had its own fast path first
def test_duplicated_column_name_fails_as_before(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    df = pd.DataFrame([[["a"], ["b"]]], columns=["col", "col"])
    df.insert(0, "question_id", ["q0"])
    assert _outcome(df, "col", kind) == _per_cell_outcome(df, "col", kind, monkeypatch)


def _old_same_lengths(df: pd.DataFrame, ids: str, spans: str, method: str, id_column: str | None) -> None:
    """The per-row version of _check_same_lengths, kept as the reference."""
    id_lengths = np.fromiter((len(v) for v in df[ids].array), dtype=np.int64, count=len(df))
    span_lengths = np.fromiter(
        (-1 if _validation.is_missing(v) else len(v) for v in df[spans].array), dtype=np.int64, count=len(df)
    )
    bad = np.flatnonzero((span_lengths >= 0) & (span_lengths != id_lengths)).tolist()
    if bad:
        raise RowTableError(
            f"{method}: column {spans!r} must give one span per entry of {ids!r} (same order); "
            f"{_rowtable._row_labels(df, bad, id_column)} differ in length."
        )


@pytest.mark.parametrize("seed", range(20))
def test_same_lengths_agrees_with_per_row_version(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 3, 12])
    ids, spans = [], []
    for _ in range(n):
        k = rng.randint(0, 3)
        ids.append(rng.choice([list, tuple, np.array])([f"c{j}" for j in range(k)]))
        roll = rng.random()
        if roll < 0.2:
            spans.append(rng.choice([None, np.nan, pd.NA]))
        else:
            m = k if roll < 0.7 else rng.randint(0, 3)
            spans.append(rng.choice([list, tuple])(_span(start=j, end=j + 1) for j in range(m)))
    df = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "retrieved": pd.Series(ids, dtype=object),
                       "retrieved_spans": pd.Series(spans, dtype=object)})
    expected = None
    try:
        _old_same_lengths(df, "retrieved", "retrieved_spans", "test", "question_id")
    except RowTableError as exc:
        expected = str(exc)
    got = None
    try:
        validate_rows(df, caller="test")
    except RowTableError as exc:
        got = str(exc)
    assert got == expected
