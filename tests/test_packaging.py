"""Packaging: the two commands, the environment file, the public surface."""

from __future__ import annotations

import re
import subprocess
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import pytest
from conftest import REPO


def _normalise(name: str) -> str:
    return re.split(r"[<>=!~\[; ]", name.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pyproject_packages() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {_normalise(d) for d in project["dependencies"]}
    for extra, deps in project["optional-dependencies"].items():
        if extra == "bench":  # the benchmark peers are installed by `make bench`, not part of the user env
            continue
        names |= {_normalise(d) for d in deps if not d.startswith("raglab")}
    return names


def environment_packages() -> set[str]:
    """Package names listed in environment.yml (conda deps and the pip: block), without raglab itself."""
    names = set()
    text = (REPO / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+)", line)
        if match and match.group(1) not in ("pip", "python"):
            names.add(_normalise(match.group(1)))
    names.discard("-e")
    return names


# conda-forge names that differ from the PyPI name of the same package
CONDA_NAMES = {"pytrec-eval-terrier": "pytrec-eval-terrier"}


def test_environment_yml_names_the_same_packages_as_pyproject():
    expected = {CONDA_NAMES.get(name, name) for name in pyproject_packages()}
    found = environment_packages()
    assert found == expected, f"only in pyproject: {expected - found}; only in environment.yml: {found - expected}"


def test_ci_runs_only_make_test():
    script = (REPO / ".ci" / "run").read_text()
    commands = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))]
    assert commands == ["make test"]


def test_readme_starts_with_the_two_commands():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", readme, flags=re.S)
    assert blocks, "README needs a code block with the two commands"
    assert [line.strip() for line in blocks[0].strip().splitlines()] == ["make demo", "make test"]


def test_import_registers_accessor_in_a_fresh_interpreter():
    code = "import pandas as pd, raglab; df = pd.DataFrame({'x': [1]}); print('rag' in dir(df), type(df.rag).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "RagAccessor"]


PUBLIC_MODULES = [
    "raglab", "raglab.io", "raglab.stats", "raglab.evalset", "raglab.accessor", "raglab.metrics",
    "raglab.abstention", "raglab.agreement", "raglab.sizing", "raglab.plots", "raglab.widgets", "raglab.judge",
    "raglab.tripwires", "raglab.testing", "raglab.datasets", "raglab.datasets.mtrag", "raglab.cli", "raglab.demo",
]


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_modules_have_all_and_docstrings(module):
    mod = __import__(module, fromlist=["_"])
    assert mod.__doc__ and mod.__doc__.strip()
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if callable(obj) and not name.endswith(("Error", "Warning")):
            assert obj.__doc__, f"{module}.{name} has no docstring"


def test_readme_quickstart_runs(monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    readme = (REPO / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", quickstart, flags=re.S).group(1)
    assert len(code.strip().splitlines()) <= 12
    namespace: dict = {}
    exec(compile(code, "README quickstart", "exec"), namespace)
    assert namespace["result"].decision in ("pass", "review", "block")
    assert set(namespace["table"]["metric"]) == {"recall@5", "hit@1"}


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_public_functions_have_examples(module):
    """Every public function shows a runnable example (the doctests run in the suite)."""
    import inspect

    mod = __import__(module, fromlist=["_"])
    lacking = [
        name for name in getattr(mod, "__all__", [])
        if inspect.isfunction(getattr(mod, name)) and ">>>" not in (inspect.getdoc(getattr(mod, name)) or "")
    ]
    assert not lacking, f"{module}: public functions without an example: {lacking}"


def test_trec_fixtures_are_unchanged_copies():
    from conftest import TEST_DATA, shared_path

    for path in sorted((TEST_DATA / "trec_eval").iterdir()):
        if path.name == "NOTICE.md":
            continue
        assert path.read_bytes() == shared_path("trec_eval", path.name).read_bytes(), path.name
