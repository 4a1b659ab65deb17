"""Which span rule rewards cutting? ClapNQ dev, fixed 400-character windows vs sentence chunks.

Both chunkings of the 597 ClapNQ dev passages are searched with the same BM25 (the bundled build's
retriever, ``scripts/build_clapnq.py``: rank_bm25 ``BM25Okapi``, lowercase ``\\w+`` words) and the top
5 chunks are scored against the same gold sentences (the 299 answerable questions with gold) under
both span rules:

- ``per_chunk`` (raglab's old default): a gold sentence counts as found when one chunk overlaps it
  by one character;
- ``per_chunk`` with ``min_overlap=1.0``: when one chunk holds all of it;
- ``union`` (the default, ``min_overlap=1.0``): when the top-k chunks together hold all of it.

It prints, per chunking and rule, recall@5, hit@5 and nDCG@5 (coverage@5, which counts characters,
does not depend on the rule), and recall@5 of the questions whose gold the chunking cuts against
those it does not. Needs ``../shared/data/clapnq_dev`` (the passage text) and rank_bm25.

Run: ``python benchmarks/span_rules.py [--shared PATH]`` (about 20 s).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from raglab import chunks  # noqa: E402
from raglab.boundaries import boundaries  # noqa: E402

SIZE = 400
TOP_K = 5


def _build_module():
    spec = importlib.util.spec_from_file_location("build_clapnq", REPO / "scripts" / "build_clapnq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(shared: Path) -> pd.DataFrame:
    build = _build_module()
    questions, docs, queries, _ = build.load(shared)
    tables = {
        f"fixed {SIZE}-char windows": chunks.fixed({d: len(t) for d, t in docs.items()}, SIZE),
        f"sentences, at most {SIZE} chars": chunks.sentences(docs, max_chars=SIZE),
    }
    has_gold = questions["gold_spans"].map(len).gt(0).to_numpy()
    records = []
    for name, table in tables.items():
        texts = [docs[d][s:e] for d, s, e in zip(table["doc_id"], table["start"], table["end"])]
        spans = [{"doc_id": d, "start": int(s), "end": int(e)} for d, s, e in zip(table["doc_id"], table["start"], table["end"])]
        order, _ = build.rank(texts, queries)
        rows = pd.DataFrame({
            "question_id": questions["question_id"].to_numpy(dtype=object),
            "retrieved": [[table["chunk_id"].iat[i] for i in row[:TOP_K]] for row in order],
            "retrieved_spans": [[spans[i] for i in row[:TOP_K]] for row in order],
            "gold_spans": questions["gold_spans"].to_numpy(dtype=object),
        })[has_gold].reset_index(drop=True)
        cut = boundaries(rows, table)["boundary_cut"].to_numpy() == 1.0
        for rule, min_overlap in (("per_chunk", 1), ("per_chunk", 1.0), ("union", 1.0)):
            scored = rows.rag.retrieval(k=TOP_K, span_rule=rule, min_overlap=min_overlap)
            recall = scored[f"recall@{TOP_K}"]
            records.append({
                "chunking": name, "chunks": len(table), "rule": rule, "min_overlap": repr(min_overlap), "n": len(rows),
                f"recall@{TOP_K}": recall.mean(), f"hit@{TOP_K}": scored[f"hit@{TOP_K}"].mean(),
                f"ndcg@{TOP_K}": scored[f"ndcg@{TOP_K}"].mean(), f"coverage@{TOP_K}": scored[f"coverage@{TOP_K}"].mean(),
                "n cut": int(cut.sum()), f"recall@{TOP_K} cut": recall[cut].mean(),
                f"recall@{TOP_K} not cut": recall[~cut].mean(),
            })
    return pd.DataFrame.from_records(records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data", help="folder holding clapnq_dev/")
    args = parser.parse_args(argv)
    table = run(args.shared)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.precision", 3):
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
