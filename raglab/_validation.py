"""The bottom floor: argument checks, missing values and warnings that point at the user's line.

Every other raglab module may import this one; it imports only numpy and pandas, so low-level
modules (metrics, statistics, agreement, sizing) need nothing from the row-table layer.
"""

from __future__ import annotations

import inspect
import math
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "called_as", "caller", "check_int", "check_level", "check_option", "find_stack_level", "is_missing",
    "unanswerable", "warn",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# The public name of the operation running now ("rag.summary"), for error messages. The accessor sets
# it around each call, so the table-level functions need no caller-name parameter in their signatures.
_CALLER: ContextVar[str | None] = ContextVar("raglab_caller", default=None)


def caller(default: str) -> str:
    """The name error messages give the running operation: the one set by :func:`called_as`, else ``default``.

    Examples
    --------
    >>> caller("raglab.runs.summary")
    'raglab.runs.summary'
    >>> with called_as("rag.summary"):
    ...     caller("raglab.runs.summary")
    'rag.summary'
    """
    return _CALLER.get() or default


@contextmanager
def called_as(name: str) -> Iterator[None]:
    """Name the operation for the errors and warnings raised inside the ``with`` block (see :func:`caller`).

    The ``df.rag`` accessor wraps each call in ``called_as("rag.<method>")``; a table-level function
    that calls another one wraps the call in its own name, so the inner errors name the outer call.

    Examples
    --------
    >>> with called_as("raglab score"):
    ...     caller("raglab.retrieval.retrieval")
    'raglab score'
    """
    token = _CALLER.set(name)
    try:
        yield
    finally:
        _CALLER.reset(token)


def check_option(name: str, value: Any, options: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``options``, else raise the one message raglab uses for it.

    Examples
    --------
    >>> check_option("gain", "linear", ["exponential", "linear"])
    'linear'
    """
    if value not in options:
        raise ValueError(f"The value for `{name}` must be one of {list(options)}, but {value!r} was passed.")
    return value


def check_level(ci: Any, name: str = "ci") -> float:
    """A confidence level strictly between 0 and 1, as a float.

    Examples
    --------
    >>> check_level(0.95)
    0.95
    """
    if isinstance(ci, (bool, np.bool_)) or not isinstance(ci, (int, float, np.integer, np.floating)) or not 0 < ci < 1:
        raise ValueError(f"`{name}` must be a confidence level strictly between 0 and 1 (e.g. 0.95), got {ci!r}")
    return float(ci)


def check_int(value: Any, name: str, minimum: int) -> int:
    """An integer (not a bool) at least ``minimum``.

    Examples
    --------
    >>> check_int(10_000, "n_resamples", 1)
    10000
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}")
    return int(value)


def is_id_type(kind: type) -> bool:
    """Whether values of type ``kind`` are ids: text or integers, not booleans (checked once per type, not per value)."""
    return issubclass(kind, (str, Integral)) and not issubclass(kind, bool)


def is_missing(value: Any) -> bool:
    """True for None, NaN and pandas' NA/NaT scalars (False for lists, dicts and arrays).

    Examples
    --------
    >>> is_missing(float("nan")), is_missing([]), is_missing(None)
    (True, False, True)
    """
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple, dict, np.ndarray, str)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def unanswerable(n_relevant: Any) -> np.ndarray:
    """THE rule for an unanswerable question: no gold unit (id or span) with grade > 0, from the counts per question.

    Every layer decides it from here: the metric kernels (their NaN rows), the row table
    (``raglab._rowtable.is_unanswerable``, one gold cell), abstention and boundaries. Missing or
    empty gold counts 0 relevant units.

    Examples
    --------
    >>> unanswerable([2, 0, 1]).tolist()
    [False, True, False]
    """
    return np.asarray(n_relevant) == 0


def find_stack_level() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside raglab (the user's line).

    As pandas' ``find_stack_level``: count the frames that belong to the raglab package.
    """
    frame = inspect.currentframe()
    level = 0
    try:
        while frame is not None:
            if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
                break
            frame = frame.f_back
            level += 1
    finally:
        del frame
    return max(level, 1)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the user's line, however deep inside raglab it is called.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn("something to look at")
    >>> str(caught[0].message)
    'something to look at'
    """
    # find_stack_level counts this function's own frame too, which warnings.warn's stacklevel=1 is.
    warnings.warn(message, category, stacklevel=find_stack_level())
