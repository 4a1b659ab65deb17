"""Clustered items in the report: cluster codes, the cluster bootstrap and the design effects.

Items from one conversation or document are not independent. With ``units=`` every interval of
:func:`raglab.agreement.report` treats whole clusters as the sampling unit: the rates (agreement,
pass rates, sensitivity, specificity, miss rate) get a cluster-robust Wilson interval
(``_cluster_wilson``: effective sample size, t with G - 1 df), and kappa, the attenuation and
the corrected pass rate the expanded percentile of a cluster bootstrap (``_cluster_tables``).
Each statistic gets a design effect: the cluster-bootstrap variance over the item-bootstrap
variance. A statistic resting on fewer than ``raglab.stats.MIN_CLUSTERS`` clusters gets no
interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._interval import Interval
from raglab.agreement._common import percentile
from raglab.agreement.kappa import kappa_many
from raglab.stats import MIN_CLUSTERS
from raglab.stats import _unit_codes as _cluster_codes
from raglab.stats._engine import _expanded_levels
from raglab.stats.intervals import _wilson_arrays

__all__: list[str] = []


def item_clusters(units: Any, n: int) -> tuple[np.ndarray, str | None]:
    """Cluster codes 0..G-1 per item, and the cluster column's name when it has one."""
    if isinstance(units, (str, bytes)) or np.ndim(units) != 1:
        raise TypeError("`units` must be a one-dimensional sequence with one cluster label per item")
    name = str(units.name) if isinstance(units, pd.Series) and units.name is not None else None
    return _cluster_codes(units, n), name  # one place checks and numbers cluster labels


def _cluster_tables(
    clusters: np.ndarray, cells: np.ndarray, k: int, n_resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-bootstrap count tables (B x k x k): G clusters drawn with replacement per resample.

    Also returns the per-cluster tables (G x k*k). Clusters with the same table are exchangeable, so
    a resample is a multinomial count of draws over the distinct tables (G draws, each table's
    chance its share of the clusters) times those tables: the same distribution as drawing cluster
    ids, at a cost of B x (distinct tables), in chunks of bounded memory.
    """
    g = int(clusters.max()) + 1
    per = np.bincount(clusters * k * k + cells, minlength=g * k * k).reshape(g, k * k).astype(float)
    profiles, weight = np.unique(per, axis=0, return_counts=True)
    out = np.empty((n_resamples, k * k))
    chunk = max(1, 2**22 // len(profiles))
    for start in range(0, n_resamples, chunk):
        m = min(chunk, n_resamples - start)
        out[start : start + m] = rng.multinomial(g, weight / g, size=m) @ profiles
    return out.reshape(n_resamples, k, k), per


def table_statistics(tables: np.ndarray, dis: np.ndarray, pos: int | None) -> dict[str, np.ndarray]:
    """Every report statistic for a stack of count tables (B x k x k); NaN where undefined."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {"agreement": np.trace(tables, axis1=1, axis2=2) / n, "kappa": kappa_many(tables, dis)}
        if pos is None:
            return out
        hp = tables[:, pos, :].sum(1)
        tp = tables[:, pos, pos]
        jp = tables[:, :, pos].sum(1)
        fp = jp - tp
        hn = n - hp
        se, sp = tp / hp, (hn - fp) / hn
        j = se + sp - 1
        corrected = np.where(j > 0, (jp / n + sp - 1) / j, np.nan)
        out.update(
            human_positive_rate=hp / n, judge_positive_rate=jp / n, sensitivity=se, specificity=sp,
            miss_rate=fp / hn, attenuation=j, corrected_pass_rate=np.clip(corrected, 0.0, 1.0),
        )
    return out


def _cluster_proportions(per_cluster: np.ndarray, pos: int | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each rate of the report, its numerator and denominator in every cluster (G x k x k tables)."""
    total = per_cluster.sum(axis=(1, 2))
    out = {"agreement": (np.trace(per_cluster, axis1=1, axis2=2), total)}
    if pos is None:
        return out
    hp = per_cluster[:, pos, :].sum(1)
    jp = per_cluster[:, :, pos].sum(1)
    tp = per_cluster[:, pos, pos]
    fp, hn = jp - tp, total - hp
    out.update(human_positive_rate=(hp, total), judge_positive_rate=(jp, total), sensitivity=(tp, hp),
               specificity=(hn - fp, hn), miss_rate=(fp, hn))
    return out


def _cluster_wilson(successes: np.ndarray, totals: np.ndarray, level: float) -> tuple[float, float]:
    """Wilson interval for a rate over clusters: effective sample size and a t quantile with G - 1 df.

    ``p = sum(a_g) / sum(m_g)`` over the G clusters that have items in the denominator; its
    cluster-robust variance is ``G / (G - 1) * sum((a_g - p m_g)**2) / (sum m_g)**2`` (the linearised
    ratio estimator). The Wilson interval is taken at the effective size ``n_eff = p (1 - p) / var``,
    capped at the items counted (a design effect below 1 is not credited), with ``t(G - 1)`` for
    ``z`` (Korn and Graubard's recipe for survey proportions). Wilson's asymmetry follows the
    skew of rates near 0 or 1 that symmetric and percentile intervals miss with few clusters.
    """
    used = totals > 0
    a, m = successes[used], totals[used]
    g, n = int(used.sum()), float(m.sum())
    p = float(a.sum()) / n
    var = g / (g - 1) * float(((a - p * m) ** 2).sum()) / n**2
    n_eff = n if var <= 0 else min(n, p * (1 - p) / var)
    t = float(_sps.t.ppf(0.5 + level / 2, g - 1))
    low, high = _wilson_arrays(p, n_eff, t)
    return float(low), float(high)


def cluster_intervals(
    intervals: dict[str, Interval],
    denominators: dict[str, int],
    *,
    clusters: np.ndarray,
    cells: np.ndarray,
    k: int,
    dis: np.ndarray,
    pos: int | None,
    item_tables: np.ndarray,
    rng: np.random.Generator,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> tuple[int, dict[str, float], np.ndarray | None, str | None]:
    """Replace every interval by its clustered one, in place, and measure the design effects.

    ``clusters`` are the kept items' cluster labels and ``cells`` their confusion cells
    (``human_code * k + judge_code``). Returns the number of clusters, the design effect of each
    statistic, the cluster-bootstrap (sensitivity, specificity) pairs (B x 2; None without a
    positive label) and a warning text when some statistic rests on too few clusters.
    """
    codes, _ = pd.factorize(clusters, sort=False)
    n_clusters = int(codes.max()) + 1
    boot_tables, per_cluster = _cluster_tables(codes, cells, k, n_resamples, rng)
    cluster_stats = table_statistics(boot_tables, dis, pos)
    item_stats = table_statistics(item_tables, dis, pos)
    per_cluster = per_cluster.reshape(-1, k, k)
    behind = dict.fromkeys(intervals, n_clusters)
    se_sp_draws = None
    if pos is not None:
        with_pos = int((per_cluster[:, pos, :].sum(1) > 0).sum())
        with_neg = int((per_cluster.sum(axis=(1, 2)) - per_cluster[:, pos, :].sum(1) > 0).sum())
        behind.update({"sensitivity": with_pos, "specificity": with_neg, "miss_rate": with_neg,
                       "attenuation": min(with_pos, with_neg), "corrected_pass_rate": min(with_pos, with_neg)})
        se_sp_draws = np.column_stack([cluster_stats["sensitivity"], cluster_stats["specificity"]])
    too_few = {name: c for name, c in behind.items() if c < MIN_CLUSTERS and name in intervals}
    rates = _cluster_proportions(per_cluster, pos)
    design_effects: dict[str, float] = {}
    for name, old in list(intervals.items()):
        if name in too_few:
            low = high = deff = math.nan
            how = f"no interval: rests on {too_few[name]} clusters (< {MIN_CLUSTERS})"
        else:
            if name in rates:
                low, high = _cluster_wilson(*rates[name], level)
                how = f"cluster-robust Wilson (effective n, t with {behind[name] - 1} df) over {behind[name]} clusters"
            else:
                # The expanded percentile (Hesterberg 2015; raglab.stats' cluster intervals use it too):
                # the percentile at the level whose normal quantile is sqrt(G / (G - 1)) * t(G - 1), G
                # the clusters behind the statistic (benchmarks/agreement_coverage.py).
                expanded = float(_expanded_levels(np.array([behind[name]]), level)[0])
                low, high = percentile(cluster_stats[name], expanded)
                how = f"cluster bootstrap expanded-percentile over {behind[name]} clusters"
            var_c, var_i = (float(np.nanvar(s[name])) for s in (cluster_stats, item_stats))
            deff = var_c / var_i if var_i > 0 else math.nan
        intervals[name] = Interval(old.estimate, low, high, method=how, level=level, n=denominators[name],
                                   n_resamples=n_resamples, seed=seed)
        design_effects[name] = deff
    message = None
    if too_few:
        which = ", ".join(f"{name} ({c})" for name, c in too_few.items())
        message = (
            f"units=: a cluster bootstrap needs at least {MIN_CLUSTERS} clusters to say anything about sampling "
            f"error; these statistics rest on fewer (clusters behind each: {which}) and get no interval. Use "
            "finer clusters, label more clusters, or no units= if the items really are independent."
        )
    return n_clusters, design_effects, se_sp_draws, message
