"""Row files: lossless JSONL / CSV / Parquet round trips, plain files from other tools, attrs kept."""

from __future__ import annotations

import json
import math
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import raglab
from raglab._meta import get_meta, set_meta
from raglab.io import read_rows, write_rows

SUFFIXES = [".jsonl", ".csv", ".parquet", ".jsonl.gz", ".csv.gz"]


def same_cell(a, b) -> bool:
    """Equal, telling None from NaN, recursing into lists and dicts, and type-strict for str vs number."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(same_cell(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same_cell(a[k], b[k]) for k in a)
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    return a == b


def assert_rows_equal(expected: pd.DataFrame, actual: pd.DataFrame) -> None:
    assert list(actual.columns) == list(expected.columns)
    assert len(actual) == len(expected)
    for column in expected.columns:
        assert actual[column].dtype == expected[column].dtype, (column, expected[column].dtype, actual[column].dtype)
        for i, (a, b) in enumerate(zip(expected[column].tolist(), actual[column].tolist())):
            assert same_cell(a, b), (column, i, a, b)
    assert get_meta(actual) == get_meta(expected)


def sample_rows() -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "question_id": ["007", "1", "q-é", "10"],
            "question": ["Wer? ünïcödé", "", None, "line\nbreak, \"quoted\""],
            "retrieved": [["d1", "d2"], [], ["d3"], ["001", "2"]],
            "gold": [["d2"], {"d3": 2, "d4": 0}, None, []],
            "gold_spans": [[{"doc_id": "d2", "start": 0, "end": 12}], [], None, []],
            "score": [0.5, np.nan, 1.0, 0.0],
            "n_claims": [3, 0, 2, 1],
            "declined": [False, True, False, False],
            "verdicts": [[True, False], [], None, [True]],
            "claim_scores": [[0.5, float("nan")], [], None, [1.0]],
            "note": [None, np.nan, "x", "y"],
        }
    )
    rows["note"] = rows["note"].astype(object)
    rows["note"] = pd.Series([None, np.nan, "x", "y"], dtype=object)
    set_meta(rows, {"evalset": {"name": "demo", "version": "v1", "hash": "abc"}, "retrieval": {"k": [5]}})
    return rows


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_round_trip_is_lossless(tmp_path, suffix):
    rows = sample_rows()
    path = rows.rag.write(tmp_path / f"run{suffix}")
    back = read_rows(path)
    assert_rows_equal(rows, back)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_pandas_string_dtype_round_trip(tmp_path, suffix):
    rows = pd.DataFrame({"question_id": pd.array(["a", "b"], dtype="string"), "x": pd.array([1, None], dtype="Int64")})
    back = read_rows(write_rows(rows, tmp_path / f"r{suffix}"))
    pd.testing.assert_frame_equal(rows, back)


def test_writing_never_leaves_a_half_file(tmp_path):
    path = tmp_path / "run.jsonl"
    write_rows(pd.DataFrame({"question_id": ["a"]}), path)
    before = path.read_bytes()
    bad = pd.DataFrame({"question_id": ["b"], "blob": [object()]})
    with pytest.raises(TypeError):
        write_rows(bad, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run.jsonl.raglab.json"]


def test_unknown_suffix_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"cannot tell the file format .* pass format="):
        write_rows(pd.DataFrame({"question_id": ["a"]}), tmp_path / "run.xlsx")
    with pytest.raises(ValueError, match=r"The value for `format` must be one of \['jsonl', 'csv', 'parquet'\]"):
        write_rows(pd.DataFrame({"question_id": ["a"]}), tmp_path / "run.txt", format="excel")


def test_plain_jsonl_from_another_tool(tmp_path):
    path = tmp_path / "plain.jsonl"
    lines = [
        {"question_id": 7, "retrieved": ["d1", "d2"], "gold": {"d2": 1}, "score": 0.5},
        {"question_id": 8, "retrieved": [], "gold": [], "score": None},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rows = read_rows(path)
    assert rows["question_id"].tolist() == ["7", "8"]  # ids become text
    assert rows.loc[0, "gold"] == {"d2": 1}
    assert math.isnan(rows.loc[1, "score"])
    rows.rag.validate(require=["retrieved", "gold"])


def test_plain_csv_from_another_tool(tmp_path):
    path = tmp_path / "plain.csv"
    pd.DataFrame(
        {"question_id": ["007", "010"], "retrieved": ['["d1", "d2"]', "[]"], "gold": ['{"d1": 2}', ""], "score": [1.5, 2]}
    ).to_csv(path, index=False)
    rows = read_rows(path)
    assert rows["question_id"].tolist() == ["007", "010"]
    assert rows.loc[0, "retrieved"] == ["d1", "d2"] and rows.loc[1, "retrieved"] == []
    assert rows.loc[0, "gold"] == {"d1": 2} and rows.loc[1, "gold"] is None
    assert rows["score"].tolist() == [1.5, 2.0]


def test_plain_parquet_from_another_tool(tmp_path):
    path = tmp_path / "plain.parquet"
    pd.DataFrame({"question_id": ["a"], "retrieved": [["d1", "d2"]]}).to_parquet(path)
    rows = read_rows(path)
    assert rows.loc[0, "retrieved"] == ["d1", "d2"] and isinstance(rows.loc[0, "retrieved"], list)


def test_corrupt_jsonl_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question_id": "a"}\n{"question_id": \n')
    with pytest.raises(raglab.RowTableError, match=r"line 2 is not valid JSON"):
        read_rows(path)


def test_headerless_jsonl_is_plain(tmp_path):
    rows = sample_rows()
    write_rows(rows, tmp_path / "plain.jsonl")
    path = write_rows(rows, tmp_path / "plain.jsonl", header=False)
    assert not (tmp_path / "plain.jsonl.raglab.json").exists()  # no stale sidecar left behind
    first = json.loads(path.read_text().splitlines()[0])
    assert first["question_id"] == "007"
    back = read_rows(path)
    assert back["question_id"].tolist() == rows["question_id"].tolist()
    assert back.loc[1, "gold"] == {"d3": 2, "d4": 0}


# ---- property: any table of the supported cell kinds survives every format ------------------------

ids = st.text(alphabet=string.ascii_letters + string.digits + "-_é字", min_size=1, max_size=6)
texts = st.one_of(st.none(), st.text(max_size=20))
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def row_tables(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    qids = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    data = {
        "question_id": qids,
        "retrieved": draw(st.lists(st.lists(ids, max_size=4), min_size=n, max_size=n)),
        "gold": draw(
            st.lists(
                st.one_of(st.none(), st.lists(ids, max_size=3), st.dictionaries(ids, st.integers(-1, 3), max_size=3)),
                min_size=n,
                max_size=n,
            )
        ),
        "text": draw(st.lists(texts, min_size=n, max_size=n)),
        "score": draw(st.lists(st.one_of(finite, st.just(float("nan"))), min_size=n, max_size=n)),
        "count": draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n)),
        "nested": draw(
            st.lists(
                st.one_of(
                    st.none(),
                    st.lists(st.one_of(st.booleans(), finite, st.text(max_size=4)), max_size=3),
                    st.dictionaries(st.text(max_size=4), st.one_of(st.none(), finite, st.lists(ids, max_size=2)), max_size=2),
                ),
                min_size=n,
                max_size=n,
            )
        ),
    }
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) if k not in ("score", "count") else v for k, v in data.items()})
    set_meta(frame, {"retrieval": {"k": draw(st.lists(st.integers(1, 20), min_size=1, max_size=3))}})
    return frame


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=row_tables())
def test_round_trip_property(tmp_path, suffix, rows):
    back = read_rows(write_rows(rows, tmp_path / f"prop{suffix}"))
    assert_rows_equal(rows, back)


def test_csv_with_repeated_header_names_is_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("question_id,recall@5,recall@5\nq1,1.0,0.0\n")
    with pytest.raises(raglab.RowTableError, match=r"repeats column name\(s\) \['recall@5'\]"):
        read_rows(path)


def test_plain_csv_keeps_text_that_looks_like_missing(tmp_path):
    rows = pd.DataFrame({"question_id": ["a", "b", "c", "d"], "answer": ["null", "None", "N/A", None]})
    back = read_rows(write_rows(rows, tmp_path / "plain.csv", header=False))
    assert back["answer"].tolist()[:3] == ["null", "None", "N/A"]
    assert pd.isna(back["answer"].iloc[3])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_index_is_data_and_survives(tmp_path, suffix):
    rows = sample_rows().set_index("question_id")
    back = read_rows(write_rows(rows, tmp_path / f"indexed{suffix}"))
    assert back.index.name == "question_id" and back.index.tolist() == rows.index.tolist()
    assert_rows_equal(rows.reset_index(), back.reset_index())


def test_pandas_parquet_with_id_index_reads_with_id_column(tmp_path):
    path = tmp_path / "pandas.parquet"
    pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]]}).set_index("question_id").to_parquet(path)
    rows = read_rows(path)
    assert rows["question_id"].tolist() == ["q1"]


def test_csv_written_by_pandas_to_csv_reads_lists_back(tmp_path):
    path = tmp_path / "pandas.csv"
    pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [{"d2": 2}]}).to_csv(path, index=False)
    rows = read_rows(path)
    assert rows.loc[0, "retrieved"] == ["d1", "d2"] and rows.loc[0, "gold"] == {"d2": 2}
    rows.rag.validate(require=["retrieved", "gold"])


# ---- lists="arrow": Arrow-backed id lists -------------------------------------------------------


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_lists_arrow_gives_arrow_backed_id_lists_with_the_same_cells(tmp_path, suffix):
    import pyarrow as pa

    rows = sample_rows().assign(ranks=[[1, 2], [4], None, [3]])
    path = write_rows(rows, tmp_path / f"rows{suffix}")
    plain, arrow = read_rows(path), read_rows(path, lists="arrow")
    assert arrow["retrieved"].dtype == pd.ArrowDtype(pa.list_(pa.string()))
    assert arrow["ranks"].dtype == pd.ArrowDtype(pa.list_(pa.int64()))
    for column in ("gold", "gold_spans", "verdicts", "claim_scores", "question", "score"):  # not lists of ids
        assert arrow[column].dtype == plain[column].dtype, column
    assert arrow["retrieved"].tolist() == plain["retrieved"].tolist() == rows["retrieved"].tolist()
    assert arrow["ranks"].isna().tolist() == [False, False, True, False]
    assert get_meta(arrow) == get_meta(plain)
    # an Arrow-backed frame writes back as lists: a plain read gives the original cells
    again = read_rows(write_rows(arrow, tmp_path / f"again{suffix}"))
    assert_rows_equal(plain, again)


def test_lists_arrow_reads_plain_parquet_and_refuses_unknown_values(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], []], "gold": [["d2"], ["d9"]]})
    pq.write_table(table, tmp_path / "plain.parquet")
    rows = read_rows(tmp_path / "plain.parquet", lists="arrow")
    assert isinstance(rows["retrieved"].dtype, pd.ArrowDtype) and isinstance(rows["gold"].dtype, pd.ArrowDtype)
    assert rows.rag.retrieval(k=2)["rr"].tolist() == [0.5, 0.0]
    with pytest.raises(ValueError, match=r"The value for `lists` must be one of \['python', 'arrow'\]"):
        read_rows(tmp_path / "plain.parquet", lists="numpy")


# ---- plain files for any tool, metadata in a sidecar ----------------------------------------------


def _plain_frame() -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "retrieved": [["d1", "d2"], [], ["d3"]],
            "gold": [{"d2": 1}, ["d9"], None],
            "score": [0.5, 1.0, 0.25],
            "n": [1, 2, 3],
        }
    )
    set_meta(rows, {"retrieval": {"k": [5]}})
    return rows


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet", ".csv.gz", ".jsonl.gz"])
def test_plain_pandas_reads_exactly_the_rows_and_columns_written(tmp_path, suffix):
    rows = _plain_frame()
    path = write_rows(rows, tmp_path / f"x{suffix}")
    if ".csv" in suffix:
        plain = pd.read_csv(path)
        # pandas reads the JSON text "null" as NaN, like any missing cell
        decoded = plain.assign(retrieved=plain["retrieved"].map(json.loads),
                               gold=plain["gold"].map(lambda v: None if pd.isna(v) else json.loads(v)))
    elif ".jsonl" in suffix:
        decoded = pd.read_json(path, lines=True, dtype=False)
        decoded["gold"] = [v if isinstance(v, (list, dict)) else None for v in decoded["gold"]]
    else:
        decoded = pd.read_parquet(path)
        decoded["retrieved"] = decoded["retrieved"].map(list)
        # a missing gold is a Parquet null (missing for pandas), not the JSON text "null"
        decoded["gold"] = decoded["gold"].map(lambda v: None if pd.isna(v) else json.loads(v))
    assert decoded.shape == rows.shape and list(decoded.columns) == list(rows.columns)
    assert decoded["question_id"].tolist() == rows["question_id"].tolist()
    assert decoded["retrieved"].tolist() == rows["retrieved"].tolist()
    assert decoded["gold"].tolist() == rows["gold"].tolist()
    assert decoded["score"].tolist() == rows["score"].tolist() and decoded["n"].tolist() == rows["n"].tolist()
    assert get_meta(read_rows(path)) == get_meta(rows)
    if suffix != ".parquet":
        side = json.loads((tmp_path / f"x{suffix}.raglab.json").read_text())
        assert side["n_rows"] == 3 and len(side["sha256"]) == 64 and side["file"] == f"x{suffix}"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_missing_sidecar_loses_only_the_metadata(tmp_path, suffix):
    rows = _plain_frame()
    path = write_rows(rows, tmp_path / f"x{suffix}")
    (tmp_path / f"x{suffix}.raglab.json").unlink()
    back = read_rows(path)
    assert back["retrieved"].tolist() == rows["retrieved"].tolist() and back["gold"].tolist() == rows["gold"].tolist()
    assert back["question_id"].tolist() == rows["question_id"].tolist() and get_meta(back) == {}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_file_cut_at_a_line_boundary_is_refused_naming_both_counts(tmp_path, suffix):
    path = write_rows(_plain_frame(), tmp_path / f"x{suffix}")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    with pytest.raises(raglab.RowTableError, match=rf"x{suffix}' holds 2 rows but its metadata .* records 3"):
        read_rows(path)


def test_a_jsonl_row_appended_by_another_tool_keeps_its_new_column(tmp_path):
    path = write_rows(_plain_frame(), tmp_path / "x.jsonl")
    with open(path, "a") as fh:
        fh.write(json.dumps({"question_id": "q4", "retrieved": [], "gold": [], "latency_s": 1.5}) + "\n")
    with pytest.warns(UserWarning, match=r"changed after raglab wrote it \(4 rows, 3 recorded\)"):
        back = read_rows(path)
    assert len(back) == 4 and back["latency_s"].tolist()[3] == 1.5 and math.isnan(back["latency_s"].iloc[0])
    assert back["n"].isna().tolist() == [False, False, False, True]


def test_a_column_added_to_parquet_with_pyarrow_is_kept(tmp_path):
    import pyarrow.parquet as pq

    path = write_rows(_plain_frame(), tmp_path / "x.parquet")
    table = pq.read_table(path)
    table = table.append_column("latency_s", pa_array([0.1, 0.2, 0.3]))
    pq.write_table(table, path)
    back = read_rows(path)
    assert back["latency_s"].tolist() == [0.1, 0.2, 0.3] and get_meta(back) == {"retrieval": {"k": [5]}}


def pa_array(values):
    import pyarrow as pa

    return pa.array(values)


def test_a_csv_column_added_by_another_tool_is_kept(tmp_path):
    path = write_rows(_plain_frame(), tmp_path / "x.csv")
    plain = pd.read_csv(path)
    plain["latency_s"] = [1, 2, 3]
    plain.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="changed after raglab wrote it"):
        back = read_rows(path)
    assert back["latency_s"].tolist() == [1, 2, 3] and back.loc[0, "gold"] == {"d2": 1}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_dict_keys_that_are_not_text_are_refused_not_changed(tmp_path, suffix):
    rows = pd.DataFrame({"question_id": ["q1"], "gold": [{7: 1}]})
    with pytest.raises(raglab.RowTableError, match=r"column 'gold' row 0 .* int key 7; .* read back as '7'"):
        write_rows(rows, tmp_path / f"x{suffix}")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_byte_order_mark_is_stripped(tmp_path, suffix):
    path = write_rows(_plain_frame(), tmp_path / f"x{suffix}", header=False)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    back = read_rows(path)
    assert list(back.columns)[0] == "question_id" and back["question_id"].tolist() == ["q1", "q2", "q3"]


def test_files_of_the_previous_format_still_read(tmp_path):
    schema = {"version": 1, "columns": {"question_id": {"kind": "str", "dtype": "object"},
                                        "gold": {"kind": "json", "dtype": "object"}},
              "attrs": {"retrieval": {"k": [3]}}}
    old_jsonl = tmp_path / "old.jsonl"
    old_jsonl.write_text(json.dumps({"__raglab__": schema}) + "\n" + json.dumps({"question_id": "007", "gold": {"a": 1}}) + "\n")
    old_csv = tmp_path / "old.csv"
    old_csv.write_text("#__raglab__ " + json.dumps(schema) + "\nquestion_id,gold\n007,\"{\"\"a\"\": 1}\"\n")
    for path in (old_jsonl, old_csv):
        back = read_rows(path)
        assert back["question_id"].tolist() == ["007"] and back.loc[0, "gold"] == {"a": 1}
        assert get_meta(back) == {"retrieval": {"k": [3]}}


def test_unreadable_bytes_name_the_users_file(tmp_path):
    path = write_rows(_plain_frame(), tmp_path / "x.jsonl.gz")
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(raglab.RowTableError, match=r"x.jsonl.gz' cannot be read as a complete gzip file"):
        read_rows(path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("question_id,answer\nq1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(raglab.RowTableError, match=r"latin.csv' is not UTF-8 text: byte 0xe9"):
        read_rows(latin)
    deep = tmp_path / "deep.csv"
    deep.write_text("question_id,retrieved\nq1," + "[" * 60_000 + "]" * 60_000 + "\n")
    back = read_rows(deep)  # too deep to decode: kept as the text it is, for validate to name
    assert isinstance(back.loc[0, "retrieved"], str)


def test_a_garbled_sidecar_is_named_with_the_fix(tmp_path):
    path = write_rows(_plain_frame(), tmp_path / "x.csv")
    (tmp_path / "x.csv.raglab.json").write_text("{not json")
    with pytest.raises(raglab.RowTableError, match=r"x.csv.raglab.json' .* delete it to read 'x.csv'"):
        read_rows(path)


def test_parquet_cut_by_another_tool_is_refused_with_the_file(tmp_path):
    import pyarrow.parquet as _pq

    df = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "note": pd.Series(["a", None, np.nan], dtype=object)})
    raglab.write_rows(df, tmp_path / "r.parquet")
    _pq.write_table(_pq.read_table(tmp_path / "r.parquet").slice(0, 2), tmp_path / "cut.parquet")
    with pytest.raises(raglab.RowTableError, match="holds 2 rows but its raglab metadata records 3"):
        raglab.read_rows(tmp_path / "cut.parquet")


def test_a_row_inserted_in_a_csv_never_overwrites_text_with_the_sidecars_empty_rows(tmp_path):
    # the sidecar lists row 1 as "": after an insertion at the top row 1 holds "x", which must stay
    path = write_rows(pd.DataFrame({"answer": pd.Series(["x", ""], dtype=object)}), tmp_path / "x.csv")
    header, rest = path.read_bytes().split(b"\r\n", 1)
    path.write_bytes(header + b"\r\nzzz\r\n" + rest)
    with pytest.warns(UserWarning, match="changed after raglab wrote it"):
        back = read_rows(path)
    assert back["answer"].tolist()[:2] == ["zzz", "x"] and len(back) == 3


def test_a_row_inserted_in_a_jsonl_never_turns_text_into_the_sidecars_nan(tmp_path):
    path = write_rows(pd.DataFrame({"answer": pd.Series(["x", np.nan, None], dtype=object)}), tmp_path / "x.jsonl")
    path.write_text(json.dumps({"answer": "new"}) + "\n" + path.read_text())
    with pytest.warns(UserWarning, match="changed after raglab wrote it"):
        back = read_rows(path)
    assert back["answer"].tolist()[:2] == ["new", "x"] and back["answer"].isna().tolist() == [False, False, True, True]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_missing_and_empty_markers_still_round_trip(tmp_path, suffix):
    rows = pd.DataFrame({"answer": pd.Series(["x", np.nan, None, ""], dtype=object)})
    back = read_rows(write_rows(rows, tmp_path / f"x{suffix}"))["answer"].tolist()
    assert back[0] == "x" and isinstance(back[1], float) and math.isnan(back[1]) and back[2] is None and back[3] == ""


def test_a_missing_json_cell_is_a_parquet_null_not_the_text_null(tmp_path):
    import pyarrow.parquet as pq

    path = write_rows(_plain_frame(), tmp_path / "x.parquet")
    assert pq.read_table(path).column("gold").to_pylist()[2] is None
    assert pd.isna(pd.read_parquet(path)["gold"].iloc[2])
    assert read_rows(path)["gold"].tolist() == _plain_frame()["gold"].tolist()


# ---- issue 19: what raglab writes, raglab (and any JSON reader) reads back ---------------------------


def _strict_json(text: str):
    """json.loads refusing the NaN/Infinity tokens, as jq, JSON.parse, Go and Java do."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def non_finite_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "score": [float("inf"), -float("inf"), np.nan],
            "claim_scores": [[0.5, float("nan")], {"a": float("inf"), "b": [1.0, -float("inf")]}, None],
            "blob": pd.Series([float("nan"), None, [float("inf")]], dtype=object),
        }
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_files_never_hold_nan_or_infinity_tokens_and_read_back_exactly(tmp_path, suffix):
    rows = non_finite_rows()
    path = write_rows(rows, tmp_path / f"rows{suffix}")
    assert_rows_equal(rows, read_rows(path))
    if suffix.startswith(".jsonl"):
        import gzip

        raw = gzip.decompress(path.read_bytes()) if suffix.endswith(".gz") else path.read_bytes()
        lines = raw.decode().splitlines()
        records = [_strict_json(line) for line in lines]  # the old writer's NaN/Infinity raised here
        assert records[0]["score"] is None and records[1]["claim_scores"] == {"a": None, "b": [1.0, None]}
    if suffix.startswith(".csv"):
        back = pd.read_csv(path, dtype=str, keep_default_na=False)
        for cell in back["claim_scores"].tolist() + back["blob"].tolist():
            _strict_json(cell)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        for cell in pq.read_table(path).column("claim_scores").to_pylist():
            if cell is not None:
                _strict_json(cell)


def test_an_edited_json_cell_keeps_what_the_file_holds(tmp_path):
    path = write_rows(non_finite_rows(), tmp_path / "rows.jsonl")
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace('"a": null', '"a": 2.5')
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="changed after raglab wrote it"):
        back = read_rows(path)
    assert back.loc[1, "claim_scores"] == {"a": 2.5, "b": [1.0, -float("inf")]}


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_a_csv_raglab_writes_with_a_long_cell_reads_back(tmp_path, suffix):
    # csv's default field limit is 131,072 characters: raglab's own reader refused a 200,000-character context
    long = "x" * 200_000
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "context": [long, "short"], "retrieved": [["d"] * 40_000, []]})
    back = read_rows(write_rows(rows, tmp_path / f"rows{suffix}"))
    assert back.loc[0, "context"] == long and back.loc[0, "retrieved"] == ["d"] * 40_000


@pytest.mark.parametrize("true,false", [("TRUE", "FALSE"), ("true", "false"), ("True", "False"), ("1", "0")])
def test_spreadsheet_booleans_read_back_as_booleans(tmp_path, true, false):
    rows = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "declined": [True, False, True]})
    path = write_rows(rows, tmp_path / "rows.csv")
    # what Excel writes when it saves the file again
    path.write_text(path.read_text().replace("True", true).replace("False", false))
    with warnings_allowed():
        back = read_rows(path)
    assert back["declined"].tolist() == [True, False, True] and back["declined"].dtype == bool


def test_a_boolean_column_holding_other_text_is_named(tmp_path):
    path = write_rows(pd.DataFrame({"question_id": ["q1", "q2"], "ok": [True, False]}), tmp_path / "rows.csv")
    path.write_text(path.read_text().replace("False", "maybe"))
    with warnings_allowed(), pytest.raises(raglab.RowTableError, match=r"column 'ok' row 1 should hold a boolean"):
        read_rows(path)


def warnings_allowed():
    import warnings

    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("ignore")

    class _Exit:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            context.__exit__(*exc)
            return False

    return _Exit()


@pytest.mark.parametrize(
    "cell,what",
    [
        ({"d1", "d2"}, r"a set .* convert it to a list \(sorted\(cell\)\)"),
        (frozenset({"d1"}), r"a frozenset"),
        (b"d1", r"a bytes .* convert it to text"),
        (__import__("decimal").Decimal("1.5"), r"a Decimal .*float\(cell\)"),
        (__import__("datetime").date(2024, 1, 2), r"a date \('2024-01-02'\).*isoformat"),
        (["ok", {"nested": {1, 2}}], r"a set"),
        ("caf\udce9", r"text with the lone surrogate '\\udce9' at character 3"),
        (["d\ud800"], r"text with the lone surrogate"),
    ],
)
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_cell_no_file_can_hold_is_named_by_column_and_row(tmp_path, suffix, cell, what):
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "extra": pd.Series(["fine", cell], dtype=object)})
    with pytest.raises(raglab.RowTableError, match=r"column 'extra' row 1 \(question_id 'q2'\) holds " + what) as info:
        write_rows(rows, tmp_path / f"rows{suffix}")
    assert info.value.column == "extra" and info.value.rows == [1]
    assert not list(tmp_path.iterdir())


def test_attrs_a_file_cannot_hold_name_their_key_and_numpy_scalars_are_made_plain(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"]})
    rows.attrs["raglab"] = {"retrieval": {"k": [np.int64(5)], "alpha": np.float64(0.5), "on": np.bool_(True)}}
    back = read_rows(write_rows(rows, tmp_path / "rows.jsonl"))
    assert get_meta(back) == {"retrieval": {"k": [5], "alpha": 0.5, "on": True}}
    rows.attrs["raglab"] = {"retrieval": {"k": [5, float("nan")]}}
    with pytest.raises(TypeError, match=r"df.attrs\['raglab'\]\['retrieval'\]\['k'\]\[1\] is nan"):
        write_rows(rows, tmp_path / "bad.jsonl")
    rows.attrs["raglab"] = {"run": {"started": pd.Timestamp("2024-01-01")}}
    with pytest.raises(TypeError, match=r"\['run'\]\['started'\] holds a Timestamp"):
        write_rows(rows, tmp_path / "bad.csv")
    with pytest.raises(TypeError, match=r"\['x'\] is inf"):
        set_meta(rows, {"x": float("inf")})
    assert not (tmp_path / "bad.jsonl").exists() and not (tmp_path / "bad.csv").exists()


@pytest.mark.parametrize("text", ['[\n {"question_id": "q1"},\n {"question_id": "q2"}\n]\n',
                                  '[{"question_id": "q1"}, {"question_id": "q2"}]\n'])
def test_a_json_array_given_as_jsonl_says_so(tmp_path, text):
    path = tmp_path / "rows.json"
    path.write_text(text)
    with pytest.raises(raglab.RowTableError, match=r"holds a JSON array, not JSON Lines .* jq -c '\.\[\]'"):
        read_rows(path)


def test_one_json_object_over_several_lines_says_so(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{\n "question_id": "q1"\n}\n')
    with pytest.raises(raglab.RowTableError, match="one JSON object spread over several lines"):
        read_rows(path)


def test_a_home_relative_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [["d1"]]})
    assert write_rows(rows, "~/rows.csv") == tmp_path / "rows.csv"
    assert read_rows("~/rows.csv")["question_id"].tolist() == ["q1"]
    raglab.write_trec(rows, run="~/run.txt", qrels="~/qrels.txt")
    assert raglab.read_trec(run="~/run.txt", qrels="~/qrels.txt")["retrieved"].tolist() == [["d1"]]
    assert not (tmp_path / "~").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.txt", "rows.csv", "rows.csv.raglab.json", "run.txt"]
