"""Shared pieces of raglab's plots: the palette and the table readers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from raglab._registry import metric_info
from raglab.stats._gate import _check_margin
from raglab.stats.results import ESTIMATE, ROW_KEY

_PLAIN = "#1f4e79"
_NEEDED = (*ROW_KEY, *ESTIMATE)  # as raglab.stats.results declares the comparison and gate tables
_SHARED_UNITS = "scores in [0, 1]"  # the panel of the bounded metrics (rates, recall, ndcg...)
_MINUS = "\N{MINUS SIGN}"  # as wide as "+" in matplotlib's default font, so the numbers line up


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
        # the gate's own check: a negative margin would be drawn on the good side, a NaN one not at all
        return {m: _check_margin(margin[m], str(m)) for m in metrics if m in margin}
    return {m: _check_margin(margin, str(m)) for m in metrics}


def _directions(table: pd.DataFrame) -> dict[str, bool]:
    """Each metric's direction; a metric without one (``declined``) reads True here, so callers that
    label directions must check :func:`_undirected` first."""
    if "higher_is_better" in table.columns:
        return {m: bool(v) for m, v in table.groupby("metric", sort=False)["higher_is_better"].first().items()}
    return {m: metric_info(str(m)).higher_is_better is not False for m in dict.fromkeys(table["metric"])}


def _undirected(table: pd.DataFrame) -> set[str]:
    """Metrics with no better direction (``declined``): none when the table states every direction."""
    if "higher_is_better" in table.columns:
        return set()
    return {str(m) for m in dict.fromkeys(table["metric"]) if not metric_info(str(m)).has_direction}


def _unit_groups(table: pd.DataFrame, panels: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each metric's unit group (one panel per group), in table order.

    Metrics the registry knows as bounded in [0, 1] (recall, hit, ndcg, em, faithfulness...) share
    :data:`_SHARED_UNITS`, and so do unknown metrics whose name has no lower-is-better word and whose
    baseline and candidate means lie in [0, 1]. Every other metric (latency, cost, a token count)
    is a group of its own. ``panels={metric: group}`` overrides the rule for the metrics it names.
    """
    metrics = [str(m) for m in dict.fromkeys(table["metric"])]
    panels = dict(panels or {})
    unknown = sorted(set(map(str, panels)) - set(metrics))
    if unknown:
        raise ValueError(f"`panels` names metrics that are not in the table: {unknown}; the table has {metrics}")
    groups = {}
    for name in metrics:
        if name in panels:
            groups[name] = str(panels[name])
            continue
        info = metric_info(name)
        if info.known:
            groups[name] = _SHARED_UNITS if info.bounded else name
            continue
        rows = table[table["metric"].astype(str) == name]
        parts = [rows[c] for c in ("base", "cand") if c in rows.columns]  # a hand-made table may have neither
        means = pd.to_numeric(pd.concat(parts), errors="coerce").dropna() if parts else pd.Series(dtype=float)
        in_unit = len(means) > 0 and bool(((means >= 0) & (means <= 1)).all())
        groups[name] = _SHARED_UNITS if in_unit and info.higher_is_better is True else name
    return groups


def _decimals(widths: Any) -> int:
    """Decimals that show an interval of this (median) width to about two significant digits."""
    widths = np.asarray(widths, dtype=float)
    widths = widths[np.isfinite(widths) & (widths > 0)]
    if not len(widths):
        return 3
    return int(min(4, max(0, 1 - math.floor(math.log10(float(np.median(widths)))))))


def _signed(value: float, decimals: int) -> str:
    """``+0.016`` / ``−0.011`` / ``+2,371`` (a true minus sign, as matplotlib's axes use).

    >>> _signed(0.0164, 3), _signed(-2371.4, 0), _signed(12345.678, 1)
    ('+0.016', '−2,371', '+12,345.7')
    """
    return f"{value:+,.{decimals}f}".replace("-", _MINUS)


def _luminance(colour: Any) -> float:
    """WCAG relative luminance of a colour (0 black to 1 white)."""
    from matplotlib.colors import to_rgb

    linear = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in to_rgb(colour)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: Any, b: Any) -> float:
    """WCAG contrast ratio of two colours (1 to 21; 4.5 is the bar for normal text).

    >>> round(_contrast("white", "black"), 1), round(_contrast("#1a7f37", "white"), 2)
    (21.0, 5.08)
    """
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _readable(colour: Any, background: Any, ratio: float = 4.5) -> str:
    """``colour`` (as hex), blended toward white on a dark ``background`` (toward black on a light one)
    just enough for a WCAG contrast of ``ratio``; unchanged when it already has it.

    >>> _readable("#1a7f37", "white"), _readable("#cf222e", "black")
    ('#1a7f37', '#d53d47')
    """
    from matplotlib.colors import to_hex, to_rgb

    if _contrast(colour, background) >= ratio:
        return to_hex(colour)
    rgb = np.array(to_rgb(colour))
    target = np.ones(3) if _luminance(background) < 0.18 else np.zeros(3)  # 0.18: equal contrast with both
    for step in range(1, 101):
        mixed = to_hex(rgb + (target - rgb) * step / 100)
        if _contrast(mixed, background) >= ratio:
            return mixed
    return to_hex(target)


def _background(ax: Any, where: str = "figure") -> Any:
    """The colour behind an Axes' text: the figure's (text outside the axes) or the axes' own, falling back
    to the other one, then white, when transparent."""
    from matplotlib.colors import to_rgba

    layers = [ax.figure.get_facecolor(), ax.get_facecolor()]
    for colour in layers if where == "figure" else layers[::-1]:
        if to_rgba(colour)[3] > 0:
            return to_rgba(colour)[:3]
    return (1.0, 1.0, 1.0)


def _interval_text(diff: float, low: float, high: float, decimals: int) -> str:
    """The right-hand column of a forest row: ``diff [low, high]`` or ``diff (no interval)``."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{_signed(diff, decimals)} (no interval)" if np.isfinite(diff) else "no interval"
    return f"{_signed(diff, decimals)} [{_signed(low, decimals)}, {_signed(high, decimals)}]"


def _holm_marks(table: pd.DataFrame, level: float, gate_adjust: Any = "unknown") -> tuple[np.ndarray, str]:
    """Which rows survive a Holm adjustment (marked with a dagger) and the footnote that says so.

    A gate table with ``p_worse_adjusted`` (``adjust="holm"``): its blocks, which needed it. A compare
    table with ``p_adjusted``: rows whose adjusted two-sided p-value is below ``1 - level``. A NaN
    ``level`` (the table gives none) leaves the threshold out of a gate's note and marks no compare row.
    """
    marks = np.zeros(len(table), dtype=bool)
    alpha = 1.0 - level
    known = bool(np.isfinite(alpha))
    if "decision" in table.columns:
        holm = "p_worse_adjusted" in table.columns if gate_adjust == "unknown" else gate_adjust == "holm"
        if not holm:
            return marks, "Blocks are per row: no multiplicity adjustment (adjust=None)."
        family = int(np.isfinite(pd.to_numeric(table.get("p_worse"), errors="coerce")).sum())
        marks = (table["decision"].astype(str) == "block").to_numpy()
        needed = f" (adjusted one-sided p < {alpha / 2:g}" if known else ""
        if not marks.any():
            return marks, f"No row blocks after Holm over {family} rows{needed + ' needed)' if needed else ''}."
        return marks, f"\N{DAGGER} blocks after Holm over {family} rows{needed + ')' if needed else ''}."
    if "p_adjusted" in table.columns:
        if not known:
            return marks, "Holm-adjusted p-values not marked: the table gives no interval level to test them at."
        adjusted = pd.to_numeric(table["p_adjusted"], errors="coerce").to_numpy(dtype=float)
        family = int(np.isfinite(pd.to_numeric(table["p_value"], errors="coerce")).sum())
        marks = np.isfinite(adjusted) & (adjusted < alpha)
        return marks, f"\N{DAGGER} significant after Holm over {family} rows (adjusted p < {alpha:g})."
    return marks, ""
