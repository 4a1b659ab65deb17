"""The functions behind ``rows.rag.judge``: judge_rows, the frame layer, and cost estimates."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab._meta import carry_meta, check_section, get_meta, set_meta
from raglab._results import ResultBase, jsonable
from raglab._rowtable import Roles, table_roles, validate_rows
from raglab._validation import called_as, caller, warn
from raglab.judge._base import (
    METRICS,
    MetricOut,
    RowInputs,
    assemble,
    check_errors_option,
    check_metrics,
    check_progress,
    check_repeats,
    context_or_none,
    input_problem,
    join_errors,
    text_or_none,
)
from raglab.judge._metrics import JUDGE_METRICS
from raglab.judge._noise import noise_from_results

__all__ = ["judge_rows", "judge_frame", "judge_table", "JudgeEstimate", "estimate_rows", "DEFAULT_METRICS"]

DEFAULT_METRICS = ("faithfulness", "relevance")



def _check_judge(judge: Any, caller: str) -> None:
    if not (hasattr(judge, "_run") and hasattr(judge, "record") and hasattr(judge, "fingerprint")):
        raise TypeError(
            f"{caller} needs a judge such as raglab.judge.LLMJudge(...) or raglab.judge.LexicalJudge(), "
            f"got {type(judge).__name__}"
        )


def _as_list(values: Sequence[Any] | pd.Series | None, n: int | None, name: str) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"`{name}` must be a sequence (one entry per row), not a single string")
    out = values.tolist() if isinstance(values, (pd.Series, np.ndarray)) else list(values)
    if n is not None and len(out) != n:
        raise ValueError(f"`{name}` has {len(out)} entries but `answers` has {n}; give one per row")
    return out


def _row_objects(columns: Mapping[str, list[Any] | None], n: int) -> list[RowInputs]:
    """One :class:`RowInputs` per row from the per-role value lists (None: the role is absent)."""
    def cell(role: str, i: int, clean: Any) -> Any:
        values = columns[role]
        return None if values is None else clean(values[i])

    return [RowInputs(question=cell("question", i, text_or_none), answer=cell("answer", i, text_or_none),
                      context=cell("context", i, context_or_none), reference=cell("reference", i, text_or_none))
            for i in range(n)]


def judge_rows(
    judge: Any,
    *,
    answers: Sequence[str | None] | pd.Series | None = None,
    questions: Sequence[str | None] | pd.Series | None = None,
    contexts: Sequence[Any] | pd.Series | None = None,
    references: Sequence[str | None] | pd.Series | None = None,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    repeats: int = 1,
    errors: str = "warn",
    progress: bool = True,
    ci: float = 0.95,
    ids: Sequence[Any] | None = None,
    _names: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Judge answers without a row table; returns the judge's output columns (one row per answer).

    Parameters
    ----------
    judge : LLMJudge or LexicalJudge
    answers, questions, contexts, references : sequences, one entry per row
        ``contexts`` entries are a string or a list of passages. What each metric needs:
        faithfulness (answers, contexts), relevance (questions, answers), correctness (answers,
        references; questions help), declined (answers; questions help), context_relevance
        (questions, contexts), context_recall (references, contexts).
    metrics : str or list of str
        Any of :data:`raglab.judge.METRICS`: ``"faithfulness"``, ``"relevance"``, ``"correctness"``,
        ``"declined"``, ``"context_relevance"``, ``"context_recall"``.
    repeats : int
        Judge each row this many times (> 1 measures judge noise, see :class:`JudgeNoise`).
    errors : {"warn", "raise", "ignore"}
        What failed calls do. ``"warn"`` (default): the row records
        why in ``judge_error`` and the run goes on; at the end a warning gives the counts, or a
        :class:`JudgeError` when more than the judge's ``failure_threshold`` share of the rows (or
        every row) failed. ``"raise"``: :class:`JudgeError` at the first failed row. ``"ignore"``:
        record only, never warn or raise.
    progress : bool
        Show a progress bar (tqdm: a widget in notebooks, text in terminals).
    ci : float
        Level of the sampling interval reported with judge noise.
    ids : sequence, optional
        Row labels used in error messages (e.g. question ids).

    A row whose text cannot be sent at all (not valid Unicode: a lone surrogate) is not judged:
    its scores are NaN and ``judge_error`` names the column, passage and position; the other rows
    are judged (``errors="raise"`` raises :class:`RowTableError` before any call instead).

    Returns
    -------
    DataFrame
        The output columns (see ``raglab.judge._base.assemble``), with
        ``attrs["raglab"]["judge"]`` = the judge record (fingerprint, model, temperature, prompt and
        schema hashes, claim splitting, raglab version, metrics; ``noise`` with repeats > 1, ``run``
        counters for an LLM judge).

    Examples
    --------
    >>> from raglab.judge import LexicalJudge, judge_rows
    >>> out = judge_rows(LexicalJudge(), answers=["Paris is the capital."], contexts=[["Paris is the capital of France."]],
    ...                  metrics="faithfulness", progress=False)
    >>> out["faithfulness"].tolist(), out.attrs["raglab"]["judge"]["metrics"]
    ([1.0], ['faithfulness'])
    """
    _check_judge(judge, "judge_rows")
    chosen = check_metrics(metrics)
    repeats = check_repeats(repeats)
    errors = check_errors_option(errors)
    progress = check_progress(progress)
    if not 0 < ci < 1:
        raise ValueError(f"`ci` must be between 0 and 1, but {ci!r} was passed.")
    given = {"answer": answers, "question": questions, "context": contexts, "reference": references}
    first = next((name for name, value in given.items() if value is not None), None)
    if first is None:
        raise TypeError("judge_rows needs the inputs its metrics read: answers, questions, contexts or references")
    # context metrics judge retrieval alone, so a table without answers is fine for them
    n = len(_as_list(given[first], None, f"{first}s") or [])
    columns = {role: _as_list(value, n, f"{role}s") for role, value in given.items()}
    for metric in chosen:
        for needed in METRICS[metric]:
            if columns[needed] is None:
                raise ValueError(f"judge_rows: metric {metric!r} needs `{needed}s`; pass {needed}s=[...]")
    rows = _row_objects(columns, n)
    labels = [str(i) for i in range(n)] if ids is None else [repr(v) for v in _as_list(ids, n, "ids") or []]
    # The one place where a row's bad input becomes that row's judge_error (the others are judged).
    bad = {i: problem for i, row in enumerate(rows) if (problem := input_problem(row, _names)) is not None}
    if bad:
        first = next(iter(bad))
        what = f"{len(bad)} of {n} rows cannot be sent to the judge (first: row {labels[first]}: {bad[first]})"
        if errors == "raise":
            raise RowTableError(f"judge: {what}. Fix or drop those rows, or pass errors='warn' to judge the others.")
        if errors == "warn":
            warn(f"rag.judge: {what}; their scores are NaN and `judge_error` says why.", UserWarning)
    good = [i for i in range(n) if i not in bad]
    results: list[list[dict[str, MetricOut]]] = [
        [{m: MetricOut(error=bad[i] if r == 0 else None, failed=True) for m in chosen} for r in range(repeats)]
        if i in bad else [] for i in range(n)]  # the reason once per metric, not once per repeat
    ran = False
    if good:
        judged = judge._run([rows[i] for i in good], chosen, repeats=repeats, errors=errors, progress=progress,
                            labels=[labels[i] for i in good])
        for i, out in zip(good, judged):
            results[i] = out
        ran = True
    frame = assemble(results, chosen, repeats)
    record = {**judge.record(), "metrics": list(chosen)}
    if repeats > 1:
        record["repeats"] = repeats
        record["noise"] = noise_from_results(results, chosen, ci=ci).to_dict()
    last = getattr(judge, "last_run", None)
    if last is not None and ran:
        record["run"] = {**last.to_dict(), "rows_unsendable": len(bad)}
    set_meta(frame, {"judge": record})
    return frame


def _output_columns(metric: str) -> list[str]:
    return JUDGE_METRICS[metric].columns + [f"{metric}_repeats", f"{metric}_mean"]


def _row_inputs(df: pd.DataFrame, chosen: Sequence[str], columns: Mapping[str, str | None], caller: str
                ) -> tuple[dict[str, str], dict[str, list[Any] | None]]:
    needed: set[str] = set()
    for metric in chosen:
        needed.update(METRICS[metric])
    resolved = validate_rows(df, caller=caller, require=sorted(needed | {"question_id"}),
                             columns={role: columns.get(role) for role in ROLE_NAMES})
    data: dict[str, list[Any] | None] = {}
    for role in ("question", "answer", "context", "reference"):
        column = resolved.get(role)
        data[role] = None if column is None else df[column].tolist()
    return resolved, data


ROLE_NAMES = ("question_id", "question", "answer", "context", "reference")


def judge_table(
    rows: pd.DataFrame,
    judge: Any,
    *,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    repeats: int = 1,
    errors: str = "warn",
    progress: bool = True,
    ci: float = 0.95,
    sample: int | float | None = None,
    by: str | None = None,
    seed: int = 0,
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """Score a row table's answers with a judge; returns a NEW frame with the score columns.

    ``rows.rag.judge(judge, ...)`` is ``judge_table(rows, judge, ...)``.

    Parameters
    ----------
    rows : DataFrame
        The row table (``question_id`` and the columns the metrics need).
    judge : raglab.judge.LLMJudge or raglab.judge.LexicalJudge
        The judge. Its fingerprint (model, temperature, prompts, schemas, claim splitting) is
        recorded in ``attrs["raglab"]["judge"]``; comparing runs with different fingerprints warns.
    metrics : str or list of str
        ``"faithfulness"`` (needs ``answer``, ``context``), ``"relevance"`` (``question``,
        ``answer``), ``"correctness"`` (``answer``, ``reference``), ``"declined"`` (``answer``),
        ``"context_relevance"`` (``question``, ``context``), ``"context_recall"`` (``reference``, ``context``).
    repeats : int
        Judge each row this many times to measure judge noise (see
        :func:`raglab.judge.judge_noise`); the main columns hold repeat 0.
    errors : {"warn", "raise", "ignore"}
        ``"warn"`` (default): record why a row is unscored in
        ``judge_error`` and go on, then warn with the counts, or raise
        :class:`raglab.judge.JudgeError` when more than the judge's ``failure_threshold`` share
        of the rows (or every row) failed. ``"raise"``: raise at the first failed row.
        ``"ignore"``: record only.
    progress : bool
        Show a progress bar with done, cached and failed counts.
    ci : float
        Level of the sampling interval in the judge-noise report.
    sample : int or float, optional
        Judge only a random sample of the rows (seed 001's "judge metrics on a subset"): an int is
        the number of rows, a float in (0, 1] the share of them. The sample is drawn with
        :func:`raglab.sampling.draw` (stratified by ``by``, seeded by ``seed``); the other rows'
        judge columns stay NaN (``judge_error`` None: not judged, not failed), the columns
        ``selected`` (bool) and ``inclusion_probability`` (each row's chance of being judged) are
        added, and the design (kind ``"judged"``, method, n, population, strata, seed, metrics) is
        recorded in ``attrs["raglab"]["sampling"]["judged"]`` (see ``raglab._meta.SamplingDesign``),
        so estimates made from the judged rows weight by it. Default: judge every row.
    by : str, optional
        With ``sample``: the stratum column (e.g. ``"qtype"``); each stratum is sampled separately.
    seed : int
        With ``sample``: the seed of the draw (the same seed draws the same rows).
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``question``,
        ``answer``, ``context``, ``reference``.

    Returns
    -------
    DataFrame
        The rows plus ``faithfulness``, ``faithfulness_claims``, ``faithfulness_verdicts``,
        ``faithfulness_reasons``, ``relevance``, ``relevance_reason``, ``correctness`` (+ claims,
        verdicts, reasons), ``declined``, ``declined_reason``, ``context_relevance`` (+ verdicts,
        reasons: one per passage), ``context_recall`` (+ claims, verdicts, reasons: the reference's
        claims), one ``<metric>_error`` per metric,
        ``judge_error`` (those joined), ``judge_prompt_tokens`` and ``judge_completion_tokens``
        (for the metrics asked). Unscored rows hold NaN with the reason in ``judge_error``.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab.judge import LexicalJudge, judge_table
    >>> rows = pd.DataFrame({"question_id": ["q1"], "question": ["What does EXPLAIN show?"],
    ...                      "answer": ["EXPLAIN shows 'Using index'."],
    ...                      "context": ["EXPLAIN shows 'Using index' for a covering index."]})
    >>> judge_table(rows, LexicalJudge(), metrics=["faithfulness"], progress=False)["faithfulness"].tolist()
    [1.0]

    Judging a sample of 2 of 4 rows (the others stay NaN):

    >>> many = pd.concat([rows] * 4, ignore_index=True).assign(question_id=["q1", "q2", "q3", "q4"])
    >>> out = judge_table(many, LexicalJudge(), metrics=["faithfulness"], sample=2, progress=False)
    >>> int(out["selected"].sum()), int(out["faithfulness"].notna().sum()), out["inclusion_probability"].tolist()
    (2, 2, [0.5, 0.5, 0.5, 0.5])
    >>> out.attrs["raglab"]["sampling"]["judged"]["n"]
    2
    """
    caller_name = caller("raglab.judge.judge_table")
    cols = table_roles(rows, roles, columns, caller=caller_name)
    if sample is None:
        if by is not None:
            raise ValueError(f"{caller_name}: `by={by!r}` stratifies a sample; pass sample=<rows or share> with it")
        with called_as(caller_name):  # judge_frame's errors name this call
            return judge_frame(
                rows, judge, metrics=metrics, repeats=repeats, errors=errors, progress=progress, ci=ci,
                columns=cols.named(),
            )
    with called_as(caller_name):
        return _judge_sample(rows, judge, sample=sample, by=by, seed=seed, caller_name=caller_name,
                             metrics=metrics, repeats=repeats, errors=errors, progress=progress, ci=ci,
                             columns=cols.named())


_SAMPLE_COLUMNS = ("selected", "inclusion_probability")


def _sample_size(sample: Any, population: int, caller_name: str) -> int:
    """The number of rows to judge from ``sample`` (an int count or a float share in (0, 1])."""
    if isinstance(sample, (bool, np.bool_)) or not isinstance(sample, (int, float, np.integer, np.floating)):
        raise TypeError(f"{caller_name}: `sample` must be a number of rows (int) or a share in (0, 1] (float), "
                        f"got {type(sample).__name__} {sample!r}")
    if isinstance(sample, (int, np.integer)):
        if not 1 <= sample <= population:
            raise ValueError(f"{caller_name}: sample={sample} rows, but the table has {population}; pass a number "
                             f"from 1 to {population}, or a share such as sample=0.1")
        return int(sample)
    if not (math.isfinite(sample) and 0 < sample <= 1):
        raise ValueError(f"{caller_name}: sample={sample!r} is a share and must be in (0, 1]; pass an int for a "
                         "number of rows")
    return max(1, min(population, round(sample * population)))


def _judge_sample(rows: pd.DataFrame, judge: Any, *, sample: Any, by: str | None, seed: int, caller_name: str,
                  metrics: Sequence[str] | str, **options: Any) -> pd.DataFrame:
    """Judge a random sample of ``rows`` drawn with :func:`raglab.sampling.draw`; the rest stay NaN."""
    from raglab.sampling import draw

    _check_judge(judge, caller_name)
    chosen = check_metrics(metrics)
    taken = [c for c in _SAMPLE_COLUMNS if c in rows.columns]
    if taken:
        raise RowTableError(
            f"{caller_name}: the rows already hold {taken} (another sample's design); judging a sample adds these "
            f"columns. Rename them first, e.g. rows.rename(columns={{{taken[0]!r}: 'labelled_{taken[0]}'}})."
        )
    if by is not None and by not in rows.columns:
        raise RowTableError(f"{caller_name}: the stratum column by={by!r} is not in the rows; columns: "
                            f"{list(rows.columns)}")
    n = _sample_size(sample, len(rows), caller_name)
    before = get_meta(rows).get("sampling")
    before = dict(before) if isinstance(before, Mapping) else {}
    # draw records its design under kind="judged" when it takes that keyword
    extra = {"kind": "judged"} if "kind" in inspect.signature(draw).parameters else {}
    drawn = draw(rows, n, by=by, seed=seed, **extra)
    selected = np.asarray(drawn["selected"], dtype=bool)
    # draw records its design (under whichever kind); this sample is the judged one.
    after = get_meta(drawn).get("sampling")
    new = [dict(v) for k, v in (after or {}).items() if isinstance(v, Mapping) and before.get(k) != v]
    design: dict[str, Any] = new[0] if new else {}
    design.update({"kind": "judged", "n": int(selected.sum()), "population": len(rows),
                   "inclusion_probability": "inclusion_probability", "seed": int(seed), "metrics": list(chosen)})
    design.setdefault("method", "stratified" if by is not None else "uniform")
    if by is not None:
        design["strata"] = by
    part = drawn.loc[selected] if drawn.index.is_unique else drawn.iloc[np.flatnonzero(selected)]
    judged = judge_frame(part, judge, metrics=chosen, **options)
    result = drawn.copy()
    carry_meta(rows, result)
    positions = np.flatnonzero(selected)
    for column in judged.columns:
        if column in drawn.columns and column not in _judge_columns(chosen):
            continue
        values = judged[column]
        if isinstance(values.dtype, pd.BooleanDtype):
            full: Any = pd.array([pd.NA] * len(result), dtype="boolean")
            full[positions] = values.array
        elif column in ("judge_prompt_tokens", "judge_completion_tokens"):
            full = np.zeros(len(result), dtype=np.int64)
            if column in rows.columns:
                full[:] = rows[column].fillna(0).to_numpy(dtype=np.int64)
            full[positions] = values.to_numpy(dtype=np.int64)
        elif values.dtype.kind in "fiu":
            full = np.full(len(result), np.nan)
            full[positions] = values.to_numpy(dtype=float)
        else:
            full = np.full(len(result), None, dtype=object)
            if column == "judge_error" and column in rows.columns:  # earlier metrics' reasons on the other rows
                full[:] = rows[column].to_numpy(dtype=object)
            full[positions] = values.to_numpy(dtype=object)
        result[column] = full
    meta = get_meta(result)
    meta["judge"] = get_meta(judged)["judge"]
    meta["sampling"] = {**before, "judged": design}
    check_section("sampling", meta["sampling"])
    set_meta(result, meta)
    return result


def _judge_columns(chosen: Sequence[str]) -> set[str]:
    """Every column a judge run over ``chosen`` writes."""
    out = {"judge_error", "judge_prompt_tokens", "judge_completion_tokens"}
    for metric in chosen:
        out.update(_output_columns(metric))
        out.add(f"{metric}_error")
    return out


def judge_frame(
    df: pd.DataFrame,
    judge: Any,
    *,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    repeats: int = 1,
    errors: str = "warn",
    progress: bool = True,
    ci: float = 0.95,
    columns: Mapping[str, str | None] | None = None,
) -> pd.DataFrame:
    """The row-table layer of ``rows.rag.judge``: validate, judge, and return a NEW frame.

    Errors name ``raglab._validation.caller`` (``rag.judge`` unless a caller set its name).
    """
    caller_name = caller("rag.judge")
    _check_judge(judge, caller_name)
    chosen = check_metrics(metrics)
    resolved, data = _row_inputs(df, chosen, dict(columns or {}), caller_name)
    previous = get_meta(df).get("judge")
    kept_metrics: list[str] = []
    if isinstance(previous, Mapping):
        old_metrics = [m for m in previous.get("metrics", []) if m in METRICS and m not in chosen and m in df.columns]
        if old_metrics and previous.get("fingerprint") != judge.fingerprint:
            raise RowTableError(
                f"{caller_name}: the rows already hold {old_metrics} scored by another judge (fingerprint "
                f"{str(previous.get('fingerprint'))[:12]}, model {previous.get('model')!r}); one frame must not mix "
                f"judges. Score every metric with one judge (metrics={old_metrics + list(chosen)}), or drop the old "
                f"columns first: rows.drop(columns={old_metrics})."
            )
        kept_metrics = old_metrics
    ids = df[resolved["question_id"]].tolist()
    out = judge_rows(
        judge,
        answers=data["answer"],
        questions=data["question"],
        contexts=data["context"],
        references=data["reference"],
        metrics=chosen,
        repeats=repeats,
        errors=errors,
        progress=progress,
        ci=ci,
        ids=ids,
        _names={role: resolved[role] for role in ("question", "answer", "context", "reference") if role in resolved},
    )
    result = df.copy()
    carry_meta(df, result)
    stale = [c for m in chosen for c in _output_columns(m) if c in result.columns and c not in out.columns]
    if stale:
        result = result.drop(columns=stale)
    new_record = dict(out.attrs["raglab"]["judge"])
    if kept_metrics:
        # judge_error is rebuilt from the per-metric <metric>_error columns: the kept metrics' from the
        # rows, the new ones' from this run (no text is split).
        parts = [
            (result if metric in kept_metrics else out).get(f"{metric}_error", pd.Series([None] * len(result))).tolist()
            for metric in [*kept_metrics, *[m for m in chosen if m not in kept_metrics]]
        ]
        out["judge_error"] = pd.Series([join_errors(row) for row in zip(*parts)], dtype=object).to_numpy()
        for column in ("judge_prompt_tokens", "judge_completion_tokens"):
            if column in result.columns:
                out[column] = out[column].to_numpy() + result[column].fillna(0).to_numpy(dtype=np.int64)
        new_record["metrics"] = kept_metrics + [m for m in chosen if m not in kept_metrics]
        if isinstance(previous, Mapping) and "noise" in previous and "noise" in new_record:
            new_record["noise"] = {"level": new_record["noise"]["level"],
                                   "metrics": {**previous["noise"].get("metrics", {}), **new_record["noise"]["metrics"]}}
    for column in out.columns:
        result[column] = out[column].to_numpy() if not isinstance(out[column].dtype, pd.BooleanDtype) else out[column].array
    meta = get_meta(result)
    meta["judge"] = new_record
    set_meta(result, meta)
    return result


# --------------------------------------------------------------------------------------------------
# Estimates
# --------------------------------------------------------------------------------------------------


@dataclass(repr=False)
class JudgeEstimate(ResultBase):
    """What a judge run will cost before it starts: calls, tokens and (with prices) money.

    Token counts are estimates (about 4 characters per token, and a typical reply size per call
    kind); the number of verification calls per claim is exact once the claim split is cached,
    else guessed from the answer's sentences. ``cached`` counts calls already in the cache, which
    a run will not make again. ``cost`` is None without a price table.

    The figures above are the expected run. Two bounds say how far a claims metric can go beyond
    it: ``fallback_calls`` are the per-claim calls made if every batched verification still to make
    fails to bind one verdict to each claim (each is then redone one claim per call), and
    ``max_calls`` is the most calls the run can make, where moreover every claim split not yet
    cached reaches the judge's ``max_claims`` (longer splits are not verified). Retries of a call
    (HTTP errors, malformed replies) are requests, not calls, and are in neither figure.
    ``rows_unsendable`` rows hold text that cannot be sent (see :func:`judge_rows`): no calls.
    """

    rows: int
    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    currency: str
    by_kind: pd.DataFrame
    fallback_calls: int = 0
    max_calls: int = 0
    max_claims: int | None = None
    rows_unsendable: int = 0

    @property
    def new_calls(self) -> int:
        return self.calls - self.cached

    def to_frame(self) -> pd.DataFrame:
        """One row per call kind: calls, cached, prompt_tokens, completion_tokens, cost."""
        return self.by_kind.copy()

    def __repr__(self) -> str:
        cost = "" if self.cost is None else f", about {self.cost:.4g} {self.currency}"
        bound = ""
        if self.max_calls > self.new_calls:
            cap = "" if self.max_claims is None else f" and claim splits reach max_claims={self.max_claims}"
            bound = (f"; up to {self.max_calls} new calls if batched verifications fall back to one call per claim "
                     f"(+{self.fallback_calls}){cap}")
        skipped = f"; {self.rows_unsendable} rows cannot be sent" if self.rows_unsendable else ""
        return (
            f"JudgeEstimate({self.rows} rows: {self.calls} calls ({self.cached} already cached, {self.new_calls} to make), "
            f"~{self.prompt_tokens:,} prompt + ~{self.completion_tokens:,} completion tokens to spend{cost}{bound}{skipped})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The totals and the per-kind table, JSON-ready."""
        return jsonable({
            "rows": self.rows, "calls": self.calls, "cached": self.cached, "new_calls": self.new_calls,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "cost": self.cost,
            "currency": self.currency, "fallback_calls": self.fallback_calls, "max_calls": self.max_calls,
            "max_claims": self.max_claims, "rows_unsendable": self.rows_unsendable,
            "by_kind": self.by_kind.to_dict(orient="records"),
        })

    def _title(self) -> str:
        return self.__repr__()


_REPLY_TOKENS = {"claims": 1.2, "relevance": 60, "declined": 40}
_VERDICT_TOKENS = 70


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def estimate_rows(
    judge: Any,
    df: pd.DataFrame,
    *,
    metrics: Sequence[str] | str = DEFAULT_METRICS,
    repeats: int = 1,
    prices: Mapping[str, Any] | None = None,
    columns: Mapping[str, str | None] | None = None,
) -> JudgeEstimate:
    """Calls, tokens and cost of judging ``df`` (see :meth:`LLMJudge.estimate`)."""
    from raglab.judge._prompts import PROMPTS, user_message
    from raglab.judge._replies import _valid_entry

    chosen = check_metrics(metrics)
    repeats = check_repeats(repeats)
    _, data = _row_inputs(df, chosen, dict(columns or {}), caller("judge.estimate"))
    n = len(df)
    rows = _row_objects(data, n)
    table: dict[str, list[int]] = {}
    beyond = [0, 0]  # new calls of tier 1 (fallbacks) and tier 2 (claim splits reaching max_claims)
    unsendable = 0
    for row in rows:
        if input_problem(row) is not None:
            unsendable += 1
            continue
        for repeat in range(repeats):
            seen = set()
            for kind, inputs, known, tier in judge._estimate_calls(row, chosen, repeat):
                key = judge.call_key(kind, inputs, repeat)
                if key in seen:
                    continue
                seen.add(key)
                if tier > 0:
                    if not (known and _valid_entry(kind, inputs, judge.cache.get(key)) is not None):
                        beyond[tier - 1] += 1
                    continue
                stats = table.setdefault(kind, [0, 0, 0, 0])
                stats[0] += 1
                if known and _valid_entry(kind, inputs, judge.cache.get(key)) is not None:
                    stats[1] += 1
                    continue
                stats[2] += _tokens(PROMPTS[kind]) + _tokens(user_message(kind, inputs)) + 8
                if kind == "claims":
                    stats[3] += int(_REPLY_TOKENS["claims"] * _tokens(inputs["answer"])) + 12
                elif kind.startswith("verify") and "claims" in inputs:
                    stats[3] += _VERDICT_TOKENS * len(inputs["claims"]) + 8
                elif kind.startswith("verify"):
                    stats[3] += _VERDICT_TOKENS
                else:
                    stats[3] += _REPLY_TOKENS.get(kind, 60)
    prompt_price, completion_price, currency = _prices(prices, getattr(judge, "model", ""))
    records = []
    for kind, (calls, cached, p_tokens, c_tokens) in table.items():
        cost = None if prompt_price is None else (p_tokens * prompt_price + c_tokens * completion_price) / 1e6
        records.append({"kind": kind, "calls": calls, "cached": cached, "prompt_tokens": p_tokens,
                        "completion_tokens": c_tokens, "cost": cost})
    by_kind = pd.DataFrame(records, columns=["kind", "calls", "cached", "prompt_tokens", "completion_tokens", "cost"])
    total_cost = None if prompt_price is None else float(sum(r["cost"] for r in records))
    calls, cached = int(by_kind["calls"].sum()), int(by_kind["cached"].sum())
    return JudgeEstimate(
        rows=n,
        calls=calls,
        cached=cached,
        fallback_calls=beyond[0],
        max_calls=calls - cached + beyond[0] + beyond[1],
        max_claims=getattr(judge, "max_claims", None),
        rows_unsendable=unsendable,
        prompt_tokens=int(by_kind["prompt_tokens"].sum()),
        completion_tokens=int(by_kind["completion_tokens"].sum()),
        cost=total_cost,
        currency=currency,
        by_kind=by_kind,
    )


def _prices(prices: Mapping[str, Any] | None, model: str) -> tuple[float | None, float | None, str]:
    """(input, output) price per million tokens from ``prices``; accepts a per-model table."""
    if prices is None:
        return None, None, "USD"
    table = prices
    if "input" not in table and model in table and isinstance(table[model], Mapping):
        table = table[model]
    if "input" not in table or "output" not in table:
        raise ValueError(
            "`prices` must give prices per million tokens as {'input': 0.40, 'output': 1.60} "
            f"(optionally 'currency'), or a table by model name holding {model!r}; got keys {sorted(prices)}"
        )
    return float(table["input"]), float(table["output"]), str(table.get("currency", "USD"))
