"""raglab.sampling.draw: the recorded probabilities are the real ones, the weighted mean is unbiased."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from raglab import io
from raglab._errors import MissingColumnError
from raglab._meta import sampling_design_of
from raglab.sampling import draw

SEEDS = 2000


@pytest.fixture(scope="module")
def population() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    size = 40
    topic = np.array(["a"] * 20 + ["b"] * 12 + ["c"] * 8)
    score = np.clip(rng.beta(2, 2, size) + (topic == "c") * 0.3, 0, 1)
    spread = np.where(topic == "b", 3.0, 1.0)
    pilot = rng.normal(0, spread)
    # the quantity people would label: related to the judge's score, so an unweighted active sample is biased
    value = (rng.random(size) < 0.2 + 0.6 * np.abs(score - 0.5) * 2).astype(float)
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(size)], "topic": topic, "score": score,
                         "pilot": pilot, "value": value}, index=pd.RangeIndex(100, 100 + size))


DESIGNS = {
    "uniform": dict(method="uniform"),
    "stratified": dict(method="uniform", by="topic"),
    "neyman": dict(method="neyman", by="topic", score="pilot"),
    "active": dict(method="active", score="score", threshold=0.5, floor=0.2),
    "active_strata": dict(method="active", score="score", threshold=0.5, by="topic"),
    "active_uncertainty": dict(method="active", score="pilot_abs"),
}


def _rows(population: pd.DataFrame) -> pd.DataFrame:
    return population.assign(pilot_abs=population["pilot"].abs())


@pytest.fixture(scope="module")
def repeated(population) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per design: the recorded probabilities (seed 0) and the selection matrix over SEEDS seeds."""
    rows = _rows(population)
    out = {}
    for name, kwargs in DESIGNS.items():
        marked = [draw(rows, 12, seed=seed, **kwargs) for seed in range(SEEDS)]
        probabilities = np.array([m["inclusion_probability"].to_numpy() for m in marked])
        assert np.allclose(probabilities, probabilities[0]), f"{name}: the probabilities depend on the seed"
        out[name] = (probabilities[0], np.array([m["selected"].to_numpy() for m in marked]))
    return out


@pytest.mark.parametrize("name", list(DESIGNS))
def test_probabilities_are_in_range_and_sum_to_n(population, name):
    marked = draw(_rows(population), 12, seed=3, **DESIGNS[name])
    p = marked["inclusion_probability"].to_numpy()
    assert ((p > 0) & (p <= 1)).all()
    assert p.sum() == pytest.approx(12, abs=1e-9)
    if not name.startswith("active"):  # fixed size
        assert marked["selected"].sum() == 12
    assert marked["selected"].dtype == bool
    assert marked.index.equals(population.index)
    assert list(marked["question_id"]) == list(population["question_id"])


@pytest.mark.parametrize("name", list(DESIGNS))
def test_empirical_inclusion_frequencies_match_the_recorded_probabilities(repeated, name):
    p, selected = repeated[name]
    frequency = selected.mean(axis=0)
    se = np.sqrt(p * (1 - p) / SEEDS)
    certain = se == 0
    assert (frequency[certain] == p[certain]).all()
    z = np.abs(frequency[~certain] - p[~certain]) / se[~certain]
    assert z.max() < 4.5, f"{name}: row {int(np.argmax(z))} chosen {frequency[~certain][np.argmax(z)]:.3f} vs {p[~certain][np.argmax(z)]:.3f}"


def test_the_frequency_check_can_fail(repeated):
    """A wrong record (uniform n/N written for the active design) is caught by the same check."""
    p, selected = repeated["active"]
    wrong = np.full_like(p, 12 / len(p))
    z = np.abs(selected.mean(axis=0) - wrong) / np.sqrt(wrong * (1 - wrong) / SEEDS)
    assert z.max() > 10


@pytest.mark.parametrize("name", list(DESIGNS))
def test_horvitz_thompson_mean_is_unbiased(population, repeated, name):
    p, selected = repeated[name]
    y = population["value"].to_numpy()
    estimates = (selected * (y / p)).sum(axis=1) / len(y)
    mc_se = estimates.std(ddof=1) / np.sqrt(SEEDS)
    assert abs(estimates.mean() - y.mean()) < 4 * mc_se + 1e-12, (estimates.mean(), y.mean(), mc_se)


def test_unweighted_active_sample_is_biased(population, repeated):
    """The simulation has power: ignoring the active design's probabilities is biased here."""
    _, selected = repeated["active"]
    y = population["value"].to_numpy()
    naive = np.array([y[s].mean() for s in selected if s.any()])
    mc_se = naive.std(ddof=1) / np.sqrt(len(naive))
    assert abs(naive.mean() - y.mean()) > 6 * mc_se


def test_active_floor_and_favours_the_uncertain(population):
    marked = draw(population, 12, method="active", score="score", threshold=0.5, floor=0.3)
    p = marked["inclusion_probability"].to_numpy()
    assert p.min() >= 0.3 * 12 / len(p) - 1e-12
    distance = np.abs(population["score"].to_numpy() - 0.5)
    assert p[np.argmin(distance)] == p.max() and p[np.argmax(distance)] == p.min()
    # floor=1 is a uniform Poisson sample
    flat = draw(population, 12, method="active", score="score", threshold=0.5, floor=1.0)
    assert np.allclose(flat["inclusion_probability"], 12 / len(p))


def test_active_caps_at_one_and_still_sums_to_n():
    rows = pd.DataFrame({"u": [10.0, 0, 0, 0, 0, 0, 0, 0, 0, 0]})
    p = draw(rows, 4, method="active", score="u", floor=0.1)["inclusion_probability"].to_numpy()
    assert p[0] == 1.0 and p.sum() == pytest.approx(4)
    assert np.allclose(p[1:], 3 / 9)


def test_neyman_allocation_worked_numbers():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=100), rng.normal(size=100)
    a = (a - a.mean()) / a.std(ddof=1)  # S_a = 1
    b = 3 * (b - b.mean()) / b.std(ddof=1)  # S_b = 3
    rows = pd.DataFrame({"s": ["a"] * 100 + ["b"] * 100 + ["c"] * 50, "x": np.r_[a, b, np.zeros(50)]})
    marked = draw(rows, 42, by="s", method="neyman", score="x", seed=5)
    taken = marked.groupby("s")["selected"].sum().to_dict()
    assert taken == {"a": 10, "b": 30, "c": 2}  # N_h S_h = 100, 300, 0; at least 2 per stratum
    assert marked.groupby("s")["inclusion_probability"].first().to_dict() == pytest.approx(
        {"a": 0.1, "b": 0.3, "c": 0.04})


def test_neyman_caps_a_stratum_at_its_size():
    rows = pd.DataFrame({"s": ["a"] * 5 + ["b"] * 100, "x": np.r_[np.arange(5) * 100.0, np.arange(100) * 0.01]})
    marked = draw(rows, 20, by="s", method="neyman", score="x")
    assert marked.groupby("s")["selected"].sum().to_dict() == {"a": 5, "b": 15}


def test_neyman_uses_the_rows_the_pilot_scored():
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(0, 1, 100), rng.normal(0, 4, 100)]
    rows = pd.DataFrame({"s": ["a"] * 100 + ["b"] * 100, "x": x})
    piloted = rows.assign(x=rows["x"].where(np.arange(200) % 4 == 0))  # a quarter piloted
    spreads = [np.std(x[:100][::4], ddof=1), np.std(x[100:][::4], ddof=1)]
    marked = draw(piloted, 50, by="s", method="neyman", score="x")
    share = spreads[0] / sum(spreads)
    assert abs(marked.groupby("s")["selected"].sum()["a"] - 50 * share) <= 1
    with pytest.raises(ValueError, match=r"has 1 values in the stratum s='b' \(100 rows\)"):
        draw(piloted.assign(x=piloted["x"].where(np.arange(200) != 104).where(np.arange(200) < 108)), 50, by="s",
             method="neyman", score="x")


def test_active_takes_a_bool_disagreement_column():
    rows = pd.DataFrame({"disagree": [True, False, False, True, False, False, False, False]})
    p = draw(rows, 4, method="active", score="disagree", floor=0.2)["inclusion_probability"].to_numpy()
    # 4 (0.2/8 + 0.8 u/2) gives 1.7 on the disagreements: capped at 1, the other 2 spread over 6 rows
    assert p.sum() == pytest.approx(4) and p[0] == p[3] == 1.0 and np.allclose(p[[1, 2, 4, 5, 6, 7]], 1 / 3)


def test_proportional_allocation_and_the_minimum_of_one():
    rows = pd.DataFrame({"s": ["a"] * 97 + ["b"] * 3})
    marked = draw(rows, 10, by="s")
    assert marked.groupby("s")["selected"].sum().to_dict() == {"a": 9, "b": 1}


def test_deterministic_given_the_seed(population):
    one = draw(population, 10, seed=11)
    assert one["selected"].equals(draw(population, 10, seed=11)["selected"])
    assert not one["selected"].equals(draw(population, 10, seed=12)["selected"])


def test_design_is_recorded(population):
    marked = draw(population, 10, by="topic", seed=4)
    design = sampling_design_of(marked, "labelled")
    assert (design.kind, design.method, design.n, design.population, design.strata, design.inclusion_probability,
            design.seed) == ("labelled", "stratified", 10, 40, "topic", "inclusion_probability", 4)
    active = draw(population, 10, method="active", score="score", threshold=0.5, kind="judged")
    record = sampling_design_of(active, "judged")
    assert record.method == "active" and record.extra["floor"] == 0.1 and record.extra["threshold"] == 0.5
    assert "attrs" not in population.attrs.get("raglab", {})  # the input is left alone
    assert "selected" not in population.columns


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_design_survives_write_and_read(population, tmp_path, suffix):
    marked = draw(population, 10, method="neyman", by="topic", score="pilot", seed=2)
    path = tmp_path / f"rows{suffix}"
    io.write_rows(marked, path)
    back = io.read_rows(path)
    assert back.attrs["raglab"]["sampling"] == marked.attrs["raglab"]["sampling"]
    assert sampling_design_of(back, "labelled").method == "neyman"
    assert back["selected"].tolist() == marked["selected"].tolist()
    assert np.allclose(back["inclusion_probability"], marked["inclusion_probability"])


def test_keeps_existing_metadata(population):
    rows = population.copy()
    rows.attrs["raglab"] = {"run": {"name": "base"}}
    marked = draw(rows, 5)
    assert marked.attrs["raglab"]["run"] == {"name": "base"}


def test_a_second_kind_does_not_overwrite_the_first_kinds_columns(population):
    labelled = draw(population, 5)
    with pytest.raises(ValueError, match="already holds the 'labelled' design's columns"):
        draw(labelled, 5, kind="judged")
    # the same kind again is a redraw
    assert sampling_design_of(draw(labelled, 6), "labelled").n == 6


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n=41), ValueError, r"n=41 rows asked of a table of 40 rows"),
    (dict(n=0), ValueError, r"n=0 rows asked"),
    (dict(n=2.5), TypeError, r"n must be an int"),
    (dict(n=5, by="nope"), MissingColumnError, r"by='nope' is not a column"),
    (dict(n=5, method="random"), ValueError, r"method='random'; choose one of"),
    (dict(n=5, method="neyman", score="pilot"), ValueError, r"method='neyman' allocates across strata"),
    (dict(n=5, method="neyman", by="topic"), ValueError, r"needs score="),
    (dict(n=5, method="active"), ValueError, r"needs score="),
    (dict(n=5, method="active", score="gone"), MissingColumnError, r"score='gone' is not a column"),
    (dict(n=5, method="active", score="nan_score", threshold=0.5), ValueError,
     r"'nan_score' is NaN or infinite on 1 rows \(first: index 103\)"),
    (dict(n=5, method="active", score="score", floor=0), ValueError, r"floor=0"),
    (dict(n=5, method="active", score="pilot"), ValueError, r"'pilot' is read as an uncertainty"),
    (dict(n=5, method="active", score="question_id"), ValueError, r"'question_id' must be numeric"),
    (dict(n=5, threshold=0.5), ValueError, r"threshold= is used by method='active' only"),
    (dict(n=2, method="neyman", by="topic", score="pilot"), ValueError, r"3 strata of 'topic' need at least 6"),
    (dict(n=5, kind="gold"), ValueError, r"kind='gold'"),
    (dict(n=5, seed=-1), TypeError, r"seed must be an int >= 0"),
])
def test_clear_errors(population, kwargs, error, match):
    rows = population.assign(nan_score=population["score"].where(population.index != 103))
    with pytest.raises(error, match=match):
        draw(rows, **kwargs)


def test_missing_strata_are_named(population):
    rows = population.assign(topic=population["topic"].where(population.index != 100))
    with pytest.raises(ValueError, match=r"stratum column 'topic' is missing on 1 rows"):
        draw(rows, 5, by="topic")
