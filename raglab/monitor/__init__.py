"""Production logs over time: one row per request, rates per period, alarms with a stated guarantee.

* :func:`simulate_log`: a seeded production log with a known regression (the bundled example).
"""

from __future__ import annotations

from raglab.monitor._simulate import TOPICS, simulate_log

__all__ = ["TOPICS", "simulate_log"]
