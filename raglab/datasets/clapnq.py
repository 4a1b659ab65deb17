"""ClapNQ dev as raglab row tables: span gold over passages, BM25 runs at two chunk sizes.

ClapNQ (IBM, Rosenthal et al., 2024; https://github.com/primeqa/clapnq, Apache-2.0, derived from
Natural Questions, CC BY-SA 3.0) pairs 600 Natural Questions with one Wikipedia passage each. For
the 300 answerable questions annotators selected the passage's sentences that answer it and wrote
an answer; the 300 unanswerable questions have a passage that does not answer them.

raglab ships only derived figures in ``data/clapnq/`` (ids, character offsets, ranks, scores,
flags; no text; installed as ``raglab/datasets/data/clapnq``), built by ``scripts/build_clapnq.py``
from ``../shared/data/clapnq_dev``:

- gold: one character span per distinct sentence any annotator selected (893 sentences over 299
  questions; one answerable question has no selected sentence, so its gold is ``[]`` as for the
  unanswerable ones);
- the corpus: the 597 distinct passages, cut by :func:`raglab.chunks.fixed` into 256- and
  512-character windows (no overlap);
- a run per size: every question searched over all chunks with BM25 (``rank_bm25.BM25Okapi``,
  lowercase ``\\w+`` words), the top 5 reaching the model (``retrieved``), the top 20 kept as
  ``candidates``, and ``support``: :class:`raglab.judge.LexicalJudge` faithfulness of the first
  annotator's answer against the top-5 chunk texts (how much of the reference answer the retrieved
  context supports; NaN when unanswerable).

Examples
--------
>>> from raglab.datasets.clapnq import load_run
>>> run = load_run(256)
>>> len(run), int(run["answerable"].sum()), int(run["retrieved"].map(len).max())
(600, 300, 5)
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from raglab._meta import get_meta, set_meta
from raglab._validation import check_option
from raglab.datasets import _dataset_folder, _evalset_stamp, _read_manifest
from raglab.io import read_rows

__all__ = ["NAME", "SIZES", "data_dir", "load_chunks", "load_documents", "load_questions", "load_run", "load_runs"]

NAME = "clapnq-dev"
SIZES = (256, 512)
"""The chunk sizes, in characters, of the bundled runs and chunk tables."""

_FILES = ("manifest.json", "questions.parquet", "documents.parquet", *(f"chunks_{s}.parquet" for s in SIZES),
          *(f"runs/chunk{s}_bm25.parquet" for s in SIZES))


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the ClapNQ files (``path`` or the bundled ``data/clapnq``); raises naming what is missing.

    Examples
    --------
    >>> data_dir().name
    'clapnq'
    """
    return _dataset_folder("clapnq", _FILES, path, label="ClapNQ", script="build_clapnq.py", source="clapnq_dev")


def _stamp(folder: Path) -> dict:
    manifest = _read_manifest(folder)
    return {"name": NAME, "source": manifest["source"], "commit": manifest["commit"], "licence": manifest["licence"]}


def _check_size(size: int) -> int:
    check_option("size", size, list(SIZES))
    return int(size)


def load_questions(*, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The eval set: one row per question, gold as character spans in its passage.

    Columns: ``question_id``, ``doc_id`` (the question's passage), ``answerable``, ``gold_spans``
    (``[{doc_id, start, end}]``, one per selected sentence, in passage order; ``[]`` when
    unanswerable), ``n_gold``, ``n_annotations`` (answers written for it), ``passage_chars`` and
    ``nq_passage_id`` (ClapNQ's retrieval-corpus id of the passage, answerable questions only).

    Examples
    --------
    >>> questions = load_questions()
    >>> len(questions), int(questions["answerable"].sum()), int(questions["n_gold"].sum())
    (600, 300, 893)
    """
    folder = data_dir(path)
    questions = read_rows(folder / "questions.parquet")
    questions.attrs = {}
    set_meta(questions, {"dataset": _stamp(folder)})
    return questions


def load_documents(*, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The corpus: ``doc_id`` and ``n_chars`` of each of the 597 distinct passages.

    ``raglab.chunks.fixed(dict(zip(docs.doc_id, docs.n_chars)), size)`` re-chunks it at any size.

    Examples
    --------
    >>> docs = load_documents()
    >>> len(docs), int(docs["n_chars"].sum()) > 500_000
    (597, True)
    """
    folder = data_dir(path)
    return read_rows(folder / "documents.parquet")


def load_chunks(size: int = 256, *, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The chunk table of a run: ``chunk_id``, ``doc_id``, ``start``, ``end`` (end exclusive), ``position``.

    Parameters
    ----------
    size : {256, 512}
        Characters per chunk (no overlap; a passage's last chunk is shorter).

    Examples
    --------
    >>> chunks = load_chunks(512)
    >>> chunks.loc[0, "chunk_id"], int(chunks.loc[0, "end"]), int((chunks["end"] - chunks["start"]).max())
    ('pf26ccf2587dc#0', 512, 512)
    """
    size = _check_size(size)
    folder = data_dir(path)
    return read_rows(folder / f"chunks_{size}.parquet")


def load_run(
    size: int = 256, *, with_questions: bool = True, path: str | os.PathLike[str] | None = None
) -> pd.DataFrame:
    """One BM25 run over the ClapNQ dev questions at a chunk size, stamped with the eval set.

    Parameters
    ----------
    size : {256, 512}
        Characters per chunk.
    with_questions : bool
        Join the eval set's columns (``gold_spans``, ``answerable``, ``doc_id``, ...).

    Returns
    -------
    DataFrame
        ``question_id``, ``retrieved`` (top 5 chunk ids, rank order), ``retrieved_spans``,
        ``scores`` (their BM25 scores), ``candidates`` (top 20) and ``candidate_spans``, ``support``
        (LexicalJudge faithfulness of the reference answer against the top-5 context; NaN when
        unanswerable), ``support_claims``; then the eval set's columns. Both sizes carry the same
        eval-set stamp (name, version = source commit, hash of the question ids), so
        ``pair_runs`` and ``df.rag.compare`` accept them together.

    Examples
    --------
    >>> run = load_run(512)
    >>> scores = run.rag.retrieval(k=5)
    >>> round(float(scores["recall@5"].mean()), 3), round(float(scores["coverage@5"].mean()), 3)
    (0.71, 0.756)
    """
    size = _check_size(size)
    folder = data_dir(path)
    run = read_rows(folder / "runs" / f"chunk{size}_bm25.parquet")
    meta = get_meta(run)
    chunks = load_chunks(size, path=folder)
    span_of = {
        c: {"doc_id": d, "start": int(s), "end": int(e)}
        for c, d, s, e in zip(chunks["chunk_id"], chunks["doc_id"], chunks["start"], chunks["end"])
    }
    position = list(run.columns).index("candidates") + 1
    run.insert(position, "candidate_spans", [[dict(span_of[c]) for c in row] for row in run["candidates"]])
    questions = load_questions(path=folder)
    if with_questions:
        run = run.merge(questions, on="question_id", how="left", validate="one_to_one")
    manifest = _read_manifest(folder)
    evalset = _evalset_stamp(NAME, manifest, questions["question_id"].tolist())
    run.attrs = {}
    set_meta(run, {"evalset": evalset, "run": meta.get("run", {"name": f"chunk{size}_bm25"}), "dataset": _stamp(folder)})
    return run


def load_runs(*, with_questions: bool = True, path: str | os.PathLike[str] | None = None) -> dict[str, pd.DataFrame]:
    """Both runs, ``{"chunk256_bm25": ..., "chunk512_bm25": ...}``, on the same questions in the same order.

    Examples
    --------
    >>> runs = load_runs()
    >>> list(runs), (runs["chunk256_bm25"]["question_id"] == runs["chunk512_bm25"]["question_id"]).all()
    (['chunk256_bm25', 'chunk512_bm25'], np.True_)
    """
    return {f"chunk{s}_bm25": load_run(s, with_questions=with_questions, path=path) for s in SIZES}
