"""The interval forest (Agg backend): returns the Axes, one row per table row, margins, colours."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers df.rag)
from raglab import stats
from raglab.plots import forest


def _table(gated=False):
    rng = np.random.default_rng(0)
    n = 300
    slices = rng.choice(["a", "b", "c"], n)
    base = {"hit@5": (rng.random(n) < 0.7).astype(float), "latency_ms": rng.gamma(3, 100, n)}
    cand = {"hit@5": np.where(rng.random(n) < 0.9, base["hit@5"], 0.0), "latency_ms": base["latency_ms"] * 0.9}
    if gated:
        return stats.gate(base, cand, margin={"hit@5": 0.02, "latency_ms": 5.0}, slices=slices, n_resamples=500).table
    return stats.compare(base, cand, slices=slices, n_resamples=500)


def _artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_one_row_per_table_row_and_returns_the_axes():
    table = _table()
    ax = forest(table)
    assert ax is plt.gca()
    assert len(_artist(ax, "raglab-intervals").get_segments()) == len(table) == 8
    assert len(_artist(ax, "raglab-estimates").get_offsets()) == len(table)
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["hit@5 [overall]", "hit@5 [a]"]
    assert ax.get_xlabel() == "difference (candidate - baseline)"
    np.testing.assert_allclose(_artist(ax, "raglab-estimates").get_offsets()[:, 0], table["diff"])


def test_draws_on_the_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    out = forest(_table(), ax=right)
    assert out is right and not left.has_data()


def test_margin_lines_per_metric_and_direction():
    table = _table(gated=True)
    ax = forest(table, scale="raw")
    lines = _artist(ax, "raglab-margins").get_segments()
    xs = sorted(seg[0][0] for seg in lines)
    # hit@5 is higher-is-better (line at -0.02); latency is lower-is-better (line at +5).
    assert xs == pytest.approx([-0.02, 5.0])
    zero = [line for line in ax.get_lines() if list(line.get_xdata()) == [0, 0]]
    assert zero, "no reference line at zero"
    assert ax.get_xlabel() == "difference (candidate - baseline)"


def test_margin_scale_puts_every_margin_at_minus_one_and_better_to_the_right():
    table = _table(gated=True)
    ax = forest(table)  # auto: two metrics in different units, both with margins
    assert ax.get_xlabel().startswith("improvement / margin")
    xs = [seg[0][0] for seg in _artist(ax, "raglab-margins").get_segments()]
    assert xs == pytest.approx([-1.0, -1.0])
    sign = np.where(table["higher_is_better"], 1.0, -1.0)
    expected = table["diff"].to_numpy() * sign / table["margin"].to_numpy()
    np.testing.assert_allclose(_artist(ax, "raglab-estimates").get_offsets()[:, 0], expected)
    # latency fell (good): drawn right of zero; each interval drawn low < high after the flip
    latency = (table["metric"] == "latency_ms").to_numpy()
    assert (expected[latency] > 0).all()
    for segment in _artist(ax, "raglab-intervals").get_segments():
        assert segment[0][0] <= segment[1][0]
    with pytest.raises(ValueError, match=r"needs a positive margin for every metric; none for \['latency_ms'\]"):
        forest(_table(), margin={"hit@5": 0.02}, scale="margin")
    with pytest.raises(ValueError, match=r"`scale` must be one of \['auto', 'raw', 'margin'\]"):
        forest(table, scale="log")


def test_explicit_margin_overrides_and_validates():
    table = _table()
    ax = forest(table, margin={"hit@5": 0.05})
    xs = [seg[0][0] for seg in _artist(ax, "raglab-margins").get_segments()]
    assert xs == pytest.approx([-0.05])
    with pytest.raises(ValueError, match=r"names metrics that are not in the table: \['ndcg'\]"):
        forest(table, margin={"ndcg": 0.1})


def test_colours_follow_the_decisions():
    table = _table(gated=True)
    ax = forest(table)
    colours = _artist(ax, "raglab-intervals").get_colors()
    from raglab._results import DECISION_COLOURS

    expected = DECISION_COLOURS  # the one palette of tables and plots
    assert stats._COLOURS is DECISION_COLOURS
    for colour, decision in zip(colours, table["decision"]):
        assert mcolors.to_hex(colour) == expected[decision]
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= set(table["decision"])


def test_kwargs_reach_the_points():
    ax = forest(_table(), marker="s", s=80)
    sizes = _artist(ax, "raglab-estimates").get_sizes()
    assert (sizes == 80).all()


def test_accessor_and_bad_tables():
    table = _table()
    ax = table.rag.forest(margin=0.02)
    assert len(_artist(ax, "raglab-intervals").get_segments()) == len(table)
    with pytest.raises(ValueError, match=r"needs a compare or gate table .* missing \['diff', 'low', 'high'\]"):
        forest(pd.DataFrame({"metric": ["a"], "slice": ["overall"]}))
    with pytest.raises(TypeError, match="got list"):
        forest([1, 2])


def test_rows_without_an_interval_keep_their_label():
    base = pd.DataFrame({"question_id": list("abcd"), "t": ["x", "x", "y", "y"], "s": [0.1, 0.2, np.nan, np.nan]})
    table = base.rag.compare(base.assign(s=[0.3, 0.1, 0.5, 0.6]), metrics=["s"], by="t", n_resamples=100)
    ax = forest(table)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["s [overall]", "s [x]", "s [y]"]


# ---- confusion heatmap and power curves -------------------------------------------------------------


def _seed_report():
    from raglab import agreement

    human = [1] * 150 + [0] * 50
    judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    return human, judge, agreement.report(human, judge, positive=1, warn=False)


def test_confusion_heatmap_annotates_counts_and_row_shares():
    from sklearn.metrics import confusion_matrix

    from raglab import plots

    human, judge, rep = _seed_report()
    labels = list(rep.confusion.index)
    expected = confusion_matrix(human, judge, labels=labels)  # people in rows, judge in columns
    ax = plots.confusion_heatmap(rep)
    texts = [t.get_text() for t in ax.texts]
    assert texts == [str(v) for v in expected.ravel()]
    ax = plots.confusion_heatmap(rep, normalize="rows", ax=plt.figure().gca())
    shares = expected / expected.sum(axis=1, keepdims=True)
    texts = [t.get_text() for t in ax.texts]
    assert texts == [f"{s:.2f}\n({c})" for s, c in zip(shares.ravel(), expected.ravel())]
    assert ax.get_ylabel() == "people" and ax.get_xlabel() == "judge"


def test_confusion_heatmap_bad_input():
    from raglab import plots

    _, _, rep = _seed_report()
    with pytest.raises(ValueError, match=r"The value for `normalize` must be one of \[None, 'rows', 'all'\]"):
        plots.confusion_heatmap(rep, normalize="cols")
    with pytest.raises(TypeError, match="square DataFrame"):
        plots.confusion_heatmap(pd.DataFrame({"a": [1, 2]}))


def test_power_curve_marks_the_questions_needed():
    from raglab import plots, sizing

    design = {"paired": True, "discordance": 0.12}
    ax = plots.power_curve([0.02, 0.04], **design)
    lines = ax.get_lines()
    markers = [line for line in lines if line.get_marker() == "o"]
    assert len(markers) == 2
    for line, mde in zip(markers, [0.02, 0.04]):
        (x,), (y,) = line.get_data()
        assert x == sizing.questions_needed(mde, **design)
        assert y >= 0.8 and sizing.power(x - 1, mde, **design) < 0.8  # the smallest n reaching the target
    assert ax.get_xscale() == "log"


def _heatmap_note(ax):
    from matplotlib.offsetbox import AnchoredText

    (note,) = [a for a in ax.artists if isinstance(a, AnchoredText) and a.get_gid() == "raglab-heatmap-note"]
    return note.txt._text.get_text()


def test_confusion_heatmap_reads_pass_fail_with_judge_n_kappa_and_miss_cell():
    from matplotlib.patches import Rectangle

    from raglab import agreement, plots

    human = [1] * 150 + [0] * 50
    judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    rep = agreement.report(human, judge, positive=1, warn=False, names=("people", "rl_f"))
    ax = plots.confusion_heatmap(rep, normalize="rows", ax=plt.figure().gca())
    # rows and columns follow rep.confusion (positive first here): ticks read pass/fail, not 1/0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pass", "fail"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pass", "fail"]
    assert all(t.get_rotation() == 0 for t in ax.get_yticklabels())
    assert ax.get_xlabel() == "judge: rl_f" and ax.get_title() == "rl_f: share of each human label"
    note = _heatmap_note(ax)
    assert note.startswith(f"n = 200, kappa = {rep.kappa:.2f} [{rep.kappa_low:.2f}, {rep.kappa_high:.2f}]")
    assert f"miss rate {rep.miss_rate:.2f}" in note
    # the miss-rate cell (people fail = row 1, judge pass = column 0) is outlined, thicker than the grid
    (cell,) = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "raglab-miss-cell"]
    assert cell.get_xy() == (0, 1) and (cell.get_width(), cell.get_height()) == (1, 1)
    assert cell.get_linewidth() >= 3 > 4 * ax.collections[0].get_linewidth()[0]
    assert ax.texts[2].get_text() == f"{22 / 50:.2f}\n(22)"  # the outlined cell holds the miss rate


def test_confusion_heatmap_boolean_and_text_labels():
    from raglab import agreement, plots

    rep = agreement.report([True, True, False, False], [True, False, True, False], positive=True, warn=False)
    ax = plots.confusion_heatmap(rep, ax=plt.figure().gca())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pass", "fail"]
    assert ax.get_xlabel() == "judge" and ax.get_title() == "counts"
    rep = agreement.report(["ok", "bad", "meh", "ok"], ["ok", "bad", "ok", "meh"], warn=False)
    ax = plots.confusion_heatmap(rep, ax=plt.figure().gca())
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(v) for v in rep.confusion.index]
    assert not [p for p in ax.patches if p.get_gid() == "raglab-miss-cell"]  # no pass label: no miss rate
    assert "miss rate" not in _heatmap_note(ax) and _heatmap_note(ax).startswith("n = 4, kappa = ")
    ax = plots.confusion_heatmap(pd.DataFrame([[3, 1], [2, 4]], index=["a", "b"], columns=["a", "b"]),
                                 ax=plt.figure().gca())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"] and not ax.artists


def test_confusion_heatmap_panels_share_one_colour_scale():
    from raglab import agreement, plots

    _, _, wide = _seed_report()
    narrow = agreement.report([1] * 10 + [0] * 10, [1] * 9 + [0] + [1] * 2 + [0] * 8, positive=1, warn=False)
    for normalize in ("rows", "all"):
        fig, axes = plt.subplots(1, 2)
        plots.confusion_heatmap(wide, normalize=normalize, ax=axes[0])
        plots.confusion_heatmap(narrow, normalize=normalize, ax=axes[1])
        assert [ax.collections[0].get_clim() for ax in axes] == [(0, 1), (0, 1)]
    ax = plots.confusion_heatmap(narrow, vmax=200, ax=plt.figure().gca())  # counts: share by passing vmax
    assert ax.collections[0].get_clim() == (0, 200)


def _display_points(ax, line):
    return ax.transData.transform(np.column_stack(line.get_data()))


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_power_curve_legend_clear_of_curves_round_ticks_and_design(style):
    from raglab import plots, sizing

    with plt.style.context(style):
        fig, ax = plt.subplots(figsize=(7, 4))
        plots.power_curve([0.02, 0.03, 0.05], paired=True, discordance=0.12, ax=ax)
        fig.canvas.draw()
        legend = ax.get_legend()
        box = legend.get_window_extent()
        for line in ax.get_lines():
            points = _display_points(ax, line)
            inside = (box.x0 <= points[:, 0]) & (points[:, 0] <= box.x1) & (box.y0 <= points[:, 1]) & (points[:, 1] <= box.y1)
            assert not inside.any(), line.get_label()
        assert box.x0 > ax.get_window_extent().x1  # outside, to the right
        title = legend.get_title().get_text()
        assert title == "paired, discordance 0.12\nalpha 0.05 (two-sided), power target 0.8"
        labels = [t.get_text() for t in legend.get_texts()]
        assert labels[0] == f"change of 0.02: {sizing.questions_needed(0.02, paired=True, discordance=0.12):,} questions"
        low, high = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if low <= t <= high]
        assert ticks == [20, 50, 100, 200, 500, 1000, 2000]
        shown = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
        assert shown == ["20", "50", "100", "200", "500", "1,000", "2,000"]
        assert not any(t.get_text() for t in ax.xaxis.get_minorticklabels())
        # curves take the style's colour cycle; the target line is in the style's text colour
        cycle = [c["color"] for c in plt.rcParams["axes.prop_cycle"]][:3]
        curves = [line for line in ax.get_lines() if line.get_marker() in ("None", "", None) and len(line.get_xdata()) > 2]
        assert [mcolors.to_hex(line.get_color()) for line in curves] == [mcolors.to_hex(c) for c in cycle]
        (target,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert mcolors.to_rgb(target.get_color()) == mcolors.to_rgb(plt.rcParams["text.color"])
        assert list(target.get_ydata()) == [0.8, 0.8]
        plt.close(fig)


def test_power_curve_unpaired_design_and_wide_range_ticks():
    from raglab import plots

    ax = plots.power_curve(0.05, p=0.7, alpha=0.01, target=0.9, n=[10, 100, 1_000, 100_000], ax=plt.figure().gca())
    assert ax.get_legend().get_title().get_text() == "two independent runs, p 0.7\nalpha 0.01 (two-sided), power target 0.9"
    assert ax.get_xlabel() == "questions per run"
    assert list(ax.get_xticks()) == [10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000]


# ---- chunk boundaries ---------------------------------------------------------------------------------


def _segments(ax, gid):
    return [np.asarray(seg) for seg in _artist(ax, gid).get_segments()]


def test_boundary_positions_draws_each_gold_span_in_its_chunk():
    from raglab import chunks, plots

    table = chunks.fixed({"a": 300, "b": 150}, size=100)  # a: [0,100) [100,200) [200,300); b: [0,100) [100,150)
    rows = pd.DataFrame({"gold_spans": [
        [{"doc_id": "a", "start": 10, "end": 60}, {"doc_id": "a", "start": 90, "end": 110}],  # inside; cut
        [{"doc_id": "b", "start": 100, "end": 125}],  # inside the short last chunk: 0 .. 0.5
        [{"doc_id": "a", "start": 150, "end": 300}],  # cut, 1.5 chunks long
        [{"doc_id": "a", "start": 0, "end": 100}],  # exactly one chunk: not cut
        [],
    ]})
    ax = plots.boundary_positions(rows, table)
    assert ax is plt.gca()
    segs = _segments(ax, "raglab-gold-spans")
    drawn = sorted((round(s[0][0], 3), round(s[1][0], 3)) for s in segs)
    assert drawn == [(0.0, 0.5), (0.0, 1.0), (0.1, 0.6), (0.5, 2.0), (0.9, 1.1)]
    # sorted by start in the chunk, top to bottom; cut spans red, the others blue
    ys = {(round(s[0][0], 3), round(s[1][0], 3)): s[0][1] for s in segs}
    assert ys[(0.0, 0.5)] > ys[(0.1, 0.6)] > ys[(0.5, 2.0)] > ys[(0.9, 1.1)]
    colours = [mcolors.to_hex(c) for c in _artist(ax, "raglab-gold-spans").get_colors()]
    by_span = dict(zip([(round(s[0][0], 3), round(s[1][0], 3)) for s in segs], colours))
    from raglab._results import DECISION_COLOURS

    assert {k for k, c in by_span.items() if c == DECISION_COLOURS["block"]} == {(0.5, 2.0), (0.9, 1.1)}
    assert sorted(seg[0][0] for seg in _segments(ax, "raglab-chunk-edges")) == [0.0, 1.0]
    assert ax.get_title() == "5 gold spans in 4 questions: 2 cut by a chunk boundary (40%)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["inside one chunk (3)", "cut (2)"]


def test_boundary_positions_agrees_with_boundaries_on_clapnq():
    from raglab import plots
    from raglab.boundaries import boundaries
    from raglab.datasets import clapnq

    run, table = clapnq.load_run(256), clapnq.load_chunks(256)
    fig, (left, right) = plt.subplots(1, 2)
    ax = plots.boundary_positions(run, table, ax=right, linewidth=0.5)
    assert ax is right and not left.has_data()
    meta = boundaries(run, table).attrs["raglab"]["boundaries"]
    n, n_cut = meta["n_gold_spans"], meta["n_gold_spans_cut"]
    segs = _segments(ax, "raglab-gold-spans")
    assert len(segs) == n == 893
    assert sum(seg[1][0] > 1 for seg in segs) == n_cut  # chunks tile each passage: cut <=> ends past its chunk
    assert ax.get_title().startswith(f"{n} gold spans in 299 questions: {n_cut} cut")
    assert (_artist(ax, "raglab-gold-spans").get_linewidths() == 0.5).all()
    plt.close(fig)


def test_boundary_positions_counts_spans_outside_the_table_and_checks_input():
    from raglab import chunks, plots

    table = chunks.from_spans([{"doc_id": "a", "start": 0, "end": 50}, {"doc_id": "a", "start": 60, "end": 100}])
    rows = pd.DataFrame({"gold_spans": [[{"doc_id": "a", "start": 52, "end": 58}], [{"doc_id": "z", "start": 0, "end": 5}],
                                        [{"doc_id": "a", "start": 70, "end": 80}]]})
    with pytest.warns(UserWarning, match="the chunk table does not have"):
        ax = plots.boundary_positions(rows, table, ax=plt.figure().gca())
    assert len(_segments(ax, "raglab-gold-spans")) == 1
    assert ax.get_title() == ("3 gold spans in 3 questions: 2 cut by a chunk boundary (67%); "
                              "2 start in no chunk (not drawn)")
    with pytest.raises(Exception, match="gold_spans"):
        plots.boundary_positions(pd.DataFrame({"x": [1]}), table)


def _boundary_report():
    from raglab import chunks
    from raglab.boundaries import boundary_report

    table = chunks.fixed({"d": 4000}, size=100)
    rng = np.random.default_rng(1)
    n = 40
    cut = np.arange(n) % 2 == 1
    gold = [[{"doc_id": "d", "start": 100 * i + (50 if c else 10), "end": 100 * i + (150 if c else 60)}]
            for i, c in enumerate(cut)]
    qid = [f"q{i}" for i in range(n)]
    base = pd.DataFrame({"question_id": qid, "gold_spans": gold,
                         "faithfulness": np.where(cut, rng.random(n) < 0.3, rng.random(n) < 0.8).astype(float),
                         "retrieved": [[f"d#{i}"] for i in range(n)]})
    cand = base.assign(faithfulness=np.where(rng.random(n) < 0.9, 1.0, 0.0))
    return boundary_report(base, cand, ["faithfulness"], table, n_resamples=300)


def test_boundary_metric_draws_both_runs_and_the_paired_interval():
    from raglab import plots

    report = _boundary_report()
    ax = plots.boundary_metric(report, labels=("256 chars", "512 chars"))
    t = report.table
    shown = t[(t["split"] == "boundary_status")]
    assert [x.get_text() for x in ax.get_yticklabels()] == [f"{s} (n={n})" for s, n in zip(shown["slice"], shown["n"])]
    np.testing.assert_allclose(_artist(ax, "raglab-base").get_offsets()[:, 0], shown["base"])
    np.testing.assert_allclose(_artist(ax, "raglab-cand").get_offsets()[:, 0], shown["cand"])
    intervals = _segments(ax, "raglab-intervals")
    np.testing.assert_allclose([s[0][0] for s in intervals], shown["base"] + shown["low"])
    np.testing.assert_allclose([s[1][0] for s in intervals], shown["base"] + shown["high"])
    assert [x.get_text() for x in ax.get_legend().get_texts()] == ["256 chars", "512 chars", "512 chars: paired interval"]
    assert ax.get_title() == "faithfulness by boundary status: 256 chars vs 512 chars (95% paired intervals)"
    assert ax.get_xlabel() == "mean faithfulness"


def test_boundary_metric_other_split_metric_choice_and_errors():
    from raglab import plots

    report = _boundary_report()
    fig, (left, right) = plt.subplots(1, 2)
    ax = plots.boundary_metric(report.table, split="gold_reached", ax=right, s=90)
    assert ax is right and not left.has_data()
    t = report.table
    labels = [x.get_text() for x in ax.get_yticklabels()]
    overall = t[t["slice"] == "overall"].iloc[0]
    reached = t[t["split"] == "gold_reached"]
    assert labels == [f"overall (n={overall['n']})", *[f"{s} (n={n})" for s, n in zip(reached["slice"], reached["n"])]]
    assert (_artist(ax, "raglab-cand").get_sizes() == 90).all()
    plt.close(fig)
    with pytest.raises(ValueError, match=r"`metric` must be one of \['faithfulness'\], but 'recall@5'"):
        plots.boundary_metric(report, metric="recall@5")
    with pytest.raises(ValueError, match=r"`split` must be one of \['boundary_status', 'gold_reached'\]"):
        plots.boundary_metric(report, split="cut")
    with pytest.raises(ValueError, match="missing \\['split'"):
        plots.boundary_metric(t.drop(columns="split"))
    with pytest.raises(TypeError, match="got list"):
        plots.boundary_metric([1])


def test_boundary_metric_keeps_rows_without_an_interval():
    from raglab import plots

    table = pd.DataFrame({"split": "boundary_status", "metric": "m", "slice": ["overall", "cut", "unanswerable"],
                          "n": [10, 9, 1], "base": [0.5, 0.4, 1.0], "cand": [0.7, 0.6, 1.0],
                          "diff": [0.2, 0.2, 0.0], "low": [0.1, 0.05, np.nan], "high": [0.3, 0.35, np.nan]})
    ax = plots.boundary_metric(table, ax=plt.figure().gca())
    assert [x.get_text() for x in ax.get_yticklabels()] == ["overall (n=10)", "cut (n=9)", "unanswerable (n=1)"]
    assert len(_segments(ax, "raglab-intervals")) == 2
    assert len(_artist(ax, "raglab-cand").get_offsets()) == 3
    assert ax.get_title() == "m by boundary status: base vs cand"
