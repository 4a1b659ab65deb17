"""Build data/mtrag/ from the MTRAG human-evaluation file in ../shared/data/mtrag_human_eval.

Deterministic: the same source file gives byte-identical outputs. Only derived figures are written
(task and response ids, document ids, ratings, judge scores, slice labels); no question, answer or
passage text.

    python scripts/build_mtrag.py [--source DIR] [--out DIR]

Outputs (CSV, UTF-8, "\\n" line endings, floats written with Python's shortest round-trip repr):

* ``tasks.csv``: one row per task -- task_id, conversation_id, turn, domain, collection,
  answerability, question_type, multi_turn (multi-labels joined by "|"), n_relevant_passages,
  n_retrieved_reference_passages, retriever_performance, context_ids ("|"-joined document ids).
* ``responses.csv``: one row per task x model -- the automatic scores rouge_l, bert_rec, bert_kprec,
  rb_agg, rb_llm (RADBench-style LLM judge), rl_f (RAGAS faithfulness LLM judge), conditional_idk.
* ``ratings.csv``: one row per task x model x annotator -- the human ratings faithfulness,
  completeness, appropriateness, naturalness (1-4 = No / Mostly No / Mostly Yes / Yes) and win_rate
  (0/50/100); an empty cell when that annotator did not give that rating.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared writer
from _csv_rows import csv_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCE_FILE = "reference_subset_with_human_evaluations.json"
DEFAULT_SOURCE = Path(os.environ.get("RAGLAB_SHARED", REPO.parent / "shared")) / "data" / "mtrag_human_eval"
DEFAULT_OUT = REPO / "data" / "mtrag"

HUMAN_METRICS = ("faithfulness", "completeness", "appropriateness", "naturalness", "win-rate")
AUTOMATIC = {  # source metric name -> column
    "RougeL": "rouge_l",
    "Bert-Rec": "bert_rec",
    "Bert-KPrec": "bert_kprec",
    "rb_agg": "rb_agg",
    "rb_llm": "rb_llm",
    "rl_f": "rl_f",
    "conditional_idk": "conditional_idk",
}
DOMAINS = {"clapnq": "clapnq", "ibmcloud": "cloud", "fiqa": "fiqa", "govt": "govt"}

TASK_COLUMNS = [
    "task_id", "conversation_id", "turn", "domain", "collection", "answerability", "question_type",
    "multi_turn", "n_relevant_passages", "n_retrieved_reference_passages", "retriever_performance", "context_ids",
]
RESPONSE_COLUMNS = ["task_id", "model_id", *AUTOMATIC.values()]
RATING_COLUMNS = ["task_id", "model_id", "annotator_id", *(m.replace("-", "_") for m in HUMAN_METRICS)]


def _domain(collection: str) -> str:
    for key, name in DOMAINS.items():
        if f"-{key}-" in collection:
            return name
    raise ValueError(f"unknown MTRAG collection {collection!r}")


def _one(labels: list, field: str, task_id: str) -> str:
    if len(labels) != 1:
        raise ValueError(f"task {task_id}: expected one {field}, got {labels!r}")
    return str(labels[0])


def build(source: Path) -> dict[str, bytes]:
    """Return {file name: bytes} for data/mtrag from the source folder."""
    path = source / SOURCE_FILE
    data = json.loads(path.read_bytes())
    tasks = []
    for t in data["tasks"]:
        task_id = t["task_id"]
        conversation_id, turn = task_id.split("<::>")
        if str(t["Turn"]) != turn:
            raise ValueError(f"task {task_id}: Turn {t['Turn']!r} disagrees with its id")
        tasks.append({
            "task_id": task_id,
            "conversation_id": conversation_id,
            "turn": int(turn),
            "domain": _domain(t["Collection"]),
            "collection": t["Collection"],
            "answerability": _one(t["Answerability"], "Answerability", task_id),
            "question_type": "|".join(t["Question Type"]),
            "multi_turn": "|".join(t["Multi-Turn"]),
            "n_relevant_passages": int(t["# Relevant Passages"]),
            "n_retrieved_reference_passages": int(t["# Retrieved Reference Passages"]),
            "retriever_performance": t["Retriever Performance Characteristics"],
            "context_ids": "|".join(c["document_id"] for c in t["contexts"]),
        })
    known = {t["task_id"] for t in tasks}
    model_order = [m["model_id"] for m in data["models"]]
    responses, ratings = [], []
    for e in data["evaluations"]:
        if e["task_id"] not in known or e["model_id"] not in model_order:
            raise ValueError(f"evaluation for unknown task/model {e['task_id']!r} / {e['model_id']!r}")
        ann = e["annotations"]
        row = {"task_id": e["task_id"], "model_id": e["model_id"]}
        for name, column in AUTOMATIC.items():
            value = ann[name]
            value = value.get("composite", value.get("system"))["value"]
            row[column] = float(value) if column != "conditional_idk" else int(value)
        responses.append(row)
        annotators = sorted({a for metric in HUMAN_METRICS for a in ann[metric]})
        for annotator in annotators:
            rating = {"task_id": e["task_id"], "model_id": e["model_id"], "annotator_id": annotator}
            for metric in HUMAN_METRICS:
                record = ann[metric].get(annotator)
                if record is None:  # this annotator did not give this rating: an empty cell
                    continue
                value = record["value"]
                if metric == "win-rate":
                    value = float(value)
                else:
                    value = int(value)
                    if not 1 <= value <= 4:
                        raise ValueError(f"{metric} rating {value!r} outside 1-4")
                rating[metric.replace("-", "_")] = value
            ratings.append(rating)
    order = {t["task_id"]: i for i, t in enumerate(tasks)}
    responses.sort(key=lambda r: (order[r["task_id"]], model_order.index(r["model_id"])))
    ratings.sort(key=lambda r: (order[r["task_id"]], model_order.index(r["model_id"]), r["annotator_id"]))
    files = {
        "tasks.csv": csv_bytes(TASK_COLUMNS, tasks),
        "responses.csv": csv_bytes(RESPONSE_COLUMNS, responses),
        "ratings.csv": csv_bytes(RATING_COLUMNS, ratings),
    }
    manifest = {
        "source": "https://github.com/IBM/mt-rag-benchmark",
        "commit": "cc5b1d481b391181b89f7ced860308482e785463",
        "path": f"mtrag-human/evaluations/{SOURCE_FILE}",
        "licence": "Apache-2.0",
        "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "models": model_order,
        "files": {name: hashlib.sha256(blob).hexdigest() for name, blob in files.items()},
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help=f"default {DEFAULT_SOURCE}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    args = parser.parse_args(argv)
    if not (args.source / SOURCE_FILE).exists():
        parser.error(f"{args.source / SOURCE_FILE} not found; pass --source or set RAGLAB_SHARED")
    files = build(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, blob in files.items():
        (args.out / name).write_bytes(blob)
        print(f"wrote {args.out / name} ({len(blob):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
