"""The command line CI trusts: exit codes, closed pipes, file errors that name the file, `raglab score`."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab.cli import main

PY = sys.executable


def _rows(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    ids = [f"q{i:02d}" for i in range(n)]
    retrieved = [[f"d{j}" for j in rng.permutation(8)[:5]] for _ in range(n)]
    gold = [{f"d{j}": int(rng.integers(0, 3)) for j in rng.permutation(8)[:2]} for _ in range(n)]
    return pd.DataFrame({"question_id": ids, "retrieved": retrieved, "gold": gold})


def test_python_dash_m_raglab_runs_the_command_line():
    done = subprocess.run([PY, "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("1376 questions per run")


def test_a_closed_pipe_is_not_an_error():
    child = subprocess.Popen([PY, "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the reader is gone before the first line is written, as with `| head -0`
    stderr = child.stderr.read().decode()
    assert child.wait() == 0, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr


def test_a_dependency_that_fails_to_import_exits_4_with_one_line(monkeypatch, capsys):
    def broken(args):
        import raglab_dependency_that_is_not_installed  # noqa: F401  (as a broken environment would fail)

    monkeypatch.setattr("raglab.cli._run_size", broken)
    code = main(["size", "--p", "0.7", "--mde", "0.05"])
    err = capsys.readouterr().err
    assert code == 4
    assert len(err.strip().splitlines()) == 1 and "cannot run: ModuleNotFoundError" in err and "not a gate decision" in err


def test_memory_exhaustion_exits_4_not_1(monkeypatch, capsys):
    def boom(path, **kwargs):
        raise MemoryError("cannot allocate")

    monkeypatch.setattr("raglab.io.read_rows", boom)
    code = main(["gate", "a.jsonl", "b.jsonl", "--metric", "x", "--margin", "0.1"])
    assert code == 4 and "cannot run: MemoryError" in capsys.readouterr().err


def _bad_files(tmp_path):
    good = raglab.write_rows(_rows(), tmp_path / "good.jsonl")
    cut_gz = tmp_path / "cut.jsonl.gz"
    cut_gz.write_bytes(gzip.compress(good.read_bytes())[:-20])
    latin = tmp_path / "latin.csv"
    latin.write_bytes("question_id,x\nq1,caf\xe9\n".encode("latin-1"))
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"question_id": "q1", "x": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text('{"question_id": "q1"}\n{"question_id": \n')
    return {"cut.jsonl.gz": cut_gz, "latin.csv": latin, "deep.jsonl": deep, "folder.jsonl": folder,
            "garbled.jsonl": garbled, "missing.jsonl": tmp_path / "missing.jsonl"}


@pytest.mark.parametrize("name", ["cut.jsonl.gz", "latin.csv", "deep.jsonl", "folder.jsonl", "garbled.jsonl",
                                  "missing.jsonl"])
@pytest.mark.parametrize("command", ["gate", "score"])
def test_every_file_error_names_the_users_file_and_exits_2(tmp_path, capsys, name, command):
    path = str(_bad_files(tmp_path)[name])
    if command == "gate":
        code = main(["gate", path, str(tmp_path / "good.jsonl"), "--metric", "x", "--margin", "0.1"])
    else:
        code = main(["score", path, "-o", str(tmp_path / "out.jsonl")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert name in err and ".tmp-" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_bom_on_a_raglab_csv_reads(tmp_path, capsys):
    path = raglab.write_rows(_rows(), tmp_path / "rows.csv", header=False)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert main(["score", str(path), "-o", str(tmp_path / "out.csv")]) == 0


def test_gate_on_unscored_files_speaks_cli(tmp_path, capsys):
    path = str(raglab.write_rows(_rows(), tmp_path / "rows.jsonl"))
    assert main(["gate", path, path, "--metric", "recall@5", "--margin", "0.02"]) == 2
    err = capsys.readouterr().err
    assert "--metric" in err and "raglab score" in err and "metrics=[" not in err
    assert f"the baseline file {path!r}" in err


def test_writing_to_a_missing_folder_names_the_users_file(tmp_path, capsys):
    path = str(raglab.write_rows(_rows(), tmp_path / "rows.jsonl"))
    assert main(["score", path, "-o", str(tmp_path / "nowhere" / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert "nowhere/out.csv" in err and ".tmp-" not in err


# ---- raglab score ----------------------------------------------------------------------------------


def test_score_a_trec_run_matches_pytrec_eval(trec_dir, tmp_path, capsys):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    out = tmp_path / "scored.csv"
    code = main(["score", "--run", str(trec_dir / "results.test"), "--qrels", str(trec_dir / "qrels.test"),
                 "-o", str(out), "--k", "5,10", "--gain", "linear", "--no-relevant", "zero"])
    assert code == 0
    assert "ndcg@10" in capsys.readouterr().out
    scored = pd.read_csv(out, dtype={"question_id": str})  # plain pandas reads what the CLI wrote
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (trec_dir / "qrels.test").read_text().split("\n"):
        if line.strip():
            q, _, d, g = line.split()[:4]
            qrels[q][d] = int(g)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (trec_dir / "results.test").read_text().split("\n"):
        if line.strip():
            q, _, d, _, s = line.split()[:5]
            run[q][d] = float(s)
    measures = pytrec_eval.RelevanceEvaluator(dict(qrels), {"P.5", "P.10", "recip_rank", "map", "ndcg_cut.10"}).evaluate(
        dict(run))
    qids = scored["question_id"]
    for column, measure in (("precision@5", "P_5"), ("rr", "recip_rank"), ("ap", "map")):
        assert scored[column].tolist() == pytest.approx([measures[q][measure] for q in qids]), column
    assert scored["precision@10"].tolist() == pytest.approx([measures[q]["P_10"] for q in scored["question_id"]])
    assert scored["ndcg@10"].tolist() == pytest.approx([measures[q]["ndcg_cut_10"] for q in scored["question_id"]])


def test_score_a_row_file_then_gate_it(tmp_path, capsys):
    rows = _rows()
    base = raglab.write_rows(rows, tmp_path / "base.parquet")
    assert main(["score", str(base), "-o", str(tmp_path / "base_scored.jsonl"), "-k", "3"]) == 0
    back = raglab.read_rows(tmp_path / "base_scored.jsonl")
    expected = rows.rag.retrieval(k=3)
    assert back["recall@3"].tolist() == pytest.approx(expected["recall@3"].tolist(), nan_ok=True)
    scored = str(tmp_path / "base_scored.jsonl")
    # a run against itself: every difference is 0, a zero-width interval, so review (exit 3), never pass or block
    assert main(["gate", scored, scored, "--metric", "recall@3", "--margin", "0.02"]) == 3
    assert "GateResult" in capsys.readouterr().out


def test_score_with_separate_qrels_and_usage_errors(tmp_path, trec_dir, capsys):
    rows = raglab.read_trec(run=trec_dir / "results.test")[["question_id", "retrieved"]]
    path = raglab.write_rows(rows, tmp_path / "run.jsonl")
    assert main(["score", str(path), "--qrels", str(trec_dir / "qrels.test"), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert main(["score", "-o", str(tmp_path / "o.jsonl")]) == 2
    assert main(["score", "--run", str(trec_dir / "results.test"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "--run needs --qrels" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["score", str(path), "-o", "x.jsonl", "--k", "0"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("how", ["console script", "python -m raglab"])
def test_a_broken_installation_exits_4_before_raglab_imports(tmp_path, how):
    # A sitecustomize that makes `import pandas` fail, as a broken environment would: the console
    # script (raglab_launcher) and `python -m raglab` both exit 4, never 1 ("block").
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Broken:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pandas':\n"
        "            raise ImportError('pandas is broken here')\n"
        "sys.meta_path.insert(0, _Broken())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    if how == "console script":
        command = [PY, "-c", "import sys, raglab_launcher; sys.exit(raglab_launcher.main())", "size", "--p", "0.7",
                   "--mde", "0.05"]
    else:
        command = [PY, "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "cannot start" in done.stderr and "pandas is broken here" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_gate_warnings_speak_flags_and_print_once(monkeypatch, capsys):
    import warnings

    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(30)], "hit": [float(i % 2) for i in range(30)]})

    def read_rows(path, **kwargs):
        warnings.warn("rag.gate (base): some ids differ. Pass how='inner' to compare the shared ones.", stacklevel=1)
        return rows.copy()

    monkeypatch.setattr("raglab.io.read_rows", read_rows)
    main(["gate", "a.jsonl", "b.jsonl", "--metric", "hit", "--margin", "0.1", "--n-resamples", "200"])
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert lines == ["raglab gate: warning: in BASE: some ids differ. Pass --how inner to compare the shared ones."]


def test_score_asks_for_a_metric_that_is_not_a_default(tmp_path, capsys):
    base = raglab.write_rows(_rows(), tmp_path / "base.parquet")
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(base), "-o", str(out), "-k", "3", "--metric", "map", "--metric", "ndcg"]) == 0
    back = raglab.read_rows(out)
    assert {"map@3", "ndcg@3"} <= set(back.columns) and "recall@3" not in back.columns
    assert "map@3" in capsys.readouterr().out
    assert main(["score", str(base), "-o", str(tmp_path / "x.jsonl"), "--metric", "no_such_metric"]) == 2


def test_score_help_offers_the_metric_option(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "--metric M" in capsys.readouterr().out
