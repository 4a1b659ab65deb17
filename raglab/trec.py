"""TREC run and qrels files: :func:`read_trec` and :func:`write_trec` (also importable from :mod:`raglab.io`).

Both directions are lossless or refused: ids holding whitespace, fractional or non-finite grades and
non-finite scores cannot be written as TREC lines that read back the same, so they are refused with
the fix; a UTF-8 byte-order mark at the start of a file is stripped; a score that is not a finite
number is refused with its file and line.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import pandas as pd

from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta
from raglab._validation import is_missing, warn

__all__ = ["read_trec", "write_trec"]

_WHITESPACE = re.compile(r"\s").search  # the characters str.split() splits TREC lines on


def _trec_lines(path: str | os.PathLike[str], what: str, min_fields: int) -> Iterable[tuple[int, list[str]]]:
    try:
        # utf-8-sig: a byte-order mark written by an editor is not part of the first topic id.
        with open(path, encoding="utf-8-sig") as fh:
            for number, line in enumerate(fh, start=1):
                stripped = line.strip()
                if not stripped or stripped.startswith("#"):  # trec_eval skips comment lines; '#' inside ids is data
                    continue
                fields = stripped.split()
                if len(fields) < min_fields:
                    raise RowTableError(
                        f"{str(path)!r} line {number}: a TREC {what} line needs at least {min_fields} "
                        f"whitespace-separated fields, got {len(fields)}: {stripped[:60]!r}"
                    )
                yield number, fields
    except UnicodeDecodeError as exc:
        raise RowTableError(
            f"{str(path)!r}: a TREC {what} file must be UTF-8 text; byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start} is not (save the file as UTF-8)."
        ) from None
    except IsADirectoryError:
        raise RowTableError(f"{str(path)!r} is a directory, not a TREC {what} file") from None


def _read_qrels(path: str | os.PathLike[str]) -> pd.DataFrame:
    records = []
    for number, fields in _trec_lines(path, "qrels", 4):
        try:
            grade = int(fields[3])
        except ValueError:
            raise RowTableError(
                f"{str(path)!r} line {number}: relevance must be an integer, got {fields[3]!r}"
            ) from None
        records.append((fields[0], fields[2], grade))
    return pd.DataFrame(records, columns=["qid", "docno", "grade"])


def _read_run(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, str | None]:
    records = []
    names = set()
    for number, fields in _trec_lines(path, "run", 6):
        try:
            score = float(fields[4])
        except ValueError:
            raise RowTableError(f"{str(path)!r} line {number}: score must be a number, got {fields[4]!r}") from None
        if not math.isfinite(score):
            raise RowTableError(
                f"{str(path)!r} line {number}: score must be a finite number, got {fields[4]!r}; a NaN or infinite "
                "score has no place in a ranking (fix the system that wrote the run)."
            )
        records.append((fields[0], fields[2], score))
        names.add(fields[5])
    run = pd.DataFrame(records, columns=["qid", "docno", "score"])
    return run, (sorted(names)[0] if len(names) == 1 else None)


def read_trec(
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Build a row table from a TREC run file and/or a qrels file.

    The run is ordered as trec_eval orders it: by score, highest first, ties broken by document id
    in *descending* byte order (the rank column is ignored, as trec_eval ignores it). Duplicate
    documents within a topic are refused, and so are scores that are not finite numbers. With
    qrels, there is one row per judged topic: topics missing from the run get an empty
    ``retrieved`` list (they score 0, not dropped), and run topics without judgments are dropped
    with a warning (trec_eval ignores them too). A UTF-8 byte-order mark is stripped.

    Parameters
    ----------
    run : path, optional
        ``qid Q0 docno rank score runid`` lines; extra trailing fields are ignored.
    qrels : path, optional
        ``qid iter docno rel`` lines; every judged grade is kept (grades <= 0 are non-relevant).

    Returns
    -------
    DataFrame
        ``question_id``; with a run ``retrieved`` (list[str]) and ``retrieved_scores``
        (list[float]); with qrels ``gold`` (dict docno -> grade). ``attrs["raglab"]["run"]`` records
        the run name and the tie rule.

    Examples
    --------
    >>> import os, tempfile, raglab
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "run"), "w") as fh:
    ...     _ = fh.write("q1 Q0 d1 1 0.5 bm25\\nq1 Q0 d2 2 0.9 bm25\\n")
    >>> with open(os.path.join(folder, "qrels"), "w") as fh:
    ...     _ = fh.write("q1 0 d1 2\\n")
    >>> rows = raglab.read_trec(run=os.path.join(folder, "run"), qrels=os.path.join(folder, "qrels"))
    >>> rows.loc[0, "retrieved"], rows.loc[0, "gold"]
    (['d2', 'd1'], {'d1': 2})
    """
    if run is None and qrels is None:
        raise TypeError("read_trec needs run=..., qrels=... or both")
    for what, given in (("run", run), ("qrels", qrels)):
        if given is not None and not Path(given).exists():
            raise FileNotFoundError(f"no TREC {what} file at {str(given)!r}")
    frames: dict[str, pd.Series] = {}
    run_name = None
    if run is not None:
        run_df, run_name = _read_run(run)
        dupes = run_df.duplicated(["qid", "docno"])
        if dupes.any():
            first = run_df[dupes].iloc[0]
            raise RowTableError(
                f"{str(run)!r}: document {first.docno!r} appears more than once for topic {first.qid!r} "
                f"({int(dupes.sum())} duplicates in all); a ranked list holds each document once."
            )
        # trec_eval: score descending, then docno descending (strcmp order = code-point order).
        run_df = run_df.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="stable")
        grouped = run_df.groupby("qid", sort=True)
        frames["retrieved"] = grouped["docno"].agg(list)
        frames["retrieved_scores"] = grouped["score"].agg(list)
    if qrels is not None:
        qrels_df = _read_qrels(qrels)
        dupes = qrels_df.duplicated(["qid", "docno"], keep=False)
        if dupes.any():
            first = qrels_df[dupes].iloc[0]
            warn(f"{str(qrels)!r}: document {first.docno!r} is judged more than once for topic {first.qid!r}; "
                 "the last judgment is kept (as trec_eval does).")
            qrels_df = qrels_df.drop_duplicates(["qid", "docno"], keep="last")
        if qrels_df.empty:
            raise RowTableError(f"{str(qrels)!r}: the qrels file holds no judgments")
        gold: dict[str, dict[str, int]] = {}
        for qid, docno, grade in zip(qrels_df["qid"].tolist(), qrels_df["docno"].tolist(), qrels_df["grade"].tolist()):
            gold.setdefault(qid, {})[docno] = grade
        frames["gold"] = pd.Series(list(gold.values()), index=pd.Index(list(gold), name="qid"), dtype=object).sort_index()
    if run is not None and frames["retrieved"].empty and qrels is None:
        raise RowTableError(f"{str(run)!r}: the run file holds no ranked documents")
    if qrels is not None and run is not None:
        topics = frames["gold"].index
        unjudged = frames["retrieved"].index.difference(topics)
        if len(unjudged):
            warn(f"read_trec: {len(unjudged)} run topic(s) have no judgments in the qrels and were dropped, "
                 f"as trec_eval drops them (e.g. {unjudged[:5].tolist()}).")
        for key in ("retrieved", "retrieved_scores"):
            frames[key] = frames[key].reindex(topics)
            frames[key] = frames[key].where(frames[key].notna(), pd.Series([[] for _ in topics], index=topics))
    index = next(iter(frames.values())).index
    rows = pd.DataFrame({"question_id": pd.Series(index.astype(str), dtype=object)})
    for key, series in frames.items():
        rows[key] = pd.Series(series.reindex(index).tolist(), dtype=object)
    set_meta(rows, {"run": {"name": run_name, "source": "trec", "ties": "score desc, then docno desc (trec_eval)"}})
    return rows


def write_trec(
    df: pd.DataFrame,
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
    *,
    run_name: str | None = None,
    question_id: str = "question_id",
    retrieved: str = "retrieved",
    scores: str | None = "retrieved_scores",
    gold: str = "gold",
) -> None:
    """Write the ranked lists as a TREC run file and/or the gold as a qrels file.

    Run scores come from ``scores`` when that column exists, otherwise they are ``n - rank + 1``
    so that trec_eval reproduces the list order exactly. List gold is written with grade 1.
    What TREC files cannot hold is refused, never changed: ids or a run name with whitespace (they
    would split into several fields), fractional or non-finite grades (qrels grades are integers)
    and non-finite scores.

    Parameters
    ----------
    df : DataFrame
        The row table.
    run, qrels : path, optional
        Where to write the run file and/or the qrels file.
    run_name : str, optional
        The run's name (default: ``attrs["raglab"]["run"]["name"]``, else ``"raglab"``).
    question_id, retrieved, scores, gold : str
        Column names.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d3", "d1"]], "gold": [["d1"]]})
    >>> folder = tempfile.mkdtemp()
    >>> write_trec(rows, run=os.path.join(folder, "run.txt"), run_name="bm25")
    >>> open(os.path.join(folder, "run.txt")).read().splitlines()
    ['q1 Q0 d3 1 2.0 bm25', 'q1 Q0 d1 2 1.0 bm25']
    """
    from raglab._rowtable import resolve_column

    if run is None and qrels is None:
        raise TypeError("write_trec needs run=..., qrels=... or both")
    method = "rag.write_trec"
    qid_col = resolve_column(df, "question_id", question_id, method=method)
    if run is not None:
        ret_col = resolve_column(df, "retrieved", retrieved, method=method)
        score_col = scores if scores is not None and scores in df.columns else None
        name = run_name or (get_meta(df).get("run") or {}).get("name") or "raglab"
        _check_field(name, "the run name", method)
        run_lines = list(_run_lines(df, qid_col, ret_col, score_col, name))
    if qrels is not None:
        gold_col = resolve_column(df, "gold", gold, method=method)
        qrels_lines = list(_qrels_lines(df, qid_col, gold_col))
    # both files are checked before either is written: a bad grade never leaves a new run next to old qrels
    if run is not None:
        _write_lines(run, run_lines)
    if qrels is not None:
        _write_lines(qrels, qrels_lines)


def _check_field(value: Any, what: str, method: str) -> str:
    text = str(value)
    if not text or _WHITESPACE(text):
        raise RowTableError(
            f"{method}: {what} {text!r} is empty or holds whitespace; TREC files split fields on whitespace, so it "
            "would not read back the same. Replace the whitespace (e.g. with '_') before writing."
        )
    return text


def _run_lines(df: pd.DataFrame, qid_col: str, ret_col: str, score_col: str | None, name: str) -> Iterable[str]:
    method = "rag.write_trec"
    scores_iter = df[score_col].array if score_col else [None] * len(df)
    for qid, ids, scores in zip(df[qid_col].array, df[ret_col].array, scores_iter):
        ids = [] if is_missing(ids) else list(ids)
        values = list(scores) if scores is not None and not is_missing(scores) else None
        if values is not None and len(values) != len(ids):
            raise RowTableError(f"{method}: question {qid!r} has {len(ids)} ids but {len(values)} scores")
        qid_text = _check_field(qid, f"{qid_col!r} value", method)
        seen: set[str] = set()
        for rank, doc in enumerate(ids, start=1):
            doc_text = _check_field(doc, f"{ret_col!r} id of question {qid!r}:", method)
            if doc_text in seen:  # read_trec refuses such a run: writing it would not read back
                raise RowTableError(
                    f"{method}: column {ret_col!r} question {qid!r} lists {doc_text!r} more than once (again at rank "
                    f"{rank}); a TREC run holds each document once per topic and raglab scores only its first rank. "
                    f"Drop the repeats first, e.g. df[{ret_col!r}] = df[{ret_col!r}].map(lambda ids: "
                    "list(dict.fromkeys(ids)))."
                )
            seen.add(doc_text)
            score = values[rank - 1] if values is not None else float(len(ids) - rank + 1)
            if not isinstance(score, Real) or isinstance(score, bool) or not math.isfinite(float(score)):
                raise RowTableError(
                    f"{method}: column {score_col!r} question {qid!r} rank {rank} has score {score!r}; TREC run "
                    "scores must be finite numbers (drop the column, scores=None, to write n - rank + 1)."
                )
            yield f"{qid_text} Q0 {doc_text} {rank} {float(score)!r} {name}\n"


def _qrels_lines(df: pd.DataFrame, qid_col: str, gold_col: str) -> Iterable[str]:
    method = "rag.write_trec"
    for qid, gold in zip(df[qid_col].array, df[gold_col].array):
        if is_missing(gold):
            continue
        qid_text = _check_field(qid, f"{qid_col!r} value", method)
        items = gold.items() if isinstance(gold, Mapping) else ((g, 1) for g in gold)
        for doc, grade in items:
            doc_text = _check_field(doc, f"{gold_col!r} id of question {qid!r}:", method)
            if isinstance(grade, bool) or not isinstance(grade, Real) or not math.isfinite(float(grade)) \
                    or (not isinstance(grade, Integral) and not float(grade).is_integer()):
                raise RowTableError(
                    f"{method}: column {gold_col!r} question {qid!r} gives {doc!r} grade {grade!r}; qrels grades are "
                    "whole numbers, so it would not read back the same. Map the grades to integers first "
                    "(e.g. 0.5 -> 1 on a 0-2 scale)."
                )
            yield f"{qid_text} 0 {doc_text} {int(grade)}\n"


def _write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    from raglab.io import _write_atomically  # raglab.io imports this module

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)

    _write_atomically(Path(path), write)
