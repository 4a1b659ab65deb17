"""Plots of raglab tables: compute first, then draw.

Every function takes ``ax=None`` (draws on ``plt.gca()`` then), forwards ``**kwargs`` to the main
artist and returns the matplotlib Axes.
"""

from raglab.plots._agreement import confusion_heatmap
from raglab.plots._boundaries import boundary_metric, boundary_positions
from raglab.plots._forest import forest
from raglab.plots._postmortem import wins_losses
from raglab.plots._power import power_curve
from raglab.plots._threshold import judge_thresholds

__all__ = ["boundary_metric", "boundary_positions", "confusion_heatmap", "forest", "judge_thresholds", "power_curve", "wins_losses"]
