"""Bundled example data: row tables derived from public datasets (ids, offsets, labels, scores; no text).

The files ship inside the package (``raglab/datasets/data/``, a copy of the project's ``data/`` made
when the wheel is built; ``data/README.md`` names sources and licences). A source checkout or an
editable install reads ``data/`` in place; set ``RAGLAB_DATA`` to read them from elsewhere.

SQuAD 2.0 dev (CC BY-SA 4.0), 11,873 questions over 35 Wikipedia articles, half unanswerable:

- :func:`squad_questions`: the eval set, with gold as character spans (``gold_spans``), ``qtype``,
  ``article`` and ``answerable``.
- :func:`squad_run`: a retrieval configuration's run (ranked chunk ids and their character spans).
- :func:`squad_reader`: a reader model's answer-level scores (``em``, ``f1``, ``declined``).

MTRAG human evaluations (Apache-2.0), 159 multi-turn RAG tasks x 3 answerers rated by people and
two LLM judges: :mod:`raglab.datasets.mtrag` (``load_responses``, ``load_runs``, ...). ClapNQ (600 questions,
its passages chunked at 256 and 512 characters and ranked with BM25): :mod:`raglab.datasets.clapnq`.
FRANK (MIT), 2,246 news summaries by 9 systems with people's factuality labels and automatic
metrics as judge-like scores: :func:`frank_summaries` (:mod:`raglab.datasets.frank`, also per-system runs).

A handbook written by the raglab developers (Apache-2.0), for judges that need text:

- :func:`handbook`: 36 questions about a fictional storage product, with retrieved passages,
  one system's answers and a person's faithfulness label per answer.

Examples
--------
>>> from raglab import datasets
>>> run = datasets.squad_run("chunk1000_bm25")                  # doctest: +SKIP
>>> run[["question_id", "retrieved", "gold_spans", "qtype"]].shape  # doctest: +SKIP
(11873, 4)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from raglab._meta import get_meta, set_meta
from raglab._validation import check_option
from raglab.io import read_rows

__all__ = ["SQUAD_READERS", "SQUAD_RUNS", "data_dir", "frank_summaries", "handbook", "squad_questions", "squad_reader", "squad_run"]

SQUAD_RUNS = ("chunk1000_bm25", "chunk500_rerank", "chunk500_rerank_expand")
SQUAD_READERS = ("bert", "bidaf", "nlnet")


_PACKAGED = Path(__file__).resolve().parent / "data"  # in an installed wheel (setup.py copies data/ here)
_CHECKOUT = Path(__file__).resolve().parents[2] / "data"  # in a source checkout or an editable install


def data_dir() -> Path:
    """The folder holding raglab's bundled data: ``RAGLAB_DATA``, else the installed copy, else the checkout's ``data/``.

    Examples
    --------
    >>> sorted(p.name for p in data_dir().iterdir() if p.is_dir())
    ['clapnq', 'frank', 'handbook', 'mtrag', 'squad2']
    """
    configured = os.environ.get("RAGLAB_DATA")
    if configured:
        path = Path(configured)
        if not path.is_dir():
            raise FileNotFoundError(
                f"RAGLAB_DATA is {configured!r}, which is not a folder; point it at a folder laid out as "
                "raglab's data/ (clapnq/, frank/, handbook/, mtrag/, squad2/), or unset it to use the bundled copy."
            )
        return path
    for path in (_PACKAGED, _CHECKOUT):
        if path.is_dir():
            return path
    raise FileNotFoundError(
        f"raglab's bundled data is neither in the installed package ({str(_PACKAGED)!r}) nor in a source "
        f"checkout ({str(_CHECKOUT)!r}). Reinstall raglab from a wheel or sdist, or set RAGLAB_DATA to the folder."
    )


def _evalset_stamp(name: str, manifest: Mapping[str, Any], question_ids: Sequence[str], **extra: str) -> dict[str, Any]:
    """The eval-set stamp of a bundled dataset's runs: its name, the source commit as version, a hash of the ids."""
    digest = hashlib.sha256("\n".join(question_ids).encode("utf-8")).hexdigest()
    return {"name": name, "version": manifest["commit"][:12], "hash": digest, **extra}


def _dataset_folder(name: str, files: tuple[str, ...], path: str | os.PathLike[str] | None, *, label: str, script: str, source: str) -> Path:
    """The folder of one bundled dataset (``path`` or ``data_dir()/name``), refusing one that lacks its files.

    One place for every loader's "where are my files" check and message.
    """
    folder = Path(path) if path is not None else data_dir() / name
    missing = [f for f in files if not (folder / f).exists()]
    if missing:
        raise FileNotFoundError(
            f"{label} files {missing} not found in {folder}. They ship with raglab (data/{name} in a source checkout, "
            f"raglab/datasets/data/{name} when installed); rebuild them with `python scripts/{script}` (needs "
            f"../shared/data/{source}), or pass path= / set RAGLAB_DATA to the folder holding {name}/"
        )
    return folder


def _read_manifest(folder: Path) -> dict:
    """A dataset folder's ``manifest.json``."""
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def squad_questions() -> pd.DataFrame:
    """The SQuAD 2.0 dev eval set: one row per question, gold as character spans.

    Columns: ``question_id``, ``article``, ``qtype`` (first wh-word of the question),
    ``answerable``, ``gold_spans`` (``[{doc_id, start, end}]`` in article coordinates, ``[]`` when
    unanswerable), ``n_answers``, ``span_ambiguous`` (the answer text occurs more than once in its
    paragraph; the offset is its first occurrence).

    Examples
    --------
    >>> questions = squad_questions()
    >>> len(questions), int(questions["answerable"].sum())    # SQuAD 2.0 dev's official counts
    (11873, 5928)
    """
    return read_rows(data_dir() / "squad2" / "questions.parquet")


def _with_questions(frame: pd.DataFrame) -> pd.DataFrame:
    questions = squad_questions()
    merged = frame.merge(questions, on="question_id", how="left", validate="one_to_one")
    set_meta(merged, get_meta(frame))
    return merged


def squad_run(config: str = "chunk1000_bm25", *, with_questions: bool = True) -> pd.DataFrame:
    """One retrieval configuration's run over the SQuAD 2.0 dev questions.

    Parameters
    ----------
    config : {"chunk1000_bm25", "chunk500_rerank", "chunk500_rerank_expand"}
        1000-character chunks with BM25; 500-character chunks with a reranker; the same with each
        chunk expanded by its neighbours. Five chunks reach the model in each.
    with_questions : bool
        Join the eval set's columns (``gold_spans``, ``qtype``, ``answerable``, ...).

    Returns
    -------
    DataFrame
        ``question_id``, ``retrieved`` (chunk ids in rank order), ``retrieved_spans``,
        ``candidates`` (the retriever's top 20 before truncation to 5) and ``candidate_spans``,
        ``boundary_cut`` (the answer overlaps the context but no single chunk holds all of it).

    Examples
    --------
    >>> run = squad_run("chunk500_rerank")
    >>> run.loc[0, "retrieved"][0], run.loc[0, "retrieved_spans"][0], run.loc[0, "gold_spans"]
    ('1973_oil_crisis#500-0', {'doc_id': '1973_oil_crisis', 'start': 0, 'end': 498}, [{'doc_id': '1973_oil_crisis', 'start': 29, 'end': 41}])
    """
    check_option("config", config, SQUAD_RUNS)
    run = read_rows(data_dir() / "squad2" / "runs" / f"{config}.parquet")
    return _with_questions(run) if with_questions else run


def squad_reader(model: str = "bert", *, with_questions: bool = True) -> pd.DataFrame:
    """A SQuAD 2.0 leaderboard model's dev answers, scored with the official v2 rules.

    Parameters
    ----------
    model : {"bert", "bidaf", "nlnet"}
    with_questions : bool
        Join the eval set's columns.

    Returns
    -------
    DataFrame
        ``question_id``, ``declined`` (empty prediction), ``em``, ``f1``.

    Examples
    --------
    >>> bert = squad_reader("bert")
    >>> print(f"EM {100 * bert['em'].mean():.2f}, F1 {100 * bert['f1'].mean():.2f}")   # the official dev scores
    EM 78.74, F1 81.78
    """
    check_option("model", model, SQUAD_READERS)
    reader = read_rows(data_dir() / "squad2" / "readers" / f"{model}.parquet")
    return _with_questions(reader) if with_questions else reader


def handbook() -> pd.DataFrame:
    """36 questions about a fictional product handbook, with answers and human faithfulness labels.

    Written by the raglab developers so that judges have real text to read. Columns:
    ``question_id``, ``question``, ``qtype``, ``retrieved`` (passage ids), ``gold`` (``[]`` when the
    handbook does not answer the question), ``context`` (the retrieved passages' text, in order),
    ``answer``, ``reference``, ``human_faithful`` (1 every claim supported by the context, 0 not,
    NaN for refusals, which have no claims to judge).

    The answers include the cases a faithfulness judge must get right: one unsupported number in
    an otherwise good answer, contradictions that share most words with the context (word overlap
    passes them), paraphrases that share few words (word overlap fails them), and refusals.

    Examples
    --------
    >>> from raglab import datasets
    >>> rows = datasets.handbook()
    >>> rows["human_faithful"].value_counts(dropna=False).to_dict()
    {1.0: 24, 0.0: 9, nan: 3}
    """
    return read_rows(data_dir() / "handbook" / "rows.jsonl")


_FRANK_FILES = ("summaries.csv", "manifest.json")
_FRANK_SPLITS = ("valid", "test")
_FRANK_TEXT = ("question_id", "article_id", "system", "dataset", "split")


def _frank_folder(path: str | os.PathLike[str] | None) -> Path:
    return _dataset_folder("frank", _FRANK_FILES, path, label="FRANK", script="build_frank.py", source="frank")


def _frank_stamp(folder: Path) -> dict[str, Any]:
    manifest = _read_manifest(folder)
    return {"name": "frank", "source": manifest["source"], "commit": manifest["commit"], "licence": manifest["licence"]}


def _frank_split(split: str | None) -> str | None:
    if split is not None:
        check_option("split", split, _FRANK_SPLITS)
    return split


def frank_summaries(split: str | None = None, *, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """FRANK's 2,246 news summaries: people's factuality labels and automatic metrics, one row per summary.

    FRANK (Pagnoni et al., NAACL 2021; MIT) is described in :mod:`raglab.datasets.frank`, which also
    gives per-system runs (:func:`raglab.datasets.frank.load_runs`).

    Parameters
    ----------
    split : {None, "valid", "test"}
        FRANK's split to keep (default: all 2,246 summaries).
    path : path, optional
        Folder with the files (default: the bundled ``data/frank``).

    Returns
    -------
    DataFrame
        ``question_id`` (``<article_id>:<system>``, one per summary), ``article_id``, ``system``,
        ``dataset`` (``cnndm``/``bbc``), ``split`` (strings), ``human_factuality`` (float in [0, 1]:
        the share of the summary's sentences people found free of factual errors),
        ``human_faithful`` (int, 1 when ``human_factuality`` is 1), the ``human_free_<type>`` shares
        and the automatic metrics (float; NaN where FRANK has no score): ``factcc``, ``qags``,
        ``feqa``, ``dae``, ``bertscore_{p,r,f1}_article``, ``bertscore_{p,r,f1}``, ``rouge_1``,
        ``rouge_2``, ``rouge_l``, ``meteor``, ``bleu``; in FRANK's order. ``attrs`` records the
        dataset (name, source, commit, licence, split) and an eval-set stamp over the question ids
        with ``units="article_id"``: the 4-5 summaries of one article are not independent, so
        raglab's intervals resample whole articles unless given ``units=False``.

    Examples
    --------
    >>> rows = frank_summaries()
    >>> len(rows), rows["article_id"].nunique(), int(rows["human_faithful"].sum())
    (2246, 499, 810)
    >>> valid = frank_summaries("valid")
    >>> valid[["factcc", "qags", "dae"]].corrwith(valid["human_factuality"], method="spearman").round(2).to_dict()
    {'factcc': 0.55, 'qags': 0.52, 'dae': 0.1}
    """
    split = _frank_split(split)
    folder = _frank_folder(path)
    rows = pd.read_csv(folder / "summaries.csv", dtype=dict.fromkeys(_FRANK_TEXT, str), keep_default_na=False,
                       na_values=[""])
    if split is not None:
        rows = rows[rows["split"] == split].reset_index(drop=True)
    faithful = (rows["human_factuality"].to_numpy(dtype=float) == 1.0).astype("int64")
    rows.insert(rows.columns.get_loc("human_factuality") + 1, "human_faithful", faithful)
    floats = [c for c in rows.columns if c not in _FRANK_TEXT and c != "human_faithful"]
    rows[floats] = rows[floats].astype(float)
    rows.attrs = {}
    evalset = _evalset_stamp("frank" if split is None else f"frank-{split}", _read_manifest(folder),
                             rows["question_id"].tolist(), units="article_id")
    set_meta(rows, {"evalset": evalset, "dataset": {**_frank_stamp(folder), "split": split or "all"}})
    return rows
