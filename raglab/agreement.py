"""Validating a judge against people, and agreement between people.

A judge is a classifier: before its averages are trusted, its error rates against human labels are
measured. :func:`report` compares a judge's labels with human labels on the same items and returns
an :class:`AgreementReport` with raw agreement, Cohen's kappa with an interval, the confusion
matrix, the judge's *miss rate* (of the items people marked negative, e.g. unsupported, the share the
judge passed), sensitivity and specificity, the *attenuation* ``J = sensitivity + specificity - 1``
(a true change ``d`` in the pass rate moves the judge's mean by about ``J * d``) and the
Rogan-Gladen corrected pass rate.

Several human raters: :func:`fleiss_kappa`, :func:`krippendorff_alpha` (nominal, ordinal, interval
or ratio; missing ratings allowed) and :func:`judge_vs_majority`.

Conventions (stated here once and in every result):

* Kappa thresholds: above about 0.6 is usually considered substantial agreement; below 0.4 the
  judge should not be trusted (the report warns with :class:`LowAgreementWarning`).
* Weighted kappa needs a distance between categories. ``distance="rank"`` (default) places the
  categories at their positions in the label order, 0, 1, 2, ... -- scikit-learn's convention and
  statsmodels' default. ``distance="value"`` uses the numeric labels themselves as category scores
  (statsmodels' ``cohens_kappa(table, weights=labels, wt=...)``); the two agree when the labels are
  equally spaced.
* Rating matrices for several raters have one row per item and one column per rater (missing =
  NaN or None), the transpose of the ``krippendorff`` package's ``reliability_data``.
* Comparable labels: numbers with numbers (``1 == 1.0``), text with text, booleans with booleans,
  and booleans with numbers that are all 0 or 1 (True counts as 1 and False as 0, as in Python;
  the booleans are shown as 0/1). Text against numbers or booleans, booleans against other
  numbers, or human and judge labels with no label in common raise :class:`LabelMismatchError`
  naming both sides and the conversion that fixes it -- never a kappa of 0 that blames the judge.
* Kappa's interval (``method="auto"``): the analytic one (statsmodels' ``std_kappa``), or, when
  the rarest label has fewer than :data:`KAPPA_MIN_COUNT` items, an adjusted one (two pseudo-items
  spread over the table), because there the analytic and bootstrap intervals under-cover.
* Clusters (``units=``): items from one conversation or document are not independent. Every
  interval then resamples whole clusters and the report shows each statistic's *design effect*,
  the cluster-bootstrap variance over the item-bootstrap variance (fewer than
  :data:`raglab.stats.MIN_CLUSTERS` clusters: no interval, with a :class:`FragileIntervalWarning`).
* Rogan-Gladen outside [0, 1]: an :class:`ImpossibleRateWarning`, the estimate clipped, and the
  interval's part inside [0, 1] (none when all of it lies outside) -- never a zero-width interval.

Examples
--------
>>> from raglab import agreement
>>> human = [1] * 150 + [0] * 50
>>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
>>> round(agreement.cohen_kappa(human, judge), 3)
0.559
>>> rep = agreement.report(human, judge, positive=1)
>>> rep.agreement, rep.miss_rate, round(rep.attenuation, 2)
(0.85, 0.44, 0.51)
"""

from __future__ import annotations

import contextlib
import html
import inspect
import math
import numbers
import os
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._errors import RowTableError
from raglab._interval import Interval
from raglab._validation import check_level, check_option
from raglab.stats import MIN_CLUSTERS, proportion_interval
from raglab.stats import _unit_codes as _cluster_codes

__all__ = [
    "AgreementReport",
    "FragileIntervalWarning",
    "ImpossibleRateWarning",
    "KAPPA_MIN_COUNT",
    "LabelMismatchError",
    "LowAgreementWarning",
    "KAPPA_SUBSTANTIAL",
    "KAPPA_UNTRUSTED",
    "cohen_kappa",
    "cohen_kappa_interval",
    "fleiss_kappa",
    "judge_vs_majority",
    "krippendorff_alpha",
    "majority_vote",
    "report",
    "rogan_gladen",
]

KAPPA_SUBSTANTIAL = 0.6
"""Kappa above about this value is usually considered substantial agreement."""
KAPPA_UNTRUSTED = 0.4
"""Below this kappa a judge should not be trusted."""

_THRESHOLDS_TEXT = (
    f"kappa above about {KAPPA_SUBSTANTIAL} is usually considered substantial; "
    f"below {KAPPA_UNTRUSTED} the judge should not be trusted"
)
_WEIGHTS = (None, "linear", "quadratic")
_DISTANCES = ("rank", "value")
_KAPPA_METHODS = ("auto", "analytic", "adjusted", "bootstrap")
_RG_METHODS = ("delta", "bootstrap")
_LEVELS = ("nominal", "ordinal", "interval", "ratio")
_TIES = ("drop", "low", "high")


KAPPA_MIN_COUNT = 10
"""Below this smallest label count (either rater, any category) the analytic kappa interval under-covers.

Simulated (binary labels, prevalence 0.5-0.95, kappa 0.3-0.8, n 10-300; 2-4 categories, weighted and
not): a nominal 95% ``kappa +- 1.96 SE`` interval covered 67% of the time when the rarest label had
fewer than 5 items and 89% at 5-9, against 92-95% from 10 up; the percentile bootstrap was no better
(65% at n = 10). ``method="auto"`` switches to the adjusted interval there, which covered 94-96% in
every regime simulated (93.7% at worst).
"""


class LowAgreementWarning(UserWarning):
    """The judge agrees with people too little (kappa below 0.4) for its averages to be trusted."""


class FragileIntervalWarning(UserWarning):
    """An interval is known to under-cover here (a rare label, too few clusters), or none can be given."""


class ImpossibleRateWarning(UserWarning):
    """A judge's pass rate lies outside the range its sensitivity and specificity allow."""


class LabelMismatchError(RowTableError):
    """Human and judge labels that can never match: different types, or no label in common.

    Raised instead of reporting a kappa of 0 that would blame the judge for a data-entry problem. A
    :class:`raglab.RowTableError`, so also a ``ValueError``.
    """


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _warn(message: str, category: type[Warning]) -> None:
    """Warn at the first frame outside raglab: the user's line (pandas' ``find_stack_level``)."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# --------------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------------


def _z(level: float) -> float:
    return float(_sps.norm.ppf(0.5 + level / 2))


_NUMERIC_KINDS = "biuf"


def _plain_numeric(dtype: Any) -> bool:
    """A numpy bool/int/float dtype (fast paths); pandas extension dtypes go through object."""
    return isinstance(dtype, np.dtype) and dtype.kind in _NUMERIC_KINDS


def _as_labels(values: Any, name: str) -> np.ndarray:
    """A 1-D array of labels from a list, array or Series: numeric arrays stay numeric, others object."""
    if isinstance(values, (pd.DataFrame, str, bytes)) or np.ndim(values) != 1:
        raise TypeError(f"`{name}` must be a one-dimensional sequence of labels (list, array or Series)")
    if isinstance(values, pd.Series):
        if _plain_numeric(values.dtype):
            return values.to_numpy()
        return values.to_numpy(dtype=object, na_value=None)
    if isinstance(values, np.ndarray) and _plain_numeric(values.dtype):
        return values
    if not isinstance(values, np.ndarray):
        try:
            array = np.asarray(values)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.ndim == 1 and _plain_numeric(array.dtype):
            return array
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def _missing(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "f":
        return np.isnan(array)
    if array.dtype.kind in "biu":
        return np.zeros(array.shape, dtype=bool)
    return np.asarray(pd.isna(array), dtype=bool).reshape(array.shape)


def _label_codes(
    arrays: Sequence[np.ndarray], labels: Sequence[Hashable] | None, *, need_order: bool
) -> tuple[list[np.ndarray], list[Any], bool]:
    """Integer codes (missing = -1) for several label arrays over one shared label list.

    Returns the codes, the labels in code order, and whether that order is a sort order (or the
    user's). Raises naming a label that is not in ``labels``.
    """
    flat = np.concatenate([a.ravel() for a in arrays]) if arrays else np.empty(0, dtype=object)
    present = ~_missing(flat)
    if labels is not None:
        labels = list(labels)
        index = pd.Index(labels, dtype=object)
        if not index.is_unique:
            raise ValueError(f"`labels` must not repeat a label, got {labels!r}")
        codes = np.full(flat.shape, -1, dtype=np.int64)
        codes[present] = index.get_indexer(pd.Index(flat[present], dtype=object))
        unknown = present & (codes < 0)
        if unknown.any():
            value = flat[np.flatnonzero(unknown)[0]]
            raise ValueError(
                f"label {value!r} is not in `labels` {labels!r}; add it to `labels` or leave `labels=None` "
                "to use every label that occurs"
            )
        ordered = True
    elif _plain_numeric(flat.dtype):
        uniques, codes_present = np.unique(flat[present], return_inverse=True)
        labels = uniques.tolist()
        codes = np.full(flat.shape, -1, dtype=np.int64)
        codes[present] = codes_present
        ordered = True
    else:
        try:
            codes_present, uniques = pd.factorize(pd.Series(flat[present], dtype=object), sort=True)
            ordered = True
        except TypeError:  # labels of types that cannot be compared (e.g. 1 and "a")
            if need_order:
                raise TypeError(
                    "weighted kappa and ordinal statistics need labels that can be sorted; pass "
                    "`labels=[...]` in their order"
                ) from None
            codes_present, uniques = pd.factorize(pd.Series(flat[present], dtype=object), sort=False)
            ordered = False
        labels = list(uniques)
        codes = np.full(flat.shape, -1, dtype=np.int64)
        codes[present] = codes_present
    out, start = [], 0
    for a in arrays:
        out.append(codes[start : start + a.size].reshape(a.shape))
        start += a.size
    return out, labels, ordered


def _pair(a: Any, b: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    x, y = _as_labels(a, names[0]), _as_labels(b, names[1])
    if len(x) != len(y):
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must label the same items: got {len(x)} and {len(y)} labels"
        )
    return x, y


@dataclass(frozen=True)
class _Side:
    """How to name one side of a comparison in an error, and the code that would fix it."""

    name: str  # as shown: "'label'" (a column) or "`human`" (an argument)
    target: str  # what a fix assigns to: "df['label']" or "human"
    expr: str  # an expression holding the labels: "df['label']" or "pd.Series(human)"
    threshold: str | None = None  # the keyword that turns numeric scores into pass/fail


def _arg_side(arg: str, threshold: str | None = None) -> _Side:
    return _Side(f"`{arg}`", arg, f"pd.Series({arg})", threshold)


def _column_side(column: Any, threshold: str | None = None) -> _Side:
    ref = f"df[{column!r}]"
    return _Side(repr(column), ref, ref, threshold)


_PASS_WORDS = ("yes", "pass", "passed", "supported", "faithful", "correct", "true", "good", "1")


def _kind(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def _kinds(values: np.ndarray) -> dict[str, list[Any]]:
    """The distinct non-missing labels of one side, grouped by kind (bool, number, text, other)."""
    present = values[~_missing(values)]
    if present.dtype.kind == "b":
        return {"bool": np.unique(present).tolist()} if present.size else {}
    if _plain_numeric(present.dtype):
        return {"number": np.unique(present).tolist()} if present.size else {}
    seen: dict[tuple[str, Any], None] = {}
    try:
        for v in present:
            seen.setdefault((_kind(v), v), None)
    except TypeError:  # unhashable labels: _label_codes words that error
        return {}
    out: dict[str, list[Any]] = {}
    for kind, v in seen:
        out.setdefault(kind, []).append(v)
    return out


def _show(values: list[Any], limit: int = 6) -> str:
    with contextlib.suppress(TypeError):
        values = sorted(values)
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def _numeric_text(labels: list[Any]) -> str | None:
    """'int' or 'float' when every text label spells a number, else None."""
    try:
        floats = [float(v) for v in labels]
    except ValueError:
        return None
    if not all(math.isfinite(f) for f in floats):
        return None
    return "int" if all(f == int(f) and "." not in str(v) for f, v in zip(floats, labels)) else "float"


def _pass_label(labels: list[Any], positive: Any) -> Any:
    if positive in labels:
        return positive
    for word in _PASS_WORDS:
        for label in labels:
            if str(label).strip().lower() == word:
                return label
    return sorted(labels)[-1] if labels else "yes"


def _to_ints(values: np.ndarray) -> np.ndarray:
    """Booleans as 0/1 integers (True == 1 and False == 0 in Python, pandas and numpy)."""
    if values.dtype.kind == "b":
        return values.astype(np.int64)
    if _plain_numeric(values.dtype):
        return values
    out = values.copy()
    for i, v in enumerate(out):
        if isinstance(v, (bool, np.bool_)):
            out[i] = int(v)
    return out


def _check_comparable(
    x: np.ndarray,
    y: np.ndarray,
    sides: tuple[_Side, _Side],
    *,
    where: str,
    labels: Any = None,
    positive: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Refuse two label arrays that can never match; return them with booleans as 0/1 where needed.

    Comparable: numbers with numbers (``1 == 1.0``), text with text, booleans with booleans, and
    booleans with numbers that are all 0 or 1 (True is 1, False is 0; the booleans become 0/1).
    Refused (:class:`LabelMismatchError`): text against numbers or booleans, either mixed within one
    side, booleans against numbers other than 0/1, and -- when ``labels`` is not given -- two sides
    with no label in common of which at least one uses two or more labels (not for 0/1 codings).
    """
    kinds = (_kinds(x), _kinds(y))
    if not kinds[0] or not kinds[1]:
        return x, y
    lead = f"{where}: " if where else ""
    tail = "so no item could ever count as agreeing and kappa would measure the encoding, not the judge."
    for side, kind in zip(sides, kinds):
        if "text" in kind and ("number" in kind or "bool" in kind):
            other = kind.get("number", []) + kind.get("bool", [])
            spelled = _numeric_text(kind["text"])
            fix = f"{side.expr}.astype({spelled})" if spelled else f"{side.expr}.astype(str)"
            raise LabelMismatchError(
                f"{lead}{side.name} mixes text labels ({_show(kind['text'])}) with numbers or booleans "
                f"({_show(other)}); '1' != 1, {tail} Use one type, e.g. {side.target} = {fix}."
            )
    text = ["text" in k for k in kinds]
    if text[0] != text[1]:
        t, o = (0, 1) if text[0] else (1, 0)
        ts, os_, tk, ok = sides[t], sides[o], kinds[t], kinds[o]
        if "bool" in ok:
            label = _pass_label(tk["text"], positive)
            raise LabelMismatchError(
                f"{lead}{ts.name} holds text labels ({_show(tk['text'])}) but {os_.name} holds booleans "
                f"({_show(ok['bool'])}); text never equals True or False, {tail} Turn the text into booleans, "
                f"e.g. {ts.target} = {ts.expr} == {label!r} (with the label that means pass), and pass positive=True."
            )
        other = ok.get("number", [])
        what = "numbers" if other else f"{'/'.join(sorted(ok))} values"
        shown = other or [v for vs in ok.values() for v in vs]
        spelled = _numeric_text(tk["text"])
        if spelled:
            fix = f"Convert the text to numbers, e.g. {ts.target} = {ts.expr}.astype({spelled})."
        else:
            mapping = ", ".join(f"{v!r}: ..." for v in sorted(tk["text"])[:4])
            fix = (f"Map each text label to the number it stands for, e.g. {ts.target} = "
                   f"{ts.expr}.map({{{mapping}}}).")
        raise LabelMismatchError(
            f"{lead}{ts.name} holds text labels ({_show(tk['text'])}) but {os_.name} holds {what} "
            f"({_show(shown)}); text never equals a number ('1' != 1), {tail} {fix}"
        )
    has_bool = ["bool" in k for k in kinds]
    if any(has_bool) and ("number" in kinds[0] or "number" in kinds[1]):
        numbers_seen = kinds[0].get("number", []) + kinds[1].get("number", [])
        if all(v in (0, 1) for v in numbers_seen):
            return _to_ints(x), _to_ints(y)
        n_side = 0 if "number" in kinds[0] and not has_bool[0] else 1
        if "number" not in kinds[n_side]:
            n_side = 1 - n_side
        ns, bs = sides[n_side], sides[1 - n_side]
        odd = [v for v in kinds[n_side]["number"] if v not in (0, 1)]
        fix = (f"pass {ns.threshold}= (a value >= the threshold is a pass), e.g. {ns.threshold}=3"
               if ns.threshold else f"e.g. {ns.target} = {ns.expr} >= 3")
        raise LabelMismatchError(
            f"{lead}{ns.name} holds numbers other than 0 and 1 ({_show(odd)}) but {bs.name} holds booleans; True "
            f"only equals 1 and False 0, {tail} Turn the numbers into pass/fail first: {fix}."
        )
    if labels is None:
        sets = [set().union(*k.values()) for k in kinds]
        try:
            common = sets[0] & sets[1]
        except TypeError:
            return x, y
        binary = all(v in (0, 1) and _kind(v) in ("bool", "number") for v in sets[0] | sets[1])
        if not common and not binary and max(len(sets[0]), len(sets[1])) >= 2:
            a, b = sides
            mapping = ", ".join(f"{v!r}: ..." for v in sorted(sets[1], key=repr)[:4])
            raise LabelMismatchError(
                f"{lead}{a.name} uses the labels ({_show(list(sets[0]))}) and {b.name} uses "
                f"({_show(list(sets[1]))}): no label in common, {tail} Map one side onto the other's labels, "
                f"e.g. {b.target} = {b.expr}.map({{{mapping}}}) (each to one of the labels of {a.name}), or pass "
                "labels=[...] listing every category if the two really never agree."
            )
    return x, y


# --------------------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------------------


def _disagreement_weights(labels: list[Any], weights: str | None, distance: str) -> np.ndarray:
    """K x K disagreement weights: 0 on the diagonal, at most 1."""
    k = len(labels)
    if weights is None:
        return 1.0 - np.eye(k)
    if distance == "rank":
        scores = np.arange(k, dtype=float)
    else:
        try:
            scores = np.asarray([float(v) for v in labels], dtype=float)
        except (TypeError, ValueError):
            raise TypeError(
                f"distance='value' needs numeric labels, got {labels!r}; use distance='rank' to weight by "
                "position in the label order"
            ) from None
    diff = np.abs(scores[:, None] - scores[None, :])
    if weights == "quadratic":
        diff = diff**2
    top = diff.max() if k > 1 else 0.0
    return diff / top if top > 0 else diff


def _kappa_and_se(table: np.ndarray, dis: np.ndarray) -> tuple[float, float]:
    """Kappa and its large-sample standard error (Fleiss, Cohen & Everitt 1969) from a count table."""
    n = table.sum()
    p = table / n
    row, col = p.sum(1), p.sum(0)
    expected = np.outer(row, col)
    w = 1.0 - dis  # agreement weights, 1 on the diagonal
    po, pe = float((w * p).sum()), float((w * expected).sum())
    if pe >= 1.0 - 1e-15:
        return math.nan, math.nan
    kappa = (po - pe) / (1.0 - pe)
    w_row = w @ col  # mean agreement weight of row category i against the judge's margin
    w_col = row @ w
    term = (p * (w - (w_row[:, None] + w_col[None, :]) * (1.0 - kappa)) ** 2).sum()
    var = (term - (kappa - pe * (1.0 - kappa)) ** 2) / ((1.0 - pe) ** 2 * n)
    return float(kappa), float(math.sqrt(max(var, 0.0)))


def _kappa_many(tables: np.ndarray, dis: np.ndarray) -> np.ndarray:
    """Kappa for a stack of count tables (B x K x K), vectorised."""
    n = tables.sum(axis=(1, 2))
    p = tables / n[:, None, None]
    row, col = p.sum(2), p.sum(1)
    w = 1.0 - dis
    po = np.einsum("bij,ij->b", p, w)
    pe = np.einsum("bi,ij,bj->b", row, w, col)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (po - pe) / (1.0 - pe)
    out[pe >= 1.0 - 1e-15] = np.nan
    return out


def _confusion(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k).astype(float)


def _prepare_kappa(
    a: Any, b: Any, weights: str | None, labels: Any, distance: str, names=("a", "b"), where: str = "cohen_kappa"
):
    check_option("weights", weights, _WEIGHTS)
    check_option("distance", distance, _DISTANCES)
    x, y = _pair(a, b, names)
    x, y = _check_comparable(x, y, (_arg_side(names[0]), _arg_side(names[1])), where=where, labels=labels)
    (ca, cb), labs, _ = _label_codes([x, y], labels, need_order=weights is not None)
    missing = (ca < 0) | (cb < 0)
    if missing.any():
        where = np.flatnonzero(missing)
        raise ValueError(
            f"{missing.sum()} item(s) have a missing label (positions {where[:5].tolist()}"
            f"{' ...' if len(where) > 5 else ''}); drop them first, or use agreement.report(), which "
            "excludes them and reports the count"
        )
    if len(ca) == 0:
        raise ValueError("kappa needs at least one labelled item, got none")
    return ca, cb, labs, _disagreement_weights(labs, weights, distance)


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
    distance: str = "rank",
) -> float:
    """Cohen's kappa between two raters: agreement corrected for chance.

    ``kappa = (p_o - p_e) / (1 - p_e)``, with ``p_o`` the observed and ``p_e`` the chance agreement
    from the two raters' label frequencies. Weighted kappa replaces "agree / disagree" by a
    disagreement weight that grows with the distance between categories.

    Parameters
    ----------
    a, b : sequence of hashable
        The two raters' labels for the same items, in the same order (any hashable labels:
        0/1, bools, strings, ratings). Missing labels raise; :func:`report` drops and counts them.
    weights : {None, "linear", "quadratic"}
        None: plain kappa. "linear": disagreement ``|i - j|``; "quadratic": ``(i - j)**2``.
    labels : sequence, optional
        The categories in their order (default: the sorted labels that occur). A label not listed
        raises.
    distance : {"rank", "value"}
        For weighted kappa, what ``i - j`` is: "rank" (default) uses positions in the label order
        (scikit-learn's convention, statsmodels' default); "value" uses the numeric labels as
        category scores (statsmodels with ``weights=labels``).

    Returns
    -------
    float
        Kappa in [-1, 1]; NaN when chance agreement is 1 (both raters used one and the same label).

    Examples
    --------
    >>> cohen_kappa(["yes", "yes", "no", "no"], ["yes", "no", "no", "no"])
    0.5
    >>> round(cohen_kappa([1, 2, 3, 4], [1, 2, 4, 4], weights="quadratic"), 3)
    0.917
    """
    ca, cb, labs, dis = _prepare_kappa(a, b, weights, labels, distance)
    return _kappa_and_se(_confusion(ca, cb, len(labs)), dis)[0]


def _smallest_count(table: np.ndarray) -> int:
    """The rarest label's count on either rater's side, over the labels either rater used."""
    rows, cols = table.sum(1), table.sum(0)
    used = (rows + cols) > 0
    return int(min(rows[used].min(), cols[used].min())) if used.any() else 0


def _item_tables(table: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap count tables: resampling n items with replacement, drawn as one multinomial."""
    n, k = int(table.sum()), table.shape[0]
    # Resampling n items gives multinomial cell counts with the observed cell shares: drawing the
    # counts directly is the same bootstrap, without an n-by-B index array.
    return rng.multinomial(n, (table / n).ravel(), size=n_resamples).reshape(n_resamples, k, k).astype(float)


def _percentile(boot: np.ndarray, level: float) -> tuple[float, float]:
    finite = boot[np.isfinite(boot)]
    if finite.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - level
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def _kappa_interval(
    table: np.ndarray,
    dis: np.ndarray,
    *,
    ci: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    boot_tables: np.ndarray | None = None,
) -> tuple[Interval, str | None]:
    """Kappa and its interval from a count table, and a warning text when the method is fragile here."""
    n = int(table.sum())
    kappa, se = _kappa_and_se(table, dis)
    smallest = _smallest_count(table)
    fragile = smallest < KAPPA_MIN_COUNT
    note, why = None, ""
    if method == "auto":
        method = "adjusted" if fragile else "analytic"
        why = f"; chosen because the rarest label has {smallest} < {KAPPA_MIN_COUNT} items" if fragile else ""
    elif fragile and method in ("analytic", "bootstrap"):
        note = (
            f"the {method} kappa interval under-covers when a label is this rare (the rarest has {smallest} < "
            f"{KAPPA_MIN_COUNT} items; in simulation a nominal 95% interval covered 65-89% of the time): leave "
            "method='auto' (the default) or pass method='adjusted', and label more items of the rare class"
        )
    if method == "bootstrap":
        if boot_tables is None:
            boot_tables = _item_tables(table, n_resamples, np.random.default_rng(seed))
        low, high = _percentile(_kappa_many(boot_tables, dis), ci)
        iv = Interval(kappa, low, high, method="bootstrap-percentile", level=ci, n=n, n_resamples=n_resamples,
                      seed=seed)
        return iv, note
    if math.isnan(kappa):
        return Interval(kappa, math.nan, math.nan, method="undefined: chance agreement is 1", level=ci, n=n), note
    z = _z(ci)
    if method == "analytic":
        low, high = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
        return Interval(kappa, low, high, method="asymptotic-normal (Fleiss-Cohen-Everitt SE)", level=ci, n=n), note
    # "adjusted": the same normal interval on the table plus two pseudo-items spread evenly over the
    # cells of the labels in use (0.5 per cell for pass/fail, as Agresti-Coull add two successes and
    # two failures), widened if needed to contain the estimate.
    rows, cols = table.sum(1), table.sum(0)
    used = (rows + cols) > 0
    pseudo = 2.0 / used.sum() ** 2
    adj_kappa, adj_se = _kappa_and_se(table + pseudo * np.outer(used, used), dis)
    low, high = max(-1.0, adj_kappa - z * adj_se), min(1.0, adj_kappa + z * adj_se)
    low, high = min(low, kappa), max(high, kappa)
    label = f"adjusted asymptotic-normal (Fleiss-Cohen-Everitt SE, 2 pseudo-items over the cells{why})"
    return Interval(kappa, low, high, method=label, level=ci, n=n), note


def cohen_kappa_interval(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    weights: str | None = None,
    labels: Sequence[Hashable] | None = None,
    distance: str = "rank",
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> Interval:
    """Cohen's kappa with a confidence interval.

    Parameters
    ----------
    a, b, weights, labels, distance
        As in :func:`cohen_kappa`.
    ci : float
        Confidence level.
    method : {"auto", "analytic", "adjusted", "bootstrap"}
        "analytic": ``kappa +- z * SE`` with the large-sample standard error of Fleiss, Cohen &
        Everitt (1969) -- statsmodels' ``std_kappa`` -- clipped to [-1, 1]. "adjusted": the same on
        the table plus two pseudo-items spread evenly over its cells (0.5 per cell for pass/fail),
        widened to contain the estimate. "bootstrap": percentile interval over ``n_resamples``
        resamples of the items (seeded by ``seed``). "auto" (default): "analytic", or "adjusted" when
        the rarest label (either rater) has fewer than :data:`KAPPA_MIN_COUNT` items, where the
        analytic and bootstrap intervals under-cover (asking for either there warns with
        :class:`FragileIntervalWarning`).

    Returns
    -------
    Interval
        ``(kappa, low, high)`` with method, level, n (and resamples and seed for the bootstrap).

    Examples
    --------
    >>> iv = cohen_kappa_interval([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28)
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.559, 0.421, 0.697)
    """
    check_option("method", method, _KAPPA_METHODS)
    level = check_level(ci)
    _check_resamples(n_resamples)
    ca, cb, labs, dis = _prepare_kappa(a, b, weights, labels, distance, where="cohen_kappa_interval")
    iv, note = _kappa_interval(
        _confusion(ca, cb, len(labs)), dis, ci=level, method=method, n_resamples=n_resamples, seed=seed
    )
    if note:
        _warn(f"cohen_kappa_interval: {note}", FragileIntervalWarning)
    return iv


def _check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive integer, got {n_resamples!r}")


# --------------------------------------------------------------------------------------------------
# Rogan-Gladen
# --------------------------------------------------------------------------------------------------


def rogan_gladen(
    judge_rate: float,
    *,
    sensitivity: float,
    specificity: float,
    n: int | None = None,
    n_positive: int | None = None,
    n_negative: int | None = None,
    ci: float = 0.95,
    method: str = "delta",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> Interval:
    """The true pass rate implied by a judge's pass rate and its error rates (Rogan & Gladen 1978).

    ``pi = (judge_rate + specificity - 1) / (sensitivity + specificity - 1)``. A judge with these
    error rates passes between ``1 - specificity`` (no answer truly passes) and ``sensitivity``
    (every answer does) of a run; a rate outside that range is impossible under the error rates, so
    ``pi`` falls outside [0, 1]. Then an :class:`ImpossibleRateWarning` says so, the estimate is
    clipped to the nearer bound, and the interval is the part of the unclipped interval inside
    [0, 1] -- never a zero-width interval at the bound. When the whole interval lies outside [0, 1]
    the inputs contradict each other beyond their sampling error (the judge behaves differently on
    this run than on the validation items): the bounds are NaN and the method says why.

    Parameters
    ----------
    judge_rate : float
        The judge's pass rate on the run to correct.
    sensitivity, specificity : float
        The judge's rates measured against people (e.g. :class:`AgreementReport`).
    n : int, optional
        Items behind ``judge_rate``; with ``n_positive`` and ``n_negative`` (the human-positive and
        human-negative items behind the sensitivity and specificity) it gives the interval. Without
        them there is no interval (NaN bounds).
    ci : float
        Confidence level.
    method : {"delta", "bootstrap"}
        "delta": ``pi +- z * SE`` with ``SE**2 = [p(1-p)/n + pi**2 Se(1-Se)/n_pos + (1-pi)**2
        Sp(1-Sp)/n_neg] / J**2`` (the three rates treated as independent binomials; ``pi`` clipped
        to [0, 1] inside the variance). "bootstrap": parametric, redrawing the three rates from their
        binomials ``n_resamples`` times (seeded); percentile interval of the unclipped estimates.
        Either way the bounds are then kept inside [0, 1].

    Returns
    -------
    Interval

    Raises
    ------
    ValueError
        When ``sensitivity + specificity <= 1``: the judge is no better than chance and its rate
        cannot be corrected.

    Examples
    --------
    >>> iv = rogan_gladen(0.82, sensitivity=142 / 150, specificity=28 / 50, n=200, n_positive=150,
    ...                   n_negative=50)
    >>> round(iv.estimate, 3)
    0.75
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     iv = rogan_gladen(0.97, sensitivity=0.95, specificity=0.8, n=300, n_positive=150, n_negative=50)
    >>> caught[0].category.__name__, iv.estimate, round(iv.low, 3), iv.high    # above 0.95: impossible
    ('ImpossibleRateWarning', 1.0, 0.974, 1.0)
    """
    check_option("method", method, _RG_METHODS)
    level = check_level(ci)
    for name, value in (("judge_rate", judge_rate), ("sensitivity", sensitivity), ("specificity", specificity)):
        if not 0 <= value <= 1:
            raise ValueError(f"`{name}` must be a rate between 0 and 1, got {value!r}")
    counts = (n, n_positive, n_negative)
    if any(c is None for c in counts) and any(c is not None for c in counts):
        raise ValueError("pass all of n, n_positive and n_negative for an interval, or none of them")
    if n is not None:
        for name, c in zip(("n", "n_positive", "n_negative"), counts):
            if int(c) != c or c <= 0:
                raise ValueError(f"`{name}` must be a positive integer, got {c!r}")
        _check_resamples(n_resamples)
    return _rogan_gladen(
        judge_rate, sensitivity, specificity, n=n, level=level, method=method, n_resamples=n_resamples, seed=seed,
        counts=None if n is None else (int(n_positive), int(n_negative)),
    )


def _rogan_gladen(
    judge_rate: float,
    sensitivity: float,
    specificity: float,
    *,
    n: int | None,
    level: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    counts: tuple[int, int] | None = None,
    draws: np.ndarray | None = None,
    source: str = "",
) -> Interval:
    """Rogan-Gladen with Se/Sp uncertainty from binomial ``counts`` or from joint ``draws`` (B x 2).

    ``draws`` are bootstrap replicates of (sensitivity, specificity), e.g. from a cluster bootstrap
    of the validation items: the delta method uses their variances and covariance, the bootstrap
    pairs them with binomial redraws of the judge's rate.
    """
    youden = sensitivity + specificity - 1
    if youden <= 0:
        raise ValueError(
            f"the judge is no better than chance (sensitivity + specificity - 1 = {youden:.3f} <= 0), so its "
            "pass rate cannot be corrected; fix the judge first"
        )
    raw = (judge_rate + specificity - 1) / youden
    estimate = min(1.0, max(0.0, raw))
    clipped = ""
    if raw != estimate:
        clipped = f"; estimate clipped to [0, 1] from {raw:.3f}"
        _warn(
            f"rogan_gladen: the judge's pass rate {judge_rate:.3f} is impossible under its error rates: with "
            f"sensitivity {sensitivity:.3f} and specificity {specificity:.3f} it passes between "
            f"{1 - specificity:.3f} (no answer truly passes) and {sensitivity:.3f} (every answer does). The "
            f"corrected rate {raw:.3f} is clipped to {estimate:g} and the interval keeps only its part inside "
            "[0, 1]. The judge's errors on this run differ from those measured (re-validate it on answers "
            "like these), or its rates were measured on too few items.",
            ImpossibleRateWarning,
        )
    if n is None:
        return Interval(estimate, math.nan, math.nan, method=f"rogan-gladen{clipped}; no interval: counts not given",
                        level=level)
    if method == "delta":
        pi = estimate  # the true rate lies in [0, 1]: weight the Se and Sp variances there
        if draws is not None:
            cov = np.cov(draws[np.isfinite(draws).all(1)].T)
            var_se, var_sp, cov_se_sp = float(cov[0, 0]), float(cov[1, 1]), float(cov[0, 1])
        else:
            var_se = sensitivity * (1 - sensitivity) / counts[0]
            var_sp = specificity * (1 - specificity) / counts[1]
            cov_se_sp = 0.0
        var = (
            judge_rate * (1 - judge_rate) / n + pi**2 * var_se + (1 - pi) ** 2 * var_sp - 2 * pi * (1 - pi) * cov_se_sp
        ) / youden**2
        half = _z(level) * math.sqrt(max(var, 0.0))
        low, high, label = raw - half, raw + half, "rogan-gladen delta method"
        extra: dict[str, Any] = {}
    else:
        rng = np.random.default_rng(seed)
        p = rng.binomial(int(n), judge_rate, n_resamples) / n
        if draws is not None:
            pick = draws[rng.integers(0, len(draws), n_resamples)]
            se, sp = pick[:, 0], pick[:, 1]
        else:
            se = rng.binomial(counts[0], sensitivity, n_resamples) / counts[0]
            sp = rng.binomial(counts[1], specificity, n_resamples) / counts[1]
        j = se + sp - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = np.where(j > 0, (p + sp - 1) / j, np.nan)
        low, high = _percentile(boot, level)
        label = "rogan-gladen parametric bootstrap-percentile"
        extra = {"n_resamples": n_resamples, "seed": seed}
    return _bounded_interval(estimate, low, high, label + source + clipped, level=level, n=n, **extra)


def _bounded_interval(estimate: float, low: float, high: float, label: str, **meta: Any) -> Interval:
    """The part of [low, high] inside [0, 1]; no interval (NaN) when none of it is."""
    if math.isnan(low) or math.isnan(high):
        return Interval(estimate, math.nan, math.nan, method=f"{label}; no interval", **meta)
    if high < 0 or low > 1:
        return Interval(
            estimate, math.nan, math.nan,
            method=f"{label}; no interval: all of [{low:.3f}, {high:.3f}] lies outside [0, 1], so the inputs "
            "contradict each other beyond their sampling error", **meta,
        )
    return Interval(estimate, max(0.0, low), min(1.0, high), method=f"{label}, bounds kept in [0, 1]", **meta)


# --------------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------------


def _interpret(kappa: float) -> str:
    if math.isnan(kappa):
        return "undefined"
    if kappa < KAPPA_UNTRUSTED:
        return "should not be trusted"
    if kappa <= KAPPA_SUBSTANTIAL:
        return "moderate"
    return "substantial"


def _newcombe_difference(x1: int, n1: int, x2: int, n2: int, level: float) -> tuple[float, float, float]:
    """Newcombe's hybrid score interval (method 10) for p1 - p2 of two independent proportions."""
    a = proportion_interval(x1, n1, ci=level)
    b = proportion_interval(x2, n2, ci=level)
    d = a.estimate - b.estimate
    low = d - math.sqrt((a.estimate - a.low) ** 2 + (b.high - b.estimate) ** 2)
    high = d + math.sqrt((a.high - a.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return d, max(-1.0, low), min(1.0, high)


@dataclass(frozen=True, repr=False, eq=False)
class AgreementReport:
    """How well a judge agrees with people on the same items (see :func:`report`).

    Attributes
    ----------
    n, n_excluded : int
        Items compared, and items left out because a label was missing (or, for
        :func:`judge_vs_majority`, the human vote was tied and ``ties="drop"``).
    labels : list
        The categories in order (confusion rows and columns).
    positive : label or None
        The "pass" label (e.g. 1, "supported"); the binary statistics are None without it.
    kappa, kappa_low, kappa_high : float
        Cohen's kappa and its interval (``kappa_interval`` holds the method, level and seed).
    agreement : float
        Raw share of items with the same label.
    confusion : DataFrame
        Counts, human labels as rows and judge labels as columns.
    per_class_recall : Series
        For each human label, the share of those items the judge labelled the same.
    sensitivity, specificity : float or None
        Share of human-positive items the judge passed, and of human-negative items it failed.
    miss_rate : float or None
        Of the items people marked negative, the share the judge passed (``1 - specificity``).
    human_positive_rate, judge_positive_rate : float or None
        Pass rates by people and by the judge on the same items.
    attenuation : float or None
        ``sensitivity + specificity - 1`` (Youden's J): a true change ``d`` in the pass rate moves
        the judge's pass rate by ``J * d``, so about ``1 / J**2`` times as many questions are needed
        to detect it (see :func:`raglab.sizing.questions_needed`).
    corrected_pass_rate : Interval or None
        Rogan-Gladen estimate of the true pass rate from the judge's rate on these items. On the
        validation items themselves it reproduces the human rate (a check); its interval is a
        bootstrap over these items that re-estimates sensitivity, specificity and the judge's rate
        together in each resample (they come from the same items, so treating them as independent
        would be wrong). Use :meth:`correct` on a new run's judge pass rate.
    intervals : dict of str -> Interval
        Intervals for every statistic above: Wilson for rates, Newcombe for the attenuation, kappa's
        as chosen by ``method``; with ``units``, a cluster bootstrap for every one of them.
    disagreements : DataFrame
        The items where judge and people differ (the original rows when given a DataFrame).
    n_clusters : int or None
        With ``units``: the clusters (e.g. conversations) the items fall into.
    design_effects : dict of str -> float
        With ``units``: for each statistic, the variance of its cluster bootstrap over the variance
        of an item bootstrap that treats the items as independent (Kish's design effect; about the
        squared ratio of the interval widths). ``n / design_effect`` is the number of independent
        items the clustered ones are worth. NaN where a statistic rests on too few clusters.
    warnings : list of str
        Warnings raised when the report was made (e.g. kappa below 0.4).
    """

    n: int
    n_excluded: int
    labels: list[Any]
    positive: Any
    kappa: float
    kappa_interval: Interval
    agreement: float
    confusion: pd.DataFrame
    per_class_recall: pd.Series
    weights: str | None
    distance: str
    sensitivity: float | None
    specificity: float | None
    miss_rate: float | None
    human_positive_rate: float | None
    judge_positive_rate: float | None
    attenuation: float | None
    corrected_pass_rate: Interval | None
    intervals: dict[str, Interval]
    disagreements: pd.DataFrame
    human_name: str = "human"
    judge_name: str = "judge"
    n_ties: int = 0
    ties: str | None = None
    n_clusters: int | None = None
    units_name: str | None = None
    design_effects: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _se_sp_draws: np.ndarray | None = None  # cluster-bootstrap (sensitivity, specificity) pairs, B x 2

    @property
    def kappa_low(self) -> float:
        return self.kappa_interval.low

    @property
    def kappa_high(self) -> float:
        return self.kappa_interval.high

    @property
    def interpretation(self) -> str:
        """'substantial' (> 0.6), 'moderate' (0.4 to 0.6) or 'should not be trusted' (< 0.4)."""
        return _interpret(self.kappa)

    def correct(
        self,
        judge_pass_rate: float,
        n: int,
        *,
        ci: float | None = None,
        method: str = "delta",
        n_resamples: int = 10_000,
        seed: int | None = 0,
    ) -> Interval:
        """Rogan-Gladen corrected true pass rate of a new run judged by this judge.

        The new run's judge rate is a binomial over its ``n`` questions, independent of the
        validation items. The sensitivity and specificity carry the validation's uncertainty: as
        binomials over the human-positive and human-negative items, or -- for a report made with
        ``units`` -- as their joint cluster-bootstrap distribution (variances and covariance for the
        delta method, the replicates themselves for the bootstrap).

        Parameters
        ----------
        judge_pass_rate : float
            The judge's pass rate on the new run.
        n : int
            Questions in the new run.
        ci, method, n_resamples, seed
            See :func:`rogan_gladen` (the level defaults to this report's).

        Examples
        --------
        >>> rep = report([1] * 150 + [0] * 50, [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28, positive=1)
        >>> iv = rep.correct(0.70, 400)      # the judge passes 70% of a new run
        >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
        (0.513, 0.35, 0.676)
        """
        if self.sensitivity is None or self.specificity is None:
            raise ValueError("the pass-rate correction needs a binary report: pass positive=<the pass label>")
        if self._se_sp_draws is None:
            return rogan_gladen(
                judge_pass_rate,
                sensitivity=self.sensitivity,
                specificity=self.specificity,
                n=n,
                n_positive=self._counts["human_positive"],
                n_negative=self._counts["human_negative"],
                ci=self.kappa_interval.level if ci is None else ci,
                method=method,
                n_resamples=n_resamples,
                seed=seed,
            )
        check_option("method", method, _RG_METHODS)
        if not 0 <= judge_pass_rate <= 1:
            raise ValueError(f"`judge_pass_rate` must be a rate between 0 and 1, got {judge_pass_rate!r}")
        if int(n) != n or n <= 0:
            raise ValueError(f"`n` must be a positive integer, got {n!r}")
        _check_resamples(n_resamples)
        return _rogan_gladen(
            judge_pass_rate, self.sensitivity, self.specificity, n=int(n),
            level=check_level(self.kappa_interval.level if ci is None else ci), method=method, n_resamples=n_resamples,
            seed=seed, draws=self._se_sp_draws,
            source=f" (Se, Sp from a cluster bootstrap over {self.n_clusters} clusters)",
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per statistic: estimate, low, high, method, level, n, n_resamples, seed, design_effect.

        ``design_effect`` is NaN unless the report was made with ``units``.
        """
        rows = []
        for name, iv in self.intervals.items():
            rows.append({"statistic": name, **iv.to_dict(), "design_effect": self.design_effects.get(name, math.nan)})
        return pd.DataFrame(
            rows,
            columns=["statistic", "estimate", "low", "high", "method", "level", "n", "n_resamples", "seed",
                     "design_effect"],
        )

    def _lines(self) -> list[tuple[str, str]]:
        c = self._counts
        pct = f"{self.kappa_interval.level:.0%}"
        items = f"{self.n}"
        if self.n_excluded:
            parts = []
            if self.n_ties:
                parts.append(f"{self.n_ties} with a tied human vote (ties={self.ties!r})")
            if self.n_excluded - self.n_ties:
                parts.append(f"{self.n_excluded - self.n_ties} with a missing label")
            items += f" ({self.n_excluded} excluded: {', '.join(parts)})"
        iv = self.kappa_interval
        bounds = (f"[{iv.low:.3f}, {iv.high:.3f}] {pct} {iv.method}" if np.isfinite(iv.low)
                  else f"(no interval: {iv.method})")
        out = [
            ("items", items),
            ("raw agreement", f"{self.agreement:.3f}"),
            (
                "Cohen's kappa",
                f"{self.kappa:.3f} {bounds}: {self.interpretation}"
                + (f" ({self.weights} weights, distance={self.distance!r})" if self.weights else ""),
            ),
        ]
        if self.n_clusters is not None:
            shown = [(label, self.design_effects.get(key, math.nan))
                     for key, label in (("kappa", "kappa"), ("agreement", "agreement"), ("miss_rate", "miss rate"))
                     if key in self.intervals]
            deff = ", ".join(f"{label} {value:.2f}" for label, value in shown if np.isfinite(value)) or "n/a"
            named = f" ({self.units_name!r})" if self.units_name else ""
            worth = self.design_effects.get("kappa", math.nan)
            worth_text = (f"; the {self.n} items are worth about {self.n / worth:.0f} independent ones for kappa"
                          if np.isfinite(worth) and worth > 1 else "")
            out.append((
                "clusters",
                f"{self.n_clusters}{named}: intervals resample whole clusters; design effect (variance with "
                f"clusters / assuming independent items) {deff}{worth_text}",
            ))
        if self.positive is not None:
            # With one human label only, some rates have no denominator: print n/a, never crash.
            def num(value: Any) -> str:
                return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"

            mr = self.intervals.get("miss_rate")
            miss = num(self.miss_rate) + (
                f" [{mr.low:.3f}, {mr.high:.3f}]" if mr is not None and np.isfinite(mr.low) else "")
            out += [
                (
                    "miss rate",
                    f"{miss}: the judge passed {c['false_pass']} of the {c['human_negative']} items people "
                    "marked negative",
                ),
                (
                    "sensitivity",
                    f"{num(self.sensitivity)} ({c['true_pass']}/{c['human_positive']}), specificity "
                    f"{num(self.specificity)} ({c['true_fail']}/{c['human_negative']})",
                ),
                (
                    "pass rate",
                    f"judge {num(self.judge_positive_rate)} vs people {num(self.human_positive_rate)}",
                ),
                (
                    "attenuation",
                    f"{num(self.attenuation)}: a true change d in the pass rate shows as about "
                    + (f"{self.attenuation:.2f}*d" if num(self.attenuation) != "n/a" else "(n/a)")
                    + " in the judge's mean",
                ),
            ]
            if self.corrected_pass_rate is not None:
                rg = self.corrected_pass_rate
                bounds = f" [{rg.low:.3f}, {rg.high:.3f}]" if np.isfinite(rg.low) else ""
                out.append(
                    (
                        "corrected pass rate",
                        f"{rg.estimate:.3f}{bounds} (Rogan-Gladen on these items = the people's rate; a check. "
                        "report.correct(rate, n) for a new run)",
                    )
                )
        else:
            recall = ", ".join(f"{k!r}: {v:.3f}" for k, v in self.per_class_recall.items())
            out.append(("per-class recall", recall))
        out.append(("disagreements", f"{len(self.disagreements)} items (report.disagreements)"))
        return out

    def __repr__(self) -> str:
        title = f"AgreementReport: judge {self.judge_name!r} vs {self.human_name!r}" + (
            f", positive label {self.positive!r}" if self.positive is not None else ""
        )
        lines = [title]
        lines += [f"  {key:<20} {value}" for key, value in self._lines()]
        lines += [f"  WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        title = e(repr(self).splitlines()[0])
        rows = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:left'>{e(v)}</td></tr>"
                       for k, v in self._lines())
        warn = "".join(f"<p style='color:#b00'><b>Warning:</b> {e(w)}</p>" for w in self.warnings)
        confusion = self.confusion.to_html()
        return f"<div><b>{title}</b><table>{rows}</table>{warn}<p>Confusion (people in rows, judge in columns)</p>{confusion}</div>"


def _looks_like_scores(values: np.ndarray) -> bool:
    """Floats with a fractional part are scores, not category labels."""
    floats = [v for v in values if isinstance(v, (float, np.floating)) and np.isfinite(v)]
    if values.dtype.kind == "f":
        floats = values[np.isfinite(values)].tolist()
    return any(v != int(v) for v in floats)


def _binarize(values: np.ndarray, threshold: float | None, name: str) -> np.ndarray:
    if threshold is None:
        return values
    out = np.empty(values.shape, dtype=object)
    missing = _missing(values)
    try:
        numbers = np.where(missing, np.nan, values).astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}_threshold` needs numeric {name} scores") from None
    out[:] = numbers >= threshold
    out[missing] = None
    return out


def report(
    human: Sequence[Hashable],
    judge: Sequence[Hashable],
    *,
    positive: Hashable | None = None,
    labels: Sequence[Hashable] | None = None,
    weights: str | None = None,
    distance: str = "rank",
    human_threshold: float | None = None,
    judge_threshold: float | None = None,
    units: Sequence[Hashable] | None = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    ids: Sequence[Hashable] | None = None,
    warn: bool = True,
) -> AgreementReport:
    """Validate a judge against human labels of the same items.

    Parameters
    ----------
    human, judge : sequence of hashable
        Labels for the same items in the same order (lists, arrays or Series; a Series' index
        labels the disagreements). Items where either label is missing are excluded and counted.
        The two must be comparable: numbers with numbers (``1 == 1.0``), text with text, booleans
        with booleans or with 0/1 numbers (True counts as 1, False as 0). Text against numbers or
        booleans (``"1"`` is not ``1``), booleans against other numbers, or two sides with no label in
        common raise :class:`LabelMismatchError` naming both sides and the fix, instead of a kappa
        of 0 that would blame the judge.
    positive : label, optional
        The pass label (e.g. 1, True, "supported"). Required for the miss rate, sensitivity,
        specificity, pass rates, attenuation and the corrected pass rate; with more than two labels
        these treat ``positive`` against the rest. Inferred as 1/True when the labels are 0/1 or
        booleans.
    labels, weights, distance
        Category order and weighting for kappa; see :func:`cohen_kappa`.
    human_threshold, judge_threshold : float, optional
        Turn numeric scores into pass/fail labels: ``score >= threshold`` is True (the positive).
    units : sequence, optional
        A cluster label per item, in the same order (e.g. the conversation or source document of
        each answer). Items of one cluster are not independent: every interval then comes from a
        cluster bootstrap (whole clusters resampled, ``n_resamples``, ``seed``; percentile), and the
        report shows each statistic's design effect. A statistic resting on fewer than
        :data:`raglab.stats.MIN_CLUSTERS` clusters gets no interval, with a warning.
    ci : float
        Confidence level of every interval.
    method : {"auto", "analytic", "adjusted", "bootstrap"}
        Kappa interval without ``units``; see :func:`cohen_kappa_interval` ("auto" is the analytic
        interval, or the adjusted one when a label is rare). With ``units`` only "auto" or
        "bootstrap" (both the cluster bootstrap).
    n_resamples, seed : int
        Resamples and seed of every bootstrap in the report: the corrected pass rate's (always),
        kappa's with ``method="bootstrap"``, and all of them with ``units``.
    ids : sequence, optional
        Item ids used as the index of ``disagreements``.
    warn : bool
        Issue the report's warnings (:class:`LowAgreementWarning` when kappa < 0.4,
        :class:`FragileIntervalWarning` for an interval that cannot be trusted); they are kept in
        ``report.warnings`` either way.

    Returns
    -------
    AgreementReport

    Examples
    --------
    >>> human = [1] * 150 + [0] * 50
    >>> judge = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28
    >>> rep = report(human, judge, positive=1)
    >>> round(rep.kappa, 3), rep.miss_rate, rep.judge_positive_rate, rep.human_positive_rate
    (0.559, 0.44, 0.82, 0.75)
    >>> rep.confusion.to_numpy().tolist()       # people in rows, judge in columns: [pass, fail]
    [[142, 8], [22, 28]]
    >>> conversations = [f"c{i % 20}" for i in range(200)]    # 20 clusters of 10 items
    >>> clustered = report(human, judge, positive=1, units=conversations, n_resamples=2000)
    >>> clustered.n_clusters, clustered.kappa_interval.method
    (20, 'cluster bootstrap-percentile over 20 clusters')
    """
    return _report(
        human, judge, positive=positive, labels=labels, weights=weights, distance=distance,
        human_threshold=human_threshold, judge_threshold=judge_threshold, ci=ci, method=method,
        n_resamples=n_resamples, seed=seed, ids=ids, warn=warn, units=units, where="report",
    )


def _unit_codes(units: Any, n: int) -> tuple[np.ndarray, str | None]:
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


def _table_statistics(tables: np.ndarray, dis: np.ndarray, pos: int | None) -> dict[str, np.ndarray]:
    """Every report statistic for a stack of count tables (B x k x k); NaN where undefined."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {"agreement": np.trace(tables, axis1=1, axis2=2) / n, "kappa": _kappa_many(tables, dis)}
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


def _report(
    human: Any,
    judge: Any,
    *,
    positive: Any,
    labels: Any,
    weights: str | None,
    distance: str,
    human_threshold: float | None,
    judge_threshold: float | None,
    ci: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    ids: Any = None,
    warn: bool = True,
    rows: pd.DataFrame | None = None,
    names: tuple[str, str] | None = None,
    n_ties: int = 0,
    ties: str | None = None,
    stacklevel: int | None = None,  # unused: warnings find the user's line themselves
    units: Any = None,
    sides: tuple[_Side, _Side] | None = None,
    where: str | None = None,
) -> AgreementReport:
    check_option("weights", weights, _WEIGHTS)
    check_option("distance", distance, _DISTANCES)
    check_option("method", method, _KAPPA_METHODS)
    level = check_level(ci)
    _check_resamples(n_resamples)
    if units is not None and method in ("analytic", "adjusted"):
        raise ValueError(
            f"units= resamples whole clusters for every interval, kappa's included; method={method!r} would "
            "treat the items as independent. Leave method='auto' or pass method='bootstrap'"
        )
    if names is None:
        names = (
            str(human.name) if isinstance(human, pd.Series) and human.name is not None else "human",
            str(judge.name) if isinstance(judge, pd.Series) and judge.name is not None else "judge",
        )
    if where is None:
        where = "rag.agreement" if rows is not None else "report"
    if sides is None:
        if rows is not None:
            sides = (_column_side(names[0], "human_threshold"), _column_side(names[1], "judge_threshold"))
        else:
            sides = (_arg_side("human", "human_threshold"), _arg_side("judge", "judge_threshold"))
            sides = tuple(  # type: ignore[assignment]
                _Side(f"{s.name} ({shown!r})", s.target, s.expr, s.threshold) if shown != arg else s
                for s, shown, arg in zip(sides, names, ("human", "judge"))
            )
    x, y = _pair(human, judge, ("human", "judge"))
    if ids is not None:
        index = pd.Index(list(ids))
        if len(index) != len(x):
            raise ValueError(f"`ids` must give one id per item: got {len(index)} ids for {len(x)} items")
    elif isinstance(human, pd.Series):
        index = human.index
    elif isinstance(judge, pd.Series):
        index = judge.index
    else:
        index = pd.RangeIndex(len(x))
    clusters, units_name = (None, None) if units is None else _unit_codes(units, len(x))
    for values, threshold, who in ((x, human_threshold, "human"), (y, judge_threshold, "judge")):
        if threshold is None and _looks_like_scores(values):
            example = next(float(v) for v in values if isinstance(v, (float, np.floating)) and np.isfinite(v) and v != int(v))
            raise ValueError(
                f"the {who} column holds scores (e.g. {example!r}), not labels; pass {who}_threshold= to turn "
                f"them into pass/fail (score >= threshold), e.g. {who}_threshold=0.5"
            )
    x = _binarize(x, human_threshold, "human")
    y = _binarize(y, judge_threshold, "judge")
    if (human_threshold is not None or judge_threshold is not None) and positive is None:
        positive = True
    shown_x, shown_y = x, y
    x, y = _check_comparable(x, y, sides, where=where, labels=labels, positive=positive)
    (ca, cb), labs, _ = _label_codes([x, y], labels, need_order=weights is not None)
    keep = (ca >= 0) & (cb >= 0)
    n_missing = int((~keep).sum())
    ca, cb = ca[keep], cb[keep]
    n = len(ca)
    if n == 0:
        raise ValueError("no item has both a human and a judge label; nothing to compare")
    k = len(labs)
    if positive is None and k <= 2 and set(labs) <= {0, 1}:
        positive = True if any(isinstance(v, (bool, np.bool_)) for v in labs) else 1
    if positive is not None and positive not in labs:
        if labels is None and set(labs) <= {0, 1} and positive in (0, 1):
            labs = labs + [positive]  # e.g. a judge and people who never fail: the class still exists
            k = len(labs)
        else:
            raise ValueError(
                f"positive label {positive!r} does not occur in the labels {labs!r}; pass the label that means "
                "pass (e.g. positive='supported')"
            )
    pos = labs.index(positive) if positive is not None else None
    dis = _disagreement_weights(labs, weights, distance)
    table = _confusion(ca, cb, k)
    messages: list[str] = []
    rng = np.random.default_rng(seed)
    # One item bootstrap serves kappa's bootstrap interval, the corrected pass rate and (with units)
    # the design effects; with units, one cluster bootstrap serves every interval.
    item_tables = _item_tables(table, n_resamples, rng) if (method == "bootstrap" or pos is not None
                                                           or clusters is not None) else None
    kappa_iv, note = _kappa_interval(table, dis, ci=level, method=method if clusters is None else "bootstrap",
                                     n_resamples=n_resamples, seed=seed, boot_tables=item_tables)
    if note and clusters is None:
        messages.append(note)
    same = int(np.trace(table))
    agreement = same / n
    intervals: dict[str, Interval] = {
        "agreement": proportion_interval(same, n, ci=level),
        "kappa": kappa_iv,
    }
    row_totals = table.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.diag(table) / row_totals
    label_index = pd.Index(labs, dtype=object)
    per_class = pd.Series(recall, index=label_index, name="recall")
    per_class.index.name = names[0]
    counts: dict[str, int] = {}
    binary: dict[str, Any] = dict.fromkeys(
        ("sensitivity", "specificity", "miss_rate", "human_positive_rate", "judge_positive_rate", "attenuation")
    )
    denominators = {"agreement": n, "kappa": n}
    order = list(range(k))
    if pos is not None:
        order = [pos] + [i for i in range(k) if i != pos]
        hp = int(row_totals[pos])
        hn = n - hp
        tp = int(table[pos, pos])
        fp = int(table[:, pos].sum() - tp)  # human negative, judge passed: the judge's misses
        tn = hn - fp
        counts = {"human_positive": hp, "human_negative": hn, "true_pass": tp, "false_pass": fp, "true_fail": tn}
        binary["human_positive_rate"] = hp / n
        binary["judge_positive_rate"] = (tp + fp) / n
        intervals["human_positive_rate"] = proportion_interval(hp, n, ci=level)
        intervals["judge_positive_rate"] = proportion_interval(tp + fp, n, ci=level)
        denominators.update(human_positive_rate=n, judge_positive_rate=n)
        if hp:
            binary["sensitivity"] = tp / hp
            intervals["sensitivity"] = proportion_interval(tp, hp, ci=level)
            denominators["sensitivity"] = hp
        if hn:
            binary["specificity"] = tn / hn
            binary["miss_rate"] = fp / hn
            intervals["specificity"] = proportion_interval(tn, hn, ci=level)
            intervals["miss_rate"] = proportion_interval(fp, hn, ci=level)
            denominators.update(specificity=hn, miss_rate=hn)
        if hp and hn:
            _, low, high = _newcombe_difference(tp, hp, fp, hn, level)
            binary["attenuation"] = binary["sensitivity"] + binary["specificity"] - 1
            intervals["attenuation"] = Interval(
                binary["attenuation"], low, high, method="newcombe hybrid score (sensitivity - miss rate)",
                level=level, n=n,
            )
            denominators["attenuation"] = n
            if binary["attenuation"] > 0:
                # On the validation items the correction returns the people's rate; its interval
                # resamples the items, so sensitivity, specificity and the judge's rate (estimated
                # from the same items) are re-estimated together in each resample.
                boot = _table_statistics(item_tables, dis, pos)["corrected_pass_rate"]
                low, high = _percentile(boot, level)
                intervals["corrected_pass_rate"] = Interval(
                    binary["human_positive_rate"], low, high,
                    method=f"rogan-gladen on the validation items: bootstrap over the {n} items, re-estimating "
                    "sensitivity, specificity and the judge's rate together in each resample (percentile)",
                    level=level, n=n, n_resamples=n_resamples, seed=seed,
                )
                denominators["corrected_pass_rate"] = n
    n_clusters, design_effects, se_sp_draws = None, {}, None
    if clusters is not None:
        codes, _ = pd.factorize(clusters[keep], sort=False)
        n_clusters = int(codes.max()) + 1
        boot_tables, per_cluster = _cluster_tables(codes, ca * k + cb, k, n_resamples, rng)
        cluster_stats = _table_statistics(boot_tables, dis, pos)
        item_stats = _table_statistics(item_tables, dis, pos)
        per_cluster = per_cluster.reshape(-1, k, k)
        behind = {name: n_clusters for name in intervals}
        if pos is not None:
            with_pos = int((per_cluster[:, pos, :].sum(1) > 0).sum())
            with_neg = int((per_cluster.sum(axis=(1, 2)) - per_cluster[:, pos, :].sum(1) > 0).sum())
            behind.update({"sensitivity": with_pos, "specificity": with_neg, "miss_rate": with_neg,
                           "attenuation": min(with_pos, with_neg), "corrected_pass_rate": min(with_pos, with_neg)})
            se_sp_draws = np.column_stack([cluster_stats["sensitivity"], cluster_stats["specificity"]])
        too_few = {name: c for name, c in behind.items() if c < MIN_CLUSTERS and name in intervals}
        label = f"cluster bootstrap-percentile over {n_clusters} clusters"
        for name, old in list(intervals.items()):
            if name in too_few:
                low = high = deff = math.nan
                how = f"no interval: rests on {too_few[name]} clusters (< {MIN_CLUSTERS})"
            else:
                low, high = _percentile(cluster_stats[name], level)
                var_c, var_i = (float(np.nanvar(s[name])) for s in (cluster_stats, item_stats))
                deff = var_c / var_i if var_i > 0 else math.nan
                how = label
            intervals[name] = Interval(old.estimate, low, high, method=how, level=level, n=denominators[name],
                                       n_resamples=n_resamples, seed=seed)
            design_effects[name] = deff
        kappa_iv = intervals["kappa"]
        if too_few:
            which = ", ".join(f"{name} ({c})" for name, c in too_few.items())
            messages.append(
                f"units=: a cluster bootstrap needs at least {MIN_CLUSTERS} clusters to say anything about sampling "
                f"error; these statistics rest on fewer (clusters behind each: {which}) and get no interval. Use "
                "finer clusters, label more clusters, or no units= if the items really are independent."
            )
    corrected = intervals.get("corrected_pass_rate")
    shown = [labs[i] for i in order]
    confusion = pd.DataFrame(
        table[np.ix_(order, order)].astype(np.int64),
        index=pd.Index(shown, name=names[0]),
        columns=pd.Index(shown, name=names[1]),
    )
    kept_positions = np.flatnonzero(keep)
    differ = kept_positions[ca != cb]
    if rows is not None:
        disagreements = rows.iloc[differ]
    else:
        disagreements = pd.DataFrame(
            {names[0]: shown_x[differ], names[1]: shown_y[differ]}, index=index[differ]
        )
    low_agreement: list[str] = []
    if positive is not None and (counts.get("human_positive") == 0 or counts.get("human_negative") == 0):
        only = "positive" if counts.get("human_negative") == 0 else "negative"
        low_agreement.append(
            f"people gave every item the {only} label: sensitivity, specificity, attenuation and kappa's interval "
            "say nothing about the judge; label items of the other class too"
        )
    if not math.isnan(kappa_iv.estimate) and kappa_iv.estimate < KAPPA_UNTRUSTED:
        low_agreement.append(
            f"kappa = {kappa_iv.estimate:.3f} is below {KAPPA_UNTRUSTED}: this judge should not be trusted "
            f"({_THRESHOLDS_TEXT}). Look at report.disagreements, fix the judge and re-measure on fresh labels."
        )
    if warn:
        for message in low_agreement:
            _warn(message, LowAgreementWarning)
        for message in messages:
            _warn(f"{where}: {message}", FragileIntervalWarning)
    return AgreementReport(
        n=n,
        n_excluded=n_missing,
        labels=labs,
        positive=positive,
        kappa=kappa_iv.estimate,
        kappa_interval=kappa_iv,
        agreement=agreement,
        confusion=confusion,
        per_class_recall=per_class,
        weights=weights,
        distance=distance,
        corrected_pass_rate=corrected,
        intervals=intervals,
        disagreements=disagreements,
        human_name=names[0],
        judge_name=names[1],
        n_ties=n_ties,
        ties=ties,
        n_clusters=n_clusters,
        units_name=units_name,
        design_effects=design_effects,
        warnings=low_agreement + messages,
        _counts=counts,
        _se_sp_draws=se_sp_draws,
        **binary,
    )


# --------------------------------------------------------------------------------------------------
# Several raters
# --------------------------------------------------------------------------------------------------


def _as_matrix(ratings: Any, name: str = "ratings") -> np.ndarray:
    """Items x raters object matrix from a DataFrame, nested lists or a 2-D array."""
    if isinstance(ratings, pd.DataFrame):
        if len(ratings.columns) and all(_plain_numeric(t) for t in ratings.dtypes):
            matrix = ratings.to_numpy()
        else:
            matrix = ratings.to_numpy(dtype=object, na_value=None)
    else:
        try:
            matrix = np.asarray(ratings)
        except (TypeError, ValueError):
            matrix = np.asarray(ratings, dtype=object)
        if not _plain_numeric(matrix.dtype):
            matrix = np.asarray(ratings, dtype=object)
    if matrix.ndim != 2:
        raise ValueError(
            f"`{name}` must be a 2-D table with one row per item and one column per rater, got "
            f"{matrix.ndim} dimension(s)"
        )
    return matrix


def _unit_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """Items x categories counts from an items x raters code matrix (missing = -1)."""
    items = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
    flat = codes.ravel()
    ok = flat >= 0
    return np.bincount(items[ok] * k + flat[ok], minlength=codes.shape[0] * k).reshape(codes.shape[0], k).astype(float)


def fleiss_kappa(
    ratings: Any, *, counts: bool = False, labels: Sequence[Hashable] | None = None
) -> float:
    """Fleiss' kappa: chance-corrected agreement of several raters on nominal labels.

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater (any hashable labels; missing as NaN or None). The
        raters may differ between items, but every item needs the same number of ratings; otherwise
        use :func:`krippendorff_alpha`.
    counts : bool
        True when ``ratings`` is already an items x categories table of counts (statsmodels'
        ``fleiss_kappa`` input).
    labels : sequence, optional
        The categories (default: those that occur).

    Returns
    -------
    float

    Examples
    --------
    >>> round(fleiss_kappa([[1, 1, 1], [1, 1, 0], [0, 0, 0], [0, 1, 0]]), 3)
    0.333
    """
    if counts:
        table = np.asarray(ratings, dtype=float)
        if table.ndim != 2 or (table < 0).any():
            raise ValueError("with counts=True, `ratings` must be an items x categories table of non-negative counts")
    else:
        matrix = _as_matrix(ratings)
        (codes,), labs, _ = _label_codes([matrix], labels, need_order=False)
        table = _unit_counts(codes, len(labs))
    per_item = table.sum(1)
    m = per_item.max() if len(per_item) else 0
    if len(per_item) == 0 or (per_item != m).any() or m < 2:
        counts_seen = sorted({int(c) for c in per_item})
        raise ValueError(
            f"Fleiss' kappa needs the same number (at least 2) of ratings for every item, found {counts_seen} "
            "ratings per item; use krippendorff_alpha(ratings, level='nominal'), which allows missing ratings"
        )
    share = table.sum(0) / table.sum()
    p_item = ((table * table).sum(1) - m) / (m * (m - 1))
    p_bar, p_e = p_item.mean(), float((share**2).sum())
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return float((p_bar - p_e) / (1 - p_e))


def krippendorff_alpha(
    ratings: Any,
    *,
    level: str = "nominal",
    labels: Sequence[Hashable] | None = None,
) -> float:
    """Krippendorff's alpha for several raters, with missing ratings allowed.

    ``alpha = 1 - D_o / D_e``: observed disagreement within items over the disagreement expected
    from all pairable values. Items with fewer than two ratings do not count.

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater; missing ratings as NaN or None. (The
        ``krippendorff`` package takes the transpose, raters x items.)
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement: which differences count as disagreement. "ordinal" uses the ranks of
        the values (Krippendorff's ordinal metric, built from the value frequencies); "interval" the
        squared difference; "ratio" ``((c - k) / (c + k))**2``.
    labels : sequence, optional
        The values in order (for "ordinal", values that do not occur do not change alpha).

    Returns
    -------
    float

    Examples
    --------
    >>> ratings = [[1, 1, None], [2, 2, 3], [3, 3, 3], [4, 3, 4]]
    >>> round(krippendorff_alpha(ratings, level="ordinal"), 3)
    0.774
    """
    check_option("level", level, _LEVELS)
    matrix = _as_matrix(ratings)
    (codes,), labs, _ = _label_codes([matrix], labels, need_order=level != "nominal")
    k = len(labs)
    table = _unit_counts(codes, k)
    m = table.sum(1)
    table, m = table[m >= 2], m[m >= 2]
    if table.shape[0] == 0:
        raise ValueError("Krippendorff's alpha needs at least one item rated by two or more raters")
    coincidence = (table / (m - 1)[:, None]).T @ table
    coincidence[np.diag_indices(k)] -= (table / (m - 1)[:, None]).sum(0)
    n_c = coincidence.sum(1)
    total = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "ordinal":
        cum = np.cumsum(n_c)
        lo, hi = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
        between = cum[hi] - cum[lo] + n_c[lo]
        delta = (between - (n_c[lo] + n_c[hi]) / 2) ** 2
    else:
        try:
            values = np.asarray([float(v) for v in labs], dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"level={level!r} needs numeric ratings, got labels {labs!r}") from None
        if level == "interval":
            delta = (values[:, None] - values[None, :]) ** 2
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                delta = ((values[:, None] - values[None, :]) / (values[:, None] + values[None, :])) ** 2
            delta = np.nan_to_num(delta)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected <= 0:
        raise ValueError(
            "Krippendorff's alpha is undefined when all pairable ratings have one value (no expected disagreement)"
        )
    return float(1.0 - (total - 1) * (coincidence * delta).sum() / expected)


def _majority_codes(codes: np.ndarray, k: int, ties: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Majority code per item (-1 when dropped or unrated), a tie mask and the vote counts."""
    table = _unit_counts(codes, k)
    top = table.max(1) if k else np.zeros(codes.shape[0])
    winners = table == top[:, None]
    rated = top > 0
    tied = rated & (winners.sum(1) > 1)
    if k == 0:
        return np.full(codes.shape[0], -1), tied, table
    # "high": the last tied label in label order; otherwise the first
    chosen = k - 1 - np.argmax(winners[:, ::-1], axis=1) if ties == "high" else np.argmax(winners, axis=1)
    chosen = np.where(rated, chosen, -1)
    if ties == "drop":
        chosen = np.where(tied, -1, chosen)
    return chosen, tied, table


def majority_vote(
    ratings: Any, *, ties: str = "drop", labels: Sequence[Hashable] | None = None
) -> np.ndarray:
    """The most frequent label per item across raters (missing ratings ignored).

    Parameters
    ----------
    ratings : 2-D table
        One row per item, one column per rater; missing as NaN or None.
    ties : {"drop", "low", "high"}
        When two or more labels share the top count: "drop" (default) gives None for the item;
        "low" / "high" pick the first / last tied label in the label order (for 0/1 or False/True
        labels, "low" counts a split vote as a fail, the cautious choice for faithfulness).
    labels : sequence, optional
        The label order (default: sorted labels that occur).

    Returns
    -------
    numpy.ndarray of object
        One label per item; None for unrated items and dropped ties.

    Examples
    --------
    >>> majority_vote([[1, 1, 0], [1, 0, None], [0, 0, 0]]).tolist()
    [1, None, 0]
    >>> majority_vote([[1, 1, 0], [1, 0, None], [0, 0, 0]], ties="low").tolist()
    [1, 0, 0]
    """
    check_option("ties", ties, _TIES)
    matrix = _as_matrix(ratings)
    (codes,), labs, ordered = _label_codes([matrix], labels, need_order=ties != "drop")
    chosen, _, _ = _majority_codes(codes, len(labs), ties)
    out = np.empty(len(chosen), dtype=object)
    lookup = np.empty(len(labs) + 1, dtype=object)
    lookup[: len(labs)] = labs
    lookup[-1] = None
    out[:] = lookup[chosen]
    return out


def judge_vs_majority(
    ratings: Any,
    judge: Sequence[Hashable],
    *,
    positive: Hashable | None = None,
    ties: str = "drop",
    rating_threshold: float | None = None,
    judge_threshold: float | None = None,
    labels: Sequence[Hashable] | None = None,
    units: Sequence[Hashable] | None = None,
    ci: float = 0.95,
    method: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    ids: Sequence[Hashable] | None = None,
    warn: bool = True,
) -> AgreementReport:
    """Validate a judge against the majority label of several human raters.

    Each rater's label is taken as given (or, with ``rating_threshold``, turned into pass/fail
    first: ``rating >= rating_threshold``), the per-item majority is formed with the tie rule
    ``ties`` (see :func:`majority_vote`), and the judge is compared with it by :func:`report`
    (``units``, ``ci``, ``method``, ``n_resamples``, ``seed``, ``warn`` as there; ``units`` gives
    a cluster label per row of ``ratings``). With ``ties="drop"`` (default) tied items are excluded
    and counted in ``n_ties``.

    Examples
    --------
    >>> ratings = [[4, 4, 3], [1, 2, None], [4, 2, None], [3, 4, 4]]
    >>> rep = judge_vs_majority(ratings, [0.9, 0.8, 0.2, 1.0], rating_threshold=3, judge_threshold=0.5,
    ...                         warn=False)
    >>> rep.n, rep.n_ties, rep.miss_rate
    (3, 1, 1.0)
    """
    return _judge_vs_majority(
        ratings, judge, positive=positive, ties=ties, rating_threshold=rating_threshold,
        judge_threshold=judge_threshold, labels=labels, ci=ci, method=method, n_resamples=n_resamples,
        seed=seed, ids=ids, warn=warn, units=units,
    )


def _judge_vs_majority(
    ratings: Any,
    judge: Any,
    *,
    positive: Any,
    ties: str,
    rating_threshold: float | None,
    judge_threshold: float | None,
    labels: Any,
    ci: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    ids: Any,
    warn: bool,
    rows: pd.DataFrame | None = None,
    names: tuple[str, str] | None = None,
    units: Any = None,
) -> AgreementReport:
    check_option("ties", ties, _TIES)
    matrix = _as_matrix(ratings)
    if rating_threshold is not None:
        missing = _missing(matrix)
        try:
            numbers = np.where(missing, np.nan, matrix).astype(float)
        except (TypeError, ValueError):
            raise TypeError("`rating_threshold` needs numeric ratings") from None
        binary = np.empty(matrix.shape, dtype=object)
        binary[:] = numbers >= rating_threshold
        binary[missing] = None
        matrix = binary
        if positive is None:
            positive = True
    (codes,), labs, _ = _label_codes([matrix], labels, need_order=ties != "drop")
    chosen, tied, _ = _majority_codes(codes, len(labs), ties)
    majority = np.empty(len(chosen), dtype=object)
    lookup = np.empty(len(labs) + 1, dtype=object)
    lookup[: len(labs)] = labs
    lookup[-1] = None
    majority[:] = lookup[chosen]
    j = _as_labels(judge, "judge")
    if len(j) != len(majority):
        raise ValueError(f"`ratings` has {len(majority)} items but `judge` has {len(j)} labels")
    if judge_threshold is not None:
        j = _binarize(j, judge_threshold, "judge")
        if positive is None:
            positive = True
    n_ties = int(tied.sum()) if ties == "drop" else 0
    if ids is None and isinstance(ratings, pd.DataFrame):
        ids = ratings.index
    if names is None:
        judge_name = str(judge.name) if isinstance(judge, pd.Series) and judge.name is not None else "judge"
        names = ("human majority", judge_name)
    if rows is not None and isinstance(ratings, pd.DataFrame):
        columns = [c.item() if isinstance(c, np.generic) else c for c in ratings.columns]
        ref = f"df[{columns!r}]"
        sides = (_Side(f"the majority of {columns!r}", ref, ref, "human_threshold"),
                 _column_side(names[1], "judge_threshold"))
        where = "rag.agreement"
    else:
        sides = (_Side("`ratings` (their majority)", "ratings", "pd.DataFrame(ratings)", "rating_threshold"),
                 _arg_side("judge", "judge_threshold"))
        where = "judge_vs_majority"
    return _report(
        majority, j, positive=positive, labels=None, weights=None, distance="rank", human_threshold=None,
        judge_threshold=None, ci=ci, method=method, n_resamples=n_resamples, seed=seed, ids=ids, warn=warn,
        names=names, n_ties=n_ties, ties=ties, rows=rows, units=units, sides=sides, where=where,
    )
