"""The notebooks run top to bottom on the bundled data, cleanly, and are committed without outputs."""

from __future__ import annotations

import functools
import json
import os
import re
from decimal import Decimal
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


@functools.cache
def _executed(path: Path):
    """The notebook executed top to bottom (once per test session; the tests below only read it)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    # The inline backend, as in Jupyter and `make demo`: figures are drawn, so drawing warnings show.
    env = {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute(env=env)
    return notebook


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_cleanly(path: Path):
    notebook = _executed(path)
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


# ---- every number a conclusion quotes is one the executed notebook printed ------------------------------

# A number: digits with optional thousands separators and decimals, and an optional percent sign. Not part
# of a name (recall@5, f1, chunk500_rerank, notebook 01_...): no letter, digit, "@", "_" or "." around it.
_NUMBER = re.compile(r"(?<![\w@.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?%?(?![\w@])")

# Numbers in "What we found" that are definitions or settings stated by the text, not results the notebook
# computes (so they need not be printed). Keep each entry explained; a result never goes here.
_DEFINITIONS: dict[str, set[str]] = {
    # the size of SQuAD 2.0 dev, taken as the population: a property of the data, not a result
    "01_sizing_the_eval_set.ipynb": {"11873"},
    # the simulation's design (3 metrics x 8 slices, chosen in the cell), not a result
    "03_interval_forests_and_the_gate.ipynb": {"8"},
}


def _numbers(text: str, keep_percent: bool = False) -> set[str]:
    """The numbers in ``text``, normalised: no sign, no thousands separator (and no percent sign unless kept)."""
    found = set()
    for match in _NUMBER.finditer(text):
        number = (match.group(1) + (match.group(2) or "")).replace(",", "")
        found.add(number + "%" if keep_percent and match.group(0).endswith("%") else number)
    return found


def _shown(quoted: str, printed: set[str]) -> bool:
    """Whether a quoted number was printed: as it is, or a percentage printed as a proportion (36.5% as 0.365)."""
    if quoted.rstrip("%") in printed:
        return True
    return quoted.endswith("%") and Decimal(quoted[:-1]) / 100 in {Decimal(p) for p in printed}


def _quoted(markdown: str) -> set[str]:
    """The numbers a conclusion quotes: not in code spans (names), "notebook 02" (a reference) or "SQuAD 2.0"."""
    return _numbers(re.sub(r"`[^`]*`|\bnotebooks? \d+(?:(?:,| and| or) \d+)*|SQuAD 2\.0", " ", markdown), keep_percent=True)


def _found_section(cells) -> str:
    found = next(cell for cell in cells if cell.cell_type == "markdown" and cell.source.startswith("## What we found"))
    return found.source.removeprefix("## What we found")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_found_numbers_are_printed(path: Path):
    # "What we found" quotes results: each must be in the outputs of that very run (a number copied from an
    # older run, or typed by hand, fails here). Timings are never quoted nor checked.
    notebook = _executed(path)
    printed: set[str] = set()
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            printed |= _numbers(_text(output))
    quoted = _quoted(_found_section(notebook.cells))
    missing = sorted((q for q in quoted - _DEFINITIONS.get(path.name, set()) if not _shown(q, printed)),
                     key=lambda q: float(q.rstrip("%")))
    assert not missing, f"{path.name}: 'What we found' quotes numbers no output shows: {missing}"


def test_number_extraction():
    text = "EM fell by 0.029 [-0.037, -0.021]: 1,295 lost (+48%), `k=5`, recall@5 and f1 in notebook 02; 16.7 per 100."
    assert _quoted(text) == {"0.029", "0.037", "0.021", "1295", "48%", "16.7", "100"}
    assert _quoted("on SQuAD 2.0 (notebooks 01 and 03)") == set()
    assert _shown("36.5%", {"0.365"}) and _shown("48%", {"48"}) and not _shown("36.5%", {"0.36"})
    assert _numbers("printed: -1,295 and 2371.5 (+48%)") == {"1295", "2371.5", "48"}
