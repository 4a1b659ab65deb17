"""ipywidgets explorers for the row table: look at the questions behind a number.

A mean hides which questions moved; these widgets show them one at a time, worst first, with the
retrieved ids (gold marked), the context, the answer, and the judge's claims and verdicts. With span
gold (``gold_spans``) and the retrieved chunks' spans (``retrieved_spans``) the view also gives the gold
offsets, marks each retrieved chunk that overlaps gold with the gold characters it holds, counts the gold
characters that reached the model, and says when a question is unanswerable. ``explore_pair`` puts a
baseline and a candidate run side by side per question, filtered by slice and by how a metric flipped
(pass->fail, fail->pass). ``alarms`` walks from a production monitor's alarm to the requests behind it.
"""

from raglab.widgets._alarms import alarms, render_request
from raglab.widgets._explore import explore, render_row
from raglab.widgets._pair import explore_pair, render_pair

__all__ = ["alarms", "explore", "explore_pair", "render_pair", "render_request", "render_row"]
