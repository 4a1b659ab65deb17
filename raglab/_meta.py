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
import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

ATTRS_KEY = "raglab"


def get_meta(df: pd.DataFrame) -> dict[str, Any]:
    """Return a deep copy of the raglab metadata of ``df`` (an empty dict when there is none)."""
    meta = df.attrs.get(ATTRS_KEY, {})
    return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else {}


def set_meta(df: pd.DataFrame, meta: Mapping[str, Any]) -> pd.DataFrame:
    """Store ``meta`` (validated as JSON-serialisable) on ``df`` in place and return ``df``."""
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"df.attrs['{ATTRS_KEY}'] must be JSON-serialisable so it survives files: {exc}") from exc
    df.attrs[ATTRS_KEY] = copy.deepcopy(dict(meta))
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
