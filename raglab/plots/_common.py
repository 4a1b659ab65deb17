"""Shared pieces of raglab's plots: the palette and the table readers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from raglab._registry import metric_info
from raglab._results import DECISION_COLOURS

if TYPE_CHECKING:  # pragma: no cover
    pass

_DECISION_COLOURS = DECISION_COLOURS  # one palette for tables and plots
_PLAIN = "#1f4e79"
_NEEDED = ("metric", "slice", "diff", "low", "high")


def _margins(table: pd.DataFrame, margin: float | Mapping[str, float] | None) -> dict[str, float]:
    metrics = list(dict.fromkeys(table["metric"]))
    if margin is None:
        if "margin" not in table.columns:
            return {}
        return {m: float(v) for m, v in table.groupby("metric", sort=False)["margin"].first().items()}
    if isinstance(margin, Mapping):
        unknown = sorted(set(margin) - set(metrics))
        if unknown:
            raise ValueError(f"`margin` names metrics that are not in the table: {unknown}; the table has {metrics}")
        return {m: float(margin[m]) for m in metrics if m in margin}
    return dict.fromkeys(metrics, float(margin))


def _directions(table: pd.DataFrame) -> dict[str, bool]:
    if "higher_is_better" in table.columns:
        return {m: bool(v) for m, v in table.groupby("metric", sort=False)["higher_is_better"].first().items()}
    return {m: metric_info(str(m)).higher_is_better for m in dict.fromkeys(table["metric"])}


