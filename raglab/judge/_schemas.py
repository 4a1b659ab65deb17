"""The structured-output schemas of the judge calls (pydantic models -> strict JSON schemas).

Every schema puts the evidence and the reasoning BEFORE the label, so a model that writes its
fields in order decides after it has looked (seed 001, "List evidence before the label").
All models forbid extra keys and have no defaults, which is what OpenAI's strict structured
outputs require (``additionalProperties: false``, every property required).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Claims",
    "ClaimVerdict",
    "Verdicts",
    "SingleVerdict",
    "Relevance",
    "Declined",
    "SCHEMAS",
    "json_schema",
    "schema_hash",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Claims(_Strict):
    """The atomic factual claims of an answer (empty when it makes none)."""

    claims: list[str] = Field(description="Atomic, self-contained factual claims, in the order the answer makes them.")


class ClaimVerdict(_Strict):
    """One claim checked against a source: evidence, then reason, then the label."""

    claim: str = Field(description="The claim, copied exactly.")
    evidence: str = Field(description="The sentence(s) of the source that bear on the claim, quoted; empty if none.")
    reason: str = Field(description="One sentence: why the evidence does or does not support the claim.")
    verdict: Literal["supported", "not_supported"]


class Verdicts(_Strict):
    """Verdicts for a list of claims, one per claim, in the same order."""

    verdicts: list[ClaimVerdict]


class SingleVerdict(_Strict):
    """The verdict for a single claim (one call per claim)."""

    evidence: str = Field(description="The sentence(s) of the source that bear on the claim, quoted; empty if none.")
    reason: str = Field(description="One sentence: why the evidence does or does not support the claim.")
    verdict: Literal["supported", "not_supported"]


class Relevance(_Strict):
    """Whether the answer addresses the question: reason first, then the label."""

    reason: str = Field(description="One or two sentences on what the question asks and what the answer gives.")
    verdict: Literal["relevant", "irrelevant"]


class Declined(_Strict):
    """Whether the answer declines to answer: reason first, then the label."""

    reason: str = Field(description="One sentence on whether the answer gives an answer or declines.")
    verdict: Literal["declined", "answered"]


#: Call kind -> (schema name sent to the server, model).
SCHEMAS: dict[str, tuple[str, type[BaseModel]]] = {
    "claims": ("raglab_claims", Claims),
    "verify_context": ("raglab_verdicts", Verdicts),
    "verify_reference": ("raglab_verdicts_reference", Verdicts),
    "verify_context_one": ("raglab_verdict", SingleVerdict),
    "verify_reference_one": ("raglab_verdict_reference", SingleVerdict),
    "relevance": ("raglab_relevance", Relevance),
    "declined": ("raglab_declined", Declined),
}


def _strictify(node: Any) -> Any:
    """Make every object schema strict: all properties required, no additional properties."""
    if isinstance(node, dict):
        node = {k: _strictify(v) for k, v in node.items() if k != "default"}
        if node.get("type") == "object" and "properties" in node:
            node["required"] = list(node["properties"])
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strictify(v) for v in node]
    return node


_SCHEMA_CACHE: dict[str, dict[str, Any]] = {}


def json_schema(kind: str, *, copy_: bool = True) -> dict[str, Any]:
    """The strict JSON schema sent for call ``kind`` (a fresh copy).

    Examples
    --------
    >>> json_schema("relevance")["required"]
    ['reason', 'verdict']
    """
    if kind not in _SCHEMA_CACHE:
        _SCHEMA_CACHE[kind] = _strictify(SCHEMAS[kind][1].model_json_schema())
    return copy.deepcopy(_SCHEMA_CACHE[kind]) if copy_ else _SCHEMA_CACHE[kind]


def schema_hash() -> str:
    """sha256 of every schema (by kind), as sorted JSON."""
    text = json.dumps({kind: [name, json_schema(kind)] for kind, (name, _) in SCHEMAS.items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
