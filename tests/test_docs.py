"""The API reference builds from the docstrings with warnings as errors, and covers every public module."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow  # one Sphinx build, about 10 s

pytest.importorskip("sphinx", reason="the docs extra (sphinx, numpydoc) is not installed: pip install -e '.[docs]'")
pytest.importorskip("numpydoc", reason="the docs extra (sphinx, numpydoc) is not installed: pip install -e '.[docs]'")

# Every public module and subpackage has its reference (a module page or a section of its package's page).
DOCUMENTED = [
    "raglab", "raglab.accessor", "raglab.metrics", "raglab.metrics.spans", "raglab.stats", "raglab.gate",
    "raglab.agreement", "raglab.sizing", "raglab.sampling", "raglab.io", "raglab.trec", "raglab.evalset", "raglab.runs",
    "raglab.retrieval", "raglab.chunks", "raglab.boundaries", "raglab.abstention", "raglab.simulate", "raglab.monitor", "raglab.dask",
    "raglab.spark", "raglab.engines",
    "raglab.tripwires", "raglab.judge", "raglab.plots", "raglab.widgets", "raglab.datasets",
    "raglab.datasets.mtrag", "raglab.datasets.clapnq", "raglab.datasets.frank", "raglab.testing", "raglab.cli", "raglab.demo",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[subprocess.CompletedProcess, object]:
    out = tmp_path_factory.mktemp("docs")
    # -W --keep-going: every warning is reported, and any fails the build; -n: every reference resolves.
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-n", "-W", "--keep-going", "-q", "-E",
         "-d", str(out / "doctrees"), str(REPO / "docs"), str(out / "html")],
        capture_output=True, text=True, cwd=REPO,
    )
    return result, out / "html"


def test_docs_build_with_warnings_as_errors(built):
    result, _ = built
    assert result.returncode == 0, f"make docs fails:\n{result.stderr[-6000:]}"
    assert not result.stderr.strip(), result.stderr[-6000:]


def test_every_public_module_and_the_accessor_are_documented(built):
    result, html = built
    assert result.returncode == 0, result.stderr[-2000:]
    index = (html / "py-modindex.html").read_text(encoding="utf-8")
    missing = [module for module in DOCUMENTED if f">{module}<" not in index]
    assert not missing, f"modules without a reference page: {missing}"
    accessor = (html / "api" / "accessor.html").read_text(encoding="utf-8")
    for method in ("retrieval", "compare", "gate", "judge", "summary"):
        assert f'id="raglab.accessor.RagAccessor.{method}"' in accessor, method


def test_the_build_leaves_the_checkout_clean(built):
    """Nothing is generated into docs/ (autosummary stubs, doctrees): a build in a tmp dir writes only there."""
    assert built[0].returncode == 0, built[0].stderr[-2000:]
    assert not (REPO / "docs" / "_build").exists()
    assert not list((REPO / "docs").rglob("generated"))
