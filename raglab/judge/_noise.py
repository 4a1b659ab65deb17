"""Judge noise: how much of a score's spread comes from the judge itself (``repeats=n``).

Users of other tools read a judge's run-to-run wobble as a system change. Judging every row ``n``
times separates the two: the *judge* standard error comes from the spread between repeats of the
same row; the *sampling* interval comes from the spread between questions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._interval import Interval
from raglab._meta import judge_of
from raglab._results import ResultBase, jsonable
from raglab.judge._base import MetricOut
from raglab.judge._metrics import JUDGE_METRICS

__all__ = ["JudgeNoise", "judge_noise", "noise_from_results"]

_COLUMNS = [
    "metric", "n", "repeats", "mean", "judge_sd", "judge_se", "judge_se_mean", "sampling_se",
    "low", "high", "level", "flip_share", "n_units", "rows_changed", "claims_changed",
]


class JudgeNoise(ResultBase):
    """Judge noise per metric, next to the sampling interval over questions.

    Columns of :meth:`to_frame` (one row per metric):

    * ``n``: rows scored in every repeat; ``repeats``: judgings per row;
    * ``mean``: mean over rows of each row's mean over repeats;
    * ``judge_sd``: within-row standard deviation between repeats, ``sqrt(mean_i var_r(s_ir))``
      (``ddof=1``);
    * ``judge_se``: the judge's own standard error of a single-pass run mean, ``judge_sd / sqrt(n)``;
      ``judge_se_mean``: the same for the mean of ``repeats`` passes, ``judge_sd / sqrt(n * repeats)``;
    * ``sampling_se``, ``low``, ``high``, ``level``: standard error and t interval of the mean over
      questions (row means), i.e. the usual interval that a comparison should be read against;
    * ``flip_share``: share of verdicts that are not the same in every repeat, over ``n_units``
      units (a row's label for relevance and declined; for faithfulness and correctness each claim
      whose exact text appears in every repeat);
    * ``rows_changed``: share of rows whose score differs between repeats; ``claims_changed``:
      share of rows whose claim split differs (claim metrics).

    Examples
    --------
    >>> import raglab
    >>> noise = JudgeNoise.from_dict({"level": 0.95, "metrics": {}})
    >>> noise.to_frame().shape
    (0, 15)
    """

    def __init__(self, table: pd.DataFrame, *, level: float) -> None:
        self._table = table.reset_index(drop=True)
        self.level = float(level)

    def to_frame(self) -> pd.DataFrame:
        """The tidy table (one row per metric)."""
        return self._table.copy()

    def interval(self, metric: str) -> Interval:
        """The sampling interval of ``metric``'s mean over questions."""
        row = self._row(metric)
        return Interval(row["mean"], row["low"], row["high"], method="t", level=self.level, n=int(row["n"]))

    def _row(self, metric: str) -> pd.Series:
        hit = self._table[self._table["metric"] == metric]
        if hit.empty:
            raise KeyError(f"no judge-noise figures for {metric!r}; have {self._table['metric'].tolist()}")
        return hit.iloc[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (what is stored in ``attrs["raglab"]["judge"]["noise"]``)."""
        metrics = {}
        for record in self._table.to_dict("records"):
            name = record.pop("metric")
            metrics[name] = jsonable(record)  # numpy numbers as Python ones, NaN as None
        return {"level": self.level, "metrics": metrics}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeNoise:
        rows = [{"metric": name, **values} for name, values in dict(data.get("metrics") or {}).items()]
        table = pd.DataFrame(rows, columns=_COLUMNS).astype({c: "float64" for c in _COLUMNS[3:] if c != "level"})
        return cls(table, level=float(data.get("level", 0.95)))

    def __repr__(self) -> str:
        if self._table.empty:
            return "JudgeNoise(no metrics)"
        lines = [f"JudgeNoise ({int(self._table['repeats'].iloc[0])} repeats per row; "
                 f"sampling interval: t, level {self.level:g})"]
        for row in self._table.itertuples(index=False):
            lines.append(
                f"  {row.metric:<13} mean {row.mean:.3f}  sampling [{row.low:.3f}, {row.high:.3f}] (SE {row.sampling_se:.4f})"
                f"  judge SE {row.judge_se:.4f} (single pass), {row.judge_se_mean:.4f} (mean of repeats)"
                f"  flips {row.flip_share:.1%} of {int(row.n_units)} verdicts  n={int(row.n)}"
            )
        return "\n".join(lines)

    def _title(self) -> str:
        return f"JudgeNoise: judge standard error vs sampling interval over questions (level {self.level:g})"


def _t_interval(values: np.ndarray, level: float) -> tuple[float, float, float, float]:
    n = len(values)
    if n == 0:
        return (math.nan,) * 4
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan, math.nan
    se = float(values.std(ddof=1) / math.sqrt(n))
    half = float(_sps.t.ppf(0.5 + level / 2, df=n - 1)) * se
    return mean, se, mean - half, mean + half


def _flips(outs: Sequence[MetricOut], metric: str) -> tuple[int, int, bool]:
    """(verdicts compared, verdicts flipped, claims changed) for one row's repeats (all scored)."""
    if not JUDGE_METRICS[metric].parts:  # one label per row, not per-claim or per-passage verdicts
        labels = {float(o.score) for o in outs}
        return 1, int(len(labels) > 1), False
    maps = []
    for o in outs:
        mapping: dict[str, bool] = {}
        for claim, verdict in zip(o.claims or [], o.verdicts or []):
            mapping.setdefault(claim.strip(), bool(verdict))
        maps.append(mapping)
    common = set(maps[0]).intersection(*maps[1:]) if maps else set()
    flipped = sum(1 for claim in common if len({m[claim] for m in maps}) > 1)
    changed = len({tuple(o.claims or []) for o in outs}) > 1
    return len(common), flipped, changed


def noise_from_results(results: list[list[dict[str, MetricOut]]], metrics: Sequence[str], *, ci: float = 0.95) -> JudgeNoise:
    """Compute :class:`JudgeNoise` from per-row, per-repeat metric results."""
    records = []
    repeats = len(results[0]) if results else 0
    for metric in metrics:
        complete = []
        for row in results:
            outs = [rep.get(metric) for rep in row]
            if outs and all(o is not None and o.score is not None for o in outs):
                complete.append(outs)
        n = len(complete)
        scores = np.array([[float(o.score) for o in outs] for outs in complete], dtype=float).reshape(n, repeats)
        if n and repeats > 1:
            within = scores.var(axis=1, ddof=1)
            judge_sd = float(math.sqrt(within.mean()))
            judge_se = judge_sd / math.sqrt(n)
            judge_se_mean = judge_sd / math.sqrt(n * repeats)
            rows_changed = float(np.mean(scores.max(axis=1) != scores.min(axis=1)))
        else:
            judge_sd = judge_se = judge_se_mean = rows_changed = math.nan
        mean, se, low, high = _t_interval(scores.mean(axis=1) if n else np.empty(0), ci)
        compared = flips = changed = 0
        for outs in complete:
            v, f, c = _flips(outs, metric)
            compared, flips, changed = compared + v, flips + f, changed + int(c)
        records.append({
            "metric": metric, "n": n, "repeats": repeats, "mean": mean, "judge_sd": judge_sd,
            "judge_se": judge_se, "judge_se_mean": judge_se_mean, "sampling_se": se, "low": low, "high": high,
            "level": ci, "flip_share": flips / compared if compared else math.nan, "n_units": compared,
            "rows_changed": rows_changed,
            "claims_changed": changed / n if n and JUDGE_METRICS[metric].parts else math.nan,
        })
    return JudgeNoise(pd.DataFrame(records, columns=_COLUMNS), level=ci)


def judge_noise(scored: pd.DataFrame) -> JudgeNoise:
    """The :class:`JudgeNoise` of a frame scored with ``repeats > 1`` (read from its attrs).

    Examples
    --------
    >>> import pandas as pd, raglab
    >>> from raglab.judge import LexicalJudge, judge_noise
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "question": ["a?", "b?"],
    ...                      "answer": ["Paris is big.", "Rome is old."],
    ...                      "context": ["Paris is big.", "Rome is new."]})
    >>> scored = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], repeats=2, progress=False)
    >>> float(judge_noise(scored).to_frame().loc[0, "judge_sd"])   # a lexical judge has no noise
    0.0
    """
    record = judge_of(scored) or {}
    noise = record.get("noise")
    if not isinstance(noise, Mapping):
        raise ValueError(
            "this frame has no judge-noise record: score it with rows.rag.judge(judge, repeats=3) "
            "(repeats > 1) to measure how much the judge itself varies"
        )
    return JudgeNoise.from_dict(noise)
