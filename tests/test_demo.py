"""`make demo`'s main job runs on the bundled data, prints the gate table and what to do next, and
writes the release card, the decision log and the executed notebooks as HTML under ``--out``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

_PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_demo_prints_the_gate_table_and_writes_the_release_card(tmp_path: Path):
    # The notebooks are executed by tests/test_notebooks.py (and below, one small one); here the rest
    # of the job, from a temporary working directory: the default --out is build/ relative to it.
    done = subprocess.run([sys.executable, "-m", "raglab.demo", "--no-notebooks"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    # the prompt's cost is gated with a stated margin (10% of the baseline's mean characters), and blocks
    assert "GateResult: BLOCK (13 pass, 5 review, 9 block" in out
    assert "margin 495 characters = 10% of the baseline's mean, 4,954" in out
    assert "prompt: 4,954 -> 7,325 characters per question (+48%)" in out  # as notebook 03 counts it
    assert "hit@1 is not gated" in out  # the expanded run's first unit is three chunks wide
    assert "The same gate on chunk500_rerank (without neighbour expansion): BLOCK" in out
    assert re.search(r"recall@5 +overall +5928 ", out)
    assert "rl_f 0.591" in out and "rb_llm 0.277" in out  # checked against scikit-learn in test_mtrag.py
    assert "3 unscored with a reason" in out

    card, log = tmp_path / "build" / "release_card.png", tmp_path / "build" / "gate.json"
    assert card.read_bytes()[:8] == _PNG and card.stat().st_size > 20_000
    record = json.loads(log.read_text())
    assert record["decision"] == "block"
    gated = {row["metric"] for row in record["rows"]}
    assert gated == {"recall@5", "coverage@5", "prompt_chars"}, gated
    # the README shows this card (docs/release_card.png, copied from build/): its caption must match
    counts = ", ".join(f"{record['counts'][d]} {d}" for d in ("pass", "review", "block"))
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"![Release card: {record['decision'].upper()} ({counts})](docs/release_card.png)" in readme
    assert str(card.resolve()) in out and str(log.resolve()) in out  # the paths are printed

    # every judge it names is explained
    for words in ("rl_f: MTRAG's RAGAS faithfulness judge", "rb_llm: MTRAG's RB-LLM judge (an LLM judge inspired by RADBench",
                  "lexical tripwire: raglab's LexicalJudge: no model", "local-rules: raglab's claim-level LLMJudge"):
        assert words in out, words
    # what to do after the decision reached (first, with its rows and reasons), and after the other two
    after = out[out.index("Done. Gate decision for the chunking change: BLOCK"):]
    assert after.index("If the gate says BLOCK (as it does here)") < after.index("If the gate says PASS")
    assert "BLOCK  prompt_chars [overall] n=11873: a real change for the worse" in after
    assert "REVIEW recall@5 [other] n=65: inconclusive" in after
    assert "Every BLOCK row is a cost (prompt_chars)" in after
    assert "decide whether the longer prompt is acceptable" in after and "use a cheaper variant" in after
    assert "notebooks/01_sizing_the_eval_set.ipynb" in after
    assert "If the gate says REVIEW" in after and "notebooks/05_regression_post_mortem.ipynb" in after


@pytest.mark.slow
def test_demo_out_option(tmp_path: Path):
    from raglab.cli import main  # `raglab demo --out DIR` passes the folder on

    assert main(["demo", "--no-notebooks", "--out", str(tmp_path / "elsewhere")]) == 0
    assert (tmp_path / "elsewhere" / "release_card.png").read_bytes()[:8] == _PNG
    assert not (tmp_path / "build").exists()


@pytest.mark.slow
def test_notebooks_are_executed_into_html_with_their_figures(tmp_path: Path, capsys):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    from raglab.demo import _notebooks

    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A figure"),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);\nprint('ran here')"),
        nbformat.v4.new_code_cell("from raglab import datasets\ndatasets.handbook().rag.explore()"),
    ])
    nbformat.write(notebook, folder / "small.ipynb")
    assert _notebooks(folder, tmp_path / "build" / "notebooks")
    page = tmp_path / "build" / "notebooks" / "small.html"
    html = page.read_text()
    assert "ran here" in html and "data:image/png;base64" in html  # executed, figure embedded (inline backend)
    # the explorer as its static copy (its controls need a kernel), not an empty widget placeholder
    assert "raglab-explore" in html and "widget-view+json" not in html
    assert str(page.resolve()) in capsys.readouterr().out
