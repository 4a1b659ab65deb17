"""Shared test fixtures: paths to bundled and public data, headless plotting, no stray figures."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_DATA = Path(os.environ.get("RAGLAB_SHARED", REPO.parent / "shared")).resolve() / "data"


def shared_path(*parts: str) -> Path:
    """Path inside ../shared/data, or skip the test saying what is missing and how to point at it."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"needs the public dataset file {'/'.join(parts)} from ../shared/data (looked in {SHARED_DATA}); "
            "set RAGLAB_SHARED to the folder holding data/ to run it"
        )
    return path


def trec_eval_output(path: Path) -> dict[tuple[str, str], str]:
    """trec_eval's printed output (``measure \\t qid|all \\t value``): (measure, qid) -> value as printed."""
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out[(measure, qid)] = value
    return out


@pytest.fixture
def trec_dir() -> Path:
    return TEST_DATA / "trec_eval"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")
