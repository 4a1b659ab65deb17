"""Every ``df.rag.<method>`` is the public function of the same name: one parametrised parity test.

pingouin's model (``tests/test_pandas.py``): the accessor only delegates, so calling the method and
calling the function on the same table give equal results. The last test keeps the list complete:
a new accessor method without a parity case fails it.
"""

from __future__ import annotations

import ast
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import raglab  # noqa: E402,F401  (registers df.rag)
from raglab import abstention, datasets, io, plots, runs, widgets  # noqa: E402
from raglab import retrieval as retrieval_module  # noqa: E402
from raglab._meta import get_meta  # noqa: E402
from raglab.judge import LexicalJudge, judge_table  # noqa: E402


def _runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    n = 120
    ids = [f"q{i:03d}" for i in range(n)]
    base = pd.DataFrame({
        "question_id": ids,
        "qtype": np.where(np.arange(n) % 3 == 0, "how", "what"),
        "doc": [f"d{i // 6}" for i in range(n)],
        "hit@5": (rng.random(n) < 0.7).astype(float),
        "faithfulness": rng.random(n),
        "human": (rng.random(n) < 0.75).astype(int),
    })
    base["judge"] = np.where(rng.random(n) < 0.85, base["human"], 1 - base["human"])
    cand = base.assign(**{"hit@5": np.where(rng.random(n) < 0.9, base["hit@5"], 1 - base["hit@5"]),
                          "faithfulness": np.clip(base["faithfulness"] + rng.normal(0, 0.05, n), 0, 1)})
    return base, cand


def _same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs


def _retrieval_rows() -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": ["q1", "q2", "q3", "q4"],
        "retrieved": [["d1", "d2", "d3"], ["d4", "d1"], ["d9"], ["d2", "d5"]],
        "candidates": [["d1", "d2", "d3", "d7"], ["d4", "d1", "d6"], ["d9", "d3"], ["d2", "d5", "d8"]],
        "gold": [["d2"], ["d6"], [], {"d5": 2, "d8": 1}],
        "answer": ["Paris.", "I don't know.", "It is 42.", "Lima."],
    })


def _check_validate():
    rows = _retrieval_rows()
    assert rows.rag.validate(require=["retrieved", "gold"]) is runs.validate(rows, require=["retrieved", "gold"]) is rows


def _check_meta():
    from raglab.datasets import mtrag

    rows = mtrag.load_runs()["gpt-4o"]
    assert rows.rag.meta == get_meta(rows)


def _check_judge():
    rows = datasets.handbook().head(6)
    _same_frame(rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False),
                judge_table(rows, LexicalJudge(), metrics=["faithfulness"], progress=False))


def _check_write(tmp_path):
    rows = _retrieval_rows()
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    rows.rag.write(a)
    io.write_rows(rows, b)
    _same_frame(io.read_rows(a), io.read_rows(b))


def _check_write_trec(tmp_path):
    rows = _retrieval_rows().assign(gold=[{"d2": 1}, {"d6": 2}, {}, {"d5": 2}])
    rows.rag.write_trec(run=tmp_path / "r1", qrels=tmp_path / "q1")
    io.write_trec(rows, tmp_path / "r2", tmp_path / "q2")
    assert (tmp_path / "r1").read_text() == (tmp_path / "r2").read_text()
    assert (tmp_path / "q1").read_text() == (tmp_path / "q2").read_text()


def _check_agreement():
    base, _ = _runs()
    a = base.rag.agreement("human", "judge", positive=1)
    b = runs.agreement(base, "human", "judge", positive=1)
    _same_frame(a.to_frame(), b.to_frame())


def _check_threshold_sweep():
    from raglab import agreement as agreement_module
    from raglab.datasets import mtrag

    rows = mtrag.load_responses("faithfulness")
    human = rows[mtrag.rater_columns(rows)].median(axis=1)
    rows = rows.assign(human_median=human)
    a = rows.rag.threshold_sweep("human_median", "rl_f", human_threshold=3)
    b = runs.threshold_sweep(rows, "human_median", "rl_f", human_threshold=3)
    c = agreement_module.threshold_sweep(rows["human_median"], rows["rl_f"], human_threshold=3)
    _same_frame(a, b)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), c.reset_index(drop=True))
    with pytest.raises(Exception, match="rag.threshold_sweep"):
        rows.rag.threshold_sweep("nope", "rl_f")


def _check_size():
    base, cand = _runs()
    a = base.rag.size(cand, metric="hit@5", mde=0.05)
    b = runs.size(base, cand, metric="hit@5", mde=0.05)
    assert a.n == b.n and repr(a) == repr(b)


def _check_retrieval():
    rows = _retrieval_rows()
    for kwargs in ({"k": [1, 3]}, {"k": 2, "gain": "linear"}, {"k": 3, "no_relevant": "zero"}):
        _same_frame(rows.rag.retrieval(**kwargs), retrieval_module.retrieval(rows, **kwargs))


def _check_depth_gap():
    rows = _retrieval_rows()
    _same_frame(rows.rag.depth_gap(candidates="candidates"), retrieval_module.depth_gap(rows, candidates="candidates"))


def _check_abstention():
    rows = _retrieval_rows()
    a, b = rows.rag.abstention(), abstention.abstention(rows)
    _same_frame(a.to_frame(), b.to_frame())
    _same_frame(a.rows, b.rows)


def _check_explore():
    rows = datasets.handbook()
    a, b = rows.rag.explore(by="qtype"), widgets.explore(rows, by="qtype")
    assert type(a) is type(b) and len(a.children) == len(b.children)
    assert [type(c).__name__ for c in a.children] == [type(c).__name__ for c in b.children]


def _check_explore_pair():
    rows = datasets.handbook()
    cand = rows.assign(human_faithful=1.0, answer=rows["answer"] + " (candidate)")
    kw = {"by": "qtype", "metric": "human_faithful", "flip": "fail->pass"}
    a, b = rows.rag.explore_pair(cand, **kw), widgets.explore_pair(rows, cand, **kw)
    assert type(a) is type(b) and [type(c).__name__ for c in a.children] == [type(c).__name__ for c in b.children]
    assert a.static_html() == b.static_html()


def _check_summary():
    base, _ = _runs()
    kw = {"by": "qtype", "n_resamples": 500}
    _same_frame(base.rag.summary(["hit@5", "faithfulness"], **kw), runs.summary(base, ["hit@5", "faithfulness"], **kw))


def _check_estimate():
    base, _ = _runs()
    rng = np.random.default_rng(0)
    rows = base.assign(human_faithful=np.where(rng.random(len(base)) < 0.5, base["faithfulness"], np.nan))
    kw = {"human": {"faithfulness": "human_faithful"}, "by": "qtype"}
    with pytest.warns(UserWarning) as caught:  # no recorded design, and fewer than MIN_LABELS labels
        a = rows.rag.estimate(**kw)
    assert any("not a recorded random sample" in str(w.message) for w in caught)
    with pytest.warns(UserWarning):
        b = runs.estimate(rows, **kw)
    _same_frame(a, b)


def _check_compare():
    base, cand = _runs()
    kw = {"metrics": ["hit@5", "faithfulness"], "by": "qtype", "n_resamples": 500, "n_permutations": 200}
    _same_frame(base.rag.compare(cand.iloc[::-1], **kw), runs.compare(base, cand.iloc[::-1], **kw))
    kw["units"] = "doc"
    _same_frame(base.rag.compare(cand, **kw), runs.compare(base, cand, **kw))


def _check_gate():
    base, cand = _runs()
    kw = {"metrics": ["hit@5", "faithfulness"], "margin": 0.05, "by": "qtype", "n_resamples": 500,
          "n_permutations": 2_000, "higher_is_better": True}
    a, b = base.rag.gate(cand, **kw), runs.gate(base, cand, **kw)
    assert a.decision == b.decision
    pd.testing.assert_frame_equal(a.table, b.table)


def _check_forest():
    base, cand = _runs()
    table = base.rag.compare(cand, metrics=["hit@5"], by="qtype", n_resamples=300, n_permutations=0)
    fig, (left, right) = plt.subplots(1, 2)
    table.rag.forest(ax=left, margin=0.02)
    plots.forest(table, ax=right, margin=0.02)
    assert [t.get_text() for t in left.get_yticklabels()] == [t.get_text() for t in right.get_yticklabels()]
    assert left.get_xlim() == right.get_xlim()
    plt.close(fig)


def _chunked_rows():
    from raglab import chunks

    table = chunks.fixed({"d": 1000, "e": 400}, size=100)
    gold = [[{"doc_id": "d", "start": 100 * i + (50 if i % 2 else 10), "end": 100 * i + (150 if i % 2 else 60)}]
            for i in range(8)]
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(8)], "gold_spans": gold,
                         "retrieved": [[f"d#{i}", "e#1"] for i in range(8)], "faithfulness": [1.0, 0.0] * 4})
    return rows, table


def _check_boundaries():
    from raglab import boundaries

    rows, table = _chunked_rows()
    _same_frame(rows.rag.boundaries(table), boundaries.boundaries(rows, table))


def _check_expand_neighbors():
    from raglab import boundaries

    rows, table = _chunked_rows()
    _same_frame(rows.rag.expand_neighbors(table, 2), boundaries.expand_neighbors(rows, table, 2))


def _check_boundary_report():
    from raglab import boundaries

    rows, table = _chunked_rows()
    cand = rows.assign(faithfulness=1.0)
    a = rows.rag.boundary_report(cand, ["faithfulness"], table, n_resamples=300)
    b = boundaries.boundary_report(rows, cand, ["faithfulness"], table, n_resamples=300)
    _same_frame(a.table, b.table)
    _same_frame(a.rows, b.rows)


def _check_with_roles():
    from raglab._rowtable import with_roles

    rows = _retrieval_rows().rename(columns={"retrieved": "reranked_ids"})
    _same_frame(rows.rag.with_roles(retrieved="reranked_ids"), with_roles(rows, retrieved="reranked_ids"))


def _check_judge_biases():
    from raglab.agreement import judge_biases

    rng = np.random.default_rng(0)
    words = rng.integers(5, 200, 120)
    human = rng.integers(0, 2, 120)
    rows = pd.DataFrame({"answer": ["word " * int(w) for w in words], "human": human,
                         "judge": human * 0.5 + words / 400 + rng.normal(0, 0.1, 120)})
    a = rows.rag.judge_biases(human="human", judge="judge", warn=False, n_resamples=200)
    b = judge_biases(rows, human="human", judge="judge", warn=False, n_resamples=200)
    _same_frame(a.to_frame(), b.to_frame())


def _check_draw():
    from raglab.sampling import draw

    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(20)], "topic": ["a"] * 12 + ["b"] * 8})
    _same_frame(rows.rag.draw(6, by="topic", seed=3), draw(rows, 6, by="topic", seed=3))


def _check_over_time():
    from raglab.monitor import over_time, simulate_log

    log = simulate_log(5_000, days=4, seed=2)
    kw = {"predictor": "lexical_support", "by": "topic"}
    _same_frame(log.rag.over_time(["faithfulness", "citation_valid"], **kw),
                over_time(log, ["faithfulness", "citation_valid"], **kw))


def _check_monitor():
    from raglab.monitor import monitor, simulate_log

    log = simulate_log(20_000, days=10, seed=2)
    kw = {"reference": 3, "predictor": "lexical_support", "by": "topic"}
    a, b = log.rag.monitor("faithfulness", **kw), monitor(log, "faithfulness", **kw)
    _same_frame(a.table, b.table)
    _same_frame(a.alarms, b.alarms)
    assert a.guarantee == b.guarantee


PARITY = {
    "with_roles": _check_with_roles,
    "boundaries": _check_boundaries,
    "expand_neighbors": _check_expand_neighbors,
    "boundary_report": _check_boundary_report,
    "validate": _check_validate,
    "meta": _check_meta,
    "judge": _check_judge,
    "write": _check_write,
    "write_trec": _check_write_trec,
    "agreement": _check_agreement,
    "size": _check_size,
    "threshold_sweep": _check_threshold_sweep,
    "retrieval": _check_retrieval,
    "depth_gap": _check_depth_gap,
    "abstention": _check_abstention,
    "explore": _check_explore,
    "explore_pair": _check_explore_pair,
    "summary": _check_summary,
    "estimate": _check_estimate,
    "compare": _check_compare,
    "gate": _check_gate,
    "forest": _check_forest,
    "judge_biases": _check_judge_biases,
    "draw": _check_draw,
    "over_time": _check_over_time,
    "monitor": _check_monitor,
}


@pytest.mark.parametrize("name", sorted(PARITY))
def test_accessor_method_equals_its_function(name, tmp_path):
    check = PARITY[name]
    if "tmp_path" in check.__code__.co_varnames[: check.__code__.co_argcount]:
        check(tmp_path)
    else:
        check()


def test_every_accessor_method_has_a_parity_case():
    public = {n for n in dir(pd.DataFrame({"x": [1]}).rag) if not n.startswith("_")}
    assert public == set(PARITY), f"add a parity case for {sorted(public - set(PARITY))}"


def test_every_accessor_method_shows_its_functions_signature_and_docstring():
    import inspect

    from raglab.accessor import METHODS, RagAccessor

    rows = _retrieval_rows()
    assert set(METHODS) | {"meta"} == set(PARITY)
    for name, target in METHODS.items():
        module, _, attr = target.partition(":")
        function = getattr(__import__(module, fromlist=[attr]), attr)
        method = getattr(rows.rag, name)
        expected = list(inspect.signature(function).parameters.values())[1:]  # without the frame
        assert list(inspect.signature(method).parameters.values()) == expected, name
        # bare cross-references are qualified with the target's module (to resolve in the accessor's docs)
        public = __import__(module, fromlist=["_"])
        doc = re.sub(r":(class|func|data|exc):`(\w+)`",
                     lambda m, module=module, public=public: (
                         f":{m[1]}:`~{module}.{m[2]}`" if hasattr(public, m[2]) else m[0]),
                     inspect.getdoc(function))
        assert doc in method.__doc__, name
        assert method.__name__ == name
        assert list(inspect.signature(getattr(RagAccessor, name)).parameters)[1:] == [p.name for p in expected]


def test_bare_cross_references_are_qualified_with_the_targets_module():
    doc = pd.DataFrame({"x": [1]}).rag.judge_biases.__doc__
    assert ":class:`~raglab.agreement.JudgeBiasWarning`" in doc
    assert ":class:`JudgeBiasWarning`" not in doc


def test_errors_name_the_accessor_method_and_functions_name_themselves():
    rows = _retrieval_rows()
    with pytest.raises(KeyError, match=r"^rag\.retrieval needs column 'ranked'"):
        rows.rag.retrieval(retrieved="ranked")
    with pytest.raises(KeyError, match=r"^raglab\.retrieval\.retrieval needs column 'ranked'"):
        retrieval_module.retrieval(rows, retrieved="ranked")
    base, cand = _runs()
    with pytest.raises(Exception, match="rag.gate: the runs must answer the same questions"):
        base.rag.gate(cand.iloc[1:], metrics=["hit@5"], margin=0.05)
    with pytest.raises(Exception, match="raglab.runs.gate: the runs must answer the same questions"):
        runs.gate(base, cand.iloc[1:], metrics=["hit@5"], margin=0.05)
    assert "method_name" not in str(__import__("inspect").signature(runs.summary))


def test_roles_set_once_on_the_table_are_used_by_every_method(tmp_path):
    from raglab._rowtable import Roles

    plain = _retrieval_rows()
    rows = plain.rename(columns={"retrieved": "reranked_ids", "question_id": "qid", "gold": "qrels"})
    tagged = rows.rag.with_roles(retrieved="reranked_ids", question_id="qid").rag.with_roles(gold="qrels")
    assert tagged.rag.meta["roles"] == {"question_id": "qid", "retrieved": "reranked_ids", "gold": "qrels"}
    assert "roles" not in get_meta(rows)  # the input is not modified
    expected = plain.rag.retrieval(k=2)
    for scored in (tagged.rag.retrieval(k=2),
                   rows.rag.retrieval(k=2, roles=Roles(retrieved="reranked_ids", question_id="qid", gold="qrels")),
                   rows.rag.retrieval(k=2, retrieved="reranked_ids", question_id="qid", gold="qrels")):
        assert scored["recall@2"].tolist() == pytest.approx(expected["recall@2"].tolist(), nan_ok=True)
    # a keyword of one call wins over the table's roles
    both = tagged.assign(other=[["d2"], ["d4"], ["d9"], ["d5"]])
    assert both.rag.retrieval(k=1, retrieved="other")["hit@1"].tolist()[:2] == [1.0, 0.0]
    # the roles survive a file round trip and reach the paired methods (question_id pairs the runs)
    path = tmp_path / "rows.parquet"
    tagged.rag.write(path)
    back = io.read_rows(path)
    assert back.rag.meta["roles"] == tagged.rag.meta["roles"]
    scores = back.rag.retrieval(k=2)
    table = scores.rag.compare(scores, metrics=["hit@2"], n_resamples=200, n_permutations=0)
    assert table.attrs["raglab"]["comparison"]["on"] == "qid"
    assert scores.rag.summary(["hit@2"], n_resamples=200)["n"].tolist() == [3]


def test_an_unknown_keyword_names_itself_and_the_valid_ones():
    rows = _retrieval_rows()
    with pytest.raises(TypeError, match=r"rag\.retrieval got an unexpected keyword argument 'retreived'; .*'retrieved'"):
        rows.rag.retrieval(retreived="x")
    with pytest.raises(TypeError, match=r"rag\.with_roles got an unexpected keyword argument 'ids'"):
        rows.rag.with_roles(ids="x")
    base, cand = _runs()
    with pytest.raises(TypeError, match=r"rag\.summary got an unexpected keyword argument 'n_permutations'.*'seed'"):
        base.rag.summary(["hit@5"], n_permutations=10)
    with pytest.raises(TypeError, match="must name a column"):
        rows.rag.with_roles(retrieved=3)


def test_resampling_as_one_object_equals_the_keywords():
    from raglab._options import Resampling

    base, cand = _runs()
    kw = {"ci": 0.9, "n_resamples": 300, "seed": 3, "n_permutations": 200}
    fast = Resampling(**kw)
    _same_frame(base.rag.compare(cand, metrics=["faithfulness"], resampling=fast),
                base.rag.compare(cand, metrics=["faithfulness"], **kw))
    _same_frame(runs.summary(base, ["faithfulness"], resampling=fast, method="percentile"),
                runs.summary(base, ["faithfulness"], ci=0.9, n_resamples=300, seed=3, method="percentile"))
    a = runs.gate(base, cand, metrics=["faithfulness"], margin=0.05, resampling=fast)
    b = base.rag.gate(cand, metrics=["faithfulness"], margin=0.05, **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert runs.size(base, cand, metric="hit@5", margin=0.05, resampling=Resampling(ci=0.9)).n == \
        base.rag.size(cand, metric="hit@5", margin=0.05, ci=0.9).n
    # the keyword wins over the object
    assert base.rag.summary(["faithfulness"], resampling=fast, ci=0.8)["level"].tolist() == [0.8]


def test_the_accessor_module_stays_thin():
    # Thin means little code: docstrings (each method's Example) and blank lines do not count.
    path = os.path.join(os.path.dirname(raglab.__file__), "accessor.py")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    docstring_lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node) is not None:
            first = node.body[0]
            docstring_lines.update(range(first.lineno, first.end_lineno + 1))
    code = [line for number, line in enumerate(source.splitlines(), 1)
            if line.strip() and number not in docstring_lines]
    assert len(code) < 400, f"raglab/accessor.py has {len(code)} lines of code; move logic into the pure modules"


def test_warnings_point_at_the_users_line():
    base, cand = _runs()
    with pytest.warns(UserWarning, match="comparing shared questions only") as caught:
        base.rag.compare(cand.iloc[5:], metrics=["hit@5"], how="inner", n_resamples=200, n_permutations=0)
    assert {w.filename for w in caught if "shared questions" in str(w.message)} == {__file__}


def test_a_missing_column_named_by_the_tables_roles_says_so():
    rows = _retrieval_rows().rag.with_roles(retrieved="reranked")
    with pytest.raises(KeyError, match=r"rag\.retrieval needs column 'reranked'.*set by with_roles\(retrieved='reranked'\)"):
        rows.rag.retrieval()


def test_agreement_reads_no_column_role_and_refuses_one():
    base, _ = _runs()
    with pytest.raises(TypeError, match=r"rag\.agreement got an unexpected keyword argument 'question_id'; it takes "
                                        r"the settings \['ci', 'method', 'n_resamples', 'seed'\]"):
        base.rag.agreement("human", "judge", positive=1, question_id="qid")
