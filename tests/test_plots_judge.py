"""The judge-threshold sweep and view, and the judge plots on a dark style (Agg).

Oracles: scikit-learn's confusion_matrix, recall_score and cohen_kappa_score at every threshold,
raglab.stats.proportion_interval (Wilson) for the bands, and agreement.report(judge_threshold=t) for
each row, on MTRAG's human ratings with its judges rl_f and rb_llm, and on the handbook judged by
the lexical judge.
"""

from __future__ import annotations

import warnings

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text
from sklearn.metrics import cohen_kappa_score, confusion_matrix, recall_score

import raglab  # noqa: F401  (registers df.rag)
from raglab import agreement, datasets, plots
from raglab.agreement import LabelMismatchError, threshold_sweep
from raglab.agreement.thresholds import SWEEP_COLUMNS
from raglab.datasets import mtrag
from raglab.plots._threshold import judge_thresholds
from raglab.stats import proportion_interval

# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def _sklearn_row(human_pass: np.ndarray, scores: np.ndarray, t: float) -> dict[str, float]:
    """One threshold's statistics from scikit-learn (the oracle), on items with a label and a score."""
    y_true, y_pred = human_pass, scores >= t
    (tp, fn), (fp, tn) = confusion_matrix(y_true, y_pred, labels=[True, False])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined recall / kappa: sklearn warns, we compare NaN
        sens = recall_score(y_true, y_pred, pos_label=True, zero_division=np.nan)
        spec = recall_score(~y_true, ~y_pred, pos_label=True, zero_division=np.nan)
        kappa = cohen_kappa_score(y_true, y_pred, labels=[False, True])
    return {"true_pass": tp, "false_fail": fn, "false_pass": fp, "true_fail": tn, "sensitivity": sens,
            "specificity": spec, "kappa": kappa, "agreement": (tp + tn) / len(y_true)}


def _check_against_sklearn(sweep: pd.DataFrame, human_pass: np.ndarray, scores: np.ndarray) -> int:
    """Every row of the sweep against scikit-learn and the Wilson interval; returns the rows checked."""
    for row in sweep.itertuples(index=False):
        oracle = _sklearn_row(human_pass, scores, row.threshold)
        for key in ("true_pass", "false_fail", "false_pass", "true_fail"):
            assert getattr(row, key) == oracle[key], (row.threshold, key)
        for key in ("sensitivity", "specificity", "kappa", "agreement"):
            np.testing.assert_allclose(getattr(row, key), oracle[key], rtol=0, atol=1e-12, equal_nan=True,
                                       err_msg=f"{key} at {row.threshold}")
        np.testing.assert_allclose(row.miss_rate, 1 - oracle["specificity"], atol=1e-12, equal_nan=True)
        for name, x, n in (("sensitivity", row.true_pass, row.human_positive),
                           ("specificity", row.true_fail, row.human_negative),
                           ("miss_rate", row.false_pass, row.human_negative)):
            if n:
                iv = proportion_interval(int(x), int(n))  # raglab's Wilson interval, one call per row
                np.testing.assert_allclose([getattr(row, f"{name}_low"), getattr(row, f"{name}_high")],
                                           [iv.low, iv.high], atol=1e-12)
            else:
                assert np.isnan(getattr(row, f"{name}_low")) and np.isnan(getattr(row, f"{name}_high"))
    return len(sweep)


def _mtrag():
    return mtrag.load_responses("faithfulness")


# --------------------------------------------------------------------------------------------------
# the sweep against independent oracles
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("judge", ["rl_f", "rb_llm"])
def test_sweep_matches_sklearn_at_every_threshold_on_mtrag(judge):
    rows = _mtrag()
    sweep = threshold_sweep(rows["human_majority"], rows[judge], human_threshold=3)
    assert list(sweep.columns) == list(SWEEP_COLUMNS)
    keep = rows["human_majority"].notna() & rows[judge].notna()
    human_pass = (rows.loc[keep, "human_majority"] >= 3).to_numpy()
    scores = rows.loc[keep, judge].to_numpy(dtype=float)
    # default thresholds: every distinct score, scores a rounding error apart counted once (their
    # smallest): rb_llm holds 0.6 and 0.6000000000000001 (and one more such pair) from upstream means
    distinct = pd.Series(np.unique(scores))
    expected = distinct.groupby(distinct.round(9)).min().to_numpy()
    np.testing.assert_array_equal(sweep["threshold"], expected)
    assert len(distinct) - len(expected) == {"rl_f": 0, "rb_llm": 2}[judge]
    assert (sweep["n"] == keep.sum()).all() and (sweep["n_excluded"] == len(rows) - keep.sum()).all()
    assert sweep["n_excluded"].iloc[0] == 47  # answers whose raters tie on the majority
    assert _check_against_sklearn(sweep, human_pass, scores) == sweep.shape[0] >= 19


def test_sweep_on_the_mean_rating_needs_a_human_threshold_and_matches_sklearn():
    rows = _mtrag()
    with pytest.raises(ValueError, match="human_threshold="):
        threshold_sweep(rows["human_mean"], rows["rl_f"])
    sweep = threshold_sweep(rows["human_mean"], rows["rl_f"], [0.25, 0.5, 0.75, 0.9], human_threshold=3.5)
    assert sweep["n_excluded"].eq(0).all()
    _check_against_sklearn(sweep, (rows["human_mean"] >= 3.5).to_numpy(), rows["rl_f"].to_numpy(dtype=float))


def test_each_row_is_the_report_at_that_threshold():
    rows = _mtrag()
    sweep = threshold_sweep(rows["human_majority"], rows["rl_f"], [0.2, 0.5, 0.8, 1.0], human_threshold=3)
    for row in sweep.itertuples(index=False):
        rep = agreement.report(rows["human_majority"], rows["rl_f"], human_threshold=3,
                               judge_threshold=row.threshold, n_resamples=50, warn=False)
        assert (rep.n, rep.n_excluded) == (row.n, row.n_excluded)
        counts = rep._counts
        assert (counts["true_pass"], counts["false_pass"], counts["true_fail"]) == (
            row.true_pass, row.false_pass, row.true_fail)
        for key in ("sensitivity", "specificity", "miss_rate", "kappa", "agreement", "attenuation",
                    "judge_positive_rate"):
            assert getattr(rep, key) == pytest.approx(getattr(row, key), abs=1e-12), key
        for key in ("sensitivity", "specificity", "miss_rate"):
            iv = rep.intervals[key]
            assert (iv.low, iv.high) == pytest.approx((getattr(row, f"{key}_low"), getattr(row, f"{key}_high")))


def test_sweep_on_the_handbook_with_the_lexical_judge():
    from raglab.judge import LexicalJudge

    judged = datasets.handbook().rag.judge(LexicalJudge(), metrics=["faithfulness"])
    sweep = threshold_sweep(judged["human_faithful"], judged["faithfulness"])
    keep = judged["human_faithful"].notna() & judged["faithfulness"].notna()
    assert sweep["n"].iloc[0] == keep.sum() == 33 and sweep["n_excluded"].iloc[0] == 3  # the three refusals
    np.testing.assert_array_equal(sweep["threshold"], [0.0, 0.5, 1.0])
    _check_against_sklearn(sweep, (judged.loc[keep, "human_faithful"] == 1).to_numpy(),
                           judged.loc[keep, "faithfulness"].to_numpy(dtype=float))
    # at 1.0 it is the notebook's lexical_pass (faithfulness == 1) report
    rep = agreement.report(judged["human_faithful"], judged["faithfulness"], judge_threshold=1.0, warn=False,
                           n_resamples=50)
    assert rep.kappa == pytest.approx(sweep["kappa"].iloc[-1]) and rep.miss_rate == sweep["miss_rate"].iloc[-1]


# --------------------------------------------------------------------------------------------------
# edge cases and errors
# --------------------------------------------------------------------------------------------------


def test_ties_pass_at_the_threshold_and_thresholds_outside_the_scores():
    sweep = threshold_sweep([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.2], [0.1, 0.2, 0.5, 0.50001, 2.0])
    assert sweep["true_pass"].tolist() == [2, 2, 2, 0, 0]  # score >= t: the three 0.5s pass at 0.5
    assert sweep["false_pass"].tolist() == [2, 2, 1, 0, 0]  # the 0.2 passes at 0.2, the 0.5 up to 0.5
    assert sweep["sensitivity"].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert sweep["specificity"].tolist() == [0.0, 0.0, 0.5, 1.0, 1.0]
    # judge passes everything or nothing: chance agreement is not 1 (people use both labels), kappa 0
    assert sweep["kappa"].iloc[[0, -1]].tolist() == [0.0, 0.0]
    # thresholds are sorted and de-duplicated
    assert threshold_sweep([1, 0], [0.3, 0.1], [0.3, 0.1, 0.3])["threshold"].tolist() == [0.1, 0.3]


def test_people_use_one_label_only():
    sweep = threshold_sweep([1, 1, 1], [0.2, 0.5, 0.9])
    assert sweep["human_negative"].eq(0).all()
    assert sweep["specificity"].isna().all() and sweep["miss_rate"].isna().all()
    assert sweep["specificity_low"].isna().all()
    assert sweep["sensitivity"].tolist() == pytest.approx([1.0, 2 / 3, 1 / 3])
    # the judge passes all: both raters use one label, chance agreement 1, kappa undefined (as the report)
    assert np.isnan(sweep["kappa"].iloc[0]) and sweep["kappa"].iloc[1:].eq(0).all()
    _check_against_sklearn(sweep, np.array([True] * 3), np.array([0.2, 0.5, 0.9]))
    rep = agreement.report([1, 1, 1], [0.2, 0.5, 0.9], judge_threshold=0.2, warn=False)
    assert np.isnan(rep.kappa) and rep.specificity is None


def test_missing_scores_and_labels_are_excluded_and_counted():
    human = pd.Series([1, 0, None, 1, 0, 1], dtype="Float64")
    scores = [0.9, np.nan, 0.4, None, 0.1, 0.8]
    sweep = threshold_sweep(human, scores)
    assert sweep["n"].iloc[0] == 3 and sweep["n_excluded"].iloc[0] == 3
    np.testing.assert_array_equal(sweep["threshold"], [0.1, 0.8, 0.9])
    assert sweep["kappa"].iloc[1] == 1.0
    with pytest.raises(ValueError, match=r"no item has both a human label and a judge score \(2 labelled, 2 scored"):
        threshold_sweep([1, None, 0, None], [None, 0.2, None, 0.4])


def test_nullable_scores_and_people_who_never_pass():
    scores = pd.Series([0.9, None, 0.2, 0.6], dtype="Float64", name="score")
    sweep = threshold_sweep(pd.Series([0, 0, 0, 0], name="label"), scores)
    assert sweep["n"].iloc[0] == 3 and sweep["n_excluded"].iloc[0] == 1
    assert sweep["sensitivity"].isna().all() and sweep["miss_rate"].tolist() == pytest.approx([1, 2 / 3, 1 / 3])
    assert sweep.attrs["raglab"]["threshold_sweep"]["judge_name"] == "score"
    _check_against_sklearn(sweep, np.zeros(3, dtype=bool), np.array([0.9, 0.2, 0.6]))


def test_heatmap_keeps_a_colour_the_caller_asks_for():
    rep = agreement.report([1, 1, 0, 0], [1, 0, 0, 0], positive=1)
    ax = plots.confusion_heatmap(rep, annot_kws={"color": "red"})
    assert {t.get_color() for t in ax.texts} == {"red"}
    ax = plots.confusion_heatmap(rep, annot=False, ax=plt.figure().gca())
    assert not ax.texts


def test_booleans_text_with_positive_and_the_name_of_the_pass_label():
    scores = [0.9, 0.3, 0.7, 0.2]
    bools = threshold_sweep([True, False, True, False], scores)
    ints = threshold_sweep(np.array([1, 0, 1, 0]), scores)
    pd.testing.assert_frame_equal(bools, ints, check_like=False, check_exact=True, check_flags=False)
    assert bools.attrs["raglab"]["threshold_sweep"]["positive"] is True
    # the fail label as "positive": sensitivity is then the judge's pass rate among the fails
    flipped = threshold_sweep([1, 0, 1, 0], scores, positive=0)
    assert flipped["human_positive"].iloc[0] == 2 and flipped["sensitivity"].tolist() == [1.0, 0.5, 0.0, 0.0]


def test_bad_inputs_name_the_column_and_the_value():
    rows = _mtrag().head(30).copy()
    # human ratings 1-4 against the judge's pass/fail: the report's LabelMismatchError and its fix
    with pytest.raises(LabelMismatchError, match=r"'human_majority'.*human_threshold="):
        threshold_sweep(rows["human_majority"], rows["rl_f"])
    # text labels: turn them into booleans (as the report says)
    text = rows["human_majority"].map({1.0: "no", 2.0: "no", 3.0: "yes", 4.0: "yes"})
    with pytest.raises(LabelMismatchError, match=r"text labels \('no', 'yes'\).*== 'yes'"):
        threshold_sweep(text, rows["rl_f"], positive="yes")
    # text scores: name the column and the first bad value
    scores = rows["rl_f"].astype(object)
    scores.iloc[4] = "high"
    with pytest.raises(TypeError, match=r"`judge` \('rl_f'\) must hold numeric judge scores; found 'high' at item 4"):
        threshold_sweep(rows["human_majority"], scores, human_threshold=3)
    with pytest.raises(ValueError, match=r"`thresholds` must be finite numbers, got nan"):
        threshold_sweep([1, 0], [0.2, 0.4], [0.1, np.nan])
    with pytest.raises(TypeError, match="`thresholds` must be numbers"):
        threshold_sweep([1, 0], [0.2, 0.4], ["a"])
    with pytest.raises(ValueError, match="`thresholds` is empty"):
        threshold_sweep([1, 0], [0.2, 0.4], [])
    with pytest.raises(ValueError, match="must label the same items: got 2 and 3"):
        threshold_sweep([1, 0], [0.2, 0.4, 0.5])
    with pytest.raises(ValueError, match="`max_thresholds` must be an integer >= 2"):
        threshold_sweep([1, 0], [0.2, 0.4], max_thresholds=1)
    # with the row table, messages name the columns as the accessor would
    with pytest.raises(LabelMismatchError, match=r"rag.threshold_sweep: 'human_majority'"):
        threshold_sweep(rows["human_majority"], rows["rl_f"], names=("human_majority", "rl_f"), rows=rows)


def test_many_scores_use_a_grid_of_observed_quantiles():
    rng = np.random.default_rng(0)
    n = 200_000
    human = rng.random(n) < 0.7
    scores = np.clip(0.5 * human + rng.normal(0.3, 0.25, n), 0, 1)
    sweep = threshold_sweep(human, scores, max_thresholds=101)
    grid = sweep["threshold"].to_numpy()
    assert 50 < len(grid) <= 101 and np.isin(grid, scores).all()
    assert grid[0] == scores.min() and grid[-1] == scores.max()
    picked = sweep.iloc[::25]
    _check_against_sklearn(picked, human, scores)
    # row order does not matter
    order = rng.permutation(n)
    pd.testing.assert_frame_equal(threshold_sweep(human[order], scores[order], grid), sweep)


# --------------------------------------------------------------------------------------------------
# the threshold view
# --------------------------------------------------------------------------------------------------


def _by_gid(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def _mtrag_sweep(judge="rl_f"):
    rows = _mtrag()
    return threshold_sweep(rows["human_majority"], rows[judge], human_threshold=3)


def test_view_draws_three_curves_from_the_sweep_and_marks_the_best_kappa():
    sweep = _mtrag_sweep()
    existing = plt.figure()
    ax = judge_thresholds(sweep)
    assert ax.figure is not existing  # its own figure when ax=None
    for column in ("sensitivity", "specificity", "kappa"):
        line = _by_gid(ax, f"raglab-{column}")
        np.testing.assert_array_equal(line.get_xdata(), sweep["threshold"])
        np.testing.assert_array_equal(line.get_ydata(), sweep[column])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "sensitivity (people pass, judge passes)", "specificity (people fail, judge fails)", "Cohen's kappa"]
    best = sweep.loc[sweep["kappa"].idxmax()]
    chosen = _by_gid(ax, "raglab-chosen")
    assert chosen.get_xdata()[0] == best["threshold"]
    text = _by_gid(ax, "raglab-chosen-text").get_text()
    assert text.splitlines() == [
        f"threshold {best['threshold']:.4g} (highest kappa)",
        f"sensitivity {best['sensitivity']:.2f}, specificity {best['specificity']:.2f}",
        f"kappa {best['kappa']:.2f}, miss rate {best['miss_rate']:.2f}",
    ]
    assert text.splitlines()[0] == "threshold 0.3333 (highest kappa)"
    assert ax.get_title() == "rl_f against human_majority: agreement by threshold"
    assert ax.get_xlabel().startswith("threshold on rl_f")
    assert ax.get_legend().get_title().get_text() == "n = 430 (47 without a label or score)\npeople pass 365, fail 65"
    # Wilson bands under sensitivity and specificity
    band = _by_gid(ax, "raglab-sensitivity-band")
    assert band.get_paths()[0].vertices[:, 1].min() == pytest.approx(sweep["sensitivity_low"].min())


def test_view_legend_is_clear_of_the_curves():
    ax = judge_thresholds(_mtrag_sweep())
    ax.figure.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # outside the axes, so it covers no curve


def test_view_youden_a_given_threshold_kwargs_and_errors():
    sweep = _mtrag_sweep("rb_llm")
    fig, ax = plt.subplots()
    out = judge_thresholds(sweep, threshold="youden", ax=ax, linewidth=3.5, marker="s")
    assert out is ax
    best = sweep.loc[sweep["attenuation"].idxmax()]
    assert _by_gid(ax, "raglab-chosen").get_xdata()[0] == best["threshold"]
    assert "(highest sensitivity + specificity - 1)" in _by_gid(ax, "raglab-chosen-text").get_text()
    for column in ("sensitivity", "specificity", "kappa"):
        line = _by_gid(ax, f"raglab-{column}")
        assert line.get_linewidth() == 3.5 and line.get_marker() == "s"
    ax = judge_thresholds(sweep, threshold=0.5, intervals=False)
    assert _by_gid(ax, "raglab-chosen").get_xdata()[0] == 0.5
    assert _by_gid(ax, "raglab-chosen-text").get_text().startswith("threshold 0.5 (chosen)")
    assert not [a for a in ax.get_children() if str(a.get_gid()).endswith("-band")]
    with pytest.raises(ValueError, match=r"threshold 0.51 is not one of the sweep's thresholds.*thresholds=np.append"):
        judge_thresholds(sweep, threshold=0.51)
    with pytest.raises(ValueError, match=r"must be a number or one of \['kappa', 'youden'\], but 'best' was passed"):
        judge_thresholds(sweep, threshold="best")
    with pytest.raises(ValueError, match=r"missing columns \['sensitivity'"):
        judge_thresholds(sweep.drop(columns=["sensitivity"]))
    with pytest.raises(TypeError, match="threshold_sweep"):
        judge_thresholds(agreement.report([1, 0], [1, 0]))
    with pytest.raises(ValueError, match="no threshold has a finite kappa"):
        judge_thresholds(threshold_sweep([1, 1], [0.5, 0.5]))


def test_view_with_one_threshold_and_the_agreement_package_docstring():
    ax = judge_thresholds(threshold_sweep([1, 0, 1], [0.4, 0.2, 0.6], 0.3))
    assert ax.get_xlim() == pytest.approx((-0.2, 0.8))
    assert "threshold_sweep" in agreement.__all__


# --------------------------------------------------------------------------------------------------
# readability on dark_background: every text against what is behind it
# --------------------------------------------------------------------------------------------------


def _luminance(colour) -> float:
    rgb = np.asarray(mcolors.to_rgb(colour))
    linear = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def _contrast(a, b) -> float:
    """WCAG contrast ratio of two colours (1 to 21; 4.5 is the bar for normal text)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _over(colour, background) -> tuple[float, float, float]:
    """A colour with alpha composited over an opaque background."""
    r, g, b, a = mcolors.to_rgba(colour)
    back = np.asarray(mcolors.to_rgb(background))
    return tuple(a * np.array([r, g, b]) + (1 - a) * back)


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_view_colours_follow_the_style_and_every_text_is_readable(style):
    sweep = _mtrag_sweep()
    with plt.style.context(style):
        ax = judge_thresholds(sweep)
        cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        background = plt.rcParams["axes.facecolor"]
        fig_background = plt.rcParams["figure.facecolor"]
        ax.figure.canvas.draw()
    for i, column in enumerate(("sensitivity", "specificity", "kappa")):
        assert mcolors.same_color(_by_gid(ax, f"raglab-{column}").get_color(), cycle[i])
        # curves stand out from the axes (3:1, WCAG's bar for graphics, on the dark style; matplotlib's
        # default orange is 2.5:1 on white)
        assert _contrast(cycle[i], background) >= (3 if style == "dark_background" else 2.5), column
    texts = _texts(ax.figure)
    assert len(texts) > 15
    for text in texts:
        behind = fig_background if text in ax.get_xticklabels() + ax.get_yticklabels() else background
        assert _contrast(_over(text.get_color(), behind), behind) >= 4.5, text.get_text()
    chosen = _by_gid(ax, "raglab-chosen-text")
    assert mcolors.same_color(chosen.get_bbox_patch().get_facecolor()[:3], mcolors.to_rgb(background))
    assert _contrast(_by_gid(ax, "raglab-chosen").get_color(), background) >= 4.5


@pytest.mark.parametrize("normalize", [None, "rows"])
def test_confusion_heatmap_texts_readable_on_dark_background(normalize):
    rep = agreement.report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1,
                           names=("people", "rl_f"))
    with plt.style.context("dark_background"):
        fig, ax = plt.subplots()
        plots.confusion_heatmap(rep, normalize=normalize, ax=ax)
        background = plt.rcParams["axes.facecolor"]
        fig.canvas.draw()
    mesh = ax.collections[0]
    cells = mesh.get_facecolors()  # row-major, as the annotations
    annotations = [t for t in ax.texts if t.get_text().strip()]
    assert len(annotations) == len(cells) == 4
    for text, cell in zip(annotations, cells):
        assert _contrast(text.get_color(), cell[:3]) >= 4.5, (text.get_text(), text.get_color(), cell)
    others = [t for t in _texts(fig) if t not in annotations]
    shown = {t.get_text() for t in others}
    assert {"pass", "fail", "people", "judge: rl_f"} <= shown
    assert any(s.startswith("n = 200, kappa = 0.56") for s in shown)  # the note under the plot
    for text in others:
        assert _contrast(text.get_color(), background) >= 4.5, text.get_text()
    miss = _by_gid(ax, "raglab-miss-cell")
    assert _contrast(miss.get_edgecolor()[:3], background) >= 3  # the outline stands out from the figure


def test_power_curve_texts_and_lines_readable_on_dark_background():
    with plt.style.context("dark_background"):
        fig, ax = plt.subplots()
        plots.power_curve([0.02, 0.05], paired=True, discordance=0.1, ax=ax)
        background = plt.rcParams["axes.facecolor"]
        legend_face = ax.get_legend().get_frame().get_facecolor()
        fig.canvas.draw()
    legend_texts = set(ax.get_legend().get_texts()) | {ax.get_legend().get_title()}
    texts = _texts(fig)
    assert len(texts) > 10
    for text in texts:
        behind = _over(legend_face, background) if text in legend_texts else background
        assert _contrast(_over(text.get_color(), behind), behind) >= 4.5, text.get_text()
    curves = [line for line in ax.get_lines() if line.get_linestyle() == "-"]
    assert len(curves) == 2 and all(_contrast(line.get_color(), background) >= 3 for line in curves)
    (target,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert _contrast(_over((*mcolors.to_rgb(target.get_color()), target.get_alpha()), background), background) >= 3


# --------------------------------------------------------------------------------------------------
# own figures with ax=None, every text inside the figure on a plain savefig, steps
# --------------------------------------------------------------------------------------------------


def _report():
    return agreement.report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1,
                            names=("people", "rl_f"), warn=False)


def _heatmap_note(ax):
    (note,) = [a for a in ax.artists if a.get_gid() == "raglab-heatmap-note"]
    return note.offsetbox.get_text()


def assert_texts_inside_figure(fig, at_least=5):
    """After a draw (no bbox_inches), every visible non-empty text lies inside the figure: a plain
    ``fig.savefig`` keeps it."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    hidden = set()  # tick labels outside the view limits are "visible" but never drawn
    for ax in fig.axes:
        for axis, i in ((ax.xaxis, 0), (ax.yaxis, 1)):
            low, high = sorted(axis.get_view_interval())
            for label in axis.get_ticklabels() + axis.get_ticklabels(minor=True):
                where = label.get_position()[i]
                if not low - 1e-9 * abs(high - low) <= where <= high + 1e-9 * abs(high - low):
                    hidden.add(label)
    texts = [t for t in _texts(fig) if t not in hidden]
    assert len(texts) >= at_least
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert (extent.x0 >= box.x0 - 0.5 and extent.y0 >= box.y0 - 0.5 and extent.x1 <= box.x1 + 0.5
                and extent.y1 <= box.y1 + 0.5), (text.get_text(), extent, box)


_OWN_FIGURE = {
    "confusion_heatmap": lambda ax=None: plots.confusion_heatmap(_report(), normalize="rows", ax=ax),
    "power_curve": lambda ax=None: plots.power_curve([0.02, 0.05], paired=True, discordance=0.1, ax=ax),
}


@pytest.mark.parametrize("name", list(_OWN_FIGURE))
def test_ax_none_makes_a_new_figure_each_time_and_leaves_the_current_axes_alone(name):
    draw = _OWN_FIGURE[name]
    fig, current = plt.subplots()
    current.plot([0, 1], [0, 1])
    before = (len(current.get_lines()), len(current.texts), len(current.collections), current.get_legend())
    first, second = draw(), draw()
    assert first.figure is not second.figure and fig not in (first.figure, second.figure)
    assert first.figure.get_layout_engine() is not None  # constrained layout
    assert (len(current.get_lines()), len(current.texts), len(current.collections), current.get_legend()) == before
    assert fig.axes == [current]
    # with ax given, it still draws there
    fig, (left, right) = plt.subplots(1, 2)
    assert draw(ax=right) is right and not left.has_data() and right.has_data()


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_heatmap_note_and_power_legend_are_inside_the_default_figure(style):
    with plt.style.context(style):
        ax = plots.confusion_heatmap(_report())
        note = _heatmap_note(ax)
        assert note.startswith("n = 200, kappa = 0.56") and "miss rate 0.44" in note
        assert_texts_inside_figure(ax.figure)
        renderer = ax.figure.canvas.get_renderer()
        # the note sits under the x label, clear of it
        (text,) = [t for t in _texts(ax.figure) if t.get_text() == note]
        assert text.get_window_extent(renderer).y1 <= ax.xaxis.label.get_window_extent(renderer).y0
        ax = plots.power_curve([0.02, 0.03, 0.05], paired=True, discordance=0.12)
        assert_texts_inside_figure(ax.figure, at_least=10)
        legend = ax.get_legend().get_window_extent(renderer=ax.figure.canvas.get_renderer())
        assert legend.x0 > ax.get_window_extent().x1 and legend.x1 <= ax.figure.bbox.x1


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_judge_thresholds_texts_are_inside_the_default_figure(style):
    with plt.style.context(style):
        ax = judge_thresholds(_mtrag_sweep())
        assert_texts_inside_figure(ax.figure, at_least=15)


def _is_step(vertices: np.ndarray) -> bool:
    """Consecutive vertices share x or y: only horizontal and vertical segments."""
    dx, dy = np.diff(vertices[:, 0]), np.diff(vertices[:, 1])
    return bool(np.all((dx == 0) | (dy == 0)))


def test_view_draws_steps_that_hold_each_value_up_to_its_threshold():
    # pass when score >= t: with scores 0.2, 0.5, 0.9 any t in (0.2, 0.5] passes what t = 0.5 passes
    human, scores = [1, 0, 1, 0, 1], [0.9, 0.2, 0.5, 0.5, 0.2]
    sweep = threshold_sweep(human, scores)
    np.testing.assert_array_equal(sweep["threshold"], [0.2, 0.5, 0.9])
    for t in (0.3, 0.45):  # between the thresholds: the value of the next one up
        between = threshold_sweep(human, scores, [t])
        assert between["sensitivity"].iloc[0] == sweep["sensitivity"].iloc[1]
        assert between["specificity"].iloc[0] == sweep["specificity"].iloc[1]
    ax = judge_thresholds(sweep)
    for column in ("sensitivity", "specificity", "kappa"):
        line = _by_gid(ax, f"raglab-{column}")
        assert line.get_drawstyle() == "steps-pre"
        vertices = line.get_path().vertices
        assert len(vertices) == 2 * len(sweep) - 1 and _is_step(vertices), column
        # each horizontal run (t_{i-1}, t_i] is at the value of t_i: (0.2, 0.5] at 0.5's, (0.5, 0.9] at 0.9's
        runs = {(a[0], b[0]): a[1] for a, b in zip(vertices[:-1], vertices[1:]) if a[0] != b[0] and a[1] == b[1]}
        values, t = sweep[column].to_numpy(dtype=float), sweep["threshold"].to_numpy()
        assert list(runs) == [(t[0], t[1]), (t[1], t[2])], column
        assert list(runs.values()) == pytest.approx(list(values[1:]), nan_ok=True), column
    # the bands step with the curves
    band = _by_gid(ax, "raglab-sensitivity-band")
    assert _is_step(band.get_paths()[0].vertices[:-1])
    # on the MTRAG sweep too
    ax = judge_thresholds(_mtrag_sweep("rb_llm"))
    assert all(_is_step(_by_gid(ax, f"raglab-{c}").get_path().vertices) for c in ("sensitivity", "kappa"))


def test_boundary_plots_make_their_own_figure():
    from raglab import chunks, plots

    rows = pd.DataFrame({"question_id": ["q1", "q2"],
                         "gold_spans": [[{"doc_id": "d", "start": 5, "end": 15}], [{"doc_id": "d", "start": 30, "end": 35}]]})
    table = chunks.fixed({"d": 60}, size=10, overlap=0, unit="chars")
    first = plt.figure()
    first_ax = first.gca()
    ax = plots.boundary_positions(rows, table)
    assert ax.figure is not first and not first_ax.has_data()
    assert ax.figure.get_layout_engine() is not None


def test_boundary_metric_makes_its_own_figure():
    from raglab import plots

    table = pd.DataFrame({"split": "boundary_status", "metric": "m", "slice": ["overall", "cut"], "n": [10, 9],
                          "base": [0.5, 0.4], "cand": [0.7, 0.6], "diff": [0.2, 0.2], "low": [0.1, 0.05],
                          "high": [0.3, 0.35]})
    first_ax = plt.figure().gca()
    one, two = plots.boundary_metric(table), plots.boundary_metric(table)
    assert one.figure is not two.figure and not first_ax.has_data()
