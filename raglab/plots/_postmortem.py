"""The post-mortem view of two runs: which questions flipped, per slice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._results import DECISION_COLOURS
from raglab._validation import called_as, check_option
from raglab.plots._common import _signed
from raglab.runs import flips

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


_SORTS = (None, "net", "losses", "wins", "n")


def _count(value: float, per: float | None) -> str:
    """A count with thousands separators (``1,295``), or a rate per ``per`` questions (``12.5``)."""
    return f"{int(value):,}" if per is None else f"{value:,.1f}"


def _net_text(value: float, per: float | None) -> str:
    """``net +1,295`` / ``net −1,548`` (a true minus sign, as on the axes and the forest)."""
    return "net " + _signed(value, 0 if per is None else 1)


def _sorted(table: pd.DataFrame, sort: str | None, suffix: str) -> pd.DataFrame:
    """The overall row first, then the slices in table order or by ``sort`` (ties keep table order)."""
    if sort is None or len(table) < 3:
        return table
    column, ascending = {"net": (f"net{suffix}", True), "losses": (f"losses{suffix}", False),
                         "wins": (f"wins{suffix}", False), "n": ("n", False)}[sort]
    rest = table.iloc[1:].sort_values(column, ascending=ascending, kind="stable", na_position="last")
    return pd.concat([table.iloc[:1], rest], ignore_index=True)


def wins_losses(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metric: str,
    *,
    by: str | Sequence[str] | None = None,
    threshold: float | None = None,
    higher_is_better: bool | None = None,
    per: float | None = None,
    sort: str | None = None,
    on: str = "question_id",
    how: str = "exact",
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """Diverging bars of the questions that flipped between two runs, one row per slice.

    Pass->fail questions (losses) extend to the left in the block colour, fail->pass questions
    (wins) to the right in the pass colour; a diamond marks the net change (wins - losses) and the
    counts are written at the bar ends (``1,295``) and the net in a column on the right. The overall
    row comes first, in bold; slices with no scored question are left out. The counts are
    :func:`raglab.runs.flips`. When the overall row is much longer than every slice (it is their
    sum), the axis is scaled to the slices: the overall bars run off its edges with their counts
    written inside them, and the x label says so (``per=`` rates are always to scale).

    Parameters
    ----------
    base, cand : DataFrame
        The baseline and candidate runs, paired by question id (``on``, ``how`` as in
        :func:`raglab.runs.compare`).
    metric : str
        A pass/fail score column (0/1 or True/False), or any score with ``threshold=``.
    by : str or list of str, optional
        Slice column(s).
    threshold : float, optional
        A question passes when ``metric >= threshold`` (``<=`` when lower is better).
    higher_is_better : bool, optional
        The direction (default: from the metric's name).
    per : float, optional
        Draw rates per ``per`` questions of each row (e.g. ``per=100``) instead of counts, so that
        slices of different sizes compare.
    sort : {None, "net", "losses", "wins", "n"}
        Order of the slices under the overall row: the table's order (default), worst net change
        first, most losses first, most wins first, or largest slice first (rates with ``per=``).
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure sized to the rows).
    **kwargs
        Passed to both ``Axes.barh`` calls (e.g. ``height=``, ``alpha=``).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from raglab import datasets
    >>> from raglab.plots import wins_losses
    >>> ax = wins_losses(datasets.squad_reader("bert"), datasets.squad_reader("bidaf"), "em", by="qtype")
    >>> [t.get_text() for t in ax.get_yticklabels()][:2]
    ['overall  n=11,873', 'how  n=1,266']
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.wins_losses")

    check_option("sort", sort, _SORTS)

    with called_as("raglab.plots.wins_losses"):  # errors name the plot
        table = flips(base, cand, metric, by=by, threshold=threshold, higher_is_better=higher_is_better, per=per,
                      on=on, how=how)
    rule = table.attrs["raglab"]["flips"]["pass"]
    table = table[(table["n"] > 0) | (table.index == 0)].reset_index(drop=True)
    suffix = "" if per is None else "_per"
    table = _sorted(table, sort, suffix)
    losses = table[f"losses{suffix}"].to_numpy(dtype=float)
    wins = table[f"wins{suffix}"].to_numpy(dtype=float)
    net = table[f"net{suffix}"].to_numpy(dtype=float)
    y = np.arange(len(table), dtype=float)

    labels = [f"{s}  n={n:,}" for s, n in zip(table["slice"], table["n"])]
    if ax is None:
        width = max(8.0, 5.6 + 0.075 * max(len(label) for label in labels))  # room for long slice names
        _, ax = plt.subplots(figsize=(width, 1.6 + 0.36 * len(table)), layout="constrained")
    ink = plt.rcParams["text.color"]
    style = {"height": 0.62, **kwargs}
    left = ax.barh(y, -np.nan_to_num(losses), color=DECISION_COLOURS["block"], label="pass→fail", **style)
    right = ax.barh(y, np.nan_to_num(wins), color=DECISION_COLOURS["pass"], label="fail→pass", **style)
    for patch in left:
        patch.set_gid("raglab-losses")
    for patch in right:
        patch.set_gid("raglab-wins")
    ax.scatter(net, y, marker="D", s=36, color=ink, edgecolors=plt.rcParams["axes.facecolor"], linewidths=0.8,
               zorder=3, gid="raglab-net", label="net (wins - losses)")
    ax.axvline(0, color=ink, linewidth=0.8, zorder=2)

    def _reach(rows: slice) -> float:
        return float(np.nanmax(np.abs(np.concatenate([losses[rows], wins[rows], net[rows], [1e-9]]))))

    reach = _reach(slice(None))
    # counts: the overall row (the sum of the slices) would squeeze every slice into a sliver, so
    # when it is much longer the axis is scaled to the slices and the overall bars run off its edge
    cut = per is None and len(table) > 1 and reach > 2.5 * _reach(slice(1, None))
    if cut:
        reach = _reach(slice(1, None))
    limit = 1.45 * reach
    for i in range(len(table)):
        weight = "bold" if i == 0 else "normal"
        for value, side, gid in ((losses[i], -1, "raglab-loss-count"), (wins[i], 1, "raglab-win-count")):
            if cut and i == 0 and value > limit:  # inside the bar, at the axis edge, in white
                ax.text(side * limit, y[i], f" {_count(value, per)} ", ha="left" if side < 0 else "right",
                        va="center", color="white", fontsize="small", fontweight=weight, gid=gid, zorder=4)
                continue
            ax.annotate(_count(value, per), (side * (0 if np.isnan(value) else value), y[i]),
                        xytext=(side * 3, 0), textcoords="offset points", ha="left" if side > 0 else "right",
                        va="center", color=ink, fontsize="small", fontweight=weight, gid=gid)
        ax.text(1.01, y[i], _net_text(net[i], per),
                transform=ax.get_yaxis_transform(), ha="left", va="center", color=ink, fontsize="small",
                fontweight=weight, gid="raglab-net-text")
    ax.set_xlim(-limit, limit)
    ax.set_yticks(y, labels)
    ax.get_yticklabels()[0].set_fontweight("bold")
    ax.set_ylim(len(table) - 0.5, -0.5)
    if len(table) > 1:
        ax.axhline(0.5, color=ink, linewidth=0.5, alpha=0.4)
    unit = "questions" if per is None else f"per {per:g} questions of the row"
    ax.set_xlabel(f"{unit}: ← pass→fail (losses)    fail→pass (wins) →"
                  + ("\noverall row not to scale: its bars run off the axis (counts written in them)" if cut else ""))
    if by is not None:
        ax.set_ylabel(by if isinstance(by, str) else ", ".join(by))
    excluded = int(table["n_excluded"].iloc[0])
    note = f"; {excluded} without a score in both runs left out" if excluded else ""
    ax.set_title(f"Questions that flipped on {metric} (pass: {rule}){note}", color=ink, fontsize="medium", pad=22)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize="small", frameon=False,
              labelcolor=ink, handlelength=1.2, borderaxespad=0.2)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{abs(v):,g}"))
    return ax
