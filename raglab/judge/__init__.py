"""Judging answers and retrieved context: faithfulness, relevance, correctness, declining, context relevance and recall.

Two judges share one interface and one set of output columns:

* :class:`LLMJudge`: any OpenAI-compatible model through the official ``openai`` SDK, with
  structured outputs, bounded concurrency, retries that honour ``Retry-After``, a persistent
  SQLite cache (a re-run makes no calls; a killed run resumes; every entry is re-validated when
  read) and a fingerprint that pins the model, the server URL, the API, temperature, prompts and
  schemas;
* :class:`LexicalJudge`: the content-word support tripwire, deterministic and free (demos, tests,
  a baseline).

Use them through the row table, ``rows.rag.judge(judge, metrics=[...])``, or on plain lists with
:func:`judge_rows`.

Metrics
-------
``faithfulness``
    Claim-level: one call splits the answer into atomic claims, one call (or one per claim,
    ``verify="per_claim"``) checks every claim against the context only; score = supported / total.
    An empty answer, or one that makes no claim (a refusal), scores None (NaN) with the reason in
    ``judge_error``: never 0 or 1. Claims, verdicts and reasons are kept as list columns.
``correctness``
    The same claims checked against the ``reference`` answer: the share of the answer's claims the
    reference supports. It is precision-like: an answer that leaves part of the reference out is not
    penalised (relevance and people cover completeness).
``relevance``
    1.0 when the answer addresses the question asked (right or wrong), else 0.0; a refusal is 0.0.
``declined``
    True when the answer declines (an empty answer declines). The lexical fallback, when no judge
    is used, is :func:`raglab.abstention.detect_declined`, which :class:`LexicalJudge` applies.
``context_relevance``
    The share of the retrieved passages that bear on the question, one verdict per passage: the
    no-gold analogue of precision@k. Needs ``question`` and ``context``.
``context_recall``
    The share of the reference answer's claims that the retrieved context supports: did retrieval
    bring what the answer needs. Needs ``reference`` and ``context``.

Every metric is one ``JudgeMetric`` in the one metric registry
(``raglab._registry``: inputs, shape, columns, direction) and every question put to the model
beyond claims and verification one ``LabelCall`` in ``raglab.judge._metrics`` (prompt, labels,
lexical fallback); prompts, schemas and the test server's replies are derived from them when asked.
:data:`METRICS` lists the metrics with the inputs each needs.

Verdicts are bound to claims: a batched verification asks for an object with one required
property per claim (``claim_1`` ... ``claim_n``), each echoing its claim; a reply with a missing,
extra, repeated or reordered verdict is retried once, then that row is verified one claim per
call. Inputs reach the model as JSON-encoded values inside tagged sections with ``<``, ``>`` and
``&`` escaped, so no input can close or forge a section; a model can still be swayed by
instructions written *inside* an answer or passage (the residual risk of any LLM judge).
Failures are loud: with ``errors="warn"`` (default) failed rows warn, and a run in which more
than the judge's ``failure_threshold`` share of the rows failed raises :class:`JudgeError`.

Every verdict schema lists the evidence and the reason before the label. ``judge_error`` says why
a row is unscored; ``judge_prompt_tokens`` and ``judge_completion_tokens`` give its usage. With
``repeats=n`` each row is judged n times and :func:`judge_noise` separates the judge's own noise
from the sampling interval over questions.

Examples
--------
>>> import pandas as pd, raglab
>>> from raglab.judge import LexicalJudge
>>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "question": ["Capital of France?", "Capital of Peru?"],
...                      "answer": ["Paris is the capital of France.", "I don't know."],
...                      "context": [["Paris is the capital of France."], ["Lima is the capital of Peru."]]})
>>> scored = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", "declined"], progress=False)
>>> scored[["faithfulness", "declined"]].to_dict("list")
{'faithfulness': [1.0, nan], 'declined': [False, True]}
>>> scored.loc[1, "judge_error"].startswith("faithfulness: the answer makes no factual claim")
True
"""

from __future__ import annotations

from typing import Any

import pandas as pd

try:  # pydantic (the judge extra) is imported by the modules below
    from raglab.judge._api import DEFAULT_METRICS, JudgeEstimate, estimate_rows, judge_rows, judge_table
    from raglab.judge._base import METRICS, JudgeError
    from raglab.judge._cache import CacheBusyError, CallCache, MemoryCache
    from raglab.judge._lexical import LexicalJudge
    from raglab.judge._llm import LLMJudge, RunStats
    from raglab.judge._noise import JudgeNoise, judge_noise
except ModuleNotFoundError as _exc:
    from raglab._optional import missing_extra

    _error = missing_extra(_exc, purpose="raglab.judge")
    if _error is None:
        raise
    raise _error from _exc

__all__ = [
    "LLMJudge",
    "LexicalJudge",
    "JudgeError",
    "JudgeEstimate",
    "JudgeNoise",
    "CallCache",
    "CacheBusyError",
    "MemoryCache",
    "RunStats",
    "METRICS",
    "DEFAULT_METRICS",
    "judge_rows",
    "judge_table",
    "judge_noise",
]


def _estimate(
    self: Any,
    rows: pd.DataFrame,
    *,
    metrics: Any = DEFAULT_METRICS,
    repeats: int = 1,
    prices: Any = None,
    question_id: str | None = None,
    question: str | None = None,
    answer: str | None = None,
    context: str | None = None,
    reference: str | None = None,
) -> JudgeEstimate:
    """Calls, tokens and cost of judging ``rows``, before spending anything.

    Parameters
    ----------
    rows : DataFrame
        The row table (same columns as for ``rows.rag.judge``).
    metrics, repeats
        As for ``rows.rag.judge``.
    prices : dict, optional
        Price per million tokens, ``{"input": 0.40, "output": 1.60, "currency": "USD"}``, or a table
        by model name (``{"gpt-4.1-mini": {"input": ..., "output": ...}}``). Without it ``cost`` is None.
    question_id, question, answer, context, reference : str, optional
        Column names to use instead of the defaults.

    Returns
    -------
    JudgeEstimate
        The expected calls, tokens and cost, and two bounds: ``fallback_calls`` (per-claim calls if
        every batched verification falls back) and ``max_calls`` (moreover every claim split not yet
        cached reaching the judge's ``max_claims``).

    Examples
    --------
    >>> import pandas as pd, raglab
    >>> from raglab.judge import LLMJudge
    >>> rows = pd.DataFrame({"question_id": ["q1"], "question": ["When?"], "answer": ["In 1937. It is red."],
    ...                      "context": ["It opened in 1937."]})
    >>> est = LLMJudge("gpt-4.1-mini", api_key="none", cache=None).estimate(
    ...     rows, metrics=["faithfulness"], prices={"input": 0.40, "output": 1.60})
    >>> est.calls, est.cached, est.cost > 0
    (2, 0, True)
    >>> est.fallback_calls, est.max_calls     # 2 claims one by one; worst: 1 + 1 + max_claims=50
    (2, 52)
    """
    return estimate_rows(self, rows, metrics=metrics, repeats=repeats, prices=prices,
                         columns={"question_id": question_id, "question": question, "answer": answer, "context": context, "reference": reference})


LLMJudge.estimate = _estimate  # type: ignore[attr-defined]
LexicalJudge.estimate = _estimate  # type: ignore[attr-defined]
