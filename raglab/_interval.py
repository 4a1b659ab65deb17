"""The interval type every raglab estimate is reported with."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

_IntervalTuple = namedtuple("_IntervalTuple", ["estimate", "low", "high"])


class Interval(_IntervalTuple):
    """An estimate with its interval: unpacks as ``(estimate, low, high)``.

    It also states how it was made: ``method`` (e.g. ``"wilson"``, ``"bootstrap-percentile"``),
    ``level`` (e.g. 0.95), ``n`` (observations), and for resampling methods ``n_resamples`` and
    ``seed``. Equality compares the three numbers only.

    Examples
    --------
    >>> iv = Interval(0.5, 0.4, 0.6, method="wilson", level=0.95, n=100)
    >>> est, low, high = iv
    >>> iv.method, iv.width
    ('wilson', 0.2)
    """

    # No __slots__ here, so instances carry the metadata in a __dict__.
    method: str
    level: float
    n: int | None
    n_resamples: int | None
    seed: int | None

    def __new__(
        cls,
        estimate: float,
        low: float,
        high: float,
        *,
        method: str,
        level: float,
        n: int | None = None,
        n_resamples: int | None = None,
        seed: int | None = None,
    ) -> Interval:
        self = super().__new__(cls, float(estimate), float(low), float(high))
        self.method = method
        self.level = float(level)
        self.n = None if n is None else int(n)
        self.n_resamples = None if n_resamples is None else int(n_resamples)
        self.seed = None if seed is None else int(seed)
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:  # pickling keeps the metadata
        return tuple(self), self.metadata()

    @property
    def width(self) -> float:
        return round(self.high - self.low, 12)

    def metadata(self) -> dict[str, Any]:
        """The method, level, n, resamples and seed as a dict."""
        return {
            "method": self.method,
            "level": self.level,
            "n": self.n,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
        }

    def to_dict(self) -> dict[str, Any]:
        """All fields as a JSON-friendly dict."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high, **self.metadata()}

    def __repr__(self) -> str:
        extra = f", n={self.n}" if self.n is not None else ""
        if self.n_resamples is not None:
            extra += f", n_resamples={self.n_resamples}, seed={self.seed}"
        return (
            f"Interval(estimate={self.estimate:.4g}, low={self.low:.4g}, high={self.high:.4g}, "
            f"method={self.method!r}, level={self.level:g}{extra})"
        )
