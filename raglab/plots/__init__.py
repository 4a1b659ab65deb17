"""Plots of raglab tables: compute first, then draw.

Every function takes ``ax=`` and returns the matplotlib Axes; given an Axes it draws there. Every
function but :func:`power_curve` forwards ``**kwargs`` to its main artist; ``power_curve``'s keywords
are the design (``discordance=``, ``p=``, ``alpha=``...), passed to :func:`raglab.sizing.power`. With ``ax=None`` (the default) each makes its own new figure
(constrained layout, sized to what it draws) instead of drawing on ``plt.gca()``, so one plot never
lands on another's Axes, and every text (legends outside the plot, notes under it) lies inside that
figure, so a plain ``fig.savefig(...)`` keeps it.
"""

from raglab.plots._agreement import confusion_heatmap
from raglab.plots._boundaries import boundary_metric, boundary_positions
from raglab.plots._forest import forest
from raglab.plots._over_time import over_time
from raglab.plots._postmortem import wins_losses
from raglab.plots._power import power_curve
from raglab.plots._threshold import judge_thresholds

__all__ = ["boundary_metric", "boundary_positions", "confusion_heatmap", "forest", "judge_thresholds", "over_time", "power_curve",
           "wins_losses"]
