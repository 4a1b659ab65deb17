"""Labels in, integer codes out: reading label arrays, coding them, and refusing labels that can never match.

Every agreement statistic starts here. :func:`as_labels` turns a list, array or Series into a 1-D
label array (numeric stays numeric, anything else object); :func:`label_codes` codes several arrays
over one shared label list (missing = -1); :func:`check_comparable` refuses human and judge labels
that can never be equal (text against numbers, booleans against ratings, no label in common) with a
:class:`LabelMismatchError` that names both sides and the conversion that fixes it;
:func:`binarize` and :func:`looks_like_scores` turn scores into pass/fail labels or refuse them.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab.agreement._common import plain

__all__ = ["LabelMismatchError"]


class LabelMismatchError(RowTableError):
    """Human and judge labels that can never match: different types, or no label in common.

    Raised instead of reporting a kappa of 0 that would blame the judge for a data-entry problem. A
    :class:`raglab.RowTableError`, so also a ``ValueError``.
    """


_NUMERIC_KINDS = "biuf"


def plain_numeric(dtype: Any) -> bool:
    """A numpy bool/int/float dtype (fast paths); pandas extension dtypes go through object."""
    return isinstance(dtype, np.dtype) and dtype.kind in _NUMERIC_KINDS


def as_labels(values: Any, name: str) -> np.ndarray:
    """A 1-D array of labels from a list, array or Series: numeric arrays stay numeric, others object."""
    array = _label_array(values, name)
    if array.dtype.kind == "f":  # inf is no label (a division by zero upstream?): it would become its own class
        infinite = np.flatnonzero(np.isinf(array))
        if infinite.size:
            raise ValueError(f"`{name}` holds infinite values at positions {infinite[:5].tolist()}; labels and scores "
                             "must be finite (NaN or None for missing).")
    return array


def _label_array(values: Any, name: str) -> np.ndarray:
    if isinstance(values, (pd.DataFrame, str, bytes)) or np.ndim(values) != 1:
        raise TypeError(f"`{name}` must be a one-dimensional sequence of labels (list, array or Series)")
    if isinstance(values, pd.Series):
        if plain_numeric(values.dtype):
            return values.to_numpy()
        return values.to_numpy(dtype=object, na_value=None)
    if isinstance(values, np.ndarray) and plain_numeric(values.dtype):
        return values
    if not isinstance(values, np.ndarray):
        try:
            array = np.asarray(values)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.ndim == 1 and plain_numeric(array.dtype):
            return array
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def missing_mask(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "f":
        return np.isnan(array)
    if array.dtype.kind in "biu":
        return np.zeros(array.shape, dtype=bool)
    return np.asarray(pd.isna(array), dtype=bool).reshape(array.shape)


def label_codes(
    arrays: Sequence[np.ndarray], labels: Sequence[Hashable] | None, *, need_order: bool
) -> tuple[list[np.ndarray], list[Any], bool]:
    """Integer codes (missing = -1) for several label arrays over one shared label list.

    Returns the codes, the labels in code order, and whether that order is a sort order (or the
    user's). Raises naming a label that is not in ``labels``.
    """
    flat = np.concatenate([a.ravel() for a in arrays]) if arrays else np.empty(0, dtype=object)
    present = ~missing_mask(flat)
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
    elif plain_numeric(flat.dtype):
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


def pair_labels(a: Any, b: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    x, y = as_labels(a, names[0]), as_labels(b, names[1])
    if len(x) != len(y):
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must label the same items: got {len(x)} and {len(y)} labels"
        )
    return x, y


@dataclass(frozen=True)
class Side:
    """How to name one side of a comparison in an error, and the code that would fix it."""

    name: str  # as shown: "'label'" (a column) or "`human`" (an argument)
    target: str  # what a fix assigns to: "df['label']" or "human"
    expr: str  # an expression holding the labels: "df['label']" or "pd.Series(human)"
    threshold: str | None = None  # the keyword that turns numeric scores into pass/fail


def arg_side(arg: str, threshold: str | None = None) -> Side:
    return Side(f"`{arg}`", arg, f"pd.Series({arg})", threshold)


def column_side(column: Any, threshold: str | None = None) -> Side:
    ref = f"df[{column!r}]"
    return Side(repr(column), ref, ref, threshold)


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
    present = values[~missing_mask(values)]
    if present.dtype.kind == "b":
        return {"bool": np.unique(present).tolist()} if present.size else {}
    if plain_numeric(present.dtype):
        return {"number": np.unique(present).tolist()} if present.size else {}
    seen: dict[tuple[str, Any], None] = {}
    try:
        for v in present:
            seen.setdefault((_kind(v), v), None)
    except TypeError:  # unhashable labels: label_codes words that error
        return {}
    out: dict[str, list[Any]] = {}
    for kind, v in seen:
        out.setdefault(kind, []).append(v)
    return out


def _show(values: list[Any], limit: int = 6) -> str:
    with contextlib.suppress(TypeError):
        values = sorted(values)
    shown = ", ".join(repr(plain(v)) for v in values[:limit])
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


def _suggested_pass_label(labels: list[Any], positive: Any) -> Any:
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
    if plain_numeric(values.dtype):
        return values
    out = values.copy()
    for i, v in enumerate(out):
        if isinstance(v, (bool, np.bool_)):
            out[i] = int(v)
    return out


def check_comparable(
    x: np.ndarray,
    y: np.ndarray,
    sides: tuple[Side, Side],
    *,
    caller: str,
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
    lead = f"{caller}: " if caller else ""
    for side, kind in zip(sides, kinds):
        _refuse_mixed(side, kind, lead)
    text = ["text" in k for k in kinds]
    if text[0] != text[1]:
        t = 0 if text[0] else 1
        _refuse_text_against(sides[t], kinds[t], sides[1 - t], kinds[1 - t], lead, positive)
    has_bool = ["bool" in k for k in kinds]
    if any(has_bool) and ("number" in kinds[0] or "number" in kinds[1]):
        _refuse_bools_against_numbers(sides, kinds, has_bool, lead)
        return _to_ints(x), _to_ints(y)
    if labels is None:
        _refuse_disjoint(sides, kinds, lead)
    return x, y


# The end of every label-mismatch message: why the labels are refused rather than compared.
_NEVER_AGREE = "so no item could ever count as agreeing and kappa would measure the encoding, not the judge."


def _refuse_mixed(side: Side, kind: dict[str, list[Any]], lead: str) -> None:
    """One side mixing text with numbers or booleans."""
    if "text" in kind and ("number" in kind or "bool" in kind):
        other = kind.get("number", []) + kind.get("bool", [])
        spelled = _numeric_text(kind["text"])
        fix = f"{side.expr}.astype({spelled})" if spelled else f"{side.expr}.astype(str)"
        raise LabelMismatchError(
            f"{lead}{side.name} mixes text labels ({_show(kind['text'])}) with numbers or booleans "
            f"({_show(other)}); '1' != 1, {_NEVER_AGREE} Use one type, e.g. {side.target} = {fix}."
        )


def _refuse_text_against(ts: Side, tk: dict[str, list[Any]], os_: Side, ok: dict[str, list[Any]], lead: str,
                         positive: Any) -> None:
    """Text labels on side ``ts`` against numbers or booleans on side ``os_``: always refused, with the fix."""
    if "bool" in ok:
        label = _suggested_pass_label(tk["text"], positive)
        raise LabelMismatchError(
            f"{lead}{ts.name} holds text labels ({_show(tk['text'])}) but {os_.name} holds booleans "
            f"({_show(ok['bool'])}); text never equals True or False, {_NEVER_AGREE} Turn the text into booleans, "
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
        f"({_show(shown)}); text never equals a number ('1' != 1), {_NEVER_AGREE} {fix}"
    )


def _refuse_bools_against_numbers(sides: tuple[Side, Side], kinds: tuple[dict[str, list[Any]], ...],
                                  has_bool: list[bool], lead: str) -> None:
    """Booleans against numbers: fine when every number is 0 or 1 (True is 1), refused otherwise."""
    numbers_seen = kinds[0].get("number", []) + kinds[1].get("number", [])
    if all(v in (0, 1) for v in numbers_seen):
        return
    n_side = 0 if "number" in kinds[0] and not has_bool[0] else 1
    if "number" not in kinds[n_side]:
        n_side = 1 - n_side
    ns, bs = sides[n_side], sides[1 - n_side]
    odd = [v for v in kinds[n_side]["number"] if v not in (0, 1)]
    fix = (f"pass {ns.threshold}= (a value >= the threshold is a pass), e.g. {ns.threshold}=3"
           if ns.threshold else f"e.g. {ns.target} = {ns.expr} >= 3")
    raise LabelMismatchError(
        f"{lead}{ns.name} holds numbers other than 0 and 1 ({_show(odd)}) but {bs.name} holds booleans; True "
        f"only equals 1 and False 0, {_NEVER_AGREE} Turn the numbers into pass/fail first: {fix}."
    )


def _refuse_disjoint(sides: tuple[Side, Side], kinds: tuple[dict[str, list[Any]], ...], lead: str) -> None:
    """Two sides with no label in common, one of them using two or more labels (not for 0/1 codings)."""
    sets = [set().union(*k.values()) for k in kinds]
    try:
        common = sets[0] & sets[1]
    except TypeError:
        return
    binary = all(v in (0, 1) and _kind(v) in ("bool", "number") for v in sets[0] | sets[1])
    if not common and not binary and max(len(sets[0]), len(sets[1])) >= 2:
        a, b = sides
        mapping = ", ".join(f"{v!r}: ..." for v in sorted(sets[1], key=repr)[:4])
        raise LabelMismatchError(
            f"{lead}{a.name} uses the labels ({_show(list(sets[0]))}) and {b.name} uses "
            f"({_show(list(sets[1]))}): no label in common, {_NEVER_AGREE} Map one side onto the other's labels, "
            f"e.g. {b.target} = {b.expr}.map({{{mapping}}}) (each to one of the labels of {a.name}), or pass "
            "labels=[...] listing every category if the two really never agree."
        )


def categorical_order(*sides: Any) -> list[Any] | None:
    """The categories, lowest first, when every side is an ordered pandas Categorical with the same ones.

    An ordered Categorical already says the order a weighted kappa needs, so it stands for ``labels=``;
    anything else (plain text, unordered or differing categories) gives None and the usual rules apply.

    Examples
    --------
    >>> levels = pd.CategoricalDtype(["low", "mid", "high"], ordered=True)
    >>> categorical_order(pd.Series(["low", "high"], dtype=levels), pd.Series(["mid", "mid"], dtype=levels))
    ['low', 'mid', 'high']
    """
    orders = []
    for side in sides:
        dtype = getattr(side, "dtype", None)
        if not (isinstance(dtype, pd.CategoricalDtype) and dtype.ordered):
            return None
        orders.append(list(dtype.categories))
    return orders[0] if all(order == orders[0] for order in orders) else None


def refuse_text_order(labs: list[Any], labels: Any, *, needs: str, holders: str, caller: str, fix: str) -> None:
    """Refuse text labels for a statistic that needs the categories' order, unless ``labels=`` gives it.

    Sorted, text falls in alphabetical order ('high' < 'low' < 'mid'), which is rarely the order the
    labels mean, and a weighted kappa or an ordinal alpha would silently use it. Numbers and
    booleans are ordered; ``needs`` says what needs the order, ``holders`` names the sides holding the
    labels and ``fix`` the keyword that names the order (``labels=[...]``).
    """
    if labels is not None:
        return
    text = [v for v in labs if isinstance(v, str)]
    if not text:
        return
    lead = f"{caller}: " if caller else ""
    shown = ", ".join(repr(v) for v in sorted(text)[:8]) + (", ..." if len(text) > 8 else "")
    spelled = _numeric_text(text)
    numbers = (f" They spell numbers: converting them (.astype({spelled})) orders them as numbers."
               if spelled else "")
    raise LabelMismatchError(
        f"{lead}{needs}, so it needs the order of the categories, but {holders} hold text labels ({shown}) "
        f"and text has no order raglab can know: sorted it is alphabetical ({' < '.join(repr(v) for v in sorted(text)[:8])}), "
        f"which would silently change the result. Pass {fix}=[...] listing every category from lowest to "
        f"highest (these {len(text)} in their real order).{numbers}"
    )


def looks_like_scores(values: np.ndarray) -> bool:
    """Floats with a fractional part are scores, not category labels."""
    if values.dtype.kind in "biu":
        return False
    if values.dtype.kind == "f":  # vectorised: this runs on every label column a report reads
        finite = values[np.isfinite(values)]
        return bool((finite != np.trunc(finite)).any())
    floats = [v for v in values if isinstance(v, (float, np.floating)) and np.isfinite(v)]
    return any(v != int(v) for v in floats)


def binarize(values: np.ndarray, threshold: float | None, name: str) -> np.ndarray:
    if threshold is None:
        return values
    out = np.empty(values.shape, dtype=object)
    missing = missing_mask(values)
    try:
        numbers = np.where(missing, np.nan, values).astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}_threshold` needs numeric {name} scores") from None
    out[:] = numbers >= threshold
    out[missing] = None
    return out
