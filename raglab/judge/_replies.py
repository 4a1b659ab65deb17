"""What each judge call needs and what a reply must be: call plans per metric shape, reply checks that bind verdicts to claims, cache keys, URL normalisation."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pydantic

from raglab.judge._base import (
    REASON_EMPTY_ANSWER,
    REASON_NO_CONTEXT,
    REASON_NO_PASSAGES,
    REASON_NO_QUESTION,
    REASON_NO_REFERENCE,
    RowInputs,
    is_blank,
)
from raglab.judge._metrics import JudgeMetric, passages_of
from raglab.judge._schemas import BATCHED_KINDS, SCHEMAS, claim_keys


def claim_plan(spec: JudgeMetric, row: RowInputs) -> str | tuple[dict[str, Any], str, dict[str, Any]]:
    """The calls of a claims metric for ``row``: (claims-call inputs, source kind, verify inputs), or why none."""
    text = row.answer if spec.claims_of == "answer" else row.reference
    if is_blank(text):
        return REASON_EMPTY_ANSWER if spec.claims_of == "answer" else REASON_NO_REFERENCE
    if spec.against == "context":
        if row.context is None:
            return REASON_NO_CONTEXT
        base: dict[str, Any] = {"context": row.context}
    else:
        if is_blank(row.reference):
            return REASON_NO_REFERENCE
        base = {"question": row.question or "", "reference": row.reference}
    return {"question": row.question or "", "answer": text}, spec.against, base


def items_plan(spec: JudgeMetric, row: RowInputs) -> str | list[dict[str, Any]]:
    """The per-passage call inputs of an items metric for ``row``, or why there are none."""
    if row.context is None:
        return REASON_NO_CONTEXT
    if is_blank(row.question):
        return REASON_NO_QUESTION
    passages = passages_of(row.context)
    if not passages:
        return REASON_NO_PASSAGES
    return [{"question": row.question or "", "passage": p} for p in passages]


def label_plan(spec: JudgeMetric, row: RowInputs) -> str | tuple[float, str] | dict[str, Any]:
    """The call inputs of a label metric for ``row``; a (score, reason) decided without a call; or why none."""
    if is_blank(row.answer):
        if spec.name == "declined":  # an empty answer declines (as raglab.abstention.detect_declined)
            return 1.0, REASON_EMPTY_ANSWER
        return REASON_EMPTY_ANSWER
    if "question" in spec.needs and is_blank(row.question):
        return REASON_NO_QUESTION
    return {"question": row.question or "", "answer": row.answer}


def normalize_url(url: str) -> str:
    """``url`` with lower-case scheme and host, no credentials, no default port, no trailing slash.

    Examples
    --------
    >>> normalize_url("HTTP://User:pw@LocalHost:80/v1/")
    'http://localhost/v1'
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))


def _same_claim(echo: str, claim: str) -> bool:
    """Whether a reply's copy of a claim is that claim (case, spacing and end punctuation aside)."""
    def norm(text: str) -> str:
        return " ".join(str(text).casefold().split()).strip(" .;:!?\"'")
    return norm(echo) == norm(claim)


def check_reply(kind: str, inputs: Mapping[str, Any], data: Any, *, wire: bool) -> tuple[str | None, dict[str, Any] | None, bool]:
    """Check a parsed reply of call ``kind``: ``(problem, canonical reply, unbound)``.

    ``wire=True`` for a reply as the server sent it (a batched verification is then an object keyed
    ``claim_1`` ... ``claim_n``); ``wire=False`` for the canonical form kept in the cache
    (``{"verdicts": [...]}`` in claim order). ``unbound`` is True when the reply is well formed but
    does not tie exactly one verdict to each claim (missing, extra, repeated or reordered verdicts).
    """
    name, model_cls = SCHEMAS[kind]
    batched = kind in BATCHED_KINDS
    if batched and wire:
        claims = list(inputs["claims"])
        keys = claim_keys(len(claims))
        if not isinstance(data, dict):
            return f"the reply does not fit the {name} schema (reply: not an object)", None, False
        if set(data) != set(keys):
            missing = [k for k in keys if k not in data]
            extra = [k for k in data if k not in keys]
            return (f"the reply does not bind one verdict to each of the {len(claims)} claims (missing {missing}, "
                    f"unexpected {extra})"), None, True
        data = {"verdicts": [data[k] for k in keys]}
    try:
        parsed = model_cls.model_validate(data).model_dump()
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
        return f"the reply does not fit the {name} schema ({where}: {first.get('msg')})", None, False
    if batched:
        claims = list(inputs["claims"])
        verdicts = parsed["verdicts"]
        if len(verdicts) != len(claims):
            return f"the reply gave {len(verdicts)} verdicts for {len(claims)} claims", None, True
        for i, (item, claim) in enumerate(zip(verdicts, claims), start=1):
            if not _same_claim(item["claim"], claim):
                return (f"the verdict under claim_{i} is for {item['claim'][:80]!r}, not for claim {i} "
                        f"({claim[:80]!r})"), None, True
    return None, parsed, False


def _valid_entry(kind: str, inputs: Mapping[str, Any], entry: Any) -> dict[str, Any] | None:
    """A cache entry checked as a fresh reply would be; None when it cannot be trusted.

    Only the reply decides: token counts are bookkeeping (a server may report none, or nonsense,
    which is stored as -1 = unreported), never a reason to pay for a call again.
    """
    if not isinstance(entry, Mapping):
        return None
    reply = entry.get("reply")
    if kind in BATCHED_KINDS and isinstance(reply, Mapping) and set(reply) == {UNBOUND}:
        return {**entry, "reply": {UNBOUND: str(reply[UNBOUND])}}  # a known misbinding: verify per claim
    problem, parsed, _ = check_reply(kind, inputs, reply, wire=False)
    if problem is not None:
        return None
    return {**entry, "reply": parsed}


#: The cached outcome of a batched verification that never bound its verdicts to the claims.
UNBOUND = "__unbound__"


def _call_key(fingerprint: str, kind: str, inputs: Mapping[str, Any], repeat: int) -> str:
    payload = json.dumps([fingerprint, kind, dict(inputs), int(repeat)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def _clean_claims(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        return []
    return [c.strip() for c in raw if isinstance(c, str) and c.strip()]
