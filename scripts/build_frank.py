"""Build data/frank/ from the FRANK benchmark files in ../shared/data/frank.

Deterministic: the same source files give byte-identical outputs. Only derived figures are written
(article ids, system names, the people's factuality scores and error-type shares, the automatic
metrics' scores); no article, reference or summary text (FRANK's ``benchmark_data.json`` is not used).

    python scripts/build_frank.py [--source DIR] [--out DIR]

Outputs (CSV, UTF-8, "\\n" line endings, floats written with Python's shortest round-trip repr, so
each value equals the source JSON's number; an empty cell where the source has ``null``):

* ``summaries.csv``: one row per summary (article x system), in the source's order --
  question_id (``<article_id>:<system>``), article_id (FRANK's ``hash``: a CNN/DM hash or a BBC
  XSum id), system (FRANK's ``model_name``), dataset (``cnndm`` or ``bbc``), split (``valid`` or
  ``test``), human_factuality (FRANK's ``Factuality``: the share of the summary's sentences the
  annotators found free of factual errors), eleven ``human_free_<type>`` columns (the share of
  sentences free of that error type or group; 1 = none), and the automatic metrics (see
  ``METRICS``).
* ``manifest.json``: source, commit, licence, the SHA-256 of each source file and each output, and counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared writer
from _csv_rows import csv_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HUMAN_FILE = "human_annotations.json"
METRICS_FILE = "baseline_factuality_metrics_outputs.json"
SPLIT_FILES = {"test": "test_split.txt", "valid": "validation_split.txt"}
SOURCE_FILES = (HUMAN_FILE, METRICS_FILE, *SPLIT_FILES.values(), "selected_documents.txt", "LICENSE")
DEFAULT_SOURCE = Path(os.environ.get("RAGLAB_SHARED", REPO.parent / "shared")) / "data" / "frank"
DEFAULT_OUT = REPO / "data" / "frank"

# FRANK's error typology (Pagnoni et al., 2021, section 2): source field -> column. 1 = no sentence has it.
ERRORS = {
    "Semantic_Frame_Errors": "human_free_semantic_frame",  # group: RelE, EntE, CircE
    "Discourse_Errors": "human_free_discourse",  # group: CorefE, LinkE
    "Content_Verifiability_Errors": "human_free_content_verifiability",  # group: OutE, GramE
    "RelE": "human_free_relation",
    "EntE": "human_free_entity",
    "CircE": "human_free_circumstance",
    "CorefE": "human_free_coreference",
    "LinkE": "human_free_discourse_link",
    "OutE": "human_free_out_of_article",
    "GramE": "human_free_grammar",
    "Other": "human_free_other",
}
# Automatic metrics: source field -> column. The first five compare the summary with the article
# (factuality metrics); the rest compare it with the reference summary.
METRICS = {
    "FactCC": "factcc",
    "QAGS": "qags",
    "FEQA": "feqa",
    "Dep Entail": "dae",
    "BertScore P Art": "bertscore_p_article",
    "BertScore R Art": "bertscore_r_article",
    "BertScore F1 Art": "bertscore_f1_article",
    "BertScore P": "bertscore_p",
    "BertScore R": "bertscore_r",
    "BertScore F1": "bertscore_f1",
    "Rouge 1": "rouge_1",
    "Rouge 2": "rouge_2",
    "Rouge L": "rouge_l",
    "Meteor": "meteor",
    "Bleu": "bleu",
}
COLUMNS = ["question_id", "article_id", "system", "dataset", "split", "human_factuality",
           *ERRORS.values(), *METRICS.values()]


def _number(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what}: expected a number or null, got {value!r}")
    return float(value)


def _ids(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build(source: Path) -> dict[str, bytes]:
    """Return {file name: bytes} for data/frank from the source folder."""
    human = json.loads((source / HUMAN_FILE).read_bytes())
    metrics = json.loads((source / METRICS_FILE).read_bytes())
    by_key = {}
    for m in metrics:
        key = (str(m["hash"]), str(m["model_name"]))
        if key in by_key:
            raise ValueError(f"{METRICS_FILE}: duplicate summary {key}")
        by_key[key] = m
    split_of = {h: split for split, name in SPLIT_FILES.items() for h in _ids(source / name)}
    selected = set(_ids(source / "selected_documents.txt"))
    rows, seen = [], set()
    for h in human:
        article, system = str(h["hash"]), str(h["model_name"])
        key = (article, system)
        if key in seen:
            raise ValueError(f"{HUMAN_FILE}: duplicate summary {key}")
        seen.add(key)
        m = by_key.get(key)
        if m is None:
            raise ValueError(f"{METRICS_FILE} has no scores for {key}")
        for field in ("dataset", "split"):
            if m[field] != h[field]:
                raise ValueError(f"{key}: {field} {h[field]!r} in {HUMAN_FILE} but {m[field]!r} in {METRICS_FILE}")
        if split_of.get(article) != h["split"]:
            raise ValueError(f"{key}: split {h['split']!r} but the split files say {split_of.get(article)!r}")
        if article not in selected:
            raise ValueError(f"{key}: article not in selected_documents.txt")
        factuality = _number(h["Factuality"], f"{key} Factuality")
        if factuality is None or not 0.0 <= factuality <= 1.0:
            raise ValueError(f"{key}: Factuality {h['Factuality']!r} outside [0, 1]")
        row = {"question_id": f"{article}:{system}", "article_id": article, "system": system,
               "dataset": h["dataset"], "split": h["split"], "human_factuality": factuality}
        for field, column in ERRORS.items():
            row[column] = _number(h[field], f"{key} {field}")
        for field, column in METRICS.items():
            row[column] = _number(m[field], f"{key} {field}")
        rows.append(row)
    if len(seen) != len(by_key):
        raise ValueError(f"{METRICS_FILE} scores {len(by_key) - len(seen)} summaries {HUMAN_FILE} does not rate")
    files = {"summaries.csv": csv_bytes(COLUMNS, rows)}
    manifest = {
        "source": "https://github.com/artidoro/frank",
        "commit": "80a88fb12cc0bfc17ff6ee2c5ebb0c4f4dd8a5f4",
        "paths": [f"data/{name}" if name != "LICENSE" else name for name in SOURCE_FILES],
        "licence": "MIT",
        "citation": "Pagnoni, Balachandran and Tsvetkov, Understanding Factuality in Abstractive Summarization "
                    "with FRANK, NAACL 2021",
        "source_sha256": {name: hashlib.sha256((source / name).read_bytes()).hexdigest() for name in SOURCE_FILES},
        "counts": {
            "summaries": len(rows),
            "articles": len({r["article_id"] for r in rows}),
            "systems": dict(sorted(Counter(r["system"] for r in rows).items())),
            "datasets": dict(sorted(Counter(r["dataset"] for r in rows).items())),
            "splits": dict(sorted(Counter(r["split"] for r in rows).items())),
            "human_factuality_1": sum(r["human_factuality"] == 1.0 for r in rows),
            "missing": {c: sum(r[c] is None for r in rows) for c in METRICS.values() if any(r[c] is None for r in rows)},
        },
        "files": {name: hashlib.sha256(blob).hexdigest() for name, blob in files.items()},
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help=f"default {DEFAULT_SOURCE}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    args = parser.parse_args(argv)
    missing = [name for name in SOURCE_FILES if not (args.source / name).exists()]
    if missing:
        parser.error(f"{missing} not found in {args.source}; pass --source or set RAGLAB_SHARED")
    files = build(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, blob in files.items():
        (args.out / name).write_bytes(blob)
        print(f"wrote {args.out / name} ({len(blob):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
