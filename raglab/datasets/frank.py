"""FRANK: people's factuality labels and automatic metrics on 2,246 news summaries, as raglab row tables.

FRANK (Pagnoni, Balachandran and Tsvetkov, NAACL 2021; https://github.com/artidoro/frank, MIT)
had people annotate every sentence of 2,246 summaries for factual errors against the article: 9
summarisation systems over 499 articles, CNN/DM (``bart``, ``bert_sum``, ``bus``, ``pgn``, ``s2s``; 250
articles, each summarised by all five) and XSum/BBC (``BERTS2S``, ``PtGen``, ``TConvS2S``,
``TranS2S``; 249 articles, each summarised by all four). FRANK splits the articles into ``valid``
(149 articles, 671 summaries) and ``test`` (350 articles, 1,575 summaries).

- ``human_factuality`` is FRANK's ``Factuality``: the share of the summary's sentences the annotators
  found free of factual errors, in [0, 1]; ``human_faithful`` is 1 when it is 1 (no sentence has an
  error: 810 of 2,246 summaries, 36%), else 0.
- ``human_free_<type>``: the share of sentences free of one error type of FRANK's typology (1 = none):
  ``semantic_frame`` (``relation``, ``entity``, ``circumstance``), ``discourse`` (``coreference``,
  ``discourse_link``), ``content_verifiability`` (``out_of_article``, ``grammar``) and ``other``.
- The automatic metrics FRANK ran, one column each (:data:`METRICS`), higher meaning more faithful.
  :data:`JUDGES` compare the summary with the article, as a faithfulness judge does: ``factcc``
  (FactCC, the share of sentences its classifier calls consistent), ``qags`` (QAGS), ``feqa`` (FEQA; 4
  NaN), ``dae`` (DAE, dependency-arc entailment, FRANK's ``Dep Entail``; 83 NaN) and BERTScore against
  the article (``bertscore_{p,r,f1}_article``). The others compare it with the reference summary:
  BERTScore, ROUGE-1/2/L, METEOR (in [0, 1]) and BLEU (0-100).

raglab ships only these derived figures in ``data/frank/`` (ids, labels, scores; no article or
summary text; installed as ``raglab/datasets/data/frank``), built by ``scripts/build_frank.py`` from
``../shared/data/frank``.

Examples
--------
>>> from raglab.datasets.frank import load_summaries
>>> rows = load_summaries()
>>> len(rows), rows["article_id"].nunique(), rows["system"].nunique(), int(rows["human_faithful"].sum())
(2246, 499, 9, 810)
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from raglab._meta import set_meta
from raglab._validation import check_option
from raglab.datasets import (
    _FRANK_SPLITS,
    _evalset_stamp,
    _frank_folder,
    _frank_split,
    _frank_stamp,
    _read_manifest,
    frank_summaries,
)

__all__ = [
    "DATASETS",
    "ERROR_TYPES",
    "JUDGES",
    "METRICS",
    "NAME",
    "SPLITS",
    "SYSTEMS",
    "data_dir",
    "load_runs",
    "load_summaries",
]

NAME = "frank"
SPLITS = _FRANK_SPLITS
"""FRANK's article-level split: tune on ``valid``, report on ``test``."""
DATASETS = ("cnndm", "bbc")
"""The source corpora: CNN/DailyMail and XSum (BBC articles)."""
SYSTEMS = {
    "cnndm": ("bart", "bert_sum", "bus", "pgn", "s2s"),
    "bbc": ("BERTS2S", "PtGen", "TConvS2S", "TranS2S"),
}
"""The summarisation systems of each corpus; within a corpus every system summarised every article."""
JUDGES = ("factcc", "qags", "feqa", "dae", "bertscore_p_article", "bertscore_r_article", "bertscore_f1_article")
"""The metrics that score the summary against the article (judge-like faithfulness scores)."""
METRICS = (*JUDGES, "bertscore_p", "bertscore_r", "bertscore_f1", "rouge_1", "rouge_2", "rouge_l", "meteor", "bleu")
"""Every automatic metric column: :data:`JUDGES`, then the ones against the reference summary."""
ERROR_TYPES = (
    "semantic_frame", "discourse", "content_verifiability", "relation", "entity", "circumstance",
    "coreference", "discourse_link", "out_of_article", "grammar", "other",
)
"""FRANK's error types and groups; column ``human_free_<type>`` holds the share of sentences free of it."""

def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the FRANK files (``path`` or the bundled ``data/frank``); raises naming what is missing.

    Examples
    --------
    >>> data_dir().name
    'frank'
    """
    return _frank_folder(path)


def load_summaries(split: str | None = None, *, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """One row per summary (article x system): people's factuality labels and the automatic metrics.

    The table of :func:`raglab.datasets.frank_summaries` (which lists the columns and records):
    ids, ``human_factuality``, ``human_faithful``, the ``human_free_<type>`` shares
    (:data:`ERROR_TYPES`) and the :data:`METRICS`.

    Parameters
    ----------
    split : {None, "valid", "test"}
        FRANK's split to keep (default: all 2,246 summaries).
    path : path, optional
        Folder with the files (default: the bundled ``data/frank``).

    Examples
    --------
    >>> rows = load_summaries("valid")
    >>> len(rows), rows["article_id"].nunique(), round(float(rows["human_faithful"].mean()), 3)
    (671, 149, 0.362)
    """
    return frank_summaries(split, path=path)


def load_runs(
    dataset: str = "cnndm", split: str | None = None, *, path: str | os.PathLike[str] | None = None
) -> dict[str, pd.DataFrame]:
    """One row table per system of a corpus, ``question_id`` = article id, ready for paired comparisons.

    Within a corpus every system summarised every article, so the runs share their question ids
    and one eval-set stamp (name ``frank-<dataset>``, version = source commit, hash of the article
    ids), which ``pair_runs``, ``df.rag.compare`` and ``df.rag.gate`` accept. Each run has the
    columns of :func:`load_summaries`, with the summary id kept as ``summary_id``.

    Parameters
    ----------
    dataset : {"cnndm", "bbc"}
        CNN/DM (5 systems, 250 articles) or XSum/BBC (4 systems, 249 articles).
    split : {None, "valid", "test"}
        FRANK's split to keep (default: all articles).
    path : path, optional
        Folder with the files (default: the bundled ``data/frank``).

    Examples
    --------
    >>> runs = load_runs("bbc")
    >>> {system: len(run) for system, run in runs.items()}
    {'BERTS2S': 249, 'PtGen': 249, 'TConvS2S': 249, 'TranS2S': 249}
    """
    check_option("dataset", dataset, DATASETS)
    split = _frank_split(split)
    folder = data_dir(path)
    rows = frank_summaries(split, path=folder)
    rows = rows[rows["dataset"] == dataset]
    articles = list(dict.fromkeys(rows["article_id"]))
    name = f"{NAME}-{dataset}" if split is None else f"{NAME}-{dataset}-{split}"
    evalset = _evalset_stamp(name, _read_manifest(folder), articles)
    dataset_meta = {**_frank_stamp(folder), "split": split or "all", "corpus": dataset}
    runs: dict[str, pd.DataFrame] = {}
    for system in SYSTEMS[dataset]:
        run = rows[rows["system"] == system].rename(columns={"question_id": "summary_id"})
        run = run.set_index("article_id", drop=False).loc[articles].reset_index(drop=True)
        run.insert(0, "question_id", run["article_id"])
        run.attrs = {}
        set_meta(run, {"evalset": evalset, "run": {"name": system}, "dataset": dataset_meta})
        runs[system] = run
    return runs
