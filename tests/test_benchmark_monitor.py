"""Smoke test for benchmarks/monitor.py (issue 22): its row-level cross-check and a tiny run of each part."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_monitor", REPO / "benchmarks" / "monitor.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_monitor"] = module
    spec.loader.exec_module(module)
    return module


def test_the_vectorised_path_is_raglabs_monitor(bench):
    assert bench.cross_check(seeds=1) < 1e-12


def test_no_change_keeps_the_horizon_guarantee_and_a_drop_is_seen(bench, capsys):
    claims = bench.part_a(200)
    assert all(rate <= bound + 0.03 for _, rate, bound in claims)
    delays = dict((name, med) for name, med, _ in bench.part_b(200))
    assert delays["raglab monitor, arl 365 n=2000"] <= 3  # 2,000 judged a day: a 3-point drop in days
    out = capsys.readouterr().out
    assert "A. False alarms" in out and "B. Detection delay" in out


def test_the_sequential_canary_keeps_its_error_under_hourly_looks(bench):
    results = dict((name, rate) for name, rate, _ in bench.part_c(150))
    assert results["sequential wrong pass"] <= 0.025 + 0.03 and results["sequential wrong block"] <= 0.025 + 0.03
    assert results["Tango hourly wrong pass"] > results["sequential wrong pass"]  # looking hourly at a fixed-n gate
