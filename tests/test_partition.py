"""raglab._partition: per-partition statistics, their exact combine, and the summary made from them."""

from __future__ import annotations

from fractions import Fraction
from functools import reduce

import numpy as np
import pandas as pd
import pytest

from raglab import _partition as P
from raglab.stats import summary

NAMES = ["hit@5", "recall@5", "latency_s", "ndcg@5", "faithfulness"]


def _data(n: int = 240, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = np.c_[
        rng.integers(0, 2, n).astype(float),  # pass/fail: Wilson
        rng.beta(8, 1, n),  # a [0, 1] score near its bound: Wilson at the effective n
        rng.normal(100.0, 1.0, n),  # unbounded: t (large mean, small spread: the variance must not cancel)
        np.full(n, 0.3),  # every value equal: Wilson at n
        np.r_[rng.random(n - 3), [np.nan] * 3],
    ]
    values[rng.random(values.shape) < 0.1] = np.nan
    slices = rng.choice(np.array(["a", "b", "c", None], dtype=object), n)
    return values, slices


def _assert_same(expected: pd.DataFrame, got: pd.DataFrame) -> None:
    assert list(got.columns) == list(expected.columns)
    assert got.dtypes.equals(expected.dtypes)
    for column in expected.columns:
        a, b = expected[column], got[column]
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=0, atol=1e-12, err_msg=column)
        else:
            pd.testing.assert_series_equal(b, a, check_names=False)


def _split(values: np.ndarray, slices: np.ndarray | None, cuts: list[int]) -> list[P.Stats]:
    edges = [0, *cuts, len(values)]
    return [P.partition_stats(values[a:b], NAMES, None if slices is None else slices[a:b])
            for a, b in zip(edges[:-1], edges[1:])]


@pytest.mark.parametrize("sliced", [False, True])
@pytest.mark.parametrize("cuts", [[], [100], [1, 50, 51, 200, 239], list(range(10, 240, 10))])
def test_the_summary_from_partition_statistics_is_the_summary_of_the_rows(sliced: bool, cuts: list[int]) -> None:
    values, slices = _data()
    expected = summary(dict(zip(NAMES, values.T)), slices=slices if sliced else None)
    stats = P.combine(*_split(values, slices if sliced else None, cuts))
    got = P.summary_table(stats)
    _assert_same(expected, got)
    assert set(got["method"]) == {"wilson", "wilson (bounded score, effective n)", "t",
                                  "wilson (bounded score, all values equal)"}


@pytest.mark.parametrize("method", ["wilson", "exact", "normal", "t"])
def test_named_methods_match(method: str) -> None:
    values, slices = _data(seed=3)
    names = ["hit@5"] if method != "t" else NAMES
    values = values[:, : len(names)]
    expected = summary(dict(zip(names, values.T)), slices=slices, method=method, ci=0.9)
    stats = P.combine(*[P.partition_stats(values[i:i + 17], names, slices[i:i + 17]) for i in range(0, 240, 17)])
    _assert_same(expected, P.summary_table(stats, method, 0.9))


def test_a_proportion_method_refuses_scores_that_are_not_pass_fail() -> None:
    stats = P.partition_stats(np.array([[0.5], [1.0]]), ["recall@5"])
    with pytest.raises(ValueError, match="method='wilson' is an interval for pass/fail scores.*'recall@5'"):
        P.summary_table(stats, "wilson")
    with pytest.raises(ValueError, match="percentile"):
        P.summary_table(stats, "percentile")


def test_combined_in_any_order_or_grouping_equals_the_whole_table_bit_for_bit() -> None:
    values, slices = _data(n=300, seed=7)
    whole = P.partition_stats(values, NAMES, slices).by_key()
    rng = np.random.default_rng(0)
    for _ in range(5):
        perm = rng.permutation(len(values))
        cuts = sorted(rng.choice(np.arange(1, 300), 7, replace=False).tolist())
        parts = _split(values[perm], slices[perm], cuts)
        rng.shuffle(parts)
        left = reduce(P.combine, parts)  # ((a + b) + c) + ...
        right = reduce(lambda a, b: P.combine(b, a), parts[::-1])  # a + (b + (c + ...))
        tree = P.combine(P.combine(*parts[:3]), P.combine(*parts[3:]))
        for combined in (left, right, tree):
            assert combined.by_key() == whole  # counts, min, max and the exact sums: equal, not close


def test_the_sums_are_exact() -> None:
    values, _ = _data(n=500, seed=11)
    stats = P.partition_stats(values, NAMES)
    for j in range(len(NAMES)):
        x = values[:, j][~np.isnan(values[:, j])]
        cell = stats.cells[0][j]
        assert cell.n == x.size and cell.low == x.min() and cell.high == x.max()
        assert sum(map(Fraction, cell.sums)) == sum(map(Fraction, x.tolist()))
        assert sum(map(Fraction, cell.squares)) == sum(Fraction(v) ** 2 for v in x.tolist())
        mean, variance = P._moments(cell)
        exact_mean = sum(map(Fraction, x.tolist())) / x.size
        exact_var = sum((Fraction(v) - exact_mean) ** 2 for v in x.tolist()) / (x.size - 1)
        assert mean == float(exact_mean)  # rounded once
        assert variance == float(exact_var)
        assert abs(variance - float(np.var(x, ddof=1))) <= 1e-12 * max(1.0, variance)


def test_cancellation_does_not_lose_the_variance() -> None:
    x = 1e8 + np.array([0.0, 1.0, 2.0, 3.0])  # sum of squares minus n mean^2 would lose every digit in floats
    _, variance = P._moments(P.partition_stats(x[:, None], ["latency_s"]).cells[0][0])
    assert variance == np.var(x, ddof=1)


def test_empty_cells_and_one_score() -> None:
    values = np.array([[np.nan, 0.2], [np.nan, np.nan]])
    expected = summary({"hit@5": values[:, 0], "latency_s": values[:, 1]})
    _assert_same(expected, P.summary_table(P.partition_stats(values, ["hit@5", "latency_s"])))


def test_slices_sort_as_pandas_numbers_and_categories() -> None:
    values = np.arange(6, dtype=float)[:, None]
    numbers = [10, 9, 10, 2, 9, 2]
    expected = summary({"latency_s": values[:, 0]}, slices=pd.Series(numbers))
    stats = P.combine(P.partition_stats(values[:3], ["latency_s"], numbers[:3]),
                      P.partition_stats(values[3:], ["latency_s"], numbers[3:]))
    _assert_same(expected, P.summary_table(stats, slice_dtype=np.dtype("int64")))
    cats = pd.Series(pd.Categorical(["z", "a", "z", "m", "a", "m"], categories=["z", "m", "a"]))
    expected = summary({"latency_s": values[:, 0]}, slices=cats)
    stats = P.combine(P.partition_stats(values[:3], ["latency_s"], cats[:3]),
                      P.partition_stats(values[3:], ["latency_s"], cats[3:]))
    _assert_same(expected, P.summary_table(stats, slice_dtype=cats.dtype))


@pytest.mark.parametrize("case", ["wide", "cancel", "subnormal", "near zero", "integers"])
def test_the_vectorised_exact_sum_is_exact(case: str) -> None:
    rng = np.random.default_rng(5)
    x = {
        "wide": rng.random(1000) * 10.0 ** rng.integers(-300, 300, 1000) * rng.choice([-1, 1], 1000),
        "cancel": np.array([1e16, 1.0, -1e16, 3e-30, 2.0**-60]),
        "subnormal": rng.normal(0, 1, 500) * 1e-310,
        "near zero": rng.beta(0.01, 1, 3000),
        "integers": rng.integers(0, 2, 10_000).astype(float),
    }[case]
    terms = P._exact_sum(x)
    assert sum(map(Fraction, terms)) == sum(map(Fraction, x.tolist()))
    assert terms == P._exact(x.tolist())  # the same canonical tuple as repeated fsum


@pytest.mark.parametrize("seed", range(12))
def test_small_and_ragged_cells_match_pandas(seed: int) -> None:
    """Cells of 0, 1 and 2 scores, equal values, all-missing slices: the edge cases of the t and Wilson rules."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 14))
    values = np.c_[
        rng.integers(0, 2, n).astype(float),
        rng.choice([0.0, 0.5, 1.0, 0.25], n),
        rng.normal(3.0, 2.0, n).round(int(rng.integers(0, 3))),
    ]
    values[rng.random(values.shape) < 0.3] = np.nan
    names = ["hit@5", "recall@5", "latency_s"]
    slices = rng.choice(np.array(["x", "y", "z", None], dtype=object), n)
    ci = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
    expected = summary(dict(zip(names, values.T)), slices=slices, ci=ci)
    cut = int(rng.integers(0, n + 1))
    stats = P.combine(P.partition_stats(values[:cut], names, slices[:cut]),
                      P.partition_stats(values[cut:], names, slices[cut:]))
    _assert_same(expected, P.summary_table(stats, level=ci))
