"""Power curves for eval-set sizing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from raglab import sizing
from raglab._optional import import_optional

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


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
        Draw here; default a new figure (constrained layout, so the legend outside the plot is kept).
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
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.power_curve")
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    effects = [float(mde)] if np.isscalar(mde) else [float(m) for m in mde]
    needed = [sizing.questions_needed(m, power=target, **design) for m in effects]
    if n is None:
        top = max(max(needed) * 1.6, 100)
        n = np.unique(np.geomspace(20, top, 80).astype(int))
    if ax is None:
        _, ax = plt.subplots(figsize=(8.5, 4.2), layout="constrained")  # the legend outside, to the right
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
