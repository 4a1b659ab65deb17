"""The post-mortem view of two runs: which questions flipped, per slice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab.plots._common import _DECISION_COLOURS

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


def _count(value: float, per: float | None) -> str:
    return f"{int(value)}" if per is None else f"{value:.1f}"


def wins_losses(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metric: str,
    *,
    by: str | Sequence[str] | None = None,
    threshold: float | None = None,
    higher_is_better: bool | None = None,
    per: float | None = None,
    on: str = "question_id",
    how: str = "exact",
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """Diverging bars of the questions that flipped between two runs, one row per slice.

    Pass->fail questions (losses) extend to the left in the block colour, fail->pass questions
    (wins) to the right in the pass colour; a diamond marks the net change (wins - losses) and the
    counts are written at the bar ends. The overall row comes first, in bold; slices with no
    scored question are left out. The counts are :func:`raglab.runs.flips`.

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
    from raglab.runs import flips

    table = flips(base, cand, metric, by=by, threshold=threshold, higher_is_better=higher_is_better, per=per,
                  on=on, how=how, method_name="raglab.plots.wins_losses")
    rule = table.attrs["raglab"]["flips"]["pass"]
    table = table[(table["n"] > 0) | (table.index == 0)].reset_index(drop=True)
    suffix = "" if per is None else "_per"
    losses = table[f"losses{suffix}"].to_numpy(dtype=float)
    wins = table[f"wins{suffix}"].to_numpy(dtype=float)
    net = table[f"net{suffix}"].to_numpy(dtype=float)
    y = np.arange(len(table), dtype=float)

    if ax is None:
        _, ax = plt.subplots(figsize=(8.0, 1.6 + 0.42 * len(table)), layout="constrained")
    ink = plt.rcParams["text.color"]
    style = {"height": 0.62, **kwargs}
    left = ax.barh(y, -np.nan_to_num(losses), color=_DECISION_COLOURS["block"], label="pass→fail", **style)
    right = ax.barh(y, np.nan_to_num(wins), color=_DECISION_COLOURS["pass"], label="fail→pass", **style)
    for patch in left:
        patch.set_gid("raglab-losses")
    for patch in right:
        patch.set_gid("raglab-wins")
    ax.scatter(net, y, marker="D", s=36, color=ink, edgecolors=plt.rcParams["axes.facecolor"], linewidths=0.8,
               zorder=3, gid="raglab-net", label="net (wins - losses)")
    ax.axvline(0, color=ink, linewidth=0.8, zorder=2)

    reach = float(np.nanmax(np.abs(np.concatenate([losses, wins, net, [1e-9]]))))
    pad = 0.03 * reach
    for i in range(len(table)):
        weight = "bold" if i == 0 else "normal"
        ax.text(-losses[i] - pad, y[i], _count(losses[i], per), ha="right", va="center", color=ink,
                fontsize="small", fontweight=weight, gid="raglab-loss-count")
        ax.text(wins[i] + pad, y[i], _count(wins[i], per), ha="left", va="center", color=ink,
                fontsize="small", fontweight=weight, gid="raglab-win-count")
        ax.text(1.01, y[i], f"net {net[i]:+.1f}" if per is not None else f"net {int(net[i]):+d}",
                transform=ax.get_yaxis_transform(), ha="left", va="center", color=ink, fontsize="small",
                fontweight=weight, gid="raglab-net-text")
    ax.set_xlim(-1.3 * reach, 1.3 * reach)
    ax.set_yticks(y, [f"{s}  n={n:,}" for s, n in zip(table["slice"], table["n"])])
    ax.get_yticklabels()[0].set_fontweight("bold")
    ax.set_ylim(len(table) - 0.5, -0.5)
    if len(table) > 1:
        ax.axhline(0.5, color=ink, linewidth=0.5, alpha=0.4)
    unit = "questions" if per is None else f"per {per:g} questions of the row"
    ax.set_xlabel(f"{unit}: ← pass→fail (losses)    fail→pass (wins) →")
    if by is not None:
        ax.set_ylabel(by if isinstance(by, str) else ", ".join(by))
    excluded = int(table["n_excluded"].iloc[0])
    note = f"; {excluded} without a score in both runs left out" if excluded else ""
    ax.set_title(f"Questions that flipped on {metric} (pass: {rule}){note}", color=ink, fontsize="medium", pad=22)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize="small", frameon=False,
              labelcolor=ink, handlelength=1.2, borderaxespad=0.2)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{abs(v):g}"))
    return ax
