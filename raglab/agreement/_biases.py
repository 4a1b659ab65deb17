"""The judge's known biases measured on rows people labelled: :func:`judge_biases`.

Seed 001's judge design rules name three: *verbosity* (longer answers scored higher whatever their
quality), *self-preference* (a judge favouring answers of its own model) and *position* (a judge
choosing an option for its place in the prompt). Each is measured with an interval that states its
method and level, or said to be not measured and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from raglab._interval import Interval
from raglab._results import ResultBase
from raglab._validation import check_level
from raglab._validation import warn as _warn
from raglab.stats import proportion_interval

__all__ = ["JudgeBiasWarning", "JudgeBiases", "judge_biases"]

#: Spearman's Fisher-z variance factor (Fieller, Hartley and Pearson 1957): var(atanh(rho)) ~ 1.06 / (n - 3).
FHP_FACTOR = 1.06

BIASES = ("verbosity", "verbosity_slope", "self_preference", "position")


class JudgeBiasWarning(UserWarning):
    """A judge bias was found (its interval excludes no bias), or the judge judges its own model."""


@dataclass(frozen=True, repr=False, eq=False)
class JudgeBiases(ResultBase):
    """The judge's known biases, each with an interval or the reason it was not measured.

    Attributes
    ----------
    intervals : dict of str -> Interval or None
        ``"verbosity"``: the within-label Spearman correlation of the judge's score with the
        answer's length in words (pooled over the human labels by Fisher z); ``"verbosity_slope"``:
        the judge score's change per 100 words among answers people rated alike (OLS with one
        intercept per human label, HC1 standard errors, t interval); ``"self_preference"``: how much
        more the judge's score exceeds the human label on answers of the judge's own model than on
        the others' (Welch t interval); ``"position"``: the share of verdicts that flip when the
        options are swapped (Wilson). None where not measured.
    flagged : dict of str -> bool
        Whether each bias was found: its interval excludes 0 (verbosity, self-preference), or the
        flip share's lower bound exceeds ``position_tolerance``; for self-preference also when
        the judge's model is the system's model (not measurable then, but to be avoided).
    notes : dict of str -> str
        What each line means, or why it was not measured.
    judge_model, system_model : str or None
        The models compared for self-preference.
    warnings : list of str
        The flagged biases in words (issued as :class:`JudgeBiasWarning` with ``warn=True``).
    """

    intervals: dict[str, Interval | None]
    flagged: dict[str, bool]
    notes: dict[str, str]
    level: float
    judge_model: str | None = None
    system_model: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """One row per bias: estimate, low, high, method, level, n, flagged, note (NaN where not measured)."""
        records = []
        for name in BIASES:
            iv = self.intervals.get(name)
            base: dict[str, Any] = (iv.to_dict() if iv is not None else
                                    {"estimate": math.nan, "low": math.nan, "high": math.nan, "method": None,
                                     "level": self.level, "n": 0})
            records.append({"bias": name, "estimate": base["estimate"], "low": base["low"], "high": base["high"],
                            "method": base["method"], "level": base["level"], "n": base.get("n"),
                            "flagged": self.flagged.get(name, False), "note": self.notes.get(name, "")})
        return pd.DataFrame(records, columns=["bias", "estimate", "low", "high", "method", "level", "n", "flagged",
                                              "note"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the intervals (as :meth:`raglab.stats.Interval.to_dict`), flags, notes, models, warnings."""
        return {
            "intervals": {k: (None if v is None else v.to_dict()) for k, v in self.intervals.items()},
            "flagged": dict(self.flagged), "notes": dict(self.notes), "level": self.level,
            "judge_model": self.judge_model, "system_model": self.system_model, "warnings": list(self.warnings),
        }

    def _shown(self) -> pd.DataFrame:
        return self.to_frame()[["bias", "estimate", "low", "high", "flagged", "note"]]

    def _title(self) -> str:
        found = [k for k, v in self.flagged.items() if v]
        return ("JudgeBiases: " + (", ".join(found) + " flagged" if found else "none flagged")
                + f" ({self.level:.0%} intervals)")


def _words(value: Any) -> float:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    return float(len(str(value).split()))


def _numeric(rows: pd.DataFrame, column: str, what: str) -> np.ndarray:
    if column not in rows.columns:
        raise KeyError(f"judge_biases: the {what} column {column!r} is not in the rows; columns: {list(rows.columns)}")
    values = rows[column]
    if values.dtype == object or isinstance(values.dtype, pd.BooleanDtype) or values.dtype == bool:
        values = pd.to_numeric(values.astype("object").map(lambda v: float(v) if isinstance(v, (bool, np.bool_))
                                                           else v), errors="coerce")
    return np.asarray(values, dtype=float)


def _midranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their mean rank (as ``scipy.stats.rankdata``)."""
    _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's correlation: Pearson's on the mid-ranks (``scipy.stats.spearmanr``)."""
    rx, ry = _midranks(x), _midranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(rx @ ry / math.sqrt(float(rx @ rx) * float(ry @ ry)))


def _pooled_spearman(h: np.ndarray, s: np.ndarray, x: np.ndarray, min_group: int) -> tuple[float, float, int, int]:
    """(pooled Fisher z, its weight sum(n - 3), rows used, labels used) of the within-label Spearman correlations."""
    z_sum = w_sum = 0.0
    used = groups = 0
    for label in np.unique(h):
        member = h == label
        n_g = int(member.sum())
        if n_g < min_group or np.ptp(x[member]) == 0 or np.ptp(s[member]) == 0:
            continue
        rho = _spearman(x[member], s[member])
        rho = min(max(rho, -0.999999), 0.999999)
        z_sum += (n_g - 3) * math.atanh(rho)
        w_sum += n_g - 3
        used += n_g
        groups += 1
    return (z_sum / w_sum if w_sum else math.nan), w_sum, used, groups


def _cluster_codes(units: np.ndarray | None) -> np.ndarray | None:
    return None if units is None else np.unique(units.astype(str), return_inverse=True)[1]


def _slope(h: np.ndarray, s: np.ndarray, x: np.ndarray, level: float, clusters: np.ndarray | None
           ) -> Interval | None:
    """OLS slope of ``s`` on ``x`` with one intercept per label of ``h``: HC1, or CR1 with clusters."""
    codes = np.unique(h, return_inverse=True)[1]
    k = int(codes.max()) + 2
    n = len(s)
    if n <= k:
        return None

    def demean(v: np.ndarray) -> np.ndarray:
        return v - (np.bincount(codes, v) / np.bincount(codes))[codes]

    xd, sd = demean(x), demean(s)
    sxx = float(xd @ xd)
    if sxx <= 0:
        return None
    b = float(xd @ sd) / sxx
    e = sd - b * xd
    if clusters is None:
        se = math.sqrt(float((xd**2) @ (e**2)) / sxx**2 * n / (n - k))
        df, what = n - k, "HC1 SE"
    else:
        g = int(clusters.max()) + 1
        if g < 2:
            return None
        score = np.bincount(clusters, xd * e, minlength=g)
        se = math.sqrt(float(score @ score) / sxx**2 * g / (g - 1) * (n - 1) / (n - k))
        df, what = g - 1, f"CR1 cluster-robust SE over {g} clusters"
    t = _st.t.ppf(0.5 + level / 2, df)
    return Interval(b, b - t * se, b + t * se, method=f"OLS slope per 100 words with one intercept per human label, "
                    f"{what}, t with {df} df", level=level, n=n)


def _verbosity(human: np.ndarray, score: np.ndarray, length: np.ndarray, level: float, min_group: int,
               units: np.ndarray | None, n_resamples: int, seed: int | None
               ) -> tuple[Interval | None, Interval | None, str]:
    """Pooled within-label Spearman (Fisher z; FHP variance, or a cluster bootstrap) and the slope per 100 words."""
    ok = np.isfinite(human) & np.isfinite(score) & np.isfinite(length)
    h, s, x = human[ok], score[ok], length[ok]
    clusters = _cluster_codes(None if units is None else units[ok])
    z, w_sum, used, groups = _pooled_spearman(h, s, x, min_group)
    if groups == 0:
        return None, None, (f"not measured: no human label has {min_group} or more labelled answers with varying "
                            "lengths and judge scores")
    if clusters is None:
        half = _st.norm.ppf(0.5 + level / 2) * math.sqrt(FHP_FACTOR / w_sum)
        rank = Interval(math.tanh(z), math.tanh(z - half), math.tanh(z + half),
                        method=f"within-label Spearman, pooled over {groups} human labels by Fisher z "
                               f"(variance {FHP_FACTOR}/(n-3), Fieller-Hartley-Pearson)", level=level, n=used)
    else:
        g = int(clusters.max()) + 1
        order = np.argsort(clusters, kind="stable")  # rows grouped by cluster
        sizes = np.bincount(clusters, minlength=g)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        rng = np.random.default_rng(seed)
        draws = np.empty(n_resamples)
        for r in range(n_resamples):
            pick = rng.integers(0, g, g)
            counts = sizes[pick]
            # the rows of the picked clusters: each cluster's start, then 0..size-1 within it
            within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            idx = order[np.repeat(starts[pick], counts) + within]
            draws[r] = _pooled_spearman(h[idx], s[idx], x[idx], min_group)[0]
        draws = np.tanh(draws[np.isfinite(draws)])
        low, high = (np.quantile(draws, [0.5 - level / 2, 0.5 + level / 2]) if len(draws) else (math.nan, math.nan))
        rank = Interval(math.tanh(z), float(low), float(high),
                        method=f"within-label Spearman pooled over {groups} human labels by Fisher z; cluster "
                               f"bootstrap percentile over {g} clusters", level=level, n=used,
                        n_resamples=n_resamples, seed=seed)
    keep = np.isin(h, [lab for lab in np.unique(h) if (h == lab).sum() >= 2])
    slope = _slope(h[keep], s[keep], x[keep] / 100.0, level,
                   None if clusters is None else np.unique(clusters[keep], return_inverse=True)[1])
    note = (f"judge score vs answer length (words) among answers people rated alike, on {used} labelled rows in "
            f"{groups} human labels; flagged when the interval excludes 0")
    return rank, slope, note


#: a dated or floating snapshot at the end of a model name: ``-2024-08-06``, ``-20241022``, ``-0613``
#: (OpenAI's month-day), ``-2407`` (year-month), ``@20240620``, ``-latest``: one model, many snapshots
_SNAPSHOT = re.compile(r"[-@_](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest)$")


def _clean_model(name: Any) -> str | None:
    """The model's family for the self-preference check: lower case, without a ``provider/`` prefix
    and without snapshot suffixes (``gpt-4o-2024-08-06`` and ``openai/gpt-4o`` are both ``gpt-4o``;
    ``gpt-4o-mini`` stays a different model)."""
    if name is None or (isinstance(name, float) and math.isnan(name)):
        return None
    text = str(name).strip().lower().rsplit("/", 1)[-1]
    while (shorter := _SNAPSHOT.sub("", text)) != text and shorter:
        text = shorter
    return text or None


def _self_preference(rows: pd.DataFrame, human: np.ndarray, score: np.ndarray, model: str | None,
                     judge_model: str | None, level: float, units: np.ndarray | None = None
                     ) -> tuple[Interval | None, bool, str, str | None]:
    meta = rows.attrs.get("raglab", {}) if isinstance(rows.attrs.get("raglab"), Mapping) else {}
    if judge_model is None:
        record = meta.get("judge")
        judge_model = record.get("model") if isinstance(record, Mapping) else None
    system: str | None = None
    per_row: np.ndarray | None = None
    if model is not None and model in rows.columns:
        per_row = rows[model].map(_clean_model).to_numpy(dtype=object)
        system = ", ".join(sorted({str(v) for v in per_row if v is not None})) or None
    elif model is not None:
        system = model
    else:
        run = meta.get("run")
        system = run.get("model") if isinstance(run, Mapping) else None
    if judge_model is None:
        return None, False, ("not measured: the judge's model is unknown (judge the rows with rows.rag.judge, which "
                             "records it, or pass judge_model=)"), system
    if system is None:
        return None, False, ("not measured: the system's model is unknown; record it in a column (model='<column>') "
                             "or in attrs['raglab']['run']['model']"), system
    jm = _clean_model(judge_model)
    if per_row is None:
        if _clean_model(system) == jm:
            return None, True, (f"the judge's model {judge_model!r} is the system's model: it may favour its own "
                                "answers (not measurable without answers of another model to compare); judge with "
                                "another model"), system
        return None, False, f"not expected: the judge's model {judge_model!r} is not the system's ({system!r})", system
    same = per_row == jm
    gap = score - human
    ok = np.isfinite(gap)
    a, b = gap[ok & same], gap[ok & ~same]
    if len(a) < 2 or len(b) < 2:
        flagged = bool(same.any())
        why = (f"{int(same.sum())} rows are answers of the judge's own model {judge_model!r}: it may favour them; "
               if flagged else f"no row is an answer of the judge's model {judge_model!r}; ")
        return None, flagged, why + "not measured: fewer than 2 labelled rows of each kind", system
    diff = float(a.mean() - b.mean())
    if units is None:
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        se = math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
        what = f"Welch t ({df:.1f} df)"
    else:
        # the regression of the gap on an own-model indicator, CR1 cluster-robust (answers of one
        # question or conversation are not independent)
        clusters = _cluster_codes(units[ok])
        own = same[ok].astype(float)
        y = gap[ok]
        design = np.column_stack([np.ones_like(own), own])
        bread = np.linalg.inv(design.T @ design)
        resid = y - design @ (bread @ design.T @ y)
        g = int(clusters.max()) + 1
        scores = np.vstack([np.bincount(clusters, design[:, j] * resid, minlength=g) for j in range(2)]).T
        n_obs = len(y)
        cov = bread @ (scores.T @ scores) @ bread * g / (g - 1) * (n_obs - 1) / (n_obs - 2)
        se = math.sqrt(float(cov[1, 1]))
        df = g - 1
        what = f"CR1 cluster-robust t over {g} clusters ({df} df)"
    t = _st.t.ppf(0.5 + level / 2, df)
    iv = Interval(diff, diff - t * se, diff + t * se, method=f"{what} on judge minus human score, "
                  "own-model answers minus others'", level=level, n=len(a) + len(b))
    flagged = bool(iv.low > 0 or iv.high < 0)
    return iv, flagged, (f"judge score minus human label: on {len(a)} answers of the judge's model {judge_model!r} "
                         f"minus on {len(b)} of other models; flagged when the interval excludes 0"), system


def _position(rows: pd.DataFrame, position: tuple[str, str] | None, level: float, tolerance: float
              ) -> tuple[Interval | None, bool, str]:
    if position is None:
        return None, False, ("not measured: give position=(verdict, verdict_swapped), the option slot the judge "
                             "chose (e.g. 'A'/'B') with the options in the original and in the swapped order")
    if isinstance(position, str) or len(position) != 2:
        raise TypeError(f"judge_biases: position must be two column names (original, swapped), got {position!r}")
    first, swapped = position
    for column in position:
        if column not in rows.columns:
            raise KeyError(f"judge_biases: the position column {column!r} is not in the rows")
    both = rows[first].notna() & rows[swapped].notna()
    n = int(both.sum())
    if n == 0:
        return None, False, "not measured: no row has both verdicts"
    same_slot = (rows.loc[both, first].astype(str) == rows.loc[both, swapped].astype(str)).to_numpy()
    flips = int(same_slot.sum())
    iv = proportion_interval(flips, n, ci=level)
    top = rows.loc[both, first][same_slot]
    lean = (f"; of the flips, the slot {top.mode().iloc[0]!r} was chosen {int((top == top.mode().iloc[0]).sum())} "
            f"times of {flips}" if flips else "")
    note = (f"share of {n} verdicts that flip when the options are swapped (the same slot chosen in both orders); "
            f"flagged when the interval's lower bound exceeds {tolerance:g}{lean}")
    return iv, bool(iv.low > tolerance), note


def judge_biases(
    rows: pd.DataFrame,
    *,
    human: str,
    judge: str,
    answer: str = "answer",
    model: str | None = None,
    judge_model: str | None = None,
    position: tuple[str, str] | None = None,
    position_tolerance: float = 0.05,
    ci: float = 0.95,
    min_group: int = 10,
    units: str | None = None,
    n_resamples: int = 2000,
    seed: int | None = 0,
    warn: bool = True,
) -> JudgeBiases:
    """Measure the judge's known biases on rows people labelled (seed 001's judge design rules).

    * **Verbosity**: does the judge score longer answers higher among answers people rated alike?
      Within each human label, Spearman's correlation of the judge's score with the answer's length
      in words; pooled over the labels by Fisher z with the Fieller-Hartley-Pearson variance
      ``1.06 / (n - 3)``. Also the slope: the judge score's change per 100 words, from OLS with one
      intercept per human label (HC1 standard errors, t interval). Flagged when the correlation's
      interval excludes 0 (an unbiased judge is flagged at about ``1 - ci`` of the time: simulated
      with 95% intervals, 4.0-4.9% of 1,000 seeds at n = 60-300 labelled rows, for score and
      pass/fail judges; with three answers per question sharing length and leniency, 17.0% without
      ``units`` and 5.7% with them, over 300 seeds).
    * **Self-preference**: the judge's model (from the judge fingerprint in
      ``attrs["raglab"]["judge"]["model"]``, or ``judge_model=``) against the system's model (a
      column ``model=`` naming each row's model, or ``attrs["raglab"]["run"]["model"]``). With both
      own-model and other-model answers labelled: how much more the judge's score exceeds the human
      label on its own model's answers (Welch t interval). With one model only: a warning when
      it is the judge's model (not measurable without a comparison).
    * **Position** (for prompts that order options, e.g. pairwise comparisons): with
      ``position=(original, swapped)``, the columns holding the slot the judge chose (e.g.
      ``"A"``/``"B"``) with the options in their original and in the swapped order, the share of
      verdicts that flip (the same slot chosen both times; Wilson interval). Otherwise not measured.

    Parameters
    ----------
    rows : DataFrame
        The row table; rows without a human label are left out of verbosity and self-preference.
    human : str
        The human label column (numbers or booleans; "rated alike" means the same label).
    judge : str
        The judge's score column (numbers or booleans).
    answer : str
        The answer column (its length in words).
    model : str, optional
        A column naming each row's system model, or the system model itself.
    judge_model : str, optional
        The judge's model (default: from the judge fingerprint in the rows' attrs).
    position : (str, str), optional
        The verdict columns with the options in the original and the swapped order.
    position_tolerance : float
        Flip share tolerated before the position bias is flagged (its interval's lower bound).
    ci : float
        Level of every interval.
    min_group : int
        Human labels with fewer labelled answers are left out of the verbosity correlation.
    units : str, optional
        A cluster column (e.g. ``task_id`` when several systems answered each question, or
        ``conversation_id``): rows of one cluster are not independent. The verbosity correlation's
        interval is then a cluster bootstrap percentile (``n_resamples``, ``seed``), the slope's
        and the self-preference gap's CR1 cluster-robust with t on G - 1 df.
    n_resamples, seed : int
        Resamples and seed of the cluster bootstrap (with ``units``).
    warn : bool
        Issue :class:`JudgeBiasWarning` for each flagged bias (kept in ``warnings`` either way).

    Returns
    -------
    JudgeBiases

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> words = rng.integers(5, 200, 400)
    >>> human = rng.integers(0, 2, 400)
    >>> rows = pd.DataFrame({"answer": ["word " * int(w) for w in words], "human": human,
    ...                      "judge": human * 0.5 + words / 400 + rng.normal(0, 0.1, 400)})
    >>> found = judge_biases(rows, human="human", judge="judge", warn=False)
    >>> found.flagged["verbosity"], round(found.intervals["verbosity_slope"].estimate, 2)
    (True, 0.25)
    """
    level = check_level(ci)
    if int(min_group) != min_group or min_group < 4:
        raise ValueError(f"judge_biases: min_group must be an integer >= 4 (Fisher z needs n > 3), got {min_group!r}")
    h = _numeric(rows, human, "human label")
    s = _numeric(rows, judge, "judge score")
    if answer not in rows.columns:
        raise KeyError(f"judge_biases: the answer column {answer!r} is not in the rows; pass answer='<column>'")
    length = np.array([_words(v) for v in rows[answer].tolist()], dtype=float)
    clusters = None
    if units is not None:
        if units not in rows.columns:
            raise KeyError(f"judge_biases: the cluster column units={units!r} is not in the rows")
        if rows[units].isna().any():
            raise ValueError(f"judge_biases: the cluster column {units!r} has missing values; every row needs one")
        clusters = rows[units].to_numpy(dtype=object)
    if int(n_resamples) != n_resamples or n_resamples < 100:
        raise ValueError(f"judge_biases: n_resamples must be an integer >= 100, got {n_resamples!r}")
    rank, slope, v_note = _verbosity(h, s, length, level, int(min_group), clusters, int(n_resamples), seed)
    sp, sp_flag, sp_note, system = _self_preference(rows, h, s, model, judge_model, level, clusters)
    pos, pos_flag, pos_note = _position(rows, position, level, position_tolerance)
    verbose = bool(rank is not None and (rank.low > 0 or rank.high < 0))
    flagged = {"verbosity": verbose, "verbosity_slope": verbose, "self_preference": sp_flag, "position": pos_flag}
    notes = {"verbosity": v_note, "verbosity_slope": v_note if slope is not None else "not measured",
             "self_preference": sp_note, "position": pos_note}
    messages = []
    if verbose and rank is not None:
        direction = "longer" if rank.estimate > 0 else "shorter"
        messages.append(f"verbosity: the judge scores {direction} answers higher among answers people rated alike "
                        f"(rank correlation {rank.estimate:.3f} [{rank.low:.3f}, {rank.high:.3f}], {level:.0%}); "
                        "penalise padding or calibrate against human labels")
    if sp_flag:
        messages.append(f"self-preference: {sp_note}")
    if pos_flag and pos is not None:
        messages.append(f"position: {pos.estimate:.1%} of verdicts flip when the options are swapped "
                        f"[{pos.low:.1%}, {pos.high:.1%}]; shuffle the options or judge both orders")
    if warn:
        for message in messages:
            _warn(message, JudgeBiasWarning)
    jm = judge_model
    if jm is None:
        record = rows.attrs.get("raglab", {}).get("judge") if isinstance(rows.attrs.get("raglab"), Mapping) else None
        jm = record.get("model") if isinstance(record, Mapping) else None
    return JudgeBiases(intervals={"verbosity": rank, "verbosity_slope": slope, "self_preference": sp,
                                  "position": pos},
                       flagged=flagged, notes=notes, level=level, judge_model=jm,
                       system_model=None if system is None else str(system), warnings=messages)
