"""The main job on the bundled data: ``make demo`` / ``raglab demo`` / ``python -m raglab.demo``.

Loads the SQuAD 2.0-derived eval set and runs in ``data/``, freezes the eval set, stamps each run
with it, validates every table and prints what a reviewer would look at first.
"""

from __future__ import annotations

import sys
import tempfile

import pandas as pd

from raglab import datasets
from raglab.evalset import EvalSet
from raglab.stats import proportion_interval

__all__ = ["main"]


def _rate(successes: int, n: int) -> str:
    iv = proportion_interval(successes, n)
    return f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]"


def main() -> int:
    """Run the demo and return the exit code."""
    pd.set_option("display.width", 140)
    questions = datasets.squad_questions()
    with tempfile.TemporaryDirectory() as folder:
        evalset = EvalSet.freeze(questions, f"{folder}/squad2-dev", version="v1", columns=["article", "qtype", "answerable"])
        evalset = EvalSet.load(f"{folder}/squad2-dev")
    print(f"Eval set: {evalset!r}")
    answerable = int(questions["answerable"].sum())
    print(f"  {len(questions)} questions, {answerable} answerable, {len(questions) - answerable} unanswerable "
          f"(no gold: excluded from retrieval means, scored on declining)\n")

    print("Retrieval runs (5 chunks reach the model in each):")
    lines = []
    for config in datasets.SQUAD_RUNS:
        run = datasets.squad_run(config, with_questions=False)
        run = evalset.stamp(run)
        run.rag.validate(require=["retrieved", "retrieved_spans", "gold_spans"])
        meta = run.rag.meta
        cut = run.loc[run["answerable"], "boundary_cut"]
        lines.append({
            "config": config,
            "chunk_chars": meta["run"]["chunk_chars"],
            "context": meta["run"]["context"],
            "answer cut at a chunk boundary": _rate(int(cut.sum()), len(cut)),
        })
    print(pd.DataFrame(lines).to_string(index=False), "\n")

    print("Reader models (answer level, official SQuAD v2 scoring; Wilson 95% intervals):")
    lines = []
    for model in datasets.SQUAD_READERS:
        reader = evalset.stamp(datasets.squad_reader(model, with_questions=False))
        reader.rag.validate()
        unans = ~reader["answerable"]
        lines.append({
            "model": model,
            "exact match": _rate(int(reader["em"].sum()), len(reader)),
            "F1": f"{reader['f1'].mean():.3f}",
            "declined | unanswerable": _rate(int(reader.loc[unans, "declined"].sum()), int(unans.sum())),
            "declined | answerable": _rate(int(reader.loc[~unans, "declined"].sum()), int((~unans).sum())),
        })
    print(pd.DataFrame(lines).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
