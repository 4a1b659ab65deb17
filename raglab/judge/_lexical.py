"""LexicalJudge: the content-word support tripwire behind the judge interface (no model, no key).

Deterministic and instant, so it is the default judge of demos and a baseline for an LLM judge.
It is fooled by negation and misses paraphrase (see :mod:`raglab.tripwires`): use it to wire up
and test an evaluation, not to publish faithfulness numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab.abstention import DEFAULT_REFUSAL_PATTERNS, detect_declined
from raglab.judge._base import (
    REASON_EMPTY_ANSWER,
    REASON_NO_CLAIMS,
    REASON_NO_REFERENCE_CLAIMS,
    MetricOut,
    RowInputs,
    fingerprint_of,
    is_blank,
)
from raglab.judge._metrics import JUDGE_METRICS, LABEL_CALLS, JudgeMetric
from raglab.tripwires import DEFAULT_THRESHOLD, SENTENCE_SPLIT, STOP_WORDS, lexical_support

__all__ = ["LexicalJudge"]

_VERSION = 1


class LexicalJudge:
    """A judge that scores by word overlap: same interface and output columns as :class:`LLMJudge`.

    * ``faithfulness``: claims are the answer's sentences that hold a content word and are not
      refusals (:func:`raglab.abstention.detect_declined`); a claim is supported when at least
      ``threshold`` of its content words occur in the context (:func:`raglab.tripwires.lexical_support`).
    * ``correctness``: the same against the ``reference`` answer.
    * ``relevance``: 1.0 when at least ``relevance_threshold`` of the question's content words
      occur in the answer (crude: a paraphrased answer scores 0).
    * ``declined``: :func:`raglab.abstention.detect_declined` (an empty answer declines).
    * ``context_relevance``: per passage, relevant when at least ``relevance_threshold`` of the
      question's content words occur in it; the score is the share of relevant passages.
    * ``context_recall``: the reference answer's sentences as claims, checked against the context
      as for faithfulness.
    * any other registered metric: its spec's lexical verdict (``raglab.judge._metrics``).

    Empty answers and answers without claims score None with the reason in ``judge_error``,
    exactly as with the LLM judge.

    Parameters
    ----------
    threshold : float
        Support needed for a claim (default 0.6).
    relevance_threshold : float
        Share of question words the answer must contain (default 0.5).
    stop_words : iterable of str
        Words ignored (default :data:`raglab.tripwires.STOP_WORDS`).

    Examples
    --------
    >>> import pandas as pd, raglab
    >>> from raglab.judge import LexicalJudge
    >>> rows = pd.DataFrame({"question_id": ["q1"], "question": ["When did the bridge open?"],
    ...                      "answer": ["The bridge opened in 1937. It is painted blue."],
    ...                      "context": ["The bridge opened to traffic in 1937. It is painted orange."]})
    >>> scored = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    >>> scored.loc[0, "faithfulness"], scored.loc[0, "faithfulness_verdicts"]
    (np.float64(0.5), [True, False])
    """

    kind = "lexical"
    model = "lexical"
    temperature = None

    def __init__(self, *, threshold: float = DEFAULT_THRESHOLD, relevance_threshold: float = 0.5,
                 stop_words: Sequence[str] | frozenset[str] = STOP_WORDS) -> None:
        for name, value in (("threshold", threshold), ("relevance_threshold", relevance_threshold)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"`{name}` must be a number in [0, 1], but {value!r} was passed.")
        self.threshold = float(threshold)
        self.relevance_threshold = float(relevance_threshold)
        self.stop_words = frozenset(stop_words)
        self.last_run = None

    def _fingerprint_parts(self) -> dict[str, Any]:
        return {
            "judge": "LexicalJudge",
            "version": _VERSION,
            "threshold": self.threshold,
            "relevance_threshold": self.relevance_threshold,
            "stop_words": sorted(self.stop_words),
            "sentence_split": SENTENCE_SPLIT.pattern,
            "refusal_patterns": list(DEFAULT_REFUSAL_PATTERNS),
            "claim_splitting": "sentences",
        }

    @property
    def fingerprint(self) -> str:
        """sha256 of the thresholds, stop words, sentence rule and refusal patterns."""
        return fingerprint_of(self._fingerprint_parts())

    def record(self) -> dict[str, Any]:
        """The judge record stored in ``attrs["raglab"]["judge"]`` (without the metric list)."""
        from raglab._version import __version__

        return {
            "fingerprint": self.fingerprint,
            "judge": "LexicalJudge",
            "model": "lexical",
            "temperature": None,
            "threshold": self.threshold,
            "relevance_threshold": self.relevance_threshold,
            "claim_splitting": "sentences",
            "raglab_version": __version__,
        }

    def __repr__(self) -> str:
        return (f"LexicalJudge(threshold={self.threshold}, relevance_threshold={self.relevance_threshold}, "
                f"fingerprint={self.fingerprint[:12]!r})")

    # ---- scoring --------------------------------------------------------------------------------
    def _claims_against(self, answers: list[str | None], sources: list[Any]) -> list[tuple[list[str], list[bool], list[str]]]:
        table = lexical_support(answers, sources, threshold=self.threshold, stop_words=self.stop_words)
        sentences = table["sentences"].explode().dropna()
        refusal = detect_declined(sentences.astype(str)) if len(sentences) else np.zeros(0, dtype=bool)
        supports = table["support"].explode().dropna().to_numpy(dtype=float)
        keep = ~refusal
        owners = sentences.index.to_numpy()[keep]
        claims = sentences.to_numpy(dtype=object)[keep]
        support = supports[keep]
        verdicts = support >= self.threshold
        reasons = [f"{s:.0%} of the claim's content words occur in the source (threshold {self.threshold:.0%})"
                   for s in support]
        out: list[tuple[list[str], list[bool], list[str]]] = [([], [], []) for _ in answers]
        for owner, claim, verdict, reason in zip(owners, claims, verdicts, reasons):
            out[owner][0].append(str(claim))
            out[owner][1].append(bool(verdict))
            out[owner][2].append(reason)
        return out

    def _claim_metric(self, rows: Sequence[RowInputs], spec: JudgeMetric) -> list[MetricOut]:
        from raglab.judge._replies import claim_plan

        outs = [MetricOut() for _ in rows]
        usable, texts, sources = [], [], []
        for i, row in enumerate(rows):
            plan = claim_plan(spec, row)
            if isinstance(plan, str):
                outs[i].error = plan
                if plan == REASON_EMPTY_ANSWER:
                    outs[i].claims, outs[i].verdicts, outs[i].reasons = [], [], []
                continue
            usable.append(i)
            texts.append(plan[0]["answer"])
            sources.append(plan[2]["context"] if plan[1] == "context" else plan[2]["reference"])
        checked = self._claims_against(texts, sources)
        for i, (claims, verdicts, reasons) in zip(usable, checked):
            out = outs[i]
            out.claims, out.verdicts, out.reasons = claims, verdicts, reasons
            if claims:
                out.score = sum(verdicts) / len(verdicts)
            else:
                out.error = REASON_NO_CLAIMS if spec.claims_of == "answer" else REASON_NO_REFERENCE_CLAIMS
        return outs

    def _items_metric(self, rows: Sequence[RowInputs], spec: JudgeMetric) -> list[MetricOut]:
        from raglab.judge._replies import items_plan

        call = LABEL_CALLS[spec.call]
        outs = []
        for row in rows:
            out = MetricOut()
            plan = items_plan(spec, row)
            if isinstance(plan, str):
                out.error = plan
            else:
                judged = [call.lexical(inputs, self.relevance_threshold, self.stop_words) for inputs in plan]
                out.claims = [inputs["passage"] for inputs in plan]
                out.verdicts = [bool(v) for v, _ in judged]
                out.reasons = [r for _, r in judged]
                out.score = sum(out.verdicts) / len(out.verdicts)
            outs.append(out)
        return outs

    def _label_metric(self, rows: Sequence[RowInputs], spec: JudgeMetric) -> list[MetricOut]:
        from raglab.judge._replies import label_plan

        call = LABEL_CALLS[spec.call]
        outs = []
        for row in rows:
            plan = label_plan(spec, row)
            if isinstance(plan, tuple):
                outs.append(MetricOut(score=plan[0], reason=plan[1]))
            elif isinstance(plan, str):
                outs.append(MetricOut(error=plan))
            else:
                verdict, reason = call.lexical(plan, self.relevance_threshold, self.stop_words)
                outs.append(MetricOut(score=1.0 if verdict else 0.0, reason=reason))
        return outs

    def _declined(self, rows: Sequence[RowInputs]) -> list[MetricOut]:
        flags = detect_declined(pd.Series([row.answer for row in rows], dtype=object))
        outs = []
        for row, flag in zip(rows, flags):
            reason = REASON_EMPTY_ANSWER if is_blank(row.answer) else (
                "matches a refusal pattern" if flag else "matches no refusal pattern")
            outs.append(MetricOut(score=1.0 if flag else 0.0, reason=reason))
        return outs

    def _run(self, rows: Sequence[RowInputs], metrics: Sequence[str], *, repeats: int, errors: str,
             progress: bool, labels: Sequence[str]) -> list[list[dict[str, MetricOut]]]:
        per_metric: dict[str, list[MetricOut]] = {}
        for metric in metrics:
            spec = JUDGE_METRICS[metric]
            if spec.shape == "claims":
                per_metric[metric] = self._claim_metric(rows, spec)
            elif spec.shape == "items":
                per_metric[metric] = self._items_metric(rows, spec)
            elif metric == "declined":  # vectorised over the rows (the label call's rule, row by row)
                per_metric[metric] = self._declined(rows)
            else:
                per_metric[metric] = self._label_metric(rows, spec)
        return [[{m: per_metric[m][i] for m in metrics} for _ in range(repeats)] for i in range(len(rows))]

    def _estimate_calls(self, row: RowInputs, metrics: Sequence[str], repeat: int) -> list[tuple[str, dict[str, Any], bool, int]]:
        return []
