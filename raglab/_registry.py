"""What raglab knows about a metric column from its name: direction, range, whether it is pass/fail.

Score columns are named ``<base>`` or ``<base>@<k>`` (``recall@5``, ``ndcg@10``, ``rr``,
``faithfulness``). The gate needs the direction (a drop in recall is bad, a drop in latency is good),
the bootstrap can use the fact that a pass/fail metric takes only the values 0 and 1, and reports
can say what a number means. Unknown names are higher-is-better unless a whole word of the name says otherwise
(latency, cost, error, hallucination, time, ...; "error_free" and "no_hallucination" stay higher);
every function that uses the direction also takes an explicit ``higher_is_better=``, and the gate
warns when it had to guess.

Some columns have **no direction**: the pooled ``declined`` flag (declining an unanswerable question
is good, declining an answerable one is bad, so a higher decline rate can be better or worse), and
unknown names built on a decline word (``declined_mean``, ``refusal_rate``, ``abstention``) unless a
word says which questions were declined (``false_refusal`` is lower-is-better, ``correct_refusal``
higher). Their :attr:`MetricInfo.higher_is_better` is a :class:`NoDirection` marker, never a guess:
using it as a truth value raises :class:`NoDirectionError`, so a gate on ``declined`` refuses until
it is given ``higher_is_better={"declined": ...}`` explicitly. Score declining with
``correct_decline`` (higher is better, unanswerable questions only) and ``false_decline`` (lower is
better, answerable questions only), as :meth:`df.rag.abstention <raglab.accessor.RagAccessor.abstention>`
writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MetricInfo", "NoDirection", "NoDirectionError", "is_id_name", "metric_info", "register_metric"]


class NoDirectionError(ValueError):
    """Raised when code asks which way is better for a metric that has no direction (e.g. ``declined``)."""


@dataclass(frozen=True)
class NoDirection:
    """``higher_is_better`` of a metric with no direction: any use as True/False raises.

    Examples
    --------
    >>> info = metric_info("declined")
    >>> info.has_direction, info.higher_is_better
    (False, no direction)
    >>> bool(info.higher_is_better)
    Traceback (most recent call last):
    ...
    raglab._registry.NoDirectionError: 'declined' has no direction: ...
    """

    metric: str
    reason: str
    advice: str = ""

    def __bool__(self) -> bool:
        raise NoDirectionError(
            f"{self.metric!r} has no direction: {self.reason} {self.advice}State the direction to use it "
            f"anyway, e.g. higher_is_better={{{self.metric!r}: False}} (CLI: --lower-is-better {self.metric})."
        )

    def __repr__(self) -> str:
        return "no direction"


@dataclass(frozen=True)
class MetricInfo:
    """What is known about a score column.

    Attributes
    ----------
    name, base, k
        The column name, its base (``"recall"``) and cut-off (``5``, or None).
    higher_is_better : bool or NoDirection
        The direction; a :class:`NoDirection` marker (which refuses to act as a bool) for a metric
        whose better direction depends on the question, such as the pooled ``declined`` flag.
    binary, bounded
        Takes only the values 0 and 1; lies in [0, 1].
    description : str
    known : bool
        False when the name is not registered and the direction was guessed from its words.

    Examples
    --------
    >>> metric_info("false_decline").higher_is_better, metric_info("false_decline").has_direction
    (False, True)
    """

    name: str
    base: str
    k: int | None
    higher_is_better: bool | NoDirection
    binary: bool
    bounded: bool  # values lie in [0, 1]
    description: str
    known: bool = True  # False: unknown name, direction guessed from its words

    @property
    def has_direction(self) -> bool:
        """True when higher or lower is better; False for metrics such as the pooled ``declined`` flag."""
        return not isinstance(self.higher_is_better, NoDirection)


_BASES: dict[str, tuple[bool | None, bool, bool, str]] = {
    # base: (higher_is_better, binary, bounded, description)
    # Retrieval metrics (recall, ndcg, rr, ...) are registered by their specs in raglab.metrics.specs.
    "faithfulness": (True, False, True, "fraction of the answer's claims the context supports"),
    "relevance": (True, False, True, "whether the answer addresses the question"),
    "correctness": (True, False, True, "agreement of the answer with the reference"),
    "lexical_support": (True, False, True, "share of content words found in the context"),
    "em": (True, True, True, "exact match with a reference answer"),
    "f1": (True, False, True, "token F1 against a reference answer"),
    # The pooled flag has no direction (None): good on unanswerable questions, bad on answerable ones.
    "declined": (None, True, True, "the system declined to answer (a flag: good or bad depending on the question)"),
    "correct_decline": (True, True, True, "declined an unanswerable question (NaN on answerable ones)"),
    "false_decline": (False, True, True, "declined an answerable question (NaN on unanswerable ones)"),
    "hallucination": (False, True, True, "the answer contains an unsupported claim"),
    "latency": (False, False, False, "time to answer"),
    "cost": (False, False, False, "cost per question"),
    # raglab.boundaries' costs: characters sent to the model.
    "prompt_chars": (False, False, False, "characters of the retrieved spans sent to the model (boundaries.prompt_chars)"),
    "context_chars": (False, False, False, "characters of the union of the retrieved spans (boundaries.expand_neighbors)"),
}
# Whole words of a metric name that mean lower is better ("uptime" and "sentiment" contain no such word).
_LOWER_IS_BETTER_WORDS = frozenset(
    """latency latencies cost costs price usd dollars error errors err hallucination hallucinations
    hallucinated time seconds secs sec ms duration tokens loss losses false fpr fnr wer cer toxicity""".split()
)
# Words that negate the above: "error_free_rate", "no_hallucination" are higher-is-better.
_NEGATING_WORDS = frozenset("free no non without avoided".split())
# Words for declining: a name built on one has no direction unless a word says which questions were declined.
_DECLINE_WORDS = frozenset(
    """decline declined declines declining refuse refused refusal refusals abstain abstained abstains
    abstaining abstention abstentions""".split()
)
_DECLINED_WELL = frozenset("correct correctly right rightly appropriate appropriately unanswerable".split())
_DECLINED_BADLY = frozenset("false falsely wrong wrongly incorrect incorrectly unnecessary answerable over".split())
_POOLED_DECLINE = (
    "declining an unanswerable question is good and declining an answerable one is bad, so a pooled "
    "decline rate has no better direction."
)
_DECLINE_ADVICE = (
    "Compare `correct_decline` (higher is better, unanswerable questions only) and `false_decline` "
    "(lower is better, answerable questions only) from rows.rag.abstention().rows instead. "
)


def _no_direction(name: str, base: str) -> NoDirection:
    if base == "declined" or set(re.split(r"[^a-z0-9]+", base.lower())) & _DECLINE_WORDS:
        return NoDirection(name, _POOLED_DECLINE, _DECLINE_ADVICE)
    return NoDirection(name, "it was registered without one (register_metric(..., higher_is_better=None)).")
_NAME = re.compile(r"^(?P<base>.+?)(?:@(?P<k>\d+))?$")


_JUDGE_LOADED: list[bool] = []


def _load_judge_metrics() -> bool:
    """Read the judge metric registry (raglab.judge._metrics registers each metric's direction) once."""
    if _JUDGE_LOADED:
        return False
    _JUDGE_LOADED.append(True)
    try:
        import raglab.judge._metrics  # noqa: F401
    except ImportError:  # the judge extra is not installed: the built-in judge names above still work
        return False
    return True


def register_metric(
    base: str, *, higher_is_better: bool | None, binary: bool = False, bounded: bool = True, description: str = ""
) -> None:
    """Teach raglab a metric's direction and range (e.g. a custom judge score).

    Parameters
    ----------
    base : str
        The column name without ``@k``.
    higher_is_better : bool or None
        The direction; None registers a column with no direction (a gate on it then needs an
        explicit ``higher_is_better=``).
    binary, bounded : bool
        Takes only 0 and 1; lies in [0, 1].
    description : str
        What the number means.

    Examples
    --------
    >>> register_metric("toxicity_free", higher_is_better=True, binary=True)
    >>> metric_info("toxicity_free@3").binary
    True
    """
    if higher_is_better is not None and not isinstance(higher_is_better, bool):
        raise TypeError(f"`higher_is_better` for {base!r} must be True, False or None, got {higher_is_better!r}")
    _BASES[base] = (higher_is_better, binary, bounded, description)


def metric_info(name: str) -> MetricInfo:
    """Parse a score-column name such as ``"recall@5"`` and return what is known about it.

    Parameters
    ----------
    name : str
        A score-column name, ``<base>`` or ``<base>@<k>``.

    Returns
    -------
    MetricInfo
        Registered names give their registered direction and range; other names are
        higher-is-better unless a whole word says otherwise (``known=False``), and names built on a
        decline word have no direction (see the module notes).

    Examples
    --------
    >>> metric_info("recall@5").k, metric_info("latency_ms").higher_is_better
    (5, False)
    >>> metric_info("correct_decline").higher_is_better, metric_info("declined").has_direction
    (True, False)
    """
    match = _NAME.match(name)
    base, k = (match.group("base"), match.group("k")) if match else (name, None)
    cut = int(k) if k else None
    known = _BASES.get(base)
    if known is None and _load_judge_metrics():
        known = _BASES.get(base)
    if known is None:
        words = set(re.split(r"[^a-z0-9]+", base.lower()))
        if words & _DECLINE_WORDS:
            if words & _DECLINED_BADLY:
                return MetricInfo(name, base, cut, False, False, False, "", known=False)
            if words & _DECLINED_WELL:
                return MetricInfo(name, base, cut, True, False, False, "", known=False)
            return MetricInfo(name, base, cut, _no_direction(name, base), False, False, "", known=False)
        lower = bool(words & _LOWER_IS_BETTER_WORDS) and not words & _NEGATING_WORDS
        return MetricInfo(name, base, cut, not lower, False, False, "", known=False)
    higher, binary, bounded, description = known
    direction = _no_direction(name, base) if higher is None else higher
    return MetricInfo(name, base, cut, direction, binary, bounded, description)


_ID_NAME = re.compile(r"(?:^|[_\-\s.])ids?$|^(?:qid|pid|docid|uid|uuid|guid)s?$", re.IGNORECASE)
_CAMEL_ID = re.compile(r"(?<=[a-z0-9])Ids?$")


def is_id_name(name: str) -> bool:
    """Does a column name say it holds identifiers (so never a metric by default)?

    True for ``id``, names ending in ``_id``/``-id``/``.id``/`` id`` (or ``_ids``), camelCase
    ``questionId``, and ``qid``, ``pid``, ``docid``, ``uid``, ``uuid``, ``guid``; case-insensitive
    except for the camelCase form. ``valid`` and ``paid`` are not ids.

    Parameters
    ----------
    name : str
        A column name.

    Returns
    -------
    bool

    Examples
    --------
    >>> [is_id_name(n) for n in ["question_id", "ID", "docId", "qid", "doc_ids", "valid", "recall@5"]]
    [True, True, True, True, True, False, False]
    """
    text = str(name)
    if _CAMEL_ID.search(text):
        return True
    return bool(_ID_NAME.search(text))
