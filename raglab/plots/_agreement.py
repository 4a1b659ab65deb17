"""The judge-vs-human confusion heatmap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._results import DECISION_COLOURS
from raglab._validation import check_option
from raglab.plots._common import _contrast

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


_MISS_EDGE = DECISION_COLOURS["block"]  # the miss-rate cell's outline: false passes are the costly error


_DARK_TEXT, _LIGHT_TEXT = "#262626", "#ffffff"  # seaborn's ".15" and "w"


def _readable_on(cell: Sequence[float]) -> str:
    """Dark or white text, whichever contrasts more with the cell (WCAG contrast ratio).

    seaborn switches to white text at luminance 0.408, which leaves mid-blue cells of "Blues" at
    about 2.9:1 against white; choosing by contrast keeps every annotation above 4.5:1 there.
    """
    rgb = tuple(cell[:3])
    return _DARK_TEXT if _contrast(_DARK_TEXT, rgb) >= _contrast(_LIGHT_TEXT, rgb) else _LIGHT_TEXT


def _recolour_annotations(ax: Any, mesh: Any, n_columns: int) -> None:
    """Give each cell's annotation the text colour that reads best on that cell."""
    colours = mesh.get_facecolors()
    for text in ax.texts:
        x, y = text.get_position()
        index = int(np.floor(y)) * n_columns + int(np.floor(x))
        if 0 <= index < len(colours):
            text.set_color(_readable_on(colours[index]))


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


def _counts(table: pd.DataFrame) -> np.ndarray:
    """The table's cells as floats, or an error naming the first cell that is not a finite count >= 0.

    Checked here because numpy's own errors ("cannot convert float NaN to integer", "could not convert
    string to float") name neither the cell nor the column.
    """
    for column, dtype in table.dtypes.items():
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_object_dtype(dtype)):
            raise TypeError(f"confusion_heatmap needs counts; column {column!r} has dtype {dtype}")
    for i, row in enumerate(table.index):
        for j, column in enumerate(table.columns):
            value = table.iat[i, j]
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise TypeError(
                    f"confusion_heatmap needs counts; the cell (people {row!r}, judge {column!r}) is {value!r} "
                    f"in a column of dtype {table.dtypes.iloc[j]}"
                ) from None
            if not (np.isfinite(number) and number >= 0):
                raise ValueError(
                    f"confusion_heatmap needs finite counts >= 0; the cell (people {row!r}, judge {column!r}) is {number:g}"
                )
    return table.to_numpy(dtype=float)


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
    side compare by colour; counts are coloured from 0 to the largest count (pass ``vmax=`` to share). Each
    cell's number is dark or white, whichever contrasts more with that cell (readable on any style).

    Parameters
    ----------
    report : AgreementReport or DataFrame
        A :class:`raglab.agreement.AgreementReport` (its ``confusion``) or a labelled square table.
    normalize : {None, "rows", "all"}
        Show counts (default), shares of each human label (``"rows"``: the per-class recall is on
        the diagonal and the miss rate off it), or shares of all items.
    ax : matplotlib Axes, optional
        Draw here; default a new figure (constrained layout) sized to the table and the note.
    cmap : str
        Colour map.
    **kwargs
        Passed to ``seaborn.heatmap``.

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
    from matplotlib.offsetbox import AnnotationBbox, TextArea
    from matplotlib.patches import Rectangle

    table = getattr(report, "confusion", report)
    if not isinstance(table, pd.DataFrame) or table.shape[0] != table.shape[1]:
        raise TypeError("confusion_heatmap needs an AgreementReport or a square DataFrame of counts; got "
                        f"{type(table).__name__}" + (f" of shape {table.shape}" if isinstance(table, pd.DataFrame) else ""))
    check_option("normalize", normalize, [None, "rows", "all"])
    counts = _counts(table)
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
        side = 1.15 * table.shape[1] + 3.2  # room for the labels and the note under the cells
        _, ax = plt.subplots(figsize=(max(5.2, side), max(4.4, 1.15 * table.shape[0] + 2.6)), layout="constrained")
    positive = getattr(report, "positive", None)
    options_heatmap = {"annot": annotations, "fmt": "", "cmap": cmap, "cbar": False, "square": True,
                       "vmin": 0, "linewidths": 0.5, "linecolor": plt.rcParams["axes.facecolor"],
                       "xticklabels": _tick_names(table.columns, positive),
                       "yticklabels": _tick_names(table.index, positive)}
    if normalize:
        options_heatmap["vmax"] = 1  # one scale for every panel of shares
    options_heatmap.update(kwargs)
    sns.heatmap(shown, ax=ax, **options_heatmap)
    annot = options_heatmap.get("annot")
    if annot is not None and annot is not False and "color" not in dict(options_heatmap.get("annot_kws") or {}):
        _recolour_annotations(ax, ax.collections[-1], table.shape[1])
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
        # under the x label, anchored to it: constrained layout and bbox_inches="tight" both make room for it
        text = TextArea(_heatmap_note(report, table, counts), textprops={
            "fontsize": "small", "color": plt.rcParams["text.color"], "ha": "center", "multialignment": "center"})
        note = AnnotationBbox(text, (0.5, 0), xycoords=ax.xaxis.label, xybox=(0, -4), boxcoords="offset points",
                              box_alignment=(0.5, 1), frameon=False, pad=0, annotation_clip=False)
        note.set_gid("raglab-heatmap-note")
        ax.add_artist(note)
    return ax
