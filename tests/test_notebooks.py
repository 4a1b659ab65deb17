"""The notebooks run top to bottom on the bundled data, cleanly, and are committed without outputs."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

# Output that must never be saved in an executed notebook: the gate guessing a metric's direction
# (pass higher_is_better=), a progress bar frozen at 0% (pass progress=False), any Python warning on
# stderr, and the low-agreement warning shown twice (the report already carries it: warn=False).
_FORBIDDEN = {
    "the gate guessed a metric's direction": re.compile(r"guessed from the metric name"),
    "a frozen progress bar": re.compile(r"\b0%\|"),
}
_LOW_AGREEMENT = "this judge should not be trusted (kappa above"


def _text(output: dict) -> str:
    """What an output shows as text (a stream, a traceback, or a display's text/plain)."""
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    return str(output.get("data", {}).get("text/plain", ""))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5, [n.name for n in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path: Path):
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, f"{path.name}: strip outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ends_with_findings_and_next_steps(path: Path):
    # Every notebook concludes: a code cell prints the figures, then "What we found", then "What to do next".
    cells = json.loads(path.read_text())["cells"]
    found, next_steps = ("".join(cell["source"]) for cell in cells[-2:])
    assert [cell["cell_type"] for cell in cells[-2:]] == ["markdown", "markdown"], path.name
    assert found.startswith("## What we found") and next_steps.startswith("## What to do next"), path.name
    assert cells[-3]["cell_type"] == "code", f"{path.name}: print the figures the conclusion quotes right before it"
    assert len(found) > 200 and len(next_steps) > 200, f"{path.name}: the conclusion is too thin"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_cleanly(path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    # The inline backend, as in Jupyter and `make demo`: figures are drawn, so drawing warnings show.
    env = {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute(env=env)
    problems = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        outputs = cell.get("outputs", [])
        for output in outputs:
            text = _text(output)
            if output.get("output_type") == "error":
                problems.append((index, "error", text[-300:]))
            if output.get("output_type") == "stream" and output.get("name") == "stderr" and "Warning" in text:
                problems.append((index, "a warning on stderr", text[:300]))
            problems.extend((index, what, text[:300]) for what, pattern in _FORBIDDEN.items() if pattern.search(text))
        shown = sum(_text(output).count(_LOW_AGREEMENT) for output in outputs)
        if shown > 1:
            problems.append((index, "the low-agreement warning shown twice", ""))
    assert not problems, problems
