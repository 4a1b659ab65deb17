"""The plots (Agg backend): what is on the Axes (rows, texts, markers, panels), not only that they draw."""

from __future__ import annotations

import re

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.markers import MarkerStyle

import raglab  # noqa: F401  (registers df.rag)
from raglab import stats
from raglab._results import DECISION_COLOURS
from raglab.plots import forest

_MARGINS = {"hit@5": 0.02, "recall@5": 0.02, "latency_ms": 5.0}


def _runs(metrics=("hit@5", "recall@5", "latency_ms")):
    """Three metrics over four slices of 100 questions: slice b drops sharply in hit@5 and recall@5."""
    rng = np.random.default_rng(0)
    n = 400
    slices = np.repeat(["a", "b", "c", "d"], 100)
    hit = (rng.random(n) < 0.7).astype(float)
    rec = np.clip(hit * rng.random(n) + 0.2, 0, 1)
    lat = rng.gamma(3, 100, n)
    worse = (slices == "b") & (rng.random(n) < 0.5)
    base = {"hit@5": hit, "recall@5": rec, "latency_ms": lat}
    cand = {"hit@5": np.where(worse, 0.0, np.where(rng.random(n) < 0.1, 1.0, hit)),
            "recall@5": np.where(worse, 0.0, np.minimum(rec + 0.05, 1)), "latency_ms": lat * 0.9}
    pick = list(metrics)
    return {m: base[m] for m in pick}, {m: cand[m] for m in pick}, slices


def _gate(metrics=("hit@5", "recall@5", "latency_ms"), adjust="holm"):
    base, cand, slices = _runs(metrics)
    return stats.gate(base, cand, margin={m: _MARGINS[m] for m in metrics}, slices=slices, adjust=adjust,
                      higher_is_better={m: m != "latency_ms" for m in metrics}, n_resamples=300, n_permutations=1000)


def _compare(metrics=("hit@5", "latency_ms"), **kw):
    base, cand, slices = _runs(metrics)
    return stats.compare(base, cand, slices=slices, n_resamples=300, n_permutations=1000, **kw)


def _artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def _labels(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def _column(ax, number):
    """The texts of a right-hand column, top to bottom."""
    texts = [t for t in ax.texts if t.get_gid() == f"raglab-column-{number}"]
    return sorted(texts, key=lambda t: -t.get_position()[1])


def _footnote(ax):
    return "\n".join(t.get_text() for ax_ in ax.figure.axes for t in ax_.texts if t.get_gid() == "raglab-footnote")


def _rows(table, metrics):
    """Row indices of a table in the forest's order (overall first under each metric)."""
    out = []
    for m in metrics:
        part = table[table["metric"] == m]
        out += list(part.index[part["slice"] == "overall"]) + list(part.index[part["slice"] != "overall"])
    return out


def _numbers(text):
    values = re.findall(r"[+\N{MINUS SIGN}-][\d,]+(?:\.(\d+))?", text)
    found = re.findall(r"[+\N{MINUS SIGN}-][\d,]+(?:\.\d+)?", text)
    numbers = [float(v.replace("\N{MINUS SIGN}", "-").replace(",", "")) for v in found]
    return numbers, len(values[0]) if values else 0


def test_release_card_rows_headings_and_text_columns():
    result = _gate(("hit@5", "recall@5"))
    table = result.table
    ax = forest(result)
    assert len(ax.figure.axes) == 1  # both proportions: one panel, in raw units
    assert _labels(ax) == ["hit@5", "overall", "a", "b", "c", "d", "recall@5", "overall", "a", "b", "c", "d"]
    headings = [t.get_text() for t in ax.get_yticklabels() if t.get_gid() == "raglab-heading"]
    assert headings == ["hit@5", "recall@5"]
    order = _rows(table, ["hit@5", "recall@5"])
    assert len(_artist(ax, "raglab-estimates").get_offsets()) == len(table) == 10
    np.testing.assert_allclose(_artist(ax, "raglab-estimates").get_offsets()[:, 0], table.loc[order, "diff"])
    n_texts, diff_texts, decision_texts = (_column(ax, i) for i in range(3))
    assert [t.get_text() for t in n_texts] == [f"{n:,}" for n in table.loc[order, "n"]]
    for text, (_, row) in zip(diff_texts, table.loc[order].iterrows()):
        numbers, decimals = _numbers(text.get_text())
        assert decimals >= 2
        assert numbers == pytest.approx([row["diff"], row["low"], row["high"]], abs=0.51 * 10**-decimals)
    assert [t.get_text().rstrip("\N{DAGGER}") for t in decision_texts] == list(table.loc[order, "decision"])
    for text, decision in zip(decision_texts, table.loc[order, "decision"]):
        assert mcolors.to_hex(text.get_color()) == DECISION_COLOURS[decision]
    headers = sorted((t for t in ax.texts if str(t.get_gid()).endswith("-header")), key=lambda t: t.get_gid())
    assert [t.get_text() for t in headers] == ["n", "diff [95% interval]", "decision"]


def test_overall_rows_are_bold_diamonds_and_the_title_says_decision_and_level():
    result = _gate(("hit@5", "recall@5"))
    ax = forest(result)
    title = ax.get_title()
    assert title.startswith(f"Release gate: {result.decision.upper()} (")
    assert "95% paired intervals" in title and "Tango" in title and "betting" in title
    points = _artist(ax, "raglab-estimates")
    diamond = MarkerStyle("D")
    diamond = diamond.get_path().transformed(diamond.get_transform()).vertices
    labels = ax.get_yticklabels()
    rows = [t for t in labels if t.get_gid() != "raglab-heading"]
    assert len(points.get_paths()) == len(rows)
    for label, path, size, n_text in zip(rows, points.get_paths(), points.get_sizes(), _column(ax, 0)):
        overall = label.get_text() == "overall"
        assert (path.vertices.shape == diamond.shape and np.allclose(path.vertices, diamond)) == overall
        assert (label.get_fontweight() == "bold") == overall
        assert (n_text.get_fontweight() == "bold") == overall
        assert size == (58 if overall else 42)
    assert all(t.get_fontweight() == "bold" for t in labels if t.get_gid() == "raglab-heading")


def test_holm_survivors_are_marked_only_when_holm_was_applied():
    result = _gate(("hit@5", "recall@5"))
    assert result.counts["block"] >= 2
    ax = forest(result)
    marked = [t.get_text() for t in _column(ax, 2) if t.get_text().endswith("\N{DAGGER}")]
    assert marked == ["block\N{DAGGER}"] * result.counts["block"]
    assert "\N{DAGGER} blocks after Holm over 10 rows (adjusted one-sided p < 0.025)" in _footnote(ax)
    # the gate's table alone says the same through its p_worse_adjusted column
    assert _footnote(forest(result.table)) == _footnote(ax)

    per_row = _gate(("hit@5", "recall@5"), adjust=None)
    assert per_row.counts["block"] >= 2
    ax = forest(per_row)
    every = [t.get_text() for a in ax.figure.axes for t in a.texts] + [_footnote(ax), ax.get_title()]
    assert not any("\N{DAGGER}" in text for text in every)
    assert "no multiplicity adjustment" in _footnote(ax)

    adjusted = _compare(adjust="holm")
    ax = forest(adjusted)
    significant = adjusted.loc[_rows(adjusted, ["hit@5", "latency_ms"]), "p_adjusted"].to_numpy() < 0.05
    panels = ax.figure.axes
    marks = [t.get_text() == "\N{DAGGER}" for a in panels for t in _column(a, 2)]
    assert marks == list(significant) and any(marks)
    assert "significant after Holm over 10 rows" in _footnote(ax)


def test_no_interval_rows_are_hollow_and_empty_slices_are_dropped():
    base = pd.DataFrame({"question_id": list("abcdef"), "t": ["x", "x", "y", "y", "z", "z"],
                         "s": [0.1, 0.2, np.nan, np.nan, 0.3, np.nan]})
    table = base.rag.compare(base.assign(s=[0.3, 0.1, 0.5, 0.6, 0.2, 0.4]), metrics=["s"], by="t", n_resamples=100)
    assert list(table["n"]) == [3, 2, 0, 1]
    ax = forest(table)
    assert _labels(ax) == ["s", "overall", "x", "z"]  # y (n = 0) is gone
    faces = _artist(ax, "raglab-estimates").get_facecolors()
    assert [bool(f[3] == 0) for f in faces] == [False, False, True]  # z has one question: hollow
    assert _column(ax, 1)[-1].get_text() == "\N{MINUS SIGN}0.10 (no interval)"
    assert len(_artist(ax, "raglab-intervals").get_segments()) == 2
    note = _footnote(ax)
    assert "1 row with n = 0 not shown: s [y]." in note and "hollow: no interval" in note
    assert "dashed" not in note  # no margin, so no margin line to explain
    assert "candidate - baseline" in ax.get_title().lower() and "95%" in ax.get_title()


def test_own_figure_per_call_sized_to_the_rows():
    fig, mine = plt.subplots()
    small = forest(_gate(("hit@5",)))
    large = forest(_gate(("hit@5", "recall@5")))
    assert not mine.has_data() and not mine.texts
    assert len({id(fig), id(small.figure), id(large.figure)}) == 3
    assert small.figure.get_figheight() < large.figure.get_figheight()
    assert large.figure.get_figheight() > 4.8  # more room than matplotlib's default for 12 rows


def test_draws_on_the_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    out = forest(_compare(("hit@5",)), ax=right)
    assert out is right and not left.has_data() and len(fig.axes) == 2


def test_mixed_units_get_one_panel_each_and_margin_units_only_when_asked():
    result = _gate()
    ax = forest(result)
    panels = ax.figure.axes
    assert len(panels) == 2 and panels[0] is ax
    assert _labels(panels[0])[0] == "hit@5" and _labels(panels[1]) == ["latency_ms (lower is better)", "overall",
                                                                       "a", "b", "c", "d"]
    assert panels[0].get_xlabel() == "difference (candidate - baseline): scores in [0, 1]   (better \N{RIGHTWARDS ARROW})"
    assert panels[1].get_xlabel() == "difference (candidate - baseline) in latency_ms   (\N{LEFTWARDS ARROW} better)"
    # margins on the bad side: -0.02 for the proportions, +5 ms for latency (lower is better)
    assert sorted(s[0][0] for s in _artist(panels[0], "raglab-margins").get_segments()) == pytest.approx([-0.02] * 2)
    assert [s[0][0] for s in _artist(panels[1], "raglab-margins").get_segments()] == pytest.approx([5.0])
    zero = [line for line in ax.get_lines() if list(line.get_xdata()) == [0, 0]]
    assert zero, "no reference line at zero"
    assert "Release gate" in ax.get_title() and not panels[1].get_title()
    assert _footnote(ax) and all(t.get_gid() != "raglab-footnote" for t in panels[0].texts)

    with pytest.raises(ValueError, match=r"2 different units .*Pass ax=None .*scale='margin'"):
        forest(result, ax=plt.subplots()[1])
    one = forest(result, ax=plt.subplots()[1], scale="margin")
    assert one.get_xlabel().startswith("improvement / margin")
    assert [s[0][0] for s in _artist(one, "raglab-margins").get_segments()] == pytest.approx([-1.0] * 3)
    table = result.table
    order = _rows(table, ["hit@5", "recall@5", "latency_ms"])
    sign = np.where(table.loc[order, "higher_is_better"], 1.0, -1.0)
    expected = table.loc[order, "diff"].to_numpy() * sign / table.loc[order, "margin"].to_numpy()
    np.testing.assert_allclose(_artist(one, "raglab-estimates").get_offsets()[:, 0], expected)
    assert (expected[-5:] > 0).all()  # latency fell: better, drawn right of zero
    for segment in _artist(one, "raglab-intervals").get_segments():
        assert segment[0][0] <= segment[1][0]
    # the text columns stay in each metric's own units
    assert _numbers(_column(one, 1)[-5].get_text())[0][0] == pytest.approx(table.loc[order[-5], "diff"], abs=0.5)
    with pytest.raises(ValueError, match=r"needs a positive margin for every metric; none for \['latency_ms'\]"):
        forest(_compare(), margin={"hit@5": 0.02}, scale="margin")
    grouped = forest(result, panels={"latency_ms": "scores in [0, 1]"})
    assert len(grouped.figure.axes) == 1


def test_raw_units_for_proportions_with_one_margin():
    result = _gate(("hit@5", "recall@5"))
    for ax in (forest(result), forest(result.table, scale="raw")):
        assert ax.get_xlabel() == "difference (candidate - baseline)   (better \N{RIGHTWARDS ARROW})"
        assert sorted(s[0][0] for s in _artist(ax, "raglab-margins").get_segments()) == pytest.approx([-0.02, -0.02])
        np.testing.assert_allclose(sorted(_artist(ax, "raglab-estimates").get_offsets()[:, 0]),
                                   sorted(result.table["diff"]))


@pytest.mark.parametrize("sort", [None, "diff", "low", "decision"])
def test_sort_orders_slices_under_each_metric(sort):
    result = _gate(("hit@5", "latency_ms"))
    ax = forest(result, sort=sort)
    for panel, metric in zip(ax.figure.axes, ["hit@5", "latency_ms"]):
        part = result.table[(result.table["metric"] == metric) & (result.table["slice"] != "overall")]
        better = 1.0 if metric == "hit@5" else -1.0
        worst = part["low"] if better > 0 else -part["high"]
        keys = {None: pd.Series(range(len(part)), index=part.index), "diff": part["diff"] * better, "low": worst,
                "decision": part["decision"].map({"block": 0, "review": 1, "pass": 2}) * 10 + worst.rank() / 100}
        expected = ["overall"] + list(part.loc[keys[sort].sort_values(kind="mergesort").index, "slice"])
        assert _labels(panel)[1:] == expected
    if sort == "decision":
        assert _labels(ax)[1:3] == ["overall", "b"]  # the blocked slice comes first
    with pytest.raises(ValueError, match=r"`sort` must be one of \[None, 'diff', 'low', 'decision'\]"):
        forest(result, sort="best")
    with pytest.raises(ValueError, match="sort='decision' needs a gate table"):
        forest(_compare(), sort="decision")


def test_explicit_margin_overrides_and_validates():
    table = _compare(("hit@5",))
    ax = forest(table, margin={"hit@5": 0.05})
    assert [s[0][0] for s in _artist(ax, "raglab-margins").get_segments()] == pytest.approx([-0.05])
    with pytest.raises(ValueError, match=r"names metrics that are not in the table: \['ndcg'\]"):
        forest(table, margin={"ndcg": 0.1})
    with pytest.raises(ValueError, match=r"`scale` must be one of \['raw', 'margin'\]"):
        forest(table, scale="log")


def _contrast(a, b):
    """WCAG contrast ratio of two colours (1 to 21; 4.5 is the bar for normal text)."""
    def luminance(colour):
        linear = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in mcolors.to_rgb(colour)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_colours_follow_the_decisions_and_every_text_reads_on_the_style(style):
    result = _gate(("hit@5", "recall@5"))
    order = _rows(result.table, ["hit@5", "recall@5"])
    before = dict(DECISION_COLOURS)
    with plt.style.context(style):
        ax = forest(result)
        ink, paper = plt.rcParams["text.color"], plt.rcParams["figure.facecolor"]
    assert before == DECISION_COLOURS  # one palette, left as it is
    assert mcolors.to_hex(ax.figure.get_facecolor()) == mcolors.to_hex(paper)
    # on white the palette is used as it is; on black, lighter variants of the same hues
    palette = {d: mcolors.to_hex(c) for d, c in DECISION_COLOURS.items()}
    if style == "dark_background":
        palette = {"pass": "#258541", "review": "#b55e08", "block": "#d53d47"}
    colours = _artist(ax, "raglab-intervals").get_colors()
    for colour, decision in zip(colours, result.table.loc[order, "decision"]):
        assert mcolors.to_hex(colour) == palette[decision]
    for decision, colour in palette.items():
        assert _contrast(colour, paper) >= 4.5, decision
        hue = mcolors.rgb_to_hsv(mcolors.to_rgb(colour))[0]
        assert hue == pytest.approx(mcolors.rgb_to_hsv(mcolors.to_rgb(DECISION_COLOURS[decision]))[0], abs=0.02)
    decisions = _column(ax, 2)
    assert len(decisions) == len(order)
    for text, decision in zip(decisions, result.table.loc[order, "decision"]):
        assert mcolors.to_hex(text.get_color()) == palette[decision]
    # every text column (n, interval, decision), its header, the title, labels and footnote: 4.5:1 on the figure
    texts = [t for t in ax.texts if str(t.get_gid()).startswith("raglab-column-")]
    assert {t.get_gid() for t in texts} == {f"raglab-column-{c}{h}" for c in range(3) for h in ("", "-header")}
    texts += [ax.title, ax.xaxis.label, *ax.get_yticklabels(), *ax.get_xticklabels()]
    for text in texts:
        assert _contrast(text.get_color(), paper) >= 4.5, (text.get_text(), text.get_color())
    assert mcolors.to_hex(_column(ax, 0)[0].get_color()) == mcolors.to_hex(ink)
    assert mcolors.to_hex(ax.title.get_color()) == mcolors.to_hex(ink)


def _drawn_texts(fig):
    """Every text drawn on a figure: titles, labels, tick labels in view, the columns and the footnote."""
    from matplotlib.text import Text

    hidden = set()
    for ax in fig.axes:
        for axis, (low, high) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            for tick, loc in zip(axis.get_major_ticks(), axis.get_majorticklocs()):
                if not low - 1e-9 <= loc <= high + 1e-9:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


def _cards():
    mixed = _gate()  # two panels: proportions and latency_ms
    cost = pd.DataFrame({"metric": "prompt_chars", "slice": ["overall", "a"], "diff": [2371.4, 2360.2],
                         "low": [2367.0, 2343.1], "high": [2375.2, 2376.9], "n": [11873, 758],
                         "higher_is_better": False})  # a compare table of a cost, in characters
    return mixed, cost


@pytest.mark.parametrize("where", ["own", "subplots", "subplots-right"])
def test_everything_lies_inside_the_figure(where, tmp_path):
    mixed, cost = _cards()
    for table in (mixed, cost, _gate(("hit@5", "recall@5"))):
        if where == "own":
            ax = forest(table)
        else:
            if hasattr(table, "table") and table.table["metric"].nunique() == 3:
                table = table.table[table.table["metric"] != "latency_ms"]  # one unit group for one Axes
            wide = {"figsize": (14, 6)} if where == "subplots-right" else {}  # the right half of a wide figure
            fig, axes = plt.subplots(1, 2 if where == "subplots-right" else 1, **wide)
            given = axes[-1] if where == "subplots-right" else axes
            ax = forest(table, ax=given)
            assert ax is given and ax.figure.get_layout_engine() is None
        fig = ax.figure
        fig.canvas.draw()
        page = fig.bbox
        texts = _drawn_texts(fig)
        gids = {t.get_gid() for t in texts}
        assert {"raglab-footnote", "raglab-column-0", "raglab-column-1", "raglab-column-0-header"} <= gids
        for text in texts:
            box = text.get_window_extent()
            assert page.x0 - 0.5 <= box.x0 and box.x1 <= page.x1 + 0.5, (text.get_text(), box, page)
            assert page.y0 - 0.5 <= box.y0 and box.y1 <= page.y1 + 0.5, (text.get_text(), box, page)
        # and nothing is cut when saved as it is: the saved image's outer pixels are all background
        path = tmp_path / f"{where}.png"
        fig.savefig(path, bbox_inches=None, dpi=150)
        image = plt.imread(path)[..., :3]
        assert abs(image.shape[0] - fig.get_figheight() * 150) <= 1 and abs(image.shape[1] - fig.get_figwidth() * 150) <= 1
        edge = np.concatenate([image[:2].reshape(-1, 3), image[-2:].reshape(-1, 3),
                               image[:, :2].reshape(-1, 3), image[:, -2:].reshape(-1, 3)])
        np.testing.assert_allclose(edge, np.broadcast_to(mcolors.to_rgb(fig.get_facecolor()), edge.shape), atol=0.02)
        plt.close(fig)


def test_a_figure_too_small_for_the_card_warns():
    fig, ax = plt.subplots(figsize=(2.0, 1.5))
    with pytest.warns(UserWarning, match=r"too small for the rows and text columns; pass ax=None"):
        forest(_gate(("hit@5", "recall@5")), ax=ax)


def test_text_columns_line_up_across_panels():
    ax = forest(_gate())
    fig = ax.figure
    fig.canvas.draw()
    top, bottom = fig.axes
    assert top.get_position().x1 == pytest.approx(bottom.get_position().x1)
    for c, align in enumerate(["right", "left", "left"]):
        edges = []
        for panel in (top, bottom):
            cells = _column(panel, c) + [t for t in panel.texts if t.get_gid() == f"raglab-column-{c}-header"]
            assert {t.get_ha() for t in cells} == {align}
            edges += [getattr(t.get_window_extent(), "x1" if align == "right" else "x0") for t in cells]
        assert max(edges) - min(edges) < 0.5, (c, edges)


def test_large_numbers_have_thousands_separators_and_small_ones_keep_their_decimals():
    from raglab.plots._common import _interval_text, _signed

    assert _interval_text(2371.4, 2367.0, 2375.2, 0) == "+2,371 [+2,367, +2,375]"
    assert _interval_text(-1234.56, -2000.0, -469.1, 1) == "\N{MINUS SIGN}1,234.6 [\N{MINUS SIGN}2,000.0, \N{MINUS SIGN}469.1]"
    assert _signed(0.0164, 3) == "+0.016" and _signed(-0.0005, 4) == "\N{MINUS SIGN}0.0005"
    _, cost = _cards()
    ax = forest(cost)
    assert [t.get_text() for t in _column(ax, 1)] == ["+2,371 [+2,367, +2,375]", "+2,360 [+2,343, +2,377]"]
    assert [t.get_text() for t in _column(ax, 0)] == ["11,873", "758"]


def test_the_x_axis_says_which_way_is_better_without_margins():
    table = _compare(("hit@5", "latency_ms"))
    assert "margin" not in table.columns
    ax = forest(table)
    top, bottom = ax.figure.axes
    assert top.get_xlabel().endswith("(better \N{RIGHTWARDS ARROW})")
    assert bottom.get_xlabel().endswith("(\N{LEFTWARDS ARROW} better)")
    assert _labels(bottom)[0] == "latency_ms (lower is better)" and not _labels(top)[0].endswith("better)")
    assert not [a for a in ax.figure.axes if [c for c in a.get_children() if c.get_gid() == "raglab-margins"]]
    one = forest(table, panels={"latency_ms": "scores in [0, 1]"})
    assert one.get_xlabel().endswith(
        "(better \N{RIGHTWARDS ARROW}; \N{LEFTWARDS ARROW} for metrics marked lower is better)")
    assert forest(table, scale="margin", margin=0.02).get_xlabel().startswith("improvement / margin")
    assert "right is better" in forest(table, scale="margin", margin=0.02).get_xlabel()


def test_margins_are_checked_like_the_gates():
    # a negative margin used to be drawn on the good side (the footnote says bad side); NaN passed silently
    table = _compare(("hit@5",))
    for bad in (-0.02, float("nan"), {"hit@5": -0.02}, {"hit@5": float("inf")}):
        with pytest.raises(ValueError, match=r"the margin for 'hit@5' must be a finite number >= 0"):
            forest(table, margin=bad)
    with pytest.raises(TypeError, match=r"the margin for 'hit@5' must be a number .* got 'x'"):
        forest(table, margin="x")
    assert not [c for c in forest(table, margin=0).get_children() if c.get_gid() == "raglab-margins"]


def test_a_metric_with_no_direction_is_not_called_better_either_way():
    rng = np.random.default_rng(1)
    base = {"declined": (rng.random(200) < 0.2).astype(float), "hit@5": (rng.random(200) < 0.7).astype(float)}
    cand = {"declined": (rng.random(200) < 0.3).astype(float), "hit@5": (rng.random(200) < 0.7).astype(float)}
    alone = stats.compare({"declined": base["declined"]}, {"declined": cand["declined"]}, n_resamples=200)
    ax = forest(alone, margin=0.02)
    assert _labels(ax) == ["declined (no direction)", "overall"]
    assert ax.get_xlabel().endswith("(no better direction)") and "better \N{RIGHTWARDS ARROW}" not in ax.get_xlabel()
    assert not [c for c in ax.get_children() if c.get_gid() == "raglab-margins"]  # no bad side to draw it on
    with pytest.raises(ValueError, match=r"scale='margin' needs a better direction .* \['declined'\]"):
        forest(alone, margin=0.02, scale="margin")
    both = forest(stats.compare(base, cand, n_resamples=200))
    assert _labels(both) == ["declined (no direction)", "overall", "hit@5", "overall"]
    assert both.get_xlabel().endswith("(better \N{RIGHTWARDS ARROW})")  # said of hit@5, the one with a direction
    stated = alone.assign(higher_is_better=False)  # a table that states the direction is believed
    assert _labels(forest(stated)) == ["declined (lower is better)", "overall"]


def test_an_unknown_level_is_not_claimed():
    table = _compare(("hit@5",)).assign(level=np.nan)
    ax = forest(table)
    assert "nan" not in ax.get_title() and "paired intervals, level unknown" in ax.get_title()
    assert not [c for c in ax.get_children() if c.get_gid() == "raglab-intervals-inner"]
    assert len(_artist(ax, "raglab-intervals").get_segments()) == len(table)
    headers = sorted((t for t in ax.texts if str(t.get_gid()).endswith("-header")), key=lambda t: t.get_gid())
    assert [t.get_text() for t in headers] == ["n", "diff [interval]"]
    gated = _gate(("hit@5",)).table.assign(level=np.nan)
    assert "nan" not in forest(gated).get_title() and "nan" not in _footnote(forest(gated))


def test_kwargs_reach_the_points():
    ax = forest(_compare(("hit@5",)), marker="s", s=80)
    assert (_artist(ax, "raglab-estimates").get_sizes() == 80).all()


def test_accessor_and_bad_tables():
    table = _compare(("hit@5",))
    ax = table.rag.forest(margin=0.02)
    assert len(_artist(ax, "raglab-intervals").get_segments()) == len(table)
    with pytest.raises(ValueError, match=r"needs a compare or gate table .* missing \['diff', 'low', 'high'\]"):
        forest(pd.DataFrame({"metric": ["a"], "slice": ["overall"]}))
    with pytest.raises(TypeError, match="got list"):
        forest([1, 2])
    empty = forest(table.iloc[:0])
    assert [t.get_text() for t in empty.texts] == ["no rows to draw (0 with n = 0)"]


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
    # a NaN cell used to fail with "cannot convert float NaN to integer", a string with a bare float error
    counts = pd.DataFrame([[5, 1], [2, 7]], index=["pass", "fail"], columns=["pass", "fail"])
    for cell, error, message in [(np.nan, ValueError, "finite counts >= 0; the cell .people 'fail', judge 'pass'. is nan"),
                                 (-1, ValueError, "finite counts >= 0; the cell .people 'fail', judge 'pass'. is -1"),
                                 ("x", TypeError, "the cell .people 'fail', judge 'pass'. is 'x' in a column of dtype object")]:
        bad = counts.astype(object if isinstance(cell, str) else float)
        bad.iloc[1, 0] = cell
        with pytest.raises(error, match=message):
            plots.confusion_heatmap(bad)
    with pytest.raises(TypeError, match="column 'pass' has dtype string"):
        plots.confusion_heatmap(counts.astype("string"))


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
    from matplotlib.offsetbox import AnnotationBbox

    (note,) = [a for a in ax.artists if isinstance(a, AnnotationBbox) and a.get_gid() == "raglab-heatmap-note"]
    return note.offsetbox.get_text()  # a TextArea under the x label, anchored to it


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
    ax = plots.boundary_metric(report.table, split="boundary_status", ax=right, s=90)
    assert ax is right and not left.has_data()
    t = report.table
    assert (_artist(ax, "raglab-cand").get_sizes() == 90).all()
    plt.close(fig)
    # the baseline's gold_reached is its own outcome: split by it, regression to the mean looks like an effect
    with pytest.raises(ValueError, match=r"refuses split='gold_reached'.*regression to the mean"):
        plots.boundary_metric(report, split="gold_reached")
    with pytest.raises(ValueError, match=r"`metric` must be one of \['faithfulness'\], but 'recall@5'"):
        plots.boundary_metric(report, metric="recall@5")
    with pytest.raises(ValueError, match=r"`split` must be one of \['boundary_status'\]"):
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


def test_opposite_directions_never_share_an_axis():
    # a worse false_decline used to be drawn right of zero on the recall panel, under "better ->"
    rng = np.random.default_rng(3)
    recall = rng.random(300)
    declined = (rng.random(300) < 0.2).astype(float)
    base = {"recall@5": recall, "false_decline": declined}
    cand = {"recall@5": np.clip(recall + 0.05, 0, 1), "false_decline": np.maximum(declined, rng.random(300) < 0.15)}
    table = stats.compare(base, cand, n_resamples=300, n_permutations=500)
    assert "higher_is_better" not in table.columns  # directions come from the registry
    ax = forest(table)
    panels = ax.figure.axes
    assert len(panels) == 2
    for panel in panels:  # every row on a panel reads the way its label says
        heading = _labels(panel)[0]
        x = _artist(panel, "raglab-estimates").get_offsets()[:, 0]
        if heading == "recall@5":
            assert panel.get_xlabel().endswith("(better \N{RIGHTWARDS ARROW})") and (x > 0).all()  # better, right
        else:
            assert heading == "false_decline (lower is better)"
            assert panel.get_xlabel().endswith("(\N{LEFTWARDS ARROW} better)") and (x > 0).all()  # worse, right
            assert "\N{RIGHTWARDS ARROW}" not in panel.get_xlabel()
    assert [p.get_xlabel().split("   ")[0] for p in panels] == ["difference (candidate - baseline): scores in [0, 1]"] * 2
    with pytest.raises(ValueError, match=r"opposite directions .*Pass ax=None .*scale='margin'"):
        forest(table, ax=plt.subplots()[1])
    one = forest(table, scale="margin", margin=0.02)  # one axis where right is better for both
    improvement = _artist(one, "raglab-estimates").get_offsets()[:, 0]
    assert improvement[0] > 0 and improvement[-1] < 0  # recall up (better), false_decline up (worse)
    assert len(forest(table, panels={"false_decline": "scores in [0, 1]"}).figure.axes) == 1  # the caller's choice


def test_the_card_names_the_runs_and_the_evalset():
    from raglab._meta import set_meta

    rng = np.random.default_rng(4)
    n = 200
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "hit@5": (rng.random(n) < 0.7).astype(float)})
    cand = base.assign(**{"hit@5": (rng.random(n) < 0.72).astype(float)})
    stamp = {"name": "squad-dev", "version": "v3", "hash": "0123abcd", "n": n}
    set_meta(base, {"run": {"name": "chunk1000_bm25"}, "evalset": stamp})
    set_meta(cand, {"run": {"name": "chunk500_rerank"}, "evalset": stamp})
    result = base.rag.gate(cand, metrics=["hit@5"], margin=0.02, n_resamples=200)
    named = "chunk500_rerank (candidate) vs chunk1000_bm25 (baseline); eval set squad-dev v3"
    for source in (result, result.table, base.rag.compare(cand, metrics=["hit@5"], n_resamples=200)):
        assert forest(source).get_title().splitlines()[1] == named
    title = forest(result, names={"base": "old", "cand": "new"}).get_title()
    assert title.splitlines()[1] == "new (candidate) vs old (baseline); eval set squad-dev v3"
    set_meta(cand, {"run": {"name": "chunk500_rerank"}, "evalset": {**stamp, "version": "v4"}})
    moved = base.rag.gate(cand, metrics=["hit@5"], margin=0.02, n_resamples=200, allow_evalset_mismatch=True)
    wrapped = " ".join(forest(moved).get_title().split())  # the title wraps to the figure's width
    assert "eval sets differ: squad-dev v4 (candidate), squad-dev v3 (baseline)" in wrapped
    plain = _gate(("hit@5",))  # arrays: nothing to name, unless names= says it
    assert len(forest(plain).get_title().splitlines()) == 2
    assert forest(plain, names=("a", "b")).get_title().splitlines()[1] == "b (candidate) vs a (baseline); eval set not stamped"
    with pytest.raises(ValueError, match=r"`names` takes the keys 'base', 'cand' and 'evalset'; got \['baseline'\]"):
        forest(plain, names={"baseline": "a"})


def test_the_card_tells_eval_sets_with_one_name_and_version_but_different_hashes_apart():
    import warnings

    from raglab._meta import set_meta

    rng = np.random.default_rng(5)
    n = 100
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "recall@5": rng.random(n)})
    cand = base.assign(**{"recall@5": np.clip(base["recall@5"] + 0.01, 0, 1)})
    long_hash = "0123456789abcdef" * 4
    set_meta(base, {"evalset": {"name": "support-qa", "version": "v3", "hash": long_hash}})
    set_meta(cand, {"evalset": {"name": "support-qa", "version": "v3", "hash": "bbbb"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the mismatch warning, allowed here on purpose
        moved = base.rag.gate(cand, metrics=["recall@5"], margin=0.02, n_resamples=200, allow_evalset_mismatch=True)
        compared = base.rag.compare(cand, metrics=["recall@5"], n_resamples=200, allow_evalset_mismatch=True)
    for source in (moved, compared):
        wrapped = " ".join(forest(source).get_title().split())
        assert ("eval sets differ: support-qa v3 (candidate), support-qa v3 (baseline) "
                "(hash bbbb vs 0123456789ab\N{HORIZONTAL ELLIPSIS})") in wrapped, wrapped
        assert "eval set support-qa" not in wrapped
    # same name, version and hash: one eval set, no hash shown
    set_meta(cand, {"evalset": {"name": "support-qa", "version": "v3", "hash": long_hash}})
    same = " ".join(forest(base.rag.gate(cand, metrics=["recall@5"], margin=0.02, n_resamples=200)).get_title().split())
    assert "; eval set support-qa v3 95%" in same and "hash" not in same
