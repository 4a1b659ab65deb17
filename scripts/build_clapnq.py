"""Build raglab's bundled data in data/clapnq/ from ClapNQ dev (../shared/data/clapnq_dev).

Deterministic: the same inputs give byte-identical outputs. The outputs hold only figures derived
from the dataset (question and passage ids, character offsets, ranks, scores, flags), never its text.

Source: https://github.com/primeqa/clapnq, commit eb26840d130f4dcf4c4c5c12a47d0beffc9cc586,
``annotated_data/dev/clapnq_dev_{answerable,unanswerable}.jsonl`` (Apache-2.0; derived from Natural
Questions, CC BY-SA 3.0). 600 questions, each with one passage; 300 answerable (annotators selected
sentences of the passage and wrote an answer), 300 unanswerable.

What it makes
-------------
questions.parquet
    question_id, doc_id, answerable, gold_spans ([{doc_id, start, end}], one per distinct sentence
    selected by any annotator, found with ``str.find`` in the passage text -- each occurs exactly once;
    ``[]`` when unanswerable, and for the few answerable questions whose annotators selected none), n_gold (sentences), n_annotations (answers written), passage_chars,
    nq_passage_id (ClapNQ's retrieval-corpus passage id for answerable questions, else None).
documents.parquet
    The corpus: doc_id (``"p"`` + the first 12 hex digits of the SHA-256 of the passage text; the 600
    passages are 597 distinct texts) and n_chars.
chunks_<size>.parquet
    ``raglab.chunks.fixed(documents, size)`` for size 256 and 512 characters, no overlap: chunk_id
    (``doc_id#position``), doc_id, start, end (end exclusive), position.
runs/chunk<size>_bm25.parquet
    Every question searched over all chunks of its size with BM25 (rank_bm25's ``BM25Okapi``, its
    defaults k1=1.5, b=0.75, epsilon=0.25). Tokenisation: the lowercased text split into ``\\w+``
    words, nothing removed. Ties are broken by chunk order (stable sort of score descending).
    Columns: question_id, retrieved (top 5 chunk ids), retrieved_spans, scores (their BM25 scores,
    rounded to 6 decimals), candidates (top 20 chunk ids; their spans are in the chunk table, and
    ``raglab.datasets.clapnq.load_run`` adds them as candidate_spans), support (LexicalJudge faithfulness
    of the first annotator's reference answer against the top-5 chunk texts; NaN when unanswerable),
    support_claims (the answer's claims the judge checked).
manifest.json
    Source, commit, licence, the SHA-256 of the source files, counts and summary figures (recall@5 under
    raglab's default span rule, the whole sentence in the top 5, and under the old one-character rule).

Run: ``python scripts/build_clapnq.py [--shared PATH] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from raglab.boundaries import boundaries  # noqa: E402
from raglab.chunks import fixed  # noqa: E402
from raglab.io import write_rows  # noqa: E402

OUT = REPO / "data" / "clapnq"
SOURCE = "https://github.com/primeqa/clapnq"
COMMIT = "eb26840d130f4dcf4c4c5c12a47d0beffc9cc586"
LICENCE = "Apache-2.0 (derived from Natural Questions, CC BY-SA 3.0)"
FILES = {
    True: "annotated_data/dev/clapnq_dev_answerable.jsonl",
    False: "annotated_data/dev/clapnq_dev_unanswerable.jsonl",
}
TSV = "retrieval/dev/question_dev_answerable.tsv"
SIZES = (256, 512)
TOP_K = 5
CANDIDATES = 20
WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """BM25 tokenisation: lowercase, then runs of word characters (``\\w+``); no stop words, no stemming."""
    return WORD.findall(text.lower())


def doc_id_of(text: str) -> str:
    return "p" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(shared: Path) -> tuple[pd.DataFrame, dict[str, str], list[str], list[str]]:
    """Questions (derived figures), the corpus doc_id -> text, the query texts and the reference answers."""
    source = shared / "clapnq_dev"
    with open(source / TSV, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)
        nq_ids = {row[0]: row[2] or None for row in reader}
    records, docs, queries, answers = [], {}, [], []
    for answerable, name in FILES.items():
        for line in (source / name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            (passage,) = item["passages"]
            text = passage["text"]
            doc_id = doc_id_of(text)
            docs.setdefault(doc_id, text)
            sentences = list(dict.fromkeys(s for out in item["output"] for s in out["selected_sentences"]))
            spans = []
            for sentence in sentences:
                start = text.find(sentence)
                if start < 0 or text.find(sentence, start + 1) >= 0:
                    raise SystemExit(f"{item['id']}: a selected sentence is not exactly once in its passage")
                spans.append({"doc_id": doc_id, "start": start, "end": start + len(sentence)})
            spans.sort(key=lambda s: (s["start"], s["end"]))
            if spans and not answerable:
                raise SystemExit(f"{item['id']}: unanswerable but {len(spans)} selected sentences")
            records.append(
                {
                    "question_id": str(item["id"]),
                    "doc_id": doc_id,
                    "answerable": answerable,
                    "gold_spans": spans,
                    "n_gold": len(spans),
                    "n_annotations": sum(1 for out in item["output"] if out["answer"]),
                    "passage_chars": len(text),
                    "nq_passage_id": nq_ids.get(str(item["id"])) if answerable else None,
                }
            )
            queries.append(item["input"])
            answers.append(item["output"][0]["answer"])
    questions = pd.DataFrame(records)
    questions["nq_passage_id"] = questions["nq_passage_id"].astype(object)
    return questions, docs, queries, answers


def rank(chunk_texts: list[str], queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """BM25 top-``CANDIDATES`` chunk indices and scores per query (ties: earlier chunk first)."""
    from rank_bm25 import BM25Okapi

    index = BM25Okapi([tokens(t) for t in chunk_texts])
    order, scores = [], []
    for query in queries:
        score = index.get_scores(tokens(query))
        top = np.argsort(-score, kind="stable")[:CANDIDATES]
        order.append(top)
        scores.append(score[top])
    return np.array(order), np.array(scores)


def support(questions: pd.DataFrame, queries: list[str], answers: list[str], contexts: list[list[str]]) -> pd.DataFrame:
    """LexicalJudge faithfulness of the reference answer against the retrieved chunk texts (numbers only)."""
    from raglab.judge import LexicalJudge

    rows = pd.DataFrame({"question_id": questions["question_id"], "question": queries, "answer": answers, "context": contexts})
    rows = rows[questions["answerable"].to_numpy()]
    judged = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    out = pd.DataFrame({"question_id": questions["question_id"]})
    values = dict(zip(judged["question_id"], judged["faithfulness"].astype(float)))
    claims = dict(zip(judged["question_id"], judged["faithfulness_verdicts"].map(lambda v: len(v) if isinstance(v, list) else 0)))
    out["support"] = out["question_id"].map(values).astype(float)
    out["support_claims"] = out["question_id"].map(claims).fillna(0).astype("int64")
    return out


def build(shared: Path, out: Path) -> dict:
    source = shared / "clapnq_dev"
    questions, docs, queries, answers = load(shared)
    documents = pd.DataFrame({"doc_id": list(docs), "n_chars": [len(t) for t in docs.values()]})
    files: dict[str, pd.DataFrame] = {"questions.parquet": questions, "documents.parquet": documents}
    summary: dict = {
        "span_rule": "recall@5: a gold sentence counts when the top 5 chunks together hold all of it (raglab's "
        "default, span_rule='union'); recall@5_per_chunk: when one chunk overlaps it by one character (the old rule)",
        "questions": len(questions),
        "answerable": int(questions["answerable"].sum()),
        "documents": len(documents),
        "gold_sentences": int(questions["n_gold"].sum()),
        "answerable_without_gold": int((questions["answerable"] & questions["n_gold"].eq(0)).sum()),
    }
    for size in SIZES:
        chunks = fixed(dict(zip(documents["doc_id"], documents["n_chars"])), size)
        chunks = chunks[["chunk_id", "doc_id", "start", "end", "position"]].reset_index(drop=True)
        chunks.attrs = {}
        chunk_texts = [docs[d][s:e] for d, s, e in zip(chunks["doc_id"], chunks["start"], chunks["end"])]
        spans = [{"doc_id": d, "start": int(s), "end": int(e)} for d, s, e in zip(chunks["doc_id"], chunks["start"], chunks["end"])]
        ids = chunks["chunk_id"].tolist()
        order, scores = rank(chunk_texts, queries)
        run = pd.DataFrame(
            {
                "question_id": questions["question_id"].to_numpy(dtype=object),
                "retrieved": [[ids[i] for i in row[:TOP_K]] for row in order],
                "retrieved_spans": [[dict(spans[i]) for i in row[:TOP_K]] for row in order],
                "scores": [[round(float(x), 6) for x in row[:TOP_K]] for row in scores],
                "candidates": [[ids[i] for i in row] for row in order],
            }
        )
        judged = support(questions, queries, answers, [[chunk_texts[i] for i in row[:TOP_K]] for row in order])
        run["support"] = judged["support"].to_numpy()
        run["support_claims"] = judged["support_claims"].to_numpy()
        name = f"chunk{size}_bm25"
        run.attrs["raglab"] = {
            "run": {
                "name": name,
                "chunk_chars": size,
                "retriever": "BM25Okapi (rank_bm25 defaults k1=1.5, b=0.75, epsilon=0.25), lowercase \\w+ words",
                "context": f"top {TOP_K} chunks",
                "support": "LexicalJudge faithfulness of the reference answer against the top-5 chunk texts",
                "source": "ClapNQ dev (Apache-2.0; from Natural Questions, CC BY-SA 3.0), derived ids and offsets only",
            }
        }
        files[f"chunks_{size}.parquet"] = chunks
        files[f"runs/{name}.parquet"] = run
        scored = run.merge(questions[["question_id", "gold_spans", "answerable"]], on="question_id")
        metrics = scored[scored["answerable"]].rag.retrieval(k=TOP_K)
        # the old rule (one chunk overlapping a span by one character finds it), kept to show what it rewarded
        per_chunk = scored[scored["answerable"]].rag.retrieval(k=TOP_K, span_rule="per_chunk")
        summary[name] = {
            "chunks": len(chunks),
            "gold_sentences_straddling": boundaries(questions, chunks).attrs["raglab"]["boundaries"]["n_gold_spans_cut"],
            f"recall@{TOP_K}": round(float(metrics[f"recall@{TOP_K}"].mean()), 4),
            f"recall@{TOP_K}_per_chunk": round(float(per_chunk[f"recall@{TOP_K}"].mean()), 4),
            f"coverage@{TOP_K}": round(float(metrics[f"coverage@{TOP_K}"].mean()), 4),
            "support": round(float(run["support"].mean()), 4),
        }
    manifest = {
        "source": SOURCE,
        "commit": COMMIT,
        "licence": LICENCE,
        "files": {name: sha256(source / name) for name in (*FILES.values(), TSV)},
        "summary": summary,
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        write_rows(frame, out / name)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data", help="folder holding clapnq_dev/")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default data/clapnq)")
    args = parser.parse_args(argv)
    manifest = build(args.shared, args.out)
    print(json.dumps(manifest["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
