"""The structured-output schemas of the judge calls (pydantic models -> strict JSON schemas).

Every schema puts the evidence and the reasoning BEFORE the label, so a model that writes its
fields in order decides after it has looked (seed 001, "List evidence before the label").
All models forbid extra keys and have no defaults, which is what OpenAI's strict structured
outputs require (``additionalProperties: false``, every property required).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from raglab.judge._metrics import LABEL_CALLS, CallTable, LabelCall

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
    "verdicts_schema",
    "claim_keys",
    "BATCHED_KINDS",
]

#: Call kinds that verify several claims in one reply.
BATCHED_KINDS = ("verify_context", "verify_reference")


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
    """Verdicts for a list of claims, one per claim, in the same order (the form kept in the cache).

    On the wire a batched verification is an object with one required property per claim
    (``claim_1`` ... ``claim_n``, see :func:`verdicts_schema`), so the structure of the reply binds
    each verdict to its claim; the judge turns it into this list after checking it.
    """

    verdicts: list[ClaimVerdict]


class SingleVerdict(_Strict):
    """The verdict for a single claim (one call per claim)."""

    evidence: str = Field(description="The sentence(s) of the source that bear on the claim, quoted; empty if none.")
    reason: str = Field(description="One sentence: why the evidence does or does not support the claim.")
    verdict: Literal["supported", "not_supported"]


@functools.cache
def label_model(call: LabelCall) -> type[BaseModel]:
    """The reply model of a registered label call: ``reason`` first, then one of its two labels."""
    return create_model(
        "".join(part.title() for part in call.kind.split("_")),
        __config__=ConfigDict(extra="forbid"),
        __doc__=call.doc or None,
        reason=(str, Field(description=call.reason)),
        verdict=(Literal[call.labels], ...),  # type: ignore[valid-type]
    )


def _label_schema(call: LabelCall) -> tuple[str, type[BaseModel]]:
    return call.schema_name, label_model(call)


#: Call kind -> (schema name sent to the server, model): the fixed calls, then every registered label
#: call's (derived when read, so a call registered later has its schema).
SCHEMAS: dict[str, tuple[str, type[BaseModel]]] = CallTable({
    "claims": ("raglab_claims", Claims),
    "verify_context": ("raglab_verdicts", Verdicts),
    "verify_reference": ("raglab_verdicts_reference", Verdicts),
    "verify_context_one": ("raglab_verdict", SingleVerdict),
    "verify_reference_one": ("raglab_verdict_reference", SingleVerdict),
}, _label_schema)

#: The reply models of the relevance and declined calls (label calls of :mod:`raglab.judge._metrics`).
Relevance = label_model(LABEL_CALLS["relevance"])
Declined = label_model(LABEL_CALLS["declined"])


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


@functools.cache
def _strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of a reply model (computed once per model; callers copy it)."""
    return _strictify(model.model_json_schema())


def claim_keys(n: int) -> list[str]:
    """The property names of a batched verification reply for ``n`` claims.

    Examples
    --------
    >>> claim_keys(2)
    ['claim_1', 'claim_2']
    """
    return [f"claim_{i}" for i in range(1, n + 1)]


def verdicts_schema(n: int) -> dict[str, Any]:
    """The strict schema of a batched verification of ``n`` claims: one required property per claim.

    Each property holds one :class:`ClaimVerdict`, so a reply cannot have too few or too many
    verdicts, and each verdict says by its key which claim it is for.

    Examples
    --------
    >>> schema = verdicts_schema(2)
    >>> schema["required"], schema["additionalProperties"]
    (['claim_1', 'claim_2'], False)
    """
    item = json_schema("verify_one_item")
    return {
        "type": "object",
        "properties": {key: copy.deepcopy(item) for key in claim_keys(n)},
        "required": claim_keys(n),
        "additionalProperties": False,
    }


def json_schema(kind: str, *, copy_: bool = True, n_claims: int | None = None) -> dict[str, Any]:
    """The strict JSON schema sent for call ``kind`` (a fresh copy).

    Batched verification kinds need ``n_claims`` (their schema has one property per claim); without
    it they give the schema for two claims (the template that enters the fingerprint).

    Examples
    --------
    >>> json_schema("relevance")["required"]
    ['reason', 'verdict']
    >>> json_schema("verify_context", n_claims=3)["required"]
    ['claim_1', 'claim_2', 'claim_3']
    """
    if kind in BATCHED_KINDS:
        return verdicts_schema(2 if n_claims is None else n_claims)
    schema = _strict_schema(ClaimVerdict if kind == "verify_one_item" else SCHEMAS[kind][1])
    return copy.deepcopy(schema) if copy_ else schema


def schema_hash() -> str:
    """sha256 of every schema (by kind), as sorted JSON."""
    text = json.dumps({kind: [name, json_schema(kind)] for kind, (name, _) in SCHEMAS.items()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
