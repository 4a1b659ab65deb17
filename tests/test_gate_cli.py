"""`raglab gate BASE CANDIDATE ...`: exit codes 0 pass, 1 block, 3 review, 2 bad input; the table and the log."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab.cli import main


def _seed_runs():
    # Seed 000: the retriever example that blocks at margin 0.02.
    rng = random.Random(1)
    base = [1.0 if rng.random() < 0.72 else 0.0 for _ in range(300)]
    cand = [b if rng.random() < 0.9 else 1.0 - b for b in base]
    ids = [f"q{i:03d}" for i in range(300)]
    qtype = ["factoid" if i % 3 else "howto" for i in range(300)]
    b = pd.DataFrame({"question_id": ids, "qtype": qtype, "hit@5": base})
    c = pd.DataFrame({"question_id": ids, "qtype": qtype, "hit@5": cand})
    return b, c


@pytest.fixture
def files(tmp_path):
    b, c = _seed_runs()
    rng = np.random.default_rng(0)
    b["latency_ms"] = rng.gamma(3, 100, 300)
    c["latency_ms"] = b["latency_ms"] * 0.9
    b["faithfulness"] = rng.random(300)
    c["faithfulness"] = np.clip(b["faithfulness"] + rng.normal(0.0, 0.01, 300), 0, 1)  # no real change
    paths = {
        "base": tmp_path / "base.jsonl",
        "cand": tmp_path / "cand.parquet",
        "cand_csv": tmp_path / "cand.csv",
    }
    raglab.write_rows(b, paths["base"])
    raglab.write_rows(c.iloc[::-1], paths["cand"])
    raglab.write_rows(c, paths["cand_csv"])
    return {k: str(v) for k, v in paths.items()}


def _gate(files, *args, cand="cand"):
    return main(["gate", files["base"], files[cand], *args])


def test_block_exits_1_and_prints_the_table(files, capsys):
    code = _gate(files, "--metric", "hit@5", "--margin", "0.02")
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("GateResult: BLOCK")
    assert "hit@5" in out and "-0.04333" in out


def test_pass_exits_0(files, capsys):
    assert _gate(files, "--metric", "faithfulness", "--margin", "0.02", cand="cand_csv") == 0
    assert "GateResult: PASS" in capsys.readouterr().out


def test_review_exits_3(tmp_path, capsys):
    # A noisy change with no clear direction: the interval crosses both -margin and 0.
    rng = np.random.default_rng(1)
    ids = [f"q{i}" for i in range(300)]
    score = rng.random(300)
    raglab.write_rows(pd.DataFrame({"question_id": ids, "faithfulness": score}), tmp_path / "b.jsonl")
    raglab.write_rows(pd.DataFrame({"question_id": ids, "faithfulness": (score + rng.normal(0, 0.2, 300)).clip(0, 1)}),
                      tmp_path / "c.jsonl")
    code = main(["gate", str(tmp_path / "b.jsonl"), str(tmp_path / "c.jsonl"), "--metric", "faithfulness",
                 "--margin", "0.005"])
    assert code == 3
    assert capsys.readouterr().out.startswith("GateResult: REVIEW")


def test_lower_is_better_and_margin_for(files, capsys):
    code = _gate(files, "--metric", "latency_ms", "--metric", "faithfulness", "--margin", "0.02",
                 "--margin-for", "latency_ms=1.0")
    assert code == 0  # latency fell 10% (lower is better, known from the name)
    code = _gate(files, "--metric", "latency_ms", "--margin", "1.0", "--higher-is-better", "latency_ms")
    assert code == 1  # declared higher-is-better, the same change is a real drop
    capsys.readouterr()


def test_json_decision_log(files, tmp_path, capsys):
    log_path = tmp_path / "out" / "gate.json"
    log_path.parent.mkdir()
    code = _gate(files, "--metric", "hit@5", "--margin", "0.02", "--by", "qtype", "--json", str(log_path),
                 "--seed", "3", "--n-resamples", "2000", "--adjust", "none")
    log = json.loads(log_path.read_text())
    assert code == 1 and log["decision"] == "block" and log["settings"]["adjust"] is None
    # By default a block needs Holm-adjusted evidence over the 3 rows; p about 0.01 x 3 is not enough.
    assert _gate(files, "--metric", "hit@5", "--margin", "0.02", "--by", "qtype") == 3
    assert log["settings"]["seed"] == 3 and log["settings"]["n_resamples"] == 2000
    assert [r["slice"] for r in log["rows"]] == ["overall", "factoid", "howto"]
    assert "decision log written to" in capsys.readouterr().out


def test_inner_join(files, tmp_path, capsys):
    b, c = _seed_runs()
    partial = tmp_path / "partial.jsonl"
    raglab.write_rows(c.iloc[10:], partial)
    assert main(["gate", files["base"], str(partial), "--metric", "hit@5", "--margin", "0.02"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("raglab gate: error: the runs must answer the same questions")
    assert err.count("\n") == 1
    code = main(["gate", files["base"], str(partial), "--metric", "hit@5", "--margin", "0.02", "--how", "inner"])
    captured = capsys.readouterr()
    assert code in (1, 3) and "comparing shared questions only; 10 question(s) only in base" in captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "recall@5", "--margin", "0.02"], "needs score column 'recall@5'"),
        (["--metric", "hit@5"], r"no margin for \['hit@5'\]"),
        (["--metric", "hit@5", "--margin", "-1"], "must be a finite number >= 0"),
        (["--metric", "hit@5", "--margin", "0.02", "--margin-for", "ndcg=0.1"], "--margin-for names metrics"),
        (["--metric", "hit@5", "--margin", "0.02", "--by", "kind"], "needs column 'kind'"),
        (["--metric", "hit@5", "--margin", "0.02", "--n-resamples", "0"], "`--n-resamples` must be an integer >= 1"),
        (["--metric", "hit@5", "--margin", "0.02", "--ci", "1.5"], "`--ci` must be a confidence level"),
        (["--metric", "hit@5", "--margin", "0.02", "--seed", "-1"], "`--seed` must be a non-negative integer"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(files, capsys, args, message):
    assert _gate(files, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("raglab gate: error: ") and err.count("\n") == 1
    assert pytest.importorskip("re").search(message, err)
    assert not re.search(r"`(n_resamples|ci|seed)`", err)  # flags, never Python names


def test_missing_file_exits_2(files, tmp_path, capsys):
    assert main(["gate", str(tmp_path / "nope.jsonl"), files["cand"], "--metric", "hit@5", "--margin", "0.02"]) == 2
    assert "no row file at" in capsys.readouterr().err


def test_usage_errors_are_argparse_exit_2(files, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["gate", files["base"], files["cand"], "--margin", "0.02"])  # --metric is required
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["gate", files["base"], files["cand"], "--metric", "hit@5", "--margin-for", "oops"])
    assert exc.value.code == 2
    assert "expected METRIC=MARGIN" in capsys.readouterr().err


def test_console_entry_point_runs_in_a_subprocess(files):
    done = subprocess.run(
        [sys.executable, "-m", "raglab.cli", "gate", files["base"], files["cand"], "--metric", "hit@5",
         "--margin", "0.02", "--n-resamples", "2000"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "GateResult: BLOCK" in done.stdout


def test_ids_that_clash_as_text_are_bad_input_not_a_block(tmp_path):
    base = pd.DataFrame({"question_id": pd.Series([1, "1", "2"], dtype=object), "recall@5": [1.0, 0.0, 1.0]})
    cand = pd.DataFrame({"question_id": ["1", "2"], "recall@5": [1.0, 1.0]})
    base.rag.write(tmp_path / "base.jsonl")
    cand.rag.write(tmp_path / "cand.jsonl")
    code = main(["gate", str(tmp_path / "base.jsonl"), str(tmp_path / "cand.jsonl"), "--metric", "recall@5",
                 "--margin", "0.02"])
    assert code == 2  # bad input, not 1 ("block")


def test_an_internal_error_never_exits_with_a_decision_code(monkeypatch, capsys):
    from raglab import cli

    def boom(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(cli, "_run_demo", boom)
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    for action in parser._subparsers._group_actions[0].choices.values():
        if action.prog.endswith("demo"):
            action.set_defaults(run=boom)
    assert cli.main(["demo"]) == cli.INTERNAL_ERROR_EXIT == 4
    assert "internal error" in capsys.readouterr().err
