"""Judge noise with repeats=n: flip share and the judge's own standard error, next to the sampling interval."""

from __future__ import annotations

import hashlib
import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from raglab.judge import JudgeNoise, LexicalJudge, LLMJudge, judge_noise
from raglab.testing import LocalOpenAIServer, extract_section, rule_based_reply


def make_rows(n: int = 8) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "question": [f"Is tower {i} tall?" for i in range(n)],
        "answer": [f"Tower {i} is {50 + i} metres tall. It was built in {1950 + i}. It is red." for i in range(n)],
        "context": [f"Tower {i} is {50 + i} metres tall." for i in range(n)],
    })


def coin(*parts: object) -> bool:
    """A deterministic pseudo-random verdict, the same for the server and the oracle below."""
    return int(hashlib.sha256(json.dumps(parts).encode()).hexdigest(), 16) % 3 != 0


def noisy(body: dict) -> str:
    """Claims by the rule; verdicts drawn from (claim, seed); relevance flips with the seed."""
    name = body["response_format"]["json_schema"]["name"]
    text = body["messages"][-1]["content"]
    if name == "raglab_verdicts":
        claims = json.loads(extract_section(text, "claims"))  # {"claim_1": ..., ...}
        return json.dumps({key: {"claim": c, "evidence": "", "reason": "",
                                 "verdict": "supported" if coin(c, body["seed"]) else "not_supported"}
                           for key, c in claims.items()})
    if name == "raglab_relevance":
        question = extract_section(text, "question")
        return json.dumps({"reason": "", "verdict": "relevant" if coin(question, body["seed"]) else "irrelevant"})
    return rule_based_reply(body)


def test_noise_against_an_independent_computation():
    rows, repeats, seed = make_rows(), 3, 10
    with LocalOpenAIServer(responder=noisy) as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None, temperature=0.7, seed=seed)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], repeats=repeats, progress=False)
        assert sorted({b["seed"] for b in server.requests}) == [seed, seed + 1, seed + 2]  # seed + repeat
    noise = judge_noise(out)
    table = noise.to_frame().set_index("metric")

    # Oracle: the verdicts the server draws, recomputed here from (claim, seed).
    claims = [[f"Tower {i} is {50 + i} metres tall.", f"It was built in {1950 + i}.", "It is red."] for i in range(8)]
    faith = np.array([[np.mean([coin(c, seed + r) for c in cs]) for r in range(repeats)] for cs in claims])
    relev = np.array([[float(coin(q, seed + r)) for r in range(repeats)] for q in rows["question"]])
    for metric, scores, units, flips in (
        ("faithfulness", faith, 24, sum(len({coin(c, seed + r) for r in range(repeats)}) > 1 for cs in claims for c in cs)),
        ("relevance", relev, 8, sum(len(set(row)) > 1 for row in relev)),
    ):
        row = table.loc[metric]
        judge_sd = math.sqrt(statistics.fmean(statistics.variance(s) for s in scores))
        means = scores.mean(axis=1)
        low, high = stats.t.interval(0.95, df=len(means) - 1, loc=means.mean(), scale=stats.sem(means))
        assert row["n"] == 8 and row["repeats"] == 3
        assert row["mean"] == pytest.approx(means.mean())
        assert row["judge_sd"] == pytest.approx(judge_sd)
        assert row["judge_se"] == pytest.approx(judge_sd / math.sqrt(8))
        assert row["judge_se_mean"] == pytest.approx(judge_sd / math.sqrt(24))
        assert row["sampling_se"] == pytest.approx(stats.sem(means))
        assert (row["low"], row["high"]) == pytest.approx((low, high))
        assert row["n_units"] == units and row["flip_share"] == pytest.approx(flips / units)
        assert row["rows_changed"] == pytest.approx(np.mean(scores.max(axis=1) != scores.min(axis=1)))
        # per-row repeat scores and their mean are columns; the main column is repeat 0
        assert np.allclose(np.array(out[f"{metric}_repeats"].tolist(), dtype=float), scores)
        assert np.allclose(out[f"{metric}_mean"], means)
        assert np.allclose(out[metric], scores[:, 0])
    assert table.loc["faithfulness", "claims_changed"] == 0.0  # the split is deterministic here
    interval = noise.interval("relevance")
    assert interval.method == "t" and interval.level == 0.95 and interval.n == 8
    assert "judge SE" in repr(noise) and "<table" in noise._repr_html_()
    assert JudgeNoise.from_dict(noise.to_dict()).to_frame().equals(noise.to_frame())


def test_cache_key_includes_the_repeat_index(tmp_path):
    rows = make_rows(2)
    with LocalOpenAIServer(responder=noisy) as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=tmp_path, temperature=0.7, seed=1)
        rows.rag.judge(judge, metrics=["relevance"], repeats=3, progress=False)
        assert server.requests_received == 6
        rows.rag.judge(judge, metrics=["relevance"], repeats=4, progress=False)
        assert server.requests_received == 8  # only repeat 3 is new


def test_lexical_judge_has_no_noise():
    out = make_rows(4).rag.judge(LexicalJudge(), metrics=["faithfulness", "declined"], repeats=2, progress=False)
    table = judge_noise(out).to_frame().set_index("metric")
    assert table.loc["faithfulness", "judge_sd"] == 0.0 and table.loc["faithfulness", "flip_share"] == 0.0
    assert out["declined_repeats"].tolist() == [[False, False]] * 4


def test_repeats_at_temperature_zero_warn_and_no_noise_record_without_repeats():
    rows = make_rows(2)
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None)
        with pytest.warns(UserWarning, match="temperature 0"):
            rows.rag.judge(judge, metrics=["relevance"], repeats=2, progress=False)
        once = rows.rag.judge(judge, metrics=["relevance"], progress=False)
    assert "noise" not in once.attrs["raglab"]["judge"] and "relevance_repeats" not in once.columns
    with pytest.raises(ValueError, match="repeats > 1"):
        judge_noise(once)
