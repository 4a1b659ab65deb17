"""What every judge shares: metric names, per-row results, the output columns, the fingerprint record."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab._validation import check_option, is_missing
from raglab.judge._metrics import JUDGE_METRICS

__all__ = [
    "METRICS",
    "JudgeError",
    "MetricOut",
    "RowInputs",
    "check_metrics",
    "check_errors_option",
    "assemble",
    "fingerprint_of",
    "REASON_EMPTY_ANSWER",
    "REASON_NO_CLAIMS",
    "REASON_NO_CONTEXT",
    "REASON_EMPTY_CONTEXT",
    "EMPTY_CONTEXT",
    "REASON_NO_REFERENCE",
    "REASON_NO_QUESTION",
]

class _Needs(Mapping):
    """Metric name -> the inputs it needs: a live view of ``raglab.judge._metrics.JUDGE_METRICS``."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return JUDGE_METRICS[name].needs

    def __iter__(self) -> Iterator[str]:
        return iter(JUDGE_METRICS)

    def __len__(self) -> int:
        return len(JUDGE_METRICS)

    def __repr__(self) -> str:
        return repr(dict(self))


#: Metrics a judge can score, with the inputs each needs (from the metric registry).
METRICS: Mapping[str, tuple[str, ...]] = _Needs()
REASON_NO_PASSAGES = "no passage was retrieved for this row"
REASON_NO_REFERENCE_CLAIMS = "the reference answer makes no factual claim: nothing to look for in the context"

# Why a row has no score (judge_error). Stable texts: tests and users match on them.
REASON_EMPTY_ANSWER = "empty answer (nothing to judge)"
REASON_NO_CLAIMS = "the answer makes no factual claim (e.g. a refusal): nothing to check; score refusals with `declined`"
REASON_NO_CONTEXT = "no context given for this row"
REASON_EMPTY_CONTEXT = "no context reached the model, so no claim is supported"
EMPTY_CONTEXT = ""
REASON_NO_REFERENCE = "no reference answer for this row"
REASON_NO_QUESTION = "no question text for this row"


class JudgeError(RuntimeError):
    """A judge run could not go on (bad credentials, unknown model, or ``errors="raise"``).

    Calls that completed before the error are in the cache: fix the cause and re-run.
    """


@dataclass
class RowInputs:
    """The texts of one row (None when absent)."""

    question: str | None = None
    answer: str | None = None
    context: str | list[str] | None = None
    reference: str | None = None


@dataclass
class MetricOut:
    """One metric for one row and repeat."""

    score: float | None = None
    claims: list[str] | None = None
    verdicts: list[bool] | None = None
    reasons: list[str] | None = None
    reason: str | None = None
    error: str | None = None
    failed: bool = False  # True when a call failed (as opposed to a row that has nothing to score)
    calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # call key -> (prompt, completion) tokens


def input_problem(row: RowInputs, names: Mapping[str, str] | None = None) -> str | None:
    """Why ``row`` cannot be sent to a judge at all, or None: the one check of a row's texts.

    A text that is not valid Unicode (a lone surrogate such as ``"\\ud800"``, typically from bytes
    decoded with ``errors="surrogateescape"``) cannot be written as UTF-8 JSON, so no request, cache
    key or file can hold it. :func:`raglab.judge.judge_rows` turns the answer into that row's
    ``judge_error`` (naming the column, the passage and the position) and judges the other rows.

    Examples
    --------
    >>> input_problem(RowInputs(answer="ok"))
    >>> input_problem(RowInputs(answer="ok", context=["fine", "bad \\ud800 text"]), {"context": "ctx"})
    "column 'ctx', passage 2: the text is not valid Unicode at position 4 ('\\\\ud800', a lone surrogate); it cannot be sent to the judge: fix or drop it"
    """
    for role in ("question", "answer", "context", "reference"):
        value = getattr(row, role)
        texts = value if isinstance(value, list) else [value]
        for k, text in enumerate(texts):
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                name = (names or {}).get(role) or role
                passage = f", passage {k + 1}" if isinstance(value, list) else ""
                bad = text[exc.start:exc.end]
                kind = "a lone surrogate" if all(0xD800 <= ord(c) <= 0xDFFF for c in bad) else exc.reason
                return (f"column {name!r}{passage}: the text is not valid Unicode at position {exc.start} "
                        f"({ascii(bad)}, {kind}); it cannot be sent to the judge: fix or drop it")
    return None


def check_metrics(metrics: Sequence[str] | str) -> list[str]:
    """Validate ``metrics`` (a name or a list of names) and return them as a list without repeats."""
    if isinstance(metrics, str):
        metrics = [metrics]
    out: list[str] = []
    for name in metrics:
        if name not in METRICS:
            raise ValueError(f"The value for `metrics` must be among {list(METRICS)}, but {name!r} was passed.")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"`metrics` is empty; choose from {list(METRICS)}")
    return out


def check_errors_option(errors: str) -> str:
    """``errors``: "warn" (default), "raise" or "ignore"."""
    return check_option("errors", errors, ["warn", "raise", "ignore"])


def check_progress(progress: Any) -> bool:
    """``progress`` must be a bool, and True needs somewhere to draw the bar."""
    import sys

    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"`progress` must be True or False, but {progress!r} was passed.")
    if progress and sys.stderr is None:
        raise ValueError("progress=True needs sys.stderr to draw the bar, but sys.stderr is None here "
                         "(e.g. a windowed app); pass progress=False.")
    return bool(progress)


def check_repeats(repeats: int) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"`repeats` must be a positive integer, but {repeats!r} was passed.")
    return int(repeats)


def text_or_none(value: Any) -> str | None:
    """A text cell as str, or None when missing."""
    if is_missing(value):
        return None
    return str(value)


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def context_or_none(value: Any) -> str | list[str] | None:
    """A context cell as str or list of str; None when missing; ``""`` when empty.

    Missing (None/NaN) means the row does not say what the model saw: faithfulness is unscored.
    Empty (``[]`` or ``""``) means nothing reached the model: every claim of the answer is
    unsupported, and faithfulness is 0, not missing (a confident answer without context is exactly
    the hallucination the metric exists to catch).
    """
    if is_missing(value):
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        passages = [str(v) for v in value if not is_missing(v)]
        return passages if any(p.strip() for p in passages) else EMPTY_CONTEXT
    text = str(value)
    return text if text.strip() else EMPTY_CONTEXT


def fingerprint_of(parts: Mapping[str, Any]) -> str:
    """sha256 of the sorted-JSON of everything that pins a judge."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# --------------------------------------------------------------------------------------------------
# Output columns
# --------------------------------------------------------------------------------------------------


def join_errors(messages: Any) -> str | None:
    """``judge_error``: the per-metric reasons (``<metric>_error`` columns) joined, or None when none."""
    present = [m for m in messages if isinstance(m, str) and m]
    return "; ".join(present) if present else None


def _score_value(out: MetricOut | None) -> float:
    return float("nan") if out is None or out.score is None else float(out.score)


def _scores_json(values: list[float | None]) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


def assemble(
    results: list[list[dict[str, MetricOut]]],
    metrics: Sequence[str],
    repeats: int,
    index: pd.Index | None = None,
) -> pd.DataFrame:
    """The judge's output columns from ``results[row][repeat][metric]``.

    Columns, per metric: ``faithfulness`` (float; NaN when unscored), ``faithfulness_claims``
    (list[str]), ``faithfulness_verdicts`` (list[bool]), ``faithfulness_reasons`` (list[str]);
    the same for ``correctness`` and ``context_recall``; ``context_relevance`` with
    ``_verdicts`` and ``_reasons`` (one per passage); ``relevance`` (1.0 / 0.0) and
    ``relevance_reason``; ``declined`` (nullable boolean) and ``declined_reason`` (a metric's
    ``parts`` in the registry decide); then ``judge_error`` (why a row is unscored, per
    metric, or None; each metric's part is also its own ``<metric>_error`` column),
    ``judge_prompt_tokens`` and ``judge_completion_tokens``. With
    ``repeats > 1`` the main columns hold repeat 0 and ``<metric>_repeats`` (one score per repeat)
    and ``<metric>_mean`` (their mean) are added.
    """
    n = len(results)
    cols: dict[str, Any] = {}
    first = [row[0] if row else {} for row in results]
    for metric in metrics:
        spec = JUDGE_METRICS[metric]
        outs = [r.get(metric) for r in first]
        if spec.boolean:
            values = [None if o is None or o.score is None else bool(o.score) for o in outs]
            cols[metric] = pd.array(values, dtype="boolean")
            cols[f"{metric}_reason"] = pd.Series([o.reason if o else None for o in outs], dtype=object).to_numpy()
        else:
            cols[metric] = np.array([_score_value(o) for o in outs], dtype=np.float64)
            if spec.parts:
                for part in spec.parts:
                    values = [None if o is None else getattr(o, part) for o in outs]
                    cols[f"{metric}_{part}"] = pd.Series(values, dtype=object).to_numpy()
            else:
                cols[f"{metric}_reason"] = pd.Series([o.reason if o else None for o in outs], dtype=object).to_numpy()
        if repeats > 1:
            per = [[_score_value(rep.get(metric)) for rep in row] for row in results]
            if spec.boolean:
                cols[f"{metric}_repeats"] = pd.Series(
                    [[None if math.isnan(v) else bool(v) for v in row] for row in per], dtype=object
                ).to_numpy()
                with np.errstate(invalid="ignore"):
                    cols[f"{metric}_mean"] = np.array(
                        [np.nan if all(math.isnan(v) for v in row) else float(np.nanmean(row)) for row in per]
                    )
            else:
                cols[f"{metric}_repeats"] = pd.Series([_scores_json(row) for row in per], dtype=object).to_numpy()
                cols[f"{metric}_mean"] = np.array(
                    [np.nan if all(math.isnan(v) for v in row) else float(np.nanmean(row)) for row in per]
                )
    errors: list[str | None] = []
    per_metric: dict[str, list[str | None]] = {metric: [] for metric in metrics}
    prompt_tokens = np.zeros(n, dtype=np.int64)
    completion_tokens = np.zeros(n, dtype=np.int64)
    for i, row in enumerate(results):
        messages: dict[str, list[str]] = {metric: [] for metric in metrics}
        seen: dict[str, tuple[int, int]] = {}
        for r, rep in enumerate(row):
            for metric in metrics:
                out = rep.get(metric)
                if out is None:
                    continue
                seen.update(out.calls)
                if out.error:
                    label = metric if repeats == 1 else f"{metric} (repeat {r})"
                    messages[metric].append(f"{label}: {out.error}")
        for metric in metrics:
            per_metric[metric].append("; ".join(messages[metric]) or None)
        errors.append(join_errors(per_metric[metric][-1] for metric in metrics))
        prompt_tokens[i] = sum(p for p, _ in seen.values())
        completion_tokens[i] = sum(c for _, c in seen.values())
    for metric in metrics:  # why each metric is unscored, as its own column: merging never parses text
        cols[f"{metric}_error"] = pd.Series(per_metric[metric], dtype=object).to_numpy()
    cols["judge_error"] = pd.Series(errors, dtype=object).to_numpy()
    cols["judge_prompt_tokens"] = prompt_tokens
    cols["judge_completion_tokens"] = completion_tokens
    frame = pd.DataFrame(cols, index=index if index is not None else pd.RangeIndex(n))
    return frame
