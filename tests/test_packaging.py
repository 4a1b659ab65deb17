"""Packaging: the two commands, the environment file, the public surface, optional parts as extras."""

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


def test_ci_runs_make_test_after_installing_chromium_and_java():
    """CI runs what the README tells a user (`make test`), after two machine steps: Chromium for the browser
    test and a Java runtime for the Spark tests, each required (a missing one fails its tests, not skips them)."""
    script = (REPO / ".ci" / "run").read_text()
    top_level = [line for line in script.splitlines()
                 if line.strip() and not line.startswith((" ", "\t", "#", "set ", "cd ", "}", "install_chromium() {",
                                                          "install_java() {"))]
    assert top_level == ["install_chromium", "install_java", "make test"]
    assert "apt-get install -y --no-install-recommends chromium" in script
    assert "apt-get install -y --no-install-recommends default-jre-headless" in script
    assert "export RAGLAB_REQUIRE_BROWSER=1" in script and "export RAGLAB_REQUIRE_SPARK=1" in script


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
    "raglab.gate", "raglab.runs", "raglab.retrieval", "raglab.metrics.spans", "raglab.chunks", "raglab.boundaries",
    "raglab.datasets.clapnq", "raglab.simulate", "raglab.monitor", "raglab.dask", "raglab.sampling",
    "raglab.spark", "raglab.engines",
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
    assert set(namespace["table"]["metric"]) == {"recall@5", "coverage@5"}


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


# ---- a package that works when installed (issue 12); the wheel itself is tested in test_install.py -----------

OPTIONAL_MODULES = ("openai", "pydantic", "tqdm", "matplotlib", "seaborn", "ipywidgets", "IPython", "nbclient")


@pytest.mark.parametrize("imports", ["raglab", "raglab, raglab.cli, raglab.datasets, raglab.datasets.mtrag"])
def test_import_raglab_does_not_import_optional_parts(imports):
    code = f"import json, sys; import {imports}; print(json.dumps(sorted(m for m in {OPTIONAL_MODULES!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]", f"`import {imports}` loaded {out.stdout.strip()}"


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_core_dependencies_leave_out_the_heavy_parts():
    core = {_normalise(d) for d in _pyproject()["dependencies"]}
    assert core == {"pandas", "numpy", "scipy", "pyarrow", "threadpoolctl"}


def test_each_optional_module_is_in_the_extra_its_error_names():
    from raglab._optional import EXTRAS

    extras = _pyproject()["optional-dependencies"]

    def names(extra: str) -> set[str]:  # an extra's packages, following raglab[...] self-references
        found = set()
        for dep in extras[extra]:
            if dep.startswith("raglab["):
                for inner in dep[len("raglab["):].rstrip("]").split(","):
                    found |= names(inner.strip())
            else:
                found.add(_normalise(dep))
        return found

    for module, extra in EXTRAS.items():
        assert module.lower() in names(extra), f"{module} is not in the '{extra}' extra that its error names"
    # make test and make demo install every extra
    assert {m.lower() for m in EXTRAS} <= names("test")
    assert ".[test]" in (REPO / "Makefile").read_text()


def test_missing_optional_module_error_names_the_extra():
    # sys.modules[name] = None makes `import name` raise ModuleNotFoundError, as if it were not installed.
    code = (
        "import sys; sys.modules['pydantic'] = None; import raglab\n"
        "try:\n    raglab.judge; print('imported')\nexcept ModuleNotFoundError as exc:\n    print(exc)\n"
        "from raglab._optional import import_optional\n"
        "sys.modules['matplotlib'] = None\n"
        "try:\n    import_optional('matplotlib.pyplot', purpose='raglab.plots.forest')\n"
        "except ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    judge, plots = out.stdout.splitlines()
    # raglab.judge imports pydantic when it loads today; if that becomes lazy, the module simply imports
    assert judge in ("imported", "raglab.judge needs pydantic, which is not installed: pip install 'raglab[judge]'")
    assert plots == "raglab.plots.forest needs matplotlib, which is not installed: pip install 'raglab[plots]'"


def test_python_dash_m_raglab_runs_the_command_line():
    out = subprocess.run([sys.executable, "-m", "raglab", "--version"], capture_output=True, text=True, check=True,
                         cwd=REPO)
    from raglab import __version__

    assert out.stdout.strip() == f"raglab {__version__}"
