"""The release gate: :func:`gate`, :func:`gate_comparison` and :class:`~raglab.stats.GateResult`.

The gate lives with the statistics it decides on (``raglab.stats._gate``, importable as
:mod:`raglab.stats`); this module keeps ``raglab.gate`` importable with the same names.
"""

from __future__ import annotations

from raglab.stats._gate import (  # noqa: F401  (MIN_RESAMPLED: importable from here as before)
    DECISIONS,
    GATE_RULE,
    GATE_TOLERANCE,
    MIN_CHANGED,
    MIN_QUESTIONS,
    MIN_RESAMPLED,
    GateResult,
    gate,
    gate_comparison,
)

__all__ = [
    "DECISIONS",
    "GATE_RULE",
    "GATE_TOLERANCE",
    "MIN_CHANGED",
    "MIN_QUESTIONS",
    "GateResult",
    "gate",
    "gate_comparison",
]
