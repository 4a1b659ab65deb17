"""Every way out of `raglab` and its exit code: a decision (0/1/3) only once it was delivered; 2 bad input;
4 anything else (a closed stdout, memory, numpy failing, a bug). Outputs never overwrite inputs, and the
decision log records the files gated by their SHA-256."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab import cli
from raglab.cli import main

PY = sys.executable
FAST = ["--n-resamples", "300", "--n-permutations", "300"]


@pytest.fixture
def runs(tmp_path):
    """A pass (faithfulness barely moves) and a block (hit drops by 20 points) on the same 600 questions.

    600, not 200: faithfulness is a [0, 1] metric, decided by the betting interval, which needs about
    5 / margin questions before any change can pass a margin of 0.02."""
    rng = np.random.default_rng(0)
    ids = [f"q{i:03d}" for i in range(600)]
    faith = rng.random(600)
    hit = (rng.random(600) < 0.8).astype(float)
    base = pd.DataFrame({"question_id": ids, "faithfulness": faith, "hit@5": hit})
    cand = pd.DataFrame({"question_id": ids, "faithfulness": np.clip(faith + rng.normal(0, 0.005, 600), 0, 1),
                         "hit@5": np.where(np.arange(600) % 5 == 0, 0.0, hit)})
    base["quality"], cand["quality"] = base["faithfulness"], cand["faithfulness"]  # a name raglab does not know
    paths = {"base": raglab.write_rows(base, tmp_path / "base.parquet"),
             "cand": raglab.write_rows(cand, tmp_path / "cand.jsonl")}
    paths["sidecar"] = raglab.io.sidecar_path(paths["cand"])
    assert paths["sidecar"].is_file()
    return {k: str(v) for k, v in paths.items()}


def _gate_args(runs, metric="faithfulness", *extra):
    return ["gate", runs["base"], runs["cand"], "--metric", metric, "--margin", "0.02", *FAST, *extra]


def _snapshot(*paths):
    return {p: Path(p).read_bytes() for p in paths}


# ---- outputs never overwrite inputs ----------------------------------------------------------------


@pytest.mark.parametrize("target", ["base", "cand", "sidecar", "base via ..", "cand via symlink", "base hard link"])
def test_json_over_an_input_or_its_sidecar_is_refused_and_the_file_untouched(runs, tmp_path, capsys, target):
    before = _snapshot(runs["base"], runs["cand"], runs["sidecar"])
    if target == "base via ..":
        path = str(tmp_path / "sub" / ".." / "base.parquet")
        (tmp_path / "sub").mkdir()
    elif target == "cand via symlink":
        path = str(tmp_path / "link.json")
        os.symlink(runs["cand"], path)
    elif target == "base hard link":
        path = str(tmp_path / "hard.json")
        os.link(runs["base"], path)
    else:
        path = runs[target]
    code = main(_gate_args(runs, "faithfulness", "--json", path))
    err = capsys.readouterr().err
    assert code == 2, err
    assert _snapshot(runs["base"], runs["cand"], runs["sidecar"]) == before  # byte for byte
    assert err.startswith("raglab gate: error: --json ") and err.count("\n") == 1
    assert repr(path) in err and "refusing to overwrite" in err
    named = runs["base"] if target.startswith("base") else runs["cand"]
    assert repr(named) in err  # both paths are named


@pytest.mark.parametrize("target", ["rows", "rows sidecar", "qrels"])
def test_score_output_over_an_input_is_refused(tmp_path, trec_dir, capsys, target):
    rows = raglab.read_trec(run=trec_dir / "results.test")[["question_id", "retrieved"]]
    rows_path = str(raglab.write_rows(rows, tmp_path / "run.jsonl"))
    qrels = str(tmp_path / "qrels.test")
    with open(qrels, "wb") as fh:
        fh.write((trec_dir / "qrels.test").read_bytes())
    files = [rows_path, rows_path + ".raglab.json", qrels]
    before = _snapshot(*files)
    out = {"rows": rows_path, "rows sidecar": rows_path + ".raglab.json", "qrels": qrels}[target]
    code = main(["score", rows_path, "--qrels", qrels, "-o", out])
    err = capsys.readouterr().err
    assert code == 2 and "refusing to overwrite" in err and repr(out) in err, err
    assert _snapshot(*files) == before


def test_score_output_whose_sidecar_is_an_input_is_refused(tmp_path, capsys):
    # `-o x.csv` also writes x.csv.raglab.json: that must not be the input either
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [["d1"]]})
    odd = tmp_path / "x.csv.raglab.json"
    odd.write_text(rows.to_json(orient="records", lines=True))
    before = odd.read_bytes()
    assert main(["score", str(odd), "--output", str(tmp_path / "x.csv"), "--k", "1"]) == 2
    assert "the sidecar of --output" in capsys.readouterr().err and odd.read_bytes() == before


# ---- the decision log ------------------------------------------------------------------------------


def test_the_decision_log_records_both_files_by_sha256(runs, tmp_path, capsys):
    log_path = tmp_path / "decision.json"
    assert main(_gate_args(runs, "faithfulness", "--json", str(log_path))) == 0
    log = json.loads(log_path.read_text(encoding="utf-8"))
    assert log["decision"] == "pass"
    for side, key in (("baseline", "base"), ("candidate", "cand")):
        record = log["inputs"][side]
        data = Path(runs[key]).read_bytes()
        assert record["path"] == runs[key]
        assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["bytes"] == len(data)
    assert log["inputs"]["baseline"]["sidecar"] is None  # Parquet keeps its metadata inside
    sidecar = log["inputs"]["candidate"]["sidecar"]
    assert sidecar["path"] == runs["sidecar"]
    assert sidecar["sha256"] == hashlib.sha256(Path(runs["sidecar"]).read_bytes()).hexdigest()
    assert set(log["runs"]) == {"base", "cand"}  # with the runs' names and eval sets when attrs carry them
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_a_decision_log_that_cannot_be_written_leaves_the_old_one_whole(runs, tmp_path, monkeypatch, capsys):
    log_path = tmp_path / "decision.json"
    log_path.write_text("previous log\n")

    def half_then_full(self, text, *args, **kwargs):
        with open(self, "w") as fh:
            fh.write(text[: len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr("pathlib.Path.write_text", half_then_full)
    code = main(_gate_args(runs, "faithfulness", "--json", str(log_path)))
    assert code == 4, capsys.readouterr().err  # a full disk is the machine, not the user's input
    assert log_path.read_text() == "previous log\n"  # never half a log
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.parquet", "cand.jsonl", "cand.jsonl.raglab.json",
                                                          "decision.json"]


def test_a_decision_log_in_a_missing_folder_is_exit_2(runs, tmp_path, capsys):
    assert main(_gate_args(runs, "faithfulness", "--json", str(tmp_path / "nowhere" / "d.json"))) == 2
    assert "cannot write the decision log" in capsys.readouterr().err


# ---- a decision that could not be delivered is not a decision ----------------------------------------


def _closed_stdout(command, **kwargs):
    """Run ``command`` with file descriptor 1 closed, as `command >&-` does in a shell."""
    return subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *command], capture_output=False,
                          stderr=subprocess.PIPE, text=True, timeout=120, **kwargs)


LAUNCHER = [PY, "-c", "import sys, raglab_launcher; sys.exit(raglab_launcher.main())"]


@pytest.mark.slow
@pytest.mark.parametrize(("how", "metric"), [("console script", "faithfulness"), ("python -m raglab", "hit@5")])
def test_a_closed_stdout_exits_4_and_the_decision_log_is_still_written(runs, tmp_path, how, metric):
    start = LAUNCHER if how == "console script" else [PY, "-m", "raglab"]
    log_path = tmp_path / "decision.json"
    done = _closed_stdout([*start, *_gate_args(runs, metric, "--json", str(log_path))])
    assert done.returncode == 4, done.stderr  # was 1 ("block") with a traceback
    decision = "pass" if metric == "faithfulness" else "block"
    assert json.loads(log_path.read_text())["decision"] == decision  # written before stdout was used
    lines = [line for line in done.stderr.splitlines() if "warning" not in line]
    assert lines == [f"raglab gate: error: stdout is closed; the decision ({decision}) was not delivered (it is in "
                     f"the decision log {str(log_path)!r}). Exit 4 is not a gate decision."]


@pytest.mark.slow
def test_a_closed_stdout_without_a_log_and_for_size_exits_4(runs):
    done = _closed_stdout([*LAUNCHER, *_gate_args(runs)])
    assert done.returncode == 4 and "no --json log was asked for" in done.stderr, done.stderr
    done = _closed_stdout([PY, "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"])
    assert done.returncode == 4 and done.stderr.strip() == ("raglab size: error: stdout is closed. Exit 4 is not a gate "
                                                           "decision."), done.stderr


@pytest.mark.slow
def test_a_reader_that_closes_the_pipe_keeps_the_decision(runs):
    # `raglab gate ... | head -0` under pipefail: the reader went away, the decision stands (not 0 for a block)
    child = subprocess.Popen([PY, "-m", "raglab", *_gate_args(runs, "hit@5")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr and "error" not in stderr


def test_stdout_gone_in_process_is_exit_4(runs, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", None)  # what Python sets when fd 1 is closed at start
    assert main(_gate_args(runs, "hit@5")) == 4  # a block that nobody saw is not a block
    assert "the decision (block) was not delivered" in capsys.readouterr().err


def test_a_failing_stdout_is_exit_4(runs, monkeypatch, capsys):
    class Full:
        def write(self, text):
            raise OSError(errno.EIO, "Input/output error")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Full())
    assert main(_gate_args(runs)) == 4
    assert "cannot write to stdout: [Errno 5] Input/output error" in capsys.readouterr().err


# ---- the environment failing is exit 4, never a verdict or "bad input" --------------------------------


@pytest.mark.parametrize("failure", [
    MemoryError("Unable to allocate 763. MiB"),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
    OSError(errno.EAGAIN, "Resource temporarily unavailable"),
    np.linalg.LinAlgError("SVD did not converge"),  # a ValueError, yet not the user's input
    SystemError("error return without exception set"),
])
def test_the_environment_failing_exits_4_in_one_line(runs, monkeypatch, capsys, failure):
    def gate(*args, **kwargs):
        raise failure

    monkeypatch.setattr("raglab.accessor.RagAccessor.gate", gate)
    assert main(_gate_args(runs)) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"raglab gate: cannot run: {type(failure).__name__}"), err
    assert "not a gate decision" in err[0]


def test_a_bug_exits_4_with_the_traceback_and_one_closing_line(runs, monkeypatch, capsys):
    def gate(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr("raglab.accessor.RagAccessor.gate", gate)
    assert main(_gate_args(runs)) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert err[-1] == ("raglab gate: internal error: RuntimeError: unexpected (exit 4, not a gate decision); please "
                       "report it with the traceback above")


def test_a_key_error_from_printing_is_a_bug_not_bad_input(runs, monkeypatch, capsys):
    monkeypatch.setattr("raglab.gate.GateResult.__repr__", lambda self: {}["missing"])
    assert main(_gate_args(runs)) == 4
    assert "internal error: KeyError" in capsys.readouterr().err


@pytest.mark.slow
def test_memory_exhausted_in_a_real_process_exits_4(runs):
    # Everything the gate needs is imported, then the address space is capped just above what is in use:
    # 10^8 resamples cannot be allocated (numpy raises MemoryError), deterministically.
    script = textwrap.dedent("""
        import resource, sys
        import pandas, pyarrow.parquet, scipy.stats, raglab, raglab.cli, raglab.gate
        with open("/proc/self/statm") as fh:
            in_use = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (in_use + 200 * 2**20, resource.RLIM_INFINITY))
        sys.exit(raglab.cli.entry())
    """)
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs Linux's /proc")
    # `quality` (a name raglab does not know) is a bootstrap row: its resamples are what cannot be allocated
    args = ["gate", runs["base"], runs["cand"], "--metric", "quality", "--higher-is-better", "quality", "--margin", "0.02",
            "--n-resamples", "100000000"]
    # One OpenBLAS thread: its worker threads allocate buffers on first use, and under the cap OpenBLAS then
    # exit(1)s itself (the supervised console script maps that to 4: test_the_console_script_turns_an_exit_raglab_did_not_choose_into_4); this test is
    # about numpy's MemoryError reaching the exit rule.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([PY, "-c", script, *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 4, done.stderr
    assert "cannot run: MemoryError" in done.stderr and "Traceback" not in done.stderr


def test_a_system_error_while_importing_raglab_exits_4(tmp_path):
    # An extension module failing in its initialisation (seen under a memory limit) raises SystemError.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Broken:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pandas':\n"
        "            raise SystemError('error return without exception set')\n"
        "sys.meta_path.insert(0, _Broken())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([*LAUNCHER, "size", "--p", "0.7", "--mde", "0.05"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 4, done.stderr  # was 1 with a traceback
    assert done.stderr.startswith("raglab: cannot start: SystemError") and len(done.stderr.splitlines()) == 1


# ---- messages name flags, not Python parameters ------------------------------------------------------


def test_every_option_name_in_a_message_is_its_flag():
    # the translation comes from the parser: every option of every subcommand, nothing hand-listed
    parser = cli.build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            flag = max(action.option_strings, key=len)
            text = cli._cli_speak(f"`{action.dest}` is wrong; pass {action.dest}=1", command)
            assert text == f"`{flag}` is wrong; pass {flag} 1", (name, text)


def test_size_errors_name_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["size", "--p", "1.7", "--mde", "0.05"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "`--p` must" in err and "`p`" not in err


def test_gate_warnings_name_flags_not_python(runs, capsys):
    assert main(_gate_args(runs, "quality")) == 0  # which way is better is guessed: the warning says how to state it
    err = capsys.readouterr().err
    assert "--higher-is-better / --lower-is-better" in err
    assert "higher_is_better" not in err and "(CLI:" not in err
    assert "raglab gate: warning: guessed from the metric name" in err  # not "warning: gate: ..."


# ---- raglab score with qrels that judge none of the rows ---------------------------------------------


def test_score_with_qrels_that_match_no_row_is_exit_2(tmp_path, capsys):
    rows = pd.DataFrame({"question_id": ["a1", "a2", "a3", "a4"], "retrieved": [["d1"], ["d2"], ["d3"], ["d4"]]})
    rows_path = raglab.write_rows(rows, tmp_path / "rows.jsonl")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 d{i} 1\n" for i, q in enumerate(["1", "2", "3", "4", "5"])))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(rows_path), "--qrels", str(qrels), "-o", str(out)]) == 2  # was 0, every mean NaN
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(rows_path) in err and str(qrels) in err
    assert "'a1', 'a2', 'a3', ... (4 in all)" in err and "'1', '2', '3', ... (5 in all)" in err
    assert not out.exists()
    run = tmp_path / "run.trec"
    run.write_text("".join(f"a{i} Q0 d{i} 1 1.0 sys\n" for i in range(3)))
    assert main(["score", "--run", str(run), "--qrels", str(qrels), "-o", str(out)]) == 2  # was 0, every score 0
    err = capsys.readouterr().err
    assert f"the run {str(run)!r}" in err and "'a0', 'a1', 'a2'" in err and str(qrels) in err
    assert not out.exists()


# ---- the console script: an exit code raglab did not choose is not a decision ------------------------


def _poisoned(tmp_path, action, module="pandas"):
    """A sitecustomize that runs ``action`` when ``module`` is imported: a native library ending the process."""
    (tmp_path / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "class _Dies:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        f"            {action}\n"
        "sys.meta_path.insert(0, _Dies())\n"
    )
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize(("action", "what"), [
    ("os._exit(1)", "exit 1"),  # as OpenBLAS does: "Memory allocation still failed after 10 retries, giving up."
    ("os.kill(os.getpid(), signal.SIGSEGV)", "signal SIGSEGV"),
    ("os.kill(os.getpid(), signal.SIGKILL)", "signal SIGKILL"),  # the OOM killer
])
def test_the_console_script_turns_an_exit_raglab_did_not_choose_into_4(tmp_path, action, what):
    env = _poisoned(tmp_path, action)
    done = subprocess.run([*LAUNCHER, "size", "--p", "0.7", "--mde", "0.05"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 4, done.stderr  # was 1 ("block") for exit(1)
    assert done.stderr.strip().splitlines()[-1].startswith(f"raglab: the command ended without a result ({what}")


@pytest.mark.slow
def test_the_console_script_passes_decisions_and_usage_errors_through(runs, tmp_path):
    done = subprocess.run([*LAUNCHER, *_gate_args(runs, "hit@5")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout.startswith("GateResult: BLOCK"), done.stderr
    done = subprocess.run([*LAUNCHER, "gate", runs["base"]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "usage: raglab gate" in done.stderr
    # a raglab_launcher.py in the current directory is not what runs (the console script, as pip writes it)
    script, work = tmp_path / "bin" / "raglab", tmp_path / "work"
    script.parent.mkdir()
    work.mkdir()
    script.write_text("import sys\nfrom raglab_launcher import main\nsys.exit(main())\n")
    (work / "raglab_launcher.py").write_text("import sys\nsys.exit(1)\n")
    done = subprocess.run([PY, str(script), "--version"], capture_output=True, text=True, timeout=120, cwd=work)
    assert done.returncode == 0 and done.stdout.startswith("raglab "), done.stderr


def test_a_sys_exit_1_below_the_command_is_not_a_block(runs, monkeypatch, capsys):
    def gate(*args, **kwargs):
        sys.exit(1)

    monkeypatch.setattr("raglab.accessor.RagAccessor.gate", gate)
    assert main(_gate_args(runs)) == 4
    assert "internal error: SystemExit: 1" in capsys.readouterr().err


@pytest.mark.slow
def test_python_dash_m_raglab_is_supervised_too(tmp_path):
    # a library ending the process after raglab's own imports (raglab.cli is imported by the command only)
    env = _poisoned(tmp_path, "os._exit(1)", module="raglab.cli")
    done = subprocess.run([PY, "-m", "raglab", "size", "--p", "0.7", "--mde", "0.05"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 4, done.stderr  # was 1
    assert "the command ended without a result (exit 1" in done.stderr


@pytest.mark.parametrize("cause", [
    MemoryError(),
    RuntimeError("Unknown error: Failed to launch worker thread: Resource temporarily unavailable"),  # pyarrow
])
def test_a_reader_that_calls_memory_trouble_a_bad_file_still_exits_4(runs, monkeypatch, capsys, cause):
    def read_rows(path, **kwargs):
        try:
            raise cause
        except Exception:
            raise raglab.RowTableError(f"{path!r} cannot be read as a parquet file: {cause}") from None

    monkeypatch.setattr("raglab.io.read_rows", read_rows)
    assert main(_gate_args(runs)) == 4  # not 2: the file is fine, the machine is out of memory
    assert "cannot run" in capsys.readouterr().err
