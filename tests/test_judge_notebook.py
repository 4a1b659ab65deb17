"""The judge inside a real Jupyter kernel, where an event loop is already running in the cell's thread."""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

CELL = """
import asyncio, pandas as pd, raglab
from raglab.judge import LLMJudge
from raglab.testing import LocalOpenAIServer
asyncio.get_running_loop()  # the kernel's loop is running here: asyncio.run() would fail
rows = pd.DataFrame({"question_id": ["q1", "q2"], "question": ["When?", "Where?"],
                     "answer": ["It opened in 1937. It is blue.", "In San Francisco."],
                     "context": [["It opened in 1937."], ["It is in San Francisco."]]})
with LocalOpenAIServer() as server:
    judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=None)
    scored = rows.rag.judge(judge, metrics=["faithfulness"], progress=True)
print("RESULT", scored["faithfulness"].tolist())
"""


@pytest.mark.slow
def test_judge_runs_in_a_jupyter_kernel():
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(CELL))
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    client.execute()
    outputs = notebook.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "RESULT [0.5, 1.0]" in text
    assert not [o for o in outputs if o.output_type == "error"]
    # tqdm.auto drew a widget (or its text fallback) for the progress bar
    assert any(o.output_type == "display_data" for o in outputs) or "judging" in text
