"""Benchmark: LLMJudge's limits against a hostile local server (real HTTP on loopback).

Part 1 measures each limit on its own: a reply dripped one byte every 40 ms at ``timeout=2``
(wall time of the call), rows holding a lone surrogate (which rows are scored, how many requests),
implausible ``usage`` values (does the run finish, does a warm re-run pay again), a claim split of
300 claims (requests for that row; what ``estimate()`` foresaw), a cache locked by another process
(seconds until the error, and whether the message advises deleting), and the three routes by which
a credential can come back (an echoed ``Authorization`` header, ``base_url`` userinfo, a client's
``default_headers``): occurrences of the secret in the frame, written files, the SQLite bytes,
log records, warnings, reprs and errors.

Part 2 runs seeded hostile scenarios: each mixes several faults (HTTP 500/429, malformed, off-schema
and truncated replies, header echoes into reasons and error bodies, huge/negative/text usage, a
dripped reply, rows with lone surrogates) and checks that no row is lost or reordered, scored rows
agree with :class:`~raglab.judge.LexicalJudge`, no secret appears anywhere, and after one clean
re-run a third run makes no request.

Run: ``.venv/bin/python benchmarks/judge_limits.py`` (``--quick`` for fewer scenarios).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from openai import AsyncOpenAI

import raglab  # noqa: F401  (registers df.rag)
from raglab.judge import CacheBusyError, CallCache, LexicalJudge, LLMJudge
from raglab.testing import LocalOpenAIServer, rule_based_reply

KEY = "sk-bench-SECRET-0123456789"
METRICS = ["faithfulness", "relevance"]


def make_rows(n: int, seed: int = 0, bad: float = 0.0) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        answer = f"Bridge {i} opened in {1900 + i}. It is painted blue."
        if rng.random() < bad:
            answer = answer.replace("painted", "pain\ud800ted")
        rows.append({"question_id": f"q{i}", "question": f"When did bridge {i} open?", "answer": answer,
                     "context": [f"Bridge {i} opened to traffic in {1900 + i}.", "Some bridges are painted red."]})
    return pd.DataFrame(rows, dtype=object)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def captured():
    handler = Records()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield handler.lines, caught
        finally:
            root.removeHandler(handler)
            root.setLevel(old)


def leaks(secrets: list[str], folder: Path, out: pd.DataFrame | None, texts: list[str]) -> int:
    """Occurrences of any secret in the frame, files written from it, every file in ``folder``, and ``texts``."""
    blobs = list(texts)
    if out is not None:
        blobs.append(out.to_string() + json.dumps(out.attrs, default=str, ensure_ascii=True))
        out.drop(columns=["answer"]).to_json(folder / "out.json", default_handler=str)  # (the rows' own text may not encode)
    for f in folder.rglob("*"):
        if f.is_file():
            blobs.append(f.read_bytes().decode("latin-1"))
    return sum(blob.count(s) for blob in blobs for s in secrets)


def limits() -> list[dict]:
    table = []
    rows = make_rows(1)
    # deadline
    with LocalOpenAIServer() as server:
        server.drip_next(1, interval=0.04)
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None, timeout=2.0, max_retries=0)
        t = time.monotonic()
        out = rows.rag.judge(judge, metrics=["relevance"], errors="ignore", progress=False)
        table.append({"limit": "dripped reply (40 ms/byte), timeout=2", "requests": server.requests_received,
                      "measured": f"call ended after {time.monotonic() - t:.2f} s", "outcome": out.loc[0, "judge_error"]})
    # surrogate rows
    bad = make_rows(10, seed=3, bad=0.3)
    n_bad = int(bad["answer"].map(lambda a: "\ud800" in a).sum())
    with LocalOpenAIServer() as server:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = bad.rag.judge(LLMJudge("local", base_url=server.base_url, api_key="k", cache=None),
                                metrics=METRICS, progress=False)
        table.append({"limit": f"{n_bad} of 10 rows hold a lone surrogate", "requests": server.requests_received,
                      "measured": f"{int(out['faithfulness'].notna().sum())} rows scored, {int(out['judge_error'].notna().sum())} with judge_error",
                      "outcome": f"{3 * (10 - n_bad)} requests expected (3 per sendable row)"})
    # usage
    for label, prompt, completion in [("10**20", 10**20, 5), ("negative", -3, -1), ("text", "many", "x")]:
        with tempfile.TemporaryDirectory() as tmp, LocalOpenAIServer() as server:
            server.usage_next(1000, prompt_tokens=prompt, completion_tokens=completion)
            rows3 = make_rows(3)
            judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=tmp)
            rows3.rag.judge(judge, metrics=METRICS, progress=False)
            first = server.requests_received
            server.reset_counts()
            again = LLMJudge("local", base_url=server.base_url, api_key="k", cache=tmp)
            rows3.rag.judge(again, metrics=METRICS, progress=False)
            table.append({"limit": f"usage {label}", "requests": first,
                          "measured": f"usage_unreported={judge.last_run.usage_unreported}; warm re-run: "
                                      f"{server.requests_received} requests, {again.last_run.cache_invalid} invalid",
                          "outcome": "finished"})
            judge.close()
            again.close()
    # claims cap
    def many(body):
        if "raglab_claims" in json.dumps(body.get("response_format")) and "Bridge 1 opened" in json.dumps(body["messages"]):
            return json.dumps({"claims": [f"Fact {k}." for k in range(300)]})
        return rule_based_reply(body)

    with LocalOpenAIServer(many) as server:
        rows3 = make_rows(3)
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None, max_tokens=8192)
        est = judge.estimate(rows3, metrics=["faithfulness"])
        out = rows3.rag.judge(judge, metrics=["faithfulness"], errors="ignore", progress=False)
        table.append({"limit": "300 claims for one of 3 rows (max_claims=50)", "requests": server.requests_received,
                      "measured": f"estimate: {est.calls} expected, +{est.fallback_calls} on fallback, at most {est.max_calls}",
                      "outcome": str(out.loc[1, "judge_error"])[:70]})
    # busy cache
    with tempfile.TemporaryDirectory() as tmp, LocalOpenAIServer() as server:
        path = Path(tmp) / "judge-cache.sqlite3"
        CallCache(path).close()
        holder = subprocess.Popen([sys.executable, "-c", (
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN IMMEDIATE');"
            "c.execute(\"INSERT INTO calls VALUES ('h','k','f','{}',0,0,1,0)\"); print('locked', flush=True); sys.stdin.read()"),
            str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        holder.stdout.readline()
        cache = CallCache(path, busy_timeout=1.0)
        t = time.monotonic()
        try:
            make_rows(1).rag.judge(LLMJudge("local", base_url=server.base_url, api_key="k", cache=cache),
                                   metrics=["relevance"], progress=False)
            message = "no error"
        except CacheBusyError as exc:
            message = str(exc)
        waited = time.monotonic() - t
        holder.stdin.close()
        holder.wait(timeout=10)
        cache.close()
        table.append({"limit": "cache locked by another process (busy_timeout=1)", "requests": server.requests_received,
                      "measured": f"CacheBusyError after {waited:.2f} s; advises deleting: {'delete' in message.lower()}",
                      "outcome": message[:70]})
    # credentials
    password = "Pa55-word-SECRET"
    for route in ["echoed Authorization", "base_url userinfo", "client default_headers"]:
        with tempfile.TemporaryDirectory() as tmp, LocalOpenAIServer() as server, captured() as (lines, caught):
            folder = Path(tmp)
            secrets = [KEY]
            if route == "base_url userinfo":
                judge = LLMJudge("local", base_url=server.base_url.replace("http://", f"http://alice:{password}@"), api_key="none",
                                 cache=folder / "cache")
                secrets = [password]
            elif route == "client default_headers":
                client = AsyncOpenAI(base_url=server.base_url, api_key="placeholder",
                                     default_headers={"api-key": KEY})
                judge = LLMJudge("local", client=client, cache=folder / "cache")
            else:
                judge = LLMJudge("local", base_url=server.base_url, api_key=KEY, cache=folder / "cache")
            server.echo_headers_next(1000)
            out = make_rows(4).rag.judge(judge, metrics=METRICS, errors="ignore", progress=False)
            server.clear_faults()
            server.echo_headers_next(5, status=400)
            errors = []
            try:
                make_rows(5).iloc[4:].rag.judge(judge, metrics=["relevance"], progress=False)
            except Exception as exc:  # the run fails: every row's call was refused
                errors.append(str(exc))
            n = leaks(secrets, folder, out, lines + [str(w.message) for w in caught] + errors + [repr(judge)])
            echoed = sum("request headers" in r for r in out["relevance_reason"].astype(str))
            table.append({"limit": f"credential: {route}", "requests": server.requests_received,
                          "measured": f"{echoed} of 4 replies echoed the headers; secret found {n} times",
                          "outcome": "clean" if n == 0 else "LEAK"})
            judge.close()
    return table


FAULTS = ["500", "429", "malformed", "invalid", "truncate", "echo", "echo400", "usage", "drip"]


def hostile(seed: int) -> dict:
    rng = random.Random(seed)
    n = rng.randint(3, 8)
    rows = make_rows(n, seed=seed, bad=0.15)
    sendable = ~rows["answer"].map(lambda a: "\ud800" in a)
    chosen = rng.sample(FAULTS, k=rng.randint(2, 4))
    with tempfile.TemporaryDirectory() as tmp, LocalOpenAIServer(api_key=KEY) as server, captured() as (lines, caught):
        folder = Path(tmp)
        for fault in chosen:
            k = rng.randint(1, 4)
            if fault == "500":
                server.fail_next(k, status=500)
            elif fault == "429":
                server.fail_next(k, status=429, retry_after=0.01)
            elif fault == "malformed":
                server.malform_next(k)
            elif fault == "invalid":
                server.invalid_next(k)
            elif fault == "truncate":
                server.truncate_next(k)
            elif fault == "echo":
                server.echo_headers_next(k, match=rng.choice(["raglab_relevance", "raglab_verdict"]))
            elif fault == "echo400":
                server.echo_headers_next(k, status=400)
            elif fault == "usage":
                server.usage_next(k, prompt_tokens=rng.choice([10**20, -7, "many", None]))
            else:
                server.drip_next(1, interval=0.03)
        judge = LLMJudge("local", base_url=server.base_url, api_key=KEY, cache=folder / "cache", timeout=1.0,
                         max_retries=3, max_format_retries=2, backoff=0.005, max_concurrency=4)
        out = rows.rag.judge(judge, metrics=METRICS, errors="ignore", progress=False)
        first = server.requests_received
        faulty = server.faults_served
        server.clear_faults()
        judge.close()
        again = LLMJudge("local", base_url=server.base_url, api_key=KEY, cache=folder / "cache")
        fixed = rows.rag.judge(again, metrics=METRICS, errors="ignore", progress=False)
        server.reset_counts()
        third = LLMJudge("local", base_url=server.base_url, api_key=KEY, cache=folder / "cache")
        rows.rag.judge(third, metrics=METRICS, errors="ignore", progress=False)
        warm = server.requests_received
        oracle = rows[sendable].rag.judge(LexicalJudge(), metrics=METRICS, progress=False)
        ordered = out["question_id"].tolist() == rows["question_id"].tolist()
        ok = out["judge_error"].isna()
        agree = bool(np.allclose(out.loc[ok, "faithfulness"].to_numpy(float),
                                 oracle.loc[ok[sendable].to_numpy(), "faithfulness"].to_numpy(float)))
        fixed_agree = bool(np.allclose(fixed.loc[sendable, "faithfulness"].to_numpy(float),
                                       oracle["faithfulness"].to_numpy(float)))
        n_leaks = leaks([KEY], folder, out, lines + [str(w.message) for w in caught] + [repr(judge)])
        for j in (again, third):
            j.close()
    return {"seed": seed, "rows": n, "faults": "+".join(sorted(chosen)), "requests": first, "faulty": faulty,
            "unsendable": int((~sendable).sum()), "failed rows": int((~ok).sum()) - int((~sendable).sum()),
            "ordered": ordered, "agree": agree and fixed_agree, "leaks": n_leaks, "3rd-run requests": warm}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 hostile scenarios instead of 40")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 90)
    print("Part 1: each limit on its own\n")
    print(pd.DataFrame(limits()).to_string(index=False))
    n = 8 if args.quick else 40
    print(f"\nPart 2: {n} seeded hostile scenarios\n")
    table = pd.DataFrame([hostile(seed) for seed in range(n)])
    print(table.to_string(index=False))
    print(f"\n{n} scenarios, {int(table['requests'].sum())} requests ({int(table['faulty'].sum())} faulty); "
          f"rows lost or reordered: {int((~table['ordered']).sum())}; scenarios disagreeing with LexicalJudge: "
          f"{int((~table['agree']).sum())}; secret occurrences: {int(table['leaks'].sum())}; "
          f"requests on a third run: {int(table['3rd-run requests'].sum())}")
    bad = (~table["ordered"]) | (~table["agree"]) | (table["leaks"] > 0) | (table["3rd-run requests"] > 0)
    return 1 if bad.any() else 0


if __name__ == "__main__":
    sys.exit(main())
