"""Plots of raglab tables: compute first, then draw.

Every function takes ``ax=None`` (draws on ``plt.gca()`` then), forwards ``**kwargs`` to the main
artist and returns the matplotlib Axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._registry import metric_info
from raglab._results import DECISION_COLOURS, NEUTRAL_COLOUR
from raglab._validation import check_option

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["boundary_metric", "boundary_positions", "confusion_heatmap", "forest", "power_curve"]

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


_MISS_EDGE = DECISION_COLOURS["block"]  # the miss-rate cell's outline: false passes are the costly error


def _tick_names(labels: Sequence[Any], positive: Any) -> list[str]:
    """Tick texts for confusion labels: "pass"/"fail" for a binary True/False or 1/0 table, else the labels."""
    labels = list(labels)
    binary = positive is not None and len(labels) == 2 and positive in labels
    if binary and all(isinstance(v, (bool, np.bool_)) or v in (0, 1) for v in labels):
        return ["pass" if v == positive else "fail" for v in labels]
    return [str(v) for v in labels]


def _heatmap_note(report: Any, table: pd.DataFrame, counts: np.ndarray) -> str:
    """The line under a confusion heatmap: n, kappa with its interval, and the outlined miss rate."""
    n = int(getattr(report, "n", counts.sum()))
    parts = [f"n = {n:,}"]
    kappa = getattr(report, "kappa", None)
    if kappa is not None and np.isfinite(kappa):
        interval = getattr(report, "kappa_interval", None)
        low, high = getattr(interval, "low", np.nan), getattr(interval, "high", np.nan)
        bounds = f" [{low:.2f}, {high:.2f}]" if np.isfinite(low) and np.isfinite(high) else ""
        parts.append(f"kappa = {kappa:.2f}{bounds}")
    text = ", ".join(parts)
    miss = getattr(report, "miss_rate", None)
    if miss is not None and np.isfinite(miss):
        text += f"\nmiss rate {miss:.2f} (outlined: people fail, judge passes)"
    return text


def confusion_heatmap(
    report: Any,
    *,
    normalize: str | None = None,
    ax: Axes | None = None,
    cmap: str = "Blues",
    **kwargs: Any,
) -> Axes:
    """Heatmap of a judge-vs-people confusion table (people in rows, judge in columns).

    Binary True/False (or 1/0) labels read "pass"/"fail"; other labels are shown as they are. The
    judge's name is on the x axis, ``n`` and kappa (with its interval) under the plot, and for a
    binary report the miss-rate cell (people fail, judge passes) has a thick red outline. Shares
    (``normalize="rows"`` or ``"all"``) are coloured on one fixed 0-1 scale, so panels drawn side by
    side compare by colour; counts are coloured from 0 to the largest count (pass ``vmax=`` to share).

    Parameters
    ----------
    report : AgreementReport or DataFrame
        A :class:`raglab.agreement.AgreementReport` (its ``confusion``) or a labelled square table.
    normalize : {None, "rows", "all"}
        Show counts (default), shares of each human label (``"rows"``: the per-class recall is on
        the diagonal and the miss rate off it), or shares of all items.
    ax : matplotlib Axes, optional
        Draw here; default the current Axes.
    cmap : str
        Colour map.
    **kwargs
        Passed to :func:`seaborn.heatmap`.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> from raglab import agreement, plots
    >>> rep = agreement.report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1)
    >>> ax = plots.confusion_heatmap(rep, normalize="rows")
    >>> ax.get_ylabel(), [t.get_text() for t in ax.get_xticklabels()]
    ('people', ['pass', 'fail'])
    """
    sns = import_optional("seaborn", extra="plots", purpose="raglab.plots.confusion_heatmap")
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.confusion_heatmap")
    from matplotlib.offsetbox import AnchoredText
    from matplotlib.patches import Rectangle

    table = getattr(report, "confusion", report)
    if not isinstance(table, pd.DataFrame) or table.shape[0] != table.shape[1]:
        raise TypeError("confusion_heatmap needs an AgreementReport or a square DataFrame of counts")
    check_option("normalize", normalize, [None, "rows", "all"])
    counts = table.to_numpy(dtype=float)
    if normalize == "rows":
        sums = counts.sum(axis=1, keepdims=True)
        values = np.divide(counts, sums, out=np.full_like(counts, np.nan), where=sums > 0)
    elif normalize == "all":
        values = counts / counts.sum() if counts.sum() else counts
    else:
        values = counts
    shown = pd.DataFrame(values, index=table.index, columns=table.columns)
    annotations = np.array(
        [[f"{v:.2f}\n({int(c)})" if normalize else f"{int(c)}" for v, c in zip(row_v, row_c)]
         for row_v, row_c in zip(values, counts)]
    )
    if ax is None:
        ax = plt.gca()
    positive = getattr(report, "positive", None)
    options_heatmap = {"annot": annotations, "fmt": "", "cmap": cmap, "cbar": False, "square": True,
                       "vmin": 0, "linewidths": 0.5, "linecolor": plt.rcParams["axes.facecolor"],
                       "xticklabels": _tick_names(table.columns, positive),
                       "yticklabels": _tick_names(table.index, positive)}
    if normalize:
        options_heatmap["vmax"] = 1  # one scale for every panel of shares
    options_heatmap.update(kwargs)
    sns.heatmap(shown, ax=ax, **options_heatmap)
    ax.tick_params(axis="y", labelrotation=0)
    ax.tick_params(axis="x", labelrotation=0)
    judge_name = str(getattr(report, "judge_name", "judge"))
    ax.set_ylabel("people")
    ax.set_xlabel("judge" if judge_name == "judge" else f"judge: {judge_name}")
    what = {None: "counts", "rows": "share of each human label", "all": "share of all items"}[normalize]
    ax.set_title(what if judge_name == "judge" else f"{judge_name}: {what}")
    labels = list(table.index)
    if positive is not None and len(labels) == 2 and positive in labels and positive in list(table.columns):
        row = labels.index(next(v for v in labels if v != positive))  # people: fail
        column = list(table.columns).index(positive)  # judge: pass
        ax.add_patch(Rectangle((column, row), 1, 1, fill=False, edgecolor=_MISS_EDGE, linewidth=3,
                               clip_on=False, zorder=3, gid="raglab-miss-cell"))
    if hasattr(report, "confusion"):
        note = AnchoredText(_heatmap_note(report, table, counts), loc="upper center", frameon=False,
                            bbox_to_anchor=(0.5, 0), bbox_transform=ax.transAxes, borderpad=4.2,
                            prop={"fontsize": "small", "color": plt.rcParams["text.color"]})
        note.set_gid("raglab-heatmap-note")
        ax.add_artist(note)
    return ax


def _log_ticks(low: float, high: float) -> list[int]:
    """Round numbers for a log axis from low to high: 1-2-5 steps, fewer when the range is wide."""
    for steps in ((1, 2, 5), (1, 3), (1,)):
        ticks = [int(s * 10**e) for e in range(0, 9) for s in steps if low <= s * 10**e <= high]
        if len(ticks) <= 9:
            return ticks
    return ticks  # pragma: no cover - only for ranges wider than nine decades


def _design_text(design: Mapping[str, Any], target: float) -> str:
    """The design of a power curve in words, for the legend's title."""
    parts = ["paired" if design.get("paired") else "two independent runs"]
    for key, name in (("discordance", "discordance"), ("p", "p"), ("sd_diff", "sd of differences"),
                      ("attenuation", "attenuation"), ("sensitivity", "sensitivity"), ("specificity", "specificity")):
        if design.get(key) is not None:
            parts.append(f"{name} {design[key]:.3g}")
    if design.get("slice_fraction", 1.0) != 1.0:
        parts.append(f"slice {design['slice_fraction']:.0%}")
    alpha = design.get("alpha", 0.05)
    alternative = design.get("alternative", "two-sided")
    return ", ".join(parts) + f"\nalpha {alpha:g} ({alternative}), power target {target:g}"


def power_curve(
    mde: float | Sequence[float],
    *,
    n: Sequence[int] | None = None,
    target: float = 0.8,
    ax: Axes | None = None,
    **design: Any,
) -> Axes:
    """Power against the number of questions, one line per smallest change of interest.

    The legend sits outside the plot, to its right, under a title stating the design (paired or not,
    discordance or ``p``, alpha, the power target); the log x axis is labelled at round numbers
    (50, 100, 200, 500, ...). Colours come from the active matplotlib style.

    Parameters
    ----------
    mde : float or sequence of float
        Smallest true change(s) to detect.
    n : sequence of int, optional
        Numbers of questions on the x axis (default: 20 to 1.6 times the largest needed, log-spaced).
    target : float
        The power asked for: a dashed line, and each curve is marked where it crosses it.
    ax : matplotlib Axes, optional
    **design
        The design, as in :func:`raglab.sizing.power`: ``p=``, ``paired=``, ``discordance=``,
        ``sd_diff=``, ``alpha=``, ``attenuation=``, ``slice_fraction=``.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> from raglab import plots
    >>> ax = plots.power_curve([0.02, 0.05], paired=True, discordance=0.1)
    >>> len(ax.get_lines()) >= 2
    True
    >>> ax.get_legend().get_title().get_text().splitlines()[0]
    'paired, discordance 0.1'
    """
    from raglab import sizing

    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.power_curve")
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    effects = [float(mde)] if np.isscalar(mde) else [float(m) for m in mde]
    needed = [sizing.questions_needed(m, power=target, **design) for m in effects]
    if n is None:
        top = max(max(needed) * 1.6, 100)
        n = np.unique(np.geomspace(20, top, 80).astype(int))
    if ax is None:
        ax = plt.gca()
    for m, required in zip(effects, needed):
        values = [sizing.power(int(k), m, **design) for k in n]
        (line,) = ax.plot(n, values, label=f"change of {m:g}: {required:,} questions")
        ax.plot([required], [sizing.power(required, m, **design)], "o", color=line.get_color())
    ax.axhline(target, color=plt.rcParams["text.color"], alpha=0.5, linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ticks = _log_ticks(float(np.min(n)), float(np.max(n)))
    if len(ticks) >= 2:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("questions" + (" per run" if not design.get("paired") else ""))
    ax.set_ylabel("power")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize="small",
              title=_design_text(design, target), title_fontsize="small")
    return ax


# ---- chunk boundaries ---------------------------------------------------------------------------------

_CUT = DECISION_COLOURS["block"]


def _gold_in_chunks(rows: pd.DataFrame, chunks: pd.DataFrame, gold_spans: str | None, method: str) -> pd.DataFrame:
    """One row per gold span (grade > 0): its offsets relative to the chunk holding its first character."""
    from raglab import boundaries as _b
    from raglab._rowtable import resolve_column

    df = _b._rows_frame(rows, method)
    table = _b._chunk_table(chunks, method)
    col = resolve_column(df, "gold_spans", gold_spans, method=method)
    gold = _b._gold_of(df, col, method, None)
    flat = [(pos, *u[:3]) for pos, units in enumerate(gold) for u in units]
    spans = pd.DataFrame(flat, columns=["row", "doc_id", "start", "end"])
    doc = spans["doc_id"].to_numpy(dtype=object)
    start = spans["start"].to_numpy(dtype=np.int64)
    end = spans["end"].to_numpy(dtype=np.int64)
    inside, _ = _b._geometry(table, doc, start, end)
    unknown = sorted({str(d) for d in set(doc.tolist()) - set(table["doc_id"].tolist())})
    if unknown:
        from raglab._validation import warn

        warn(f"{method}: gold spans lie in {len(unknown)} document(s) the chunk table does not have (e.g. "
             f"{unknown[:5]}); they count as cut and are not drawn. Pass the chunk table of the whole corpus.")
    # The chunk that holds the span's first character and reaches furthest (the one holding it, when
    # one does): offsets in units of that chunk's length, so 0 is its start and 1 its end.
    c_start = np.full(len(spans), np.nan)
    c_end = np.full(len(spans), np.nan)
    groups = table.groupby("doc_id", sort=False).indices
    starts, ends = table["start"].to_numpy(), table["end"].to_numpy()
    for i, (d, s) in enumerate(zip(doc, start)):
        where = groups.get(d)
        if where is None:
            continue
        holding = where[(starts[where] <= s) & (s < ends[where])]
        if len(holding):
            best = holding[np.argmax(ends[holding])]
            c_start[i], c_end[i] = starts[best], ends[best]
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
        Where to draw (default: the current Axes).
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
    if ax is None:
        ax = plt.gca()
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
    split : {"boundary_status", "gold_reached"}
        Which status to split by (``gold_reached`` only when the report has it).
    labels : (str, str)
        Names of the two runs in the legend.
    ax : matplotlib Axes, optional
        Where to draw (default: the current Axes).
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
    check_option("split", split, list(dict.fromkeys(table["split"].astype(str))))
    if len(labels) != 2:
        raise ValueError(f"`labels` must name the two runs, e.g. ('256 chars', '512 chars'); got {labels!r}")
    of_metric = table[table["metric"].astype(str) == metric]
    overall = of_metric[of_metric["slice"].astype(str) == "overall"].head(1)
    shown = pd.concat([overall, of_metric[(of_metric["split"] == split) & (of_metric["slice"] != "overall")]],
                      ignore_index=True)
    if ax is None:
        ax = plt.gca()
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
