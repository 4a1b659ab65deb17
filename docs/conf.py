"""Sphinx configuration of raglab's API reference (``make docs``; built with warnings as errors).

The pages are written by hand (docs/api/*.rst, one per public module) and filled from the
docstrings by autodoc; numpydoc renders the numpydoc sections. Nothing is generated into the
source tree, so a build in a temporary directory (tests/test_docs.py) leaves the checkout clean.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document the checkout, not whatever raglab is installed
os.environ.setdefault("MPLBACKEND", "Agg")  # raglab.plots imports matplotlib; never open a window

from raglab._version import __version__  # noqa: E402

project = "raglab"
author = "raglab developers"
copyright = "raglab developers"
release = __version__
version = __version__

extensions = ["sphinx.ext.autodoc", "numpydoc"]
exclude_patterns = ["_build"]
root_doc = "index"

html_theme = "alabaster"
html_static_path: list[str] = []
html_title = f"raglab {release}"

# undoc-members: the constants in a module's __all__ (METRICS, GATE_RULE, ...) have no docstring of
# their own. No show-inheritance: every result class derives from the private raglab._results.ResultBase.
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types, in words a reader can follow
autodoc_member_order = "bysource"

numpydoc_show_class_members = False  # autodoc lists members; numpydoc's tables would list them twice
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

nitpicky = True  # every cross-reference must resolve (-n): a renamed function breaks the build
# Types from other libraries (no intersphinx: the build runs offline) and the words numpydoc
# reads as types in "Parameters" lines.
nitpick_ignore_regex = [
    ("py:.*", r"(pd|pandas|np|numpy|scipy|matplotlib|plt|ipywidgets|openai|pydantic|pyarrow)\..*"),
    ("py:class", r"(DataFrame|Series|Index|Figure|Axes|ndarray|Path|datetime|Timestamp)"),
]


_UNCOMMENTED: set[str] = set()  # the constants _add_constants documents (none has a doc comment here)
_REEXPORTED: dict[str, list[str]] = {}  # full name -> the doc comment where a re-exported constant is assigned


def _drop_type_docstrings(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant without a doc comment would show its type's docstring (a tuple's): show the doc comment
    of the module that assigns it (``raglab.stats.MIN_CHANGED`` is assigned in ``raglab.stats._gate``), or
    none."""
    if what == "data" and name in _UNCOMMENTED and type(obj).__module__ == "builtins":
        lines[:] = _REEXPORTED.get(name, [])


def _assigned_comment(modname: str, name: str) -> list[str]:
    """The ``#:`` comment above ``name = ...`` in the raglab module that a re-export comes from."""
    from sphinx.pycode import ModuleAnalyzer

    value = getattr(importlib.import_module(modname), name)
    for other in sorted(sys.modules):
        # the same object under the same name: small ints are shared, so the name must match too
        if other == modname or other.split(".")[0] != "raglab" or getattr(sys.modules[other], name, None) is not value:
            continue
        try:
            comment = ModuleAnalyzer.for_module(other).find_attr_docs().get(("", name))
        except Exception:  # a module without source
            continue
        if comment:
            return list(comment)
    return []


def _module_constants(modname: str) -> list[str]:
    """Data in a module's ``__all__`` that autodoc skips: it documents data only with a ``#:`` comment."""
    from sphinx.pycode import ModuleAnalyzer

    module = importlib.import_module(modname)
    try:
        commented = {name for (_, name) in ModuleAnalyzer.for_module(modname).find_attr_docs()}
    except Exception:  # a module without source: nothing is commented
        commented = set()
    return [
        name for name in getattr(module, "__all__", [])
        if not (callable(getattr(module, name)) or inspect.ismodule(getattr(module, name)))
        and not name.startswith("__") and name not in commented
    ]


def _add_constants(app: Any, docname: str, source: list[str]) -> None:
    """After each ``.. automodule::`` block of an API page, an ``autodata`` for each of its constants."""
    if not docname.startswith("api/"):
        return

    def constants(match: re.Match[str]) -> str:
        modname = match.group(1)
        module = importlib.import_module(modname)
        directives = []
        for name in _module_constants(modname):
            _UNCOMMENTED.add(f"{modname}.{name}")
            _REEXPORTED[f"{modname}.{name}"] = _assigned_comment(modname, name)
            short = len(repr(getattr(module, name))) <= 80  # a long value (a registry) is not shown
            directives.append(f"\n.. autodata:: {modname}.{name}\n" + ("" if short else "   :no-value:\n"))
        return match.group(0) + "".join(directives)

    source[0] = re.sub(r"^\.\. automodule:: (\S+)\n(?:   .*\n)*", constants, source[0], flags=re.M)


def setup(app: Any) -> None:
    app.connect("source-read", _add_constants)
    app.connect("autodoc-process-docstring", _drop_type_docstrings, priority=400)  # before numpydoc
