"""Benchmark: LLMJudge concurrency and cache against a local OpenAI-compatible server.

500 rows are judged for claim-level faithfulness (one claim-split call and one batched
verification call per row) against :mod:`raglab.testing`'s server running in a separate process
with a fixed latency per call (a ``time.sleep`` in a threaded server, so the server is never the
bottleneck). For ``max_concurrency`` 16 and 64, with the default ``AsyncOpenAI`` client on the
judge's one event loop and with a sync ``OpenAI`` client in a thread pool, it reports calls, wall time, effective concurrency
(``calls x latency / wall``) and its share of ``max_concurrency`` (target: at least 70%), the
client CPU time per call, and the time of a re-run answered from the cache (which must make no
calls). The peer is the loop a user would write by hand: the same calls through the same ``openai``
client, one at a time. Scores must agree with it and with :class:`~raglab.judge.LexicalJudge`
(the server's responder applies the same lexical rule).

A client in one Python process spends CPU on every call (the ``openai`` SDK builds, sends and
parses each request); with 50 ms latency that CPU time, not the scheduler, bounds the effective
concurrency at 64 on a small machine. The last run repeats the 64 case with 500 ms latency (closer
to a real model) to show the scheduler keeps 64 calls in flight when CPU is not the limit.

Run: ``.venv/bin/python benchmarks/judge.py`` (about a minute).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import pandas as pd
from openai import OpenAI

import raglab  # noqa: F401  (registers df.rag)
from raglab.judge import LexicalJudge, LLMJudge
from raglab.judge._prompts import PROMPTS, user_message
from raglab.judge._schemas import SCHEMAS, json_schema
from raglab.testing import server_process

N_ROWS = 500
LATENCY = 0.05
SEQUENTIAL_ROWS = 40
REPEATS = 2

WORDS = ["bridge", "river", "tower", "cable", "steel", "orange", "fog", "harbour", "ferry", "island", "north", "south", "deck", "span", "toll", "engineer", "design", "storm", "paint", "traffic", "opened", "built", "closed", "rebuilt", "widened"]


def make_rows(n: int, seed: int = 0) -> pd.DataFrame:
    """Synthetic rows: a 3-passage context and a 2-3 sentence answer, some sentences unsupported."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        passages = [" ".join(rng.choice(WORDS, size=8)) + f" {1900 + i % 97}." for _ in range(3)]
        sentences = []
        for _ in range(int(rng.integers(2, 4))):
            if rng.random() < 0.7:  # copied from the context: supported
                source = passages[int(rng.integers(0, 3))].rstrip(".").split()
                sentences.append(" ".join(source[:6]).capitalize() + ".")
            else:
                sentences.append(" ".join(rng.choice(WORDS, size=6)).capitalize() + " in 1850.")
        rows.append({"question_id": f"q{i:04d}", "question": f"What about {WORDS[i % len(WORDS)]} {i}?",
                     "answer": " ".join(sentences), "context": passages})
    return pd.DataFrame(rows)


def judged(rows: pd.DataFrame, judge) -> tuple[pd.DataFrame, float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    out = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    return out, time.perf_counter() - started, time.process_time() - cpu


def sequential(rows: pd.DataFrame, base_url: str) -> tuple[list[float], float, int]:
    """The hand-written peer: claims then verification, one call at a time, same client and prompts."""
    import json

    client = OpenAI(base_url=base_url, api_key="none", max_retries=0)

    def ask(kind: str, inputs: dict) -> dict:
        name, _ = SCHEMAS[kind]
        schema = json_schema(kind, n_claims=len(inputs["claims"]) if "claims" in inputs else None)
        reply = client.chat.completions.create(
            model="bench", temperature=0.0, max_completion_tokens=1024,
            messages=[{"role": "system", "content": PROMPTS[kind]}, {"role": "user", "content": user_message(kind, inputs)}],
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
        )
        return json.loads(reply.choices[0].message.content)

    scores, calls = [], 0
    started = time.perf_counter()
    for row in rows.itertuples(index=False):
        claims = ask("claims", {"question": row.question, "answer": row.answer})["claims"]
        keyed = ask("verify_context", {"context": list(row.context), "claims": claims})  # {"claim_1": ..., ...}
        verdicts = [keyed[f"claim_{i}"] for i in range(1, len(claims) + 1)]
        calls += 2
        scores.append(sum(v["verdict"] == "supported" for v in verdicts) / len(verdicts))
    return scores, time.perf_counter() - started, calls


def main() -> int:
    rows = make_rows(N_ROWS)
    reference = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)["faithfulness"].to_numpy()
    print(f"raglab judge benchmark: {N_ROWS} rows x faithfulness (2 calls per row), server latency "
          f"{LATENCY * 1000:.0f} ms, {os.cpu_count()} CPUs, best of {REPEATS} runs (on a shared machine figures "
          "vary run to run)\n")
    failures = []
    with server_process(latency=LATENCY) as base_url:
        seq_scores, seq_wall, seq_calls = sequential(rows.head(SEQUENTIAL_ROWS), base_url)
        if not np.allclose(seq_scores, reference[:SEQUENTIAL_ROWS]):
            failures.append("the sequential peer disagrees with LexicalJudge")
        per_call = seq_wall / seq_calls
        print(f"sequential peer (openai client, one call at a time): {seq_calls} calls in {seq_wall:.2f} s = "
              f"{per_call * 1000:.1f} ms per call; {N_ROWS} rows would take ~{per_call * 2 * N_ROWS:.1f} s\n")
        header = (f"{'client':>7} {'max_concurrency':>15} {'calls':>6} {'wall s':>7} {'eff. conc.':>10} {'share':>6} "
                  f"{'CPU ms/call':>11} {'vs peer':>8} {'re-run s':>8} {'re-run calls':>12}")
        print(header)
        print("-" * len(header))
        for engine, concurrency in (("async", 16), ("threads", 16), ("async", 64), ("threads", 64)):
            best = None
            for _ in range(REPEATS):  # best of REPEATS fresh runs: the machine is shared
                with tempfile.TemporaryDirectory() as folder:
                    if engine == "async":  # the default: AsyncOpenAI on the judge's one event loop
                        judge = LLMJudge("bench", base_url=base_url, api_key="none", cache=folder,
                                         max_concurrency=concurrency)
                    else:  # a sync OpenAI client: calls run in a pool of max_concurrency threads
                        judge = LLMJudge("bench", client=OpenAI(base_url=base_url, api_key="none"), cache=folder,
                                         max_concurrency=concurrency)
                    out, wall, cpu = judged(rows, judge)
                    calls = judge.last_run.requests
                    again, rerun_wall, _ = judged(rows, judge)
                    rerun_calls = judge.last_run.requests
                    judge.close()
                if best is None or wall < best[1]:
                    best = (out, wall, cpu, calls, again, rerun_wall, rerun_calls)
            out, wall, cpu, calls, again, rerun_wall, rerun_calls = best
            effective = calls * LATENCY / wall
            share = effective / concurrency
            speedup = per_call * calls / wall
            print(f"{engine:>7} {concurrency:>15} {calls:>6} {wall:>7.2f} {effective:>10.1f} {share:>6.0%} "
                  f"{cpu / calls * 1000:>11.2f} {speedup:>7.1f}x {rerun_wall:>8.3f} {rerun_calls:>12}")
            if not np.array_equal(out["faithfulness"].to_numpy(), reference, equal_nan=True):
                failures.append(f"{engine} max_concurrency={concurrency}: scores differ from LexicalJudge")
            if rerun_calls != 0 or not out.equals(again):
                failures.append(f"{engine} max_concurrency={concurrency}: the cached re-run made calls or changed a result")
            if share < 0.7:
                print(f"{'':>15} below the 70% target: the client spends {cpu / calls * 1000:.1f} ms CPU per call, so one "
                      f"process completes at most ~{calls / cpu:.0f} calls/s = {calls / cpu * LATENCY:.0f} calls in "
                      f"flight at {LATENCY * 1000:.0f} ms")
    slow = 0.5
    with server_process(latency=slow) as base_url, tempfile.TemporaryDirectory() as folder:
        judge = LLMJudge("bench", base_url=base_url, api_key="none", cache=folder, max_concurrency=64)
        out, wall, cpu = judged(rows, judge)
        calls = judge.last_run.requests
        judge.close()
        effective = calls * slow / wall
        print(f"\nat {slow * 1000:.0f} ms latency, max_concurrency 64: {calls} calls in {wall:.2f} s, effective concurrency "
              f"{effective:.1f} ({effective / 64:.0%} of 64)")
        if not np.array_equal(out["faithfulness"].to_numpy(), reference, equal_nan=True):
            failures.append("latency 500 ms: scores differ from LexicalJudge")
    if failures:
        print("\nFAILED: " + "; ".join(failures))
        return 1
    print("\nscores agree with the sequential peer and with LexicalJudge; cached re-runs made no calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
