"""What raglab knows about a metric column from its name: direction, range, whether it is pass/fail.

Score columns are named ``<base>`` or ``<base>@<k>`` (``recall@5``, ``ndcg@10``, ``rr``,
``faithfulness``). The gate needs the direction (a drop in recall is bad, a drop in latency is good),
the bootstrap can use the fact that a pass/fail metric takes only the values 0 and 1, and reports
can say what a number means. Unknown names are higher-is-better unless a whole word of the name says otherwise
(latency, cost, error, hallucination, time, ...; "error_free" and "no_hallucination" stay higher);
every function that uses the direction also takes an explicit ``higher_is_better=``, and the gate
warns when it had to guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MetricInfo", "metric_info", "register_metric"]


@dataclass(frozen=True)
class MetricInfo:
    name: str
    base: str
    k: int | None
    higher_is_better: bool
    binary: bool
    bounded: bool  # values lie in [0, 1]
    description: str
    known: bool = True  # False: unknown name, direction guessed from its words


_BASES: dict[str, tuple[bool, bool, bool, str]] = {
    # base: (higher_is_better, binary, bounded, description)
    "recall": (True, False, True, "fraction of gold ids in the top k"),
    "hit": (True, True, True, "1 if any gold id is in the top k"),
    "precision": (True, False, True, "fraction of the top k that is gold (divides by k)"),
    "rr": (True, False, True, "reciprocal rank of the first gold id"),
    "ndcg": (True, False, True, "normalised discounted cumulative gain"),
    "ap": (True, False, True, "average precision"),
    "r_precision": (True, False, True, "precision at R, the number of gold ids"),
    "coverage": (True, False, True, "fraction of gold characters that reached the model"),
    "faithfulness": (True, False, True, "fraction of the answer's claims the context supports"),
    "relevance": (True, False, True, "whether the answer addresses the question"),
    "correctness": (True, False, True, "agreement of the answer with the reference"),
    "lexical_support": (True, False, True, "share of content words found in the context"),
    "em": (True, True, True, "exact match with a reference answer"),
    "f1": (True, False, True, "token F1 against a reference answer"),
    "declined": (True, True, True, "the system declined to answer"),
    "correct_decline": (True, True, True, "declined an unanswerable question"),
    "false_decline": (False, True, True, "declined an answerable question"),
    "hallucination": (False, True, True, "the answer contains an unsupported claim"),
    "latency": (False, False, False, "time to answer"),
    "cost": (False, False, False, "cost per question"),
}
# Whole words of a metric name that mean lower is better ("uptime" and "sentiment" contain no such word).
_LOWER_IS_BETTER_WORDS = frozenset(
    """latency latencies cost costs price usd dollars error errors err hallucination hallucinations
    hallucinated time seconds secs sec ms duration tokens loss losses false fpr fnr wer cer toxicity""".split()
)
# Words that negate the above: "error_free_rate", "no_hallucination" are higher-is-better.
_NEGATING_WORDS = frozenset("free no non without avoided".split())
_NAME = re.compile(r"^(?P<base>.+?)(?:@(?P<k>\d+))?$")


def register_metric(
    base: str, *, higher_is_better: bool, binary: bool = False, bounded: bool = True, description: str = ""
) -> None:
    """Teach raglab a metric's direction and range (e.g. a custom judge score)."""
    _BASES[base] = (higher_is_better, binary, bounded, description)


def metric_info(name: str) -> MetricInfo:
    """Parse a score-column name such as ``"recall@5"`` and return what is known about it.

    Examples
    --------
    >>> metric_info("recall@5").k, metric_info("latency_ms").higher_is_better
    (5, False)
    """
    match = _NAME.match(name)
    base, k = (match.group("base"), match.group("k")) if match else (name, None)
    known = _BASES.get(base)
    if known is None:
        words = set(re.split(r"[^a-z0-9]+", base.lower()))
        lower = bool(words & _LOWER_IS_BETTER_WORDS) and not words & _NEGATING_WORDS
        return MetricInfo(name, base, int(k) if k else None, not lower, False, False, "", known=False)
    higher, binary, bounded, description = known
    return MetricInfo(name, base, int(k) if k else None, higher, binary, bounded, description)
