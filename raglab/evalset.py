"""Frozen, versioned eval sets.

An eval set is the fixed list of questions with their gold that runs are scored against. Edit it
and successive comparisons mix systems with datasets; so raglab freezes it: each version is written
once, with a manifest of content hashes, and loading refuses a version whose rows changed. New
questions (say, mined from production failures) go into a new version made by :meth:`EvalSet.extend`.

Layout on disk::

    path/
      v1/rows.jsonl        questions and gold (raglab JSONL)
      v1/rows.jsonl.raglab.json   its dtypes and attrs (covered by the manifest's ``sidecar_hash``)
      v1/manifest.json     version, sequence, row count, per-row and whole-set hashes, created, raglab version
      v2/...

Versions are ordered by their ``sequence`` (1 for a frozen set, the parent's + 1 for an
extension); two versions with the same sequence (two extensions of one parent) make "the latest"
ambiguous, so :meth:`EvalSet.load` then asks for ``version=``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab._files import user_path, write_file
from raglab._meta import get_meta, set_meta
from raglab._rowtable import (
    check_column,
    check_unique_as_text,
    check_unique_ids,
    resolve_column,
    validate_rows,
)
from raglab.io import _read_rows, sidecar_path, write_rows

__all__ = ["EvalSet", "EvalSetTamperedError", "row_hashes", "set_hash"]

FROZEN_ROLES = ("question_id", "question", "gold", "gold_spans", "reference")
_ROWS_FILE = "rows.jsonl"
_MANIFEST_FILE = "manifest.json"


class EvalSetTamperedError(ValueError):
    """A frozen eval-set version no longer matches its manifest."""


def _canonical(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_canonical(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value != value:
        return None  # NaN and None are both "missing" for the purpose of content identity
    if value is pd.NA or value is pd.NaT:
        return None  # the missing values of nullable and datetime columns
    if isinstance(value, (pd.Timestamp, _dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else pd.Timestamp(value).isoformat()
    return value


def row_hashes(df: pd.DataFrame, columns: Iterable[str], question_id: str = "question_id") -> dict[str, str]:
    """SHA-256 of each row's canonical JSON over ``columns``, keyed by question id (as text).

    Dict keys are sorted and NaN counts as missing, so the hash changes only when content does.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"question_id": ["q1"], "gold": [{"d2": 1, "d1": 3}]})
    >>> same = pd.DataFrame({"question_id": ["q1"], "gold": [{"d1": 3, "d2": 1}]})
    >>> row_hashes(rows, ["question_id", "gold"]) == row_hashes(same, ["question_id", "gold"])
    True
    """
    columns = list(columns)
    hashes: dict[str, str] = {}
    cells = [df[c].array for c in columns]
    for qid, *values in zip(df[question_id].array, *cells):
        record = dict(zip(columns, (_canonical(v) for v in values)))
        try:
            text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            bad = next((c for c, v in record.items() if _unhashable(v)), "?")
            raise RowTableError(
                f"row_hashes: column {bad!r} (question {str(qid)!r}) holds a value with no canonical form to "
                f"hash ({exc}); convert the column to text, numbers or lists first."
            ) from None
        hashes[str(qid)] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashes


def _unhashable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return True
    return False


def set_hash(hashes: Mapping[str, str]) -> str:
    """Hash of a whole set from its per-row hashes: independent of row order.

    Examples
    --------
    >>> set_hash({"q1": "aa", "q2": "bb"}) == set_hash({"q2": "bb", "q1": "aa"})
    True
    """
    digest = hashlib.sha256()
    for qid in sorted(hashes):
        digest.update(f"{qid}\t{hashes[qid]}\n".encode())
    return digest.hexdigest()


# Fields of the manifest covered by its own hash (everything but the hash itself).
_MANIFEST_HASH = "manifest_hash"


def _manifest_hash(manifest: Mapping[str, Any]) -> str:
    record = {k: v for k, v in manifest.items() if k != _MANIFEST_HASH}
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_version(version: Any, caller: str) -> str:
    """A version label is a plain, non-empty directory name: no separators, no '.'/'..', no absolute path."""
    if isinstance(version, bool) or not isinstance(version, (str, int, np.integer)):
        raise TypeError(f"{caller}: `version` must be a str or int such as 'v1', got {type(version).__name__}")
    text = str(version)
    if (not text.strip() or text in (".", "..") or any(sep in text for sep in ("/", "\\", "\0"))
            or text != text.strip() or Path(text).is_absolute() or text.startswith(".")):
        raise ValueError(
            f"{caller}: version {text!r} is not a plain name; use a non-empty name without path separators, "
            "leading dots or surrounding spaces, e.g. 'v1' or '2024-06'."
        )
    return text


def _sidecar_hash(rows_path: Path) -> str | None:
    """SHA-256 of the rows file's sidecar (dtypes and attrs), canonical JSON; None when there is none."""
    sidecar = sidecar_path(rows_path)
    if not sidecar.is_file():
        return None
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "unreadable"
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_manifest(manifest_path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise EvalSetTamperedError(
            f"{str(manifest_path)!r} is not a valid eval-set manifest ({type(exc).__name__}: {exc}); restore it "
            "from version control."
        ) from None
    required = ("name", "version", "n_rows", "question_id", "columns", "set_hash", "row_hashes")
    if not isinstance(manifest, dict) or any(key not in manifest for key in required):
        missing = [key for key in required if not isinstance(manifest, dict) or key not in manifest]
        raise EvalSetTamperedError(
            f"{str(manifest_path)!r} is not a valid eval-set manifest: it lacks {missing}; restore it from "
            "version control."
        )
    return manifest


def _raglab_version() -> str:
    from raglab._version import __version__

    return __version__


def _next_version(version: str) -> str:
    match = re.search(r"(\d+)$", version)
    if not match:
        raise ValueError(f"cannot guess the version after {version!r}; pass version='...' to extend()")
    number = match.group(1)
    return version[: match.start()] + str(int(number) + 1).zfill(len(number))


def _frozen_columns(
    df: pd.DataFrame, caller: str, columns: Iterable[str] | None, question_id: str, units: str | None
) -> tuple[str, list[str]]:
    """The question-id column and the columns to freeze (roles that exist, ``columns``, ``units``), checked."""
    resolved = validate_rows(df, caller=caller, columns={"question_id": question_id})
    extra = list(columns or [])
    if units is not None:
        if not isinstance(units, str):
            raise TypeError(f"{caller}: `units` must name the cluster column (a str), got {units!r}")
        resolve_column(df, units, units, caller=caller)
        missing = np.flatnonzero(df[units].isna().to_numpy())
        if missing.size:
            raise RowTableError(
                f"{caller}: cluster column {units!r} must name a cluster for every question; rows "
                f"{missing[:5].tolist()} have none (use the question id for a question that is its own cluster)."
            )
        if units not in extra:
            extra.append(units)
    for column in extra:
        resolve_column(df, column, column, caller=caller)
    frozen = [resolved[r] for r in FROZEN_ROLES if r in resolved]
    frozen += [c for c in extra if c not in frozen]
    check_unique_as_text(df, resolved["question_id"], caller=caller)
    return resolved["question_id"], frozen


def _sequenced_versions(root: Path) -> list[tuple[int, str]]:
    """(sequence, version) of every version under ``root`` that has a manifest."""
    found = []
    for manifest_path in root.glob(f"*/{_MANIFEST_FILE}"):
        manifest = _read_manifest(manifest_path)
        found.append((manifest.get("sequence", 0), str(manifest["version"])))
    return found


def _exists_error(caller: str, version: str, target: Path) -> FileExistsError:
    return FileExistsError(
        f"{caller}: version {version!r} already exists at {str(target)!r}; frozen versions are never "
        "overwritten. Use EvalSet.load(...).extend(new_rows) to make the next version."
    )


def _write_version(target: Path, rows: pd.DataFrame, manifest: dict[str, Any]) -> None:
    """Write the rows, then the manifest (hashed, last and whole) into the new, empty ``target``.

    On any failure the directory is removed again: a version without a manifest must not linger.
    """
    try:
        write_rows(rows, target / _ROWS_FILE)
        # the sidecar's dtypes and attrs are part of the version: an edit to them is refused on loading
        manifest["sidecar_hash"] = _sidecar_hash(target / _ROWS_FILE)
        manifest[_MANIFEST_HASH] = _manifest_hash(manifest)
        text = json.dumps(manifest, indent=1, ensure_ascii=False)
        # the manifest comes last, whole: a version without one is invisible to versions() and load()
        write_file(target / _MANIFEST_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    except BaseException:
        for child in target.iterdir():
            child.unlink()
        target.rmdir()
        raise


class EvalSet:
    """A frozen version of an eval set: questions and gold, verified against their hashes.

    Make one with :meth:`freeze`, open one with :meth:`load`, grow it with :meth:`extend`, and
    :meth:`stamp` runs with it so that comparisons can refuse runs from different versions.

    Examples
    --------
    >>> import pandas as pd, raglab, tempfile
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "gold": [["d1"], ["d4", "d5"]]})
    >>> root = tempfile.mkdtemp()
    >>> es = raglab.EvalSet.freeze(rows, root, version="v1")
    >>> es.version, len(es)
    ('v1', 2)
    >>> es2 = es.extend(pd.DataFrame({"question_id": ["q3"], "gold": [["d9"]]}))
    >>> es2.version, es2.added
    ('v2', ['q3'])
    >>> raglab.EvalSet.load(root).version
    'v2'
    """

    def __init__(self, path: Path, manifest: dict[str, Any], rows: pd.DataFrame) -> None:
        self.path = path
        self.manifest = manifest
        self._rows = rows

    # ---- properties -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The eval set's name (by default its directory's name)."""
        return str(self.manifest["name"])

    @property
    def version(self) -> str:
        """This version's label, e.g. ``"v2"``."""
        return str(self.manifest["version"])

    @property
    def hash(self) -> str:
        """The whole set's content hash (:func:`set_hash` of the per-row hashes): what comparisons check."""
        return str(self.manifest["set_hash"])

    @property
    def added(self) -> list[str]:
        """Question ids this version added to its parent (all of them for a first version)."""
        return list(self.manifest.get("added", []))

    @property
    def rows(self) -> pd.DataFrame:
        """A copy of the frozen rows, stamped with this version."""
        out = self._rows.copy()
        set_meta(out, {**get_meta(out), "evalset": self.stamp_record()})
        return out

    @property
    def columns(self) -> list[str]:
        """The frozen columns, question id first."""
        return list(self.manifest["columns"])

    def __len__(self) -> int:
        return int(self.manifest["n_rows"])

    def __repr__(self) -> str:
        parent = self.manifest.get("parent")
        grown = f", {len(self.added)} added to {parent['version']}" if parent else ""
        return (
            f"EvalSet({self.name!r}, version={self.version!r}: {len(self)} questions{grown}; "
            f"hash {self.hash[:12]}; columns {self.columns})"
        )

    @property
    def units(self) -> str | None:
        """The cluster column (questions nested in documents or conversations), or None."""
        return self.manifest.get("units")

    def stamp_record(self) -> dict[str, Any]:
        """What a run scored against this version carries in ``attrs['raglab']['evalset']``.

        With a cluster column, ``units`` names it: ``summary``, ``compare``, ``gate`` and
        ``agreement`` then resample whole clusters unless told otherwise.
        """
        record = {"name": self.name, "version": self.version, "hash": self.hash, "n": len(self)}
        if self.units is not None:
            record["units"] = self.units
        return record

    # ---- making and opening -----------------------------------------------------------------------
    @classmethod
    def freeze(
        cls,
        df: pd.DataFrame,
        path: str | Path,
        *,
        version: str | int,
        name: str | None = None,
        columns: Iterable[str] | None = None,
        question_id: str = "question_id",
        units: str | None = None,
    ) -> EvalSet:
        """Write ``df``'s questions and gold as version ``version`` of the eval set at ``path``.

        Parameters
        ----------
        df : DataFrame
            One row per question. The frozen columns are those of ``question_id``, ``question``,
            ``gold``, ``gold_spans`` and ``reference`` that exist, plus ``columns``.
        path : str or Path
            The eval set's directory (created if needed); the version goes in ``path/<version>/``.
        version : str or int
            Version label, e.g. ``"v1"``. An existing version is never overwritten.
        name : str, optional
            Defaults to the directory name.
        columns : iterable of str, optional
            Extra columns to freeze, e.g. slice labels such as ``"qtype"``.
        units : str, optional
            The cluster column when questions are nested in documents or conversations (e.g.
            ``"doc_id"``, ``"conversation_id"``). It is frozen and recorded; stamped runs carry it,
            and ``summary``, ``compare``, ``gate`` and ``agreement`` resample whole clusters by
            default (pass ``units=False`` to one of them to treat questions as independent).

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "gold": [["d1"], ["d1"], ["d2"]],
        ...                      "conversation_id": ["c1", "c1", "c2"]})
        >>> es = raglab.EvalSet.freeze(rows, tempfile.mkdtemp(), version="v1", units="conversation_id")
        >>> es.units, es.stamp_record()["units"]
        ('conversation_id', 'conversation_id')
        """
        version = _check_version(version, "EvalSet.freeze")
        return cls._write(df, user_path(path), version, name, columns, question_id, parent=None, units=units)

    @classmethod
    def _write(
        cls,
        df: pd.DataFrame,
        root: Path,
        version: str,
        name: str | None,
        columns: Iterable[str] | None,
        question_id: str,
        parent: EvalSet | None,
        units: str | None = None,
    ) -> EvalSet:
        method = "EvalSet.freeze" if parent is None else "EvalSet.extend"
        qid, frozen = _frozen_columns(df, method, columns, question_id, units)
        if len(df) == 0:  # a frozen version with no questions scores every run as perfect on nothing
            raise RowTableError(f"{method}: the frame has no rows; an eval set version needs at least one question "
                                f"(version {version!r} was not written).")
        target = root / version
        if target.exists():
            raise _exists_error(method, version, target)
        rows = df[frozen].reset_index(drop=True).copy()
        rows.attrs = {}
        hashes = row_hashes(rows, frozen, qid)
        manifest = {
            "name": name or (parent.name if parent else root.resolve().name),
            "version": version,
            "sequence": (parent.manifest["sequence"] + 1) if parent else 1,
            "n_rows": len(rows),
            "question_id": qid,
            "columns": frozen,
            "set_hash": set_hash(hashes),
            "row_hashes": hashes,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "raglab_version": _raglab_version(),
            "parent": {"version": parent.version, "hash": parent.hash} if parent else None,
            "added": ([str(q) for q in rows[qid]] if parent is None
                      else [q for q in hashes if q not in parent.manifest["row_hashes"]]),
        }
        if units is not None:
            manifest["units"] = units
        root.mkdir(parents=True, exist_ok=True)
        try:
            target.mkdir()  # atomic: of two writers of one version, exactly one gets here
        except FileExistsError:
            raise _exists_error(method, version, target) from None
        _write_version(target, rows, manifest)
        return cls(target, manifest, rows)

    @classmethod
    def versions(cls, path: str | Path) -> list[str]:
        """The versions stored under ``path``, oldest first (by sequence; then by name).

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> root = tempfile.mkdtemp()
        >>> es = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1"], "gold": [["d1"]]}), root, version="v1")
        >>> _ = es.extend(pd.DataFrame({"question_id": ["q2"], "gold": [["d2"]]}))
        >>> raglab.EvalSet.versions(root)
        ['v1', 'v2']
        """
        return [version for _, version in sorted(_sequenced_versions(user_path(path)))]

    @classmethod
    def _latest(cls, root: Path) -> str:
        """The version with the highest sequence; refused when two versions share it (which is latest?)."""
        found = _sequenced_versions(root)
        if not found:
            raise FileNotFoundError(f"no eval-set versions under {str(root)!r} (expected */{_MANIFEST_FILE})")
        top = max(sequence for sequence, _ in found)
        latest = sorted(version for sequence, version in found if sequence == top)
        if len(latest) > 1:
            raise ValueError(
                f"EvalSet.load: versions {latest} under {str(root)!r} are all number {top} in sequence (each "
                "extends the same parent), so none is the latest; choose one with version=..., e.g. "
                f"EvalSet.load({str(root)!r}, version={latest[-1]!r})."
            )
        return latest[0]

    @classmethod
    def load(cls, path: str | Path, version: str | int | None = None) -> EvalSet:
        """Open a version (the latest by default) and verify it against its manifest.

        Raises :class:`EvalSetTamperedError` listing the question ids whose rows changed, were
        added or were removed since the version was frozen, or when the rows' sidecar (their
        dtypes and attrs) was edited. The latest is the version with the highest sequence; when
        two versions share it (two extensions of one parent) a ValueError asks for ``version=``.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> root = tempfile.mkdtemp()
        >>> _ = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1"], "gold": [["d1"]]}), root, version="v1")
        >>> es = raglab.EvalSet.load(root, version="v1")
        >>> es.version, len(es), es.columns
        ('v1', 1, ['question_id', 'gold'])
        """
        root = user_path(path)
        if version is None:
            version = cls._latest(root)
        version = _check_version(version, "EvalSet.load")
        target = root / version
        manifest_path = target / _MANIFEST_FILE
        if not manifest_path.exists():
            raise FileNotFoundError(
                f"no eval-set version {str(version)!r} under {str(root)!r}; versions: {cls.versions(root)}"
            )
        manifest = _read_manifest(manifest_path)
        rows_path = target / _ROWS_FILE
        if not rows_path.exists():
            raise EvalSetTamperedError(f"{str(rows_path)!r} is missing: version {version!r} has a manifest but no rows")
        rows = _read_rows(rows_path, check=False)  # verify() names what changed, row by row
        evalset = cls(target, manifest, rows)
        evalset.verify()
        return evalset

    def verify(self) -> None:
        """Recompute the hashes and raise :class:`EvalSetTamperedError` if anything changed.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> es = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1"], "gold": [["d1"]]}), tempfile.mkdtemp(),
        ...                            version="v1")
        >>> (es.path / "rows.jsonl").write_text('{"question_id": "q1", "gold": ["d9"]}\\n', encoding="utf-8")
        38
        >>> try:
        ...     raglab.EvalSet.load(es.path.parent)
        ... except raglab.EvalSetTamperedError as exc:
        ...     print(str(exc).split(": ", 1)[1][:40])
        1 changed ['q1']. Frozen versions must n
        """
        manifest = self.manifest
        expected: dict[str, str] = manifest["row_hashes"]
        where = f"eval set {self.name!r} version {self.version!r} at {str(self.path)!r}"
        manifest_file = str(self.path / _MANIFEST_FILE)
        if set_hash(expected) != manifest["set_hash"]:
            raise EvalSetTamperedError(f"{where}: the manifest's hashes were edited (set hash does not match).")
        if _MANIFEST_HASH in manifest and _manifest_hash(manifest) != manifest[_MANIFEST_HASH]:
            raise EvalSetTamperedError(
                f"{where}: {manifest_file!r} was edited after freezing (its fields no longer match its hash)."
            )
        qid = manifest["question_id"]
        if list(self._rows.columns) != list(manifest["columns"]):
            raise EvalSetTamperedError(
                f"{where}: columns are {list(self._rows.columns)}, the manifest froze {manifest['columns']}."
            )
        try:
            check_unique_as_text(self._rows, qid, caller=where)
        except RowTableError as exc:  # frozen ids were unique: a repeat means the rows file was edited
            raise EvalSetTamperedError(f"{exc} The rows file was edited after freezing: restore it.") from None
        actual = row_hashes(self._rows, manifest["columns"], qid)
        changed = [q for q in expected if q in actual and actual[q] != expected[q]]
        removed = [q for q in expected if q not in actual]
        added = [q for q in actual if q not in expected]
        if changed or removed or added:
            parts = []
            for label, ids in (("changed", changed), ("removed", removed), ("added", added)):
                if ids:
                    shown = ids[:20]
                    more = f" and {len(ids) - 20} more" if len(ids) > 20 else ""
                    parts.append(f"{len(ids)} {label} {shown}{more}")
            raise EvalSetTamperedError(
                f"{where} was edited after freezing: {'; '.join(parts)}. Frozen versions must not change: "
                "restore the file, or put new questions in a new version with extend()."
            )
        if "sidecar_hash" in manifest and _sidecar_hash(self.path / _ROWS_FILE) != manifest["sidecar_hash"]:
            raise EvalSetTamperedError(
                f"{where}: {str(sidecar_path(self.path / _ROWS_FILE))!r} (the rows' dtypes and attrs) was edited or "
                "removed after freezing; restore it from version control."
            )
        if len(self._rows) != manifest["n_rows"] or len(expected) != manifest["n_rows"]:
            raise EvalSetTamperedError(
                f"{where}: {str(self.path / _ROWS_FILE)!r} holds {len(self._rows)} rows, the manifest froze "
                f"{manifest['n_rows']}."
            )

    # ---- growing ----------------------------------------------------------------------------------
    def extend(self, new_rows: pd.DataFrame, *, version: str | int | None = None) -> EvalSet:
        """Write the next version: this version's rows plus ``new_rows`` (new question ids only).

        Returns the new :class:`EvalSet`; its ``added`` lists the new question ids.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> es = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1"], "gold": [["d1"]]}), tempfile.mkdtemp(),
        ...                            version="v1")
        >>> es2 = es.extend(pd.DataFrame({"question_id": ["q2"], "gold": [["d2"]]}))
        >>> es2.version, es2.added, len(es2)
        ('v2', ['q2'], 2)
        """
        qid = self.manifest["question_id"]
        if qid not in new_rows.columns:
            resolve_column(new_rows, "question_id", qid, caller="EvalSet.extend")
        missing = [c for c in self.columns if c not in new_rows.columns and c != qid]
        if missing:
            raise RowTableError(
                f"EvalSet.extend: new rows need the frozen columns {self.columns}; missing {missing}."
            )
        clash = sorted(set(new_rows[qid].astype(str)) & set(self.manifest["row_hashes"]))
        if clash:
            raise RowTableError(
                f"EvalSet.extend: question ids already in version {self.version!r}: {clash[:10]}"
                f"{' ...' if len(clash) > 10 else ''}. A version is never edited; add questions with new ids."
            )
        if len(new_rows) == 0:
            raise ValueError("EvalSet.extend: no new rows given")
        new_rows = new_rows[self.columns]
        for column in (c for c in new_rows.columns if new_rows[c].dtype != self._rows[c].dtype):
            if pd.api.types.is_object_dtype(self._rows[column].dtype):
                new_rows = new_rows.astype({column: object})
        combined = pd.concat([self._rows, new_rows], ignore_index=True)
        next_version = _check_version(version, "EvalSet.extend") if version is not None else _next_version(self.version)
        extra = [c for c in self.columns if c not in FROZEN_ROLES]
        return type(self)._write(combined, self.path.parent, next_version, self.name, extra, qid, parent=self,
                                 units=self.units)

    # ---- runs -------------------------------------------------------------------------------------
    def stamp(self, run: pd.DataFrame, *, question_id: str = "question_id", allow_missing: bool = False) -> pd.DataFrame:
        """Attach this version to a run: add the frozen columns and record name, version and hash.

        The run's question ids must all be in the eval set. Eval-set questions the run lacks are an
        error (an incomplete run) unless ``allow_missing=True``. Frozen columns the run already has
        (e.g. ``gold``) must equal the eval set's.

        Returns
        -------
        DataFrame
            A copy of ``run`` with the frozen columns and ``attrs["raglab"]["evalset"]``.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile
        >>> es = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1", "q2"], "gold": [["d1"], ["d2"]]}),
        ...                            tempfile.mkdtemp(), version="v1")
        >>> run = es.stamp(pd.DataFrame({"question_id": ["q2", "q1"], "retrieved": [["d2"], ["d5"]]}))
        >>> run["gold"].tolist(), run.attrs["raglab"]["evalset"]["version"]
        ([['d2'], ['d1']], 'v1')
        """
        caller_name = "EvalSet.stamp"
        resolve_column(run, "question_id", question_id, caller=caller_name)
        check_column(run, question_id, "id", caller=caller_name, id_column=None)
        check_unique_ids(run, question_id, caller=caller_name)
        own = self.manifest["question_id"]
        frozen = self._rows.set_index(self._rows[own].astype(str))
        run_ids = run[question_id].astype(str)
        unknown = run_ids[~run_ids.isin(frozen.index)].tolist()
        if unknown:
            raise RowTableError(
                f"{caller_name}: {len(unknown)} run question(s) are not in eval set {self.name!r} "
                f"{self.version!r}: {unknown[:10]}"
            )
        absent = frozen.index[~frozen.index.isin(run_ids)].tolist()
        if absent and not allow_missing:
            raise RowTableError(
                f"{caller_name}: the run lacks {len(absent)} of the {len(self)} eval-set questions, e.g. {absent[:10]}. "
                "An incomplete run biases every mean; re-run them, or pass allow_missing=True."
            )
        out = run.copy()
        aligned = frozen.loc[run_ids.to_numpy()]
        for column in self.columns:
            if column == own:
                continue
            values = aligned[column].reset_index(drop=True)
            if column in out.columns:
                mine = row_hashes(out.reset_index(drop=True), [column], question_id)
                theirs = row_hashes(aligned.reset_index(drop=True).assign(**{question_id: run_ids.to_numpy()}),
                                    [column], question_id)
                differ = [q for q in mine if mine[q] != theirs[q]]
                if differ:
                    raise RowTableError(
                        f"{caller_name}: column {column!r} of the run differs from the eval set for "
                        f"{len(differ)} question(s), e.g. {differ[:10]}. Drop the column to take the eval set's."
                    )
            else:
                out[column] = values.set_axis(out.index).astype(values.dtype)
        meta = get_meta(run)
        meta["evalset"] = {**self.stamp_record(), "n_missing": len(absent)}
        set_meta(out, meta)
        return out
