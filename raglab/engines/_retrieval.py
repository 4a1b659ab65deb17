"""Retrieval metrics on one partition, for every engine (row-wise: each partition is scored where it lies)."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

from raglab.engines._frames import in_partition

__all__ = ["score_partition"]


def score_partition(part: pd.DataFrame, number: Any, engine: str, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`raglab.retrieval.retrieval` on one partition (or batch); an error names the partition.

    The warning pandas gives when k exceeds the longest retrieved list is not given: a partition's
    longest list is not the table's.
    """
    from raglab.retrieval import retrieval

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is larger than the longest list", category=UserWarning)
            return retrieval(part, **options)
    except (ValueError, TypeError, KeyError) as exc:
        raise in_partition(exc, number, engine) from None
