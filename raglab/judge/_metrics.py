"""The judge metrics as data: one :class:`JudgeMetric` per metric, in one registry.

Everything that needs to know a judge metric reads it from here: :class:`~raglab.judge.LLMJudge`
(which calls to make and how verdicts become a score), :class:`~raglab.judge.LexicalJudge` (its
word-overlap fallback), ``estimate``, judge noise, the output columns, the local test server's
rule-based replies (:func:`raglab.testing.rule_based_reply`) and the direction registry
(:func:`raglab._registry.metric_info`). This module needs neither pydantic nor pandas.

A metric has one of three shapes:

``claims``
    Split a text (``claims_of``: the answer or the reference) into atomic claims with the
    ``claims`` call, verify each against a source (``against``: the context or the reference)
    with the ``verify_*`` calls; the score is the share of supported claims. Columns:
    ``<name>``, ``<name>_claims``, ``<name>_verdicts``, ``<name>_reasons``.
``label``
    One call with a two-label verdict; the score is 1.0 for the positive label. Columns:
    ``<name>`` and ``<name>_reason`` (``declined`` is a nullable boolean).
``items``
    One call per retrieved passage with a two-label verdict; the score is the share of positive
    passages. Columns: ``<name>``, ``<name>_verdicts``, ``<name>_reasons`` (one per passage).

Adding a metric (see CONTRIBUTING.md, "Adding a judge metric"): a :class:`JudgeMetric` here, and
for a new kind of question a :class:`LabelCall` (prompt, labels, sections, lexical verdict) here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["JudgeMetric", "LabelCall", "JUDGE_METRICS", "LABEL_CALLS", "register_judge_metric", "register_label_call",
           "passages_of"]


@dataclass(frozen=True)
class LabelCall:
    """A judge call that answers one question with a reason and one of two labels.

    ``sections`` are the inputs the user message carries, in order (each a tagged, JSON-encoded
    section); ``lexical`` gives ``(verdict, reason)`` from those inputs by word overlap: it is the
    :class:`LexicalJudge` fallback and the local test server's rule-based reply.
    """

    kind: str
    schema_name: str
    prompt: str
    sections: tuple[str, ...]
    labels: tuple[str, str]  # (positive, negative)
    reason: str
    lexical: Callable[[Mapping[str, str], float, frozenset[str] | None], tuple[bool, str]]


@dataclass(frozen=True)
class JudgeMetric:
    """One judge metric: the inputs it needs, its calls, how verdicts become a score, its columns and direction."""

    name: str
    needs: tuple[str, ...]  # row inputs: question, answer, context, reference
    shape: str  # "claims" | "label" | "items"
    description: str
    higher_is_better: bool | None = True
    binary: bool = False
    claims_of: str = "answer"  # claims: the text split into claims
    against: str = "context"  # claims: the source the claims are checked against
    call: str | None = None  # label / items: the call kind
    positive: str | None = None  # label / items: the label that scores 1
    boolean: bool = False  # the main column is a nullable boolean (declined)

    @property
    def parts(self) -> tuple[str, ...]:
        """The list columns after the score: ``<name>_<part>``."""
        return {"claims": ("claims", "verdicts", "reasons"), "items": ("verdicts", "reasons")}.get(self.shape, ())

    @property
    def columns(self) -> list[str]:
        """Every output column of the metric (without the ``_repeats``/``_mean`` of repeats)."""
        extra = [f"{self.name}_{p}" for p in self.parts] or [f"{self.name}_reason"]
        return [self.name, *extra, f"{self.name}_error"]


JUDGE_METRICS: dict[str, JudgeMetric] = {}
LABEL_CALLS: dict[str, LabelCall] = {}


def register_label_call(call: LabelCall) -> LabelCall:
    """Add a label call (its prompt and schema are derived from it)."""
    LABEL_CALLS[call.kind] = call
    return call


def register_judge_metric(spec: JudgeMetric) -> JudgeMetric:
    """Add a judge metric and tell :func:`raglab._registry.metric_info` its direction and range."""
    from raglab._registry import register_metric

    if spec.shape not in ("claims", "label", "items"):
        raise ValueError(f"`shape` must be 'claims', 'label' or 'items', but {spec.shape!r} was passed.")
    JUDGE_METRICS[spec.name] = spec
    register_metric(spec.name, higher_is_better=spec.higher_is_better, binary=spec.binary, bounded=True,
                    description=spec.description)
    return spec


def passages_of(context: Any) -> list[str]:
    """The passages of a context cell (a string is one passage; blank ones are dropped).

    Examples
    --------
    >>> passages_of(["a", " ", "b"]), passages_of("one text")
    (['a', 'b'], ['one text'])
    """
    items = [context] if isinstance(context, str) else list(context or [])
    return [str(p) for p in items if isinstance(p, str) and p.strip()]


# --------------------------------------------------------------------------------------------------
# Lexical verdicts (LexicalJudge's fallback and the test server's rules)
# --------------------------------------------------------------------------------------------------


def _share(asked: str, given: str, stop_words: frozenset[str] | None) -> tuple[int, int, set[str]]:
    from raglab.tripwires import STOP_WORDS, content_words

    words = stop_words if stop_words is not None else STOP_WORDS
    a, g = content_words(asked, stop_words=words), content_words(given, stop_words=words)
    return len(a & g), len(a), g


def _passage_relevance(inputs: Mapping[str, str], threshold: float, stop_words: frozenset[str] | None) -> tuple[bool, str]:
    found, total, given = _share(inputs.get("question") or "", inputs.get("passage") or "", stop_words)
    return bool(given) and total > 0 and found / total >= threshold, f"{found} of {total} question content words occur in the passage"


def _answer_relevance(question: str, answer: str, threshold: float,
                      stop_words: frozenset[str] | None) -> tuple[bool, int, int]:
    """(relevant, found, total): relevant when ``threshold`` of the question's content words occur in the answer.

    The one rule behind LexicalJudge's ``relevance`` and the test server's ``raglab_relevance``
    reply; each words its own reason from the counts (their texts are stable and differ).
    """
    found, total, given = _share(question, answer, stop_words)
    return bool(given) and (found / total if total else 0.0) >= threshold, found, total


# --------------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------------

_PASSAGE_RELEVANCE_PROMPT = """\
You decide whether one retrieved PASSAGE bears on the QUESTION: whether it holds information that \
helps answer it. Do not judge whether the passage is true, and do not answer the question.

1. "reason": one sentence on what the question asks and what the passage offers toward it.
2. "verdict": "relevant" if the passage states something that helps answer the question (even \
partly); "irrelevant" if it is off topic or only shares words with the question.

Reply with JSON: {"reason": ..., "verdict": ...}."""

register_label_call(LabelCall(
    kind="passage_relevance",
    schema_name="raglab_passage_relevance",
    prompt=_PASSAGE_RELEVANCE_PROMPT,
    sections=("question", "passage"),
    labels=("relevant", "irrelevant"),
    reason="One sentence on what the question asks and what the passage offers toward it.",
    lexical=_passage_relevance,
))

register_judge_metric(JudgeMetric(
    "faithfulness", ("answer", "context"), "claims", "fraction of the answer's claims the context supports",
    claims_of="answer", against="context"))
register_judge_metric(JudgeMetric(
    "relevance", ("question", "answer"), "label", "whether the answer addresses the question",
    call="relevance", positive="relevant"))
register_judge_metric(JudgeMetric(
    "correctness", ("answer", "reference"), "claims", "agreement of the answer with the reference",
    claims_of="answer", against="reference"))
register_judge_metric(JudgeMetric(
    "declined", ("answer",), "label",
    "the system declined to answer (a flag: good or bad depending on the question)",
    higher_is_better=None, binary=True, call="declined", positive="declined", boolean=True))
register_judge_metric(JudgeMetric(
    "context_relevance", ("question", "context"), "items",
    "share of the retrieved passages that bear on the question (precision@k without gold labels)",
    call="passage_relevance", positive="relevant"))
register_judge_metric(JudgeMetric(
    "context_recall", ("reference", "context"), "claims",
    "share of the reference answer's claims the retrieved context supports",
    claims_of="reference", against="context"))
