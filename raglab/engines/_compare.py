"""``compare`` and ``gate`` on any engine: two runs paired by question id, from partition statistics.

Both runs' rows are put in one table partitioned by the question id's text (a hash partitioning, so
a question's two rows meet in one partition wherever they started: :meth:`Partitions.paired`); each
partition pairs its rows and becomes ``raglab._partition.PairStats``
(per metric and slice: the pairs, exact sums, Tango's discordant counts and the Poisson bootstrap's
replicate sums, keyed by a hash of the question id) on its worker; the statistics are added in a
tree and ``raglab._partition.compare_table`` makes the table :func:`raglab.runs.compare` makes from
the rows, whatever the partitioning or row order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_integer_dtype

from raglab import _partition
from raglab._columns import _by_columns, _metric_names, _missing, _paired_labels, _resolve_units, _score_frame
from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta
from raglab._options import RESAMPLING_SETTINGS, Resampling
from raglab._results import jsonable
from raglab._rowtable import Roles, _row_labels
from raglab._validation import check_level, check_option, warn
from raglab.engines._frames import CAND, KEY, SIDE, Partitions, in_partition
from raglab.runs import _options
from raglab.stats._engine import _resolve_seed
from raglab.stats.estimators import compare_methods
from raglab.stats.results import COMPARISON, frame_of
from raglab.stats.tables import _check_unit_range
from raglab.stats.tests import holm

__all__ = ["compare", "gate"]

_SHOWN = 5  # ids shown in an error
_KEPT = 50  # unpaired ids kept in the comparison's record


def _works(engine: str) -> str:
    return f"the methods that work on {engine} are {['auto (pass/fail metrics)', *_partition.PAIRED_METHODS]}"


def _key_codes(keys: pd.Series) -> np.ndarray:
    """An integer per row, equal exactly where the ids are equal: the ids themselves when they are integers,
    else the codes of Arrow's dictionary encoding of their texts (no Python string per row)."""
    import pyarrow as pa

    if is_integer_dtype(keys.dtype) and not is_bool_dtype(keys.dtype):
        return keys.to_numpy(dtype=np.int64)
    try:
        array = pa.array(keys.array, type=pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # objects that are not strings: their text
        array = pa.array(keys.astype(str).to_numpy(dtype=object), type=pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = array.fill_null("<NA>")  # a missing id (Spark's null) is one id, as pandas' text of it is
    return array.dictionary_encode().indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _pair_partition(part: pd.DataFrame, number: int, names: list[str], by: list[str], by_base: list[str],
                    by_cand: list[str], on: str, n_resamples: int, seed: int, caller_name: str,
                    engine: str, cluster: str | None = None) -> tuple[Any, ...]:
    """One partition of both runs' rows (every id's rows in it) -> (statistics of its pairs, ids only in
    base, only in cand, their counts)."""
    _CALLER = caller_name
    try:
        side = part[SIDE].to_numpy()
        codes = _key_codes(part[KEY])  # equal ids, equal codes: the pairing compares integers, not texts
        rows_of = {"baseline": np.flatnonzero(side == 0), "candidate": np.flatnonzero(side == 1)}
        for run, rows in rows_of.items():
            seen = pd.Series(codes[rows])
            repeated = part[KEY].iloc[rows[seen.duplicated(keep=False).to_numpy()]]
            if len(repeated):
                raise RowTableError(
                    f"{_CALLER}: question ids in {on!r} repeat within the {run} run ({repeated.nunique()} id(s) "
                    f"here, e.g. {str(repeated.iloc[0])!r}); each question must have one row per run to be "
                    "paired.", column=on)
        b, c = rows_of["baseline"], rows_of["candidate"]
        order = np.argsort(codes[c], kind="stable")
        sorted_c = codes[c][order]
        at = np.minimum(np.searchsorted(sorted_c, codes[b]), max(len(c) - 1, 0))
        found = (sorted_c[at] == codes[b]) if len(c) else np.zeros(len(b), dtype=bool)
        matched_c = c[order[at[found]]]
        met = np.zeros(len(c), dtype=bool)
        met[order[at[found]]] = True
        only_b, only_c = b[~found], c[~met]  # counted in full, named by their first 50 (the error's examples)
        base_only = part[KEY].iloc[only_b[:_KEPT]].astype(str).tolist()
        cand_only = part[KEY].iloc[only_c[:_KEPT]].astype(str).tolist()
        ids = part[KEY].iloc[b[found]].rename(on).reset_index(drop=True)  # the id's text stands for the id
        base = pd.concat([ids, part[list(dict.fromkeys([*names, *by_base]))].iloc[b[found]].reset_index(drop=True)],
                         axis=1)
        cand = pd.concat([ids, part[[x + CAND for x in dict.fromkeys([*names, *by_cand])]].iloc[matched_c]
                          .reset_index(drop=True)], axis=1)
        cand.columns = [on, *(x[: -len(CAND)] for x in cand.columns[1:])]
        values = {}
        for side, frame in (("baseline", base), ("candidate", cand)):
            scores = _score_frame(frame, names, _CALLER, id_column=on, side=side).to_numpy(dtype=float)
            values[side] = scores.reshape(len(frame), len(names))

            def locate(positions: Any, frame: pd.DataFrame = frame) -> tuple[list[str], list[int]]:
                rows = [int(p) for p in positions]
                return [_row_labels(frame, [r], on) for r in rows], rows

            _check_unit_range(names, values[side], f"the {side} run (partition {number})", _CALLER, locate)
        pairs = SimpleNamespace(base=base, cand=cand)
        slices = _paired_labels(pairs, by, on, _CALLER, kind="slice") if by else None
        units = _paired_labels(pairs, [cluster], on, _CALLER, kind="cluster") if cluster else None
    except (RowTableError, TypeError) as exc:
        raise in_partition(exc, number, engine) from None
    stats = _partition.pair_stats(values["baseline"], values["candidate"], names, slices, base[on], n_resamples, seed,
                                  units=units)
    return stats, base_only, cand_only, len(only_b), len(only_c)


def _combine(*parts: tuple[Any, ...]) -> tuple[Any, ...]:
    return (_partition.combine_pairs(*(p[0] for p in parts)), [i for p in parts for i in p[1]][:_KEPT],
            [i for p in parts for i in p[2]][:_KEPT], sum(p[3] for p in parts), sum(p[4] for p in parts))


def _refuse(method: str, frame: Partitions, caller_name: str) -> None:
    raise NotImplementedError(
        f"{caller_name}: method={method!r} needs the rows themselves (resampling, betting or labels on each pair), "
        f"which raglab does not do on {frame.engine}; {_works(frame.engine)}. Or bring a sample to pandas "
        f"({frame.to_pandas}) and use rows.rag.compare.")


def compare(
    base: Partitions,
    cand: Partitions,
    metrics: str | Sequence[str] | None = None,
    *,
    by: str | Sequence[str] | None = None,
    on: str | None = None,
    how: str = "exact",
    units: str | bool | None = None,
    adjust: str | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    human: Mapping[str, str] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Paired comparison of two partitioned runs by question id: the table :func:`raglab.runs.compare` makes.

    Both runs' rows are partitioned by the question id (as text), so each question's two rows meet
    in one partition (one hash shuffle, no join of whole tables); each partition of pairs is
    reduced to counts, exact sums, Tango's discordant counts and, for ``method="poisson"``, the
    Poisson bootstrap's replicate sums (weights keyed by a hash of (seed, question id, replicate));
    only those are combined. The intervals equal pandas' (Tango's to 1e-12, the Poisson bootstrap's
    exactly, same seed) for any partitioning and row order.

    Parameters
    ----------
    base, cand : Partitions
        The baseline and candidate runs, one row per question, on one engine.
    metrics : str or list of str, optional
        Score columns present in both runs (default: the metric columns, as :func:`raglab.runs.compare`).
    by : str or list of str, optional
        Slice column(s), from the baseline (the candidate's, if it has them, must agree).
    on : str, optional
        The question id column (default: the baseline's ``question_id`` role).
    how : {"exact", "inner"}
        Require the same questions (default: an error gives the counts and some ids missing on each
        side) or compare the shared ones (with a warning).
    units : str or False, optional
        A cluster column (default: the eval set's recorded one). Clusters take ``method="poisson"``: each
        replicate weighs a cluster by a Poisson(1) weight keyed by (seed, cluster label, replicate), so
        a cluster spread over partitions needs no shuffle; rows on fewer than
        :data:`raglab.stats.MIN_CLUSTERS` clusters get no interval, as on pandas. ``units=False``: questions
        treated as independent.
    adjust : {None, "holm"}
        Add ``p_adjusted`` (Holm over every row).
    bounds, human, predictor
        Not available on Dask and Spark (they need the rows: the betting and prediction-powered intervals).
    roles : Roles or dict, optional
        Column roles of the baseline.
    resampling : Resampling, optional
        ``ci``, ``method``, ``n_resamples``, ``seed``, ``n_permutations``.
    **options
        The same settings as keywords (they win). ``method`` is ``"score"`` (Tango's interval, pass/fail
        metrics), ``"poisson"`` (the Poisson bootstrap, any metric) or ``"auto"`` (Tango's, when every
        metric is pass/fail); ``"betting"``, ``"percentile"``, ``"bca"``, ``"sequential"`` and
        ``"ppi"`` need the rows and are refused.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`raglab.runs.compare`; ``attrs["raglab"]["comparison"]`` keeps the
        settings and how the runs paired.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import compare
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "hit@5": [1, 0] * 20})
    >>> cand = base.assign(**{"hit@5": [1, 1] * 20}).iloc[::-1]
    >>> with dask.config.set(scheduler="sync"):
    ...     t = compare(DaskPartitions(dd.from_pandas(base, npartitions=2)),
    ...                 DaskPartitions(dd.from_pandas(cand, npartitions=3)), ["hit@5"],
    ...                 method="score")
    >>> t[["metric", "n", "diff", "method"]].values.tolist()
    [['hit@5', 40, 0.5, 'paired score (Tango)']]
    """
    meta_base, meta_cand, engine = base.meta, cand.meta, base.engine
    _CALLER = base.caller("compare")
    cols, res = _options(meta_base, roles, resampling, options, RESAMPLING_SETTINGS, _CALLER)
    method = res.method
    check_option("method", method, compare_methods())
    if method not in ("auto", *_partition.PAIRED_METHODS):
        _refuse(method, base, _CALLER)
    check_option("how", how, ["exact", "inner"])
    check_option("adjust", adjust, [None, "holm"])
    for given, what in ((bounds, "bounds= (the betting interval)"), (human, "human= (prediction-powered)"),
                        (predictor, "predictor= (prediction-powered)")):
        if given:
            raise NotImplementedError(f"{_CALLER}: {what} needs the rows, which raglab does not do on {engine}; "
                                      f"{_works(engine)}.")
    cluster = _resolve_units(meta_base, units, _CALLER)
    if cluster is not None and method != "poisson":
        raise NotImplementedError(
            f"{_CALLER}: units={cluster!r} (clusters{'' if units else ', the eval set records them'}) takes "
            f"method='poisson' on {engine}: the Poisson bootstrap whose weights are keyed by the cluster's label, so "
            f"a conversation spread over partitions needs no shuffle (method={method!r} was asked); or pass "
            "units=False to treat questions as independent.")
    level = check_level(res.ci)
    on = on if on is not None else cols.column("question_id")
    for frame, side in ((meta_base, "the baseline"), (meta_cand, "the candidate")):
        if on not in frame.columns:
            raise _missing(frame, on, _CALLER, f"the question id of {side} run")
    by_columns = _by_columns(by)
    for column in by_columns:
        if column not in meta_base.columns and column not in meta_cand.columns:
            raise _missing(meta_base, column, _CALLER, "the slice column, in either run")
    names = _metric_names(metrics, [meta_base, meta_cand],
                          {on, *by_columns, *([cluster] if cluster else []), "selected", "inclusion_probability"},
                          _CALLER)
    design = (get_meta(meta_base).get("sampling") or {}).get("judged")
    judged = [m for m in names if design is not None and m in (design.get("metrics") or names)]
    if judged:  # the metrics scored on every row of a judged run are compared; the judged ones need the design
        raise NotImplementedError(
            f"{_CALLER}: {judged} come from a judged sample, whose prediction-powered comparison raglab does not "
            f"compute on {engine}; {_works(engine)}, on metrics scored on every row.")
    for frame, side in ((meta_base, "baseline"), (meta_cand, "candidate")):
        _score_frame(frame, names, _CALLER, id_column=None, side=side)  # before any work
    seed = _resolve_seed(res.seed)
    n_resamples = int(res.n_resamples) if method == "poisson" else 0
    labelled = [*by_columns, *([cluster] if cluster else [])]
    for column in labelled[len(by_columns):]:
        if column not in meta_base.columns and column not in meta_cand.columns:
            raise _missing(meta_base, column, _CALLER, "the cluster column, in either run")
    by_base = [c for c in labelled if c in meta_base.columns]
    by_cand = [c for c in labelled if c in meta_cand.columns]
    both = base.paired(cand, on, [*names, *by_base], [*names, *by_cand])
    stats, base_only, cand_only, n_base_only, n_cand_only = both.reduce(
        partial(_pair_partition, names=names, by=by_columns, by_base=by_base, by_cand=by_cand, on=on,
                n_resamples=n_resamples, seed=seed, caller_name=_CALLER, engine=engine, cluster=cluster), _combine)
    n_paired = sum(stats.rows)
    if n_base_only or n_cand_only:
        summary = (f"{n_base_only} question(s) only in base (e.g. {[str(i) for i in base_only[:_SHOWN]]}), "
                   f"{n_cand_only} only in candidate (e.g. {[str(i) for i in cand_only[:_SHOWN]]})")
        if how == "exact":
            raise RowTableError(f"{_CALLER}: the runs must answer the same questions to be paired by {on!r}; "
                                f"{summary}. Pass how='inner' to compare the {n_paired} shared questions.")
        if not n_paired:
            raise RowTableError(f"{_CALLER}: the runs share no question ids ({summary}); check the `on` column.")
        warn(f"{_CALLER}: comparing shared questions only; {summary}.", UserWarning)
    pick = method
    if method == "auto":
        others = [n for j, n in enumerate(names) if not (stats.total(j).n and stats.total(j).nonbinary == 0)]
        if others:
            raise NotImplementedError(
                f"{_CALLER}: method='auto' takes the betting interval or the bootstrap for {others} (not pass/fail), "
                f"which need the rows; {_works(engine)}: pass method='poisson'.")
        pick = "score"
    slice_dtype = None
    if len(by_columns) == 1:
        slice_dtype = (meta_base if by_columns[0] in meta_base.columns else meta_cand)[by_columns[0]].dtype
    rows = _partition.compare_rows(stats, pick, level, int(res.n_permutations), slice_dtype)
    if adjust == "holm":
        from dataclasses import replace

        adjusted = holm(np.array([row.p_value for row in rows], dtype=float))
        rows = [replace(row, p_adjusted=float(p)) for row, p in zip(rows, adjusted)]
    table = frame_of(rows, COMPARISON)
    record = get_meta(meta_base)
    record["comparison"] = {
        "ci": level, "method": method, "n_resamples": int(res.n_resamples), "seed": seed,
        "n_permutations": int(res.n_permutations), "adjust": adjust, "units": cluster, "on": on, "how": how,
        "by": by_columns or None, "n_paired": n_paired, "n_base_only": n_base_only, "n_cand_only": n_cand_only,
        "base_only": [str(i) for i in base_only], "cand_only": [str(i) for i in cand_only],
    }
    set_meta(table, jsonable(record))
    return table


def gate(
    base: Partitions,
    cand: Partitions,
    *,
    margin: float | Mapping[str, float],
    metrics: str | Sequence[str],
    higher_is_better: bool | Mapping[str, bool] | None = None,
    adjust: str | None = "holm",
    **options: Any,
) -> Any:
    """Release gate on two partitioned runs: :func:`compare` plus :func:`raglab.gate.gate_comparison`, as
    :func:`raglab.runs.gate` on pandas.

    Parameters
    ----------
    base, cand : Partitions
        The baseline and candidate runs.
    margin : float or dict
        The largest acceptable drop, for all metrics or ``{metric: margin}``.
    metrics : str or list of str
        The gated metrics (named: a gate is a rule decided in advance).
    higher_is_better : bool or dict, optional
        Direction per metric (default from the metric name).
    adjust : {"holm", None}
        Blocks need Holm-adjusted evidence over all rows (default) or only the row's own.
    **options
        As in :func:`compare` (``by``, ``on``, ``how``, ``method``, ``n_resamples``, ``seed``, ...).

    Returns
    -------
    raglab.stats.GateResult
        ``.decision`` and ``.table``, as :func:`raglab.runs.gate`.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import gate
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
    >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
    >>> with dask.config.set(scheduler="sync"):
    ...     result = gate(DaskPartitions(dd.from_pandas(base, npartitions=3)),
    ...                   DaskPartitions(dd.from_pandas(cand, npartitions=2)),
    ...                   margin=0.02, metrics=["hit@5"], method="score")
    >>> result.decision
    'block'
    """
    from raglab.gate import gate_comparison

    if metrics is None or (not isinstance(metrics, str) and len(metrics) == 0):
        raise TypeError(f"{base.caller('gate')} needs metrics=[...]: a release gate is a rule decided in advance, on named "
                        "metrics (e.g. metrics=['recall@5', 'faithfulness']).")
    table = compare(base, cand, metrics, **options)
    return gate_comparison(table, margin, higher_is_better=higher_is_better, adjust=adjust)
