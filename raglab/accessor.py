"""The ``df.rag`` accessor: every method is a public function that takes the table, generated from one table.

Registered when ``import raglab`` runs. The accessor stores only the frame and never raises in
``__init__`` (pandas builds it on every attribute access, and an exception there would break
``dir(df)`` for every DataFrame). :data:`METHODS` maps each method to its function:
``df.rag.summary(...)`` is ``raglab.runs.summary(df, ...)``, run inside
``raglab._validation.called_as("rag.summary")`` so that errors name the method. Each method shows
its function's signature (without the frame) and docstring, so ``help(df.rag.summary)`` and tab
completion describe it; the function is imported on first use (plots and widgets need optional
packages). ``tests/test_accessor.py`` keeps every pair equal.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from functools import cached_property
from typing import Any

import pandas as pd

from raglab._meta import get_meta
from raglab._validation import called_as

__all__ = ["METHODS", "RagAccessor"]

# method -> "module:function"; the function takes the row table first.
METHODS: dict[str, str] = {
    # the table itself
    "validate": "raglab.runs:validate",
    "with_roles": "raglab:with_roles",
    # judging, files
    "judge": "raglab.judge:judge_table",
    "write": "raglab.io:write_rows",
    "write_trec": "raglab.io:write_trec",
    # judge validation and eval-set sizing (raglab.agreement, raglab.sizing)
    "agreement": "raglab.runs:agreement",
    "threshold_sweep": "raglab.runs:threshold_sweep",
    "size": "raglab.runs:size",
    "judge_biases": "raglab.agreement:judge_biases",
    # which rows to label or judge (a random sample with known probabilities)
    "draw": "raglab.sampling:draw",
    # retrieval metrics, declining to answer, chunk boundaries
    "retrieval": "raglab.retrieval:retrieval",
    "depth_gap": "raglab.retrieval:depth_gap",
    "abstention": "raglab.abstention:abstention",
    "boundaries": "raglab.boundaries:boundaries",
    "expand_neighbors": "raglab.boundaries:expand_neighbors",
    "boundary_report": "raglab.boundaries:boundary_report",
    # intervals, paired comparisons, the release gate, and looking at them
    "summary": "raglab.runs:summary",
    "estimate": "raglab.runs:estimate",
    "over_time": "raglab.monitor:over_time",
    "monitor": "raglab.monitor:monitor",
    "compare": "raglab.runs:compare",
    "gate": "raglab.runs:gate",
    "forest": "raglab.plots:forest",
    "explore": "raglab.widgets:explore",
    "explore_pair": "raglab.widgets:explore_pair",
}


class _Method:
    """One ``df.rag`` method: the function at ``target``, called with the accessor's frame first."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.name = target.rpartition(":")[2]

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @cached_property
    def function(self) -> Callable[..., Any]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    @cached_property
    def signature(self) -> inspect.Signature:
        """The function's signature without its first parameter (the frame)."""
        signature = inspect.signature(self.function)
        return signature.replace(parameters=list(signature.parameters.values())[1:])

    @cached_property
    def doc(self) -> str:
        call = self.target.replace(":", ".")
        return f"``df.rag.{self.name}(...)`` is ``{call}(df, ...)``:\n\n{self._qualified(inspect.getdoc(self.function) or '')}"

    def _qualified(self, text: str) -> str:
        """Bare cross-references (``:class:`Name```) qualified with the target's module, where it defines them.

        The docstring is shown (and built by Sphinx) in the accessor's context, where a name relative
        to the function's own module would not resolve.
        """
        module = importlib.import_module(self.target.partition(":")[0])

        def qualify(match: re.Match[str]) -> str:
            role, name = match.group(1), match.group(2)
            return f":{role}:`~{module.__name__}.{name}`" if hasattr(module, name) else match.group(0)

        return re.sub(r":(class|func|data|exc):`([A-Za-z_][A-Za-z0-9_]*)`", qualify, text)

    def _named(self, method: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any]:
        method.__name__ = method.__qualname__ = self.name
        method.__doc__, method.__module__ = self.doc, self.function.__module__
        method.__signature__ = signature  # type: ignore[attr-defined]
        return method

    def __get__(self, accessor: RagAccessor | None, owner: type | None = None) -> Callable[..., Any]:
        if accessor is None:  # RagAccessor.summary: for help(RagAccessor) and introspection
            first = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
            name = self.name
            return self._named(
                lambda self_, *args, **kwargs: getattr(self_, name)(*args, **kwargs),
                self.signature.replace(parameters=[first, *self.signature.parameters.values()]),
            )
        function, frame, label = self.function, accessor._df, f"rag.{self.name}"

        def method(*args: Any, **kwargs: Any) -> Any:
            with called_as(label):
                return function(frame, *args, **kwargs)

        return self._named(method, self.signature)


@pd.api.extensions.register_dataframe_accessor("rag")
class RagAccessor:
    """RAG evaluation methods on a row table (one row per question per run).

    Default column roles: ``question_id``, ``question``, ``retrieved``, ``gold``, ``gold_spans``,
    ``retrieved_spans``, ``context``, ``answer``, ``reference``. Name another column once with
    ``rows = rows.rag.with_roles(retrieved="reranked_ids")``, or per call with a keyword:
    ``rows.rag.retrieval(retrieved="reranked_ids")``.
    """

    def __init__(self, pandas_obj: pd.DataFrame) -> None:
        self._df = pandas_obj

    @property
    def meta(self) -> dict[str, Any]:
        """A copy of the run's raglab metadata (``df.attrs["raglab"]``): eval set, judge, conventions.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]], "gold": [["d2"], []]})
        >>> meta = rows.rag.retrieval(k=2).rag.meta
        >>> meta["retrieval"]["gain"], meta["retrieval"]["k_counts"], meta["retrieval_counts"]["n_unanswerable"]
        ('exponential', 'chunks that reached the model', 1)
        """
        return get_meta(self._df)


for _name, _target in METHODS.items():
    _method = _Method(_target)
    setattr(RagAccessor, _name, _method)
    _method.__set_name__(RagAccessor, _name)
del _name, _target, _method
