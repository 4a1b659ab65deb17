"""The judge's prompts: one system prompt per call kind, and the user message that carries the data.

Inputs go in tagged sections (``<question>``, ``<answer>``, ``<context>`` with numbered
``<passage id="n">`` blocks, ``<reference>``, ``<claims>`` as a JSON list) so that the data can
never be mistaken for instructions and a test server can read them back. Change any text here and
the judge fingerprint changes, which misses the cache and makes comparisons with older runs warn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PROMPTS", "PROMPT_VERSION", "user_message", "prompt_hashes"]

PROMPT_VERSION = "2026-01"

_CLAIMS = """\
You split an ANSWER into atomic factual claims so that each can be checked on its own.

Rules:
- One claim = one self-contained statement of fact. Split sentences that state several facts.
- Resolve pronouns and references using the QUESTION ("It opened in 1932" -> "The Golden Gate \
Bridge opened in 1932").
- Keep numbers, units, dates, names, qualifiers and negations exactly as the answer states them.
- Do not add, correct or infer anything the answer does not say.
- Skip text that asserts no fact: greetings, questions, hedges without content, statements about \
the answer itself, citation markers such as [1], and refusals ("I don't know", "the context does \
not say").
- If the answer makes no factual claim, return an empty list.

Reply with JSON: {"claims": ["...", "..."]}."""

_VERIFY_CONTEXT = """\
You check CLAIMS against a CONTEXT made of numbered passages. Judge support by the CONTEXT ONLY: \
ignore what you know about the world; a true claim the context does not state is not supported.

For every claim, in the given order and without skipping or merging any:
1. "claim": copy the claim exactly.
2. "evidence": quote the passage text that bears on the claim (empty string if there is none).
3. "reason": one sentence on whether that evidence states or directly implies the claim.
4. "verdict": "supported" only if the context states the claim or directly implies it, with the \
same numbers, names and qualifiers; otherwise "not_supported" (contradicted, not mentioned, or only \
partly supported).

Reply with JSON: {"verdicts": [{"claim": ..., "evidence": ..., "reason": ..., "verdict": ...}, ...]} \
with exactly one entry per claim."""

_VERIFY_REFERENCE = """\
You check CLAIMS from a system's answer against a REFERENCE answer written by a person for the \
QUESTION. Judge by the REFERENCE ONLY: a claim is correct when the reference states it or directly \
implies it.

For every claim, in the given order and without skipping or merging any:
1. "claim": copy the claim exactly.
2. "evidence": quote the reference text that bears on the claim (empty string if there is none).
3. "reason": one sentence on whether that evidence states or directly implies the claim.
4. "verdict": "supported" if the reference states or directly implies the claim with the same \
numbers, names and qualifiers; otherwise "not_supported" (contradicted or not in the reference).

Reply with JSON: {"verdicts": [{"claim": ..., "evidence": ..., "reason": ..., "verdict": ...}, ...]} \
with exactly one entry per claim."""

_VERIFY_CONTEXT_ONE = """\
You check one CLAIM against a CONTEXT made of numbered passages. Judge support by the CONTEXT ONLY: \
ignore what you know about the world; a true claim the context does not state is not supported.

1. "evidence": quote the passage text that bears on the claim (empty string if there is none).
2. "reason": one sentence on whether that evidence states or directly implies the claim.
3. "verdict": "supported" only if the context states the claim or directly implies it, with the \
same numbers, names and qualifiers; otherwise "not_supported".

Reply with JSON: {"evidence": ..., "reason": ..., "verdict": ...}."""

_VERIFY_REFERENCE_ONE = """\
You check one CLAIM from a system's answer against a REFERENCE answer written by a person for the \
QUESTION. Judge by the REFERENCE ONLY.

1. "evidence": quote the reference text that bears on the claim (empty string if there is none).
2. "reason": one sentence on whether that evidence states or directly implies the claim.
3. "verdict": "supported" if the reference states or directly implies the claim with the same \
numbers, names and qualifiers; otherwise "not_supported".

Reply with JSON: {"evidence": ..., "reason": ..., "verdict": ...}."""

_RELEVANCE = """\
You decide whether an ANSWER addresses the QUESTION that was asked. Do not judge whether the answer \
is true or well supported; only whether it responds to what was asked.

1. "reason": one or two sentences on what the question asks and what the answer gives.
2. "verdict": "relevant" if the answer responds to the question asked (even if it may be wrong or \
incomplete); "irrelevant" if it answers a different question, is off topic, only restates the \
question, or declines to answer.

Reply with JSON: {"reason": ..., "verdict": ...}."""

_DECLINED = """\
You decide whether an ANSWER declines to answer the QUESTION: it says it does not know, cannot find \
the information, that the sources do not say, or refuses.

1. "reason": one sentence on whether the answer gives an answer or declines.
2. "verdict": "declined" if it gives no substantive answer; "answered" if it gives one, even a \
hedged, partial or wrong one.

Reply with JSON: {"reason": ..., "verdict": ...}."""

#: Call kind -> system prompt.
PROMPTS: dict[str, str] = {
    "claims": _CLAIMS,
    "verify_context": _VERIFY_CONTEXT,
    "verify_reference": _VERIFY_REFERENCE,
    "verify_context_one": _VERIFY_CONTEXT_ONE,
    "verify_reference_one": _VERIFY_REFERENCE_ONE,
    "relevance": _RELEVANCE,
    "declined": _DECLINED,
}


def _passages(context: str | Sequence[str]) -> str:
    items = [context] if isinstance(context, str) else list(context)
    return "\n".join(f'<passage id="{i}">\n{text}\n</passage>' for i, text in enumerate(items, start=1))


def user_message(kind: str, inputs: Mapping[str, Any]) -> str:
    """The user message of call ``kind`` for ``inputs`` (question, answer, context, reference, claims, claim).

    Examples
    --------
    >>> print(user_message("relevance", {"question": "Capital of France?", "answer": "Paris."}))
    <question>
    Capital of France?
    </question>
    <answer>
    Paris.
    </answer>
    """
    parts: list[str] = []

    def section(tag: str, text: str) -> None:
        parts.append(f"<{tag}>\n{text}\n</{tag}>")

    if kind == "claims" or kind in ("relevance", "declined"):
        section("question", inputs.get("question") or "")
        section("answer", inputs["answer"])
    elif kind in ("verify_context", "verify_context_one"):
        section("context", _passages(inputs["context"]))
    elif kind in ("verify_reference", "verify_reference_one"):
        section("question", inputs.get("question") or "")
        section("reference", inputs["reference"])
    else:
        raise KeyError(kind)
    if kind in ("verify_context", "verify_reference"):
        section("claims", json.dumps(list(inputs["claims"]), ensure_ascii=False))
    elif kind in ("verify_context_one", "verify_reference_one"):
        section("claim", inputs["claim"])
    return "\n".join(parts)


def prompt_hashes() -> dict[str, str]:
    """sha256 of each system prompt, by call kind."""
    return {kind: hashlib.sha256(text.encode()).hexdigest() for kind, text in PROMPTS.items()}
