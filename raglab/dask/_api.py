"""The functions of ``raglab.dask``: the engine-neutral ones of :mod:`raglab.engines` on Dask DataFrames."""

from __future__ import annotations

from typing import Any

import pandas as pd

from raglab import engines
from raglab.dask._frame import DaskPartitions

__all__ = ["compare", "estimate", "gate", "monitor", "over_time", "summary"]


def _frame(ddf: Any, name: str, what: str = "the table") -> DaskPartitions:
    import dask.dataframe as dd

    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"raglab.dask.{name}: {what} must be a Dask DataFrame, got {type(ddf).__name__} (for pandas "
                        f"use rows.rag.{name}; for Spark, raglab.spark)")
    return DaskPartitions(ddf)


def summary(ddf: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Mean and interval per metric and slice of a Dask DataFrame (``ddf.rag.summary``): the table
    :func:`raglab.runs.summary` makes, from per-partition statistics. Keywords as :func:`raglab.engines.summary`.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import raglab.dask
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "hit@5": [1, 0, 1, 1]})
    >>> with dask.config.set(scheduler="sync"):
    ...     table = dd.from_pandas(rows, npartitions=2).rag.summary(["hit@5"])
    >>> table[["n", "mean", "method"]].values.tolist()
    [[4, 0.75, 'wilson']]
    """
    return engines.summary(_frame(ddf, "summary"), metrics, **options)


def compare(ddf_base: Any, ddf_cand: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Paired comparison of two Dask runs by question id (``ddf.rag.compare``): the table
    :func:`raglab.runs.compare` makes. Keywords as :func:`raglab.engines.compare`.

    Each run's ids and scores are shuffled once by the question id, so each question's two rows meet
    in one partition; no result depends on the partitioning or the row order.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import raglab.dask
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "hit@5": [1, 0] * 20})
    >>> cand = base.assign(**{"hit@5": [1, 1] * 20}).iloc[::-1]
    >>> with dask.config.set(scheduler="sync"):
    ...     t = dd.from_pandas(base, npartitions=2).rag.compare(dd.from_pandas(cand, npartitions=3), ["hit@5"],
    ...                                                         method="score")
    >>> t[["metric", "n", "diff", "method"]].values.tolist()
    [['hit@5', 40, 0.5, 'paired score (Tango)']]
    """
    return engines.compare(_frame(ddf_base, "compare", "the baseline"), _frame(ddf_cand, "compare", "the candidate"),
                           metrics, **options)


def estimate(ddf: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Prediction-powered estimate of a human-labelled metric on a Dask DataFrame (``ddf.rag.estimate``):
    the table :func:`raglab.runs.estimate` makes. Keywords as :func:`raglab.engines.estimate` (``human=``
    is required). Only the labelled rows and the unlabelled rows' sums leave the workers.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import numpy as np, pandas as pd, warnings
    >>> import raglab.dask
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(2000) < 0.7).astype(float)
    >>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(2000)],
    ...                      "faithfulness": np.where(rng.random(2000) < 0.85, truth, 1 - truth),
    ...                      "human_faithful": np.where(rng.random(2000) < 0.1, truth, np.nan)})
    >>> with dask.config.set(scheduler="sync"), warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")      # these labels carry no recorded sampling design
    ...     table = dd.from_pandas(rows, npartitions=4).rag.estimate("faithfulness", human="human_faithful")
    >>> table[["metric", "slice", "n_labeled", "n_judged"]].values.tolist()
    [['faithfulness', 'overall', 212, 2000]]
    """
    return engines.estimate(_frame(ddf, "estimate"), metrics, **options)


def gate(ddf_base: Any, ddf_cand: Any, **options: Any) -> Any:
    """Release gate on two Dask runs (``ddf.rag.gate``), as :func:`raglab.runs.gate`; keywords as
    :func:`raglab.engines.gate` (``margin=`` and ``metrics=`` are required).

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import raglab.dask
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
    >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
    >>> with dask.config.set(scheduler="sync"):
    ...     result = dd.from_pandas(base, npartitions=3).rag.gate(dd.from_pandas(cand, npartitions=2), margin=0.02,
    ...                                                           metrics=["hit@5"], method="score")
    >>> result.decision
    'block'
    """
    return engines.gate(_frame(ddf_base, "gate", "the baseline"), _frame(ddf_cand, "gate", "the candidate"),
                        **options)


def over_time(logs: Any, metrics: Any, **options: Any) -> pd.DataFrame:
    """Per-period metrics of a Dask production log (``ddf.rag.over_time``), as
    :func:`raglab.monitor.over_time`; keywords as :func:`raglab.engines.over_time`.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> import raglab.dask
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(20_000, days=5, seed=0)
    >>> table = dd.from_pandas(log, npartitions=4).rag.over_time("faithfulness", predictor="lexical_support")
    >>> same = log.rag.over_time("faithfulness", predictor="lexical_support")
    >>> bool(abs(table["high"] - same["high"]).max() < 1e-12)
    True
    """
    return engines.over_time(_frame(logs, "over_time", "logs"), metrics, **options)


def monitor(logs: Any, metrics: Any, **options: Any) -> Any:
    """Change detection on a Dask production log (``ddf.rag.monitor``), as :func:`raglab.monitor.monitor`;
    keywords as :func:`raglab.engines.monitor` (``reference=`` is required).

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> import raglab.dask
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(100_000, days=30, drop_day=15, seed=0)
    >>> found = dd.from_pandas(log, npartitions=4).rag.monitor("faithfulness", reference=0.88, by="topic",
    ...                                                        predictor="lexical_support", guarantee="arl", arl=365)
    >>> found.guarantee.startswith("average run length")
    True
    """
    return engines.monitor(_frame(logs, "monitor", "logs"), metrics, **options)
