"""MTRAG human evaluations as raglab row tables.

MTRAG (IBM, Katsis et al., TACL 2025; https://github.com/IBM/mt-rag-benchmark, Apache-2.0) rated the
answers of three answerers -- the human ``reference``, ``llama-3.1-405b-instruct`` and ``gpt-4o`` --
to 159 multi-turn RAG tasks. Each answer was rated by 2-3 of 7 annotators on faithfulness,
completeness, appropriateness and naturalness (1-4 = No / Mostly No / Mostly Yes / Yes) and
head-to-head win rate, and scored by two LLM judges: ``rl_f`` (RAGAS faithfulness) and ``rb_llm``
(RADBench-style), plus algorithmic scores.

raglab ships only derived figures in ``data/mtrag/`` (ids, ratings, judge scores and slice labels;
no text; installed as ``raglab/datasets/data/mtrag``), built by ``scripts/build_mtrag.py`` from
``../shared/data/mtrag_human_eval``.

Examples
--------
>>> from raglab.datasets.mtrag import load_responses
>>> rows = load_responses("faithfulness")
>>> rows.shape[0], rows["task_id"].nunique(), sorted(rows["model"].unique())
(477, 159, ['gpt-4o', 'llama-3.1-405b-instruct', 'reference'])
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from raglab._meta import set_meta
from raglab._validation import check_option
from raglab.agreement import majority_vote
from raglab.datasets import _dataset_folder, _evalset_stamp, _read_manifest

__all__ = [
    "HUMAN_METRICS",
    "JUDGES",
    "MODELS",
    "RATER_PREFIX",
    "SCALE",
    "data_dir",
    "load_ratings",
    "load_responses",
    "load_runs",
    "load_tasks",
    "rater_columns",
]

MODELS = ("reference", "llama-3.1-405b-instruct", "gpt-4o")
HUMAN_METRICS = ("faithfulness", "completeness", "appropriateness", "naturalness", "win_rate")
JUDGES = ("rl_f", "rb_llm")
"""The two LLM judges: RAGAS faithfulness (``rl_f``) and a RADBench-style judge (``rb_llm``), in [0, 1]."""
SCALE = {1: "No", 2: "Mostly No", 3: "Mostly Yes", 4: "Yes"}
RATER_PREFIX = "rater_"

_FILES = ("tasks.csv", "responses.csv", "ratings.csv", "manifest.json")


def data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the MTRAG files (``path`` or the bundled ``data/mtrag``); raises naming what is missing.

    Examples
    --------
    >>> data_dir().name
    'mtrag'
    """
    return _dataset_folder("mtrag", _FILES, path, label="MTRAG", script="build_mtrag.py", source="mtrag_human_eval")


def _read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(
        folder / name, dtype={"task_id": str, "conversation_id": str, "model_id": str, "annotator_id": str},
        keep_default_na=False, na_values=[""],
    )


def load_tasks(*, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """One row per task: ids, turn, domain, answerability, question types and other slice labels.

    ``question_type`` and ``multi_turn`` are lists (a task can have several types; ``multi_turn`` is
    empty on first turns); ``context_ids`` lists the ids of the reference passages the answerers saw.

    Examples
    --------
    >>> tasks = load_tasks()
    >>> tasks["answerability"].value_counts().to_dict()
    {'ANSWERABLE': 135, 'PARTIAL': 15, 'UNANSWERABLE': 7, 'CONVERSATIONAL': 2}
    """
    folder = data_dir(path)
    tasks = _read(folder, "tasks.csv")
    for column in ("question_type", "multi_turn", "context_ids"):
        tasks[column] = [[] if pd.isna(v) else str(v).split("|") for v in tasks[column]]
    return tasks


def load_ratings(*, path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """One row per task x model x annotator with the human ratings (nullable integers; win_rate float).

    Examples
    --------
    >>> ratings = load_ratings()
    >>> {int(k): int(v) for k, v in ratings["faithfulness"].value_counts().sort_index().items()}
    {1: 109, 2: 159, 3: 261, 4: 890}
    """
    folder = data_dir(path)
    ratings = _read(folder, "ratings.csv")
    for metric in HUMAN_METRICS[:-1]:
        ratings[metric] = ratings[metric].astype("Int64")
    ratings["win_rate"] = ratings["win_rate"].astype(float)
    return ratings


def rater_columns(rows: pd.DataFrame) -> list[str]:
    """The per-annotator rating columns of a :func:`load_responses` table.

    Examples
    --------
    >>> len(rater_columns(load_responses("faithfulness")))     # 7 annotators in MTRAG's human evaluation
    7
    """
    return [c for c in rows.columns if str(c).startswith(RATER_PREFIX)]


def load_responses(
    metric: str = "faithfulness",
    *,
    models: list[str] | tuple[str, ...] | None = None,
    path: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """One row per task x model: slice labels, judge scores and the human ratings of ``metric``.

    Columns: ``task_id``, ``model``, the task's slice labels (see :func:`load_tasks`), the automatic
    scores (``rl_f``, ``rb_llm``, ``rb_agg``, ``rouge_l``, ``bert_rec``, ``bert_kprec``,
    ``conditional_idk``), one ``rater_<annotator id>`` column per annotator (NaN where that annotator
    did not rate the answer), ``n_raters``, ``human_mean``, ``human_median`` and
    ``human_majority`` (the most frequent rating; NaN when the top count is tied).

    Parameters
    ----------
    metric : {"faithfulness", "completeness", "appropriateness", "naturalness", "win_rate"}
        Which human rating fills the rater columns.
    models : list of str, optional
        Keep these answerers (default all three, in the order of :data:`MODELS`).
    path : path, optional
        Folder with the files (default: the bundled ``data/mtrag``).

    Examples
    --------
    >>> rows = load_responses("faithfulness", models=["gpt-4o"])
    >>> len(rows), int(rows["n_raters"].min()), int(rows["n_raters"].max())
    (159, 2, 3)
    """
    check_option("metric", metric, HUMAN_METRICS)
    folder = data_dir(path)
    chosen = list(MODELS if models is None else models)
    unknown = sorted(set(chosen) - set(MODELS))
    if unknown:
        raise ValueError(f"unknown MTRAG model(s) {unknown}; the models are {list(MODELS)}")
    tasks = load_tasks(path=folder)
    responses = _read(folder, "responses.csv")
    ratings = load_ratings(path=folder)
    wide = ratings.pivot(index=["task_id", "model_id"], columns="annotator_id", values=metric)
    wide = wide.astype(float)
    wide.columns = [f"{RATER_PREFIX}{a}" for a in wide.columns]
    rows = responses.merge(wide, left_on=["task_id", "model_id"], right_index=True, how="left", validate="1:1")
    rows = rows[rows["model_id"].isin(chosen)]
    rows = tasks.merge(rows, on="task_id", how="inner", validate="1:m")
    rows["_model_order"] = rows["model_id"].map({m: i for i, m in enumerate(chosen)})
    task_order = {t: i for i, t in enumerate(tasks["task_id"])}
    rows["_task_order"] = rows["task_id"].map(task_order)
    rows = rows.sort_values(["_task_order", "_model_order"]).drop(columns=["_task_order", "_model_order"])
    rows = rows.rename(columns={"model_id": "model"}).reset_index(drop=True)
    raters = rater_columns(rows)
    matrix = rows[raters].to_numpy(dtype=float)
    rows["n_raters"] = np.isfinite(matrix).sum(1)
    rows["human_mean"] = rows[raters].mean(axis=1, skipna=True)
    rows["human_median"] = rows[raters].median(axis=1, skipna=True)
    majority = majority_vote(np.where(np.isfinite(matrix), matrix, None), ties="drop")
    rows["human_majority"] = np.array([np.nan if v is None else float(v) for v in majority], dtype=float)
    leading = ["task_id", "model"]
    rows = rows[leading + [c for c in rows.columns if c not in leading]]
    rows.attrs = {}
    set_meta(rows, {"dataset": {"name": "mtrag-human-eval", "metric": metric, **_stamp(folder)}})
    return rows


def _stamp(folder: Path) -> dict:
    manifest = _read_manifest(folder)
    return {"source": manifest["source"], "commit": manifest["commit"], "licence": manifest["licence"]}


def load_runs(
    metric: str = "faithfulness", *, path: str | os.PathLike[str] | None = None
) -> dict[str, pd.DataFrame]:
    """One row table per answerer (``question_id`` = task id), ready for paired comparisons.

    Each run is :func:`load_responses` for one model with ``task_id`` renamed ``question_id``, in the
    same task order, and stamped with the same eval set (name, version = source commit, hash of the
    task ids, and ``units="conversation_id"``: the tasks are turns of 20 conversations, so
    ``summary``, ``compare``, ``gate`` and ``agreement`` resample whole conversations unless given
    ``units=False``) so that ``pair_runs`` and ``df.rag.compare`` accept them.

    Examples
    --------
    >>> runs = load_runs()
    >>> list(runs), len(runs["gpt-4o"])
    (['reference', 'llama-3.1-405b-instruct', 'gpt-4o'], 159)
    """
    folder = data_dir(path)
    rows = load_responses(metric, path=folder)
    manifest = _read_manifest(folder)
    task_ids = list(dict.fromkeys(rows["task_id"]))
    # Tasks are turns of 20 conversations: intervals resample whole conversations by default.
    evalset = _evalset_stamp("mtrag-human-eval", manifest, task_ids, units="conversation_id")
    runs: dict[str, pd.DataFrame] = {}
    for model in MODELS:
        run = rows[rows["model"] == model].rename(columns={"task_id": "question_id"}).reset_index(drop=True)
        run.attrs = {}
        set_meta(run, {"evalset": evalset, "run": {"name": model},
                       "dataset": {"name": "mtrag-human-eval", "metric": metric, **_stamp(folder)}})
        runs[model] = run
    return runs
