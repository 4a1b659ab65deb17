"""The judge's progress bar ends at its final count and is closed, also when every row comes from the cache.

In a notebook, tqdm's widget is displayed once when it is made; the text a saved notebook keeps for it
(what static viewers and HTML exports show) must be the final bar, not a frozen "0% 0/36".
"""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
import tqdm.auto
import tqdm.std

import raglab  # noqa: F401  (registers df.rag)
from raglab.judge import JudgeError, LexicalJudge, LLMJudge
from raglab.testing import LocalOpenAIServer


class RecordingBar(tqdm.std.tqdm):
    """A text bar written to a buffer, remembering every bar made and whether it was closed."""

    made: list[RecordingBar] = []

    def __init__(self, *args, **kwargs):
        kwargs["file"] = io.StringIO()
        super().__init__(*args, **kwargs)
        self.closed = False
        RecordingBar.made.append(self)

    def close(self):
        self.closed = True
        super().close()


@pytest.fixture
def bars(monkeypatch):
    RecordingBar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    return RecordingBar.made


def make_rows(n: int = 12) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "question": [f"When did bridge {i} open?" for i in range(n)],
        "answer": [f"Bridge {i} opened in {1900 + i}. It is painted blue." for i in range(n)],
        "context": [[f"Bridge {i} opened to traffic in {1900 + i}."] for i in range(n)],
    })


@pytest.mark.parametrize("repeats", [1, 2])
def test_bar_reaches_its_total_and_closes_on_fresh_and_cached_runs(bars, tmp_path, repeats):
    rows = make_rows()
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=str(tmp_path / "judge.sqlite"),
                         temperature=0.5 if repeats > 1 else 0.0, seed=1 if repeats > 1 else None)
        with judge:
            rows.rag.judge(judge, metrics=["faithfulness"], repeats=repeats)
            assert judge.last_run.calls > 0 and judge.last_run.cached == 0
            rows.rag.judge(judge, metrics=["faithfulness"], repeats=repeats)  # every call from the cache
            assert judge.last_run.calls == 0 and judge.last_run.cached > 0
    assert len(bars) == 2
    for bar in bars:
        assert bar.total == len(rows) * repeats
        assert bar.n == bar.total
        assert bar.closed
        assert f"{bar.total}/{bar.total}" in bar.fp.getvalue()
    assert "cached=0" in bars[0].fp.getvalue()
    assert "calls=0" in bars[1].fp.getvalue()


def test_bar_is_closed_when_the_run_fails(bars):
    rows = make_rows(4)
    judge = LLMJudge("local", base_url="http://127.0.0.1:9/v1", api_key="none", cache=None, max_retries=0,
                     timeout=5)  # nothing listens on port 9 (discard): every call fails
    with judge, pytest.raises(JudgeError):
        rows.rag.judge(judge, metrics=["faithfulness"])
    (bar,) = bars
    assert bar.closed and bar.n == bar.total == 4  # failed rows are done rows: the error says how many failed
    assert "failed=4" in bar.fp.getvalue()


def test_no_bar_without_progress_and_none_for_the_lexical_judge(bars):
    rows = make_rows(3)
    rows.rag.judge(LexicalJudge(), metrics=["faithfulness"])
    assert bars == []
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=None)
        with judge:
            rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    assert len(bars) == 1 and bars[0].disable  # tqdm(disable=True) draws nothing


CELL = """
import pandas as pd, raglab
from raglab.judge import LLMJudge
from raglab.testing import LocalOpenAIServer
rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(7)],
                     "question": [f"When did bridge {i} open?" for i in range(7)],
                     "answer": [f"Bridge {i} opened in {1900 + i}." for i in range(7)],
                     "context": [[f"Bridge {i} opened to traffic in {1900 + i}."] for i in range(7)]})
with LocalOpenAIServer() as server:
    judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=CACHE)
    first = rows.rag.judge(judge, metrics=["faithfulness"])
    again = rows.rag.judge(judge, metrics=["faithfulness"])   # all from the cache
    judge.close()
"""


@pytest.mark.slow
def test_saved_notebook_keeps_the_final_bars(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipywidgets")
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(CELL.replace("CACHE", repr(str(tmp_path / "judge.sqlite")))))
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    outputs = notebook.cells[0].outputs
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o for o in outputs if o.output_type == "display_data"]
    assert len(shown) == 2, outputs
    for output in shown:
        text = output["data"]["text/plain"]
        assert "100%" in text and "7/7" in text, text
        assert "0/7" not in text
        assert "application/vnd.jupyter.widget-view+json" in output["data"]
    # The widget state saved with the notebook holds the final value too.
    state = notebook.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    progress = [m["state"] for m in state.values() if m["model_name"] == "FloatProgressModel"]
    assert len(progress) == 2 and all(p["value"] == 7 and p["max"] == 7 for p in progress), json.dumps(progress)
