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
from raglab._files import replace_files, user_path
from raglab._meta import get_meta, set_meta
from raglab._rowtable import Roles, resolve_column, table_roles
from raglab._validation import caller, check_option, is_missing, warn

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
        if len(fields) > 4:  # a run line (qid Q0 docno rank score run): its rank would be taken as the grade
            raise RowTableError(
                f"{str(path)!r} line {number}: a qrels line has 4 fields (qid iter docno relevance), this one has "
                f"{len(fields)}: {' '.join(fields)[:60]!r}. Is it a run file (qid Q0 docno rank score run)? Pass it "
                "as run=..., not qrels=."
            )
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
        try:
            rank = int(fields[3])
        except ValueError:
            rank = None  # trec_eval ignores the rank column; only order="rank" needs it
        records.append((fields[0], fields[2], score, rank, number))
        names.add(fields[5])
    run = pd.DataFrame(records, columns=["qid", "docno", "score", "rank", "line"])
    return run, (sorted(names)[0] if len(names) == 1 else None)


def read_trec(
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
    *,
    order: str = "trec_eval",
) -> pd.DataFrame:
    """Build a row table from a TREC run file and/or a qrels file.

    By default the run is ordered as trec_eval orders it: by score, highest first, ties broken by
    document id in *descending* byte order; the rank column is ignored, as trec_eval ignores it, so
    every metric equals trec_eval's on the same file. Where the file's rank column orders a topic
    differently (tied scores ranked otherwise, or scores that disagree with the ranks), a warning
    counts the topics; ``order="rank"`` follows the rank column instead (then ties of rank are broken
    as trec_eval breaks them). Duplicate documents within a topic are refused, and so are scores
    that are not finite numbers. With qrels, there is one row per judged topic: topics missing from
    the run get an empty ``retrieved`` list (they score 0, not dropped), and run topics without
    judgments are dropped with a warning (trec_eval ignores them too). A UTF-8 byte-order mark is
    stripped; lines starting with ``#`` are comments (as for trec_eval), ``#`` inside an id is data.

    Means over the rows therefore follow trec_eval ``-c`` (every judged topic counts), not its
    default ``all`` line, which averages only the judged topics that appear in the run: when judged
    topics are missing from the run, ``rows.rag.retrieval(no_relevant="zero")`` means equal
    ``trec_eval -c``; for the default line, first keep the rows with a non-empty ranking
    (``rows[rows["retrieved"].map(len) > 0]``).

    Parameters
    ----------
    run : path, optional
        ``qid Q0 docno rank score runid`` lines; extra trailing fields are ignored.
    qrels : path, optional
        ``qid iter docno rel`` lines; every judged grade is kept (grades <= 0 are non-relevant). A
        line with more fields (a run line read as qrels) is refused: its rank would become a grade.
    order : {"trec_eval", "rank"}
        How a topic's documents are ordered: by score as trec_eval does (default), or by the file's
        rank column (which must then hold integers).

    Returns
    -------
    DataFrame
        ``question_id``; with a run ``retrieved`` (list[str]) and ``retrieved_scores``
        (list[float]); with qrels ``gold`` (dict docno -> grade). ``attrs["raglab"]["run"]`` records
        the run name and the order rule (``ties``).

    Examples
    --------
    >>> import os, tempfile, raglab
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "run"), "w") as fh:
    ...     _ = fh.write("q1 Q0 d2 1 0.9 bm25\\nq1 Q0 d1 2 0.5 bm25\\nq1 Q0 d3 3 0.5 bm25\\n")
    >>> with open(os.path.join(folder, "qrels"), "w") as fh:
    ...     _ = fh.write("q1 0 d1 2\\n")
    >>> rows = raglab.read_trec(run=os.path.join(folder, "run"), qrels=os.path.join(folder, "qrels"), order="rank")
    >>> rows.loc[0, "retrieved"], rows.loc[0, "gold"]
    (['d2', 'd1', 'd3'], {'d1': 2})

    By default the tie between d1 and d3 goes to d3, as in trec_eval (with a warning saying so).
    """
    check_option("order", order, ("trec_eval", "rank"))
    if run is None and qrels is None:
        raise TypeError("read_trec needs run=..., qrels=... or both")
    run = None if run is None else user_path(run)
    qrels = None if qrels is None else user_path(qrels)
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
        run_df = _ordered(run_df, run, order)
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
    rule = "score desc, then docno desc (trec_eval)" if order == "trec_eval" else \
        "rank column, ties of rank by score desc, then docno desc"
    set_meta(rows, {"run": {"name": run_name, "source": "trec", "ties": rule}})
    return rows


def _ordered(run_df: pd.DataFrame, path: Path, order: str) -> pd.DataFrame:
    """The run in trec_eval's order (saying where the rank column disagrees), or in the rank column's."""
    if order == "rank":
        unranked = run_df["rank"].isna()
        if unranked.any():
            line = int(run_df.loc[unranked, "line"].min())
            raise RowTableError(
                f"{str(path)!r} line {line}: order='rank' needs an integer rank in the 4th field; use the default "
                "order='trec_eval' (by score) for this file."
            )
        return run_df.sort_values(["qid", "rank"], kind="stable")  # already by score within a rank: stable
    ranks = run_df["rank"]
    if ranks.notna().all():
        previous = ranks.groupby(run_df["qid"].to_numpy()).shift()
        disagree = run_df.loc[(ranks < previous).to_numpy(), "qid"].unique()
        if len(disagree):
            warn(
                f"read_trec: in {len(disagree)} of {run_df['qid'].nunique()} topic(s) of {str(path)!r} the rank column "
                f"orders the documents differently from their scores (e.g. topic {str(disagree[0])!r}): tied scores "
                "ranked otherwise than trec_eval breaks ties (document id, descending), or scores that disagree with "
                "the ranks. The run is read in trec_eval's order, as trec_eval scores it; pass order='rank' to follow "
                "the rank column."
            )
    return run_df


def write_trec(
    df: pd.DataFrame,
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
    *,
    run_name: str | None = None,
    scores: str | None = "retrieved_scores",
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> None:
    """Write the ranked lists as a TREC run file and/or the gold as a qrels file.

    Run scores come from ``scores`` when that column exists, otherwise they are ``n - rank + 1``
    so that trec_eval reproduces the list order exactly. List gold is written with grade 1.
    What TREC files cannot hold is refused, never changed: ids or a run name with whitespace (they
    would split into several fields), a question id starting with ``#`` (the line would be a
    comment), fractional or non-finite grades (qrels grades are integers), non-finite scores, and
    scores that would reorder the list: trec_eval (and :func:`~raglab.trec.read_trec`) order a topic by score,
    ties by document id descending, so each score must be below the one before it, or equal with
    a smaller document id. A question that retrieved nothing has no line in a run file: it comes
    back (as an empty list) only when read with qrels that judge it, so it is named in a warning
    otherwise. Both files are checked before either is written, and are moved into place together
    (see ``raglab._files``); ``run`` and ``qrels`` must be different files.

    Parameters
    ----------
    df : DataFrame
        The row table.
    run, qrels : path, optional
        Where to write the run file and/or the qrels file.
    run_name : str, optional
        The run's name (default: ``attrs["raglab"]["run"]["name"]``, else ``"raglab"``).
    scores : str, optional
        The column of retrieval scores, if any.
    roles : Roles or dict, optional
        Columns for the roles read here (``question_id``, ``retrieved``, ``gold``), as in every
        table-level function: the table's roles (:func:`raglab.with_roles`), then ``roles=``, then
        keywords such as ``retrieved="reranked_ids"``.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d3", "d1"]], "gold": [["d1"]]})
    >>> folder = tempfile.mkdtemp()
    >>> write_trec(rows, run=os.path.join(folder, "run.txt"), run_name="bm25")
    >>> open(os.path.join(folder, "run.txt")).read().splitlines()
    ['q1 Q0 d3 1 2.0 bm25', 'q1 Q0 d1 2 1.0 bm25']
    """
    if run is None and qrels is None:
        raise TypeError("write_trec needs run=..., qrels=... or both")
    method = caller("rag.write_trec")
    cols = table_roles(df, roles, columns, caller=method)
    run = None if run is None else user_path(run)
    qrels = None if qrels is None else user_path(qrels)
    if run is not None and qrels is not None and os.path.abspath(run) == os.path.abspath(qrels):
        raise ValueError(
            f"{method}: run= and qrels= are the same file {str(run)!r}; the qrels would overwrite the run. Give "
            "two paths, e.g. run='run.txt', qrels='qrels.txt'."
        )
    qid_col = resolve_column(df, "question_id", cols.question_id, caller=method)
    repeated = df[qid_col][df[qid_col].duplicated()].astype(str).unique().tolist()
    if repeated:  # a topic's lines would appear twice: read back as one topic listing each document twice
        raise RowTableError(
            f"{method}: column {qid_col!r} repeats question id(s) {repeated[:5]}; a TREC file holds one ranking "
            "(and one set of judgments) per topic. Keep one row per question first, e.g. "
            f"df.drop_duplicates({qid_col!r}).", column=qid_col, method=method)
    if run is not None:
        ret_col = resolve_column(df, "retrieved", cols.retrieved, caller=method)
        score_col = scores if scores is not None and scores in df.columns else None
        name = run_name or (get_meta(df).get("run") or {}).get("name") or "raglab"
        _check_field(name, "the run name", method)
        run_lines = list(_run_lines(df, qid_col, ret_col, score_col, name))
    if qrels is not None:
        gold_col = resolve_column(df, "gold", cols.gold, caller=method)
        qrels_lines = list(_qrels_lines(df, qid_col, gold_col))
    if run is not None:
        _warn_empty_rankings(df, qid_col, ret_col, gold_col if qrels is not None else None, method)
    # both files are checked before either is written: a bad grade never leaves a new run next to old qrels
    writes = [(Path(path), _lines_writer(lines)) for path, lines in ((run, run_lines if run is not None else None),
                                                                   (qrels, qrels_lines if qrels is not None else None))
              if path is not None]
    if len({os.path.abspath(path.parent) for path, _ in writes}) == 1:
        replace_files(writes)  # one locked step: a reader never sees the new run with the old qrels
    else:
        for write in writes:
            replace_files([write])


def _warn_empty_rankings(df: pd.DataFrame, qid_col: str, ret_col: str, gold_col: str | None, method: str) -> None:
    """Name the questions with an empty ranking that a run file alone cannot give back."""
    lost = []
    golds = df[gold_col].array if gold_col is not None else [None] * len(df)
    for qid, ids, gold in zip(df[qid_col].array, df[ret_col].array, golds):
        if (is_missing(ids) or len(ids) == 0) and (gold_col is None or is_missing(gold) or len(gold) == 0):
            lost.append(str(qid))
    if lost:
        where = "" if gold_col is None else " and have no gold, so the qrels hold no line for them either"
        warn(
            f"{method}: {len(lost)} question(s) retrieved nothing{where} (e.g. {lost[:5]}); a TREC run file has no "
            "line for an empty ranking, so they are not in the file. read_trec gives them back as empty lists only "
            "with qrels that judge them; keep the row table (raglab.write_rows) to keep them."
        )


def _check_field(value: Any, what: str, method: str, *, first: bool = False) -> str:
    text = str(value)
    if not text or _WHITESPACE(text):
        raise RowTableError(
            f"{method}: {what} {text!r} is empty or holds whitespace; TREC files split fields on whitespace, so it "
            "would not read back the same. Replace the whitespace (e.g. with '_') before writing."
        )
    if first and text.startswith("#"):
        raise RowTableError(
            f"{method}: {what} {text!r} starts with '#'; it begins the line, and trec_eval (and read_trec) skip "
            "lines starting with '#' as comments, so the question would vanish. Rename it (e.g. 'q' + id)."
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RowTableError(
                f"{method}: {what} {text!r} holds the lone surrogate {text[exc.start]!r} at character {exc.start}, "
                "which a UTF-8 file cannot hold; fix the text, e.g. .encode('utf-8', 'replace').decode('utf-8')."
            ) from None
    return text


def _run_lines(df: pd.DataFrame, qid_col: str, ret_col: str, score_col: str | None, name: str) -> Iterable[str]:
    method = "rag.write_trec"
    scores_iter = df[score_col].array if score_col else [None] * len(df)
    missing = []
    for qid, ids, scores in zip(df[qid_col].array, df[ret_col].array, scores_iter):
        if isinstance(ids, (str, bytes)):  # list("d1") would write the documents 'd' and '1'
            raise RowTableError(
                f"{method}: column {ret_col!r} question {qid!r} holds the text {ids!r}, not a list of ids; a run "
                f"lists each document of a ranking. Wrap single ids in a list (df[{ret_col!r}].map(lambda x: [x])) "
                "or split the text first.", column=ret_col, method=method)
        if is_missing(ids):
            missing.append(str(qid))
        ids = [] if is_missing(ids) else list(ids)
        values = list(scores) if scores is not None and not is_missing(scores) else None
        if values is not None and len(values) != len(ids):
            raise RowTableError(f"{method}: question {qid!r} has {len(ids)} ids but {len(values)} scores")
        qid_text = _check_field(qid, f"{qid_col!r} value", method, first=True)
        seen: set[str] = set()
        previous: tuple[float, str] | None = None
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
            score = float(score)
            if previous is not None and not (score < previous[0] or (score == previous[0] and doc_text < previous[1])):
                how = "the same score as" if score == previous[0] else "a higher score than"
                raise RowTableError(
                    f"{method}: column {score_col!r} question {qid!r} gives rank {rank} ({doc_text!r}) {how} rank "
                    f"{rank - 1} ({previous[1]!r}): {score!r} after {previous[0]!r}. trec_eval (and read_trec) order a "
                    "topic by score, ties by document id descending, so the file would rank these documents otherwise "
                    f"than the list does. Sort each list by its scores, or pass scores=None to write n - rank + 1.",
                    column=score_col, method=method,
                )
            previous = (score, doc_text)
            yield f"{qid_text} Q0 {doc_text} {rank} {score!r} {name}\n"
    if missing:
        warn(f"{method}: column {ret_col!r} is missing (None/NaN) for {len(missing)} question(s) (e.g. {missing[:5]}); "
             "they are written as empty rankings, which read back as [] and score 0, not as missing.")


def _qrels_lines(df: pd.DataFrame, qid_col: str, gold_col: str) -> Iterable[str]:
    method = "rag.write_trec"
    for qid, gold in zip(df[qid_col].array, df[gold_col].array):
        if is_missing(gold):
            continue
        qid_text = _check_field(qid, f"{qid_col!r} value", method, first=True)
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


def _lines_writer(lines: Iterable[str]) -> Any:
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)

    return write
