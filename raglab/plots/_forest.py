"""The interval forest of a compare or gate table, drawn as a release card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from raglab._optional import import_optional
from raglab._results import DECISION_COLOURS
from raglab._validation import check_option
from raglab.plots._common import (
    _NEEDED,
    _SHARED_UNITS,
    _background,
    _decimals,
    _directions,
    _holm_marks,
    _interval_text,
    _margins,
    _readable,
    _undirected,
    _unit_groups,
)
from raglab.stats._gate import DECISIONS, _worst

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from raglab.stats import GateResult

_SCALES = ["raw", "margin"]
_SORTS = [None, "diff", "low", "decision"]
_RANK = {d: i for i, d in enumerate(reversed(DECISIONS))}  # worst first: block 0, review 1, pass 2
_ROW_INCHES, _PANEL_INCHES = 0.24, 0.95  # figure height: per row (and heading), per panel (axis, header)


def forest(
    table: pd.DataFrame | GateResult,
    *,
    ax: Axes | None = None,
    margin: float | Mapping[str, float] | None = None,
    scale: str = "raw",
    sort: str | None = None,
    panels: Mapping[str, str] | None = None,
    names: Mapping[str, str] | Sequence[str] | None = None,
    **kwargs: Any,
) -> Axes:
    """The interval forest of a compare or gate table, drawn as a release card.

    One row per metric x slice, grouped under a heading per metric (the ``overall`` row first, in
    bold with a diamond). Each row shows the difference (candidate - baseline) as a point, its
    interval as a thin line and the interval's central half as a thick line (arviz's forest style;
    the thick part scales each side of the interval by z(0.75) / z((1 + level) / 2), a visual aid and
    not a second interval), a reference line at zero and, per metric, a dashed line at the margin on
    the bad side (``-margin``, or ``+margin`` for a lower-is-better metric). To the right, three
    text columns: ``n``, ``diff [low, high]`` in the metric's units and, for a gate, the
    ``decision`` in words (so colour is not the only cue). Points and lines take the decision's
    colour (pass green, review amber, block red; on a dark style, lighter variants of the same hues
    that keep a WCAG contrast of 4.5:1). Numbers carry thousands separators (``+2,371``), and the
    columns line up across panels. Each panel's x label says which way is better (``better →``, or
    ``← better`` for lower-is-better metrics), with or without margins; a metric with no direction
    (``declined``, in a table without ``higher_is_better``) reads "(no direction)", gets no margin line,
    and a panel of only such metrics reads "(no better direction)". Rows without an interval
    are drawn hollow and read "no interval"; rows with ``n = 0`` are left out and counted in the
    footnote. Rows that survive a Holm adjustment (a Holm gate's blocks; a compare table's rows with
    ``p_adjusted`` below ``1 - level``) carry a dagger, explained in the footnote. The title gives the overall
    decision with the row counts, the interval level and the interval methods; a table whose ``level``
    is NaN (or outside (0, 1)) reads "level unknown", and its rows get no thick central band. Below
    it, the card names what was compared: the candidate and baseline runs and the eval-set version
    (from the runs' records that ``rows.rag.compare`` / ``rows.rag.gate`` keep, or ``names=``), and
    says so when the two runs were scored against different eval-set versions.

    Units. By default every metric is drawn in its own units, and metrics in different units get
    different panels, stacked with the same row layout: metrics the registry knows as bounded in
    [0, 1] (recall, hit, ndcg, em, faithfulness...) and unknown higher-is-better metrics whose
    baseline and candidate means lie in [0, 1] share one panel; every other metric (latency, cost,
    a character count) gets a panel of its own. Metrics of opposite directions never share an axis:
    a unit group holding higher-is-better and lower-is-better metrics (``recall@5`` beside
    ``false_decline``) is split into a panel per direction, each labelled with its own way to better
    (metrics with no direction join the first). ``panels={metric: name}`` puts metrics with the same
    name on one panel, as they are. ``scale="margin"`` instead draws every row on one axis as
    *improvement / margin*: right is better for every metric and every margin sits at -1.

    Parameters
    ----------
    table : DataFrame or GateResult
        ``raglab.stats.compare`` / ``rows.rag.compare``'s table, a gate's ``.table``, or the
        :class:`~raglab.stats.GateResult` itself (columns ``metric, slice, diff, low, high``;
        ``n``, ``margin``, ``higher_is_better``, ``decision``, ``level``, ``method`` and the Holm
        columns are used when present).
    ax : matplotlib Axes, optional
        Where to draw. By default a new figure sized to the rows (never the current Axes, so a
        second forest does not overlay the first). On a given Axes the text columns sit right of
        it; on a figure without a layout engine (a plain ``plt.subplots()``) forest shrinks that Axes
        until its labels, text columns, title and footnote lie inside the figure (and warns when the
        figure is too small for them); with ``layout="constrained"`` the layout makes the room. The
        title and footnote are wrapped to the figure's width. A table that needs several panels
        cannot be drawn on one given Axes (units or directions differ): that raises a ``ValueError``
        (pass ``ax=None``, ``scale="margin"`` or one unit group's rows).
    margin : float or dict, optional
        Margins to mark (one for all metrics or ``{metric: margin}``), each a finite number >= 0 as
        in the gate; default: the table's ``margin`` column, if any.
    scale : {"raw", "margin"}
        ``"raw"``: each metric's units, one panel per unit group. ``"margin"``: improvement /
        margin on one axis (needs a positive margin and a direction for every metric). The text
        columns are always in the metric's units.
    sort : {None, "diff", "low", "decision"}
        Order of the slices under each metric (the ``overall`` row stays first). ``None``: the
        table's order. ``"diff"``: largest drop first (by improvement, so the direction counts).
        ``"low"``: the interval's worst end first (closest to failing the margin). ``"decision"``:
        block, review, pass, then by the worst end (needs a gate table).
    panels : dict, optional
        ``{metric: panel name}``: overrides the unit groups for the metrics it names.
    names : dict or (baseline, candidate), optional
        What the card calls the runs: ``{"base": ..., "cand": ..., "evalset": ...}`` (any of the three)
        or a pair ``(baseline, candidate)``; each name given wins over the runs' records (the run
        name in ``attrs["raglab"]["run"]["name"]``, the eval-set stamp's name and version).
    **kwargs
        Passed to ``Axes.scatter`` for the points (e.g. ``s=``, ``marker=``).

    Returns
    -------
    matplotlib.axes.Axes
        The (first) panel. With several panels, all of them are ``ax.figure.axes``, top to bottom.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from raglab.stats import gate
    >>> from raglab.plots import forest
    >>> result = gate({"hit@5": [1, 0, 1, 1] * 25}, {"hit@5": [1, 1, 1, 1] * 25}, margin=0.02,
    ...               slices=["a", "b"] * 50)
    >>> ax = forest(result)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['hit@5', 'overall', 'a', 'b']
    >>> ax.get_title().splitlines()[0]
    'Release gate: REVIEW (2 pass, 1 review, 0 block)'
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.forest")
    table, overall_decision, adjust, records = _unwrap(table)
    check_option("scale", scale, _SCALES)
    check_option("sort", sort, _SORTS)
    if sort == "decision" and "decision" not in table.columns:
        raise ValueError("sort='decision' needs a gate table (with a `decision` column); use sort='low' or 'diff'")

    table = table.reset_index(drop=True)
    level = float(table["level"].iloc[0]) if "level" in table.columns and len(table) else 0.95
    if not 0.0 < level < 1.0:  # NaN too: claim no level the table does not give (see _title, _draw)
        level = np.nan
    marks, holm_note = _holm_marks(table, level, adjust)
    counts = pd.to_numeric(table["n"], errors="coerce").fillna(0) if "n" in table.columns else None
    empty = (counts <= 0).to_numpy() if counts is not None else np.zeros(len(table), bool)
    dropped = [f"{m} [{s}]" for m, s in zip(table["metric"][empty], table["slice"][empty])]
    title = _title(table, overall_decision, level, _compared(table, records, names))
    table, marks = table[~empty].reset_index(drop=True), marks[~empty]

    if table.empty:  # nothing to draw (an empty table, or only n = 0 rows): say so on the Axes
        ax = ax if ax is not None else plt.figure(figsize=(6.4, 2.0), layout="constrained").add_subplot()
        ax.text(0.5, 0.5, f"no rows to draw ({len(dropped)} with n = 0)", ha="center", va="center",
                transform=ax.transAxes, gid="raglab-empty")
        ax.set_title(title, fontsize="medium")
        return ax
    margins, directions = _margins(table, margin), _directions(table)
    undirected = _undirected(table)
    metrics = [str(m) for m in dict.fromkeys(table["metric"])]
    groups = _panel_groups(table, metrics, margins, directions, undirected, scale, panels)
    order = list(dict.fromkeys(groups[n] for n in metrics))
    if ax is not None and len(order) > 1:
        _refuse_one_axes(order)
    layouts = [_layout(table, [n for n in metrics if groups[n] == g], directions, sort) for g in order]
    # once for the whole table, so a metric's numbers read the same in every panel
    decimals = {m: _decimals(g["high"].astype(float) - g["low"].astype(float)) for m, g in table.groupby("metric")}
    axes = _panel_axes(plt, [len(lay) for lay in layouts]) if ax is None else [ax]
    drawn: set[str] = set()
    columns = []
    for panel, (group, _side), layout in zip(axes, order, layouts):
        xlabel = _xlabel(scale, group, len(order), [directions.get(s, True) for s in layout
                                                     if isinstance(s, str) and s not in undirected])
        seen, texts = _draw(panel, table, layout, marks, margins, directions, undirected, scale, level, decimals,
                            xlabel, kwargs)
        drawn |= seen
        columns.append(texts)
    _place_columns(axes, columns)
    footnote = _footnote(axes[-1], drawn, holm_note, dropped)
    main = axes[0]
    ours = not main.get_title()  # a caller's ax.set_title(...) wins
    if ours:
        main.set_title(title, fontsize="medium", pad=20)
    _fit_inside(main, footnote, wrap_title=ours)
    return main


def _unwrap(table: Any) -> tuple[pd.DataFrame, str | None, str, Any]:
    """The table to draw, and from a GateResult its overall decision, Holm setting and runs' records."""
    overall_decision, adjust, records = None, "unknown", None
    if hasattr(table, "table") and hasattr(table, "decision") and not isinstance(table, pd.DataFrame):
        overall_decision, adjust = str(table.decision), getattr(table, "settings", {}).get("adjust", "unknown")
        records = getattr(table, "runs", None)
        table = table.table
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"forest needs a compare or gate table (a DataFrame) or a GateResult, got {type(table).__name__}")
    missing = [c for c in _NEEDED if c not in table.columns]
    if missing:
        raise ValueError(
            f"forest needs a compare or gate table with columns {list(_NEEDED)}; missing {missing} "
            f"(found {[str(c) for c in table.columns]}). Make one with rows.rag.compare(cand, ...)."
        )
    return table, overall_decision, adjust, records


def _panel_groups(table: pd.DataFrame, metrics: list[str], margins: dict[str, float], directions: dict[str, bool],
                  undirected: set[str], scale: str, panels: Mapping[str, str] | None) -> dict[str, tuple[str, str]]:
    """Each metric's panel ``(unit group, side)``: one panel for ``scale="margin"``, else by units and direction."""
    if scale != "margin":
        return _sides(_unit_groups(table, panels), directions, undirected, panels)
    bad = [n for n in metrics if not (np.isfinite(margins.get(n, np.nan)) and margins.get(n, 0) > 0)]
    if bad:
        raise ValueError(f"scale='margin' needs a positive margin for every metric; none for {bad}")
    shapeless = [n for n in metrics if n in undirected]
    if shapeless:  # "right is better" cannot hold for them
        raise ValueError(f"scale='margin' needs a better direction for every metric; {shapeless} have none "
                         "(pass a table with a higher_is_better column, or scale='raw')")
    return dict.fromkeys(metrics, ("improvement / margin", ""))


def _refuse_one_axes(order: list[tuple[str, str]]) -> None:
    """A caller's one Axes cannot hold panels of different units or directions: say which, and what to do."""
    units = list(dict.fromkeys(unit for unit, _ in order))
    what = (f"in {len(units)} different units ({', '.join(units)})" if len(units) > 1 else
            "of opposite directions (higher is better and lower is better), which one axis would draw reading "
            "opposite ways")
    raise ValueError(
        f"forest: the table's metrics are {what}, drawn as one panel each, which one Axes cannot hold. "
        "Pass ax=None (forest makes a figure with a panel per unit group and direction), scale='margin' (one "
        "axis in units of the margin, right is better), or one group's rows."
    )


def _panel_axes(plt: Any, slots: list[int]) -> list[Axes]:
    """A figure sized to the rows, with one panel per unit group (``slots`` rows each)."""
    height = 0.9 + 0.2 * 3 + sum(_PANEL_INCHES + _ROW_INCHES * s for s in slots)
    fig = plt.figure(figsize=(10.0, max(3.0, height)), layout="constrained")
    grid = fig.add_gridspec(len(slots), 1, height_ratios=[s + _PANEL_INCHES / _ROW_INCHES for s in slots])
    return [fig.add_subplot(grid[i, 0]) for i in range(len(slots))]


def _xlabel(scale: str, group: str, n_panels: int, higher: list[bool]) -> str:
    """A panel's x label: what is drawn, in which units, and which way is better."""
    if scale == "margin":
        return "improvement / margin (0 = no change, -1 = the margin; right is better)"
    xlabel = "difference (candidate - baseline)"
    if n_panels > 1:
        xlabel += f": {group}" if group == _SHARED_UNITS else f" in {group}"
    return xlabel + "   " + _better(higher)


def _footnote(last: Axes, drawn: set[str], holm_note: str | None, dropped: list[str]) -> Any:
    """The footnote under the last panel: the legend of what was drawn, Holm's note, the rows left out."""
    legend = {"overall": "\N{BLACK DIAMOND} overall (every slice)", "hollow": "hollow: no interval",
              "margin": "dashed: the margin, on the bad side"}
    notes = ["; ".join(text for key, text in legend.items() if key in drawn) + "."] if drawn else []
    if holm_note:
        notes.append(holm_note)
    if dropped:
        shown = ", ".join(dropped[:4]) + (", ..." if len(dropped) > 4 else "")
        notes.append(f"{len(dropped)} row{'s' if len(dropped) > 1 else ''} with n = 0 not shown: {shown}.")
    return last.annotate("\n".join(notes), xy=(0, 0), xycoords=("axes fraction", last.xaxis.label),
                         xytext=(0, -4), textcoords="offset points", ha="left", va="top", fontsize="small",
                         gid="raglab-footnote", annotation_clip=False)


def _sides(groups: dict[str, str], directions: dict[str, bool], undirected: set[str],
           panels: Mapping[str, str] | None) -> dict[str, tuple[str, str]]:
    """Each metric's panel: its unit group and, where a group holds both directions, which one.

    A higher-is-better and a lower-is-better metric on one axis would read opposite ways (a worse
    ``false_decline`` drawn right of zero under "better ->"), so such a group is split into a panel per
    direction; metrics with no direction join the group's first panel. A group named in ``panels=``
    is the caller's choice and stays whole.
    """
    named = {str(panels[m]) for m in panels} if panels else set()
    side = {m: "" if m in undirected else ("higher" if directions.get(m, True) else "lower") for m in groups}
    out = {}
    for group in dict.fromkeys(groups.values()):
        members = [m for m in groups if groups[m] == group]
        present = list(dict.fromkeys(side[m] for m in members if side[m]))
        split = len(present) > 1 and group not in named
        for m in members:
            out[m] = (group, (side[m] or present[0]) if split else "")
    return out


def _better(higher: list[bool]) -> str:
    """The x label's hint of which way is better for a panel's metrics (those that have a direction)."""
    if not higher:
        return "(no better direction)"
    if all(higher):
        return "(better \N{RIGHTWARDS ARROW})"
    if not any(higher):
        return "(\N{LEFTWARDS ARROW} better)"
    return "(better \N{RIGHTWARDS ARROW}; \N{LEFTWARDS ARROW} for metrics marked lower is better)"


def _place_columns(axes: list[Axes], columns: list[list[Any]]) -> None:
    """Put the right-hand text columns of every panel at the same distances (in points) right of the axes.

    The panels of one figure share their left and right edges (one gridspec column under constrained
    layout), so the columns line up across panels; each column is as wide as its widest text in any panel.
    """
    from matplotlib.transforms import offset_copy

    fig = axes[0].figure
    renderer = fig.canvas.get_renderer()
    widths: dict[int, float] = {}
    for panel in columns:
        for c, (head, made, _align) in enumerate(panel):
            width = max(t.get_window_extent(renderer).width for t in [head, *made]) * 72.0 / fig.dpi
            widths[c] = max(widths.get(c, 0.0), width)
    for ax, panel in zip(axes, columns):
        offset = 10.0
        for c, (head, made, align) in enumerate(panel):
            at = offset + (widths[c] if align == "right" else 0.0)
            for t in made:
                t.set_transform(offset_copy(ax.get_yaxis_transform(), fig=fig, x=at, units="points"))
            head.set_transform(offset_copy(ax.transAxes, fig=fig, x=at, y=2.0, units="points"))
            offset += widths[c] + 12.0


def _fit_inside(ax: Axes, footnote: Any, *, wrap_title: bool, pad: float = 4.0) -> None:
    """Keep the card inside its figure: wrap the title and the footnote to the width the figure leaves them
    and, on a figure without a layout engine (a caller's ``plt.subplots()``), shrink the Axes until its
    labels, title, text columns and footnote lie ``pad`` points inside the figure's edges. (A layout
    engine, like the constrained layout of forest's own figures, makes that room when it draws.)"""
    import warnings

    fig = ax.figure
    engine = fig.get_layout_engine()
    title, note = ax.title.get_text(), footnote.get_text()
    for _ in range(6):
        fig.draw_without_rendering()  # runs the layout engine, if any, and places the ticks
        renderer, page = fig.canvas.get_renderer(), fig.bbox
        room = pad * fig.dpi / 72.0
        if wrap_title:
            centre = (ax.bbox.x0 + ax.bbox.x1) / 2.0  # the title is centred on the Axes
            _wrap(ax.title, title, 2.0 * (min(centre - page.x0, page.x1 - centre) - room), renderer)
        _wrap(footnote, note, page.x1 - room - footnote.get_window_extent(renderer).x0, renderer)
        if engine is not None:
            return
        box = ax.get_tightbbox(renderer)
        left, right = max(0.0, page.x0 + room - box.x0), max(0.0, box.x1 - page.x1 + room)
        bottom, top = max(0.0, page.y0 + room - box.y0), max(0.0, box.y1 - page.y1 + room)
        if max(left, right, bottom, top) < 0.5:
            return
        pos = ax.get_position()
        x0, x1 = pos.x0 + left / page.width, pos.x1 - right / page.width
        y0, y1 = pos.y0 + bottom / page.height, pos.y1 - top / page.height
        if x1 - x0 < 0.05 or y1 - y0 < 0.05:
            warnings.warn(
                f"forest: the figure ({fig.get_figwidth():g} x {fig.get_figheight():g} in) is too small for the "
                "rows and text columns; pass ax=None (forest sizes its own figure) or a larger figure",
                UserWarning, stacklevel=3,
            )
            return
        ax.set_position([x0, y0, x1 - x0, y1 - y0])


def _wrap(text: Any, full: str, width: float, renderer: Any) -> None:
    """Set ``text`` to ``full``, its lines broken between words where they are wider than ``width`` pixels."""
    text.set_text(full)
    if width <= 0 or text.get_window_extent(renderer).width <= width:
        return
    lines = []
    for line in full.split("\n"):
        current = ""
        for word in line.split(" "):
            trial = f"{current} {word}" if current else word
            text.set_text(trial)
            if current and text.get_window_extent(renderer).width > width:
                lines.append(current)
                current = word
            else:
                current = trial
        lines.append(current)
    text.set_text("\n".join(lines))


def _stamp_text(stamp: Any) -> str:
    """An eval-set stamp as ``name version``, or ``""`` when there is none."""
    if isinstance(stamp, str):
        return stamp
    if not isinstance(stamp, Mapping):
        return ""
    return " ".join(str(stamp[k]) for k in ("name", "version") if stamp.get(k) not in (None, ""))


def _stamp_hash(stamp: Any) -> str:
    """An eval-set stamp's hash, shortened as the pairing error shows it (12 characters, ``…`` when cut)."""
    value = stamp.get("hash") if isinstance(stamp, Mapping) else None
    if value in (None, ""):
        return ""
    value = str(value)
    return value[:12] + ("\N{HORIZONTAL ELLIPSIS}" if len(value) > 12 else "")


def _compared(table: pd.DataFrame, records: Any, names: Mapping[str, str] | Sequence[str] | None) -> str:
    """The card's line naming the candidate and baseline runs and the eval-set version, with both hashes when
    they differ ("" when nothing is known).

    From a GateResult's ``runs``, else ``attrs["raglab"]["comparison"]["runs"]`` (what ``rows.rag.compare``
    records of each run); ``names`` wins for what it gives.
    """
    if not isinstance(records, Mapping) or not records:
        meta = table.attrs.get("raglab", {})
        comparison = meta.get("comparison", {}) if isinstance(meta, Mapping) else {}
        records = comparison.get("runs", {}) if isinstance(comparison, Mapping) else {}
    records = records if isinstance(records, Mapping) else {}
    if names is None:
        given: dict[str, str] = {}
    elif isinstance(names, Mapping):
        unknown = sorted(set(map(str, names)) - {"base", "cand", "evalset"})
        if unknown:
            raise ValueError(f"`names` takes the keys 'base', 'cand' and 'evalset'; got {unknown}")
        given = {str(k): str(v) for k, v in names.items()}
    elif isinstance(names, Sequence) and not isinstance(names, str) and len(names) == 2:
        given = {"base": str(names[0]), "cand": str(names[1])}
    else:
        raise TypeError(f"`names` must be a dict or a pair (baseline, candidate), got {names!r}")
    runs, stamps, hashes = {}, {}, {}
    for side in ("base", "cand"):
        record = records.get(side) if isinstance(records.get(side), Mapping) else {}
        run = record.get("run") if isinstance(record.get("run"), Mapping) else {}
        runs[side] = given.get(side) or (str(run["name"]) if run.get("name") not in (None, "") else "")
        stamps[side] = _stamp_text(record.get("evalset"))
        hashes[side] = _stamp_hash(record.get("evalset"))
    # The hash is the eval set's identity (what pairing checks): same name and version, other questions or
    # gold (compared after allow_evalset_mismatch=True) are different eval sets, never "eval set <name>".
    hashes_differ = bool(hashes["base"] or hashes["cand"]) and hashes["base"] != hashes["cand"]
    if "evalset" in given:
        evalset = f"eval set {given['evalset']}"
    elif stamps["base"] and stamps["cand"] and (stamps["base"] != stamps["cand"] or hashes_differ):
        evalset = f"eval sets differ: {stamps['cand']} (candidate), {stamps['base']} (baseline)"
        if hashes_differ:
            evalset += f" (hash {hashes['cand'] or 'none'} vs {hashes['base'] or 'none'})"
    elif stamps["base"] or stamps["cand"]:
        evalset = f"eval set {stamps['base'] or stamps['cand']}"
        if not (stamps["base"] and stamps["cand"]):
            evalset += f" (the {'baseline' if stamps['base'] else 'candidate'}'s; the other run has no stamp)"
    else:
        evalset = ""
    if not (runs["base"] or runs["cand"] or evalset):
        return ""
    pair = f"{runs['cand'] or '(unnamed)'} (candidate) vs {runs['base'] or '(unnamed)'} (baseline)"
    return pair + (f"; {evalset}" if evalset else "; eval set not stamped")


def _title(table: pd.DataFrame, decision: str | None, level: float, compared: str = "") -> str:
    methods = "; ".join(dict.fromkeys(table["method"].dropna().astype(str))) if "method" in table.columns else ""
    how = (f"{level:.0%} paired intervals" if np.isfinite(level) else "paired intervals, level unknown") + (
        f" ({methods})" if methods else "")
    if compared:
        how = f"{compared}\n{how}"
    if "decision" not in table.columns:
        return f"Candidate - baseline\n{how}" if compared else f"Candidate - baseline: {how}"
    values = table["decision"].astype(str).tolist()
    if decision is None:
        decision = _worst([d if d in DECISIONS else "review" for d in values])  # an unknown word is no pass
    counts = ", ".join(f"{values.count(d)} {d}" for d in ("pass", "review", "block"))
    return f"Release gate: {decision.upper()} ({counts})\n{how}"


def _layout(table: pd.DataFrame, names: list[str], directions: dict[str, bool], sort: str | None) -> list[Any]:
    """Slots top to bottom: a metric name (its heading) or a row index of ``table``."""
    slots: list[Any] = []
    for name in names:
        rows = table[table["metric"].astype(str) == name]
        sign = 1.0 if directions.get(name, True) else -1.0
        overall = rows[rows["slice"].astype(str) == "overall"]
        rest = rows.drop(overall.index)
        if sort is not None and len(rest):
            improvement = rest["diff"].astype(float) * sign
            worst = rest["low"].astype(float) if sign > 0 else -rest["high"].astype(float)
            keys = pd.DataFrame({"diff": improvement, "low": worst}, index=rest.index)
            by = ["diff"] if sort == "diff" else ["low"]
            if sort == "decision":
                keys["rank"] = rest["decision"].astype(str).map(_RANK).fillna(1)
                by = ["rank", "low"]
            rest = rest.loc[keys.sort_values(by, kind="mergesort", na_position="last").index]
        slots.append(name)
        slots.extend(list(overall.index) + list(rest.index))
    return slots


def _draw(
    ax: Axes, table: pd.DataFrame, layout: list[Any], marks: np.ndarray, margins: dict[str, float],
    directions: dict[str, bool], undirected: set[str], scale: str, level: float, decimals: dict[Any, int],
    xlabel: str, kwargs: dict[str, Any],
) -> tuple[set[str], list[Any]]:
    """One panel: headings, rows, reference and margin lines, points, intervals and text columns.

    Returns what the footnote should explain (``"overall"``, ``"hollow"``, ``"margin"``) and the text
    columns, as ``(header, cells, alignment)``, for :func:`_place_columns` to position.
    """
    mpl = import_optional("matplotlib", extra="plots", purpose="raglab.plots.forest")
    rc = mpl.rcParams
    ink, paper = rc["text.color"], rc["axes.facecolor"]
    muted = mpl.colors.to_rgba(ink, 0.55)
    y_of = {slot: -float(i) for i, slot in enumerate(layout)}
    rows = [s for s in layout if not isinstance(s, str)]
    sub = table.loc[rows]
    y = np.array([y_of[r] for r in rows])
    metrics = sub["metric"].astype(str).to_numpy()
    diff, low, high = (sub[c].to_numpy(dtype=float) for c in ("diff", "low", "high"))
    if scale == "margin":  # improvement / margin: right is better, every margin at -1
        factor = np.array([(1.0 if directions.get(m, True) else -1.0) / margins[m] for m in metrics])
        diff, low, high = diff * factor, np.fmin(low * factor, high * factor), np.fmax(low * factor, high * factor)
    decisions = sub["decision"].astype(str).tolist() if "decision" in sub.columns else [None] * len(sub)
    # the decision colours, lightened on a dark background until they read (WCAG 4.5:1); tables keep the originals
    marks_on, text_on = _background(ax, "axes"), _background(ax, "figure")
    palette = {d: _readable(c, marks_on) for d, c in DECISION_COLOURS.items()}
    words = {d: _readable(c, text_on) for d, c in DECISION_COLOURS.items()}
    ink = _readable(ink, text_on)
    colours = [palette.get(d, rc["axes.prop_cycle"].by_key()["color"][0]) for d in decisions]
    overall = (sub["slice"].astype(str) == "overall").to_numpy()
    finite = np.isfinite(low) & np.isfinite(high)

    ax.axvline(0.0, color=rc["axes.edgecolor"], linewidth=1.0, zorder=1, gid="raglab-zero")
    margin_x = _draw_margins(ax, metrics, y, margins, directions, undirected, scale, muted)
    picked = [c for c, f in zip(colours, finite) if f]
    ax.hlines(y[finite], low[finite], high[finite], colors=picked, linewidth=1.3, zorder=2, gid="raglab-intervals")
    if np.isfinite(level):  # the thick central half is scaled by the level: none without one
        inner = norm.ppf(0.75) / norm.ppf((1.0 + level) / 2.0)
        ax.hlines(y[finite], (diff - (diff - low) * inner)[finite], (diff + (high - diff) * inner)[finite],
                  colors=picked, linewidth=3.6, zorder=2, gid="raglab-intervals-inner")
    _draw_points(ax, np.where(np.isfinite(diff), diff, 0.0), y, colours, finite, overall, paper, kwargs)
    _label_rows(ax, table, layout, y_of, directions, undirected, xlabel, rc)
    # The right-hand columns, placed in points right of the axes so that they keep their place.
    made = _text_columns(ax, table.loc[rows], y, level, decimals, decisions, marks[rows], overall, words, ink)
    seen = {key for key, seen in [("overall", overall.any()), ("hollow", not finite.all()), ("margin", margin_x)] if seen}
    return seen, made


def _draw_margins(ax: Axes, metrics: np.ndarray, y: np.ndarray, margins: dict[str, float], directions: dict[str, bool],
                  undirected: set[str], scale: str, muted: Any) -> list[float]:
    """A dashed line per metric at its margin, on the bad side, spanning the metric's rows; their x."""
    margin_x, margin_lo, margin_hi = [], [], []
    for name in dict.fromkeys(metrics):
        value = margins.get(name)
        if value is None or value == 0 or not np.isfinite(value) or name in undirected:
            continue  # no bad side to draw it on for a metric with no direction
        ys = y[metrics == name]
        margin_x.append(-1.0 if scale == "margin" else (-value if directions.get(name, True) else value))
        margin_lo.append(ys.min() - 0.45)
        margin_hi.append(ys.max() + 0.45)
    if margin_x:
        ax.vlines(margin_x, margin_lo, margin_hi, colors=[muted], linestyles="dashed", linewidth=1.0,
                  zorder=1, gid="raglab-margins", label="margin")
    return margin_x


def _draw_points(ax: Axes, x: np.ndarray, y: np.ndarray, colours: list[Any], finite: np.ndarray, overall: np.ndarray,
                 paper: Any, kwargs: dict[str, Any]) -> None:
    """The estimates: diamonds for the overall rows, circles for slices, hollow without an interval."""
    from matplotlib.markers import MarkerStyle  # matplotlib is optional: imported when a plot is drawn

    style = {"s": 42, "zorder": 3, "linewidths": 1.2, **kwargs}
    if not {"c", "color", "facecolors", "facecolor"} & set(kwargs):
        style["facecolors"] = [c if f else "none" for c, f in zip(colours, finite)]
        style.setdefault("edgecolors", [paper if f else c for c, f in zip(colours, finite)])
    points = ax.scatter(x, y, gid="raglab-estimates", **style)
    if "marker" not in kwargs:
        shapes = [MarkerStyle("D" if o else "o") for o in overall]
        points.set_paths([m.get_path().transformed(m.get_transform()) for m in shapes])
        if "s" not in kwargs:
            points.set_sizes(np.where(overall, 58.0, 42.0))


def _label_rows(ax: Axes, table: pd.DataFrame, layout: list[Any], y_of: dict[Any, float],
                directions: dict[str, bool], undirected: set[str], xlabel: str, rc: Any) -> None:
    """The y labels (metric headings in bold, then their slices), separators, limits, x label and grid."""
    ticks = [y_of[s] for s in layout]
    labels = [(f"{s} (no direction)" if s in undirected else s if directions.get(s, True) else f"{s} (lower is better)")
              if isinstance(s, str) else str(table.at[s, "slice"]) for s in layout]
    ax.set_yticks(ticks, labels)
    ax.tick_params(axis="y", length=0)
    for slot, label in zip(layout, ax.get_yticklabels()):
        if isinstance(slot, str):
            label.set_fontweight("bold")
            label.set_gid("raglab-heading")
        elif table.at[slot, "slice"] == "overall":
            label.set_fontweight("bold")
    for slot in layout[1:]:
        if isinstance(slot, str):
            ax.axhline(y_of[slot] + 0.5, color=rc["grid.color"], linewidth=0.8, alpha=0.6, zorder=0)
    ax.set_ylim(-(len(layout) - 1) - 0.7, 0.7)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", color=rc["grid.color"], alpha=0.5, linewidth=0.8)
    ax.grid(axis="y", visible=False)
    ax.set_axisbelow(True)


def _text_columns(ax: Axes, raw: pd.DataFrame, y: np.ndarray, level: float, decimals: dict[Any, int],
                  decisions: list[Any], marks: np.ndarray, overall: np.ndarray, words: dict[str, Any],
                  ink: Any) -> list[Any]:
    """The right-hand text columns (``n``, ``diff [interval]``, the decision), as ``(header, cells, alignment)``."""
    columns = [("n", [f"{int(v):,}" for v in raw["n"]] if "n" in raw.columns else [""] * len(raw), "right")]
    columns.append((f"diff [{level:.0%} interval]" if np.isfinite(level) else "diff [interval]", [
        _interval_text(d, lo, hi, decimals[m])
        for m, d, lo, hi in zip(raw["metric"], raw["diff"].astype(float), raw["low"].astype(float), raw["high"].astype(float))
    ], "left"))
    if "decision" in raw.columns:
        columns.append(("decision", [d + ("\N{DAGGER}" if k else "") for d, k in zip(decisions, marks)], "left"))
    elif marks.any():
        columns.append(("", ["\N{DAGGER}" if k else "" for k in marks], "left"))
    made = []  # placed by _place_columns, once every panel's columns are known
    for c, (header, texts, align) in enumerate(columns):
        cells = [ax.text(1.0, yy, t, ha=align, va="center", fontsize="small", clip_on=False, gid=f"raglab-column-{c}",
                         color=(words.get(d, ink) if header == "decision" else ink), fontweight="bold" if o else "normal")
                 for yy, t, o, d in zip(y, texts, overall, decisions)]
        head = ax.text(1.0, 1.0, header, ha=align, va="bottom", fontsize="small", fontweight="bold",
                       transform=ax.transAxes, clip_on=False, gid=f"raglab-column-{c}-header", color=ink)
        made.append((head, cells, align))
    return made
