"""The post-mortem view: flips (pass->fail, fail->pass) per slice, their diverging bars, and the pair explorer.

Flip counts are checked against an independent oracle: a merge on the question id and
``pd.crosstab`` of the two runs' pass/fail outcomes, on the bundled SQuAD 2.0 reader runs (BERT as
the baseline, BiDAF as the candidate; EM is the official v2 exact-match score, 0/1).
"""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers df.rag)
from raglab import datasets, plots, runs, widgets
from raglab._errors import MissingColumnError, RowTableError
from raglab._registry import NoDirectionError
from raglab._results import DECISION_COLOURS

_KEEP = ["question_id", "qtype", "article", "answerable", "em", "f1", "declined"]


@pytest.fixture(scope="module")
def readers():
    return datasets.squad_reader("bert")[_KEEP], datasets.squad_reader("bidaf")[_KEEP]


def _oracle(base, cand, passed, by=None):
    """Flip counts from a merge and a crosstab, independent of raglab's pairing and counting."""
    merged = base.merge(cand, on="question_id", suffixes=("_b", "_c"))
    b, c = passed(merged, "_b"), passed(merged, "_c")
    ok = b.notna() & c.notna()
    frame = pd.DataFrame({"b": b[ok].astype(int), "c": c[ok].astype(int),
                          "slice": merged.loc[ok, f"{by}_b"] if by else "overall"})
    out = {}
    groups = [("overall", frame)] + (sorted((str(k), g) for k, g in frame.groupby("slice")) if by else [])
    for name, part in groups:
        table = pd.crosstab(part["b"], part["c"]).reindex(index=[0, 1], columns=[0, 1], fill_value=0)
        out[name] = {"n": len(part), "losses": int(table.loc[1, 0]), "wins": int(table.loc[0, 1]),
                     "both_pass": int(table.loc[1, 1]), "both_fail": int(table.loc[0, 0])}
    return out


def _as_dict(table):
    return {row["slice"]: {k: int(row[k]) for k in ("n", "losses", "wins", "both_pass", "both_fail")}
            for _, row in table.iterrows()}


# ---- flips ------------------------------------------------------------------------------------------
def test_flips_match_a_crosstab_oracle_per_slice(readers):
    base, cand = readers
    table = runs.flips(base, cand.sample(frac=1.0, random_state=0), "em", by="qtype", per=100)
    assert _as_dict(table) == _oracle(base, cand, lambda m, s: m[f"em{s}"], by="qtype")
    assert table["slice"].iloc[0] == "overall" and list(table["slice"].iloc[1:]) == sorted(base["qtype"].unique())
    assert (table["net"] == table["wins"] - table["losses"]).all()
    np.testing.assert_allclose(table["losses_per"], 100 * table["losses"] / table["n"])
    np.testing.assert_allclose(table["net_per"], 100 * table["net"] / table["n"])
    # BERT beats BiDAF on EM: the overall rates agree with the two runs' means.
    overall = table.iloc[0]
    assert overall["net"] == pytest.approx(len(base) * (cand["em"].mean() - base["em"].mean()))
    assert table.attrs["raglab"]["flips"]["pass"] == "em = 1"


def test_threshold_uses_the_direction(readers):
    base, cand = readers
    high = runs.flips(base, cand, "f1", threshold=0.5, by="answerable")
    assert _as_dict(high) == _oracle(base, cand, lambda m, s: (m[f"f1{s}"] >= 0.5).astype(float), by="answerable")
    low = runs.flips(base, cand, "f1", threshold=0.5, higher_is_better=False)
    assert _as_dict(low) == _oracle(base, cand, lambda m, s: (m[f"f1{s}"] <= 0.5).astype(float))
    # a lower-is-better name: pass is <= threshold without being told
    lat_b, lat_c = base.assign(latency_ms=1000 * base["f1"]), cand.assign(latency_ms=1000 * cand["f1"])
    assert _as_dict(runs.flips(lat_b, lat_c, "latency_ms", threshold=500)) == _as_dict(low)
    # raglab's own cost columns are lower-is-better too (they were guessed higher-is-better)
    chars_b, chars_c = base.assign(prompt_chars=1000 * base["f1"]), cand.assign(prompt_chars=1000 * cand["f1"])
    assert _as_dict(runs.flips(chars_b, chars_c, "prompt_chars", threshold=500)) == _as_dict(low)
    # numpy numbers are numbers (a quantile of a float32 column, a count)
    assert _as_dict(runs.flips(base, cand, "f1", threshold=np.float32(0.5), by="answerable", per=np.int64(100))) == \
        _as_dict(runs.flips(base, cand, "f1", threshold=0.5, by="answerable", per=100))
    # a 0/1 lower-is-better metric: 0 passes, so hallucination = 1 - em flips exactly as em does
    hal_b, hal_c = base.assign(hallucination=1 - base["em"]), cand.assign(hallucination=1 - cand["em"])
    assert _as_dict(runs.flips(hal_b, hal_c, "hallucination")) == _as_dict(runs.flips(base, cand, "em"))
    # booleans are pass/fail
    bool_b, bool_c = base.assign(ok=base["em"] == 1), cand.assign(ok=cand["em"] == 1)
    assert _as_dict(runs.flips(bool_b, bool_c, "ok")) == _as_dict(runs.flips(base, cand, "em"))


def test_missing_scores_are_excluded_and_counted(readers):
    base, cand = readers
    base = base.assign(em=base["em"].where(np.arange(len(base)) % 10 != 0))
    cand = cand.assign(em=cand["em"].where(np.arange(len(cand)) % 7 != 0))
    table = runs.flips(base, cand, "em", by="qtype")
    both = base["em"].notna().to_numpy() & cand["em"].notna().to_numpy()
    assert table["n"].iloc[0] == both.sum() and table["n_excluded"].iloc[0] == (~both).sum()
    assert (table["n"] + table["n_excluded"]).iloc[1:].sum() == len(base)
    assert _as_dict(table) == _oracle(base, cand, lambda m, s: m[f"em{s}"], by="qtype")


def test_unpaired_questions_follow_compare(readers):
    base, cand = readers
    with pytest.raises(RowTableError, match="only in base"):
        runs.flips(base, cand.iloc[5:], "em")
    with pytest.warns(UserWarning, match="shared questions only"):
        table = runs.flips(base, cand.iloc[5:], "em", how="inner")
    assert table["n"].iloc[0] == len(base) - 5
    assert table.attrs["raglab"]["flips"]["n_base_only"] == 5


def test_flip_errors_name_the_metric_and_the_fix(readers):
    base, cand = readers
    with pytest.raises(ValueError, match=r"'f1' is not pass/fail.*threshold="):
        runs.flips(base, cand, "f1")
    with pytest.raises(NoDirectionError, match="declined.*higher_is_better=True or False"):
        runs.flips(base, cand, "declined")
    assert runs.flips(base, cand, "declined", higher_is_better=False)["n"].iloc[0] == len(base)
    with pytest.raises(MissingColumnError, match="'recall@5'"):
        runs.flips(base, cand, "recall@5")
    with pytest.raises(ValueError, match="`threshold` must be a finite number"):
        runs.flips(base, cand, "f1", threshold=float("nan"))
    with pytest.raises(ValueError, match="`per` must be a positive number"):
        runs.flips(base, cand, "em", per=0)
    with pytest.raises(MissingColumnError, match="'topic'"):
        runs.flips(base, cand, "em", by="topic")


# ---- wins_losses ------------------------------------------------------------------------------------
def _patches(ax, gid):
    return [p for p in ax.patches if p.get_gid() == gid]


def _texts(ax, gid):
    return [t.get_text() for t in ax.texts if t.get_gid() == gid]


def _net(ax):
    found = [c for c in ax.collections if c.get_gid() == "raglab-net"]
    assert len(found) == 1
    return found[0]


def test_wins_losses_draws_the_counts(readers):
    base, cand = readers
    table = runs.flips(base, cand, "em", by="qtype")
    before = plt.gcf()
    ax = plots.wins_losses(base, cand, "em", by="qtype")
    assert ax.figure is not before  # its own figure, sized to the rows
    assert ax.figure.get_size_inches()[1] > 0.4 * len(table)
    losses, wins = _patches(ax, "raglab-losses"), _patches(ax, "raglab-wins")
    assert len(losses) == len(wins) == len(table) == 9
    # losses extend to the LEFT in the block colour, wins to the right in the pass colour
    np.testing.assert_allclose([p.get_width() for p in losses], -table["losses"])
    np.testing.assert_allclose([p.get_width() for p in wins], table["wins"])
    assert all(p.get_x() == 0 for p in losses + wins)
    assert mcolors.same_color(losses[0].get_facecolor(), DECISION_COLOURS["block"])
    assert mcolors.same_color(wins[0].get_facecolor(), DECISION_COLOURS["pass"])
    offsets = _net(ax).get_offsets()
    np.testing.assert_allclose(offsets[:, 0], table["net"])
    np.testing.assert_allclose(offsets[:, 1], np.arange(len(table)))
    labels = ax.get_yticklabels()
    assert [t.get_text() for t in labels] == [f"{s}  n={n:,}" for s, n in zip(table["slice"], table["n"])]
    assert labels[0].get_fontweight() == "bold" and labels[1].get_fontweight() == "normal"
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the overall row (y = 0) on top
    # thousands separators, as in the y labels ("n=11,873"), and a true minus sign
    assert _texts(ax, "raglab-loss-count") == [f"{v:,}" for v in table["losses"]]
    assert _texts(ax, "raglab-win-count") == [f"{v:,}" for v in table["wins"]]
    assert _texts(ax, "raglab-loss-count")[0] == "2,348" and _texts(ax, "raglab-win-count")[0] == "800"
    assert _texts(ax, "raglab-net-text") == [f"net {v:+,d}".replace("-", "\N{MINUS SIGN}") for v in table["net"]]
    assert _texts(ax, "raglab-net-text")[0] == "net \N{MINUS SIGN}1,548"
    assert "pass→fail" in ax.get_xlabel() and "em = 1" in ax.get_title()


def test_wins_losses_per_100_and_given_axes(readers):
    base, cand = readers
    table = runs.flips(base, cand, "f1", by="qtype", threshold=0.5, per=100)
    fig, (left, right) = plt.subplots(1, 2)
    ax = plots.wins_losses(base, cand, "f1", by="qtype", threshold=0.5, per=100, ax=right, height=0.5)
    assert ax is right and not left.has_data()
    np.testing.assert_allclose([p.get_width() for p in _patches(ax, "raglab-losses")], -table["losses_per"])
    np.testing.assert_allclose([p.get_width() for p in _patches(ax, "raglab-wins")], table["wins_per"])
    assert _patches(ax, "raglab-wins")[0].get_height() == pytest.approx(0.5)
    np.testing.assert_allclose(_net(ax).get_offsets()[:, 0], table["net_per"])
    assert _texts(ax, "raglab-win-count")[0] == f"{table['wins_per'].iloc[0]:.1f}"
    assert "per 100 questions" in ax.get_xlabel() and "f1 >= 0.5" in ax.get_title()


def test_wins_losses_reads_on_a_dark_style_and_drops_empty_slices(readers):
    base, cand = readers
    base = base.assign(em=base["em"].where(base["qtype"] != "why"))  # no scored "why" question left
    with plt.style.context("dark_background"):
        ax = plots.wins_losses(base, cand, "em", by="qtype")
        texts = [t for t in ax.texts if t.get_gid() == "raglab-win-count"]
        assert all(mcolors.same_color(t.get_color(), "white") for t in texts)
    assert not any(t.get_text().startswith("why") for t in ax.get_yticklabels())
    assert "left out" in ax.get_title()


def _tick_slices(ax):
    return [t.get_text().split("  n=")[0] for t in ax.get_yticklabels()]


@pytest.mark.parametrize("sort", [None, "net", "losses", "wins", "n"])
def test_wins_losses_sort_orders_the_slices_under_the_overall_row(readers, sort):
    base, cand = readers
    table = runs.flips(base, cand, "em", by="qtype")
    ax = plots.wins_losses(base, cand, "em", by="qtype", sort=sort)
    slices = table.iloc[1:]
    expected = {None: slices,
                "net": slices.sort_values("net", kind="stable"),  # worst net first
                "losses": slices.sort_values("losses", ascending=False, kind="stable"),
                "wins": slices.sort_values("wins", ascending=False, kind="stable"),
                "n": slices.sort_values("n", ascending=False, kind="stable")}[sort]
    assert _tick_slices(ax) == ["overall"] + list(expected["slice"])
    if sort == "net":
        nets = [int(t.replace("net ", "").replace("\N{MINUS SIGN}", "-").replace(",", ""))
                for t in _texts(ax, "raglab-net-text")]
        assert nets[1:] == sorted(nets[1:]) and nets[0] == table["net"].iloc[0]
    # bars, counts and diamonds follow the labels
    order = [0] + [int(i) for i in expected.index]
    np.testing.assert_allclose([p.get_width() for p in _patches(ax, "raglab-losses")], -table["losses"].iloc[order])
    np.testing.assert_allclose(_net(ax).get_offsets()[:, 0], table["net"].iloc[order])
    assert _texts(ax, "raglab-win-count") == [f"{v:,}" for v in table["wins"].iloc[order]]


def test_wins_losses_sort_per_100_and_bad_option(readers):
    base, cand = readers
    table = runs.flips(base, cand, "em", by="qtype", per=100)
    ax = plots.wins_losses(base, cand, "em", by="qtype", per=100, sort="net")
    assert _tick_slices(ax)[1:] == list(table.iloc[1:].sort_values("net_per", kind="stable")["slice"])
    with pytest.raises(ValueError, match=r"The value for `sort` must be one of \[None, 'net', 'losses', 'wins', 'n'\], "
                                         r"but 'worst' was passed"):
        plots.wins_losses(base, cand, "em", by="qtype", sort="worst")


def _inside_figure(fig):
    """Every drawn text inside the figure after a plain draw (no bbox_inches)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    hidden = set()  # tick labels outside the view limits are "visible" but never drawn
    for ax in fig.axes:
        for axis, i in ((ax.xaxis, 0), (ax.yaxis, 1)):
            low, high = sorted(axis.get_view_interval())
            hidden |= {t for t in axis.get_ticklabels() if not low <= t.get_position()[i] <= high}
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t not in hidden]
    outside = []
    for text in texts:
        e = text.get_window_extent(renderer)
        if not (e.x0 >= box.x0 - 0.5 and e.y0 >= box.y0 - 0.5 and e.x1 <= box.x1 + 0.5 and e.y1 <= box.y1 + 0.5):
            outside.append(text.get_text())
    return texts, outside


@pytest.mark.parametrize("style", ["default", "dark_background"])
def test_wins_losses_texts_inside_the_figure(readers, style):
    base, cand = readers
    with plt.style.context(style):
        ax = plots.wins_losses(base, cand, "em", by="qtype")
        texts, outside = _inside_figure(ax.figure)
    assert len(texts) > 30 and not outside


def test_wins_losses_with_35_slices_scales_to_the_slices(readers):
    base, cand = readers
    table = runs.flips(base, cand, "em", by="article")
    assert len(table) == 36
    ax = plots.wins_losses(base, cand, "em", by="article", sort="net")
    fig = ax.figure
    assert fig.get_size_inches()[1] >= 0.3 * 36 and fig.get_size_inches()[0] > 8  # long article names
    texts, outside = _inside_figure(fig)
    assert not outside
    renderer = fig.canvas.get_renderer()
    # the overall row (the sum of 35 slices) would squeeze them into slivers: the axis is scaled to
    # the slices and the overall bars run off it, their counts written inside the axes
    slices = table.iloc[1:]
    reach = max(slices["losses"].max(), slices["wins"].max(), slices["net"].abs().max())
    low, high = ax.get_xlim()
    assert high == pytest.approx(-low) and reach < high < 2 * reach < table["losses"].iloc[0]
    np.testing.assert_allclose([p.get_width() for p in _patches(ax, "raglab-losses")][0], -table["losses"].iloc[0])
    frame = ax.get_window_extent(renderer)
    for gid, value in (("raglab-loss-count", table["losses"].iloc[0]), ("raglab-win-count", table["wins"].iloc[0])):
        first = [t for t in ax.texts if t.get_gid() == gid][0]  # row order: the overall row first
        assert first.get_text().strip() == f"{value:,}"
        extent = first.get_window_extent(renderer)
        assert frame.x0 - 1e-6 <= extent.x0 and extent.x1 <= frame.x1 + 1e-6  # inside the axes, not over the labels
    assert "overall row not to scale" in ax.get_xlabel()
    # every slice's bars are wider than a sliver (the smallest loss count is 29 of about 110)
    widths = np.abs([p.get_width() for p in _patches(ax, "raglab-losses")][1:])
    assert widths.min() / (high - low) > 0.05
    # no count label of a slice runs into the y tick labels
    labels_right = max(t.get_window_extent(renderer).x1 for t in ax.get_yticklabels())
    assert all(t.get_window_extent(renderer).x0 >= labels_right - 1e-6 for t in ax.texts)


# ---- explore_pair -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pair():
    rows = datasets.handbook()
    rng = np.random.default_rng(1)
    flipped = rng.random(len(rows)) < 0.3
    cand = rows.assign(
        answer="CANDIDATE: " + rows["answer"],
        human_faithful=np.where(flipped, 1 - rows["human_faithful"], rows["human_faithful"]),
        retrieved=[list(r)[::-1] for r in rows["retrieved"]],
        judge_reason="the candidate cites " + rows["question_id"],
    )
    return rows, cand.iloc[::-1].reset_index(drop=True)  # row order does not matter: paired by id


def _parts(box):
    controls, navigation, view = box.children
    slice_box, flip_box = controls.children
    previous, following, position, status = navigation.children
    return slice_box, flip_box, previous, following, position, status, view


def test_pair_view_shows_both_runs_with_gold_marked(pair):
    base, cand = pair
    box = widgets.explore_pair(base, cand, metric="human_faithful")
    *_, position, status, view = _parts(box)
    first = base.iloc[0]
    assert status.value == f"1 of {len(base)}"
    assert first["answer"] in view.value and "CANDIDATE: " + first["answer"] in view.value
    assert f"{first['gold'][0]} ✓" in view.value and view.value.count(" ✓") == 2  # gold marked on both sides
    assert "the candidate cites h01" in view.value and first["question"] in view.value
    assert "baseline" in view.value and "candidate" in view.value


def test_flip_filter_changes_the_count_and_the_question(pair):
    base, cand = pair
    merged = base.merge(cand, on="question_id", suffixes=("_b", "_c"))
    losses = merged[(merged["human_faithful_b"] == 1) & (merged["human_faithful_c"] == 0)]["question_id"].tolist()
    wins = merged[(merged["human_faithful_b"] == 0) & (merged["human_faithful_c"] == 1)]["question_id"].tolist()
    assert losses and wins
    box = widgets.explore_pair(base, cand, by="qtype", metric="human_faithful")
    slice_box, flip_box, previous, following, position, status, view = _parts(box)
    flip_box.value = "pass->fail"
    assert status.value == f"1 of {len(losses)} (pass->fail)"
    assert f">{losses[0]}</h4>" in view.value and "pass → fail" in view.value
    if len(losses) > 1:
        following.click()
        assert status.value.startswith("2 of") and f">{losses[1]}</h4>" in view.value
    flip_box.value = "fail->pass"
    assert status.value == f"1 of {len(wins)} (fail->pass)" and position.value == 1
    assert f">{wins[0]}</h4>" in view.value and "fail → pass" in view.value
    kind = base.set_index("question_id").loc[wins[0], "qtype"]
    slice_box.value = kind
    n = sum(base.set_index("question_id").loc[q, "qtype"] == kind for q in wins)
    assert status.value == f"1 of {n} (qtype = {kind}, fail->pass)"
    flip_box.value = "all"
    assert status.value == f"1 of {int((base['qtype'] == kind).sum())} (qtype = {kind})"
    position.value = 2
    assert status.value.startswith("2 of") and base[base["qtype"] == kind].iloc[1]["question"] in view.value


def test_pair_view_has_a_static_html_fallback(pair):
    base, cand = pair
    box = widgets.explore_pair(base, cand, metric="human_faithful", flip="pass->fail")
    bundle = box._repr_mimebundle_()
    assert "text/html" in bundle and "VBox(" not in bundle["text/html"]
    assert "pass-&gt;fail" in bundle["text/html"] and "CANDIDATE: " in bundle["text/html"]


def test_pair_view_without_a_metric_and_its_errors(pair):
    base, cand = pair
    box = widgets.explore_pair(base, cand)
    slice_box, flip_box, *_ = _parts(box)
    assert flip_box.disabled and slice_box.disabled
    with pytest.raises(ValueError, match="needs metric="):
        widgets.explore_pair(base, cand, flip="pass->fail")
    with pytest.raises(ValueError, match="must be one of"):
        widgets.explore_pair(base, cand, metric="human_faithful", flip="worse")
    with pytest.raises(MissingColumnError, match="'score'"):
        widgets.explore_pair(base, cand, metric="score")
    with pytest.raises(MissingColumnError, match="'topic'"):
        widgets.explore_pair(base, cand, by="topic")
    with pytest.raises(RowTableError, match="h36"):
        widgets.explore_pair(base, cand[cand["question_id"] != "h36"])
    with pytest.raises(MissingColumnError, match="'qid'"):
        widgets.explore_pair(base, cand, question_id="qid")
