"""Production logs on Dask: ``over_time`` and ``monitor`` from per-partition cell sums."""

from __future__ import annotations

from typing import Any

__all__ = ["monitor", "over_time"]


def over_time(logs: Any, metrics: Any, **kwargs: Any) -> Any:
    """Not built yet (issue 23)."""
    raise NotImplementedError("raglab.dask.over_time is being built (issue 23)")


def monitor(logs: Any, metrics: Any, **kwargs: Any) -> Any:
    """Not built yet (issue 23)."""
    raise NotImplementedError("raglab.dask.monitor is being built (issue 23)")
