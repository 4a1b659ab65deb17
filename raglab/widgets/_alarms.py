"""From an alarm to the requests behind it: a monitor's alarms, each taken apart, one request at a time."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pandas as pd

from raglab._optional import import_optional
from raglab.widgets._explore import browser, navigation

#: columns a request view leaves out (the simulator's hidden truth, the sampling bookkeeping)
_HIDDEN = ("selected", "inclusion_probability")


def _alarm_name(row: Any) -> str:
    return f"{row['metric']} [{row['slice']}] at {pd.Timestamp(row['period']).strftime('%Y-%m-%d %H:%M').removesuffix(' 00:00')}"


def render_request(request: pd.Series, *, columns: Sequence[str] | None = None) -> str:
    """One request as an HTML table of its fields (text escaped; ``truth_`` columns left out).

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab.widgets import render_request
    >>> html = render_request(pd.Series({"request_id": 7, "question": "<b>?</b>", "truth_faithful": 1.0}))
    >>> "&lt;b&gt;" in html, "truth_faithful" in html
    (True, False)
    """
    names = [c for c in (columns or request.index) if c not in _HIDDEN and not str(c).startswith("truth_")]
    cells = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(str(c))}</th>"
                    f"<td>{html.escape(str(request[c]))}</td></tr>" for c in names)
    return f"<table>{cells}</table>"


def alarms(monitor: Any, *, columns: Sequence[str] | None = None, by: str | Sequence[str] | None = None) -> Any:
    """Walk from a monitor's alarm to the requests behind it.

    Pick an alarm; the view shows its post-mortem (:meth:`raglab.monitor.Monitor.post_mortem`: when
    the change started, with its interval, and which slices fell) and steps through the failing judged
    requests since the change, oldest first.

    Parameters
    ----------
    monitor : raglab.monitor.Monitor
        What :func:`raglab.monitor.monitor` returned.
    columns : list of str, optional
        The request fields to show (default: every column but the sampling bookkeeping and ``truth_``
        columns).
    by : str or list of str, optional
        Slice columns for the post-mortem (default: the monitor's).

    Returns
    -------
    ipywidgets.VBox
        The alarm picker, navigation (previous, next, a 1-based slider, "i of n") and the HTML view.

    Examples
    --------
    >>> import raglab
    >>> from raglab import widgets
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(200_000, days=40, drop_day=20, seed=1)
    >>> found = log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
    ...                         guarantee="arl", arl=365)
    >>> box = widgets.alarms(found)
    >>> box.children[1].children[3].value.startswith("1 of ")
    True
    """
    w = import_optional("ipywidgets", extra="widgets", purpose="raglab.widgets.alarms")
    if not hasattr(monitor, "alarms") or not hasattr(monitor, "post_mortem"):
        raise TypeError(f"alarms needs what raglab.monitor.monitor returns, got {type(monitor).__name__}")
    table = monitor.alarms
    names = [_alarm_name(row) for _, row in table.iterrows()]
    picker = w.Dropdown(options=[(n, i) for i, n in enumerate(names)] or [("no alarm", -1)], description="alarm",
                        disabled=not names)
    position, previous, following, status, view = navigation(w, 1, "request")
    cache: dict[int, Any] = {}

    def refresh(*_: Any) -> None:
        i = picker.value
        if i is None or i < 0:
            status.value = "no alarm"
            view.value = f"<p><i>No alarm: {html.escape(monitor.guarantee)}</i></p>"
            return
        if i not in cache:
            cache[i] = monitor.post_mortem(i, by=by)
        pm = cache[i]
        requests = pm.requests
        position.max = max(1, len(requests))
        position.disabled = len(requests) <= 1
        summary = f"<pre>{html.escape(repr(pm))}</pre>"
        if requests.empty:
            status.value = "no failing request"
            view.value = summary
            return
        k = min(position.value, len(requests)) - 1
        status.value = f"{k + 1} of {len(requests)} failing request(s) since {pm.started:%Y-%m-%d}"
        view.value = summary + render_request(requests.iloc[k], columns=columns)

    return browser(w, [picker], position, previous, following, status, view, refresh)
