"""A judge run killed with SIGKILL half way resumes from its cache with every completed call kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import REPO

from raglab.judge import CallCache, LexicalJudge, LLMJudge
from raglab.testing import LocalOpenAIServer

N_ROWS = 30
CALLS = 2 * N_ROWS  # faithfulness: claim split + batched verification per row

CHILD = """
import sys
import pandas as pd
import raglab
from raglab.judge import LLMJudge
sys.path.insert(0, {tests!r})
from test_judge_kill import make_rows
judge = LLMJudge("local", base_url=sys.argv[1], api_key="none", cache=sys.argv[2], max_concurrency=2)
make_rows().rag.judge(judge, metrics=["faithfulness"], progress=False)
print("FINISHED", flush=True)
"""


def make_rows() -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(N_ROWS)],
        "answer": [f"Span {i} is {100 + i} metres long. It carries {i % 4 + 2} lanes." for i in range(N_ROWS)],
        "context": [[f"Span {i} is {100 + i} metres long.", "It carries four lanes."] for i in range(N_ROWS)],
    })


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_half_way_then_resume(tmp_path):
    cache_dir = tmp_path / "cache"
    with LocalOpenAIServer(latency=0.05) as server:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(tests=str(REPO / "tests")), server.base_url, str(cache_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while server.requests_received < CALLS // 3:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the child ended or stalled early: {child.communicate()}")
                time.sleep(0.01)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
        assert child.returncode == -signal.SIGKILL
        received_before_kill = server.requests_received

        db = cache_dir / "judge-cache.sqlite3"
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kept = CallCache(db).count()
        # every call the child completed is kept; calls in flight at the kill may be lost (at most 2)
        assert 0 < kept < CALLS
        assert received_before_kill - 2 <= kept <= received_before_kill

        judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=cache_dir, max_concurrency=4)
        resumed = make_rows().rag.judge(judge, metrics=["faithfulness"], progress=False)
        assert judge.last_run.cached == kept
        assert server.requests_received - received_before_kill == CALLS - kept
    expected = make_rows().rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    pd.testing.assert_frame_equal(
        resumed[["faithfulness", "faithfulness_claims", "faithfulness_verdicts"]],
        expected[["faithfulness", "faithfulness_claims", "faithfulness_verdicts"]],
    )
