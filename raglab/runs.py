"""Functions that take row tables: summaries, paired comparisons, the gate, judge agreement, sizing.

Each ``df.rag.<method>`` is one call to the function of the same name here (``rows.rag.summary(...)``
is ``raglab.runs.summary(rows, ...)``): they resolve columns (``raglab._columns``), pair runs by
question id (``raglab._rowtable.pair_runs``), pick up the eval set's clusters, and call the
pure functions of :mod:`raglab.stats`, :mod:`raglab.agreement` and :mod:`raglab.sizing`.
Column roles come as one :class:`raglab.Roles` (``roles=``, or set on the table with
``rows.rag.with_roles(...)``) or as keywords (``question_id="qid"``); resampling settings as one
:class:`raglab.Resampling` (``resampling=``) or as keywords (``ci=0.9``). Errors and warnings
name the caller (``rag.summary`` through the accessor, see ``raglab._validation.caller``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import pandas as pd

from raglab import stats as _stats
from raglab._columns import (
    _by_columns,
    _metric_names,
    _missing,
    _paired_labels,
    _resolve_units,
    _run_record,
    _score_frame,
    _slice_labels,
    _unit_labels,
)
from raglab._errors import RowTableError
from raglab._meta import carry_meta, get_meta, set_meta
from raglab._options import RESAMPLING_SETTINGS, Resampling
from raglab._results import jsonable
from raglab._rowtable import (
    Roles,
    _row_labels,
    missing_column_error,
    pair_runs,
    resolve_column,
    split_options,
    table_roles,
)
from raglab._validation import called_as, caller
from raglab.gate import gate_comparison
from raglab.stats.tables import _check_unit_range

__all__ = [
    "agreement", "compare", "estimate", "flip_directions", "flips", "gate", "size", "summary", "threshold_sweep",
    "validate",
]

_INTERVAL = ("ci", "method", "n_resamples", "seed")  # the settings of an interval (no permutation test)


def _options(
    frame: pd.DataFrame, roles: Roles | Mapping[str, str | None] | None, resampling: Resampling | None, options: Mapping[str, Any],
    takes: Sequence[str], name: str,
) -> tuple[Roles, Resampling]:
    """One call's column roles and resampling settings, from the objects and its keywords (which win)."""
    columns, settings = split_options(options, takes, caller=name)
    return table_roles(frame, roles, columns, caller=name), Resampling.resolve(resampling, settings, caller=name)


def validate(
    rows: pd.DataFrame,
    *,
    require: Sequence[str] = ("question_id",),
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """Check a row table and return it unchanged (so it chains).

    Every known column role that is present is checked: ``question_id`` unique and not missing;
    ``retrieved`` a list of ids per row; ``gold`` a list of ids or a dict id -> grade (missing or
    empty = unanswerable); spans lists of ``{doc_id, start, end}`` with ``0 <= start <= end``;
    ``retrieved_spans`` one per retrieved id; text columns str or None.

    Parameters
    ----------
    rows : DataFrame
        The row table.
    require : sequence of str
        Roles that must be present (default: just ``question_id``).
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``question``,
        ``retrieved``, ``gold``, ``gold_spans``, ``retrieved_spans``, ``context``, ``answer``,
        ``reference`` (e.g. ``retrieved="reranked_ids"``).

    Raises
    ------
    raglab.RowTableError
        Naming the method, the column, the first offending rows and the fix (a
        ``raglab.MissingColumnError``, also a ``KeyError``, when a column is absent).

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [["d2"]]})
    >>> runs.validate(rows, require=["retrieved", "gold"]) is rows
    True
    """
    from raglab._rowtable import validate_rows

    name = caller("raglab.runs.validate")
    validate_rows(rows, caller=name, require=require, columns=table_roles(rows, roles, columns, caller=name).named())
    return rows


def _locate_rows(frame: pd.DataFrame, id_column: str, paired: pd.DataFrame | None = None) -> Any:
    """For the [0, 1] range check: positions in the scores -> the user's rows, as ``(labels, positions)``.

    A label is ``row 34 (question_id 'q5')``: the row of ``frame`` (the table the user passed) and its id.
    ``paired`` is that table as ``raglab._rowtable.pair_runs`` aligned it (re-indexed, in the
    baseline's order): its ids lead back to the user's rows.
    """
    def locate(positions: Any) -> tuple[list[str], list[int]]:
        if paired is None:
            rows = [int(p) for p in positions]
        else:
            ids = paired[id_column].iloc[positions].astype(str).to_numpy(dtype=object)
            rows = pd.Index(frame[id_column].astype(str).to_numpy(dtype=object)).get_indexer(ids).tolist()
        return [_row_labels(frame, [r], id_column) for r in rows], rows

    return locate


def summary(
    rows: pd.DataFrame,
    metrics: str | Sequence[str] | None = None,
    *,
    by: str | Sequence[str] | None = None,
    units: str | bool | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Mean and interval per metric and slice for this run; see :func:`raglab.stats.summary`.

    Metrics judged on a random sample (``rows.rag.judge(sample=...)``: judge scores on the sampled
    rows, NaN elsewhere, the design in ``attrs["raglab"]["sampling"]["judged"]``) get the whole-set
    mean, never the plain mean of the judged rows: with ``predictor`` (a cheap score on every row,
    such as the lexical tripwire's ``lexical_support``), a prediction-powered interval with the judge
    scores as labels (:func:`raglab.stats.ppi_mean`, stratified by the design's strata, weighted
    ``1 / inclusion_probability``); without one, the design-weighted mean of the judged rows (the
    stratified mean, or the ``1 / p``-weighted mean) with the same interval (plus-four, t for scores in
    [0, 1]; normal otherwise). ``method`` says which
    and ``n`` counts the judged rows.

    Parameters
    ----------
    metrics : str or list of str, optional
        Per-question score columns (default: the metric columns: float columns, and integer
        columns named as a known metric such as ``hit@5`` or ``em``; never booleans such as
        ``answerable``/``declined``, id columns (``*_id``, ``qid``, ...), roles, or the
        ``by``/``units`` columns).
    by : str or list of str, optional
        Slice column(s): the table gets an ``overall`` row plus one row per slice value (with
        several columns, one per combination, labelled ``"col=value, col=value"``).
    units : str or False, optional
        A cluster column (e.g. the source document): resample whole clusters. By default the
        cluster column recorded by the run's eval set (``EvalSet.freeze(units=...)``), if any;
        ``False`` treats questions as independent.
    bounds : dict, optional
        ``{metric: (low, high)}``: as in :func:`raglab.stats.summary` (the betting interval on it).
    predictor : str or dict, optional
        For metrics judged on a sample: a column scored on every row (``"lexical_support"``) used
        as the prediction for every judged metric, or ``{metric: column}``. A predictor for a
        metric with no recorded design warns and treats the judged rows as a uniform sample.
    roles : Roles or dict, optional
        Column roles: the ``question_id`` column is left out of the default metrics.
    resampling : Resampling, optional
        ``ci``, ``method``, ``n_resamples``, ``seed`` as one :class:`raglab.Resampling`.
    **options
        The same settings as keywords (they win): ``ci``, ``method``, ``n_resamples``, ``seed``, as in
        :func:`raglab.stats.summary` (by default Wilson for pass/fail columns, Wilson at the effective n
        for other metrics known to lie in [0, 1], and t for the rest; ``method="percentile"`` or
        ``"bca"`` for a bootstrap); and column roles, e.g. ``question_id="qid"``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_excluded, se, method, level, n_resamples, seed, mean, low, high``, as
        :func:`raglab.stats.summary`: the estimate and interval last, so that a terminal's truncated
        print keeps them in view. ``n`` counts the questions with a score; rows with a missing score
        are excluded from the mean and counted in ``n_excluded``. ``attrs["raglab"]["summary"]``
        records the slices, the cluster column and the metrics.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "qtype": ["a", "a", "b", "b"],
    ...                      "hit@5": [1, 0, 1, 1]})
    >>> runs.summary(rows, ["hit@5"], by="qtype")[["slice", "n", "mean", "method"]].to_string(index=False)
    '  slice  n  mean method\\noverall  4  0.75 wilson\\n      a  2  0.50 wilson\\n      b  2  1.00 wilson'

    A metric judged on 300 of 2,000 rows (a recorded draw), with the lexical tripwire on every row:

    >>> import numpy as np
    >>> from raglab.sampling import draw
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(2000) < 0.7).astype(float)
    >>> rows = draw(pd.DataFrame({"question_id": [f"q{i}" for i in range(2000)],
    ...                           "lexical_support": np.clip(0.6 * truth + rng.normal(0.2, 0.2, 2000), 0, 1)}),
    ...             300, seed=0, kind="judged")
    >>> rows["faithfulness"] = np.where(rows["selected"], truth, np.nan)
    >>> row = runs.summary(rows, ["faithfulness"], predictor="lexical_support").iloc[0]
    >>> int(row.n), row.method.split(" (")[0], bool(row.low < truth.mean() < row.high)
    (300, 'prediction-powered', True)
    """
    df = rows
    caller_name = caller("raglab.runs.summary")
    cols, res = _options(df, roles, resampling, options, _INTERVAL, caller_name)
    question_id = cols.column("question_id")
    units = _resolve_units(df, units, caller_name)
    by_columns = _by_columns(by)
    for column in [*by_columns, *([units] if units else [])]:
        if column not in df.columns:
            raise _missing(df, column, caller_name, "a slice or cluster column")
    exclude = {question_id, *by_columns, *([units] if units else [])}
    if isinstance(predictor, str):
        exclude.add(predictor)
    elif isinstance(predictor, Mapping):
        exclude.update(str(c) for c in predictor.values())
    exclude.update({"selected", "inclusion_probability"})
    names = _metric_names(metrics, [df], exclude, caller_name)
    scores = _score_frame(df, names, caller_name, id_column=question_id)
    _check_unit_range(names, scores.to_numpy(), "the run", caller_name, _locate_rows(df, question_id))
    subset, chosen, prob, design = _judged_subset(df, names, predictor, caller_name, question_id)
    rest = [m for m in names if m not in subset]
    slice_labels = _slice_labels(df, by_columns, caller_name, question_id) if by_columns else None
    unit_labels = _unit_labels(df, units, caller_name, question_id) if units else None
    table = _stats.summary(
        scores[rest], slices=slice_labels, **res.settings(_INTERVAL), units=unit_labels, bounds=bounds,
    ) if rest else None
    if subset:
        table = _subset_table(df, scores[subset], chosen, prob, design, slice_labels, unit_labels, res, table,
                              names, caller_name, question_id)
    meta = get_meta(df)
    meta["summary"] = {"by": by_columns or None, "units": units, "metrics": names,
                       **({"bounds": table.attrs["raglab"]["summary"]["bounds"]} if bounds and rest else {}),
                       **({"judged_subset": {"metrics": subset, "predictor": {m: chosen[m] for m in subset
                                                                              if m in chosen},
                                             "design": design}} if subset else {})}
    set_meta(table, jsonable(meta))
    return table



def _predictors(
    predictor: str | Mapping[str, str] | None, names: list[str], subset: list[str], caller_name: str
) -> dict[str, str]:
    """``{metric: predictor column}`` from ``predictor`` (one column for every judged metric, or a mapping)."""
    if predictor is None:
        return {}
    if isinstance(predictor, str):
        return {m: predictor for m in (subset or names)}
    if not isinstance(predictor, Mapping) or not predictor:
        raise TypeError(f"{caller_name}: predictor must be a column name or a {{metric: column}} mapping, "
                        f"got {predictor!r}")
    unknown = [m for m in predictor if m not in names]
    if unknown:
        raise ValueError(f"{caller_name}: predictor names {unknown}, which are not among the metrics {names}")
    return {str(m): str(c) for m, c in predictor.items()}


def _judged_subset(
    df: pd.DataFrame, names: list[str], predictor: str | Mapping[str, str] | None, caller_name: str,
    id_column: str | None, check_population: bool = True,
) -> tuple[list[str], dict[str, str], Any, dict[str, Any] | None]:
    """The metrics judged on a random sample, their predictors, the rows' inclusion probabilities and the design.

    The design is ``attrs["raglab"]["sampling"]["judged"]`` (written by ``rows.rag.judge(sample=...)``);
    its ``metrics`` are the sampled metrics. A predictor for a metric with no recorded design, or a
    metric judged on only some rows (NaN with no ``judge_error``) of a judged table without one: a
    loud warning, and the judged rows are treated as a uniform sample. Judge scores on rows the
    recorded draw did not select: refused.
    """
    import numpy as np

    from raglab._validation import warn

    design = (get_meta(df).get("sampling") or {}).get("judged")
    design = dict(design) if isinstance(design, Mapping) else None
    recorded = [m for m in names if design is not None and m in (design.get("metrics") or names)]
    chosen = _predictors(predictor, names, recorded, caller_name)
    undesigned = [m for m in chosen if m not in recorded]
    if design is None and not chosen and "judge" in get_meta(df) and "judge_error" in df.columns:
        no_error = df["judge_error"].isna().to_numpy()
        undesigned = [m for m in names if m in df.columns and bool((df[m].isna().to_numpy() & no_error).any())
                      and bool(df[m].notna().any())]
    if undesigned:
        warn(f"{caller_name}: {undesigned} were judged on some rows only and the table records no sampling "
             "design (attrs['raglab']['sampling']['judged'], written by rows.rag.judge(sample=...)); a mean of "
             "the judged rows describes the whole set only if they were drawn at random. "
             + ("Treating them as a uniform random sample." if chosen else
                "Their summary is the mean of the judged rows only."),
             UserWarning)
        if not chosen:
            undesigned = []
    for metric, column in chosen.items():
        if column not in df.columns:
            raise _missing(df, column, caller_name, f"the predictor of {metric!r} (a cheap score on every row)")
    subset = [m for m in names if m in recorded or m in undesigned]
    if not subset:
        return [], chosen, None, design
    prob = None
    if design is not None and recorded:
        column = design.get("inclusion_probability")
        judged = df[recorded].notna().any(axis=1).to_numpy()
        if "selected" in df.columns:
            picked = df["selected"].to_numpy(dtype=bool, na_value=False)
            outside = np.flatnonzero(judged & ~picked)
            if outside.size:
                raise RowTableError(
                    f"{caller_name}: {outside.size} row(s) have a judge score but were not selected by the recorded "
                    f"draw ({_row_labels(df, outside[:5].tolist(), id_column)}): a sample-based estimate needs the "
                    "judged rows to be exactly the random sample. Drop those scores, or judge the table again.")
            failed = int((picked & ~judged).sum())
            if failed:
                warn(f"{caller_name}: {failed} selected row(s) have no judge score (judge errors); they are "
                     "treated as not drawn, which is valid only if the failures are unrelated to the score",
                     UserWarning)
        population = design.get("population")
        if check_population and population is not None and int(population) != len(df):
            warn(f"{caller_name}: the judged sample was drawn from {population} rows and this table has "
                 f"{len(df)}; the estimate describes this table only if it is the table the sample was drawn from",
                 UserWarning)
        if column and column in df.columns:
            prob = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            bad = np.flatnonzero(judged & ~((prob > 0) & (prob <= 1)))
            if bad.size:
                raise RowTableError(f"{caller_name}: {bad.size} judged row(s) have no inclusion probability in "
                                    f"(0, 1] in {column!r} ({_row_labels(df, bad[:5].tolist(), id_column)})")
            prob = np.where(judged, prob, 1.0)
        else:
            warn(f"{caller_name}: the judged design records no inclusion-probability column present in the table "
                 f"({column!r}); treating the judged rows as a uniform sample", UserWarning)
    return subset, chosen, prob, design


def _subset_table(
    df: pd.DataFrame, scores: pd.DataFrame, chosen: Mapping[str, str], prob: Any, design: Mapping[str, Any] | None,
    slice_labels: Any, unit_labels: Any, res: Resampling, table: pd.DataFrame | None, names: list[str],
    caller_name: str, question_id: str,
) -> pd.DataFrame:
    """The summary rows of the metrics judged on a sample, merged with the others' in ``names`` order."""
    import numpy as np

    from raglab.stats.ppi import _subset_summary
    from raglab.stats.results import SUMMARY

    predictors = {m: _score_frame(df, [chosen[m]], caller_name, id_column=question_id)[chosen[m]].to_numpy()
                  for m in scores.columns if m in chosen}
    strata_column = (design or {}).get("strata")
    strata = (df[strata_column].astype(str).to_numpy() if strata_column and strata_column in df.columns else None)
    level = res.settings(_INTERVAL).get("ci", 0.95)
    rows = _subset_summary(
        scores, {m: predictors.get(m) for m in scores.columns}, probability=prob, strata=strata,
        slices=None if slice_labels is None else np.asarray(pd.Series(slice_labels).astype(str)),
        units=None if unit_labels is None else np.asarray(pd.Series(unit_labels).astype(str)),
        lam=None, level=float(level if level is not None else 0.95), names=dict(chosen),
    )
    extra = pd.DataFrame(rows)
    columns = [c.name for c in SUMMARY] if not isinstance(table, pd.DataFrame) else list(table.columns)
    extra = extra.reindex(columns=columns)
    merged = extra if table is None else pd.concat([table, extra], ignore_index=True)
    order = {m: i for i, m in enumerate(names)}
    merged = merged.iloc[np.argsort([order[m] for m in merged["metric"]], kind="stable")].reset_index(drop=True)
    dtypes = table.dtypes.to_dict() if table is not None else {c.name: c.dtype for c in SUMMARY if not c.optional}
    return merged.astype(dtypes)


def _paired_judged(
    base: pd.DataFrame, pairs: Any, names: list[str], predictor: str | Mapping[str, str] | None, on: str,
    caller_name: str, base_scores: pd.DataFrame, cand_scores: pd.DataFrame,
) -> dict[str, Any]:
    """For metrics judged on a sample in both runs: the predictor as the scores, the judge scores as labels.

    Fills ``base_scores``/``cand_scores`` in place with each judged metric's predictor (0 without
    one) and returns the record, with ``"stats"``: ``labels``, ``weights`` and ``strata`` for
    :func:`raglab.stats.compare` (the baseline's judged design; a question judged in only one run is
    treated as not judged, with a warning).
    """
    import numpy as np


    frame = pairs.base.copy()
    frame.attrs = base.attrs
    subset, chosen, prob, design = _judged_subset(frame, names, predictor, caller_name, on)
    if not subset:
        return {}
    labels: dict[str, tuple[Any, Any]] = {}
    for metric in subset:
        labels[metric] = _in_both_runs(
            base_scores[metric].to_numpy(dtype=float), cand_scores[metric].to_numpy(dtype=float),
            f"{caller_name}: {{n}} question(s) have a {metric!r} judge score in only one run; the paired estimate "
            "needs both runs judged on the same random questions (judge both with the same sample= and seed=), so "
            "those are treated as not judged")
        column = chosen.get(metric)
        for scores, paired, side in ((base_scores, pairs.base, "baseline"), (cand_scores, pairs.cand, "candidate")):
            if column is None:
                scores[metric] = 0.0
                continue
            if column not in paired.columns:
                raise _missing(paired, column, caller_name, f"the predictor of {metric!r} in the {side} run")
            values = _score_frame(paired, [column], caller_name, id_column=on, side=side)[column].to_numpy()
            if np.isnan(values).all():
                raise ValueError(f"{caller_name}: the predictor {column!r} of {metric!r} has no score in the {side} run")
            # a question without a predictor score keeps its place with the predictor's mean (PPI stays unbiased)
            scores[metric] = np.where(np.isnan(values), np.nanmean(values), values)
    strata = (design or {}).get("strata")
    stats = {"labels": labels, "weights": None if prob is None else 1.0 / prob,
             "strata": frame[strata].astype(str).to_numpy() if strata and strata in frame.columns else None}
    return {"stats": stats, "metrics": subset, "predictor": {m: chosen.get(m) for m in subset}, "design": design}


def _judged_sides(
    table: pd.DataFrame, labelled: Mapping[str, Any], base_scores: pd.DataFrame, cand_scores: pd.DataFrame,
    record: Mapping[str, Any], slices: Any, unit_labels: Any,
) -> None:
    """``base`` and ``cand`` of the judged-sample rows: each run's whole-set estimate (as in ``summary``), in place.

    Without this they would hold the predictor's means (the scores the paired estimator was given).
    """
    import warnings

    import numpy as np

    from raglab.stats.ppi import _subset_summary

    weights = labelled.get("weights")
    prob = None if weights is None else 1.0 / np.asarray(weights, dtype=float)
    slice_arr = None if slices is None else np.asarray(pd.Series(list(slices)).astype(str))
    unit_arr = None if unit_labels is None else np.asarray(pd.Series(list(unit_labels)).astype(str))
    level = float(table["level"].iloc[0]) if len(table) else 0.95
    for metric in record["metrics"]:
        b, c = labelled["labels"][metric]
        has_predictor = record["predictor"].get(metric) is not None
        for side, values, scores in (("base", b, base_scores), ("cand", c, cand_scores)):
            with_pred = {metric: scores[metric].to_numpy(dtype=float) if has_predictor else None}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the paired row carries the warnings
                rows = _subset_summary(pd.DataFrame({metric: values}), with_pred, probability=prob,
                                       strata=labelled.get("strata"), slices=slice_arr, units=unit_arr, lam=None,
                                       level=level, names={metric: str(record["predictor"].get(metric))})
            means = {r["slice"]: r["mean"] for r in rows}
            at = table["metric"] == metric
            table.loc[at, side] = table.loc[at, "slice"].astype(str).map(means).to_numpy(dtype=float)


def _human_columns(
    metrics: str | Sequence[str] | None, human: str | Mapping[str, str], caller_name: str
) -> dict[str, str]:
    """``{metric: human label column}`` from ``metrics`` and ``human`` (a column, or a mapping)."""
    if isinstance(human, str):
        names = [metrics] if isinstance(metrics, str) else list(metrics or [])
        if len(names) != 1:
            raise TypeError(f"{caller_name}: human={human!r} names one label column, so pass exactly one metric "
                            f"(got {names}); for several, pass human={{metric: column, ...}}")
        return {names[0]: human}
    if not isinstance(human, Mapping) or not human:
        raise TypeError(f"{caller_name}: human must be a column name or a {{metric: column}} mapping, got {human!r}")
    names = list(human) if metrics is None else ([metrics] if isinstance(metrics, str) else list(metrics))
    missing = [m for m in names if m not in human]
    if missing:
        raise KeyError(f"{caller_name}: no human label column for {missing}; add them to human={{...}}")
    return {m: human[m] for m in names}


def _label_design(
    df: pd.DataFrame, labelled: Any, caller_name: str, id_column: str | None = None
) -> tuple[Any, dict[str, Any] | None]:
    """The labelled rows' inclusion probabilities (or None) after the guards on how they were chosen.

    PPI is valid only when the labelled rows are a random sample of this table's rows, drawn with
    known probabilities. No recorded design (``attrs["raglab"]["sampling"]["labelled"]``, written by
    ``raglab.sampling.draw``) or no probability column: a loud warning. Labelled rows that the recorded
    draw did not select (labels picked by hand, or carried over from another table): refused.
    """
    import numpy as np

    from raglab._validation import warn

    labelled = np.asarray(labelled, dtype=bool)
    design = (get_meta(df).get("sampling") or {}).get("labelled")
    if not isinstance(design, Mapping):
        warn(f"{caller_name}: the human labels are not a recorded random sample of this table's rows (no "
             "attrs['raglab']['sampling']['labelled']); prediction-powered intervals are valid only for labels on "
             "rows drawn at random from this table (raglab.sampling.draw). Labels reused from another system's "
             "rows or picked by hand give intervals that miss the truth. Treating them as a uniform sample.",
             UserWarning)
        return None, None
    column = design.get("inclusion_probability")
    if "selected" in df.columns and column == "inclusion_probability":
        picked = df["selected"].to_numpy(dtype=bool, na_value=False)
        outside = np.flatnonzero(labelled & ~picked)
        if outside.size:
            raise RowTableError(
                f"{caller_name}: {outside.size} labelled row(s) were not selected by the recorded draw "
                f"({_row_labels(df, outside[:5].tolist(), id_column)}): labels on rows the random sample did not "
                "choose (picked by hand, or reused from another table) break prediction-powered inference. "
                "Drop those labels, or draw again with raglab.sampling.draw."
            )
    population = design.get("population")
    if population is not None and int(population) != len(df):
        warn(f"{caller_name}: the labelled sample was drawn from {population} rows and this table has {len(df)}; "
             "intervals describe this table only if it is the table the labels were drawn from (or a slice of it)",
             UserWarning)
    if not column or column not in df.columns:
        warn(f"{caller_name}: the labelled design records no inclusion-probability column present in the table "
             f"({column!r}); treating the labels as a uniform sample", UserWarning)
        return None, dict(design)
    prob = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad = np.flatnonzero(labelled & ~((prob > 0) & (prob <= 1)))
    if bad.size:
        raise RowTableError(f"{caller_name}: {bad.size} labelled row(s) have no inclusion probability in (0, 1] in "
                            f"{column!r} ({_row_labels(df, bad[:5].tolist(), id_column)})")
    return np.where(labelled, prob, 1.0), dict(design)


def _in_both_runs(base: Any, cand: Any, message: str) -> tuple[Any, Any]:
    """Labels (or judge scores on a sample) of questions scored in both runs; NaN, with a warning naming
    how many (``message`` formats ``{n}``), where only one run has one: a pair needs both sides."""
    import numpy as np

    from raglab._validation import warn

    base, cand = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
    one = np.isnan(base) != np.isnan(cand)
    if one.any():
        warn(message.format(n=int(one.sum())), UserWarning)
        base, cand = np.where(one, np.nan, base), np.where(one, np.nan, cand)
    return base, cand


def _paired_human(
    base: pd.DataFrame, pairs: Any, names: list[str], human: Mapping[str, str], on: str | None, caller_name: str
) -> dict[str, Any]:
    """``labels=`` and ``weights=`` for :func:`raglab.stats.compare` from the human label columns of both runs.

    The labelled questions must be a recorded random sample (the baseline's design, see
    ``_label_design``; its ``strata`` column, if any, stratifies the overall row) labelled in both
    runs; a question labelled in only one run is treated as unlabelled, with a warning.
    """
    import numpy as np


    if not isinstance(human, Mapping):
        raise TypeError(f"{caller_name}: human must be {{metric: label column}}, got {human!r}")
    unknown = [m for m in human if m not in names]
    if unknown:
        raise ValueError(f"{caller_name}: human names {unknown}, which are not compared metrics {names}")
    labels: dict[str, tuple[Any, Any]] = {}
    any_labelled = np.zeros(len(pairs.base), dtype=bool)
    for metric, column in human.items():
        b, c = labels[metric] = _in_both_runs(
            _score_frame(pairs.base, [column], caller_name, id_column=on, side="baseline")[column].to_numpy(),
            _score_frame(pairs.cand, [column], caller_name, id_column=on, side="candidate")[column].to_numpy(),
            f"{caller_name}: {{n}} question(s) have a {column!r} label in only one run; paired prediction-powered "
            "inference needs both runs' answers labelled on the same random questions, so those are treated as "
            "unlabelled")
        any_labelled |= ~np.isnan(b)
    frame = pairs.base.copy()
    frame.attrs = base.attrs
    prob, design = _label_design(frame, any_labelled, caller_name, on)
    strata = (design or {}).get("strata")
    return {"labels": labels, "weights": None if prob is None else 1.0 / prob,
            # a stratified label draw: the overall prediction-powered row is stratified the same way
            "strata": frame[strata].astype(str).to_numpy() if strata and strata in frame.columns else None}


def estimate(
    rows: pd.DataFrame,
    metrics: str | Sequence[str] | None = None,
    *,
    human: str | Mapping[str, str],
    by: str | Sequence[str] | None = None,
    units: str | bool | None = None,
    lam: float | None = None,
    ci: float = 0.95,
    roles: Roles | Mapping[str, str | None] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Prediction-powered estimate of a human-labelled metric: a judge's score on every row, people's on a few.

    The judge's column (``metrics``) is debiased by the human labels (``human``) on a random subset
    of rows (NaN: not labelled), as in :func:`raglab.stats.ppi_table`: PPI++ (Angelopoulos et al.
    2023; arXiv 2311.01453), with the human-only and judge-only intervals beside it. Labels must be a
    recorded random sample of this table's rows (``raglab.sampling.draw``, whose
    ``inclusion_probability`` column weights each label by ``1 / p``): otherwise a loud warning, and
    labelled rows the recorded draw did not select are refused. Cells with fewer than
    :data:`raglab.stats.MIN_LABELS` labels are flagged (``below_min_labels``): review them. When the
    judge is no better than the system judged, labels are worth at most about twice as many (Dorner
    et al., ICLR 2025).

    Parameters
    ----------
    metrics : str or list of str, optional
        The judge's score columns (default: the keys of ``human`` when it is a mapping).
    human : str or dict
        The human label column for the one metric, or ``{metric: label column}``.
    by : str or list of str, optional
        Slice column(s): one row per slice, and the ``overall`` row is stratified PPI over them
        (each stratum weighted by its share of rows).
    units : str or False, optional
        A cluster column (e.g. the conversation): cluster-robust variances. By default the eval set's
        recorded cluster column, if any.
    lam : float, optional
        The judge's weight; ``None`` tunes it (PPI++), ``1`` is plain PPI, ``0`` human only.
    ci : float
        Confidence level.
    roles : Roles or dict, optional
        Column roles (``question_id`` names rows in messages).
    **options
        Column roles as keywords, e.g. ``question_id="qid"``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n_labeled, n_judged, lam, effective_labels, below_min_labels, method, level,
        human_only, human_only_low, human_only_high, judge_only, judge_only_low, judge_only_high,
        estimate, low, high``; ``attrs["raglab"]["estimate"]`` records the label columns, slices,
        cluster column and the labelled design.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from raglab import runs
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(2000) < 0.7).astype(float)
    >>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(2000)],
    ...                      "faithfulness": np.where(rng.random(2000) < 0.85, truth, 1 - truth),
    ...                      "human_faithful": np.where(rng.random(2000) < 0.1, truth, np.nan)})
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # these labels carry no recorded sampling design
    ...     table = runs.estimate(rows, "faithfulness", human="human_faithful")
    >>> table[["metric", "slice", "n_labeled", "n_judged"]].to_string(index=False)
    '      metric   slice  n_labeled  n_judged\\nfaithfulness overall        212      2000'
    """
    df = rows
    caller_name = caller("raglab.runs.estimate")
    columns, _ = split_options(options, (), caller=caller_name)
    cols = table_roles(df, roles, columns, caller=caller_name)
    question_id = cols.column("question_id")
    pairs = _human_columns(metrics, human, caller_name)
    units = _resolve_units(df, units, caller_name)
    by_columns = _by_columns(by)
    for column in [*by_columns, *([units] if units else [])]:
        if column not in df.columns:
            raise _missing(df, column, caller_name, "a slice or cluster column")
    judged = _score_frame(df, list(pairs), caller_name, id_column=None)
    label_scores = _score_frame(df, list(dict.fromkeys(pairs.values())), caller_name, id_column=None)
    labels = pd.DataFrame({metric: label_scores[column] for metric, column in pairs.items()})  # a column may serve two
    prob, design = _label_design(df, labels.notna().any(axis=1).to_numpy(), caller_name, question_id)
    table = _stats.ppi_table(
        judged, labels,
        slices=_slice_labels(df, by_columns, caller_name, question_id) if by_columns else None,
        units=_unit_labels(df, units, caller_name, question_id) if units else None,
        probability=prob, lam=lam, ci=ci,
    )
    meta = get_meta(df)
    meta["estimate"] = {"human": pairs, "by": by_columns or None, "units": units, "design": design}
    set_meta(table, jsonable(meta))
    return table


def _pairing_record(pairs: Any) -> dict[str, Any]:
    """How two runs paired (counts and the first 50 unpaired ids), as compare and flips record it."""
    return {
        "n_paired": pairs.n, "n_base_only": len(pairs.base_only), "n_cand_only": len(pairs.cand_only),
        "base_only": [str(i) for i in pairs.base_only[:50]], "cand_only": [str(i) for i in pairs.cand_only[:50]],
    }

def compare(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    metrics: str | Sequence[str] | None = None,
    by: str | Sequence[str] | None = None,
    on: str | None = None,
    how: str = "exact",
    units: str | bool | None = None,
    adjust: str | None = None,
    allow_evalset_mismatch: bool = False,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    human: Mapping[str, str] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Paired comparison of this run (the baseline) with ``cand``, per metric and slice.

    Rows are paired by ``on``. Different question sets raise an error listing the ids missing on
    each side, unless ``how="inner"`` (then a warning gives the counts). Runs stamped with
    different eval-set hashes are refused unless ``allow_evalset_mismatch=True``; runs scored by
    different judges warn loudly. Pairs with a missing score on either side are dropped for that
    metric and counted in ``n_dropped``. See :func:`raglab.stats.compare` for the intervals
    (by default Tango's score interval for pass/fail metrics, the betting interval for other
    metrics known to lie in [0, 1], and a paired bootstrap shared by all metrics and slices for the
    rest) and the tests (exact McNemar for pass/fail metrics, sign-flip permutation otherwise;
    ``adjust="holm"`` adds ``p_adjusted``).

    Parameters
    ----------
    cand : DataFrame
        The candidate run.
    metrics : str or list of str, optional
        Score columns present in both runs (default: the metric columns present in both runs:
        float columns, and integer columns named as a known metric such as ``hit@5`` or ``em``;
        never booleans such as ``answerable``/``declined``, id columns (``*_id``, ``qid``, ...),
        roles, or the ``by``/``units`` columns).
    by : str or list of str, optional
        Slice column(s), from the baseline (the candidate's, if it also has them, must agree).
    on : str, optional
        The question id column (default: the baseline's ``question_id`` role, ``"question_id"``
        unless set with ``roles=`` or ``with_roles``).
    how : {"exact", "inner"}
        Require the same questions (default) or compare the shared ones.
    units : str or False, optional
        Cluster column: resample whole clusters. By default the cluster column recorded by the
        baseline's eval set (``EvalSet.freeze(units=...)``), if any; ``False`` treats questions
        as independent.
    adjust, bounds
        As in :func:`raglab.stats.compare` (``bounds={metric: (low, high)}``: the betting interval on a
        declared range).
    allow_evalset_mismatch : bool
        Compare runs stamped with different eval sets anyway (with a warning).
    human : dict, optional
        ``{metric: human label column}`` (the column in both runs, NaN where a question was not
        labelled): when people labelled a random subset of questions in both runs, those judged
        metrics get the paired prediction-powered interval (PPI++ on the per-question differences,
        ``raglab.stats.estimators.PredictionPowered``; ``diff`` the estimate of the human mean
        difference, ``attrs["raglab"]["comparison"]["n_labeled"]`` the labelled questions per row). The labels must be a recorded random sample of the
        baseline's questions (``raglab.sampling.draw``; otherwise a loud warning), weighted by
        ``1 / inclusion_probability``.
    predictor : str or dict, optional
        For metrics judged on a random sample in both runs (``rows.rag.judge(sample=...)``, the
        baseline's design in ``attrs["raglab"]["sampling"]["judged"]``): a column scored on every
        question in both runs (``"lexical_support"``), or ``{metric: column}``. Those metrics get
        the paired prediction-powered interval of ``human`` with the judge scores (questions judged
        in both runs) as the labels and the predictor's difference on every question as the
        prediction. Without a predictor such metrics are still estimated from the judged questions
        with the design's weights and strata (a predictor of 0: the judge-only paired difference,
        never the plain mean of the judged pairs).
    roles : Roles or dict, optional
        Column roles of the baseline (its ``question_id`` is the default ``on``).
    resampling : Resampling, optional
        ``ci``, ``method``, ``n_resamples``, ``seed``, ``n_permutations`` as one
        :class:`raglab.Resampling`.
    **options
        The same settings as keywords (they win), as in :func:`raglab.stats.compare`; and column roles.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_dropped, n_changed, base, cand, p_value, p_decrease, p_increase, skew,
        method, level, n_resamples, seed, test, n_permutations, diff, low, high``, as
        :func:`raglab.stats.compare` (which describes each column): ``p_adjusted`` follows
        ``p_value`` with ``adjust="holm"``, and ``n_clusters`` comes before ``diff`` with ``units``;
        the estimate and interval are always last, so that a terminal's truncated print keeps them
        in view. ``attrs["raglab"]["comparison"]`` keeps the settings, how the runs paired and both
        runs' eval set and judge records.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(100)], "hit@5": [1, 0] * 50})
    >>> cand = base.assign(**{"hit@5": [1, 1] * 50}).iloc[::-1]   # row order does not matter
    >>> t = runs.compare(base, cand, metrics=["hit@5"])
    >>> t[["metric", "slice", "n", "base", "cand", "diff"]].to_string(index=False)
    'metric   slice   n  base  cand  diff\\n hit@5 overall 100   0.5   1.0   0.5'
    """
    caller_name = caller("raglab.runs.compare")
    cols, res = _options(base, roles, resampling, options, RESAMPLING_SETTINGS, caller_name)
    on = on if on is not None else cols.column("question_id")
    units = _resolve_units(base, units, caller_name)
    pairs = pair_runs(base, cand, on=on, how=how, caller=caller_name, allow_evalset_mismatch=allow_evalset_mismatch)
    by_columns = _by_columns(by)
    exclude = {on, *by_columns, *([units] if units else []), "selected", "inclusion_probability"}
    if isinstance(predictor, str):
        exclude.add(predictor)
    elif isinstance(predictor, Mapping):
        exclude.update(str(c) for c in predictor.values())
    names = _metric_names(metrics, [pairs.base, pairs.cand], exclude, caller_name)
    base_scores = _score_frame(pairs.base, names, caller_name, id_column=on, side="baseline")
    cand_scores = _score_frame(pairs.cand, names, caller_name, id_column=on, side="candidate")
    for side, frame, paired, scores in (("baseline", base, pairs.base, base_scores), ("candidate", cand, pairs.cand, cand_scores)):
        _check_unit_range(names, scores.to_numpy(), f"the {side} run", caller_name, _locate_rows(frame, on, paired))
    slices = _paired_labels(pairs, by_columns, on, caller_name, kind="slice") if by_columns else None
    unit_labels = _paired_labels(pairs, [units], on, caller_name, kind="cluster") if units else None
    labelled = _paired_human(base, pairs, names, human, on, caller_name) if human else {}
    judged_subset: dict[str, Any] = {}
    if predictor is not None or (get_meta(base).get("sampling") or {}).get("judged"):
        judged_subset = _paired_judged(base, pairs, names, predictor, on, caller_name, base_scores, cand_scores)
        if judged_subset and human:
            raise ValueError(f"{caller_name}: pass human= or predictor= (metrics judged on a sample), not both: "
                             "one comparison takes one sampling design")
        if judged_subset:
            labelled = judged_subset.pop("stats")
    table = _stats.compare(
        base_scores,
        cand_scores,
        slices=slices,
        units=unit_labels,
        **res.settings(),
        adjust=adjust,
        bounds=bounds,
        ids=pairs.base[on],
        **labelled,
    )
    if judged_subset:
        _judged_sides(table, labelled, base_scores, cand_scores, judged_subset, slices, unit_labels)
    comparison = dict(table.attrs["raglab"]["comparison"])
    comparison.update(
        {
            "on": on,
            "how": how,
            "by": by_columns or None,
            "units": units,
            **({"human": dict(human)} if human else {}),
            **({"judged_subset": judged_subset} if judged_subset else {}),
            **_pairing_record(pairs),
            "runs": {"base": _run_record(base), "cand": _run_record(cand)},
        }
    )
    meta = get_meta(base)
    meta["comparison"] = comparison
    set_meta(table, jsonable(meta))
    return table


def gate(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    margin: float | Mapping[str, float],
    metrics: str | Sequence[str],
    by: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] | None = None,
    on: str | None = None,
    how: str = "exact",
    units: str | bool | None = None,
    adjust: str | None = "holm",
    allow_evalset_mismatch: bool = False,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    human: Mapping[str, str] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    sequential: bool = False,
    time: str = "timestamp",
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> _stats.GateResult:
    """Release gate: :meth:`compare` plus a non-inferiority decision per metric and slice.

    Pass if ``low >= -margin``; block if ``high < 0`` and the drop is significant after Holm's
    adjustment over every row (``adjust=None``: per row); otherwise review, always with fewer than
    10 questions or a zero-width interval (signs flipped for lower-is-better metrics). The
    overall ``decision`` is the worst row. See :func:`raglab.stats.gate`.

    Parameters
    ----------
    cand : DataFrame
        The candidate run.
    margin : float or dict
        The largest acceptable drop, for all metrics or ``{metric: margin}``.
    higher_is_better : bool or dict, optional
        Direction per metric (default from the metric name; explicit values win).
    metrics, by, on, how, units, allow_evalset_mismatch, roles, resampling, **options
        As in :func:`compare` (``ci=``, ``n_resamples=``, ... as keywords or one ``resampling=``).
    bounds : dict, optional
        ``{metric: (low, high)}`` for metrics with no known bounds: the betting interval on that range
        (the gate's pass promise at every n); see :func:`raglab.stats.gate`.
    human : dict, optional
        ``{metric: human label column}`` as in :func:`compare`: those metrics are decided on paired
        prediction-powered intervals, and rows with fewer than :data:`raglab.stats.MIN_LABELS`
        labelled questions review instead of deciding.
    predictor : str or dict, optional
        As in :func:`compare`, for metrics judged on a random sample in both runs: decided on paired
        prediction-powered intervals with the judge scores as labels; rows with fewer than
        :data:`raglab.stats.MIN_LABELS` questions judged in both runs review.
    adjust : {"holm", None}
        Blocks need Holm-adjusted evidence over all rows (default) or, with None, only the row's own.
    sequential : bool
        A canary looked at again and again (every hour, say) on paired traffic: the rows are taken in
        the order of ``time`` and every row is decided on the betting confidence sequence
        (``method="sequential"``, ``raglab.stats.estimators.SequentialBetting``), valid at every
        look at once, so looking as often as one likes keeps the gate's error rates (a fixed-n
        interval looked at hourly does not). Scores must lie in [0, 1] (or ``bounds=``); no ``units``.
    time : str
        With ``sequential=True``: the column of the baseline's rows giving their arrival order.

    Returns
    -------
    raglab.stats.GateResult
        ``.decision``, ``.table``, ``.to_frame()``, ``.to_json(path)`` (the decision log with both
        runs' eval-set version and hash and judge fingerprint). ``.table`` holds the columns of
        :meth:`compare` (``n_clusters`` with ``units``), then ``margin, higher_is_better, reason,
        p_worse, p_worse_adjusted`` (the last with ``adjust="holm"``), and ends with ``diff, low, high,
        decision``.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
    >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
    >>> runs.gate(base, cand, margin=0.02, metrics=["hit@5"]).decision
    'block'
    """
    caller_name = caller("raglab.runs.gate")
    if metrics is None or (not isinstance(metrics, str) and len(metrics) == 0):
        raise TypeError(
            f"{caller_name} needs metrics=[...]: a release gate is a rule decided in advance, on named metrics "
            "(e.g. metrics=['recall@5', 'faithfulness']), never on whatever numeric columns a table happens to hold."
        )
    if sequential:
        base, options = _sequential(base, time, options, resampling, units, caller_name)
    cols, res = _options(base, roles, resampling, options, RESAMPLING_SETTINGS, caller_name)
    with called_as(caller_name):  # the comparison's errors name the gate
        table = compare(base, cand, metrics=metrics, by=by, on=on, how=how, units=units,
                        allow_evalset_mismatch=allow_evalset_mismatch, bounds=bounds, human=human, predictor=predictor, roles=cols,
                        resampling=res)
    return gate_comparison(table, margin, higher_is_better=higher_is_better, adjust=adjust)


def _sequential(base: pd.DataFrame, time: str, options: dict[str, Any], resampling: Resampling | None,
                units: Any, caller_name: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The baseline in arrival order and ``method="sequential"``, for a gate looked at again and again."""
    import numpy as np

    chosen = options.get("method", resampling.method if resampling is not None else None)
    if chosen not in (None, "auto", "sequential"):
        raise ValueError(f"{caller_name}: sequential=True decides on the betting confidence sequence; method={chosen!r} "
                         "is a fixed-n interval, which loses its error rate when looked at repeatedly (drop method=)")
    if units:
        raise ValueError(f"{caller_name}: sequential=True has no clustered confidence sequence; drop units=")
    if time not in base.columns:
        raise _missing(base, time, caller_name, "each row's arrival time, the order a sequential gate reads rows in; "
                       "pass time='<column>'")
    stamps = pd.to_datetime(base[time], errors="coerce", utc=True) if not pd.api.types.is_numeric_dtype(
        base[time]) else base[time]
    bad = stamps.isna() & base[time].notna() | base[time].isna()
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())[:5].tolist()
        raise RowTableError(f"{caller_name}: time column {time!r} must hold a time (or an order number) on every row; "
                            f"rows {rows} do not")
    order = np.argsort(stamps.to_numpy(), kind="stable")
    ordered = base.iloc[order]
    carry_meta(base, ordered)
    return ordered, {**options, "method": "sequential"}


def agreement(
    rows: pd.DataFrame,
    human: str | list[str],
    judge: str,
    *,
    positive: Any = None,
    labels: list[Any] | None = None,
    weights: str | None = None,
    distance: str = "rank",
    human_threshold: float | None = None,
    judge_threshold: float | None = None,
    ties: str = "drop",
    units: str | bool | None = None,
    warn: bool = True,
    resampling: Resampling | None = None,
    **options: Any,
) -> Any:
    """Validate a judge column against human labels; see :func:`raglab.agreement.report`.

    Parameters
    ----------
    human : str or list of str
        The column of human labels, or several rater columns: the judge is then compared with
        their per-row majority (tie rule ``ties``, see :func:`raglab.agreement.majority_vote`;
        ``human_threshold`` turns each rater's rating into pass/fail first).
    judge : str
        The column of judge labels (or scores, with ``judge_threshold``).
    units : str or False, optional
        A cluster column (e.g. ``conversation_id``): every interval resamples whole clusters and
        the report shows the design effect. By default the cluster column recorded by the run's
        eval set, if any; ``False`` treats items as independent. See
        :func:`raglab.agreement.report`.
    positive, labels, weights, distance, human_threshold, judge_threshold
        As in :func:`raglab.agreement.report`.
    resampling : Resampling, optional
        ``ci``, ``method``, ``n_resamples``, ``seed`` as one :class:`raglab.Resampling`.
    **options
        The same settings as keywords (they win), as in :func:`raglab.agreement.report`.
    warn : bool
        Issue the report's warnings as Python warnings (e.g. :class:`raglab.agreement.LowAgreementWarning`
        when kappa < 0.4), as in :func:`raglab.agreement.report`; the report's display then only counts
        them, so a notebook shows each once. With ``warn=False`` the display prints them in full.
        ``report.warnings`` holds them either way.

    Returns
    -------
    raglab.agreement.AgreementReport
        ``disagreements`` holds the original rows (all columns, index kept) where they differ.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)],
    ...                      "human": [1] * 150 + [0] * 50,
    ...                      "judge": [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28})
    >>> rep = runs.agreement(rows, "human", "judge", positive=1)
    >>> round(rep.kappa, 3), rep.miss_rate, rep.disagreements["question_id"].iloc[0]
    (0.559, 0.44, 'q142')
    """
    from raglab import agreement as _agreement

    df = rows
    caller_name = caller("raglab.runs.agreement")
    _, settings = split_options(options, _INTERVAL, caller=caller_name, roles=False)  # it reads no role
    res = Resampling.resolve(resampling, settings, caller=caller_name)
    ci, method, n_resamples, seed = res.ci, res.method, res.n_resamples, res.seed
    raters = [human] if isinstance(human, str) else list(human)
    if not raters:
        raise ValueError(f"{caller_name} needs at least one human column")
    for column in [*raters, judge]:
        if column not in df.columns:
            raise missing_column_error(df, column, role=None, caller=caller_name)
    units = _resolve_units(df, units, caller_name)
    unit_labels = _unit_labels(df, units, caller_name, None) if units is not None else None
    rows = carry_meta(df, df.copy(deep=False))
    if isinstance(human, str):
        return _agreement.report(
            df[human], df[judge], positive=positive, labels=labels, weights=weights, distance=distance,
            human_threshold=human_threshold, judge_threshold=judge_threshold, ci=ci, method=method,
            n_resamples=n_resamples, seed=seed, warn=warn, rows=rows, names=(human, judge), units=unit_labels,
        )
    if weights is not None:
        raise ValueError(f"{caller_name}: weighted kappa against a human majority is not supported; pass weights=None")
    return _agreement.judge_vs_majority(
        df[raters], df[judge], positive=positive, ties=ties, rating_threshold=human_threshold,
        judge_threshold=judge_threshold, labels=labels, ci=ci, method=method, n_resamples=n_resamples,
        seed=seed, ids=None, warn=warn, rows=rows, names=(f"majority of {raters}", judge), units=unit_labels,
    )


def threshold_sweep(
    rows: pd.DataFrame,
    human: str,
    judge: str,
    thresholds: Any = None,
    *,
    positive: Any = None,
    human_threshold: float | None = None,
    max_thresholds: int = 200,
    ci: float = 0.95,
) -> pd.DataFrame:
    """A scoring judge column against human labels at every threshold; see :func:`raglab.agreement.threshold_sweep`.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> rows = pd.DataFrame({"label": [1, 1, 0, 0], "score": [0.9, 0.6, 0.7, 0.1]})
    >>> runs.threshold_sweep(rows, "label", "score")["kappa"].round(2).tolist()
    [0.0, 0.5, 0.0, 0.5]
    """
    from raglab import agreement as _agreement

    caller_name = caller("raglab.runs.threshold_sweep")
    for column in (human, judge):
        if column not in rows.columns:
            raise missing_column_error(rows, column, role=None, caller=caller_name)
    return _agreement.threshold_sweep(
        rows[human], rows[judge], thresholds, positive=positive, human_threshold=human_threshold,
        max_thresholds=max_thresholds, ci=ci, names=(human, judge), rows=rows,
    )


def size(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    metric: str | Sequence[str],
    mde: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    attenuation: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    judge: Any = None,
    pilot_labels: str = "true",
    slice_fraction: float = 1.0,
    alternative: str = "two-sided",
    binary: bool | None = None,
    how: str = "exact",
    allow_evalset_mismatch: bool = False,
    units: str | None = None,
    design_effect: float | None = None,
    icc: float | None = None,
    cluster_size: float | None = None,
    margin: float | Mapping[str, float] | None = None,
    by: str | None = None,
    drop: float | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> Any:
    """Questions needed to detect a change of ``mde`` in ``metric`` (or for a release to pass), sized from a pilot.

    This frame is the baseline pilot run and ``cand`` the candidate pilot run; they are paired by
    question id (see ``raglab._rowtable.pair_runs``). A pass/fail metric (values 0/1) gives the
    base and candidate pass rates and the discordance (share of questions whose pass/fail
    differs); another metric the standard deviation of per-question differences. See
    :func:`raglab.sizing.questions_needed` for the formulas.

    With a judge (``judge=`` an :class:`raglab.agreement.AgreementReport`, or
    ``sensitivity=``/``specificity=``), the pilot's pass/fail scores are taken as the TRUE
    outcomes and the test is sized on the judge's labels; pass ``pilot_labels="judge"`` when the
    pilot scores are the judge's own labels. A pilot whose discordance is below the mde is
    sized on a stated planning value.

    **Clustered questions**: ``units=`` names a column of cluster ids (conversation, document); the
    design effect is estimated from the pilot and inflates ``n`` (or pass ``design_effect=``, or
    ``icc=`` with ``cluster_size=``).

    **The release** (``margin=`` instead of ``mde=``): the questions at which an unchanged release
    passes the whole gate (the overall row and every slice of ``by``, for every metric in
    ``metric``) with probability ``power``, with each slice's discordance or sd taken from the pilot
    (:func:`raglab.sizing.release_from_pilot`); ``drop=`` reports the power to block a true drop.
    Continuous metrics registered in [0, 1] are sized on the gate's betting interval; ``bounds=
    {metric: (low, high)}``, as given to the gate, sizes another metric on it too.

    The question id column is the ``question_id`` role (``roles=``, ``with_roles`` or the keyword
    ``question_id="qid"``); the gate's level is ``ci=`` (a keyword, or ``resampling=Resampling(ci=...)``).

    Returns
    -------
    raglab.sizing.SizingResult or raglab.sizing.ReleaseSizing
        With ``mde``: ``n`` (paired), ``n_unpaired`` for comparison, and the assumptions used. With
        ``margin``: ``n``, ``pass_probability``, ``power_to_block`` and the gate's rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> base = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]})
    >>> cand = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 0, 0, 1, 1, 1, 1, 1, 0, 1]})
    >>> runs.size(base, cand, metric="hit@5", mde=0.05).n
    658
    >>> runs.size(base, cand, metric="hit@5", margin=0.05).n       # an unchanged release passes 80%
    639
    """
    from raglab import sizing as _sizing

    caller_name = caller("raglab.runs.size")
    cols, res = _options(base, roles, resampling, options, ("ci",), caller_name)
    ci = res.ci
    if (mde is None) == (margin is None):
        raise ValueError(
            f"{caller_name}: pass `mde=` (questions to detect a change) or `margin=` (questions for an unchanged "
            "release to pass the gate), exactly one"
        )
    metrics = [metric] if isinstance(metric, str) else list(metric)
    if not metrics or not all(isinstance(m, str) for m in metrics) or (mde is not None and len(metrics) != 1):
        raise TypeError(
            f"{caller_name}: `metric` must be one score column name (with mde=), or a list of them (with margin=), "
            f"got {metric!r}"
        )
    on = resolve_column(base, "question_id", cols.question_id, caller=caller_name)
    paired = pair_runs(base, cand, on=on, how=how, caller=caller_name,
                       allow_evalset_mismatch=allow_evalset_mismatch)
    columns = {}
    for name, role in ((units, "units"), (by, "by")):
        if name is not None:
            if name not in paired.base.columns:
                raise missing_column_error(paired.base, name, role=None, caller=f"{caller_name} (base)", keyword=role)
            columns[role] = paired.base[name].to_numpy(dtype=object)
    values = _pilot_scores(paired, metrics, caller_name)
    if margin is not None:
        _check_release_sizing(caller_name, attenuation=attenuation, sensitivity=sensitivity, specificity=specificity,
                              judge=judge, slice_fraction=slice_fraction, alternative=alternative, alpha=alpha,
                              binary=binary, design_effect=design_effect, icc=icc, cluster_size=cluster_size)
        return _sizing.release_from_pilot(
            {name: v[0] for name, v in values.items()}, {name: v[1] for name, v in values.items()}, margin,
            slices=columns.get("by"), units=columns.get("units"), power=power, ci=ci, drop=drop, bounds=bounds,
        )
    if bounds is not None:
        raise ValueError(f"{caller_name}: `bounds=` sizes the release gate's rows (margin=), not a change (mde=)")
    if by is not None:
        raise ValueError(f"{caller_name}: `by=` sizes the release's slices: use it with margin=, or size one slice "
                         "with slice_fraction=")
    first = values[metrics[0]]
    return _sizing.size_from_pilot(
        first[0], first[1], metric=metrics[0], mde=mde, binary=binary, power=power, alpha=alpha,
        attenuation=attenuation, sensitivity=sensitivity, specificity=specificity, judge=judge,
        pilot_labels=pilot_labels, slice_fraction=slice_fraction, alternative=alternative,
        units=columns.get("units"), design_effect=design_effect, icc=icc, cluster_size=cluster_size,
    )


_CHANGE_ONLY = {"attenuation": None, "sensitivity": None, "specificity": None, "judge": None, "slice_fraction": 1.0,
                "alternative": "two-sided", "alpha": 0.05, "binary": None}


def _check_release_sizing(caller: str, *, design_effect: Any, icc: Any, cluster_size: Any, **given: Any) -> None:
    """Refuse, with margin=, the settings that size a change (mde=) only."""
    unused = [name for name, default in _CHANGE_ONLY.items() if given[name] != default]
    if unused:
        raise ValueError(f"{caller}: {unused} size a change (mde=), not the release gate (margin=); the gate's "
                         "level is ci=, its slices by=")
    if design_effect is not None or icc is not None or cluster_size is not None:
        raise ValueError(f"{caller}: with margin= the design effect is estimated from `units=`; "
                         "use sizing.questions_for_release(design_effect=...) to state one")


def _pilot_scores(paired: Any, metrics: list[str], caller: str) -> dict[str, list[Any]]:
    """Each metric's paired scores as floats, ``{metric: [base, cand]}`` (NaN for missing); clear errors otherwise."""
    values: dict[str, list[Any]] = {}
    for name in metrics:
        values[name] = []
        for side, frame in (("base", paired.base), ("cand", paired.cand)):
            if name not in frame.columns:
                raise missing_column_error(frame, name, role=None, caller=f"{caller} ({side})", keyword="metric")
            column = frame[name]
            try:
                numbers = pd.to_numeric(column.astype(object).where(column.notna(), None), errors="raise")
            except (TypeError, ValueError):
                raise RowTableError(
                    f"{caller}: column {name!r} ({side}) must hold numeric scores (or 0/1 pass/fail); "
                    f"found {column.dtype} values such as {column.dropna().iloc[:3].tolist()!r}"
                ) from None
            values[name].append(numbers.to_numpy(dtype=float, na_value=float("nan")))
    return values


def _pass_fail(
    values: Any, metric: str, *, threshold: float | None, higher: bool, side: str, caller: str
) -> Any:
    """1.0 pass, 0.0 fail, NaN missing: 0/1 values as they are (flipped when lower is better), else a threshold."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if threshold is None:
        seen = values[~np.isnan(values)]
        odd = seen[(seen != 0.0) & (seen != 1.0)]
        if odd.size:
            rule = ">=" if higher else "<="
            raise ValueError(
                f"{caller}: metric {metric!r} is not pass/fail (0/1 or True/False): the {side} run holds "
                f"values such as {[float(f'{v:.3g}') for v in sorted(set(odd.tolist()))[:3]]}. Pass threshold=... to say what passes "
                f"(a question passes when {metric} {rule} threshold, since "
                f"{'higher' if higher else 'lower'} is better)."
            )
        return values if higher else np.where(np.isnan(values), np.nan, 1.0 - values)
    passed = values >= threshold if higher else values <= threshold
    return np.where(np.isnan(values), np.nan, passed.astype(float))


def _paired_flips(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metric: str,
    *,
    threshold: float | None = None,
    higher_is_better: bool | None = None,
    on: str = "question_id",
    how: str = "exact",
    allow_evalset_mismatch: bool = False,
) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Pair the runs and classify each question: the pairs, base and cand pass/fail (1/0/NaN), and the rule.

    Errors name ``raglab._validation.caller`` (``raglab.runs.flips`` unless a caller set its name).
    """
    import math

    from raglab._registry import NoDirectionError, metric_info

    caller_name = caller("raglab.runs.flips")
    if not isinstance(metric, str):
        raise TypeError(f"{caller_name}: `metric` must be one score column name, got {metric!r}")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, Real)  # numpy numbers too
                                  or not math.isfinite(threshold)):
        raise ValueError(f"{caller_name}: `threshold` must be a finite number or None, got {threshold!r}")
    threshold = None if threshold is None else float(threshold)  # a plain float in the rule and the records
    if higher_is_better is None:
        direction = metric_info(metric).higher_is_better
        try:
            higher = bool(direction)
        except NoDirectionError as exc:
            raise NoDirectionError(f"{caller_name}: {exc} Here: pass higher_is_better=True or False.") from None
    elif isinstance(higher_is_better, bool):
        higher = higher_is_better
    else:
        raise TypeError(f"{caller_name}: `higher_is_better` must be True, False or None, got {higher_is_better!r}")
    pairs = pair_runs(base, cand, on=on, how=how, caller=caller_name, allow_evalset_mismatch=allow_evalset_mismatch)
    outcome = []
    for side, frame in (("baseline", pairs.base), ("candidate", pairs.cand)):
        if metric not in frame.columns:
            raise missing_column_error(frame, metric, role=None, caller=f"{caller_name} ({side})", keyword="metric")
        values = _score_frame(frame, [metric], caller_name, id_column=on, side=side)[metric].to_numpy()
        outcome.append(_pass_fail(values, metric, threshold=threshold, higher=higher, side=side, caller=caller_name))
    if threshold is None:
        rule = f"{metric} = {1 if higher else 0}"
    else:
        rule = f"{metric} {'>=' if higher else '<='} {threshold:g}"
    return pairs, outcome[0], outcome[1], {"metric": metric, "threshold": threshold, "higher_is_better": higher,
                                           "pass": rule}


def flip_directions(base_pass: Any, cand_pass: Any) -> Any:
    """Each question's flip: ``"pass->fail"``, ``"fail->pass"``, ``"unchanged"`` or ``"missing"``.

    Examples
    --------
    >>> flip_directions([1, 1, 0, 0, float("nan")], [0, 1, 1, 0, 1]).tolist()
    ['pass->fail', 'unchanged', 'fail->pass', 'unchanged', 'missing']
    """
    import numpy as np

    b, c = np.asarray(base_pass, dtype=float), np.asarray(cand_pass, dtype=float)
    return np.select([np.isnan(b) | np.isnan(c), (b == 1) & (c == 0), (b == 0) & (c == 1)],
                     ["missing", "pass->fail", "fail->pass"], "unchanged").astype(object)


def flips(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metric: str,
    *,
    by: str | Sequence[str] | None = None,
    threshold: float | None = None,
    higher_is_better: bool | None = None,
    per: float | None = None,
    on: str | None = None,
    how: str = "exact",
    allow_evalset_mismatch: bool = False,
) -> pd.DataFrame:
    """Questions that flipped between two runs: pass->fail (losses) and fail->pass (wins) per slice.

    A mean can stay put while many questions change sides; this counts them. Runs are paired by
    question id as in :func:`compare` (different question sets raise, unless ``how="inner"``).

    Parameters
    ----------
    base, cand : DataFrame
        The baseline and candidate runs.
    metric : str
        One score column present in both runs. Pass/fail columns (0/1 or True/False) are used as
        they are (for a lower-is-better one such as ``hallucination``, 0 passes); any other needs
        ``threshold=``.
    by : str or list of str, optional
        Slice column(s), from the baseline (the candidate's, if present, must agree).
    threshold : float, optional
        A question passes when ``metric >= threshold`` (``<=`` when lower is better).
    higher_is_better : bool, optional
        The direction (default: from the metric's name, ``raglab._registry.metric_info``).
    per : float, optional
        Also give rates per ``per`` questions (e.g. ``per=100``): ``wins_per``, ``losses_per``, ``net_per``.
    on, how, allow_evalset_mismatch
        As in :func:`compare` (``on`` defaults to the baseline's ``question_id`` role).

    Returns
    -------
    pandas.DataFrame
        One row for ``overall`` then one per slice (sorted): ``slice, n, n_excluded, losses, wins,
        net, both_pass, both_fail`` (``net = wins - losses``; ``n`` counts questions scored in both
        runs, ``n_excluded`` those missing a score on either side), plus the ``*_per`` rates with
        ``per``. ``attrs["raglab"]["flips"]`` keeps the metric, the pass rule and the unpaired ids.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import runs
    >>> base = pd.DataFrame({"question_id": list("abcdef"), "qtype": list("xxxyyy"), "em": [1, 1, 0, 0, 1, 0]})
    >>> cand = base.assign(em=[0, 1, 1, 1, 1, None])
    >>> print(runs.flips(base, cand, "em", by="qtype").to_string(index=False))
      slice  n  n_excluded  losses  wins  net  both_pass  both_fail
    overall  5           1       1     2    1          2          0
          x  3           0       1     1    0          1          0
          y  2           1       0     1    1          1          0
    """
    import numpy as np

    from raglab.stats._engine import OVERALL, _slice_codes

    caller_name = caller("raglab.runs.flips")
    on = on if on is not None else Roles.of(base).column("question_id")
    pairs, b, c, rule = _paired_flips(base, cand, metric, threshold=threshold, higher_is_better=higher_is_better,
                                      on=on, how=how, allow_evalset_mismatch=allow_evalset_mismatch)
    if per is not None and (isinstance(per, bool) or not isinstance(per, Real) or not per > 0):
        raise ValueError(f"{caller_name}: `per` must be a positive number (e.g. 100) or None, got {per!r}")
    by_columns = _by_columns(by)
    slices = _paired_labels(pairs, by_columns, on, caller_name, kind="slice") if by_columns else None
    codes, labels = _slice_codes(slices, pairs.n)
    valid = ~(np.isnan(b) | np.isnan(c))
    counts = np.column_stack([valid, ~valid, valid & (b == 1) & (c == 0), valid & (b == 0) & (c == 1),
                              valid & (b == 1) & (c == 1), valid & (b == 0) & (c == 0)]).astype(np.int64)
    per_slice = np.zeros((len(labels), counts.shape[1]), dtype=np.int64)
    if labels:
        np.add.at(per_slice, codes, counts)
    table = pd.DataFrame(np.vstack([counts.sum(axis=0, keepdims=True), per_slice]),
                         columns=["n", "n_excluded", "losses", "wins", "both_pass", "both_fail"])
    table.insert(0, "slice", [OVERALL, *labels])
    table.insert(5, "net", table["wins"] - table["losses"])
    if per is not None:
        scale = np.where(table["n"] > 0, float(per) / table["n"].where(table["n"] > 0, 1), np.nan)
        for column in ("wins", "losses", "net"):
            table[f"{column}_per"] = table[column] * scale
    meta = get_meta(base)
    meta["flips"] = {
        **rule, "per": per, "on": on, "how": how, "by": by_columns or None, **_pairing_record(pairs),
    }
    set_meta(table, jsonable(meta))
    return table
