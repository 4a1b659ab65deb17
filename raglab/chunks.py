"""Chunk tables: which character ranges of each document are chunks, and which chunks are adjacent.

A **chunk table** is a DataFrame with one row per chunk:

==================  ==========  ===========================================================================
column              type        meaning
==================  ==========  ===========================================================================
``chunk_id``        str         the id that ``retrieved`` holds (``f"{doc_id}#{position}"`` when made here)
``doc_id``          str or int  the document
``start``, ``end``  int         character offsets, end exclusive (Python slicing)
``position``        int         0, 1, ... in document order (sorted by ``start``, then ``end``)
==================  ==========  ===========================================================================

Offsets are always characters, whatever unit the window size is counted in, so a chunk table
scores span gold (:mod:`raglab.metrics.spans`) and tells :mod:`raglab.boundaries` which chunks are
neighbours. :func:`fixed` makes fixed-size windows, :func:`sentences` sentence-aligned windows,
:func:`from_spans` adopts a table (or list of spans) made elsewhere.

Examples
--------
>>> from raglab import chunks
>>> chunks.fixed({"a": 10}, size=4, overlap=1).values.tolist()
[['a#0', 'a', 0, 4, 0], ['a#1', 'a', 3, 7, 1], ['a#2', 'a', 6, 10, 2]]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from raglab._validation import check_int, check_option, is_missing

__all__ = ["COLUMNS", "fixed", "from_spans", "sentences", "token_approximation"]

COLUMNS = ["chunk_id", "doc_id", "start", "end", "position"]

#: How ``unit="tokens"`` counts tokens when tiktoken is not installed: each run of word characters
#: and each other non-space character is one token (an approximation of a BPE tokenizer, which
#: splits long or rare words further; real token counts are usually a little higher).
token_approximation = r"\w+|[^\w\s]"

_WORD = re.compile(r"\S+")
_TOKEN = re.compile(token_approximation)
# A sentence ends after . ! or ? (with closing quotes/brackets) and the whitespace that follows, or
# after a line break; the whitespace belongs to the sentence before it, so sentences tile the text.
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+|\n\s*")


def _doc_items(docs: Any, *, lengths_ok: bool, name: str = "docs") -> list[tuple[Any, Any]]:
    """``docs`` as ``[(doc_id, text or length)]``, checked."""
    if isinstance(docs, (pd.Series, Mapping)):
        items = list(docs.items())
    else:
        raise TypeError(
            f"`{name}` must be a mapping or a pandas Series doc_id -> text, got {type(docs).__name__}; "
            "e.g. dict(zip(df['doc_id'], df['text'])) or df.set_index('doc_id')['text']"
        )
    seen: set[Any] = set()
    for doc_id, value in items:
        if is_missing(doc_id):
            raise ValueError(f"`{name}` has a missing doc_id ({doc_id!r}); every document needs an id (chunk ids are "
                             "made from it)")
        if doc_id in seen:
            raise ValueError(f"`{name}` repeats doc_id {doc_id!r}; give each document once")
        seen.add(doc_id)
        if isinstance(value, str):
            continue
        if isinstance(value, (Integral, np.integer)) and not isinstance(value, (bool, np.bool_)):
            if not lengths_ok:
                raise TypeError(
                    f"`{name}`[{doc_id!r}] is a length ({value!r}); lengths only work with unit='chars', "
                    "pass the text to count words, tokens or sentences"
                )
            if value < 0:
                raise ValueError(f"`{name}`[{doc_id!r}] is a negative length ({value!r})")
            continue
        raise TypeError(f"`{name}`[{doc_id!r}] must be the document's text (str) or, for unit='chars', its length "
                        f"(int); got {type(value).__name__} {value!r}")
    _check_id_text([doc_id for doc_id, _ in items], f"`{name}` doc_id")
    return items


def _check_id_text(doc_ids: Sequence[Any] | np.ndarray, where: str) -> None:
    """Refuse distinct doc ids that print alike (``1`` and ``"1"``): chunk ids ``f"{doc_id}#{position}"`` would collide."""
    distinct = pd.unique(pd.Series(list(doc_ids), dtype=object))
    texts = pd.Series(distinct, dtype=object).astype(str)
    clash = texts.duplicated(keep=False).to_numpy()
    if clash.any():
        first = texts[clash].iloc[0]
        same = [d for d, t in zip(distinct[clash], texts[clash]) if t == first]
        raise ValueError(
            f"{where} holds {' and '.join(repr(d) for d in same)}: different ids that print alike, so their chunk ids "
            f"('{first}#0', ...) would be the same. Use one type of id, e.g. all text: str(doc_id)."
        )


def _table(doc_ids: Sequence[Any] | np.ndarray, starts: np.ndarray, ends: np.ndarray, positions: np.ndarray) -> pd.DataFrame:
    """The chunk table from per-chunk arrays; ids ``f"{doc_id}#{position}"`` built column-wise by pandas."""
    docs = np.empty(len(doc_ids), dtype=object)
    docs[:] = list(doc_ids) if not isinstance(doc_ids, np.ndarray) else doc_ids
    doc_col = pd.Series(docs, dtype=object if not len(docs) else None)
    positions = np.asarray(positions, dtype=np.int64)
    ids = doc_col.astype(str) + "#" + pd.Series(positions).astype(str)
    return pd.DataFrame(
        {
            "chunk_id": ids.astype(object) if not len(docs) else ids,
            "doc_id": doc_col,
            "start": np.asarray(starts, dtype=np.int64),
            "end": np.asarray(ends, dtype=np.int64),
            "position": positions,
        }
    )


def _windows(n_units: np.ndarray, size: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Windows over ``n_units[i]`` units of each document: (document index, first unit, last unit + 1).

    A document of n > 0 units gets ``1 + ceil(max(n - size, 0) / step)`` windows starting at 0, step,
    2 * step, ...; the last one is clipped at n. A document of 0 units gets none.
    """
    n_units = np.asarray(n_units, dtype=np.int64)
    counts = np.where(n_units > 0, 1 + -(-np.maximum(n_units - size, 0) // step), 0)
    doc = np.repeat(np.arange(len(n_units)), counts)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(counts) else np.zeros(0, np.int64)
    position = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(offsets, counts)
    first = position * step
    last = np.minimum(first + size, n_units[doc])
    return doc, first, last


def _snapped(doc_id: Any, text: str, size: int, overlap: int, snap: str, fraction: float) -> pd.DataFrame:
    """Windows of at most ``size`` characters that end just after ``snap`` where one is near their end.

    Each start depends on the previous end, so this walks the document window by window.
    """
    starts, ends, start, n = [], [], 0, len(text)
    reach = int(size * (1 - fraction))
    while start < n:
        end = min(n, start + size)
        if end < n:
            cut = text.rfind(snap, start + reach, end - len(snap) + 1)
            if cut > start:
                end = cut + len(snap)
        starts.append(start)
        ends.append(end)
        if end >= n:
            break
        start = max(end - overlap, start + 1)
    positions = np.arange(len(starts))
    return _table([doc_id] * len(starts), np.array(starts, np.int64), np.array(ends, np.int64), positions)


def _unit_spans(text: str, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Character start and end of each word or token of ``text``."""
    if unit == "tokens":
        encoder = _tiktoken_encoder()
        if encoder is not None:  # pragma: no cover - tiktoken is optional and not a test dependency
            tokens = encoder.encode(text)
            _, offsets = encoder.decode_with_offsets(tokens)
            starts = np.asarray(offsets, dtype=np.int64)
            ends = np.append(starts[1:], len(text)) if len(starts) else starts
            return starts, ends
        pattern = _TOKEN
    else:
        pattern = _WORD
    spans = np.array([m.span() for m in pattern.finditer(text)], dtype=np.int64).reshape(-1, 2)
    return spans[:, 0], spans[:, 1]


def _tiktoken_encoder() -> Any:
    try:
        import tiktoken
    except ImportError:
        return None
    return tiktoken.get_encoding("cl100k_base")  # pragma: no cover


def fixed(
    docs: Mapping[Any, str | int] | pd.Series,
    size: int,
    overlap: int = 0,
    unit: str = "chars",
    *,
    snap: str | None = None,
    snap_fraction: float = 0.2,
) -> pd.DataFrame:
    """Fixed-size windows over each document: a chunk table.

    Windows start every ``size - overlap`` units and hold at most ``size`` units; the last window
    of a document ends at its end, so every character is in some chunk. With ``unit="words"`` or
    ``"tokens"`` a window runs from its first unit to the first unit of the next window (the
    whitespace after a window's last unit belongs to it; the first window starts at character 0 and
    the last ends at the document's end), so windows still tile the text. Offsets are characters.

    Parameters
    ----------
    docs : mapping or Series
        doc_id -> text; with ``unit="chars"`` a length in characters (int) may replace the text.
    size : int
        Most units in a window (>= 1).
    overlap : int
        Units shared by consecutive windows, ``0 <= overlap < size``.
    unit : {"chars", "words", "tokens"}
        ``"words"``: runs of non-space characters. ``"tokens"``: tiktoken's ``cl100k_base`` when
        tiktoken is installed; otherwise the approximation :data:`token_approximation` (a run of
        word characters, or one punctuation character, is a token), recorded in
        ``attrs["raglab"]["chunks"]["tokenizer"]``.
    snap : str, optional
        With ``unit="chars"`` and text documents: end each window (but a document's last) just
        after the last occurrence of ``snap`` (e.g. ``" "``) within its final ``snap_fraction`` of
        ``size`` characters, so words are not cut; the next window starts there (minus
        ``overlap``). Without such an occurrence the window is cut at ``size``. Windows still
        tile the text and never exceed ``size``.
    snap_fraction : float
        The share of a window, at its end, searched for ``snap`` (0 < snap_fraction <= 1).

    Returns
    -------
    DataFrame
        ``chunk_id`` (``f"{doc_id}#{position}"``), ``doc_id``, ``start``, ``end``, ``position``;
        documents in the order given. An empty document (or one with no words/tokens) gets no
        chunk if empty and one whole-document chunk otherwise.

    Examples
    --------
    >>> from raglab.chunks import fixed
    >>> fixed({"a": "abcdefghij", "b": 3}, size=4)[["chunk_id", "start", "end"]].values.tolist()
    [['a#0', 0, 4], ['a#1', 4, 8], ['a#2', 8, 10], ['b#0', 0, 3]]
    >>> fixed({"d": "One two three four five."}, size=2, unit="words")[["start", "end"]].values.tolist()
    [[0, 8], [8, 19], [19, 24]]
    >>> fixed({"d": "aaa bbb ccc ddd"}, size=6, snap=" ", snap_fraction=0.5)[["start", "end"]].values.tolist()
    [[0, 4], [4, 8], [8, 12], [12, 15]]
    """
    check_option("unit", unit, ["chars", "words", "tokens"])
    size = check_int(size, "size", 1)
    overlap = check_int(overlap, "overlap", 0)
    if overlap >= size:
        raise ValueError(f"`overlap` must be smaller than `size` (0 <= overlap < size), got overlap={overlap}, "
                         f"size={size}")
    items = _doc_items(docs, lengths_ok=unit == "chars")
    doc_ids = [doc_id for doc_id, _ in items]
    step = size - overlap
    record: dict[str, Any] = {"method": "fixed", "size": size, "overlap": overlap, "unit": unit}
    if snap is not None:
        if unit != "chars" or not isinstance(snap, str) or not snap:
            raise ValueError(f"`snap` needs unit='chars' and a non-empty string such as ' ', got snap={snap!r}, "
                             f"unit={unit!r}")
        if not 0 < snap_fraction <= 1:
            raise ValueError(f"`snap_fraction` must be in (0, 1], got {snap_fraction!r}")
        bare = [doc_id for doc_id, v in items if not isinstance(v, str)]
        if bare:
            raise TypeError(f"`snap` needs each document's text; {bare[:5]} give only a length")
        record.update({"snap": snap, "snap_fraction": snap_fraction})
        parts = [_snapped(doc_id, text, size, overlap, snap, snap_fraction) for doc_id, text in items]
        table = pd.concat(parts, ignore_index=True) if parts else _table([], *(np.zeros(0, np.int64),) * 3)
    elif unit == "chars":
        lengths = np.fromiter((v if not isinstance(v, str) else len(v) for _, v in items), dtype=np.int64,
                              count=len(items))
        doc, first, last = _windows(lengths, size, step)
        ids = np.empty(len(doc_ids), dtype=object)
        ids[:] = doc_ids
        table = _table(ids[doc], first, last, first // step)
    else:
        if unit == "tokens":
            record["tokenizer"] = "tiktoken cl100k_base" if _tiktoken_encoder() is not None else (
                f"approximation: regex {token_approximation!r} (tiktoken not installed)")
        parts = []
        for doc_id, text in items:
            length = len(text)
            starts, ends = _unit_spans(text, unit)
            if len(starts) == 0:
                if length:
                    parts.append(_table([doc_id], np.array([0]), np.array([length]), np.array([0])))
                continue
            _, first, last = _windows(np.array([len(starts)]), size, step)
            c_start = starts[first]
            c_start[0] = 0
            # A window ends where the unit after its last one starts (so the whitespace after its last
            # unit belongs to it); the last window ends at the document's end.
            c_end = np.append(starts, length)[last]
            c_end[-1] = length
            parts.append(_table([doc_id] * len(first), c_start, c_end, np.arange(len(first))))
        table = pd.concat(parts, ignore_index=True) if parts else _table([], *(np.zeros(0, np.int64),) * 3)
    table.attrs["raglab"] = {"chunks": record}
    return table


def sentences(docs: Mapping[Any, str] | pd.Series, max_chars: int = 1000) -> pd.DataFrame:
    """Sentence-aligned windows: consecutive whole sentences packed up to ``max_chars`` characters.

    A sentence ends after ``.``, ``!`` or ``?`` (and any closing quote or bracket) followed by
    whitespace, or at a line break; the whitespace after it belongs to it, so sentences tile the
    text. Sentences are packed greedily into windows of at most ``max_chars`` characters; a sentence
    longer than ``max_chars`` is split every ``max_chars`` characters (its pieces are windows of
    their own). Every character is in exactly one chunk.

    Parameters
    ----------
    docs : mapping or Series
        doc_id -> text.
    max_chars : int
        Most characters in a window (>= 1).

    Returns
    -------
    DataFrame
        The chunk table (see :mod:`raglab.chunks`).

    Examples
    --------
    >>> from raglab.chunks import sentences
    >>> text = "Cats purr. Dogs bark loudly! Fish swim."
    >>> t = sentences({"d": text}, max_chars=20)
    >>> [text[s:e] for s, e in zip(t["start"], t["end"])]
    ['Cats purr. ', 'Dogs bark loudly! ', 'Fish swim.']
    >>> [text[s:e] for s, e in zip(*sentences({"d": text}, max_chars=30)[["start", "end"]].T.values)]
    ['Cats purr. Dogs bark loudly! ', 'Fish swim.']
    """
    max_chars = check_int(max_chars, "max_chars", 1)
    items = _doc_items(docs, lengths_ok=False)
    doc_col: list[Any] = []
    starts: list[int] = []
    ends: list[int] = []
    positions: list[int] = []
    for doc_id, text in items:
        bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text) if m.end() < len(text)), len(text)]
        windows: list[list[int]] = []
        open_window = False  # may the next sentence join the last window?
        for s, e in zip(bounds[:-1], bounds[1:]):
            if e - s > max_chars:  # a long sentence: pieces of max_chars, each a window of its own
                windows.extend([c, min(c + max_chars, e)] for c in range(s, e, max_chars))
                open_window = False
            elif open_window and e - windows[-1][0] <= max_chars:
                windows[-1][1] = e
            else:
                windows.append([s, e])
                open_window = True
        windows = [w for w in windows if w[1] > w[0]]
        for position, (s, e) in enumerate(windows):
            doc_col.append(doc_id)
            starts.append(s)
            ends.append(e)
            positions.append(position)
    table = _table(doc_col, np.array(starts, np.int64), np.array(ends, np.int64), np.array(positions, np.int64))
    table.attrs["raglab"] = {"chunks": {"method": "sentences", "max_chars": max_chars}}
    return table


def from_spans(
    table: pd.DataFrame | Sequence[Mapping[str, Any]],
    *,
    chunk_id: str | None = "chunk_id",
    doc_id: str = "doc_id",
    start: str = "start",
    end: str = "end",
    name: str = "table",
) -> pd.DataFrame:
    """Adopt a chunk table made elsewhere: check it, sort it and number the chunks of each document.

    Parameters
    ----------
    table : DataFrame or list of dict
        One row (or dict) per chunk with a doc id and character offsets (end exclusive).
    chunk_id, doc_id, start, end : str
        Column names in ``table``. ``chunk_id=None`` (or an absent ``chunk_id`` column) makes ids
        ``f"{doc_id}#{position}"``.
    name : str
        What errors call the table.

    Returns
    -------
    DataFrame
        ``chunk_id``, ``doc_id``, ``start``, ``end``, ``position`` (then any other columns of
        ``table``), sorted by document (first appearance), ``start`` and ``end``; ``position`` counts
        0, 1, ... within each document. Offsets are int64; chunk ids must be unique.

    Examples
    --------
    >>> from raglab.chunks import from_spans
    >>> spans = [{"chunk_id": "x2", "doc_id": "a", "start": 50, "end": 90},
    ...          {"chunk_id": "x1", "doc_id": "a", "start": 0, "end": 60}]
    >>> from_spans(spans).values.tolist()
    [['x1', 'a', 0, 60, 0], ['x2', 'a', 50, 90, 1]]
    """
    if isinstance(table, pd.DataFrame):
        df = table.copy()
    elif isinstance(table, Sequence) and not isinstance(table, str) and all(isinstance(x, Mapping) for x in table):
        df = pd.DataFrame.from_records(list(table))
    else:
        raise TypeError(f"`{name}` must be a DataFrame or a list of dicts with {doc_id!r}, {start!r}, {end!r}; "
                        f"got {type(table).__name__}")
    missing = [c for c in (doc_id, start, end) if c not in df.columns]
    if missing and len(df):
        raise ValueError(f"`{name}` needs column(s) {missing}; found {[str(c) for c in df.columns]}. Pass "
                         f"doc_id=, start=, end= to name your columns.")
    if not len(df):
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("chunk_id", "doc_id") else np.int64) for c in COLUMNS})
    for col in (start, end):
        values = df[col]
        if pd.api.types.is_integer_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
            continue
        ok = values.map(lambda v: isinstance(v, (Integral, np.integer)) and not isinstance(v, (bool, np.bool_))
                        ).to_numpy(dtype=bool)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"`{name}` column {col!r} must hold integer character offsets; row {bad} holds "
                             f"{values.iloc[bad]!r}. Convert it, e.g. table[{col!r}].astype(int).")
    s = df[start].to_numpy(dtype=np.int64)
    e = df[end].to_numpy(dtype=np.int64)
    bad = np.flatnonzero((s < 0) | (e <= s))
    if bad.size:
        b = int(bad[0])
        raise ValueError(f"`{name}` must have 0 <= {start} < {end} in every row; {bad.size} row(s) do not, e.g. row "
                         f"{b} ({start}={int(s[b])}, {end}={int(e[b])}). Drop empty or inverted chunks.")
    if df[doc_id].isna().any():
        b = int(np.flatnonzero(df[doc_id].isna().to_numpy())[0])
        raise ValueError(f"`{name}` column {doc_id!r} is missing in row {b}; every chunk needs its document")
    # A column named like one the table makes ('doc_id' beside doc_id='doc') would be overwritten or doubled.
    shadowed = [c for c in ("chunk_id", "doc_id", "start", "end") if c in df.columns and c not in (chunk_id, doc_id, start, end)]
    if shadowed:
        raise ValueError(f"`{name}` has column(s) {shadowed} besides the ones it reads ({doc_id!r}, {start!r}, "
                         f"{end!r}, chunk ids from {chunk_id!r}); the chunk table makes its own {shadowed}. Rename or "
                         "drop them (or pass chunk_id='chunk_id' to keep your chunk ids).")
    rest = [c for c in df.columns if c not in (chunk_id, doc_id, start, end, "position")]
    out = pd.DataFrame({"doc_id": df[doc_id].to_numpy(), "start": s, "end": e})
    has_ids = chunk_id is not None and chunk_id in df.columns
    if not has_ids:  # ids are made from the doc ids: 1 and "1" would make the same ones
        _check_id_text(df[doc_id].to_numpy(dtype=object), f"`{name}` column {doc_id!r}")
    if has_ids:
        out["chunk_id"] = df[chunk_id].to_numpy()
    for c in rest:
        out[c] = df[c].to_numpy()
    order = pd.factorize(out["doc_id"])[0]
    out = out.assign(_doc_order=order).sort_values(["_doc_order", "start", "end"], kind="stable")
    out = out.drop(columns="_doc_order").reset_index(drop=True)
    out["position"] = out.groupby("doc_id", sort=False).cumcount().astype(np.int64)
    if not has_ids:
        out["chunk_id"] = [f"{d}#{p}" for d, p in zip(out["doc_id"].tolist(), out["position"].tolist())]
    if out["chunk_id"].isna().any():  # before the duplicates check, which would call two missing ids a repeat
        raise ValueError(f"`{name}` column {chunk_id!r} has missing ids; pass chunk_id=None to number the chunks")
    dupes = out["chunk_id"].duplicated(keep=False)
    if dupes.any():
        shown = pd.unique(out.loc[dupes, "chunk_id"])[:5].tolist()
        raise ValueError(f"`{name}` chunk ids must be unique; {shown} repeat. Give each chunk its own id, or pass "
                         "chunk_id=None to number them per document.")
    out = out[[*COLUMNS, *rest]]
    if isinstance(table, pd.DataFrame):
        out.attrs = dict(table.attrs)
    return out
