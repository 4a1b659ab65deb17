"""Production logs over time: one row per request, rates per period, alarms with a stated guarantee.

* :func:`over_time`: each metric's rate per period and slice with its interval, design-weighted for
  a judge on a sample (prediction-powered with a tripwire on every request as the predictor);
* :func:`monitor`: alarms when a rate falls below its reference, with the false-alarm guarantee
  they keep (anytime-valid over a horizon, or an average run length), each dated;
  :meth:`Monitor.post_mortem` takes an alarm apart (when, where, which requests) and grows an eval
  set from it (:meth:`PostMortem.extend`);
* :func:`change_point`: the most likely single change in a series of estimates, with an interval;
* :func:`periods`: the period each request falls in;
* :func:`simulate_log`: a seeded production log with a known regression (the bundled example).
"""

from __future__ import annotations

from raglab.monitor._monitor import Monitor, monitor
from raglab.monitor._over_time import over_time, periods
from raglab.monitor._postmortem import ChangePoint, PostMortem, change_point
from raglab.monitor._simulate import TOPICS, simulate_log

__all__ = ["TOPICS", "ChangePoint", "Monitor", "PostMortem", "change_point", "monitor", "over_time", "periods",
           "simulate_log"]
