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

**One registry.** Every metric raglab knows is one :class:`Declaration` here, whoever computes it:
``kind="retrieval"`` (a :class:`~raglab.metrics.MetricSpec`, registered by :mod:`raglab.metrics.specs`),
``kind="judge"`` (a :class:`JudgeMetric`: the built-in judge metrics are declared in this module, as
data, so :func:`metric_info` knows them without importing :mod:`raglab.judge`; more are added with
:func:`register_judge_metric`) and ``kind="declared"`` (a column raglab does not compute: latency,
cost, ``em``; :func:`register_metric`). This module imports nothing of raglab: the specs register
into it, and :func:`specs` gives each kind's live view (``raglab.metrics.METRICS``,
``raglab.judge._metrics.JUDGE_METRICS``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "KINDS", "Declaration", "JudgeMetric", "MetricInfo", "NoDirection", "NoDirectionError", "declarations",
    "is_id_name", "metric_info", "register_judge_metric", "register_metric", "specs", "unregister_metric",
]

#: Who computes a metric: raglab.metrics, a judge, or nobody (a column the user brings).
KINDS = ("retrieval", "judge", "declared")

#: ``bounds`` of a score in [0, 1].
UNIT_INTERVAL = (0.0, 1.0)


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


def _in_unit_interval(bounds: tuple[float, float] | None) -> bool:
    return bounds is not None and bounds[0] >= 0.0 and bounds[1] <= 1.0


@dataclass(frozen=True)
class Declaration:
    """One metric, declared once: what its number means, its direction and range, and who computes it.

    Attributes
    ----------
    name : str
        The column name without ``@k`` (``"recall"``, ``"faithfulness"``, ``"latency"``).
    description : str
        One line: what the number means.
    higher_is_better : bool or None
        The direction; None for a metric with no direction (the pooled ``declined`` flag).
    binary : bool
        Takes only the values 0 and 1.
    bounds : (float, float) or None
        The range of the values, ``(0.0, 1.0)`` for shares and rates; None when unbounded or unknown.
    kind : str
        ``"retrieval"``, ``"judge"`` or ``"declared"`` (see :data:`KINDS`).
    spec : object
        The retrieval :class:`~raglab.metrics.MetricSpec` or the :class:`JudgeMetric`; None when declared.

    Examples
    --------
    >>> declarations()["faithfulness"].kind, declarations()["latency"].bounded
    ('judge', False)
    """

    name: str
    description: str
    higher_is_better: bool | None
    binary: bool = False
    bounds: tuple[float, float] | None = UNIT_INTERVAL
    kind: str = "declared"
    spec: Any = None

    @property
    def bounded(self) -> bool:
        """The values lie in [0, 1] (what the betting interval and shared plot axes need)."""
        return _in_unit_interval(self.bounds)


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
    binary : bool
        Takes only the values 0 and 1.
    bounds : (float, float) or None
        The range of the values (None: unbounded or unknown); ``bounded`` says it is within [0, 1].
    description : str
    known : bool
        False when the name is not registered and the direction was guessed from its words.
    kind : str or None
        ``"retrieval"``, ``"judge"`` or ``"declared"``; None for an unknown name.

    Examples
    --------
    >>> metric_info("false_decline").higher_is_better, metric_info("false_decline").has_direction
    (False, True)
    >>> metric_info("recall@5").bounds, metric_info("latency_ms").bounded
    ((0.0, 1.0), False)
    """

    name: str
    base: str
    k: int | None
    higher_is_better: bool | NoDirection
    binary: bool
    bounds: tuple[float, float] | None
    description: str
    known: bool = True  # False: unknown name, direction guessed from its words
    kind: str | None = None

    @property
    def bounded(self) -> bool:
        """The values lie in [0, 1]."""
        return _in_unit_interval(self.bounds)

    @property
    def has_direction(self) -> bool:
        """True when higher or lower is better; False for metrics such as the pooled ``declined`` flag."""
        return not isinstance(self.higher_is_better, NoDirection)


@dataclass(frozen=True)
class JudgeMetric:
    """One judge metric as data: the inputs it needs, its calls, how verdicts become a score, its columns.

    A metric has one of three shapes (see :mod:`raglab.judge._metrics`): ``claims`` (split
    ``claims_of`` into claims, verify each against ``against``; score = share supported),
    ``label`` (one call ``call`` with two labels; score 1.0 for ``positive``) and ``items`` (one
    call per retrieved passage; score = share ``positive``). The calls themselves
    (:class:`raglab.judge._metrics.LabelCall`) live with the judge; this record is all
    :func:`metric_info` and the output columns need.

    Examples
    --------
    >>> specs("judge")["context_relevance"].columns
    ['context_relevance', 'context_relevance_verdicts', 'context_relevance_reasons', 'context_relevance_error']
    """

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


_METRICS: dict[str, Declaration] = {}


class _Specs(MutableMapping):
    """Name -> spec of one kind of metric: a live view of the registry (deleting unregisters)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __getitem__(self, name: str) -> Any:
        found = _METRICS.get(name)
        if found is None or found.kind != self.kind:
            raise KeyError(name)
        return found.spec

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, found in _METRICS.items() if found.kind == self.kind])

    def __len__(self) -> int:
        return sum(found.kind == self.kind for found in _METRICS.values())

    def __setitem__(self, name: str, spec: Any) -> None:
        raise TypeError(f"register {self.kind} metrics with their register function, not by item assignment "
                        f"({name!r})")

    def __delitem__(self, name: str) -> None:
        self[name]  # KeyError unless it is of this kind
        del _METRICS[name]

    def __repr__(self) -> str:
        return f"<{self.kind} metrics: {list(self)}>"


def specs(kind: str) -> MutableMapping[str, Any]:
    """The specs of one kind of metric, by name, in registration order: a live view of the registry.

    Examples
    --------
    >>> list(specs("judge"))[:3]
    ['faithfulness', 'relevance', 'correctness']
    """
    if kind not in KINDS[:2]:
        raise ValueError(f"`kind` must be 'retrieval' or 'judge', but {kind!r} was passed.")
    return _Specs(kind)


def declarations(kind: str | None = None) -> dict[str, Declaration]:
    """Every registered metric (or those of one ``kind``), by name, in registration order (a copy).

    Examples
    --------
    >>> sorted(declarations("declared"))[:3]
    ['context_chars', 'correct_decline', 'cost']
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"`kind` must be one of {list(KINDS)} or None, but {kind!r} was passed.")
    return {name: found for name, found in _METRICS.items() if kind is None or found.kind == kind}


def register_metric(
    base: str, *, higher_is_better: bool | None, binary: bool = False, bounded: bool = True, description: str = "",
    bounds: tuple[float, float] | None | str = "bounded", kind: str = "declared", spec: Any = None,
) -> Declaration:
    """Teach raglab a metric's direction and range (e.g. a custom judge score or a latency column).

    Parameters
    ----------
    base : str
        The column name without ``@k``.
    higher_is_better : bool or None
        The direction; None registers a column with no direction (a gate on it then needs an
        explicit ``higher_is_better=``).
    binary : bool
        Takes only 0 and 1.
    bounded : bool
        Lies in [0, 1] (shorthand for ``bounds=(0.0, 1.0)``; False means ``bounds=None``).
    description : str
        What the number means.
    bounds : (float, float) or None, optional
        The range of the values; overrides ``bounded``.
    kind : str
        ``"declared"`` (default), or ``"retrieval"`` / ``"judge"`` with their ``spec`` (what
        :func:`raglab.metrics.specs.register` and :func:`register_judge_metric` pass). Declaring
        an existing retrieval or judge metric again changes its direction and range and keeps its spec.
    spec : object, optional
        The spec that computes the metric.

    Returns
    -------
    Declaration

    Examples
    --------
    >>> _ = register_metric("toxicity_free", higher_is_better=True, binary=True)
    >>> metric_info("toxicity_free@3").binary
    True
    """
    if higher_is_better is not None and not isinstance(higher_is_better, bool):
        raise TypeError(f"`higher_is_better` for {base!r} must be True, False or None, got {higher_is_better!r}")
    if kind not in KINDS:
        raise ValueError(f"`kind` of {base!r} must be one of {list(KINDS)}, but {kind!r} was passed.")
    if (spec is None) != (kind == "declared"):
        raise ValueError(f"a {kind} metric needs its spec, a declared one has none ({base!r})")
    if isinstance(bounds, str):
        bounds = UNIT_INTERVAL if bounded else None
    elif bounds is not None:
        lo, hi = (float(b) for b in bounds)
        if not lo < hi:
            raise ValueError(f"`bounds` of {base!r} must be (low, high) with low < high, got {bounds!r}")
        bounds = (lo, hi)
    before = _METRICS.get(base)
    if kind == "declared" and before is not None and before.spec is not None:
        kind, spec = before.kind, before.spec  # a new direction for a computed metric keeps who computes it
    declared = Declaration(base, description, higher_is_better, binary, bounds, kind, spec)
    _METRICS[base] = declared
    return declared


def unregister_metric(base: str) -> None:
    """Forget a registered metric (of any kind); unknown names are ignored.

    Examples
    --------
    >>> _ = register_metric("scratch", higher_is_better=True)
    >>> unregister_metric("scratch"); metric_info("scratch").known
    False
    """
    _METRICS.pop(base, None)


def register_judge_metric(spec: JudgeMetric) -> JudgeMetric:
    """Add a judge metric to the registry (its direction and range go to :func:`metric_info`).

    Its label calls, if new, are registered with :func:`raglab.judge._metrics.register_label_call`;
    prompts, schemas, :class:`~raglab.judge.LexicalJudge` and the local test server read both on demand.

    Examples
    --------
    >>> spec = register_judge_metric(JudgeMetric("answer_length_ok", ("answer",), "label", "answer is short enough",
    ...                                          call="length", positive="ok", binary=True))
    >>> metric_info("answer_length_ok").kind, "answer_length_ok" in specs("judge")
    ('judge', True)
    >>> unregister_metric("answer_length_ok")
    """
    if not isinstance(spec, JudgeMetric):
        raise TypeError(f"register_judge_metric takes a JudgeMetric, got {type(spec).__name__}")
    if spec.shape not in ("claims", "label", "items"):
        raise ValueError(f"`shape` must be 'claims', 'label' or 'items', but {spec.shape!r} was passed.")
    if spec.shape != "claims" and (spec.call is None or spec.positive is None):
        raise ValueError(f"a {spec.shape!r} judge metric needs `call` and `positive` ({spec.name!r})")
    spec = replace(spec, needs=tuple(spec.needs))
    register_metric(spec.name, higher_is_better=spec.higher_is_better, binary=spec.binary, bounded=True,
                    description=spec.description, kind="judge", spec=spec)
    return spec


# --------------------------------------------------------------------------------------------------
# The built-in judge metrics and declared columns (retrieval metrics: raglab.metrics.specs)
# --------------------------------------------------------------------------------------------------

for _spec in (
    JudgeMetric("faithfulness", ("answer", "context"), "claims", "fraction of the answer's claims the context supports",
                claims_of="answer", against="context"),
    JudgeMetric("relevance", ("question", "answer"), "label", "whether the answer addresses the question",
                call="relevance", positive="relevant"),
    JudgeMetric("correctness", ("answer", "reference"), "claims", "agreement of the answer with the reference",
                claims_of="answer", against="reference"),
    # The pooled flag has no direction (None): good on unanswerable questions, bad on answerable ones.
    JudgeMetric("declined", ("answer",), "label",
                "the system declined to answer (a flag: good or bad depending on the question)",
                higher_is_better=None, binary=True, call="declined", positive="declined", boolean=True),
    JudgeMetric("context_relevance", ("question", "context"), "items",
                "share of the retrieved passages that bear on the question (precision@k without gold labels)",
                call="passage_relevance", positive="relevant"),
    JudgeMetric("context_recall", ("reference", "context"), "claims",
                "share of the reference answer's claims the retrieved context supports",
                claims_of="reference", against="context"),
):
    register_judge_metric(_spec)

for _base, (_higher, _binary, _bounded, _description) in {
    # base: (higher_is_better, binary, in [0, 1], description)
    "lexical_support": (True, False, True, "share of content words found in the context"),
    "em": (True, True, True, "exact match with a reference answer"),
    "f1": (True, False, True, "token F1 against a reference answer"),
    "correct_decline": (True, True, True, "declined an unanswerable question (NaN on answerable ones)"),
    "false_decline": (False, True, True, "declined an answerable question (NaN on unanswerable ones)"),
    "hallucination": (False, True, True, "the answer contains an unsupported claim"),
    "latency": (False, False, False, "time to answer"),
    "cost": (False, False, False, "cost per question"),
    # raglab.boundaries' costs: characters sent to the model.
    "prompt_chars": (False, False, False, "characters of the retrieved spans sent to the model (boundaries.prompt_chars)"),
    "context_chars": (False, False, False, "characters of the union of the retrieved spans (boundaries.expand_neighbors)"),
}.items():
    register_metric(_base, higher_is_better=_higher, binary=_binary, bounded=_bounded, description=_description)

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


def _guessed(name: str, base: str, cut: int | None) -> MetricInfo:
    """What an unregistered name says about itself (``known=False``; see the module notes)."""
    words = set(re.split(r"[^a-z0-9]+", base.lower()))
    if words & _DECLINE_WORDS:
        if words & _DECLINED_BADLY:
            return MetricInfo(name, base, cut, False, False, None, "", known=False)
        if words & _DECLINED_WELL:
            return MetricInfo(name, base, cut, True, False, None, "", known=False)
        return MetricInfo(name, base, cut, _no_direction(name, base), False, None, "", known=False)
    lower = bool(words & _LOWER_IS_BETTER_WORDS) and not words & _NEGATING_WORDS
    return MetricInfo(name, base, cut, not lower, False, None, "", known=False)


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
    found = _METRICS.get(base)
    if found is None:
        return _guessed(name, base, cut)
    direction = _no_direction(name, base) if found.higher_is_better is None else found.higher_is_better
    return MetricInfo(name, base, cut, direction, found.binary, found.bounds, found.description, kind=found.kind)


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
