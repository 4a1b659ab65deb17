"""A rate over time: the estimate with its band per period, the reference, and the monitor's alarms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


def over_time(
    result: Any,
    metric: str | None = None,
    *,
    slices: str | Sequence[str] | None = None,
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """One metric's rate per period, a band for its interval, and (from a monitor) the reference and alarms.

    Parameters
    ----------
    result : pandas.DataFrame or raglab.monitor.Monitor
        A table from :func:`raglab.monitor.over_time`, or what :func:`raglab.monitor.monitor` returns:
        then the reference is a dashed line, periods that set it are shaded, and each alarm is a
        red marker with the stretch from its estimated start to the alarm shaded.
    metric : str, optional
        Which metric (default: the only one, or the first).
    slices : str or list of str, optional
        Which slices (default: ``overall``, plus every alarmed slice of a monitor).
    ax : matplotlib Axes, optional
        Draw here; default a new figure.
    **kwargs
        Passed to the estimate's line (``linewidth=``, ...).

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import raglab
    >>> from raglab import plots
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(200_000, days=40, drop_day=20, seed=1)
    >>> found = log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
    ...                         guarantee="arl", arl=365)
    >>> ax = plots.over_time(found)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['overall', 'billing', 'alarm (shaded: since its start)']
    """
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab.plots.over_time")
    monitor = None
    table = result
    if not isinstance(result, pd.DataFrame):
        if not hasattr(result, "table") or not hasattr(result, "alarms"):
            raise TypeError(f"over_time plots a table from raglab.monitor.over_time or a Monitor, got "
                            f"{type(result).__name__}")
        monitor, table = result, result.table
    needed = {"period", "slice", "metric", "estimate", "low", "high"}
    if not needed <= set(table.columns):
        raise ValueError(f"over_time needs the columns {sorted(needed)}; the table has {list(table.columns)}")
    metrics = list(dict.fromkeys(table["metric"]))
    metric = metrics[0] if metric is None else metric
    if metric not in metrics:
        raise ValueError(f"metric {metric!r} is not in the table; it has {metrics}")
    part = table[table["metric"] == metric]
    if slices is None:
        chosen = ["overall"] if "overall" in set(part["slice"]) else [str(part["slice"].iloc[0])]
        if monitor is not None:
            alarmed = monitor.alarms[monitor.alarms["metric"] == metric]["slice"].tolist()
            chosen += [s for s in dict.fromkeys(alarmed) if s not in chosen]
    else:
        chosen = [slices] if isinstance(slices, str) else list(slices)
    unknown = [s for s in chosen if s not in set(part["slice"])]
    if unknown:
        raise ValueError(f"slices {unknown} are not in the table; it has {sorted(set(part['slice']))}")
    if ax is None:
        _, ax = plt.subplots(figsize=(9.0, 4.0), layout="constrained")
    ink = plt.rcParams["text.color"]
    for name in chosen:
        rows = part[part["slice"] == name].sort_values("period")
        (line,) = ax.plot(rows["period"], rows["estimate"], label=name, **kwargs)
        ax.fill_between(rows["period"], rows["low"], rows["high"], color=line.get_color(), alpha=0.18, linewidth=0)
        if monitor is not None and "reference" in rows.columns and rows["reference"].notna().any():
            ax.step(rows["period"], rows["reference"], where="post", color=line.get_color(), linestyle="--",
                    linewidth=1, alpha=0.8)
            if "phase" in rows.columns:
                ref = rows[rows["phase"] == "reference"]
                if len(ref) and name == chosen[0]:
                    ax.axvspan(ref["period"].min(), ref["period"].max(), color=ink, alpha=0.06, linewidth=0)
    if monitor is not None:
        alarms = monitor.alarms[(monitor.alarms["metric"] == metric) & monitor.alarms["slice"].isin(chosen)]
        for row in alarms.itertuples():
            ax.axvspan(row.start, row.period, color="tab:red", alpha=0.08, linewidth=0)
            ax.plot([row.period], [row.estimate], marker="v", color="tab:red", markersize=9, linestyle="none")
        if len(alarms):
            ax.plot([], [], marker="v", color="tab:red", linestyle="none", label="alarm (shaded: since its start)")
        ax.set_title(_wrap(monitor.guarantee.split(";")[0], 110), fontsize="small", loc="left")
    level = float(part["level"].iloc[0]) if "level" in part.columns and len(part) else np.nan
    ax.set_ylabel(f"{metric} ({100 * level:.0f}% band)" if np.isfinite(level) else metric)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0, fontsize="small")
    ax.figure.autofmt_xdate()
    return ax


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
