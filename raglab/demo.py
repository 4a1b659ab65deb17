"""The main job on the bundled data: ``make demo`` / ``raglab demo`` / ``python -m raglab.demo``.

1. Freezes the SQuAD 2.0-derived eval set and stamps three retrieval runs with it.
2. Scores retrieval against gold character spans (unanswerable questions excluded and counted).
3. Runs the release gate of a chunking change against the baseline and prints the gate table.
4. Validates a judge against people (MTRAG) and runs raglab's claim-level judge on the handbook,
   against the local OpenAI-compatible test server (no key, no network).
5. Executes every notebook in ``notebooks/`` top to bottom (``--no-notebooks`` skips this).
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

import pandas as pd

from raglab import datasets
from raglab._optional import import_optional
from raglab.evalset import EvalSet

__all__ = ["main"]

_RULE = "=" * 100


def _section(title: str) -> None:
    print(f"\n{_RULE}\n{title}\n{_RULE}")


def _retrieval_and_gate(evalset: EvalSet) -> str:
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
    result = scored["chunk1000_bm25"].rag.gate(
        scored["chunk500_rerank_expand"],
        metrics=["recall@5", "coverage@5", "hit@1"],
        margin=0.02,
        by="qtype",
    )
    print(result)
    regression = scored["chunk1000_bm25"].rag.gate(
        scored["chunk500_rerank"], metrics=["recall@5", "coverage@5", "hit@1"], margin=0.02
    )
    print(f"\nThe same gate on chunk500_rerank (without neighbour expansion): {regression.decision.upper()}")
    print(regression.table[["metric", "slice", "n", "diff", "low", "high", "decision"]].to_string(
        index=False, float_format=lambda v: f"{v:+.3f}"))
    return result.decision


def _judges() -> None:
    from raglab.datasets import mtrag
    from raglab.judge import LexicalJudge, LLMJudge
    from raglab.testing import LocalOpenAIServer

    _section("Validating judges against people: MTRAG, 476 answers, faithfulness (pass = rating >= 3)")
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


def _notebooks(folder: Path) -> bool:
    nbclient = import_optional("nbclient", extra="notebooks", purpose="raglab demo (running the notebooks)")
    nbformat = import_optional("nbformat", extra="notebooks", purpose="raglab demo (running the notebooks)")

    _section(f"Notebooks in {folder}")
    paths = sorted(folder.glob("*.ipynb"))
    ok = True
    out_dir = Path(tempfile.mkdtemp(prefix="raglab-notebooks-"))
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        try:
            nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                    extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                    resources={"metadata": {"path": str(folder)}}).execute()
            status = "ran"
        except Exception as exc:  # report and go on: one notebook must not hide the others
            status = f"FAILED: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160]}"
            ok = False
        nbformat.write(notebook, out_dir / path.name)
        print(f"  {path.name:45s} {status} ({time.perf_counter() - start:.1f} s)")
    print(f"executed copies (with outputs) in {out_dir}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo and return the exit code (0 when every part ran).

    Examples
    --------
    >>> main(["--no-notebooks"])        # doctest: +SKIP
    0
    """
    parser = argparse.ArgumentParser(prog="raglab demo", description=__doc__.splitlines()[0])
    parser.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 160)
    os.environ.setdefault("MPLBACKEND", "Agg")
    warnings.filterwarnings("ignore", category=UserWarning, module="raglab")

    questions = datasets.squad_questions()
    with tempfile.TemporaryDirectory() as folder:
        EvalSet.freeze(questions, f"{folder}/squad2-dev", version="v1", columns=["article", "qtype", "answerable"])
        evalset = EvalSet.load(f"{folder}/squad2-dev")
    _section("Eval set")
    print(repr(evalset))
    answerable = int(questions["answerable"].sum())
    print(f"{len(questions)} questions: {answerable} answerable, {len(questions) - answerable} unanswerable")

    decision = _retrieval_and_gate(evalset)
    _judges()
    notebooks_ok = True
    if not args.no_notebooks:
        # the notebooks are in a source checkout, next to raglab/ (an installed wheel has none)
        folder = Path(__file__).resolve().parents[1] / "notebooks"
        if folder.is_dir():
            notebooks_ok = _notebooks(folder)
        else:
            print(f"\nNo notebooks folder at {folder}: they ship with the source checkout, not the wheel.")
    _section(f"Done. Gate decision for the chunking change: {decision.upper()}")
    return 0 if notebooks_ok else 1


if __name__ == "__main__":
    sys.exit(main())
