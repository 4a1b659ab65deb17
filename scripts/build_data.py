"""Build raglab's bundled data in data/squad2/ from SQuAD 2.0 dev (../shared/data/squad2_dev_explorer).

Deterministic: the same inputs give byte-identical outputs. The outputs hold only figures derived
from the dataset (question ids, article ids, character offsets, labels and scores), never its text.

What it makes
-------------
questions.parquet
    The eval set: question_id, article, qtype (first wh-word of the question), answerable,
    gold_spans ([{doc_id: article, start, end}] in article coordinates; [] when unanswerable),
    n_answers, span_ambiguous (the answer text occurs more than once in its paragraph, so the
    reconstructed offset is the first occurrence).
runs/<config>.parquet
    Three retrieval configurations over the same 35 articles, each article re-chunked by character
    windows and searched with BM25 (our own implementation below):
      chunk1000_bm25          1000-character chunks, BM25, top 5 reach the model
      chunk500_rerank         500-character chunks, BM25 top 20 reranked (BM25 + best-sentence idf coverage), top 5
      chunk500_rerank_expand  as chunk500_rerank, each chunk expanded with its neighbours (the fix)
    Columns: question_id, retrieved (chunk ids, rank order), retrieved_spans, candidates (the
    retriever's top 20 before truncation) with candidate_spans, and boundary_cut (the gold answer overlaps the
    retrieved context but no single chunk holds all of it).
readers/<model>.parquet
    Three SQuAD 2.0 leaderboard models' dev predictions scored with the official SQuAD v2 rules:
    question_id, declined (empty prediction), em, f1.

Run: ``python scripts/build_data.py [--shared PATH]`` (``make data``).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import string
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from raglab import chunks  # noqa: E402  (the repository's raglab, also when it is not installed)

OUT = REPO / "data" / "squad2"
ARTICLE_SEPARATOR = "\n\n"
TOP_K = 5
CANDIDATES = 20
READERS = {
    "bert": "bert_single_google.json",
    "bidaf": "bidaf_sa_elmo_single_allenai.json",
    "nlnet": "nlnet_single_msra.json",
}
# Published dev scores of the readers (SOURCE.txt: the official evaluate-v2.0.py on this file).
EXPECTED_EM_F1 = {"bert": (78.74, 81.78), "bidaf": (65.70, 67.88), "nlnet": (75.83, 78.78)}

STOP = frozenset(
    """a an the of to in on for and or is are was were be been by as at it its this that with from
    what which who whom whose when where why how did do does done has have had not no can could
    would should will shall may might than then there their they them he she his her him we our
    you your i me my into about over under between after before during""".split()
)
WH_WORDS = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how")


# ---- text helpers ----------------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in STOP]


def qtype(question: str) -> str:
    words = re.findall(r"[a-z]+", question.lower())
    for word in words[:4]:
        if word in WH_WORDS:
            return "who" if word in ("whom", "whose") else word
    for word in words:
        if word in WH_WORDS:
            return "who" if word in ("whom", "whose") else word
    return "other"


def normalize_answer(text: str) -> str:
    """SQuAD's official normalisation: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = collections.Counter(pred) & collections.Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


# ---- corpus, chunking, BM25 ------------------------------------------------------------------------


class BM25:
    def __init__(self, texts: list[str], k1: float = 0.9, b: float = 0.4) -> None:
        docs = [tokens(t) for t in texts]
        self.vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, doc in enumerate(docs):
            for term in doc:
                rows.append(i)
                cols.append(self.vocab.setdefault(term, len(self.vocab)))
        tf = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(docs), len(self.vocab)))
        tf.sum_duplicates()
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        df = np.bincount(tf.indices, minlength=len(self.vocab))
        self.idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        tf = tf.tocoo()
        weights = tf.data * (k1 + 1) / (tf.data + norm[tf.row]) * self.idf[tf.col]
        self.matrix = sp.csr_matrix((weights, (tf.row, tf.col)), shape=tf.shape)

    def query_matrix(self, queries: list[str]) -> sp.csr_matrix:
        rows, cols = [], []
        for i, query in enumerate(queries):
            for term in set(tokens(query)):
                if term in self.vocab:
                    rows.append(i)
                    cols.append(self.vocab[term])
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(queries), len(self.vocab)))

    def scores(self, queries: list[str]) -> np.ndarray:
        return (self.query_matrix(queries) @ self.matrix.T).toarray()

    @staticmethod
    def top(scores: np.ndarray, depth: int) -> np.ndarray:
        # Deterministic order: score descending, then chunk index ascending (a stable sort).
        return np.argsort(-scores, axis=1, kind="stable")[:, :depth]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in re.finditer(r"(?<=[.!?])\s+", text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if e > s]


def rerank(question: str, candidates: list[int], bm25_scores: np.ndarray, chunk_texts: list[str], idf: dict[str, float]) -> list[int]:
    """Rerank BM25's candidates by BM25 (relative to the top score) plus best-sentence idf coverage.

    Best-sentence coverage is the share of the question's idf mass whose terms all occur in one
    sentence of the chunk: SQuAD answers sit next to the question's words in one sentence.
    """
    terms = set(tokens(question))
    total = sum(idf.get(t, 0.0) for t in terms) or 1.0
    top_score = bm25_scores[candidates[0]] or 1.0
    scored = []
    for position, index in enumerate(candidates):
        text = chunk_texts[index]
        best = 0.0
        for s, e in sentence_spans(text):
            covered = terms & set(tokens(text[s:e]))
            best = max(best, sum(idf.get(t, 0.0) for t in covered) / total)
        scored.append((-round(bm25_scores[index] / top_score + best, 12), position, index))
    return [index for _, _, index in sorted(scored)]


# ---- build -----------------------------------------------------------------------------------------


def load_squad(shared: Path) -> tuple[dict[str, str], pd.DataFrame, dict[str, list[str]], dict[str, str]]:
    data = json.loads((shared / "squad2_dev_explorer" / "dev-v2.0.reconstructed.json").read_text())
    articles: dict[str, str] = {}
    records = []
    answers_by_qid: dict[str, list[str]] = {}
    questions: dict[str, str] = {}
    for article in data["data"]:
        title = article["title"]
        offset, parts = 0, []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                qid = qa["id"]
                questions[qid] = qa["question"]
                answers_by_qid[qid] = [a["text"] for a in qa["answers"]]
                spans, ambiguous = [], False
                if not qa["is_impossible"]:
                    counts = collections.Counter((a["answer_start"], a["answer_start"] + len(a["text"])) for a in qa["answers"])
                    (start, end), _ = max(counts.items(), key=lambda item: (item[1], -item[0][0], -item[0][1]))
                    majority = next(a for a in qa["answers"] if (a["answer_start"], a["answer_start"] + len(a["text"])) == (start, end))
                    ambiguous = majority.get("n_occurrences", 1) > 1
                    assert context[start:end] == majority["text"]
                    spans = [{"doc_id": title, "start": offset + start, "end": offset + end}]
                records.append(
                    {
                        "question_id": qid,
                        "article": title,
                        "qtype": qtype(qa["question"]),
                        "answerable": not qa["is_impossible"],
                        "gold_spans": spans,
                        "n_answers": len(qa["answers"]),
                        "span_ambiguous": ambiguous,
                    }
                )
            parts.append(context)
            offset += len(context) + len(ARTICLE_SEPARATOR)
        articles[title] = ARTICLE_SEPARATOR.join(parts)
    return articles, pd.DataFrame(records), answers_by_qid, questions


def build_runs(articles: dict[str, str], questions_df: pd.DataFrame, question_text: dict[str, str]) -> dict[str, pd.DataFrame]:
    queries = [question_text[q] for q in questions_df["question_id"]]
    runs = {}
    for size in (1000, 500):
        chunk_ids, chunk_spans, chunk_texts = [], [], []
        neighbours: list[tuple[int, int]] = []
        table = chunks.fixed(articles, size, snap=" ")  # the chunking every corpus shares (raglab.chunks)
        by_doc = {title: list(zip(part["start"].tolist(), part["end"].tolist()))
                  for title, part in table.groupby("doc_id", sort=False)}
        for title, text in articles.items():
            spans = by_doc.get(title, [])
            first = len(chunk_ids)
            for i, (s, e) in enumerate(spans):
                chunk_ids.append(f"{title}#{size}-{i}")
                chunk_spans.append({"doc_id": title, "start": s, "end": e})
                chunk_texts.append(text[s:e])
                neighbours.append((first + max(0, i - 1), first + min(len(spans) - 1, i + 1)))
        index = BM25(chunk_texts)
        scores = index.scores(queries)
        top = index.top(scores, CANDIDATES)
        if size == 1000:
            orders = {"chunk1000_bm25": top[:, :TOP_K].tolist()}
        else:
            idf = {term: index.idf[i] for term, i in index.vocab.items()}
            reranked = [
                rerank(q, list(row), scores[i], chunk_texts, idf)[:TOP_K] for i, (q, row) in enumerate(zip(queries, top))
            ]
            orders = {"chunk500_rerank": reranked, "chunk500_rerank_expand": reranked}
        for name, order in orders.items():
            expand = name.endswith("expand")
            retrieved_spans = []
            for row in order:
                spans = []
                for i in row:
                    if expand:
                        lo, hi = neighbours[i]
                        spans.append({"doc_id": chunk_spans[i]["doc_id"], "start": chunk_spans[lo]["start"], "end": chunk_spans[hi]["end"]})
                    else:
                        spans.append(dict(chunk_spans[i]))
                retrieved_spans.append(spans)
            run = pd.DataFrame(
                {
                    "question_id": questions_df["question_id"].to_numpy(dtype=object),
                    "retrieved": [[chunk_ids[i] for i in row] for row in order],
                    "retrieved_spans": retrieved_spans,
                    "candidates": [[chunk_ids[i] for i in row] for row in top],
                    "candidate_spans": [[dict(chunk_spans[i]) for i in row] for row in top],
                }
            )
            run["boundary_cut"] = [boundary_cut(g, s) for g, s in zip(questions_df["gold_spans"], retrieved_spans)]
            run.attrs["raglab"] = {
                "run": {
                    "name": name,
                    "chunk_chars": size,
                    "retriever": "BM25 (k1=0.9, b=0.4)" + (" + rerank of top 20 (BM25 + best-sentence idf coverage)" if size == 500 else ""),
                    "context": f"top {TOP_K} chunks" + (" expanded by one neighbour on each side" if expand else ""),
                    "source": "SQuAD 2.0 dev (CC BY-SA 4.0), derived ids and offsets only",
                }
            }
            runs[name] = run
    return runs


def boundary_cut(gold_spans: list[dict], retrieved_spans: list[dict]) -> bool:
    """The gold span overlaps the retrieved chunks, but no single chunk contains all of it."""
    for gold in gold_spans:
        overlapping = [s for s in retrieved_spans if s["doc_id"] == gold["doc_id"] and s["start"] < gold["end"] and gold["start"] < s["end"]]
        if overlapping and not any(s["start"] <= gold["start"] and gold["end"] <= s["end"] for s in overlapping):
            return True
    return False


def build_readers(shared: Path, questions_df: pd.DataFrame, answers: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    readers = {}
    for name, filename in READERS.items():
        predictions = json.loads((shared / "squad2_dev_explorer" / "predictions" / filename).read_text())
        rows = []
        for qid in questions_df["question_id"]:
            prediction = predictions[qid]
            golds = [a for a in answers[qid] if normalize_answer(a)] or [""]
            em = max(float(normalize_answer(prediction) == normalize_answer(g)) for g in golds)
            f1 = max(f1_score(prediction, g) for g in golds)
            rows.append({"question_id": qid, "declined": prediction.strip() == "", "em": em, "f1": f1})
        frame = pd.DataFrame(rows)
        frame["question_id"] = frame["question_id"].astype(object)
        em, f1 = 100 * frame["em"].mean(), 100 * frame["f1"].mean()
        expected = EXPECTED_EM_F1[name]
        if abs(em - expected[0]) > 0.01 or abs(f1 - expected[1]) > 0.01:
            raise SystemExit(f"{name}: EM {em:.2f} F1 {f1:.2f} differ from the official script's {expected}")
        print(f"  reader {name:6s} EM {em:.2f} F1 {f1:.2f} (official script: {expected[0]} / {expected[1]})")
        frame.attrs["raglab"] = {"run": {"name": name, "source": f"SQuAD-explorer predictions {filename}", "scoring": "official SQuAD v2 EM/F1"}}
        readers[name] = frame
    return readers


def write(frame: pd.DataFrame, path: Path) -> None:
    sys.path.insert(0, str(REPO))
    from raglab.io import write_rows

    path.parent.mkdir(parents=True, exist_ok=True)
    write_rows(frame, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", choices=["questions", "runs", "readers"], action="append",
                        help="build only these parts (default: all)")
    args = parser.parse_args(argv)
    parts = set(args.only or ["questions", "runs", "readers"])
    if not (args.shared / "squad2_dev_explorer").exists():
        print(f"needs {args.shared / 'squad2_dev_explorer'}; pass --shared", file=sys.stderr)
        return 2
    articles, questions_df, answers, question_text = load_squad(args.shared)
    print(f"  {len(questions_df)} questions over {len(articles)} articles ({questions_df['answerable'].sum()} answerable)")
    if "questions" in parts:
        write(questions_df, args.out / "questions.parquet")
    if "runs" in parts:
        for name, run in build_runs(articles, questions_df, question_text).items():
            write(run, args.out / "runs" / f"{name}.parquet")
            print(f"  run {name}: boundary cuts {int(run['boundary_cut'].sum())}")
    if "readers" in parts:
        for name, frame in build_readers(args.shared, questions_df, answers).items():
            write(frame, args.out / "readers" / f"{name}.parquet")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
