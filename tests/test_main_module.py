"""``python -m raglab``: it becomes the console script before importing raglab, so raglab loads once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from raglab._optional import started_as_main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("argv", "expected"), [
    (["python", "-m", "raglab", "gate"], True),
    (["python", "-mraglab"], True),
    (["python", "-X", "importtime", "-W", "ignore", "-m", "raglab"], True),
    (["python", "-I", "-m", "raglab"], True),
    (["python", "-m", "raglab.cli"], False),
    (["python", "-m", "pytest", "-m", "raglab"], False),
    (["python", "-c", "import raglab", "-m", "raglab"], False),
    (["python", "script.py", "-m", "raglab"], False),
    (["python"], False),
])
def test_started_as_main_reads_the_interpreters_arguments(argv, expected):
    assert started_as_main(argv) is expected


@pytest.mark.skipif(os.name != "posix", reason="the console script supervises a child on POSIX only")
def test_python_dash_m_raglab_imports_raglab_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = [line for line in done.stderr.splitlines() if line.rstrip().endswith("raglab.accessor")]
    assert len(loaded) == 1, loaded  # the supervised child only (it was twice: this process, then the child)
    assert "formula" in done.stdout
