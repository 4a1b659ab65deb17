"""The main job on the bundled data: ``make demo`` / ``raglab demo`` / ``python -m raglab.demo``.

1. Freezes the SQuAD 2.0-derived eval set and stamps three retrieval runs with it.
2. Scores retrieval against gold character spans (unanswerable questions excluded and counted).
3. Runs the release gate of a chunking change against the baseline (retrieval and the prompt's cost in
   characters) and prints the gate table.
4. Validates a judge against people (MTRAG) and runs raglab's claim-level judge on the handbook,
   against the local OpenAI-compatible test server (no key, no network).
5. Executes every notebook in ``notebooks/`` top to bottom into HTML pages (``--no-notebooks`` skips this).

Everything it writes goes under ``--out`` (default ``build``), a path relative to the current
working directory; ``make demo`` runs from the repository root, so there it is ``<repo>/build``:

* ``build/release_card.png``: the release card (:func:`raglab.plots.forest`) of the main gate;
* ``build/gate.json``: that gate's decision log;
* ``build/notebooks/<name>.html``: each notebook, executed, with its figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from raglab import datasets
from raglab._optional import import_optional
from raglab.boundaries import prompt_chars
from raglab.evalset import EvalSet
from raglab.stats import GateResult

__all__ = ["main"]

_RULE = "=" * 100

# The prompt's cost in the main gate: its column, and its margin as a share of the baseline's mean.
PROMPT_METRIC = "prompt_chars"
COST_MARGIN = 0.10


# What to do after each gate decision, printed at the end of the demo.
NEXT_STEPS = {
    "pass": [
        "Ship it: every metric and slice is within its margin.",
        "Keep the decision log (gate.json) with the release: it records every interval, margin and the eval-set stamp.",
        "Keep the lexical tripwire (raglab.tripwires) on production answers to catch what the eval set did not.",
    ],
    "review": [
        "A person decides; nothing is shown to be worse. Read the `reason` column of the REVIEW rows: "
        "'inconclusive' means the interval crosses both -margin and 0, 'only n paired questions' means too few.",
        "For slices too small to decide, add questions of that kind: notebooks/01_sizing_the_eval_set.ipynb "
        "(raglab.sizing.questions_for_gate gives the n for a margin), freeze the larger eval set and re-run the gate.",
        "Look at the questions themselves in a notebook: base.rag.explore_pair(cand, by=<slice column>, "
        "metric=<metric>, flip='pass->fail').",
        "Record the person's decision next to gate.json (who accepted which REVIEW rows, and why).",
    ],
    "block": [
        "Do not ship as it is: at least one metric got worse beyond chance (Holm-adjusted over all rows).",
        "If what blocks is a cost (here prompt_chars, lower is better): decide whether the longer prompt is "
        "acceptable (tokens, latency and money per request). If it is, set that metric's margin to the budget "
        "deliberately, state it, and re-run the gate; do not drop the metric. If it is not, use a cheaper variant: "
        "send each shared neighbour once (notebook 02: +31% instead of +48% for the same recall), or keep the baseline.",
        "If what blocks is quality, open the post-mortem notebook, notebooks/05_regression_post_mortem.ipynb: "
        "raglab.plots.wins_losses(base, cand, metric, by=...) and base.rag.explore_pair(cand, flip='pass->fail') "
        "show where and on which questions it got worse.",
    ],
}

# Every judge the demo names, in the words printed before its numbers.
JUDGES = {
    "rl_f": "MTRAG's RAGAS faithfulness judge (an LLM judge from RAGAS, Es et al. 2024): a score in [0, 1] "
            "that MTRAG's authors computed for every answer and ship in their human-evaluation file; "
            "raglab only reads it",
    "rb_llm": "MTRAG's RB-LLM judge (an LLM judge inspired by RADBench, Kuo et al. 2024): a score in [0, 1], "
              "also computed by MTRAG's authors and only read here",
    "lexical tripwire": "raglab's LexicalJudge: no model; an answer sentence counts as supported when at least "
                        "60% of its content words occur in the context (cheap enough for every production request, "
                        "but blind to meaning)",
    "local-rules": "raglab's claim-level LLMJudge (split the answer into claims, verify each against the context) "
                   "sent through the real openai client to raglab.testing.LocalOpenAIServer on 127.0.0.1, "
                   "which answers with word-overlap rules instead of a model: the plumbing (requests, cache, "
                   "fingerprint) is real, the verdicts are not a model's; point base_url at a real endpoint to use one",
}


def _section(title: str) -> None:
    print(f"\n{_RULE}\n{title}\n{_RULE}")


def _release_card(result: GateResult, out: Path) -> None:
    """Save the main gate's release card (its forest) and decision log under ``out``."""
    plt = import_optional("matplotlib.pyplot", extra="plots", purpose="raglab demo (the release card)")
    from raglab import plots

    out.mkdir(parents=True, exist_ok=True)
    ax = plots.forest(result)
    path = out / "release_card.png"
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(ax.figure)
    log = out / "gate.json"
    result.to_json(log)
    print(f"\nrelease card (the forest of this gate): {path.resolve()}")
    print(f"decision log:                           {log.resolve()}")


def _retrieval_and_gate(evalset: EvalSet, out: Path) -> GateResult:
    _section("Retrieval on SQuAD 2.0 dev: gold as character spans, 5 chunks reach the model")
    scored = {}
    for config in datasets.SQUAD_RUNS:
        run = evalset.stamp(datasets.squad_run(config, with_questions=False))
        scored[config] = run.rag.retrieval(k=[1, 5])
    summary = pd.concat(
        {c: frame.rag.summary(metrics=["hit@1", "recall@5", "coverage@5", "ndcg@5"]) for c, frame in scored.items()},
        names=["config"],
    ).reset_index(level=0)
    columns = ["config", "metric", "n", "n_excluded", "mean", "low", "high", "method"]
    print(summary[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    conventions = scored["chunk1000_bm25"].rag.meta["retrieval"]
    print(f"\nconventions: k = {conventions['k']} ({conventions['k_counts']}); gain {conventions['gain']}; "
          f"unanswerable: {conventions['unanswerable']} (n_excluded above)")

    _section("Release gate: chunk500_rerank_expand vs chunk1000_bm25 (paired by question, per question type)")
    # The candidate sends each retrieved chunk with its neighbours, so the gate also watches the prompt's
    # cost: the characters sent to the model per question, counted as notebook 03 counts them.
    for frame in scored.values():
        frame[PROMPT_METRIC] = prompt_chars(frame)  # each span as sent (shared neighbours twice)
    base, cand = scored["chunk1000_bm25"], scored["chunk500_rerank_expand"]
    cost_margin = round(COST_MARGIN * float(base[PROMPT_METRIC].mean()))
    margins = {"recall@5": 0.02, "coverage@5": 0.02, PROMPT_METRIC: cost_margin}
    print(f"metrics: recall@5 and coverage@5 (higher is better, margin 0.02) and {PROMPT_METRIC}, the characters "
          f"of the retrieved spans sent per question\n  (lower is better, margin {cost_margin} characters = "
          f"{COST_MARGIN:.0%} of the baseline's mean, {base[PROMPT_METRIC].mean():,.0f}).\n"
          "hit@1 is not gated: the candidate's first unit is a chunk with its neighbours, three chunks wide, so its "
          "hit@1 is not comparable\n  (scored on the unexpanded top chunk, notebook 02, hit@1 falls).")
    result = base.rag.gate(
        cand,
        metrics=["recall@5", "coverage@5", PROMPT_METRIC],
        margin=margins,
        higher_is_better={"recall@5": True, "coverage@5": True, PROMPT_METRIC: False},
        by="qtype",
    )
    print(result)
    chars = base[PROMPT_METRIC].mean(), cand[PROMPT_METRIC].mean()
    print(f"prompt: {chars[0]:,.0f} -> {chars[1]:,.0f} characters per question ({100 * (chars[1] / chars[0] - 1):+.0f}%)")
    _release_card(result, out)
    # Without expansion each retrieved unit is one chunk, so hit@1 compares like with like here.
    regression = base.rag.gate(
        scored["chunk500_rerank"], metrics=["recall@5", "coverage@5", "hit@1", PROMPT_METRIC],
        margin={**margins, "hit@1": 0.02}, higher_is_better={"hit@1": True, **{m: m != PROMPT_METRIC for m in margins}},
    )
    print(f"\nThe same gate on chunk500_rerank (without neighbour expansion): {regression.decision.upper()}")
    print(regression.table[["metric", "slice", "n", "diff", "low", "high", "decision"]].to_string(
        index=False, float_format=lambda v: f"{v:+.3f}"))
    return result


def _judges() -> None:
    from raglab.datasets import mtrag
    from raglab.judge import LexicalJudge, LLMJudge
    from raglab.testing import LocalOpenAIServer

    _section("Validating judges against people: MTRAG, 476 answers, faithfulness (pass = rating >= 3)")
    print("People: 2-3 of 7 annotators rated each answer 1-4 (No / Mostly No / Mostly Yes / Yes); an answer passes "
          "when most of its raters gave 3 or 4.\nA judge passes an answer when its score is at least 0.5.")
    for name in ("rl_f", "rb_llm"):
        print(f"  {name}: {JUDGES[name]}.")
    rows = mtrag.load_responses("faithfulness")
    raters = mtrag.rater_columns(rows)
    lines = []
    for judge in ("rl_f", "rb_llm"):
        report = rows.rag.agreement(raters, judge, human_threshold=3, judge_threshold=0.5, warn=False)
        lines.append({"judge": judge, "kappa": f"{report.kappa:.3f} [{report.kappa_low:.3f}, {report.kappa_high:.3f}]",
                      "miss rate": f"{report.miss_rate:.3f}", "attenuation": f"{report.attenuation:.3f}",
                      "pass rate judge / people": f"{report.judge_positive_rate:.3f} / {report.human_positive_rate:.3f}"})
    print(pd.DataFrame(lines).to_string(index=False))

    _section("raglab's judges on the handbook (36 answers with a person's labels)")
    for name in ("lexical tripwire", "local-rules"):
        print(f"  {name}: {JUDGES[name]}.")
    handbook = datasets.handbook()
    lexical = handbook.rag.judge(LexicalJudge(), metrics=["faithfulness"])
    lexical["lexical_pass"] = (lexical["faithfulness"] == 1).where(lexical["faithfulness"].notna())
    report = lexical.rag.agreement("human_faithful", "lexical_pass", positive=True, warn=False)
    print(f"lexical tripwire vs the person: kappa {report.kappa:.3f}, miss rate {report.miss_rate:.3f} "
          f"({len(report.disagreements)} disagreements: contradictions pass word overlap, paraphrases fail it)")
    with tempfile.TemporaryDirectory() as folder, LocalOpenAIServer() as server:
        judge = LLMJudge(model="local-rules", base_url=server.base_url, api_key="not-needed",
                         cache=f"{folder}/judge.sqlite", max_concurrency=8)
        print(judge.estimate(handbook, metrics=["faithfulness"]))
        judged = handbook.rag.judge(judge, metrics=["faithfulness"], progress=False)
        start = time.perf_counter()
        handbook.rag.judge(judge, metrics=["faithfulness"], progress=False)
        rerun = time.perf_counter() - start
    scored = judged["faithfulness"].notna()
    print(f"claim-level judge over the real openai client and a local server: {int(scored.sum())} answers scored, "
          f"{int((~scored).sum())} unscored with a reason (refusals: no claims); re-run from the cache in {rerun:.2f} s")
    print(f"judge fingerprint {judged.rag.meta['judge']['fingerprint'][:16]}... (model, temperature, prompts, schemas)")


def _static(notebook: Any) -> Any:
    """The notebook as a page shows it: widgets by their static HTML copy.

    A widget's controls call back into the kernel, so in a page they would be dead, and drawing them
    needs JavaScript from a CDN; raglab's explorers also carry a text/html copy of the first row.
    """
    widget = "application/vnd.jupyter.widget-view+json"
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if widget in data and "text/html" in data:
                del data[widget]
    notebook.metadata.pop("widgets", None)
    return notebook


def _notebooks(folder: Path, out: Path) -> bool:
    """Execute every notebook in ``folder`` and write it as ``out/<name>.html``; False when one failed."""
    purpose = "raglab demo (running the notebooks)"
    nbclient = import_optional("nbclient", extra="notebooks", purpose=purpose)
    nbformat = import_optional("nbformat", extra="notebooks", purpose=purpose)
    nbconvert = import_optional("nbconvert", extra="notebooks", purpose=purpose)

    _section(f"Notebooks in {folder}, executed into {out}")
    out.mkdir(parents=True, exist_ok=True)
    exporter = nbconvert.HTMLExporter()
    # The kernels draw with the inline backend (figures embedded in the pages), whatever this process uses.
    env = {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    ok = True
    for path in sorted(folder.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        try:
            nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                    extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                    resources={"metadata": {"path": str(folder)}}).execute(env=env)
            status = "ran"
        except Exception as exc:  # report and go on: one notebook must not hide the others
            status = f"FAILED: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160]}"
            ok = False
        page = out / f"{path.stem}.html"
        body, _ = exporter.from_notebook_node(_static(notebook))
        page.write_text(body, encoding="utf-8")
        print(f"  {path.name:45s} {status} ({time.perf_counter() - start:.1f} s) -> {page.resolve()}")
    return ok


def _next_steps(result: GateResult) -> None:
    """What to do after each gate decision, the one just reached first (with its REVIEW or BLOCK rows)."""
    decision = result.decision
    flagged = result.table[result.table["decision"] != "pass"]
    if len(flagged):
        print(f"The rows that are not PASS ({len(flagged)}), with the gate's reason:")
        for row in flagged.itertuples(index=False):
            print(f"  {row.decision.upper():6s} {row.metric} [{row.slice}] n={row.n}: {row.reason}")
    blocking = flagged[flagged["decision"] == "block"]
    if len(blocking):
        costs = blocking[~blocking["higher_is_better"].astype(bool)]
        if len(costs) == len(blocking):
            names = ", ".join(sorted(set(costs["metric"])))
            print(f"Every BLOCK row is a cost ({names}): no quality metric blocks; the candidate costs more "
                  "than its stated margin allows.")
    if decision == "review":
        row = flagged.iloc[0]
        print("To read those questions (in a notebook):\n"
              "  base, cand = (datasets.squad_run(c).rag.retrieval(k=[1, 5]) for c in ('chunk1000_bm25', 'chunk500_rerank_expand'))\n"
              f"  base.rag.explore_pair(cand, by='qtype', metric='{row.metric}', flip='pass->fail')")
    order = [decision] + [d for d in NEXT_STEPS if d != decision]
    for d in order:
        print(f"\nIf the gate says {d.upper()}{' (as it does here)' if d == decision else ''}:")
        for step in NEXT_STEPS[d]:
            print(f"  - {step}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo and return the exit code (0 when every part ran).

    Examples
    --------
    >>> main(["--no-notebooks"])        # doctest: +SKIP
    0
    """
    parser = argparse.ArgumentParser(prog="raglab demo", description=__doc__.splitlines()[0])
    parser.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    parser.add_argument("--out", default="build", type=Path,
                        help="folder for the release card, the decision log and notebooks/*.html "
                             "(default: build, relative to the current directory)")
    args = parser.parse_args(argv)
    out: Path = args.out
    os.environ.setdefault("MPLBACKEND", "Agg")  # for the notebook kernels it starts (a caller's own backend wins)
    # the demo's settings end with it: a caller's pandas options and warning filters are left as they were
    with pd.option_context("display.width", 160), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="raglab")
        return _run(args.no_notebooks, out)


def _run(no_notebooks: bool, out: Path) -> int:
    questions = datasets.squad_questions()
    with tempfile.TemporaryDirectory() as folder:
        EvalSet.freeze(questions, f"{folder}/squad2-dev", version="v1", columns=["article", "qtype", "answerable"])
        evalset = EvalSet.load(f"{folder}/squad2-dev")
    _section("Eval set")
    print(repr(evalset))
    answerable = int(questions["answerable"].sum())
    print(f"{len(questions)} questions: {answerable} answerable, {len(questions) - answerable} unanswerable")

    result = _retrieval_and_gate(evalset, out)
    _judges()
    notebooks_ok = True
    if not no_notebooks:
        # the notebooks are in a source checkout, next to raglab/ (an installed wheel has none)
        folder = Path(__file__).resolve().parents[1] / "notebooks"
        if folder.is_dir():
            notebooks_ok = _notebooks(folder, out / "notebooks")
        else:
            print(f"\nNo notebooks folder at {folder}: they ship with the source checkout, not the wheel.")
    _section(f"Done. Gate decision for the chunking change: {result.decision.upper()}")
    _next_steps(result)
    print(f"\nWritten under {out.resolve()}: release_card.png, gate.json"
          + ("" if no_notebooks else ", notebooks/*.html"))
    return 0 if notebooks_ok else 1


if __name__ == "__main__":
    sys.exit(main())
