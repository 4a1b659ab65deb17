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
    }
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

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
    """Merge ``values`` into ``attrs["raglab"][section]`` of ``df`` in place and return ``df``."""
    meta = get_meta(df)
    current = meta.get(section)
    merged = dict(current) if isinstance(current, Mapping) else {}
    merged.update(values)
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
