"""Chunk-boundary plots: where gold falls against chunk edges, and what it costs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab import boundaries as _b
from raglab._optional import import_optional
from raglab._results import DECISION_COLOURS, NEUTRAL_COLOUR
from raglab._rowtable import resolve_column
from raglab._validation import check_option

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

from raglab.plots._common import _PLAIN

_CUT = DECISION_COLOURS["block"]


def _gold_in_chunks(rows: pd.DataFrame, chunks: pd.DataFrame, gold_spans: str | None, method: str) -> pd.DataFrame:
    """One row per gold span (grade > 0): its offsets relative to the chunk holding its first character."""
    df = _b._rows_frame(rows, method)
    table = _b._chunk_table(chunks, method)
    col = resolve_column(df, "gold_spans", gold_spans, caller=method)
    gold = _b._gold_of(df, col, method, None)
    row_of, doc, start, end, inside, _, holder = _b._gold_geometry(table, gold, method, "they count as cut and are not drawn")
    spans = pd.DataFrame({"row": row_of, "doc_id": doc, "start": start, "end": end})
    # The chunk that holds the span's first character and reaches furthest (the one holding it, when
    # one does): offsets in units of that chunk's length, so 0 is its start and 1 its end.
    held = holder >= 0
    c_start = np.where(held, table["start"].to_numpy()[np.maximum(holder, 0)], np.nan)
    c_end = np.where(held, table["end"].to_numpy()[np.maximum(holder, 0)], np.nan)
    length = c_end - c_start
    spans["cut"] = ~inside
    spans["rel_start"] = (start - c_start) / length
    spans["rel_end"] = (end - c_start) / length
    spans["n_questions"] = int(sum(1 for units in gold if units))
    return spans


def boundary_positions(
    rows: pd.DataFrame,
    chunks: pd.DataFrame,
    *,
    ax: Axes | None = None,
    gold_spans: str | None = None,
    **kwargs: Any,
) -> Axes:
    """Where each gold span falls relative to the chunk boundaries: one line per gold span.

    Each gold span (grade > 0) is drawn as a horizontal line in units of the chunk that holds its
    first character (the one that reaches furthest, when chunks overlap): 0 is that chunk's start,
    1 its end (dotted lines). A span that ends right of 1 crosses a boundary; spans that lie inside
    no single chunk (*cut*, as in :func:`raglab.boundaries.boundaries`) are red, the others blue.
    Spans are sorted by where they start in their chunk, so the share cut can be read against the
    start position. The title gives the number of gold spans and questions and the share cut.
    A span whose first character is in no chunk (a gap, or a document the table lacks) counts as
    cut but is not drawn; the title says how many.

    Parameters
    ----------
    rows : DataFrame
        The row table, with ``gold_spans`` (unanswerable questions have none and add nothing).
    chunks : DataFrame
        The chunk table (:mod:`raglab.chunks`).
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure of its own, never the current Axes).
    gold_spans : str, optional
        The gold-span column, if not ``gold_spans``.
    **kwargs
        Passed to ``Axes.hlines`` for the spans (e.g. ``linewidth=``, ``alpha=``).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from raglab import chunks
    >>> from raglab.plots import boundary_positions
    >>> table = chunks.fixed({"d": 400}, size=100)
    >>> rows = pd.DataFrame({"gold_spans": [[{"doc_id": "d", "start": 10, "end": 60}],
    ...                                     [{"doc_id": "d", "start": 180, "end": 230}], []]})
    >>> ax = boundary_positions(rows, table)
    >>> ax.get_title()
    '2 gold spans in 2 questions: 1 cut by a chunk boundary (50%)'
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.boundary_positions")

    spans = _gold_in_chunks(rows, chunks, gold_spans, "raglab.plots.boundary_positions")
    if ax is None:  # its own figure: never draw over another plot
        _, ax = plt.subplots(figsize=(7.0, 4.0 + 0.02 * min(len(spans), 200)), layout="constrained")
    n, n_cut = len(spans), int(spans["cut"].sum())
    n_questions = int(spans["n_questions"].iloc[0]) if n else 0
    drawn = spans[np.isfinite(spans["rel_start"])].sort_values(["rel_start", "rel_end"], kind="stable")
    y = np.arange(len(drawn))[::-1]
    colours = np.where(drawn["cut"], _CUT, _PLAIN)
    style = {"linewidth": float(np.clip(150.0 / max(len(drawn), 1), 0.4, 3.0)), **kwargs}
    style.setdefault("colors", list(colours))
    if len(drawn):
        ax.hlines(y, drawn["rel_start"], drawn["rel_end"], gid="raglab-gold-spans", **style)
    ax.vlines([0.0, 1.0], -0.5, max(len(drawn), 1) - 0.5, colors="0.3", linestyles="dotted",
              linewidth=1.0, gid="raglab-chunk-edges")
    ax.set_xlabel("offset in the chunk holding the span's first character (0 = chunk start, 1 = chunk end)")
    ax.set_ylabel("gold spans, by start in their chunk")
    ax.set_yticks([])
    ax.set_ylim(-0.5 - 0.02 * len(drawn), len(drawn) - 0.5 + 0.02 * len(drawn))
    share = f" ({n_cut / n:.0%})" if n else ""
    title = f"{n} gold spans in {n_questions} questions: {n_cut} cut by a chunk boundary{share}"
    undrawn = n - len(drawn)
    if undrawn:
        title += f"; {undrawn} start in no chunk (not drawn)"
    ax.set_title(title, fontsize="medium")
    Line2D = import_optional("matplotlib.lines", extra="plots", purpose="raglab.plots.boundary_positions").Line2D
    handles = [Line2D([], [], color=_PLAIN, linewidth=2.5, label=f"inside one chunk ({n - n_cut})"),
               Line2D([], [], color=_CUT, linewidth=2.5, label=f"cut ({n_cut})")]
    ax.legend(handles=handles, loc="upper right", fontsize="small", frameon=False)
    return ax


def boundary_metric(
    report: Any,
    *,
    metric: str | None = None,
    split: str = "boundary_status",
    labels: Sequence[str] = ("base", "cand"),
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """A metric by boundary status for two runs: both means per status, and the paired interval.

    One row per slice (``overall``, then each status, labelled with its number of questions): the
    baseline's mean (open circle), the candidate's mean (filled circle) and, as a thick line, where
    the candidate's mean lies according to the paired interval of the difference (baseline mean +
    ``[low, high]``). When that line does not reach the baseline's circle, the change is outside the
    interval's noise for that status. Rows without an interval keep their points and label.

    Parameters
    ----------
    report : BoundaryReport or DataFrame
        The output of :func:`raglab.boundaries.boundary_report` (or its ``.table``).
    metric : str, optional
        The metric to show (default: the first in the table).
    split : {"boundary_status"}
        The status to split by. ``"gold_reached"`` is refused, with the reason: it is the baseline's
        own outcome, so its slices draw regression to the mean as an effect (see
        :func:`raglab.boundaries.boundary_report`).
    labels : (str, str)
        Names of the two runs in the legend.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure of its own, never the current Axes).
    **kwargs
        Passed to ``Axes.scatter`` for both runs' points (e.g. ``s=``).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from raglab import chunks
    >>> from raglab.boundaries import boundary_report
    >>> from raglab.plots import boundary_metric
    >>> table = chunks.fixed({"d": 1000}, size=100)
    >>> gold = [[{"doc_id": "d", "start": 100 * i + (50 if i % 2 else 10), "end": 100 * i + (150 if i % 2 else 60)}]
    ...         for i in range(8)]
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(8)], "gold_spans": gold,
    ...                      "faithfulness": [1.0, 0.0] * 4})
    >>> report = boundary_report(base, base.assign(faithfulness=1.0), ["faithfulness"], table, n_resamples=200)
    >>> ax = boundary_metric(report)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['overall (n=8)', 'cut (n=4)', 'not cut (n=4)']
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.boundary_metric")

    table = getattr(report, "table", report)
    needed = ("split", "metric", "slice", "n", "base", "cand", "low", "high")
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"boundary_metric needs a BoundaryReport or its .table, got {type(report).__name__}")
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(
            f"boundary_metric needs a boundary report's table with columns {list(needed)}; missing {missing}. "
            "Make one with raglab.boundaries.boundary_report(base, cand, metrics, chunks)."
        )
    metrics = list(dict.fromkeys(table["metric"].astype(str)))
    if metric is None:
        if not metrics:
            raise ValueError("boundary_metric: the report's table is empty")
        metric = metrics[0]
    check_option("metric", metric, metrics)
    if split == "gold_reached":
        raise ValueError(f"boundary_metric refuses split='gold_reached': {_b.GOLD_REACHED_SPLIT}")
    check_option("split", split, [s for s in dict.fromkeys(table["split"].astype(str)) if s != "gold_reached"])
    if len(labels) != 2:
        raise ValueError(f"`labels` must name the two runs, e.g. ('256 chars', '512 chars'); got {labels!r}")
    of_metric = table[table["metric"].astype(str) == metric]
    overall = of_metric[of_metric["slice"].astype(str) == "overall"].head(1)
    shown = pd.concat([overall, of_metric[(of_metric["split"] == split) & (of_metric["slice"] != "overall")]],
                      ignore_index=True)
    if ax is None:  # its own figure, sized to the rows
        _, ax = plt.subplots(figsize=(7.0, 1.5 + 0.32 * len(shown)), layout="constrained")
    y = -np.arange(len(shown), dtype=float)
    base, cand = shown["base"].to_numpy(dtype=float), shown["cand"].to_numpy(dtype=float)
    low, high = base + shown["low"].to_numpy(dtype=float), base + shown["high"].to_numpy(dtype=float)
    ax.hlines(y, np.fmin(base, cand), np.fmax(base, cand), colors="0.75", linewidth=1.0, zorder=1, gid="raglab-links")
    has = np.isfinite(low) & np.isfinite(high)
    ax.hlines(y[has], low[has], high[has], colors=_PLAIN, linewidth=4.0, alpha=0.35, zorder=2,
              gid="raglab-intervals", label=f"{labels[1]}: paired interval")
    points = {"s": 44, "zorder": 3, **kwargs}
    ax.scatter(base, y, gid="raglab-base", label=labels[0],
               **{"facecolors": "white", "edgecolors": NEUTRAL_COLOUR, "linewidths": 1.4, **points})
    ax.scatter(cand, y, gid="raglab-cand", label=labels[1], **{"c": _PLAIN, **points})
    ax.set_yticks(y)
    ax.set_yticklabels([f"{s} (n={int(n)})" for s, n in zip(shown["slice"].astype(str), shown["n"])])
    ax.set_ylim(y.min() - 0.7 if len(y) else -0.7, 0.7)
    ax.set_xlabel(f"mean {metric}")
    level = shown["level"].iloc[0] if "level" in shown.columns and len(shown) else None
    by = split.replace("_", " ")
    title = f"{metric} by {by}: {labels[0]} vs {labels[1]}"
    if level is not None and np.isfinite(level):
        title += f" ({level:.0%} paired intervals)"
    ax.set_title(title, fontsize="medium")
    handles, names = ax.get_legend_handles_labels()
    order = [names.index(n) for n in (labels[0], labels[1], f"{labels[1]}: paired interval") if n in names]
    ax.legend([handles[i] for i in order], [names[i] for i in order], loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize="small", frameon=False)
    ax.grid(axis="x", color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    return ax
