"""The bulk kernel for gold ids: match many ranked lists against their gold, then run the metric kernels.

How ids are matched (exactly, with Python's ``==`` semantics: ``"7" != 7``, ``np.int64(7) == 7``):

1. Gold ids (usually a few per question) are flattened and encoded with :func:`pandas.factorize`
   into codes ``0..V-1``; each question's relevant gold is a set of keys ``row * V + code``.
2. Retrieved ids are matched, block by block (bounded memory):

   - **Arrow-backed lists** (``pd.ArrowDtype(pa.list_(pa.string()))``, what
     ``raglab.read_rows(..., lists="arrow")`` returns, or a ``pyarrow`` array): the flat child array
     is encoded with ``pyarrow.compute.index_in`` against the gold ids of the same Arrow type, and a
     retrieved id is relevant when ``row * V + code`` is one of its row's gold keys (a binary
     search in the sorted keys). No Python object is created per id.
   - **Python lists** (an object column), the usual few gold ids per question: each gold id is
     looked up in its own question's ranked list (``operator.contains`` / ``operator.indexOf``, a
     C-level scan with ``==``, mapped over all gold ids at once): no hashing of the retrieved ids.
   - **Python lists, questions with many gold ids** (more than ``_SCAN_MAX_GOLD``): each retrieved
     id's ``hash()`` is checked against a bit table of the gold ids' hashes, which discards almost
     every id with numpy; the few left are encoded with :meth:`pandas.Index.get_indexer` (a hash
     table with ``==``), so a hash collision can never make two different ids match.

3. A gold id counts at its first rank; the metric kernels of :mod:`raglab.metrics.specs` then work
   on the found ranks alone.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from raglab._errors import BadCellError
from raglab._validation import is_id_type, is_missing
from raglab.metrics._common import Found, _check_gain, _check_ks, _check_no_relevant, _zero_no_relevant
from raglab.metrics.specs import MetricSpec, select

_SEQUENCE_TYPES = (list, tuple, np.ndarray)
_BLOCK_SLOTS = 1 << 22  # ids matched per block: bounds memory at any table size
_ARROW_BLOCK_SLOTS = 1 << 16  # Arrow ids per index_in call: each call's table holds only its rows' gold ids


# --------------------------------------------------------------------------------------------------
# Cells: object columns and Arrow list columns
# --------------------------------------------------------------------------------------------------


def _arrow_lists(values: Any) -> pa.ChunkedArray | None:
    """The Arrow list array behind ``values`` (a Series/array of ``pd.ArrowDtype`` lists, or pyarrow), else None."""
    if isinstance(values, pa.Array):
        values = pa.chunked_array([values])
    elif isinstance(values, pd.Series | pd.Index) and isinstance(values.dtype, pd.ArrowDtype):
        values = values.array.__arrow_array__()
    elif isinstance(values, pd.arrays.ArrowExtensionArray):
        values = values.__arrow_array__()
    if not isinstance(values, pa.ChunkedArray):
        return None
    kind = values.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return None
    return values


def _as_cells(values: Any) -> np.ndarray:
    """A 1-D object array of the cells (never broadcasting nested lists into more dimensions)."""
    if _arrow_lists(values) is not None:
        values = _arrow_lists(values).to_pylist()
    elif hasattr(values, "to_numpy"):
        values = values.to_numpy(dtype=object)
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values
    if not hasattr(values, "__len__"):
        values = list(values)
    return np.fromiter(values, dtype=object, count=len(values))


def _check_sequences(cells: np.ndarray, what: str) -> np.ndarray:
    """Lengths of the list cells; raises BadCellError at the first cell that is not a list."""
    kinds = set(map(type, cells))
    if not all(issubclass(kind, _SEQUENCE_TYPES) for kind in kinds):
        ok = np.fromiter(map(isinstance, cells, repeat(_SEQUENCE_TYPES)), dtype=bool, count=len(cells))
        bad = int(np.flatnonzero(~ok)[0])
        value = cells[bad]
        hint = " (use [] when nothing was retrieved)" if is_missing(value) else ""
        raise BadCellError(
            f"{what}[{bad}] must be a list of ids, got {type(value).__name__} {value!r}{hint}", bad, what=what
        )
    return np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))


def list_lengths(values: Any) -> np.ndarray:
    """Length of each list cell of an object or Arrow list column (0 for a cell that is not a list).

    Examples
    --------
    >>> list_lengths(pd.Series([["a", "b"], [], None], dtype=object)).tolist()
    [2, 0, 0]
    """
    arrow = _arrow_lists(values)
    if arrow is not None:
        return pc.fill_null(pc.list_value_length(arrow), 0).to_numpy().astype(np.int64)
    cells = _as_cells(values)
    if all(issubclass(kind, _SEQUENCE_TYPES) for kind in set(map(type, cells))):
        return np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    return np.fromiter(
        (len(v) if isinstance(v, _SEQUENCE_TYPES) else 0 for v in cells), dtype=np.int64, count=len(cells)
    )


def _first_bad_id(objects: np.ndarray) -> int | None:
    """Index of the first id that is not str or int (bools are not ids), or None."""
    if pd.api.types.infer_dtype(objects, skipna=False) in ("string", "integer", "empty"):
        return None  # all str or all int: checked in one fast pass
    bad_kinds = tuple(kind for kind in set(map(type, objects)) if not is_id_type(kind))
    if not bad_kinds:
        return None
    bad = np.fromiter(map(isinstance, objects, repeat(bad_kinds)), dtype=bool, count=len(objects))
    return int(np.flatnonzero(bad)[0])


def _bad_id(what: str, row: int, value: Any) -> BadCellError:
    return BadCellError(
        f"{what}[{row}] holds {type(value).__name__} {value!r} in its list; ids must be str or int", row, what=what
    )


def _arrow_id_kind(kind: pa.DataType) -> str | None:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "text"
    if pa.types.is_integer(kind):
        return "number"
    return None


def _arrow_flat(chunk: pa.Array, what: str, row0: int, *, missing_ok: bool = False) -> tuple[np.ndarray, pa.Array]:
    """(offsets from 0, flat ids) of one Arrow list chunk; raises BadCellError on a null cell or id.

    ``missing_ok``: a null cell is an empty list (missing gold) instead of an error.
    """
    if chunk.null_count and not missing_ok:
        row = row0 + int(np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False))[0])
        raise BadCellError(
            f"{what}[{row}] must be a list of ids, got a missing value (use [] when nothing was retrieved)",
            row, what=what,
        )
    lengths = pc.fill_null(pc.list_value_length(chunk), 0).to_numpy().astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = chunk.flatten()  # takes care of a sliced array and of null cells
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    bad_at = None
    if _arrow_id_kind(values.type) is None and len(values):
        bad_at = 0
    elif values.null_count:
        bad_at = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
    if bad_at is not None:
        row = row0 + int(np.searchsorted(offsets, bad_at, side="right") - 1)
        raise _bad_id(what, row, values[bad_at].as_py())
    return offsets, values


# --------------------------------------------------------------------------------------------------
# Gold
# --------------------------------------------------------------------------------------------------


@dataclass
class _Gold:
    """The relevant gold of every question: one entry per distinct gold id with grade > 0.

    Entries are sorted by (row, label order). ``codes`` (into ``vocab``, the distinct gold ids) and
    the sorted ``keys`` ``row * len(vocab) + code`` are computed on first use (Arrow and hash paths).
    """

    n: int
    row: np.ndarray  # row of each relevant gold entry (grade > 0, a repeated id once)
    ids: np.ndarray | pa.Array  # the id of each entry: Python objects, or an Arrow string array
    grade: np.ndarray
    n_relevant: np.ndarray  # relevant gold ids per question
    n_judged: np.ndarray  # ids judged per question, any grade

    @cached_property
    def obj(self) -> np.ndarray:
        """The ids as Python objects (made on first use when the gold came in as Arrow)."""
        if isinstance(self.ids, np.ndarray):
            return self.ids
        return np.asarray(self.ids.to_numpy(zero_copy_only=False), dtype=object)

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Is the id of entry ``a[i]`` equal to the id of entry ``b[i]``?"""
        if isinstance(self.ids, np.ndarray):
            return np.fromiter(map(operator.eq, self.ids[a], self.ids[b]), dtype=bool, count=a.size)
        return pc.equal(self.ids.take(a), self.ids.take(b)).to_numpy(zero_copy_only=False)

    @cached_property
    def _encoded(self) -> tuple[np.ndarray, np.ndarray]:
        codes, vocab = pd.factorize(self.obj) if self.obj.size else (np.empty(0, np.int64), np.empty(0, object))
        return np.asarray(codes, dtype=np.int64), np.asarray(vocab, dtype=object)

    @property
    def codes(self) -> np.ndarray:
        return self._encoded[0]

    @property
    def vocab(self) -> np.ndarray:
        return self._encoded[1]

    @cached_property
    def _sorted_keys(self) -> tuple[np.ndarray, np.ndarray]:
        width = max(1, self.vocab.size)
        if self.n * width >= 2**62:  # pragma: no cover - beyond any realistic table
            raise ValueError("too many distinct gold ids for the bulk kernel")
        keys = self.row * width + self.codes
        entry = np.argsort(keys, kind="stable")
        return keys[entry], entry

    @property
    def keys(self) -> np.ndarray:
        """Sorted ``row * len(vocab) + code`` of every entry."""
        return self._sorted_keys[0]

    @property
    def key_entry(self) -> np.ndarray:
        """The entry of each sorted key."""
        return self._sorted_keys[1]

    def as_arrow(self, kind: pa.DataType) -> pa.Array:
        """The gold ids, one per entry, as Arrow type ``kind`` (null where an id cannot be of that type)."""
        if isinstance(self.ids, pa.Array) and _arrow_id_kind(self.ids.type) == _arrow_id_kind(kind):
            return self.ids.cast(kind)
        if _arrow_id_kind(kind) == "text":
            fits = np.fromiter(map(isinstance, self.obj, repeat(str)), dtype=bool, count=self.obj.size)
        else:
            info = np.iinfo(kind.to_pandas_dtype())
            fits = np.fromiter(
                (isinstance(v, Integral) and not isinstance(v, bool) and info.min <= v <= info.max for v in self.obj),
                dtype=bool, count=self.obj.size,
            )
        if fits.all():
            return pa.array(self.obj, type=kind, from_pandas=True)
        return pa.array(np.where(fits, self.obj, None).tolist(), type=kind)


def _gold_entries(gold: Any) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every judged gold entry: (n, row, id, grade, from_list), rows ascending, label order within a row.

    ``from_list`` marks entries of list cells, where an id may repeat (dict and set cells cannot).
    """
    arrow = _arrow_lists(gold)
    if arrow is not None and _arrow_id_kind(arrow.type.value_type) is not None:
        rows, ids, row0 = [], [], 0
        for chunk in arrow.chunks:
            offsets, values = _arrow_flat(chunk, "gold", row0, missing_ok=True)
            rows.append(np.repeat(np.arange(row0, row0 + len(chunk)), np.diff(offsets)))
            ids.append(np.asarray(values.to_pylist(), dtype=object) if len(values) else np.empty(0, object))
            row0 += len(chunk)
        row = np.concatenate(rows).astype(np.int64) if rows else np.empty(0, np.int64)
        obj = np.concatenate(ids) if ids else np.empty(0, object)
        return len(arrow), row, obj, np.ones(obj.size), np.ones(obj.size, dtype=bool)

    cells = _as_cells(gold)
    n = len(cells)
    is_dict = np.fromiter(map(isinstance, cells, repeat(dict)), dtype=bool, count=n)
    is_seq = np.fromiter(map(isinstance, cells, repeat(_SEQUENCE_TYPES + (set, frozenset))), dtype=bool, count=n)
    unusual = np.flatnonzero(~(is_dict | is_seq))
    if unusual.size:
        cells = cells.copy()  # never write into the caller's column
    for position in unusual.tolist():  # only cells that are neither dict nor list: missing or wrong
        value = cells[position]
        if isinstance(value, Mapping):
            cells[position] = dict(value)
            is_dict[position] = True
        elif not is_missing(value):
            hint = " (JSON text? read files with raglab.read_rows)" if isinstance(value, str) else ""
            raise BadCellError(
                f"gold[{position}] must be a list of ids or a dict id -> grade, got "
                f"{type(value).__name__} {value!r}{hint}",
                position, what="gold",
            )
    dict_rows, seq_rows = np.flatnonzero(is_dict), np.flatnonzero(is_seq)
    dict_cells, seq_cells = cells[dict_rows], cells[seq_rows]
    dict_lens = np.fromiter(map(len, dict_cells), dtype=np.int64, count=len(dict_cells))
    seq_lens = np.fromiter(map(len, seq_cells), dtype=np.int64, count=len(seq_cells))
    dict_ids = np.fromiter(chain.from_iterable(dict_cells), dtype=object, count=int(dict_lens.sum()))
    kinds = set(map(type, chain.from_iterable(map(dict.values, dict_cells))))
    if any(not issubclass(kind, Real) or issubclass(kind, bool) for kind in kinds):
        grades = list(chain.from_iterable(map(dict.values, dict_cells)))
        bad = next(i for i, g in enumerate(grades) if not isinstance(g, Real) or isinstance(g, bool))
        row = int(np.repeat(dict_rows, dict_lens)[bad])
        raise BadCellError(f"gold[{row}] has grade {grades[bad]!r}; grades must be numbers", row, what="gold")
    dict_grades = np.fromiter(
        chain.from_iterable(map(dict.values, dict_cells)), dtype=np.float64, count=int(dict_lens.sum())
    )
    if np.isnan(dict_grades).any():
        row = int(np.repeat(dict_rows, dict_lens)[np.flatnonzero(np.isnan(dict_grades))[0]])
        raise BadCellError(f"gold[{row}] has a NaN grade; grades must be numbers", row, what="gold")
    seq_ids = np.fromiter(chain.from_iterable(seq_cells), dtype=object, count=int(seq_lens.sum()))
    listed = np.fromiter(map(isinstance, seq_cells, repeat(_SEQUENCE_TYPES)), dtype=bool, count=len(seq_cells))
    seq_listed = np.repeat(listed, seq_lens)
    if seq_ids.size == 0:
        return n, np.repeat(dict_rows, dict_lens), dict_ids, dict_grades, np.zeros(dict_ids.size, dtype=bool)
    if dict_ids.size == 0:
        return n, np.repeat(seq_rows, seq_lens), seq_ids, np.ones(seq_ids.size), seq_listed
    row = np.concatenate([np.repeat(dict_rows, dict_lens), np.repeat(seq_rows, seq_lens)])
    order = np.argsort(row, kind="stable")
    obj = np.concatenate([dict_ids, seq_ids])[order]
    grade = np.concatenate([dict_grades, np.ones(seq_ids.size)])[order]
    from_list = np.concatenate([np.zeros(dict_ids.size, dtype=bool), seq_listed])[order]
    return n, row[order], obj, grade, from_list


def _repeats(row: np.ndarray, obj: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Mask of the entries among ``candidates`` (rows ascending) whose id already appeared in their row."""
    repeated = np.zeros(row.size, dtype=bool)
    if candidates.size == 0:
        return repeated
    starts = np.flatnonzero(np.concatenate([[True], row[candidates][1:] != row[candidates][:-1]]))
    for a, b in zip(starts, [*starts[1:], candidates.size]):
        at = candidates[a:b]
        if b - a > 1 and len(set(obj[at].tolist())) < b - a:  # only rows that hold a repeat are walked
            seen: set[Any] = set()
            for i in at.tolist():
                repeated[i] = obj[i] in seen
                seen.add(obj[i])
    return repeated


def _gold_table(gold: Any) -> _Gold:
    """The gold column (lists of ids, dicts id -> grade, missing; or an Arrow list column), checked.

    The usual graded gold, every cell a dict of str -> int/float (or missing), is converted to Arrow
    in one pass; anything else takes the general path, which also words the errors.
    """
    fast = _dict_gold_as_arrow(gold)
    if fast is not None:
        return fast
    n, row, obj, grade, from_list = _gold_entries(gold)
    bad = _first_bad_id(obj)
    if bad is not None:
        raise _bad_id("gold", int(row[bad]), obj[bad])
    n_judged = np.bincount(row, minlength=n).astype(np.int64)
    keep = (grade > 0) & ~_repeats(row, obj, np.flatnonzero(from_list))  # a repeated id in a gold list counts once
    row, obj, grade = row[keep].astype(np.int64), obj[keep], grade[keep]
    return _Gold(n, row, obj, grade, np.bincount(row, minlength=n).astype(np.int64), n_judged)


def _dict_gold_as_arrow(gold: Any) -> _Gold | None:
    """Gold whose cells are all dicts str -> int/float (or missing), through Arrow; None for anything else."""
    if _arrow_lists(gold) is not None:
        return None
    cells = _as_cells(gold)
    dicts = cells
    if set(map(type, cells)) != {dict}:
        is_dict = np.fromiter(map(isinstance, cells, repeat(dict)), dtype=bool, count=len(cells))
        if not is_dict.any() or not all(is_missing(v) for v in cells[~is_dict]):
            return None
        cells, dicts = np.where(is_dict, cells, None), cells[is_dict]
    grades = chain.from_iterable(map(dict.values, dicts))
    if not set(map(type, grades)) <= {int, float}:
        return None  # bools, None, numpy scalars...: the general path checks and converts them
    try:
        table = pa.array(cells.tolist(), type=pa.map_(pa.string(), pa.float64()))
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None  # ids that are not all str, or grades Arrow cannot hold exactly: the general path
    lengths = np.diff(table.offsets.to_numpy().astype(np.int64))  # missing cells hold no entries
    grade = table.items.to_numpy(zero_copy_only=False).astype(np.float64)
    if len(grade) != lengths.sum() or np.isnan(grade).any() or not np.all(np.abs(grade[grade != 0]) < 2**53):
        return None  # NaN grades are reported by the general path; huge ints must not round
    n = len(cells)
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    keep = np.flatnonzero(grade > 0)
    ids = table.keys if keep.size == len(grade) else table.keys.take(pa.array(keep))
    row, grade = row[keep], grade[keep]
    return _Gold(n, row, ids, grade, np.bincount(row, minlength=n).astype(np.int64),
                 lengths)


# --------------------------------------------------------------------------------------------------
# Retrieved ids
# --------------------------------------------------------------------------------------------------

#: Questions with at most this many relevant gold ids are matched by looking each gold id up in its
#: own ranked list (a C-level scan with ``==``); questions with more gold ids are matched by hashing
#: their retrieved ids once (the cost of the scan grows with gold x retrieved).
_SCAN_MAX_GOLD = 12


def _hash_filter(vocab: np.ndarray) -> tuple[np.ndarray, np.uint64]:
    """A bit table with ``table[hash & mask]`` set for every gold id's hash: a one-sided quick filter."""
    size = 1 << int(min(26, max(12, (16 * max(1, vocab.size)).bit_length())))
    table = np.zeros(size, dtype=bool)
    mask = np.uint64(size - 1)
    hashes = np.fromiter(map(hash, vocab), dtype=np.int64, count=vocab.size)
    table[(hashes.view(np.uint64) & mask).view(np.int64)] = True
    return table, mask


class _Encoder:
    """Codes (into the gold vocabulary, -1 for ids that are no gold id) of flat retrieved ids."""

    def __init__(self, gold: _Gold) -> None:
        self.gold = gold
        self._index: pd.Index | None = None
        self._filter: tuple[np.ndarray, np.uint64] | None = None
        self._arrow: dict[pa.DataType, pa.Array] = {}

    def objects(self, flat: np.ndarray) -> np.ndarray:
        """Python ids: their hash against a bit table of the gold hashes, then the few left by ``==``."""
        if self._index is None:
            self._index = pd.Index(self.gold.vocab, dtype=object)
            self._filter = _hash_filter(self.gold.vocab)
        table, mask = self._filter
        hashes = np.fromiter(map(hash, flat), dtype=np.int64, count=flat.size)
        maybe = np.flatnonzero(table[(hashes.view(np.uint64) & mask).view(np.int64)])
        codes = np.full(flat.size, -1, dtype=np.int64)
        if maybe.size:
            codes[maybe] = self._index.get_indexer(pd.Index(flat[maybe], dtype=object))
        return codes

    def arrow(self, values: pa.Array, offsets: np.ndarray, row0: int) -> tuple[np.ndarray, ...]:
        """(row, rank, entry) of the Arrow ids of rows ``row0..`` that are their row's gold.

        Rows are taken a few thousand ids at a time and looked up with ``pyarrow.compute.index_in``
        in the gold ids *of those rows* (small tables are fast). A match at gold entry ``e`` is a hit
        when ``e`` belongs to the id's own row; otherwise (the same id is gold for an earlier row of
        the block) the row's own gold ids are compared with ``==``.
        """
        gold = self.gold
        if values.type not in self._arrow:
            self._arrow[values.type] = gold.as_arrow(values.type)
        gold_ids = self._arrow[values.type]
        bounds = np.searchsorted(gold.row, np.arange(row0, row0 + offsets.size))  # each row's first entry

        def block(rows: tuple[int, int]) -> tuple[np.ndarray, ...] | None:
            a, b = rows
            e0, e1 = int(bounds[a]), int(bounds[b])
            if e0 == e1:
                return None
            ids = values.slice(offsets[a], offsets[b] - offsets[a])
            position = pc.index_in(ids, value_set=gold_ids.slice(e0, e1 - e0))
            if position.null_count == len(position):
                return None
            at = pc.indices_nonzero(position.is_valid()).to_numpy().astype(np.int64) + offsets[a]
            entries = pc.drop_null(position).to_numpy().astype(np.int64) + e0
            found = np.searchsorted(offsets, at, side="right") - 1
            ranks = at - offsets[found] + 1
            found += row0
            own = gold.row[entries] == found
            if not own.all():
                entries[~own] = self._own_entries(found[~own], entries[~own], bounds, row0)
            keep = entries >= 0
            return found[keep], ranks[keep], entries[keep]

        ranges = _blocks(np.diff(offsets), _ARROW_BLOCK_SLOTS)
        threads = min(pa.cpu_count(), len(ranges))
        if threads > 1:  # index_in releases the GIL: the blocks run side by side (pa.set_cpu_count(1) stops it)
            with ThreadPoolExecutor(threads) as pool:
                parts = [part for part in pool.map(block, ranges) if part is not None]
        else:
            parts = [part for part in map(block, ranges) if part is not None]
        return tuple(np.concatenate(column) for column in zip(*parts)) if parts else ()

    def _own_entries(self, rows: np.ndarray, entries: np.ndarray, bounds: np.ndarray, row0: int) -> np.ndarray:
        """For ids equal to gold entry ``entries`` of another row: the equal entry of their own row, or -1."""
        gold = self.gold
        first, last = bounds[rows - row0], bounds[rows - row0 + 1]
        counts = last - first
        if int(counts.sum()) > 64 * rows.size + 4096:  # rows with very many gold ids: look (row, code) up instead
            keys = rows * max(1, gold.vocab.size) + gold.codes[entries]
            where = np.searchsorted(gold.keys, keys)
            where[where == gold.keys.size] = 0
            return np.where(gold.keys[where] == keys, gold.key_entry[where], -1)
        pair = np.repeat(np.arange(rows.size), counts)
        candidate = np.repeat(first, counts) + np.arange(pair.size) - np.repeat(np.cumsum(counts) - counts, counts)
        equal = gold.same(candidate, entries[pair])
        own = np.full(rows.size, -1, dtype=np.int64)
        matched_pair, first_equal = np.unique(pair[equal], return_index=True)
        own[matched_pair] = candidate[equal][first_equal]
        return own


def _blocks(lengths: np.ndarray, slots: int | None = None) -> list[tuple[int, int]]:
    """Row ranges holding about ``slots`` ids each (default ``_BLOCK_SLOTS``; at least one row per range)."""
    slots = _BLOCK_SLOTS if slots is None else slots
    n = lengths.size
    bounds = [0]
    cumulative = np.cumsum(lengths)
    while bounds[-1] < n:
        start = bounds[-1]
        base = cumulative[start - 1] if start else 0
        stop = int(np.searchsorted(cumulative, base + slots, side="right"))
        bounds.append(min(n, max(stop, start + 1)))
    return list(zip(bounds[:-1], bounds[1:]))


def _coded_hits(codes: np.ndarray, offsets: np.ndarray, rows_of: np.ndarray, gold: _Gold) -> tuple[np.ndarray, ...]:
    """(row, 1-based rank, gold entry) of the coded ids of a block that are their row's gold.

    ``offsets``: where each of the block's lists starts in ``codes`` (and ends); ``rows_of``: the
    question of each list.
    """
    at = np.flatnonzero(codes >= 0)
    lists = np.searchsorted(offsets, at, side="right") - 1
    ranks = at - offsets[lists] + 1
    rows = rows_of[lists]
    keys = rows * max(1, gold.vocab.size) + codes[at]
    where = np.searchsorted(gold.keys, keys)
    where[where == gold.keys.size] = 0
    hit = gold.keys[where] == keys if gold.keys.size else np.zeros(keys.size, dtype=bool)
    return rows[hit], ranks[hit], gold.key_entry[where[hit]]


def _check_ids(cells: np.ndarray, lengths: np.ndarray) -> None:
    """Every retrieved id is str or int (not bool): one pass over the types; the culprit found block by block."""
    if all(map(is_id_type, set(map(type, chain.from_iterable(cells))))):
        return
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for a, b in _blocks(lengths):
        flat = np.fromiter(chain.from_iterable(cells[a:b]), dtype=object, count=int(offsets[b] - offsets[a]))
        bad = _first_bad_id(flat)
        if bad is not None:
            row = a + int(np.searchsorted(offsets[a : b + 1] - offsets[a], bad, side="right")) - 1
            raise _bad_id("retrieved", row, flat[bad])


def _scan_hits(cells: np.ndarray, gold: _Gold, entries: np.ndarray) -> tuple[np.ndarray, ...]:
    """(row, rank, entry) of the gold ``entries`` found in their row's ranked list, by a scan with ``==``."""
    rows = gold.row[entries]
    ranked = cells[rows]
    ids = gold.obj[entries]
    found = np.fromiter(map(operator.contains, ranked, ids), dtype=bool, count=entries.size)
    ranks = np.fromiter(map(operator.indexOf, ranked[found], ids[found]), dtype=np.int64, count=int(found.sum())) + 1
    return rows[found], ranks, entries[found]


def _match(retrieved: Any, gold: _Gold) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (row, rank, gold entry) where a gold id is first found in its row's ranked list, in any
    order; and the length of each ranked list."""
    encoder = _Encoder(gold)
    parts: list[tuple[np.ndarray, ...]] = []
    arrow = _arrow_lists(retrieved)
    if arrow is not None:
        if len(arrow) != gold.n:
            raise ValueError(f"retrieved has {len(arrow)} rows but gold has {gold.n}; pass one gold per ranked list")
        row0, lengths_of = 0, []
        for chunk in arrow.chunks:
            offsets, values = _arrow_flat(chunk, "retrieved", row0)
            lengths_of.append(np.diff(offsets))
            hits = encoder.arrow(values, offsets, row0) if gold.row.size else ()
            if hits:
                parts.append(hits)
            row0 += len(chunk)
        lengths = np.concatenate(lengths_of) if lengths_of else np.empty(0, np.int64)
    else:
        cells = _as_cells(retrieved)
        if len(cells) != gold.n:
            raise ValueError(f"retrieved has {len(cells)} rows but gold has {gold.n}; pass one gold per ranked list")
        lengths = _check_sequences(cells, "retrieved")
        _check_ids(cells, lengths)
        arrays = np.flatnonzero(np.fromiter(map(isinstance, cells, repeat(np.ndarray)), dtype=bool, count=len(cells)))
        if arrays.size:  # numpy cells scan as lists (``in`` on an array would compare element-wise)
            cells = cells.copy()
            for i in arrays.tolist():
                cells[i] = cells[i].tolist()
        many = gold.n_relevant > _SCAN_MAX_GOLD
        scanned = ~many[gold.row]
        parts.append(_scan_hits(cells, gold, np.flatnonzero(scanned)))
        hashed = np.flatnonzero(many)
        for a, b in _blocks(lengths[hashed]) if hashed.size else []:
            block = cells[hashed[a:b]]
            offsets = np.concatenate([[0], np.cumsum(lengths[hashed[a:b]])])
            flat = np.fromiter(chain.from_iterable(block), dtype=object, count=int(offsets[-1]))
            parts.append(_coded_hits(encoder.objects(flat), offsets, hashed[a:b], gold))
    empty = np.empty(0, dtype=np.int64)
    rows = np.concatenate([p[0] for p in parts]) if parts else empty
    ranks = np.concatenate([p[1] for p in parts]) if parts else empty
    entries = np.concatenate([p[2] for p in parts]) if parts else empty
    return rows.astype(np.int64), ranks.astype(np.int64), entries.astype(np.int64), lengths


def _found_from_ids(retrieved: Any, gold: Any) -> tuple[Found, _Gold, np.ndarray]:
    table = _gold_table(gold)
    rows, ranks, entries, lengths = _match(retrieved, table)
    order = np.lexsort((ranks, rows))
    rows, ranks, entries = rows[order], ranks[order], entries[order]
    _, first = np.unique(entries, return_index=True)  # a repeated id counts at its first rank
    first.sort()
    rows, ranks, entries = rows[first], ranks[first], entries[first]
    ideal_order = np.lexsort((-table.grade, table.row))
    found = Found(
        n=table.n,
        n_relevant=table.n_relevant,
        found_row=rows,
        found_rank=ranks,
        found_grade=table.grade[entries],
        prec_row=rows,
        prec_rank=ranks,
        ideal_row=table.row[ideal_order],
        ideal_grade=table.grade[ideal_order],
    )
    return found, table, lengths


def _score(found: Found, ks: Sequence[int], gain: str, specs: Sequence[MetricSpec]) -> dict[str, np.ndarray]:
    """Run the kernels of ``specs`` (per-k metrics for each k, then whole-list ones); NaN where unanswerable."""
    found.ks, found.gain = list(ks), gain
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name, spec, k in [(f"{s.base}@{k}", s, k) for k in ks for s in specs if s.per_k] + [
            (s.base, s, None) for s in specs if not s.per_k
        ]:
            if spec.bulk is None:
                continue  # computed by its own module (coverage, from character offsets)
            values = np.array(spec.bulk(found, k), dtype=np.float64)
            values[found.unanswerable] = np.nan
            out[name] = values
    return out


def retrieval_scores(
    retrieved: Sequence[Sequence[Hashable]] | Any,
    gold: Sequence[Any] | Any,
    k: int | Iterable[int] = 5,
    *,
    gain: str = "exponential",
    no_relevant: str = "exclude",
    metrics: str | Iterable[str] | None = None,
) -> dict[str, np.ndarray]:
    """Every retrieval metric for many questions at once, equal to the per-question functions.

    Parameters
    ----------
    retrieved : sequence of lists of ids
        One ranked list per question (what reached the model, best first); ``[]`` when nothing was
        retrieved (scores 0). A pandas Series works, including an Arrow-backed list column
        (``pd.ArrowDtype(pa.list_(pa.string()))``, as ``raglab.read_rows(path, lists="arrow")``
        returns), which is matched without creating a Python object per id.
    gold : sequence of (list of ids | dict id -> grade | None)
        One per question; missing, empty or no grade > 0 means unanswerable (NaN everywhere).
    k : int or iterable of int
        Cut-offs for the per-k metrics (recall, hit, precision, nDCG).
    gain : {"exponential", "linear"}
        nDCG gain, ``2**g - 1`` or ``g``.
    no_relevant : {"exclude", "zero"}
        A question whose gold judges ids but grades none above 0 (e.g. ``{"d3": 0}``):
        ``"exclude"`` (default) scores it NaN like every unanswerable question, so means leave it
        out; ``"zero"`` scores it 0 on every metric, trec_eval's convention, so that a mean over
        the questions equals the ``all`` line of trec_eval (and the mean of pytrec_eval's
        per-query values). Missing or empty gold (nothing judged) is NaN either way: trec_eval
        never evaluates a topic without judgements.
    metrics : str or iterable of str, optional
        Base names of registered metrics to compute (``raglab.metrics.METRICS``), e.g.
        ``["recall", "map"]``; default: every metric registered as a default.

    Returns
    -------
    dict of str -> numpy.ndarray
        ``recall@k``, ``hit@k``, ``precision@k``, ``ndcg@k`` for each k, then ``rr``, ``ap``,
        ``r_precision`` (or the ``metrics`` asked for, same order); float64, one value per question.

    Examples
    --------
    >>> out = retrieval_scores([["d7", "d2", "d9", "d4", "d1"], ["d1"]], [{"d2": 3, "d4": 1, "d5": 2}, []], k=5)
    >>> [round(float(v), 3) for v in out["ndcg@5"]]
    [0.516, nan]

    A question judged but with nothing relevant: NaN by default, 0 as in trec_eval on request.

    >>> ranked, gold = [["d1", "d2"], ["d1"], ["d1"]], [["d2"], {"d1": 0, "d7": 0}, None]
    >>> retrieval_scores(ranked, gold, k=2)["ap"].tolist()
    [0.5, nan, nan]
    >>> retrieval_scores(ranked, gold, k=2, no_relevant="zero")["ap"].tolist()
    [0.5, 0.0, nan]

    Metrics that are not computed by default, such as MAP@k (trec_eval's ``map_cut_k``):

    >>> retrieval_scores([["d1", "d7", "d2"]], [["d1", "d2", "d3"]], k=[1, 3], metrics=["map"])
    {'map@1': array([0.33333333]), 'map@3': array([0.55555556])}
    """
    return _retrieval_scores(retrieved, gold, k, gain=gain, no_relevant=no_relevant, metrics=metrics)[0]


def _retrieval_scores(
    retrieved: Any, gold: Any, k: int | Iterable[int], *, gain: str, no_relevant: str,
    metrics: str | Iterable[str] | None = None, lengths: list[np.ndarray] | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """:func:`retrieval_scores` and the mask of questions judged with no grade > 0 (for the counts).

    ``lengths``: a list that receives the length of each ranked list (saves the caller a pass).
    """
    ks = _check_ks(k)
    _check_gain(gain)
    _check_no_relevant(no_relevant)
    specs = select(metrics, "ids")
    found, table, list_lengths_ = _found_from_ids(retrieved, gold)
    if lengths is not None:
        lengths.append(list_lengths_)
    out = _score(found, ks, gain, specs)
    judged_none_relevant = (table.n_relevant == 0) & (table.n_judged > 0)
    _zero_no_relevant(out, judged_none_relevant, no_relevant)
    return out, judged_none_relevant
