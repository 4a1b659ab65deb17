"""The interval forest of a compare or gate table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._validation import check_option

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

from raglab.plots._common import _DECISION_COLOURS, _NEEDED, _PLAIN, _directions, _margins


def forest(
    table: pd.DataFrame,
    *,
    ax: Axes | None = None,
    margin: float | Mapping[str, float] | None = None,
    scale: str = "auto",
    **kwargs: Any,
) -> Axes:
    """Interval forest of a compare or gate table: one row per metric x slice.

    Each row shows the estimated difference (a point) and its interval (a line), with a reference
    line at zero and, per metric, a dashed line at the non-inferiority margin (``-margin``, or
    ``+margin`` for a lower-is-better metric). Rows are coloured by the gate decision when the table
    has one (pass green, review amber, block red). Rows without an interval keep their label.

    Metrics in different units (a rate and a latency in ms) do not share an axis well, so with
    ``scale="margin"`` each row is drawn as *improvement / margin*: the sign is flipped for
    lower-is-better metrics, so right is always better, zero is no change and every margin sits at
    -1 (a row passes when its interval stays right of -1).

    Parameters
    ----------
    table : DataFrame
        The output of ``rows.rag.compare`` / ``raglab.stats.compare`` or a gate's ``.table``
        (columns ``metric, slice, diff, low, high``; ``margin``, ``higher_is_better`` and
        ``decision`` are used when present).
    ax : matplotlib Axes, optional
        Where to draw (default: the current Axes).
    margin : float or dict, optional
        Margins to mark (one for all metrics or ``{metric: margin}``); default: the table's
        ``margin`` column, if any.
    scale : {"auto", "raw", "margin"}
        ``"raw"``: differences in each metric's units. ``"margin"``: improvement / margin (needs a
        positive margin for every metric). ``"auto"``: ``"margin"`` when the table holds several
        metrics that all have a positive margin, otherwise ``"raw"``.
    **kwargs
        Passed to ``Axes.scatter`` for the points (e.g. ``s=``, ``marker=``).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from raglab.stats import compare
    >>> from raglab.plots import forest
    >>> table = compare({"hit@5": [1, 0, 1, 1] * 25}, {"hit@5": [1, 1, 1, 1] * 25}, n_resamples=500)
    >>> ax = forest(table, margin=0.02)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['hit@5 [overall]']
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.forest")
    Line2D = import_optional("matplotlib.lines", extra="plots", purpose="raglab.plots.forest").Line2D

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"forest needs a compare or gate table (a DataFrame), got {type(table).__name__}")
    missing = [c for c in _NEEDED if c not in table.columns]
    if missing:
        raise ValueError(
            f"forest needs a compare or gate table with columns {list(_NEEDED)}; missing {missing} "
            f"(found {[str(c) for c in table.columns]}). Make one with rows.rag.compare(cand, ...)."
        )
    if ax is None:
        ax = plt.gca()
    if table.empty:
        return ax

    check_option("scale", scale, ["auto", "raw", "margin"])
    metrics = table["metric"].astype(str).to_numpy()
    # One row per table row, top to bottom, with a small gap between metrics.
    gaps = np.concatenate([[0.0], (metrics[1:] != metrics[:-1]).astype(float) * 0.6])
    y = -(np.arange(len(table)) + np.cumsum(gaps))
    diff, low, high = (table[c].to_numpy(dtype=float) for c in ("diff", "low", "high"))
    if "decision" in table.columns:
        colours = [_DECISION_COLOURS.get(str(d), _PLAIN) for d in table["decision"]]
    else:
        colours = [_PLAIN] * len(table)

    margins, directions = _margins(table, margin), _directions(table)
    names = list(dict.fromkeys(metrics))
    scalable = all(np.isfinite(margins.get(n, np.nan)) and margins.get(n, 0) > 0 for n in names)
    if scale == "margin" and not scalable:
        missing = [n for n in names if not margins.get(n, 0) > 0]
        raise ValueError(f"scale='margin' needs a positive margin for every metric; none for {missing}")
    relative = scale == "margin" or (scale == "auto" and scalable and len(names) > 1)
    if relative:  # improvement / margin: right is better, every margin at -1
        factor = np.array([(1.0 if directions.get(n, True) else -1.0) / margins[n] for n in metrics])
        diff = diff * factor
        low, high = np.fmin(low * factor, high * factor), np.fmax(low * factor, high * factor)

    ax.axvline(0.0, color="0.25", linewidth=1.0, zorder=1)
    margin_x, margin_lo, margin_hi = [], [], []
    for name in names:
        value = margins.get(name)
        if value is None or value == 0 or not np.isfinite(value):
            continue
        rows = y[metrics == name]
        margin_x.append(-1.0 if relative else (-value if directions.get(name, True) else value))
        margin_lo.append(rows.min() - 0.4)
        margin_hi.append(rows.max() + 0.4)
    if margin_x:
        ax.vlines(margin_x, margin_lo, margin_hi, colors="0.45", linestyles="dashed", linewidth=1.0,
                  zorder=1, gid="raglab-margins", label="margin")
    ax.hlines(y, low, high, colors=colours, linewidth=2.6, zorder=2, gid="raglab-intervals")
    point_style = {"s": 36, "zorder": 3, "edgecolors": "white", "linewidths": 0.8, **kwargs}
    point_style.setdefault("c", colours)
    ax.scatter(diff, y, gid="raglab-estimates", **point_style)

    ax.set_yticks(y)
    ax.set_yticklabels([f"{m} [{s}]" for m, s in zip(metrics, table["slice"].astype(str))])
    ax.set_ylim(y.min() - 0.8, 0.8)
    ax.set_xlabel(
        "improvement / margin (0 = no change, -1 = the margin; right is better)"
        if relative
        else "difference (candidate - baseline)"
    )
    level = table["level"].iloc[0] if "level" in table.columns else None
    if level is not None and np.isfinite(level) and not ax.get_title():
        # The centre title, so that a caller's ax.set_title(...) replaces it instead of overlapping it.
        ax.set_title(f"{level:.0%} paired intervals", fontsize="medium")
    if "decision" in table.columns:
        present = [d for d in _DECISION_COLOURS if d in set(table["decision"])]
        handles = [Line2D([], [], color=_DECISION_COLOURS[d], linewidth=2.6, label=d) for d in present]
        if margin_x:
            handles.append(Line2D([], [], color="0.45", linestyle="dashed", label="margin"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.grid(axis="x", color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    return ax


# ---- judge validation and sizing plots (added by the lead) ----------------------------------------
