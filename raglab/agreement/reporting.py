"""Validating a judge against people: :func:`report` and :func:`judge_vs_majority`.

:func:`report` compares a judge's labels with human labels of the same items, in named steps:
the checks of its options (``_check_options``), how the two sides are named in messages
(:func:`side_naming`), the label preparation (``_prepare_labels``: thresholds, refusals, coding,
the pass label), kappa, the rates and their intervals (``_statistics``, with the pass/fail rates
in ``_binary_statistics`` and the cluster bootstrap when ``units`` is given in
:func:`raglab.agreement.clusters.cluster_intervals`), the warnings (``_report_warnings``) and the
assembled :class:`AgreementReport`.
:func:`judge_vs_majority` forms the human majority of several raters and reports on it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from raglab._interval import Interval
from raglab._validation import check_level, check_option
from raglab._validation import warn as _warn
from raglab.agreement._common import (
    BINARY_STATISTICS,
    DISTANCES,
    KAPPA_METHODS,
    KAPPA_UNTRUSTED,
    THRESHOLDS_TEXT,
    TIES,
    WEIGHTS,
    FragileIntervalWarning,
    LowAgreementWarning,
    check_resamples,
    percentile,
    plain,
)
from raglab.agreement.clusters import cluster_intervals, item_clusters, table_statistics
from raglab.agreement.kappa import (
    confusion_counts,
    disagreement_weights,
    item_bootstrap_tables,
    refuse_unordered,
    table_kappa_interval,
)
from raglab.agreement.labels import (
    Side,
    arg_side,
    as_labels,
    binarize,
    categorical_order,
    check_comparable,
    column_side,
    label_codes,
    looks_like_scores,
    missing_mask,
    pair_labels,
)
from raglab.agreement.raters import as_matrix, majority_labels
from raglab.agreement.result import AgreementReport
from raglab.stats import proportion_interval

__all__ = ["judge_vs_majority", "report"]


def report(
    human: Sequence[Hashable],
    judge: Sequence[Hashable],
    *,
    positive: Hashable | None = None,
    labels: Sequence[Hashable] | None = None,
    weights: str | None = None,
    distance: str = "rank",
    human_threshold: float | None = None,
    judge_threshold: float | None = None,
    units: Sequence[Hashable] | None = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    ids: Sequence[Hashable] | None = None,
    names: tuple[str, str] | None = None,
    rows: pd.DataFrame | None = None,
    warn: bool = True,
    labels_from: str | None = None,
) -> AgreementReport:
    """Validate a judge against human labels of the same items.

    Parameters
    ----------
    human, judge : sequence of hashable
        Labels for the same items in the same order (lists, arrays or Series; a Series' index
        labels the disagreements). Items where either label is missing are excluded and counted.
        The two must be comparable: numbers with numbers (``1 == 1.0``), text with text, booleans
        with booleans or with 0/1 numbers (True counts as 1, False as 0). Text against numbers or
        booleans (``"1"`` is not ``1``), booleans against other numbers, or two sides with no label in
        common raise :class:`LabelMismatchError` naming both sides and the fix, instead of a kappa
        of 0 that would blame the judge.
    positive : label, optional
        The pass label (e.g. 1, True, "supported"). Required for the miss rate, sensitivity,
        specificity, pass rates, attenuation and the corrected pass rate; with more than two labels
        these treat ``positive`` against the rest. Inferred as 1/True when the labels are 0/1 or
        booleans.
    labels, weights, distance
        Category order and weighting for kappa; see :func:`cohen_kappa` (weighted kappa on text
        labels needs ``labels=`` in their order).
    human_threshold, judge_threshold : float, optional
        Turn numeric scores into pass/fail labels: ``score >= threshold`` is True (the positive).
    units : sequence, optional
        A cluster label per item, in the same order (e.g. the conversation or source document of
        each answer). Items of one cluster are not independent: every interval then treats whole
        clusters as the sampling unit -- the rates (agreement, pass rates, sensitivity,
        specificity, miss rate) a cluster-robust Wilson interval (effective sample size, t with
        G - 1 df), kappa, the attenuation and the corrected pass rate the expanded percentile of a
        cluster bootstrap (``n_resamples``, ``seed``) -- and the report shows each statistic's
        design effect. Simulated at 10-40 clusters these cover 93-96% (kappa 93.7-94.6%; see
        ``benchmarks/agreement_coverage.py``). A statistic resting on fewer than
        ``raglab.stats.MIN_CLUSTERS`` clusters gets no interval, with a warning.
    ci : float
        Confidence level of every interval.
    method : {"auto", "analytic", "adjusted", "bootstrap"}
        Kappa interval without ``units``; see :func:`cohen_kappa_interval` ("auto" is the adjusted
        interval). With ``units`` only "auto" or "bootstrap" (both the cluster bootstrap).
    n_resamples, seed : int
        Resamples and seed of every bootstrap in the report: the corrected pass rate's (always),
        kappa's with ``method="bootstrap"``, and all of them with ``units``.
    ids : sequence, optional
        Item ids used as the index of ``disagreements``.
    names : (str, str), optional
        The names of the human and the judge side, used in the report's title, the confusion
        table's axes, the disagreements' columns and error messages. Default: the Series' names,
        else ``("human", "judge")``.
    rows : DataFrame, optional
        The row table the two label columns come from, one row per item in the same order (what
        ``df.rag.agreement`` passes). ``report.disagreements`` then holds the original rows (every
        column, index kept) where judge and people differ, and error messages name the two sides
        as columns of it (``df[name]``, with ``names``) under ``rag.agreement``.
    warn : bool
        Issue the report's warnings as Python warnings (:class:`LowAgreementWarning` when kappa <
        0.4, :class:`FragileIntervalWarning` for an interval that cannot be trusted): the
        programmatic signal (``warnings.simplefilter("error", LowAgreementWarning)`` makes a weak
        judge stop a script). They are kept in ``report.warnings`` either way. Each is shown once
        in a notebook: with ``warn=True`` the report's display only counts them (their text was
        just printed as the warning); with ``warn=False`` the display prints them in full.
    labels_from : {"run", "validation"}, optional
        Where the human labels come from, for the report's ``recommendation``: ``"run"``, a random
        subset of the rows whose pass rate is estimated (then prediction-powered inference,
        ``raglab.stats.ppi_mean`` or ``rows.rag.estimate``, is recommended); ``"validation"``,
        a separate validation set whose error rates are carried to other runs (then the
        Rogan-Gladen correction, :meth:`AgreementReport.correct`). Default: ``"run"`` when ``rows``
        records a labelled sampling design (``attrs["raglab"]["sampling"]["labelled"]``, as
        :func:`raglab.sampling.draw` writes), else unknown and the recommendation gives both with
        their conditions.

    Returns
    -------
    AgreementReport

    Examples
    --------
    >>> human = [1] * 150 + [0] * 50
    >>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    >>> rep = report(human, judge, positive=1)
    >>> round(rep.kappa, 3), rep.miss_rate, rep.judge_positive_rate, rep.human_positive_rate
    (0.559, 0.44, 0.82, 0.75)
    >>> rep.confusion.to_numpy().tolist()       # people in rows, judge in columns: [pass, fail]
    [[142, 8], [22, 28]]
    >>> conversations = [f"c{i % 20}" for i in range(200)]    # 20 clusters of 10 items
    >>> clustered = report(human, judge, positive=1, units=conversations, n_resamples=2000)
    >>> clustered.n_clusters, clustered.kappa_interval.method
    (20, 'cluster bootstrap expanded-percentile over 20 clusters')

    With the row table, the disagreements are its rows:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "label": human, "verdict": judge})
    >>> rep = report(df["label"], df["verdict"], positive=1, names=("label", "verdict"), rows=df)
    >>> rep.disagreements["question_id"].iloc[0], rep.confusion.index.name
    ('q142', 'label')
    """
    return _report(
        human, judge, positive=positive, labels=labels, weights=weights, distance=distance,
        human_threshold=human_threshold, judge_threshold=judge_threshold, ci=ci, method=method,
        n_resamples=n_resamples, seed=seed, ids=ids, warn=warn, rows=rows, names=names, units=units,
        labels_from=labels_from,
    )


#: Where the human labels of a report can come from (``labels_from=``).
LABEL_SOURCES = ("run", "validation")


def label_source(rows: pd.DataFrame | None, labels_from: str | None) -> str | None:
    """``labels_from`` checked, or ``"run"`` when ``rows`` records a labelled sampling design, else None."""
    if labels_from is not None:
        return check_option("labels_from", labels_from, LABEL_SOURCES)
    if isinstance(rows, pd.DataFrame):
        stored = rows.attrs.get("raglab", {})
        sampling = stored.get("sampling") if isinstance(stored, dict) else None
        if isinstance(sampling, dict) and isinstance(sampling.get("labelled"), dict):
            return "run"
    return None


def recommendation(source: str | None) -> str:
    """The report's advice on estimating the pass rate, by where the labels come from (see :func:`report`).

    Examples
    --------
    >>> recommendation("run").split(":")[0]
    "The labels are a random sample of this run's rows"
    """
    ppi = ("prediction-powered inference (raglab.stats.ppi_mean, or rows.rag.estimate(metric, human=...)): it uses "
           "the judge on every row and these labels to remove its bias; with its tuned weight it is no wider than the "
           "labels alone (up to sampling error), where the Rogan-Gladen correction can be several times wider")
    rg = ("the Rogan-Gladen correction (report.correct(judge_pass_rate, n)) carries the judge's error rates "
          "measured here to another run judged by the same judge")
    if source == "run":
        return (f"The labels are a random sample of this run's rows: estimate its pass rate with {ppi}. Use "
                f"Rogan-Gladen only for other runs: {rg}.")
    if source == "validation":
        return (f"The labels come from a separate validation set: {rg}. When people label a random sample of the "
                f"run itself, use {ppi}.")
    return (f"If the labels are a random sample of the rows whose pass rate you estimate (record it with "
            f"raglab.sampling.draw), use {ppi}. If they come from a separate validation set, {rg}. Labels picked by "
            "hand or reused across systems support neither.")


# --------------------------------------------------------------------------------------------------
# The report's steps
# --------------------------------------------------------------------------------------------------


def _check_options(
    weights: str | None, distance: str, method: str, ci: float, n_resamples: int, units: Any
) -> float:
    """Check the report's options; return the confidence level as a float."""
    check_option("weights", weights, WEIGHTS)
    check_option("distance", distance, DISTANCES)
    check_option("method", method, KAPPA_METHODS)
    level = check_level(ci)
    check_resamples(n_resamples)
    if units is not None and method in ("analytic", "adjusted"):
        raise ValueError(
            f"units= resamples whole clusters for every interval, kappa's included; method={method!r} would "
            "treat the items as independent. Leave method='auto' or pass method='bootstrap'"
        )
    return level


def check_names(names: Any) -> tuple[Any, Any] | None:
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence) or len(names) != 2:
        raise TypeError(f"`names` must be a pair (human name, judge name), got {names!r}")
    return names[0], names[1]


def side_naming(
    human: Any,
    judge: Any,
    names: tuple[Any, Any] | None,
    rows: pd.DataFrame | None,
    sides: tuple[Side, Side] | None,
    caller: str | None,
) -> tuple[tuple[Any, Any], tuple[Side, Side], str]:
    """The two sides' names, how errors show them and fix them, and the prefix of every message."""
    if names is None:
        names = (
            str(human.name) if isinstance(human, pd.Series) and human.name is not None else "human",
            str(judge.name) if isinstance(judge, pd.Series) and judge.name is not None else "judge",
        )
    if caller is None:
        caller = "rag.agreement" if rows is not None else "report"
    if sides is None:
        if rows is not None:
            sides = (column_side(names[0], "human_threshold"), column_side(names[1], "judge_threshold"))
        else:
            sides = (arg_side("human", "human_threshold"), arg_side("judge", "judge_threshold"))
            sides = tuple(  # type: ignore[assignment]
                Side(f"{s.name} ({shown!r})", s.target, s.expr, s.threshold) if shown != arg else s
                for s, shown, arg in zip(sides, names, ("human", "judge"))
            )
    return names, sides, caller


def _item_index(ids: Any, human: Any, judge: Any, n: int) -> pd.Index:
    """The index of the disagreements: ``ids``, else a Series' index, else 0..n-1."""
    if ids is not None:
        index = pd.Index(list(ids))
        if len(index) != n:
            raise ValueError(f"`ids` must give one id per item: got {len(index)} ids for {n} items")
        return index
    if isinstance(human, pd.Series):
        return human.index
    if isinstance(judge, pd.Series):
        return judge.index
    return pd.RangeIndex(n)


def check_rows(rows: Any, n: int) -> None:
    """``rows``, when given, is the DataFrame the ``n`` labels come from (used to name columns in errors)."""
    if rows is None:
        return
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"`rows` must be the DataFrame the labels come from, got {type(rows).__name__}")
    if len(rows) != n:
        raise ValueError(f"`rows` must hold one row per item: got {len(rows)} rows for {n} items")


def refuse_side(values: np.ndarray, threshold: Any, who: str) -> None:
    """Fractional scores without a threshold are not labels: refuse them, naming the keyword."""
    if threshold is None and looks_like_scores(values):
        example = next(float(v) for v in values if isinstance(v, (float, np.floating)) and np.isfinite(v) and v != int(v))
        raise ValueError(
            f"the {who} column holds scores (e.g. {example!r}), not labels; pass {who}_threshold= to turn "
            f"them into pass/fail (score >= threshold), e.g. {who}_threshold=0.5"
        )


def _refuse_scores(x: np.ndarray, y: np.ndarray, human_threshold: Any, judge_threshold: Any) -> None:
    refuse_side(x, human_threshold, "human")
    refuse_side(y, judge_threshold, "judge")


def pass_label(labs: list[Any], positive: Any, labels: Any) -> tuple[list[Any], Any]:
    """The pass label (inferred as 1/True for 0/1 or boolean labels), checked against the labels."""
    if positive is None and len(labs) <= 2 and set(labs) <= {0, 1}:
        positive = True if any(isinstance(v, (bool, np.bool_)) for v in labs) else 1
    if positive is not None and positive not in labs:
        if labels is None and set(labs) <= {0, 1} and positive in (0, 1):
            labs = labs + [positive]  # e.g. a judge and people who never fail: the class still exists
        else:
            raise ValueError(
                f"positive label {positive!r} does not occur in the labels {labs!r}; pass the label that means "
                "pass (e.g. positive='supported')"
            )
    return labs, positive


@dataclass(frozen=True)
class _Labels:
    """The two sides after thresholds, refusals and coding."""

    shown_x: np.ndarray  # the labels as compared (after thresholds), for the disagreements table
    shown_y: np.ndarray
    ca: np.ndarray  # codes of the kept items (both labels present)
    cb: np.ndarray
    keep: np.ndarray  # which items are kept
    labels: list[Any]
    positive: Any
    index: pd.Index
    clusters: np.ndarray | None
    units_name: str | None

    @property
    def n(self) -> int:
        return len(self.ca)

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def pos(self) -> int | None:
        return self.labels.index(self.positive) if self.positive is not None else None


def _prepare_labels(
    human: Any,
    judge: Any,
    *,
    positive: Any,
    labels: Any,
    weights: str | None,
    distance: str,
    human_threshold: float | None,
    judge_threshold: float | None,
    ids: Any,
    units: Any,
    rows: pd.DataFrame | None,
    sides: tuple[Side, Side],
    caller: str,
) -> _Labels:
    """Pair the two sides, apply thresholds, refuse labels that can never match, and code them."""
    if labels is None and weights is not None:
        labels = categorical_order(human, judge)  # ordered Categoricals carry the order a weighted kappa needs
    x, y = pair_labels(human, judge, ("human", "judge"))
    index = _item_index(ids, human, judge, len(x))
    check_rows(rows, len(x))
    clusters, units_name = (None, None) if units is None else item_clusters(units, len(x))
    _refuse_scores(x, y, human_threshold, judge_threshold)
    x = binarize(x, human_threshold, "human")
    y = binarize(y, judge_threshold, "judge")
    if (human_threshold is not None or judge_threshold is not None) and positive is None:
        positive = True
    shown_x, shown_y = x, y
    x, y = check_comparable(x, y, sides, caller=caller, labels=labels, positive=positive)
    (ca, cb), labs, _ = label_codes([x, y], labels, need_order=weights is not None)
    refuse_unordered(labs, labels, weights, distance, sides, caller)
    keep = (ca >= 0) & (cb >= 0)
    if not keep.any():
        raise ValueError("no item has both a human and a judge label; nothing to compare")
    labs, positive = pass_label(labs, positive, labels)
    return _Labels(shown_x, shown_y, ca[keep], cb[keep], keep, labs, positive, index, clusters, units_name)


def _binary_statistics(
    table: np.ndarray,
    pos: int,
    intervals: dict[str, Interval],
    denominators: dict[str, int],
    *,
    dis: np.ndarray,
    item_tables: np.ndarray,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The pass/fail statistics against the ``pos`` label: values, counts, and (in place) intervals."""
    n = int(table.sum())
    binary: dict[str, Any] = dict.fromkeys(BINARY_STATISTICS)
    hp = int(table.sum(1)[pos])
    hn = n - hp
    tp = int(table[pos, pos])
    fp = int(table[:, pos].sum() - tp)  # human negative, judge passed: the judge's misses
    tn = hn - fp
    counts = {"human_positive": hp, "human_negative": hn, "true_pass": tp, "false_pass": fp, "true_fail": tn}
    binary["human_positive_rate"] = hp / n
    binary["judge_positive_rate"] = (tp + fp) / n
    intervals["human_positive_rate"] = proportion_interval(hp, n, ci=level)
    intervals["judge_positive_rate"] = proportion_interval(tp + fp, n, ci=level)
    denominators.update(human_positive_rate=n, judge_positive_rate=n)
    if hp:
        binary["sensitivity"] = tp / hp
        intervals["sensitivity"] = proportion_interval(tp, hp, ci=level)
        denominators["sensitivity"] = hp
    if hn:
        binary["specificity"] = tn / hn
        binary["miss_rate"] = fp / hn
        intervals["specificity"] = proportion_interval(tn, hn, ci=level)
        intervals["miss_rate"] = proportion_interval(fp, hn, ci=level)
        denominators.update(specificity=hn, miss_rate=hn)
    if not (hp and hn):
        return binary, counts
    _, low, high = _newcombe_difference(tp, hp, fp, hn, level)
    binary["attenuation"] = binary["sensitivity"] + binary["specificity"] - 1
    intervals["attenuation"] = Interval(
        binary["attenuation"], low, high, method="newcombe hybrid score (sensitivity - miss rate)",
        level=level, n=n,
    )
    denominators["attenuation"] = n
    if binary["attenuation"] > 0:
        # On the validation items the correction returns the people's rate; its interval
        # resamples the items, so sensitivity, specificity and the judge's rate (estimated
        # from the same items) are re-estimated together in each resample.
        boot = table_statistics(item_tables, dis, pos)["corrected_pass_rate"]
        low, high = percentile(boot, level)
        intervals["corrected_pass_rate"] = Interval(
            binary["human_positive_rate"], low, high,
            method=f"rogan-gladen on the validation items: bootstrap over the {n} items, re-estimating "
            "sensitivity, specificity and the judge's rate together in each resample (percentile)",
            level=level, n=n, n_resamples=n_resamples, seed=seed,
        )
        denominators["corrected_pass_rate"] = n
    return binary, counts


def _newcombe_difference(x1: int, n1: int, x2: int, n2: int, level: float) -> tuple[float, float, float]:
    """Newcombe's hybrid score interval (method 10) for p1 - p2 of two independent proportions."""
    a = proportion_interval(x1, n1, ci=level)
    b = proportion_interval(x2, n2, ci=level)
    d = a.estimate - b.estimate
    low = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    high = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return d, max(-1.0, low), min(1.0, high)


def _tables(
    table: np.ndarray, prepared: _Labels, names: tuple[Any, Any], rows: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """The confusion table (pass label first), the per-class recall and the disagreements."""
    labs, pos, k = prepared.labels, prepared.pos, prepared.k
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.diag(table) / table.sum(1)
    per_class = pd.Series(recall, index=pd.Index(labs, dtype=object), name="recall")
    per_class.index.name = names[0]
    order = list(range(k)) if pos is None else [pos] + [i for i in range(k) if i != pos]
    shown = [labs[i] for i in order]
    confusion = pd.DataFrame(
        table[np.ix_(order, order)].astype(np.int64),
        index=pd.Index(shown, name=names[0]),
        columns=pd.Index(shown, name=names[1]),
    )
    differ = np.flatnonzero(prepared.keep)[prepared.ca != prepared.cb]
    if rows is not None:
        disagreements = rows.iloc[differ]
    else:
        disagreements = pd.DataFrame(
            {names[0]: prepared.shown_x[differ], names[1]: prepared.shown_y[differ]}, index=prepared.index[differ]
        )
    return confusion, per_class, disagreements


def _report_warnings(positive: Any, counts: dict[str, int], kappa: float) -> list[str]:
    """Why the judge cannot be trusted (one class only among the human labels, kappa below 0.4)."""
    low_agreement: list[str] = []
    if positive is not None and (counts.get("human_positive") == 0 or counts.get("human_negative") == 0):
        only = "positive" if counts.get("human_negative") == 0 else "negative"
        low_agreement.append(
            f"people gave every item the {only} label: sensitivity, specificity, attenuation and kappa's interval "
            "say nothing about the judge; label items of the other class too"
        )
    if not math.isnan(kappa) and kappa < KAPPA_UNTRUSTED:
        low_agreement.append(
            f"kappa = {kappa:.3f} is below {KAPPA_UNTRUSTED}: this judge should not be trusted "
            f"({THRESHOLDS_TEXT}). Look at report.disagreements, fix the judge and re-measure on fresh labels."
        )
    return low_agreement


@dataclass(frozen=True)
class _Statistics:
    """The report's numbers: the confusion counts, every interval, the pass/fail rates and the notes."""

    table: np.ndarray  # k x k counts, human labels as rows
    intervals: dict[str, Interval]
    binary: dict[str, Any]
    counts: dict[str, int]
    n_clusters: int | None
    design_effects: dict[str, float]
    se_sp_draws: np.ndarray | None
    messages: list[str]  # why an interval is fragile (issued as FragileIntervalWarning)


def _repeated_questions(rows: pd.DataFrame | None) -> str | None:
    """A note when rows repeat a question id: they are not independent items, so the intervals are too narrow."""
    if rows is None or "question_id" not in rows.columns:
        return None
    repeated = rows["question_id"].astype(str).value_counts()
    repeated = repeated[repeated > 1]
    if not len(repeated):
        return None
    return (
        f"question ids repeat ({len(repeated)} id(s), e.g. {repeated.index[0]!r} {int(repeated.iloc[0])} times): "
        "each row counts as an independent item, so the intervals are too narrow if these are one question's "
        "labels; drop the repeats, or pass units='question_id' to resample whole questions")


def _statistics(
    prepared: _Labels,
    *,
    weights: str | None,
    distance: str,
    level: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    rows: pd.DataFrame | None,
) -> _Statistics:
    """Kappa, the rates and their intervals (item or cluster bootstrap), in one pass over the random stream."""
    n, k, pos = prepared.n, prepared.k, prepared.pos
    dis = disagreement_weights(prepared.labels, weights, distance)
    table = confusion_counts(prepared.ca, prepared.cb, k)
    clustered = prepared.clusters is not None
    messages: list[str] = []
    rng = np.random.default_rng(seed)
    # One item bootstrap serves kappa's bootstrap interval, the corrected pass rate and (with units)
    # the design effects; with units, one cluster bootstrap serves every interval.
    need_items = method == "bootstrap" or pos is not None or clustered
    item_tables = item_bootstrap_tables(table, n_resamples, rng) if need_items else None
    kappa_iv, note = table_kappa_interval(table, dis, ci=level, method="bootstrap" if clustered else method,
                                     n_resamples=n_resamples, seed=seed, boot_tables=item_tables)
    if not clustered:
        messages += [m for m in (note, _repeated_questions(rows)) if m]
    intervals: dict[str, Interval] = {"agreement": proportion_interval(int(np.trace(table)), n, ci=level),
                                      "kappa": kappa_iv}
    denominators = {"agreement": n, "kappa": n}
    binary: dict[str, Any] = dict.fromkeys(BINARY_STATISTICS)
    counts: dict[str, int] = {}
    if pos is not None:
        binary, counts = _binary_statistics(table, pos, intervals, denominators, dis=dis, item_tables=item_tables,
                                            level=level, n_resamples=n_resamples, seed=seed)
    n_clusters, design_effects, se_sp_draws = None, {}, None
    if clustered:
        n_clusters, design_effects, se_sp_draws, message = cluster_intervals(
            intervals, denominators, clusters=prepared.clusters[prepared.keep], cells=prepared.ca * k + prepared.cb,
            k=k, dis=dis, pos=pos, item_tables=item_tables, rng=rng, level=level, n_resamples=n_resamples, seed=seed,
        )
        if message:
            messages.append(message)
    return _Statistics(table, intervals, binary, counts, n_clusters, design_effects, se_sp_draws, messages)


def _issue(low_agreement: list[str], messages: list[str], caller: str) -> None:
    """The report's warnings as Python warnings (``warn=True``)."""
    for message in low_agreement:
        _warn(message, LowAgreementWarning)
    for message in messages:
        _warn(f"{caller}: {message}", FragileIntervalWarning)


def _report(
    human: Any,
    judge: Any,
    *,
    positive: Any,
    labels: Any,
    weights: str | None,
    distance: str,
    human_threshold: float | None,
    judge_threshold: float | None,
    ci: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    ids: Any = None,
    warn: bool = True,
    rows: pd.DataFrame | None = None,
    names: tuple[str, str] | None = None,
    n_ties: int = 0,
    ties: str | None = None,
    units: Any = None,
    sides: tuple[Side, Side] | None = None,
    caller: str | None = None,
    labels_from: str | None = None,
) -> AgreementReport:
    """:func:`report`, plus what :func:`judge_vs_majority` passes: ties, and how the sides are named."""
    level = _check_options(weights, distance, method, ci, n_resamples, units)
    source = label_source(rows, labels_from)
    names, sides, caller = side_naming(human, judge, check_names(names), rows, sides, caller)
    prepared = _prepare_labels(
        human, judge, positive=positive, labels=labels, weights=weights, distance=distance,
        human_threshold=human_threshold, judge_threshold=judge_threshold, ids=ids, units=units, rows=rows,
        sides=sides, caller=caller,
    )
    numbers = _statistics(prepared, weights=weights, distance=distance, level=level, method=method,
                          n_resamples=n_resamples, seed=seed, rows=rows)
    kappa_iv = numbers.intervals["kappa"]
    confusion, per_class, disagreements = _tables(numbers.table, prepared, names, rows)
    low_agreement = _report_warnings(prepared.positive, numbers.counts, kappa_iv.estimate)
    if warn:
        _issue(low_agreement, numbers.messages, caller)
    return AgreementReport(
        n=prepared.n,
        n_excluded=int((~prepared.keep).sum()),
        labels=prepared.labels,
        positive=prepared.positive,
        kappa=kappa_iv.estimate,
        kappa_interval=kappa_iv,
        agreement=int(np.trace(numbers.table)) / prepared.n,
        confusion=confusion,
        per_class_recall=per_class,
        weights=weights,
        distance=distance,
        corrected_pass_rate=numbers.intervals.get("corrected_pass_rate"),
        intervals=numbers.intervals,
        disagreements=disagreements,
        human_name=names[0],
        judge_name=names[1],
        n_ties=n_ties,
        ties=ties,
        n_clusters=numbers.n_clusters,
        units_name=prepared.units_name,
        design_effects=numbers.design_effects,
        warnings=low_agreement + numbers.messages,
        recommendation=recommendation(source) if prepared.positive is not None else "",
        _counts=numbers.counts,
        _se_sp_draws=numbers.se_sp_draws,
        _warned=bool(warn and (low_agreement or numbers.messages)),
        **numbers.binary,
    )


# --------------------------------------------------------------------------------------------------
# Against the majority of several raters
# --------------------------------------------------------------------------------------------------


def judge_vs_majority(
    ratings: Any,
    judge: Sequence[Hashable],
    *,
    positive: Hashable | None = None,
    ties: str = "drop",
    rating_threshold: float | None = None,
    judge_threshold: float | None = None,
    labels: Sequence[Hashable] | None = None,
    units: Sequence[Hashable] | None = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    ids: Sequence[Hashable] | None = None,
    names: tuple[str, str] | None = None,
    rows: pd.DataFrame | None = None,
    warn: bool = True,
) -> AgreementReport:
    """Validate a judge against the majority label of several human raters.

    Each rater's label is taken as given (or, with ``rating_threshold``, turned into pass/fail
    first: ``rating >= rating_threshold``), the per-item majority is formed with the tie rule
    ``ties`` (see :func:`majority_vote`), and the judge is compared with it by :func:`report`
    (``units``, ``ci``, ``method``, ``n_resamples``, ``seed``, ``warn`` as there; ``units`` gives
    a cluster label per row of ``ratings``). With ``ties="drop"`` (default) tied items are excluded
    and counted in ``n_ties``.

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater (missing as NaN or None); a DataFrame's index
        labels the disagreements.
    judge : sequence of hashable
        The judge's label (or, with ``judge_threshold``, score) per item, in the same order.
    positive, labels, judge_threshold, units, ci, method, n_resamples, seed, ids, warn
        As in :func:`report` (``labels`` orders the raters' labels for the majority).
    ties : {"drop", "low", "high"}
        The tie rule of :func:`majority_vote`.
    rating_threshold : float, optional
        Turn each rater's numeric rating into pass/fail first: ``rating >= rating_threshold``.
    names : (str, str), optional
        The names of the majority side and the judge, as in :func:`report`. Default:
        ``("human majority", <the judge Series' name or "judge">)``.
    rows : DataFrame, optional
        The row table ``ratings`` (a DataFrame of its rater columns) and ``judge`` come from, one
        row per item (what ``df.rag.agreement`` passes): ``report.disagreements`` then holds the
        original rows, and error messages name the rater columns and the judge column (``names[1]``)
        of it under ``rag.agreement``.

    Returns
    -------
    AgreementReport

    Examples
    --------
    >>> ratings = [[4, 4, 3], [1, 2, None], [4, 2, None], [3, 4, 4]]
    >>> rep = judge_vs_majority(ratings, [0.9, 0.8, 0.2, 1.0], rating_threshold=3, judge_threshold=0.5,
    ...                         warn=False)
    >>> rep.n, rep.n_ties, rep.miss_rate
    (3, 1, 1.0)
    """
    check_option("ties", ties, TIES)
    matrix = as_matrix(ratings)
    if rating_threshold is not None:
        matrix = _threshold_ratings(matrix, rating_threshold)
        if positive is None:
            positive = True
    if rows is not None and isinstance(ratings, pd.DataFrame):
        holders, caller = f"the rater columns {[plain(c) for c in ratings.columns]!r}", "rag.agreement"
    else:
        holders, caller = "`ratings`", "judge_vs_majority"
    majority, tied = majority_labels(matrix, labels, ties, holders, caller)
    j = as_labels(judge, "judge")
    if len(j) != len(majority):
        raise ValueError(f"`ratings` has {len(majority)} items but `judge` has {len(j)} labels")
    if judge_threshold is not None:
        j = binarize(j, judge_threshold, "judge")
        if positive is None:
            positive = True
    n_ties = int(tied.sum()) if ties == "drop" else 0
    if ids is None and isinstance(ratings, pd.DataFrame):
        ids = ratings.index
    names = check_names(names)
    if names is None:
        judge_name = str(judge.name) if isinstance(judge, pd.Series) and judge.name is not None else "judge"
        names = ("human majority", judge_name)
    if rows is not None and isinstance(ratings, pd.DataFrame):
        columns = [plain(c) for c in ratings.columns]
        ref = f"df[{columns!r}]"
        sides = (Side(f"the majority of {columns!r}", ref, ref, "human_threshold"),
                 column_side(names[1], "judge_threshold"))
    else:
        sides = (Side("`ratings` (their majority)", "ratings", "pd.DataFrame(ratings)", "rating_threshold"),
                 arg_side("judge", "judge_threshold"))
    return _report(
        majority, j, positive=positive, labels=None, weights=None, distance="rank", human_threshold=None,
        judge_threshold=None, ci=ci, method=method, n_resamples=n_resamples, seed=seed, ids=ids, warn=warn,
        names=names, n_ties=n_ties, ties=ties, rows=rows, units=units, sides=sides, caller=caller,
    )


def _threshold_ratings(matrix: np.ndarray, rating_threshold: float) -> np.ndarray:
    """Each rating as pass/fail (``rating >= rating_threshold``); missing ratings stay None."""
    missing = missing_mask(matrix)
    try:
        numbers = np.where(missing, np.nan, matrix).astype(float)
    except (TypeError, ValueError):
        raise TypeError("`rating_threshold` needs numeric ratings") from None
    binary = np.empty(matrix.shape, dtype=object)
    binary[:] = numbers >= rating_threshold
    binary[missing] = None
    return binary
