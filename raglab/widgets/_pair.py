"""The pair explorer: a baseline and a candidate run side by side, one question at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._rowtable import Roles, pair_runs, resolve_column
from raglab._validation import called_as, caller, is_missing
from raglab.widgets._explore import (
    ALL_SLICES,
    BAD,
    GOOD,
    MUTED,
    browser,
    esc,
    field_columns,
    format_value,
    navigation,
    render_row,
    role_overrides,
    score_columns,
    text_parts,
)

__all__ = ["explore_pair"]

FLIP_OPTIONS = ("all", "pass->fail", "fail->pass", "unchanged")
_FLIP_STYLE = {"pass->fail": (BAD, "pass → fail"), "fail->pass": (GOOD, "fail → pass"),
               "unchanged": (MUTED, "unchanged"), "missing": (MUTED, "missing on one side")}


def _flip_line(metric: str, rule: str, direction: str, before: Any, after: Any) -> str:
    colour, text = _FLIP_STYLE[direction]
    shown = ["missing" if is_missing(v) else format_value(v) for v in (before, after)]  # as the panels show them
    return (f"<p><b>{esc(metric)}</b>: {esc(shown[0])} → {esc(shown[1])} "
            f"<span style='color:{colour};font-weight:bold'>{esc(text)}</span> "
            f"<span style='color:{MUTED}'><i>(pass: {esc(rule)})</i></span></p>")


def render_pair(base_row: pd.Series, cand_row: pd.Series, *, columns: tuple[dict[str, str | None], dict[str, str | None]],
                scores: tuple[Sequence[str], Sequence[str]] = ((), ()), fields: tuple[Sequence[str], Sequence[str]] = ((), ()),
                labels: tuple[str, str] = ("baseline", "candidate"), header: str = "") -> str:
    """HTML for one question of two runs: the shared question and reference, then the two rows side by side.

    Each side is :func:`raglab.widgets.render_row` (answer, scores, retrieved ids with gold marked,
    judge claims and reasons), headed by its run's label.

    Examples
    --------
    >>> import pandas as pd
    >>> cols = {"question_id": "question_id", "question": "question", "answer": "answer",
    ...         "retrieved": "retrieved", "gold": "gold"}
    >>> a = pd.Series({"question_id": "q1", "question": "Who?", "answer": "Ada", "retrieved": ["d1"], "gold": ["d1"]})
    >>> b = a.copy(); b["answer"], b["retrieved"] = "Bob", ["d2"]
    >>> html = render_pair(a, b, columns=(cols, cols))
    >>> "Ada" in html and "Bob" in html and "d1 ✓" in html
    True
    """
    shared = ("question_id", "question", "reference")  # shown once, from the baseline row
    parts = text_parts(base_row, {role: columns[0].get(role) for role in shared})
    parts.append(header)
    cells = []
    for row, cols, side_scores, side_fields, label in zip((base_row, cand_row), columns, scores, fields, labels):
        side = {role: name for role, name in cols.items() if role not in shared}
        body = render_row(row.rename(label), columns=side, scores=side_scores, fields=side_fields)
        cells.append(f"<td style='vertical-align:top;width:50%;padding:0 8px'>{body}</td>")
    parts.append(f"<table style='width:100%;table-layout:fixed'><tr>{''.join(cells)}</tr></table>")
    return "\n".join(parts)


def _paired_directions(base: pd.DataFrame, cand: pd.DataFrame, on: str, *, metric: str | None,
                       threshold: float | None, higher_is_better: bool | None, flip: str,
                       how: str, name: str) -> tuple[Any, np.ndarray, dict[str, Any]]:
    """The paired runs, each question's flip direction of ``metric`` ("unchanged" without one) and its pass rule."""
    from raglab.runs import _paired_flips, flip_directions

    if metric is not None:
        with called_as(name):  # the pairing's errors name the explorer
            pairs, b, c, rule = _paired_flips(base, cand, metric, threshold=threshold,
                                              higher_is_better=higher_is_better, on=on, how=how)
        return pairs, flip_directions(b, c), rule
    if flip != "all":
        raise ValueError(f"{name}: flip={flip!r} needs metric='a score column' to say what passes")
    pairs = pair_runs(base, cand, on=on, how=how, caller=name)
    return pairs, np.full(pairs.n, "unchanged", dtype=object), {}


def _side_columns(frame: pd.DataFrame, on: str, overrides: dict[str, str | None], by: str | None,
                  name: str) -> tuple[dict[str, str | None], list[str], list[str]]:
    """One run's column roles, score columns and other fields."""
    cols = {"question_id": on, **{role: resolve_column(frame, role, override, caller=name, required=False)
                                  for role, override in overrides.items() if role != "question_id"}}
    used = [c for c in cols.values() if c] + ([by] if by else [])
    scores = score_columns(frame, used)
    return cols, scores, field_columns(frame, used + scores)


def _slices(pairs: Any, by: str | None, on: str, name: str) -> np.ndarray:
    """Each question's slice label as text (the two runs must agree), ``(all)`` without ``by``."""
    if by is None:
        return np.full(pairs.n, ALL_SLICES, dtype=object)
    from raglab._columns import _paired_labels

    raw = _paired_labels(pairs, [by], on, name, kind="slice")
    return raw.astype(object).where(raw.notna(), "(missing)").astype(str).to_numpy()


def explore_pair(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    by: str | None = None,
    metric: str | None = None,
    threshold: float | None = None,
    higher_is_better: bool | None = None,
    flip: str = "all",
    how: str = "exact",
    labels: tuple[str, str] = ("baseline", "candidate"),
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> Any:
    """Browse two runs side by side per question, filtered by slice and by how ``metric`` flipped.

    Rows are paired by question id (as :func:`raglab.runs.compare` pairs them). Each question shows
    the question and reference once, then for each run its answer, scores, retrieved ids with gold
    marked (✓, and the gold it missed), other fields (e.g. judge reasons) and judge claims.

    Parameters
    ----------
    base, cand : DataFrame
        The baseline and candidate row tables.
    by : str, optional
        A slice column (from either run; they must agree) to filter on.
    metric : str, optional
        A score column in both runs: enables the flip filter (all / pass->fail / fail->pass /
        unchanged) and shows the metric's change per question. Pass/fail columns (0/1) as they
        are, others with ``threshold=``; see :func:`raglab.runs.flips`.
    threshold, higher_is_better
        As in :func:`raglab.runs.flips`.
    flip : {"all", "pass->fail", "fail->pass", "unchanged"}
        The flip filter to start with.
    how : {"exact", "inner"}
        Require the same questions (default) or show the shared ones.
    labels : (str, str)
        The two runs' names in the view.
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`) of both runs, over those each run's table sets
        with ``with_roles``; the baseline's ``question_id`` pairs the runs.
    **columns : str
        Column names to use instead of the defaults in both runs, by role: ``question_id``,
        ``question``, ``answer``, ``reference``, ``retrieved``, ``gold``, ``context``, ``gold_spans``,
        ``retrieved_spans`` (they win over ``roles`` and the tables' roles).

    Returns
    -------
    ipywidgets.VBox
        Controls (slice, flip), navigation (previous, next, a 1-based slider and "i of n"), and the
        HTML view; a saved notebook shows the first question as static HTML.

    Examples
    --------
    >>> from raglab import datasets, widgets
    >>> rows = datasets.handbook()
    >>> cand = rows.assign(human_faithful=1.0)
    >>> box = widgets.explore_pair(rows, cand, by="qtype", metric="human_faithful", flip="fail->pass")
    >>> box.children[1].children[3].value
    '1 of 9 (fail->pass)'
    """
    w = import_optional("ipywidgets", extra="widgets", purpose="raglab.widgets.explore_pair")
    from raglab._validation import check_option

    name = caller("rag.explore_pair")
    check_option("flip", flip, FLIP_OPTIONS)
    if by is not None and not isinstance(by, str):
        raise TypeError(f"{name}: `by` must be one column name, got {by!r}")
    if len(labels) != 2:
        raise ValueError(f"{name}: `labels` must name the two runs, e.g. ('baseline', 'candidate'); got {labels!r}")
    overrides = [role_overrides(frame, roles, columns, name) for frame in (base, cand)]  # each run's own roles
    on = resolve_column(base, "question_id", overrides[0]["question_id"], caller=f"{name} (baseline)")
    pairs, directions, rule = _paired_directions(base, cand, on, metric=metric, threshold=threshold,
                                                 higher_is_better=higher_is_better, flip=flip, how=how, name=name)
    sides = [_side_columns(frame, on, side_overrides, by, f"{name} ({side})")
             for side, frame, side_overrides in (("baseline", pairs.base, overrides[0]),
                                                 ("candidate", pairs.cand, overrides[1]))]
    slices = _slices(pairs, by, on, name)

    slice_box = w.Dropdown(options=[ALL_SLICES, *sorted(set(slices) - {ALL_SLICES})] if by else [ALL_SLICES],
                           description=by or "slice", disabled=by is None)
    flip_box = w.Dropdown(options=list(FLIP_OPTIONS), value=flip, description="flip", disabled=metric is None)
    position, previous, following, status, view = navigation(w, pairs.n, "question")
    columns = (sides[0][0], sides[1][0])
    scores = (sides[0][1], sides[1][1])
    fields = (sides[0][2], sides[1][2])

    def current() -> np.ndarray:
        keep = np.ones(pairs.n, dtype=bool)
        if by is not None and slice_box.value != ALL_SLICES:
            keep &= slices == slice_box.value
        if flip_box.value != "all":
            keep &= directions == flip_box.value
        return np.flatnonzero(keep)

    def refresh(*_: Any) -> None:
        chosen = current()
        position.max = max(1, len(chosen))
        position.disabled = len(chosen) <= 1
        filters = [f"{by} = {slice_box.value}"] if by and slice_box.value != ALL_SLICES else []
        filters += [flip_box.value] if flip_box.value != "all" else []
        suffix = f" ({', '.join(filters)})" if filters else ""
        if len(chosen) == 0:
            status.value = f"no questions{suffix}"
            view.value = "<p><i>No question matches these filters.</i></p>"
            return
        index = min(position.value, len(chosen)) - 1
        i = int(chosen[index])
        status.value = f"{index + 1} of {len(chosen)}{suffix}"
        header = (_flip_line(metric, rule["pass"], directions[i], pairs.base[metric].iloc[i], pairs.cand[metric].iloc[i])
                  if metric is not None else "")
        view.value = render_pair(pairs.base.iloc[i], pairs.cand.iloc[i], columns=columns, scores=scores,
                                 fields=fields, labels=(str(labels[0]), str(labels[1])), header=header)

    return browser(w, [slice_box, flip_box], position, previous, following, status, view, refresh)
