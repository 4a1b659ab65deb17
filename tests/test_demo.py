"""`make demo`'s main job runs on the bundled data and prints the gate table."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_prints_the_gate_table():
    # The notebooks are executed by tests/test_notebooks.py; here the rest of the job.
    done = subprocess.run([sys.executable, "-m", "raglab.cli", "demo", "--no-notebooks"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "GateResult: REVIEW" in out  # per-slice rows are inconclusive on the rare question types
    assert "The same gate on chunk500_rerank (without neighbour expansion): BLOCK" in out
    assert "recall@5 overall 5928" in out
    assert "rl_f 0.591" in out and "rb_llm 0.277" in out  # checked against scikit-learn in test_mtrag.py
    assert "3 unscored with a reason" in out
