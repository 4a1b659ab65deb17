"""Run metadata kept in ``df.attrs["raglab"]``.

Everything that changes a number without changing the rows lives here: the eval-set version and
hash, the judge fingerprint, and metric conventions such as k and the nDCG gain. It is a plain,
JSON-serialisable dict so that it survives JSONL, CSV and Parquet round trips (see :mod:`raglab.io`).

Layout (every key optional)::

    {
      "raglab_version": "0.1.0",
      "evalset": {"name": ..., "version": ..., "hash": ...},
      "judge": {"fingerprint": ..., "model": ..., ...},
      "retrieval": {"k": [5], "gain": "exponential", ...},
      "run": {"name": ...},
      "sampling": {"labelled": {"kind": "labelled", "method": "uniform", "n": ..., ...}},
    }

The known sections have typed records (:class:`RetrievalConventions`, :class:`RetrievalCounts`,
:class:`JudgeFingerprint`, :class:`EvalSetStamp`, :class:`SamplingDesign`): ``from_dict`` reads a
stored dict (keys it does not know are kept, missing ones are None), ``to_dict`` writes one back,
and ``differences`` is the one comparison rule of the pairing checks. attrs themselves stay plain
dicts; :func:`update_meta` validates a known section against its record before storing it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np
import pandas as pd

ATTRS_KEY = "raglab"


def get_meta(df: pd.DataFrame) -> dict[str, Any]:
    """Return a deep copy of the raglab metadata of ``df`` (an empty dict when there is none)."""
    meta = df.attrs.get(ATTRS_KEY, {})
    return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else {}


def storable_meta(meta: Mapping[str, Any], where: str = f"df.attrs[{ATTRS_KEY!r}]") -> dict[str, Any]:
    """``meta`` as plain JSON values, or a TypeError naming the key that a file cannot hold.

    numpy scalars become the Python numbers they hold (lossless); NaN and infinities, which JSON
    cannot hold, and any other type (a set, a Timestamp, an object) are refused with their key path.

    Examples
    --------
    >>> import numpy as np
    >>> storable_meta({"retrieval": {"k": [np.int64(5)]}})
    {'retrieval': {'k': [5]}}
    >>> storable_meta({"retrieval": {"alpha": float("nan")}})
    Traceback (most recent call last):
    ...
    TypeError: df.attrs['raglab']['retrieval']['alpha'] is nan: raglab metadata must be JSON so it survives files, and JSON has no NaN or infinity; store None (or a text such as "nan") instead.
    """
    return _storable(meta, where)


def _storable(value: Any, where: str) -> Any:
    if isinstance(value, np.generic) and not isinstance(value, (np.datetime64, np.timedelta64, np.void)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError(
            f"{where} is {value!r}: raglab metadata must be JSON so it survives files, and JSON has no NaN or "
            'infinity; store None (or a text such as "nan") instead.'
        )
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TypeError(
                f"{where} holds text with the lone surrogate {value[exc.start]!r} at character {exc.start}, which "
                "UTF-8 files cannot hold; fix the text, e.g. value.encode('utf-8', 'replace').decode('utf-8')."
            ) from None
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, np.generic):
                key = key.item()
            if not (key is None or isinstance(key, (str, int, float, bool))):  # JSON writes these as text
                raise TypeError(
                    f"{where} has the {type(key).__name__} key {key!r}: raglab metadata must be JSON so it survives "
                    f"files, and JSON keys are text; use {str(key)!r}."
                )
            out[key] = _storable(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_storable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(
        f"{where} holds a {type(value).__name__} ({str(value)[:40]!r}): raglab metadata must be JSON (text, numbers, "
        "booleans, None, lists and dicts of them) so it survives files; convert it, e.g. to str or a list."
    )


def set_meta(df: pd.DataFrame, meta: Mapping[str, Any]) -> pd.DataFrame:
    """Store ``meta`` (validated as JSON-serialisable, numpy scalars made plain) on ``df`` in place; return ``df``."""
    df.attrs[ATTRS_KEY] = storable_meta(meta)
    return df


def update_meta(df: pd.DataFrame, section: str, values: Mapping[str, Any]) -> pd.DataFrame:
    """Merge ``values`` into ``attrs["raglab"][section]`` of ``df`` in place and return ``df``.

    A known section (see :data:`RECORDS` and ``"sampling"``) is checked against its record first:
    a value of the wrong type or outside its choices raises, naming the section and the key, and
    ``df`` is left unchanged.

    Examples
    --------
    >>> frame = update_meta(pd.DataFrame({"x": [1]}), "evalset", {"name": "qa", "version": "v1", "hash": "aaa"})
    >>> frame.attrs["raglab"]["evalset"]["version"]
    'v1'
    >>> update_meta(frame, "evalset", {"n": -1})
    Traceback (most recent call last):
    ...
    TypeError: attrs['raglab']['evalset']['n'] must be a count (an int >= 0), got int -1
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"attrs[{ATTRS_KEY!r}][{section!r}] must be a dict, got {type(values).__name__} {_short(values)}")
    meta = get_meta(df)
    current = meta.get(section)
    merged = dict(current) if isinstance(current, Mapping) else {}
    merged.update(values)
    check_section(section, merged)
    meta[section] = merged
    return set_meta(df, meta)


def carry_meta(source: pd.DataFrame, target: pd.DataFrame) -> pd.DataFrame:
    """Copy the raglab metadata of ``source`` onto ``target`` (pandas does not always propagate attrs)."""
    meta = get_meta(source)
    if meta:
        set_meta(target, meta)
    return target


def evalset_of(df: pd.DataFrame) -> dict[str, Any] | None:
    """The eval-set stamp (name, version, hash) of a run, or None."""
    stamp = get_meta(df).get("evalset")
    return dict(stamp) if isinstance(stamp, Mapping) else None


def judge_of(df: pd.DataFrame) -> dict[str, Any] | None:
    """The judge fingerprint record of a run, or None."""
    record = get_meta(df).get("judge")
    return dict(record) if isinstance(record, Mapping) else None


# --------------------------------------------------------------------------------------------------
# Typed records of the sections. attrs keep plain dicts (so every file format round-trips and old
# files still read); the records give those dicts a schema, a validation and one comparison rule.
# --------------------------------------------------------------------------------------------------


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_label(value: Any) -> bool:  # a name or version: text, or a number a user typed
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def _is_flag(value: Any) -> bool:
    return isinstance(value, (bool, str))


def _is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_texts(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _is_depths(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(_is_count(v) and v > 0 for v in value)


_KINDS = {
    _is_text: "text",
    _is_label: "a text or an int",
    _is_count: "a count (an int >= 0)",
    _is_number: "a number",
    _is_flag: "a bool or a text",
    _is_mapping: "a dict",
    _is_texts: "a list of texts",
    _is_depths: "a list of positive ints",
}


def _field(check: Any) -> Any:
    """A record field: None (not recorded) by default, ``check`` validating any other value."""
    return field(default=None, metadata={"check": check})


R = TypeVar("R", bound="MetaRecord")


class Difference(NamedTuple):
    """One field on which two records differ: its name and both values (as compared)."""

    field: str
    ours: Any
    theirs: Any

    def __str__(self) -> str:
        return f"{self.field}: {self.ours!r} vs {self.theirs!r}"


@dataclass(frozen=True, kw_only=True)
class MetaRecord:
    """Base of the typed records of ``df.attrs["raglab"]`` sections.

    A field holding None was not recorded (an older raglab did not write it); keys a record does not
    know are kept in ``extra`` and written back by :meth:`to_dict`, so a record never loses data.
    """

    SECTION: ClassVar[str] = ""
    #: Fields that do not change what the numbers mean (:meth:`differences` skips them).
    NEUTRAL: ClassVar[frozenset[str]] = frozenset()
    #: fields that identify what was recorded: held by one record only, they still differ (a judge
    #: without a fingerprint cannot be matched to one with it)
    IDENTITY: ClassVar[frozenset[str]] = frozenset()

    extra: dict[Any, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any], *, where: str | None = None) -> R:
        """The record of a stored section: unknown keys kept in ``extra``, missing ones None.

        Raises TypeError (a field of the wrong type) or ValueError (a value outside its choices)
        naming the section and the key, e.g. ``attrs['raglab']['sampling']['n']``.
        """
        where = where or f"attrs[{ATTRS_KEY!r}][{cls.SECTION!r}]"
        if not isinstance(data, Mapping):
            raise TypeError(f"{where} must be a dict, got {type(data).__name__} {_short(data)}")
        known = {f.name: f for f in fields(cls) if f.name != "extra"}
        values: dict[str, Any] = {}
        extra: dict[Any, Any] = {}
        for key, value in data.items():
            spec = known.get(key) if isinstance(key, str) else None
            if spec is None:
                extra[key] = copy.deepcopy(value)
                continue
            check = spec.metadata["check"]
            if value is not None and not check(value):
                raise TypeError(
                    f"{where}[{key!r}] must be {_KINDS[check]}, got {type(value).__name__} {_short(value)}"
                )
            values[key] = copy.deepcopy(value)
        record = cls(**values, extra=extra)
        record._check(where)
        return record

    def _check(self, where: str) -> None:
        """Checks across fields, or of a field's choices (none by default)."""

    def to_dict(self) -> dict[Any, Any]:
        """The plain JSON-able dict stored in attrs: the recorded fields, then the kept unknown keys."""
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.name != "extra"}
        out = {key: value for key, value in out.items() if value is not None}
        out.update(copy.deepcopy(self.extra))
        return out

    def differences(self, other: MetaRecord) -> list[Difference]:
        """The fields, known or kept, that both records hold and that differ, by name.

        The one comparison rule of the pairing checks: fields in :attr:`NEUTRAL` (those that do not
        change what a number means) are skipped, and so is a field only one record holds (a record
        from an older raglab is not a change), unless it is in :attr:`IDENTITY`.
        """
        if type(other) is not type(self):
            raise TypeError(f"{type(self).__name__}.differences: cannot compare with a {type(other).__name__}")
        ours, theirs = self._compared(), other._compared()
        keys = (set(ours) & set(theirs)) | ((set(ours) | set(theirs)) & self.IDENTITY)
        return [Difference(key, ours.get(key), theirs.get(key)) for key in sorted(keys, key=str)
                if ours.get(key) != theirs.get(key)]

    def _compared(self) -> dict[Any, Any]:
        return {key: value for key, value in self.to_dict().items() if key not in self.NEUTRAL}


@dataclass(frozen=True, kw_only=True)
class RetrievalConventions(MetaRecord):
    """``attrs["raglab"]["retrieval"]``: the conventions retrieval metrics were scored under.

    Which depths were scored (``k``, ``columns``) does not change what recall@5 means; the rest
    does. A span rule is compared by what decides its numbers (rule, min_overlap, unit), not by its
    descriptions, which may be reworded between releases.

    Examples
    --------
    >>> a = RetrievalConventions.from_dict({"gain": "exponential", "k": [5]})
    >>> b = RetrievalConventions.from_dict({"gain": "linear", "k": [1, 5]})
    >>> [str(d) for d in a.differences(b)]
    ["gain: 'exponential' vs 'linear'"]
    """

    SECTION: ClassVar[str] = "retrieval"
    NEUTRAL: ClassVar[frozenset[str]] = frozenset({"k", "columns"})

    k: list[int] | None = _field(_is_depths)
    columns: list[str] | None = _field(_is_texts)
    k_counts: str | None = _field(_is_text)
    gain: str | None = _field(_is_text)
    relevance: str | None = _field(_is_text)
    no_relevant: str | None = _field(_is_text)
    unanswerable: str | None = _field(_is_text)
    nothing_retrieved: str | None = _field(_is_text)
    precision: str | None = _field(_is_text)
    gold_unit: str | None = _field(_is_text)
    retrieved_column: str | None = _field(_is_text)
    duplicates: str | None = _field(_is_text)
    span_rule: dict[str, Any] | None = _field(_is_mapping)

    def _compared(self) -> dict[Any, Any]:
        def deciding(value: Any) -> Any:
            if isinstance(value, Mapping) and "rule" in value:
                return {key: value.get(key) for key in ("rule", "min_overlap", "unit")}
            return value

        return {key: deciding(value) for key, value in super()._compared().items()}


@dataclass(frozen=True, kw_only=True)
class RetrievalCounts(MetaRecord):
    """``attrs["raglab"]["retrieval_counts"]``: how many questions each retrieval convention touched."""

    SECTION: ClassVar[str] = "retrieval_counts"

    n_questions: int | None = _field(_is_count)
    n_unanswerable: int | None = _field(_is_count)
    n_judged_none_relevant: int | None = _field(_is_count)
    n_nothing_retrieved: int | None = _field(_is_count)
    max_retrieved: int | None = _field(_is_count)


@dataclass(frozen=True, kw_only=True)
class JudgeFingerprint(MetaRecord):
    """``attrs["raglab"]["judge"]``: which judge scored a run (the fingerprint decides).

    The metric list, the repeat noise and the run's statistics (timings, tokens) describe one
    scoring, not the judge, so they are neutral.

    Examples
    --------
    >>> a = JudgeFingerprint.from_dict({"fingerprint": "f1", "model": "m-1", "run": {"seconds": 3}})
    >>> b = JudgeFingerprint.from_dict({"fingerprint": "f2", "model": "m-2", "run": {"seconds": 4}})
    >>> [d.field for d in a.differences(b)]
    ['fingerprint', 'model']
    """

    SECTION: ClassVar[str] = "judge"
    NEUTRAL: ClassVar[frozenset[str]] = frozenset({"metrics", "noise", "run"})
    IDENTITY: ClassVar[frozenset[str]] = frozenset({"fingerprint"})

    fingerprint: str | None = _field(_is_text)
    judge: str | None = _field(_is_text)
    model: str | None = _field(_is_text)
    temperature: float | None = _field(_is_number)
    seed: int | None = _field(_is_number)
    api: str | None = _field(_is_text)
    base_url: str | None = _field(_is_text)
    prompt_version: str | None = _field(_is_label)
    prompt_hashes: dict[str, str] | None = _field(_is_mapping)
    schema_hash: str | None = _field(_is_text)
    claim_splitting: str | None = _field(_is_text)
    verification: str | None = _field(_is_flag)
    max_claims: int | None = _field(_is_count)
    threshold: float | None = _field(_is_number)
    relevance_threshold: float | None = _field(_is_number)
    raglab_version: str | None = _field(_is_text)
    metrics: list[str] | None = _field(_is_texts)
    repeats: int | None = _field(_is_count)
    noise: dict[str, Any] | None = _field(_is_mapping)
    run: dict[str, Any] | None = _field(_is_mapping)


@dataclass(frozen=True, kw_only=True)
class EvalSetStamp(MetaRecord):
    """``attrs["raglab"]["evalset"]``: the frozen eval-set version a run was scored against.

    Only the content hash decides: name and version are labels, ``n``, ``n_missing`` and
    ``units`` describe the run's questions, which pairing checks by id.

    Examples
    --------
    >>> a = EvalSetStamp.from_dict({"name": "qa", "version": "v1", "hash": "aaa"})
    >>> [str(d) for d in a.differences(EvalSetStamp.from_dict({"name": "qa", "version": "v2", "hash": "bbb"}))]
    ["hash: 'aaa' vs 'bbb'"]
    """

    SECTION: ClassVar[str] = "evalset"
    NEUTRAL: ClassVar[frozenset[str]] = frozenset({"name", "version", "n", "n_missing", "units"})
    IDENTITY: ClassVar[frozenset[str]] = frozenset({"hash"})

    name: str | None = _field(_is_label)
    version: str | None = _field(_is_label)
    hash: str | None = _field(_is_text)
    n: int | None = _field(_is_count)
    n_missing: int | None = _field(_is_count)
    units: str | None = _field(_is_text)


SAMPLING_KINDS = ("judged", "labelled")
SAMPLING_METHODS = ("uniform", "stratified", "neyman", "active")


@dataclass(frozen=True, kw_only=True)
class SamplingDesign(MetaRecord):
    """One entry of ``attrs["raglab"]["sampling"]``: who was judged or labelled, with what probability.

    ``kind`` says which rows the design chose (``"judged"`` or ``"labelled"``), ``method`` how
    (``"uniform"``, ``"stratified"``, ``"neyman"``, ``"active"``), ``n`` of ``population`` rows;
    ``strata`` names the stratum column and ``inclusion_probability`` the column holding each row's
    probability of being chosen. The seed is neutral: another draw of the same design estimates the
    same quantity. The section maps each kind to its design, so a table can carry both.

    Examples
    --------
    >>> design = SamplingDesign.from_dict({"kind": "labelled", "method": "stratified", "n": 200,
    ...                                    "population": 5000, "strata": "topic", "seed": 0})
    >>> design.method, design.to_dict()["population"]
    ('stratified', 5000)
    >>> SamplingDesign.from_dict({"kind": "labelled", "method": "random", "n": 2})
    Traceback (most recent call last):
    ...
    ValueError: attrs['raglab']['sampling']['method'] is 'random'; choose one of ('uniform', 'stratified', 'neyman', 'active')
    """

    SECTION: ClassVar[str] = "sampling"
    NEUTRAL: ClassVar[frozenset[str]] = frozenset({"seed"})

    kind: str | None = _field(_is_text)
    method: str | None = _field(_is_text)
    n: int | None = _field(_is_count)
    population: int | None = _field(_is_count)
    strata: str | None = _field(_is_text)
    inclusion_probability: str | None = _field(_is_text)
    seed: int | None = _field(_is_count)

    def _check(self, where: str) -> None:
        for name, choices in (("kind", SAMPLING_KINDS), ("method", SAMPLING_METHODS)):
            value = getattr(self, name)
            if value is not None and value not in choices:
                raise ValueError(f"{where}[{name!r}] is {value!r}; choose one of {choices}")
        if self.n is not None and self.population is not None and self.n > self.population:
            raise ValueError(f"{where}: n={self.n} rows chosen out of a population of {self.population}; n must be "
                             "at most the population")
        if self.method == "stratified" and self.strata is None:
            raise ValueError(f"{where}: a stratified design needs 'strata', the column naming each row's stratum")


#: The record of each known section of ``attrs["raglab"]``.
RECORDS: dict[str, type[MetaRecord]] = {
    cls.SECTION: cls for cls in (RetrievalConventions, RetrievalCounts, JudgeFingerprint, EvalSetStamp)
}


def check_section(section: str, values: Mapping[str, Any], *, where: str | None = None) -> None:
    """Raise TypeError/ValueError naming the key when ``values`` does not fit the known ``section``.

    Unknown sections are not checked (beyond being JSON, by :func:`set_meta`). The ``sampling``
    section maps each kind (``"judged"``, ``"labelled"``) to a :class:`SamplingDesign`.

    Examples
    --------
    >>> check_section("retrieval", {"k": [5], "gain": "linear"})
    >>> check_section("retrieval", {"k": "five"})
    Traceback (most recent call last):
    ...
    TypeError: attrs['raglab']['retrieval']['k'] must be a list of positive ints, got str 'five'
    """
    where = where or f"attrs[{ATTRS_KEY!r}][{section!r}]"
    if section == SamplingDesign.SECTION:
        if not isinstance(values, Mapping):
            raise TypeError(f"{where} must be a dict of designs by kind, got {type(values).__name__}")
        for kind, design in values.items():
            if kind not in SAMPLING_KINDS:
                raise ValueError(f"{where} has the key {kind!r}; a design is recorded under its kind, one of "
                                 f"{SAMPLING_KINDS}")
            record = SamplingDesign.from_dict(design, where=f"{where}[{kind!r}]")
            if record.kind not in (None, kind):
                raise ValueError(f"{where}[{kind!r}]['kind'] is {record.kind!r}; it must be {kind!r}, its key")
        return
    record_type = RECORDS.get(section)
    if record_type is not None:
        record_type.from_dict(values, where=where)


def record_of(df: pd.DataFrame, record_type: type[R]) -> R | None:
    """The typed record of ``record_type``'s section of ``df``, or None when there is none.

    Examples
    --------
    >>> frame = pd.DataFrame({"x": [1]})
    >>> frame.attrs["raglab"] = {"evalset": {"name": "qa", "version": "v1", "hash": "aaa"}}
    >>> record_of(frame, EvalSetStamp).version
    'v1'
    """
    stored = df.attrs.get(ATTRS_KEY, {})
    section = stored.get(record_type.SECTION) if isinstance(stored, Mapping) else None
    return record_type.from_dict(section) if isinstance(section, Mapping) else None


def sampling_design_of(df: pd.DataFrame, kind: str) -> SamplingDesign | None:
    """The sampling design of the ``kind`` rows (``"judged"`` or ``"labelled"``) of ``df``, or None.

    Examples
    --------
    >>> frame = update_meta(pd.DataFrame({"x": [1]}), "sampling",
    ...                     {"labelled": {"kind": "labelled", "method": "uniform", "n": 1, "population": 1}})
    >>> sampling_design_of(frame, "labelled").method
    'uniform'
    """
    if kind not in SAMPLING_KINDS:
        raise ValueError(f"sampling_design_of: kind must be one of {SAMPLING_KINDS}, got {kind!r}")
    stored = get_meta(df).get(SamplingDesign.SECTION)
    design = stored.get(kind) if isinstance(stored, Mapping) else None
    where = f"attrs[{ATTRS_KEY!r}][{SamplingDesign.SECTION!r}][{kind!r}]"
    return SamplingDesign.from_dict(design, where=where) if isinstance(design, Mapping) else None
