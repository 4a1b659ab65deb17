"""Smoke test for benchmarks/scale.py (issue 23): pandas and a Dask LocalCluster give the same tables."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the dask extra (pip install 'raglab[dask]') is not installed")

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_engines_agree_on_a_small_log(capsys):
    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "benchmarks" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    module.main(["--rows", "60000", "--days", "12", "--chunk-days", "3"])
    out = capsys.readouterr().out
    assert "the engines' tables agree (1e-9): True" in out
    assert " pandas |" in out and "   dask |" in out
