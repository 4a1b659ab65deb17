"""A seeded production log with known truth, written by the raglab developers (no third-party text).

One row per request of a RAG assistant over ``days`` days: when it came (``timestamp``, UTC), two
slice columns (``topic``, ``channel``), the user's ``question`` (from templates written here), two tripwires scored on *every* request (``citation_valid``,
0/1; ``lexical_support``, a score in [0, 1] that tracks faithfulness loosely), an LLM judge's
``faithfulness`` verdict on a uniform random sample (``selected``, ``inclusion_probability``; NaN
elsewhere), and user feedback ``thumbs`` (1 up, 0 down, NaN when the user did not answer; unhappy
users answer more often, so feedback is a biased sample).

The truth is known and kept beside the observations, in ``truth_`` columns the tools must not read:
``truth_faithful`` (whether the answer was faithful) and ``truth_verdict`` (the verdict the judge
would have given had it judged the request: the judged metric's finite-population truth is the mean
of ``truth_verdict``). From ``drop_day`` on, answers about ``drop_topic`` are faithful ``drop`` less
often (a retrieval index that lost a document family): the regression a monitor should find.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from raglab._meta import update_meta
from raglab._validation import check_int

__all__ = ["TOPICS", "simulate_log"]

#: topic -> (share of requests, faithful rate before any drop)
TOPICS: dict[str, tuple[float, float]] = {
    "billing": (0.20, 0.91),
    "account": (0.20, 0.92),
    "product": (0.30, 0.89),
    "shipping": (0.15, 0.90),
    "other": (0.15, 0.88),
}
_CHANNELS = ("web", "app")
#: question templates per topic, written for this simulator: "{thing}" is filled from _THINGS
_QUESTIONS: dict[str, tuple[str, ...]] = {
    "billing": ("Why was I charged twice for {thing}?", "How do I change the card used for {thing}?",
                "When is the next invoice for {thing} due?", "Can I get a refund for {thing}?"),
    "account": ("How do I reset the password for {thing}?", "Can two people share {thing}?",
                "How do I close {thing}?", "Where do I change the email on {thing}?"),
    "product": ("Does {thing} work offline?", "What is the battery life of {thing}?",
                "Is {thing} compatible with the older dock?", "How do I update the firmware of {thing}?"),
    "shipping": ("Where is my order of {thing}?", "Can {thing} be delivered to a locker?",
                 "How long does shipping {thing} abroad take?", "Can I change the address for {thing}?"),
    "other": ("Who do I contact about {thing}?", "Is there a student discount on {thing}?",
              "Where can I read the terms for {thing}?", "Can I give {thing} as a gift?"),
}
_THINGS = ("the Lumen lamp", "the Basalt kettle", "the Heron headset", "the Quill tablet", "the Ember heater",
           "my family plan", "the Orbit speaker", "the Tundra backpack")
#: the judge: P(verdict 1 | faithful), P(verdict 1 | not faithful) (Cohen's kappa about 0.7 at a rate of 0.9)
_JUDGE = (0.97, 0.20)
#: P(user answers | faithful, not), P(thumbs up | faithful, not)
_FEEDBACK = ((0.03, 0.10), (0.92, 0.25))


def simulate_log(
    requests: int = 1_000_000,
    *,
    days: int = 90,
    judged: float = 0.02,
    drop_topic: str | None = "billing",
    drop_day: int = 30,
    drop: float = 0.15,
    start: str = "2026-09-01",
    seed: int = 0,
) -> pd.DataFrame:
    """A production log of ``requests`` requests over ``days`` days, with a known regression.

    Parameters
    ----------
    requests : int
        Number of requests (rows); traffic varies by weekday (weekends about 60% of a weekday).
    days : int
        Days covered, starting at ``start`` (UTC midnight).
    judged : float
        Probability that a request is judged (Poisson sampling, the same for every request): about
        ``judged * requests`` verdicts. Recorded as a sampling design of kind ``"judged"``.
    drop_topic, drop_day, drop : optional
        From the start of day ``drop_day`` (0-based) answers about ``drop_topic`` are faithful
        ``drop`` less often (``drop_topic=None``: no change at all).
    start : str
        The first day (a date).
    seed : int
        Everything is a function of the seed: the same arguments give the same table.

    Returns
    -------
    pandas.DataFrame
        ``request_id, timestamp, topic, channel, question, citation_valid, lexical_support, faithfulness,
        selected, inclusion_probability, thumbs, truth_faithful, truth_verdict``, sorted by time.

    Examples
    --------
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(20_000, days=10, drop_day=5, seed=0)
    >>> len(log), bool(log["timestamp"].is_monotonic_increasing)
    (20000, True)
    >>> round(float(log["selected"].mean()), 2)                 # about 2% judged
    0.02
    >>> before = log[log["timestamp"] < "2026-09-06"]
    >>> after = log[log["timestamp"] >= "2026-09-06"]
    >>> drop = (before.loc[before.topic == "billing", "truth_faithful"].mean()
    ...         - after.loc[after.topic == "billing", "truth_faithful"].mean())
    >>> bool(0.1 < drop < 0.2)
    True
    """
    requests = check_int(requests, "requests", minimum=1)
    days = check_int(days, "days", minimum=1)
    drop_day = check_int(drop_day, "drop_day", minimum=0)
    if not 0 < judged <= 1:
        raise ValueError(f"judged must be a probability in (0, 1], got {judged!r}")
    if not 0 <= drop <= 1:
        raise ValueError(f"drop must be in [0, 1], got {drop!r}")
    if drop_topic is not None and drop_topic not in TOPICS:
        raise ValueError(f"drop_topic must be one of {tuple(TOPICS)} or None, got {drop_topic!r}")
    rng = np.random.default_rng([seed, 2026])
    first = pd.Timestamp(start, tz="UTC").normalize()

    # when: a day by weekday weight, then a time of day with a daytime peak (sorted afterwards)
    weekday = (first + pd.to_timedelta(np.arange(days), "D")).day_of_week.to_numpy()
    day_weight = np.where(weekday >= 5, 0.6, 1.0)
    day = rng.choice(days, size=requests, p=day_weight / day_weight.sum())
    seconds = np.mod(rng.normal(14.0, 4.0, requests), 24.0) * 3600.0  # wrapped: no pile-up at midnight
    offset = np.sort(day * 86_400.0 + seconds)
    day = (offset // 86_400).astype(np.int64)
    timestamp = first + pd.to_timedelta(offset, "s")

    names = list(TOPICS)
    shares = np.array([TOPICS[t][0] for t in names])
    topic_code = rng.choice(len(names), size=requests, p=shares / shares.sum())
    channel_code = (rng.random(requests) < 0.45).astype(np.int64)  # 45% from the app

    rate = np.array([TOPICS[t][1] for t in names])[topic_code] - 0.01 * channel_code
    if drop_topic is not None:
        hit = (topic_code == names.index(drop_topic)) & (day >= drop_day)
        rate = np.where(hit, rate - drop, rate)
    faithful = rng.random(requests) < rate

    verdict = rng.random(requests) < np.where(faithful, _JUDGE[0], _JUDGE[1])
    chosen = rng.random(requests) < judged
    citation = rng.random(requests) < np.where(faithful, 0.97, 0.75)
    support = 1.0 / (1.0 + np.exp(-(0.8 + 1.4 * np.where(faithful, 1.0, -1.0) + rng.normal(0.0, 1.1, requests))))
    answered = rng.random(requests) < np.where(faithful, _FEEDBACK[0][0], _FEEDBACK[0][1])
    up = rng.random(requests) < np.where(faithful, _FEEDBACK[1][0], _FEEDBACK[1][1])
    questions = [q.format(thing=t) for name in names for q in _QUESTIONS[name] for t in _THINGS]
    per_topic = len(_QUESTIONS[names[0]]) * len(_THINGS)
    question_code = topic_code * per_topic + rng.integers(0, per_topic, requests)

    log = pd.DataFrame({
        "request_id": np.arange(1, requests + 1, dtype=np.int64),
        "timestamp": timestamp,
        "topic": pd.Categorical.from_codes(topic_code, categories=names),
        "channel": pd.Categorical.from_codes(channel_code, categories=list(_CHANNELS)),
        "question": pd.Categorical.from_codes(question_code, categories=questions),
        "citation_valid": citation.astype(float),
        "lexical_support": np.round(support, 4),
        "faithfulness": np.where(chosen, verdict.astype(float), np.nan),
        "selected": chosen,
        "inclusion_probability": np.full(requests, float(judged)),
        "thumbs": np.where(answered, up.astype(float), np.nan),
        "truth_faithful": faithful.astype(float),
        "truth_verdict": verdict.astype(float),
    })
    design: dict[str, Any] = {"kind": "judged", "method": "uniform", "n": int(chosen.sum()), "population": requests,
                              "inclusion_probability": "inclusion_probability", "seed": int(seed), "poisson": True,
                              "metrics": ["faithfulness"]}
    update_meta(log, "sampling", {"judged": design})
    update_meta(log, "judge", {"model": "simulated-judge", "metrics": ["faithfulness"]})
    return log
