"""A seeded simulator of chunk-boundary failures, with text the raglab developers wrote and known truth.

The mechanism of a cut answer, small enough to read in full:

1. :func:`boundary_corpus` writes a handbook of a fictional plant: each document mixes filler
   sentences with one-sentence **definitions** ("The Onyx relay is a brass housing that ...") and
   small **tables** ("Limits of the Fjord pump" and three ``setting | value`` rows). Each definition
   or table is the gold of one question (``gold_spans``: its character span, at most
   :data:`MAX_GOLD_CHARS` characters; ``reference``: its text). Every word comes from fixed word
   lists in this module; no third-party text.
2. :func:`simulate_run` "retrieves" with a known rule: rank 1 is the chunk holding the start of the
   gold span (of those, the one reaching furthest), ranks 2..k are seeded draws among the chunks
   that overlap no gold character. So when a chunk boundary cuts the gold, only its first part
   reaches the model: smaller chunks cut more gold spans.
3. :func:`simulate_answers` writes the answer from what the context holds of the gold: the whole
   gold text when all of it arrived; otherwise the whole words that arrived, then an invented
   sentence (words from a vocabulary the corpus never uses: an unsupported claim); a refusal when
   none arrived. Cut questions therefore score lower on faithfulness with
   :class:`raglab.judge.LexicalJudge`, and ``rows.rag.expand_neighbors(chunks, window=1)`` (chunks of
   at least :data:`MAX_GOLD_CHARS` characters) brings the rest of every gold span back.

The truth columns (``truth_cut``, ``truth_reached``, ``truth_padded``) are computed here, independently
of :mod:`raglab.boundaries`, so the tools can be checked against them.

Examples
--------
>>> from raglab import chunks, simulate
>>> corpus = simulate.boundary_corpus(n_docs=4, seed=0)
>>> table = chunks.fixed(corpus.docs, size=128)
>>> rows = simulate.simulate_run(corpus, table, k=5, seed=0)
>>> row = rows[rows["truth_cut"] == 1.0].iloc[0]        # a definition cut in half by a chunk boundary
>>> row["reference"]
'The Vesper damper is a bronze unit that steadies the outlet pipe at up to 314 degrees.'
>>> row["answer"], row["truth_reached"]
('The Vesper damper is a bronze unit. It also balances the bellows during annual audits.', 'partial')
>>> expanded = simulate.simulate_answers(rows.rag.expand_neighbors(table, window=1), corpus)
>>> bool((expanded["answer"] == expanded["reference"]).all())
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from raglab._validation import check_int

__all__ = ["MAX_GOLD_CHARS", "SimulatedCorpus", "boundary_corpus", "simulate_answers", "simulate_run"]

#: The longest gold span the corpus writes (characters): with chunks at least this long a gold span
#: overlaps at most two chunks, so a neighbour window of 1 restores it.
MAX_GOLD_CHARS = 120

# ---- word lists (written for raglab; the corpus uses nothing else) -------------------------------
_NAMES = ["Amber", "Basalt", "Cinder", "Delta", "Ember", "Fjord", "Garnet", "Harbor", "Indigo", "Juniper",
          "Kestrel", "Lumen", "Meadow", "Nimbus", "Onyx", "Pylon", "Quartz", "Rowan", "Sable", "Tundra",
          "Umber", "Vesper", "Willow", "Zephyr"]
_DEVICES = ["valve", "pump", "gauge", "filter", "relay", "sensor", "coupler", "damper", "manifold", "regulator",
            "actuator", "bearing", "boiler", "compressor", "condenser", "turbine"]
_MATERIALS = ["brass", "steel", "ceramic", "copper", "polymer", "bronze", "granite", "titanium"]
_KINDS = ["fitting", "housing", "assembly", "module", "cartridge", "unit"]
_VERBS = ["seals", "cools", "drains", "meters", "steadies", "guards", "heats", "vents"]
_OBJECTS = ["intake line", "return loop", "outlet pipe", "feed tank", "drain channel", "supply main"]
_UNITS = ["kPa", "litres per minute", "degrees", "volts", "hertz"]
_SETTINGS = [("pressure", "kPa"), ("flow", "L/min"), ("heat", "degrees"), ("load", "volts"), ("speed", "rpm")]
_TOPICS = ["Cooling circuit", "Feed system", "Drain network", "Power room", "Pressure loop", "Water works"]
_FILLERS = [
    "Crews inspect the {object} every {n} weeks.",
    "The {material} parts are stored in bay {n}.",
    "Operators log each reading in the shift book.",
    "A spare {kind} is kept beside the {object}.",
    "Night crews check the {object} before handover.",
    "Bay {n} holds the {material} spares for this section.",
    "Any leak on the {object} is reported at once.",
    "The {kind} labels are renewed every {n} months.",
]
# The invented claims: a vocabulary no document uses, so the LexicalJudge finds no support for them.
_PAD_VERBS = ["recalibrates", "lubricates", "insulates", "purges", "flushes", "balances"]
_PAD_OBJECTS = ["spindle", "gasket", "flywheel", "bellows", "impeller", "sprocket"]
_PAD_TIMES = ["winter shutdowns", "monsoon season", "annual audits", "quarterly overhauls", "solstice trials"]
_REFUSAL = "The context does not say."

_WORD = re.compile(r"\S+")


class SimulatedCorpus(NamedTuple):
    """What :func:`boundary_corpus` returns: ``docs`` (doc_id -> text) and ``questions`` (a row table)."""

    docs: dict[str, str]
    questions: pd.DataFrame


def _definition(rng: np.random.Generator, term: str) -> str:
    unit = _UNITS[rng.integers(len(_UNITS))]
    return (f"The {term} is a {_MATERIALS[rng.integers(len(_MATERIALS))]} {_KINDS[rng.integers(len(_KINDS))]} "
            f"that {_VERBS[rng.integers(len(_VERBS))]} the {_OBJECTS[rng.integers(len(_OBJECTS))]} "
            f"at up to {int(rng.integers(10, 990))} {unit}.")


def _table(rng: np.random.Generator, term: str) -> str:
    picks = rng.choice(len(_SETTINGS), size=3, replace=False)
    lines = [f"Limits of the {term}", "setting | value"]
    lines += [f"{_SETTINGS[i][0]} | {int(rng.integers(10, 990))} {_SETTINGS[i][1]}" for i in sorted(picks)]
    return "\n".join(lines)


def _filler(rng: np.random.Generator) -> str:
    template = _FILLERS[rng.integers(len(_FILLERS))]
    return template.format(object=_OBJECTS[rng.integers(len(_OBJECTS))], n=int(rng.integers(2, 40)),
                           material=_MATERIALS[rng.integers(len(_MATERIALS))], kind=_KINDS[rng.integers(len(_KINDS))])


def boundary_corpus(
    n_docs: int = 20,
    *,
    seed: int = 0,
    definitions_per_doc: int = 4,
    tables_per_doc: int = 1,
    fillers: tuple[int, int] = (2, 4),
) -> SimulatedCorpus:
    """A seeded handbook of definitions and small tables, and one question per definition or table.

    Each document opens with a title line, then holds ``definitions_per_doc`` definitions (one
    sentence each, inside prose paragraphs) and ``tables_per_doc`` tables (their own paragraph), in
    a seeded order, each preceded by ``fillers[0]`` to ``fillers[1]`` filler sentences. Every term
    ("Onyx relay") names one gold span in the whole corpus.

    Parameters
    ----------
    n_docs : int
        Number of documents (>= 1). At most 384 terms exist, so
        ``n_docs * (definitions_per_doc + tables_per_doc) <= 384``.
    seed : int
        Seed of every choice; the same seed gives the same corpus.
    definitions_per_doc, tables_per_doc : int
        Gold items per document (>= 0 each, at least one in total).
    fillers : (int, int)
        Least and most filler sentences before each gold item.

    Returns
    -------
    SimulatedCorpus
        ``docs``: doc_id (``"doc000"``, ...) -> text. ``questions``: ``question_id``, ``doc_id``,
        ``kind`` (``"definition"`` or ``"table"``), ``term``, ``question``, ``reference`` (the
        gold text), ``gold_spans`` (``[{"doc_id", "start", "end"}]``; ``reference`` is exactly
        that slice of the document).

    Examples
    --------
    >>> corpus = boundary_corpus(n_docs=2, seed=0)
    >>> q = corpus.questions.iloc[0]
    >>> q["question"], q["reference"]
    ('What is the Tundra condenser?', 'The Tundra condenser is a bronze housing that steadies the drain channel at up to 386 degrees.')
    >>> span = q["gold_spans"][0]
    >>> corpus.docs[span["doc_id"]][span["start"]:span["end"]] == q["reference"]
    True
    """
    n_docs = check_int(n_docs, "n_docs", 1)
    definitions_per_doc = check_int(definitions_per_doc, "definitions_per_doc", 0)
    tables_per_doc = check_int(tables_per_doc, "tables_per_doc", 0)
    per_doc = definitions_per_doc + tables_per_doc
    if per_doc < 1:
        raise ValueError("boundary_corpus needs at least one gold item per document "
                         "(definitions_per_doc + tables_per_doc >= 1)")
    capacity = len(_NAMES) * len(_DEVICES)
    if n_docs * per_doc > capacity:
        raise ValueError(f"boundary_corpus has {capacity} distinct terms, but n_docs * (definitions_per_doc + "
                         f"tables_per_doc) = {n_docs * per_doc}; ask for fewer documents or items")
    low, high = (check_int(f, "fillers", 0) for f in fillers)
    if high < low:
        raise ValueError(f"`fillers` must be (least, most) with least <= most, got {fillers!r}")
    rng = np.random.default_rng(seed)
    terms = [f"{_NAMES[i // len(_DEVICES)]} {_DEVICES[i % len(_DEVICES)]}"
             for i in rng.choice(capacity, size=n_docs * per_doc, replace=False)]
    docs: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    for d in range(n_docs):
        doc_id = f"doc{d:03d}"
        kinds = ["definition"] * definitions_per_doc + ["table"] * tables_per_doc
        kinds = [kinds[i] for i in rng.permutation(per_doc)]
        text = f"Section {d + 1}: {_TOPICS[rng.integers(len(_TOPICS))]}\n\n"
        paragraph_open = False
        for kind in kinds:
            term = terms.pop(0)
            prose = " ".join(_filler(rng) for _ in range(int(rng.integers(low, high + 1))))
            if prose:
                text += (" " if paragraph_open else "") + prose
                paragraph_open = True
            if kind == "definition":
                text += " " if paragraph_open else ""
                gold = _definition(rng, term)
                question = f"What is the {term}?"
                paragraph_open = True
            else:
                text += "\n\n" if paragraph_open else ""
                gold = _table(rng, term)
                question = f"What are the limits of the {term}?"
                paragraph_open = False
            start = len(text)
            text += gold
            if kind == "table":
                text += "\n\n"
            records.append({"question_id": f"q{len(records):04d}", "doc_id": doc_id, "kind": kind, "term": term,
                            "question": question, "reference": gold,
                            "gold_spans": [{"doc_id": doc_id, "start": start, "end": start + len(gold)}]})
        docs[doc_id] = text.rstrip() + "\n"
    questions = pd.DataFrame.from_records(records)
    questions.attrs["raglab"] = {"simulate": {"corpus": "boundary_corpus", "n_docs": n_docs, "seed": seed,
                                              "definitions_per_doc": definitions_per_doc,
                                              "tables_per_doc": tables_per_doc, "fillers": [low, high]}}
    return SimulatedCorpus(docs=docs, questions=questions)


def _corpus_parts(corpus: Any) -> tuple[Mapping[str, str], pd.DataFrame]:
    if isinstance(corpus, tuple) and len(corpus) == 2:
        docs, questions = corpus
        if isinstance(docs, Mapping) and isinstance(questions, pd.DataFrame):
            return docs, questions
    raise TypeError("`corpus` must be what boundary_corpus(...) returns: (docs, questions)")


def _spans(cell: Any) -> list[tuple[Any, int, int]]:
    return [(s["doc_id"], int(s["start"]), int(s["end"])) for s in cell]


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def simulate_run(corpus: SimulatedCorpus, chunks: pd.DataFrame, k: int = 5, *, seed: int = 0) -> pd.DataFrame:
    """A run over the corpus with a known retrieval rule, answered by :func:`simulate_answers`.

    Rank 1 is the chunk holding the first character of the question's gold span (of several, the one
    whose end reaches furthest; then the first in the table); ranks 2..``k`` are drawn (seeded,
    without replacement) from the chunks that overlap no gold character of the question. A gold span
    that no single chunk contains is **cut** (``truth_cut``), and then only its first part reaches
    the model.

    Parameters
    ----------
    corpus : SimulatedCorpus
        From :func:`boundary_corpus`.
    chunks : DataFrame
        A chunk table over ``corpus.docs`` (:mod:`raglab.chunks`).
    k : int
        Chunks per question (>= 1).
    seed : int
        Seed of the distractor draws and of the invented claims.

    Returns
    -------
    DataFrame
        The questions' columns, then ``retrieved`` (chunk ids in rank order), ``retrieved_spans``,
        ``truth_cut`` (1.0 when no single chunk holds the gold span, else 0.0) and
        :func:`simulate_answers`' ``context``, ``answer``, ``truth_reached``, ``truth_padded``.

    Examples
    --------
    >>> from raglab import chunks
    >>> corpus = boundary_corpus(n_docs=4, seed=0)
    >>> run = simulate_run(corpus, chunks.fixed(corpus.docs, size=512), k=3)
    >>> run.loc[0, "retrieved"], float(run.loc[0, "truth_cut"])
    (['doc000#0', 'doc003#0', 'doc002#2'], 0.0)
    >>> run.loc[0, "answer"] == run.loc[0, "reference"]
    True
    """
    docs, questions = _corpus_parts(corpus)
    k = check_int(k, "k", 1)
    if not isinstance(chunks, pd.DataFrame) or not {"chunk_id", "doc_id", "start", "end"} <= set(chunks.columns):
        raise TypeError("`chunks` must be a chunk table (chunk_id, doc_id, start, end), e.g. "
                        "raglab.chunks.fixed(corpus.docs, size=256)")
    rng = np.random.default_rng(seed)
    ids = chunks["chunk_id"].to_numpy(dtype=object)
    c_doc = chunks["doc_id"].to_numpy(dtype=object)
    c_start = chunks["start"].to_numpy(dtype=np.int64)
    c_end = chunks["end"].to_numpy(dtype=np.int64)
    retrieved: list[list[Any]] = []
    spans_out: list[list[dict[str, Any]]] = []
    cut: list[float] = []
    for pos, cell in enumerate(questions["gold_spans"].array):
        gold = _spans(cell)
        overlaps = np.zeros(len(ids), dtype=bool)
        inside_any = True
        for d, gs, ge in gold:
            same = c_doc == d
            overlaps |= same & (c_start < ge) & (c_end > gs)
            inside_any &= bool((same & (c_start <= gs) & (c_end >= ge)).any())
        cut.append(0.0 if inside_any else 1.0)
        ranked: list[int] = []
        if gold:
            d, gs, _ = gold[0]
            holders = np.flatnonzero((c_doc == d) & (c_start <= gs) & (c_end > gs))
            if not len(holders):
                raise ValueError(f"simulate_run: no chunk holds the start of question "
                                 f"{questions['question_id'].iloc[pos]!r}'s gold span; chunk the corpus's docs")
            ranked.append(int(holders[np.argmax(c_end[holders])]))
        pool = np.flatnonzero(~overlaps)
        take = min(k - len(ranked), len(pool))
        ranked += [int(i) for i in rng.choice(pool, size=take, replace=False)] if take > 0 else []
        retrieved.append([ids[i] for i in ranked])
        spans_out.append([{"doc_id": c_doc[i], "start": int(c_start[i]), "end": int(c_end[i])} for i in ranked])
    rows = questions.copy()
    rows["retrieved"] = pd.Series(retrieved, index=rows.index, dtype=object)
    rows["retrieved_spans"] = pd.Series(spans_out, index=rows.index, dtype=object)
    rows["truth_cut"] = np.array(cut, dtype=float)
    rows = simulate_answers(rows, corpus, seed=seed)
    rows.attrs["raglab"] = {"simulate": {**questions.attrs.get("raglab", {}).get("simulate", {}), "k": k,
                                         "run_seed": seed, "n_chunks": int(len(chunks)),
                                         "rule": "rank 1: the chunk holding the gold start; then seeded "
                                                 "draws among chunks overlapping no gold"}}
    return rows


def _passages(docs: Mapping[str, str], spans: list[tuple[Any, int, int]]) -> list[str]:
    """The context: overlapping or touching spans of a document stitched into one passage, in rank order."""
    keyed: list[tuple[int, str]] = []
    for d in dict.fromkeys(sd for sd, _, _ in spans):
        mine = [(rank, s, e) for rank, (sd, s, e) in enumerate(spans) if sd == d]
        for s, e in _merge([(s, e) for _, s, e in mine]):
            keyed.append((min(rank for rank, ms, me in mine if s <= ms and me <= e), docs[d][s:e]))
    return [text for _, text in sorted(keyed, key=lambda item: item[0])]


def _whole_words(text: str, offset: int, pieces: list[tuple[int, int]]) -> list[str]:
    """Per piece, the text of ``text`` (starting at ``offset``) from its first to its last whole word inside."""
    out = []
    for piece_start, piece_end in pieces:
        words = [m.span() for m in _WORD.finditer(text)
                 if piece_start <= offset + m.start() and offset + m.end() <= piece_end]
        if words:
            out.append(text[words[0][0]:words[-1][1]])
    return out


def simulate_answers(rows: pd.DataFrame, corpus: SimulatedCorpus, *, seed: int = 0) -> pd.DataFrame:
    """Write ``context`` and the simulated model's ``answer`` from the spans that reached it.

    The context is a list of passages: the text of the ``retrieved_spans``, with spans of one document
    that overlap or touch (a chunk and its neighbours) stitched into one passage, ordered by their best
    rank. The answer copies what the context holds of the gold (``gold_spans`` of the row):

    - all of it: the gold text (``reference``) verbatim;
    - part of it: the whole words that arrived, as a sentence, then an invented sentence about the
      term's upkeep whose words no document uses (``truth_padded``): the unsupported claim of a
      model completing a definition or table it saw only half of;
    - none of it: a refusal ("The context does not say.").

    Use it to re-answer rows after ``rows.rag.expand_neighbors(chunks)``.

    Parameters
    ----------
    rows : DataFrame
        ``gold_spans`` and ``retrieved_spans`` (spans in ``corpus.docs``).
    corpus : SimulatedCorpus
        From :func:`boundary_corpus`.
    seed : int
        Seed of the invented claims.

    Returns
    -------
    DataFrame
        A copy with ``context`` (list of str), ``answer``, ``truth_reached`` (``"complete"``,
        ``"partial"`` or ``"missed"``: all, some or none of the gold characters in the context) and
        ``truth_padded`` (bool: the answer holds an invented claim).

    Examples
    --------
    >>> import pandas as pd
    >>> corpus = boundary_corpus(n_docs=1, seed=0, tables_per_doc=0)
    >>> gold = corpus.questions.loc[0, "gold_spans"]
    >>> half = [{**gold[0], "end": gold[0]["start"] + 40}]
    >>> rows = pd.DataFrame({"gold_spans": [gold, gold], "retrieved_spans": [gold, half]})
    >>> out = simulate_answers(rows, corpus)
    >>> out["truth_reached"].tolist(), out["truth_padded"].tolist()
    (['complete', 'partial'], [False, True])
    >>> out.loc[1, "answer"]
    'The Garnet damper is a bronze unit that. It also lubricates the gasket during winter shutdowns.'
    """
    docs, _ = _corpus_parts(corpus)
    if not isinstance(rows, pd.DataFrame) or not {"gold_spans", "retrieved_spans"} <= set(rows.columns):
        raise TypeError("simulate_answers needs a DataFrame with columns 'gold_spans' and 'retrieved_spans'")
    rng = np.random.default_rng(seed)
    contexts: list[list[str]] = []
    answers: list[str] = []
    reached: list[str] = []
    padded: list[bool] = []
    for gold_cell, spans_cell in zip(rows["gold_spans"].array, rows["retrieved_spans"].array):
        spans = _spans(spans_cell)
        contexts.append(_passages(docs, spans))
        pad = (f"It also {_PAD_VERBS[rng.integers(len(_PAD_VERBS))]} the "
               f"{_PAD_OBJECTS[rng.integers(len(_PAD_OBJECTS))]} during {_PAD_TIMES[rng.integers(len(_PAD_TIMES))]}.")
        parts: list[str] = []
        total = covered = 0
        for d, gs, ge in _spans(gold_cell):
            pieces = [(max(s, gs), min(e, ge)) for sd, s, e in spans if sd == d and s < ge and e > gs]
            pieces = _merge(pieces)
            total += ge - gs
            covered += sum(e - s for s, e in pieces)
            if ge - gs and sum(e - s for s, e in pieces) == ge - gs:
                parts.append(docs[d][gs:ge])
            else:
                parts += _whole_words(docs[d][gs:ge], gs, pieces)
        status = "complete" if total and covered == total else "partial" if covered else "missed"
        reached.append(status)
        if status == "complete":
            answers.append(" ".join(parts))
            padded.append(False)
        elif status == "missed":
            answers.append(_REFUSAL)
            padded.append(False)
        else:
            sentences = [p if p.endswith((".", "!", "?")) else p + "." for p in parts]
            answers.append(" ".join([*sentences, pad]))
            padded.append(True)
    out = rows.copy()
    out["context"] = pd.Series(contexts, index=out.index, dtype=object)
    out["answer"] = pd.Series(answers, index=out.index, dtype=object)
    out["truth_reached"] = pd.Series(reached, index=out.index, dtype=object)
    out["truth_padded"] = np.array(padded, dtype=bool)
    return out
