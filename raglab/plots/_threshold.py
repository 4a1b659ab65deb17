"""The judge-threshold view: sensitivity, specificity and kappa against a scoring judge's threshold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._meta import get_meta
from raglab._optional import import_optional

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

_CURVES = (("sensitivity", "sensitivity (people pass, judge passes)"),
           ("specificity", "specificity (people fail, judge fails)"),
           ("kappa", "Cohen's kappa"))
_RULES = {"kappa": "highest kappa", "youden": "highest sensitivity + specificity - 1"}


def _chosen_row(sweep: pd.DataFrame, threshold: float | str) -> tuple[int, str]:
    """The row of the marked threshold and why it was chosen."""
    if isinstance(threshold, str):
        if threshold not in _RULES:
            raise ValueError(
                f"The value for `threshold` must be a number or one of {list(_RULES)}, but {threshold!r} was passed."
            )
        values = sweep["kappa" if threshold == "kappa" else "attenuation"].to_numpy(dtype=float)
        if not np.isfinite(values).any():
            raise ValueError(
                f"judge_thresholds: no threshold has a finite {'kappa' if threshold == 'kappa' else 'attenuation'} "
                "(people used one label only); pass threshold=<a number> to mark one"
            )
        return int(np.nanargmax(values)), _RULES[threshold]
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise TypeError(f"`threshold` must be a number or one of {list(_RULES)}, got {threshold!r}") from None
    grid = sweep["threshold"].to_numpy(dtype=float)
    close = np.flatnonzero(np.isclose(grid, value, rtol=0, atol=1e-12 * max(1.0, abs(value))))
    if close.size == 0:
        raise ValueError(
            f"judge_thresholds: threshold {value!r} is not one of the sweep's thresholds "
            f"({grid.min():.4g} to {grid.max():.4g}, {grid.size} values); sweep it too, e.g. "
            f"agreement.threshold_sweep(human, judge, thresholds=np.append(sweep['threshold'], {value!r}))"
        )
    return int(close[0]), "chosen"


def _text_height(
    sweep: pd.DataFrame, value: float, span: float, right_side: bool, ylim: tuple[float, float]
) -> tuple[float, str]:
    """Where the marked threshold's text goes (axes fraction, alignment): the band the curves cross least.

    The text sits beside the vertical line, over about 40% of the width; of a band at the bottom,
    the top and the middle, the one holding the fewest curve points there is used.
    """
    x = sweep["threshold"].to_numpy(dtype=float)
    near = (x >= value) & (x <= value + 0.4 * span) if right_side else (x <= value) & (x >= value - 0.4 * span)
    points = np.concatenate([sweep[c].to_numpy(dtype=float)[near] for c, _ in _CURVES])
    points = (points[np.isfinite(points)] - ylim[0]) / (ylim[1] - ylim[0])
    bands = ((0.03, "bottom", (0.0, 0.24)), (0.97, "top", (0.76, 1.0)), (0.5, "center", (0.38, 0.62)))
    crossed = [int(((points >= lo) & (points <= hi)).sum()) for _, _, (lo, hi) in bands]
    y, va, _ = bands[int(np.argmin(crossed))]
    return y, va


def _number(value: float) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.2f}"


def judge_thresholds(
    sweep: pd.DataFrame,
    *,
    threshold: float | str = "kappa",
    intervals: bool = True,
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """Sensitivity, specificity and kappa against the judge's score threshold, one threshold marked.

    Reads the table of :func:`raglab.agreement.threshold_sweep`. Three step curves -- sensitivity,
    specificity (with their Wilson bands) and Cohen's kappa -- in the active style's colour
    cycle; a vertical line at the marked threshold with its values written beside it; the legend
    outside the plot, to its right, under a title naming the judge, the people and ``n``.

    The rates only change at the judge's distinct scores, so curves and bands are drawn as steps:
    the judge passes a score ``>= t``, so the value at a threshold holds from the previous threshold
    (exclusive) up to it (``drawstyle="steps-pre"``). With the sweep's default thresholds (every
    distinct score) this is exact; on a coarser grid (``max_thresholds=`` or given thresholds) the
    rates may change between grid points, and the step shows the value at the next one up.

    Parameters
    ----------
    sweep : DataFrame
        The table of :func:`raglab.agreement.threshold_sweep`.
    threshold : float or {"kappa", "youden"}
        The threshold to mark: one of the sweep's thresholds, or the one with the highest kappa
        (default) or the highest Youden's J (``sensitivity + specificity - 1``); ties go to the
        lowest threshold.
    intervals : bool
        Shade the Wilson bands of sensitivity and specificity.
    ax : matplotlib Axes, optional
        Draw here; default a new figure sized for the plot and its legend.
    **kwargs
        Passed to the three curves' :meth:`~matplotlib.axes.Axes.plot` (e.g. ``linewidth``, ``marker``).

    Returns
    -------
    matplotlib Axes
        The curves have gids ``raglab-sensitivity``, ``raglab-specificity`` and ``raglab-kappa``;
        the marked threshold ``raglab-chosen`` (line) and ``raglab-chosen-text`` (its values).

    Examples
    --------
    >>> from raglab import agreement
    >>> from raglab.plots import judge_thresholds
    >>> human = [1, 1, 1, 1, 0, 0, 0, 1]
    >>> sweep = agreement.threshold_sweep(human, [0.9, 0.8, 0.8, 0.4, 0.7, 0.2, 0.1, 0.6])
    >>> ax = judge_thresholds(sweep)
    >>> [line.get_gid() for line in ax.get_lines()]
    ['raglab-sensitivity', 'raglab-specificity', 'raglab-kappa', 'raglab-chosen']
    >>> print(next(t for t in ax.texts if t.get_gid() == "raglab-chosen-text").get_text())
    threshold 0.4 (highest kappa)
    sensitivity 1.00, specificity 0.67
    kappa 0.71, miss rate 0.33
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.judge_thresholds")
    import matplotlib.transforms as mtransforms

    if not isinstance(sweep, pd.DataFrame):
        raise TypeError(
            f"judge_thresholds needs the table of raglab.agreement.threshold_sweep, got {type(sweep).__name__}"
        )
    needed = ["threshold", "sensitivity", "specificity", "kappa", "miss_rate", "n"]
    missing = [c for c in needed if c not in sweep.columns]
    if missing or sweep.empty:
        what = f"missing columns {missing} (found {list(sweep.columns)})" if missing else "no rows"
        raise ValueError(
            f"judge_thresholds needs the table of raglab.agreement.threshold_sweep: {what}; make it with "
            "agreement.threshold_sweep(human, judge_scores)"
        )
    sweep = sweep.sort_values("threshold", kind="stable").reset_index(drop=True)
    row, why = _chosen_row(sweep, threshold)
    meta = get_meta(sweep).get("threshold_sweep", {})
    judge_name, human_name = str(meta.get("judge_name", "judge")), str(meta.get("human_name", "people"))
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.5, 4.5), layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2"])
    text_colour = plt.rcParams["text.color"]
    x = sweep["threshold"].to_numpy(dtype=float)
    # a step function of t: with "pass when score >= t" the rates at t_i hold for every t in
    # (t_{i-1}, t_i] (no score lies between two thresholds of the sweep), hence "steps-pre"
    options = {"linewidth": 1.8, "marker": "o" if len(x) <= 40 else None, "markersize": 3, "drawstyle": "steps-pre"}
    options.update(kwargs)
    for i, (column, label) in enumerate(_CURVES):
        y = sweep[column].to_numpy(dtype=float)
        style = {"color": colours[i % len(colours)], **options}
        if column == "kappa":
            style.setdefault("linestyle", "--")
        (line,) = ax.plot(x, y, label=label, gid=f"raglab-{column}", **style)
        low, high = f"{column}_low", f"{column}_high"
        if intervals and low in sweep.columns and high in sweep.columns:
            band = ax.fill_between(x, sweep[low].to_numpy(dtype=float), sweep[high].to_numpy(dtype=float),
                                   color=line.get_color(), alpha=0.15, linewidth=0, label="_nolegend_",
                                   step="pre")
            band.set_gid(f"raglab-{column}-band")
    chosen = sweep.iloc[row]
    value = float(chosen["threshold"])
    ax.axvline(value, color=text_colour, linestyle=":", linewidth=1.2, alpha=0.8, gid="raglab-chosen")
    text = (f"threshold {value:.4g} ({why})\n"
            f"sensitivity {_number(chosen['sensitivity'])}, specificity {_number(chosen['specificity'])}\n"
            f"kappa {_number(chosen['kappa'])}, miss rate {_number(chosen['miss_rate'])}")
    span = x.max() - x.min()
    right_side = span == 0 or (value - x.min()) <= 0.6 * span
    lowest = np.nanmin(np.append(sweep["kappa"].to_numpy(dtype=float), 0.0))
    ylim = (min(-0.02, lowest - 0.05), 1.02)
    y_text, va = _text_height(sweep, value, span, right_side, ylim)
    ax.text(value, y_text, text, transform=mtransforms.blended_transform_factory(ax.transData, ax.transAxes),
            ha="left" if right_side else "right", va=va, fontsize="small", color=text_colour,
            gid="raglab-chosen-text", zorder=5,
            bbox={"boxstyle": "round,pad=0.3", "facecolor": plt.rcParams["axes.facecolor"], "alpha": 0.85,
                  "edgecolor": "none"})
    ax.set_ylim(*ylim)
    if span == 0:
        ax.set_xlim(value - 0.5, value + 0.5)
    chosen_here = isinstance(threshold, str)  # picked on these labels: its numbers flatter the judge
    ax.set_xlabel(f"threshold on {judge_name} (the judge passes a score >= threshold)"
                  + ("\na threshold picked on these labels looks better than it will be: confirm it on fresh ones"
                     if chosen_here else ""))
    ax.set_ylabel("rate or kappa")
    ax.set_title(f"{judge_name} against {human_name}: agreement by threshold")
    n, excluded = int(sweep["n"].iloc[0]), int(sweep["n_excluded"].iloc[0]) if "n_excluded" in sweep else 0
    title = f"n = {n:,}" + (f" ({excluded:,} without a label or score)" if excluded else "")
    if "human_positive" in sweep.columns:
        title += f"\npeople pass {int(sweep['human_positive'].iloc[0]):,}, fail {int(sweep['human_negative'].iloc[0]):,}"
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize="small", title=title,
              title_fontsize="small")
    return ax
