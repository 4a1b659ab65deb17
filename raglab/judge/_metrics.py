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

The metrics themselves are :class:`~raglab._registry.JudgeMetric` records in the one metric registry
(:mod:`raglab._registry`, which declares the built-in ones as data so that ``metric_info`` knows them
without this package); :data:`JUDGE_METRICS` is its live view. The calls are :class:`LabelCall`
records here; prompts, schemas and the test server's replies are derived from both on demand, so a
metric or call registered at any time is seen everywhere.

Adding a metric (see CONTRIBUTING.md, "Adding a judge metric"): :func:`register_judge_metric` with a
:class:`JudgeMetric`, and for a new kind of question :func:`register_label_call` with a
:class:`LabelCall` (prompt, labels, sections, lexical verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

from raglab._registry import JudgeMetric, register_judge_metric, specs

__all__ = ["CallTable", "JudgeMetric", "LabelCall", "JUDGE_METRICS", "LABEL_CALLS", "register_judge_metric",
           "register_label_call", "passages_of"]


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
    doc: str = ""  # the reply model's docstring (it enters the JSON schema's description)


JUDGE_METRICS: MutableMapping[str, JudgeMetric] = specs("judge")
"""Name -> :class:`JudgeMetric`: the judge metrics of the one registry (:mod:`raglab._registry`), a live view."""

LABEL_CALLS: dict[str, LabelCall] = {}


def register_label_call(call: LabelCall) -> LabelCall:
    """Add a label call: its prompt, schema and rule-based reply are derived from it when asked.

    Examples
    --------
    >>> from raglab.judge._schemas import json_schema
    >>> call = register_label_call(LabelCall("length", "raglab_length", "Is the ANSWER short?", ("answer",),
    ...                                      ("ok", "long"), "Why.", lambda inputs, t, w: (True, "short")))
    >>> json_schema("length")["properties"]["verdict"]["enum"]
    ['ok', 'long']
    >>> del LABEL_CALLS["length"]
    """
    if not isinstance(call, LabelCall):
        raise TypeError(f"register_label_call takes a LabelCall, got {type(call).__name__}")
    if len(call.labels) != 2 or len(set(call.labels)) != 2:
        raise ValueError(f"`labels` of the {call.kind!r} call must be two different labels (positive, negative), "
                         f"got {call.labels!r}")
    call = replace(call, sections=tuple(call.sections), labels=tuple(call.labels))  # hashable: schemas are cached
    LABEL_CALLS[call.kind] = call
    return call


class CallTable(dict):  # type: ignore[type-arg]
    """Call kind -> a value per call: the fixed calls' values stored here, then one per registered
    :class:`LabelCall`, derived from it when read (so a call registered at any time is seen).

    A ``dict`` (JSON-serialisable, ``monkeypatch.setitem`` works: a stored value overrides the derived one).

    Examples
    --------
    >>> table = CallTable({"claims": "split"}, lambda call: call.schema_name)
    >>> table["passage_relevance"], list(table)
    ('raglab_passage_relevance', ['claims', 'relevance', 'declined', 'passage_relevance'])
    """

    def __init__(self, fixed: Mapping[str, Any], derive: Callable[[LabelCall], Any]) -> None:
        super().__init__(fixed)
        self._derive = derive

    def _stored(self, kind: object) -> bool:
        return dict.__contains__(self, kind)

    def __getitem__(self, kind: str) -> Any:
        if self._stored(kind):
            return dict.__getitem__(self, kind)
        if kind not in LABEL_CALLS:
            raise KeyError(kind)
        return self._derive(LABEL_CALLS[kind])

    def __contains__(self, kind: object) -> bool:
        return self._stored(kind) or kind in LABEL_CALLS

    def __iter__(self) -> Any:
        stored = list(dict.__iter__(self))
        return iter(stored + [kind for kind in LABEL_CALLS if kind not in stored])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def keys(self) -> list[str]:  # type: ignore[override]
        return list(self)

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self[kind] for kind in self]

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return [(kind, self[kind]) for kind in self]

    def get(self, kind: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[kind] if kind in self else default  # noqa: SIM401  (this is get itself)

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(self.items())

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))


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


# --------------------------------------------------------------------------------------------------
# The built-in label calls (the judge metrics are declared in raglab._registry)
# --------------------------------------------------------------------------------------------------


def _relevance(inputs: Mapping[str, str], threshold: float, stop_words: frozenset[str] | None) -> tuple[bool, str]:
    """Relevant when ``threshold`` of the question's content words occur in the answer."""
    found, total, given = _share(inputs.get("question") or "", inputs.get("answer") or "", stop_words)
    relevant = bool(given) and (found / total if total else 0.0) >= threshold
    return relevant, f"{found} of {total} question content words occur in the answer"


def _declined(inputs: Mapping[str, str], threshold: float, stop_words: frozenset[str] | None) -> tuple[bool, str]:
    """:func:`raglab.abstention.detect_declined`'s rule on one answer (its default patterns; empty declines)."""
    from raglab.abstention import refusal_regex

    answer = inputs.get("answer") or ""
    declined = not answer.strip() or refusal_regex().search(answer) is not None
    return declined, "matches a refusal pattern" if declined else "matches no refusal pattern"


_RELEVANCE_PROMPT = """\
You decide whether an ANSWER addresses the QUESTION that was asked. Do not judge whether the answer \
is true or well supported; only whether it responds to what was asked.

1. "reason": one or two sentences on what the question asks and what the answer gives.
2. "verdict": "relevant" if the answer responds to the question asked (even if it may be wrong or \
incomplete); "irrelevant" if it answers a different question, is off topic, only restates the \
question, or declines to answer.

Reply with JSON: {"reason": ..., "verdict": ...}."""

register_label_call(LabelCall(
    kind="relevance",
    schema_name="raglab_relevance",
    prompt=_RELEVANCE_PROMPT,
    sections=("question", "answer"),
    labels=("relevant", "irrelevant"),
    reason="One or two sentences on what the question asks and what the answer gives.",
    lexical=_relevance,
    doc="Whether the answer addresses the question: reason first, then the label.",
))

_DECLINED_PROMPT = """\
You decide whether an ANSWER declines to answer the QUESTION: it says it does not know, cannot find \
the information, that the sources do not say, or refuses.

1. "reason": one sentence on whether the answer gives an answer or declines.
2. "verdict": "declined" if it gives no substantive answer; "answered" if it gives one, even a \
hedged, partial or wrong one.

Reply with JSON: {"reason": ..., "verdict": ...}."""

register_label_call(LabelCall(
    kind="declined",
    schema_name="raglab_declined",
    prompt=_DECLINED_PROMPT,
    sections=("question", "answer"),
    labels=("declined", "answered"),
    reason="One sentence on whether the answer gives an answer or declines.",
    lexical=_declined,
    doc="Whether the answer declines to answer: reason first, then the label.",
))


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
