"""raglab installed from a built wheel works away from the source checkout.

What this proves, end to end, the way a user gets raglab:

1. An sdist made from the checkout's files (``git ls-files``: what a clean clone holds) carries
   ``data/`` (``MANIFEST.in``), and ``pip wheel`` builds a wheel from it in an isolated build
   environment (so ``[build-system] requires`` is enough). The wheel holds ``data/`` byte for byte as
   ``raglab/datasets/data/`` (copied by ``setup.py`` at build time: there is no second copy in the
   repository that could drift), and nothing else under that folder.
2. A fresh virtual environment, *without* ``--system-site-packages`` (that would let the project's
   venv hide a dependency missing from ``pyproject.toml``), gets the wheel and its core dependencies
   from the package index, with no extras: the core alone imports, loads every bundled dataset,
   scores a run, and runs the ``raglab`` command and ``python -m raglab``; the heavy optional
   packages (openai, matplotlib, ipywidgets, ...) are not even installed. Versions are constrained
   to the project venv's, so this test sees the same releases as the rest of the suite.
3. Everything runs from a directory outside the checkout, with ``PYTHONPATH`` and ``RAGLAB_DATA``
   unset, and checks that ``raglab`` was imported from the fresh venv's site-packages.

Needs the package index (or the pip configuration's mirror), as ``make test`` does to install.
About 30 s on 2 cores; pip's cache makes repeated runs cheaper.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

OPTIONAL = ("openai", "pydantic", "tqdm", "matplotlib", "seaborn", "ipywidgets", "IPython", "nbclient", "jupyter")
_IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
                                  ".hypothesis", ".raglab-cache", ".ipynb_checkpoints", "*.pyc")


def _bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / (name + (".exe" if os.name == "nt" else ""))


def _clean_env(**extra: str) -> dict[str, str]:
    # No PYTHONPATH (it could point at the checkout); bytecode is written (pip installs with --no-compile, so
    # only the modules actually imported get compiled, once).
    dropped = ("PYTHONPATH", "PYTHONHOME", "RAGLAB_DATA", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def _run(args: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env or _clean_env(), capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"`{' '.join(map(str, args))}` exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n"
                    f"--- stderr\n{done.stderr[-4000:]}")
    return done.stdout


def _checkout_files() -> list[str]:
    """The files a clean clone would have (tracked, plus new files not ignored), relative to the repo."""
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                             check=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    return [name for name in out.stdout.decode().split("\0") if name and (REPO / name).is_file()]


def _copy_checkout(target: Path) -> None:
    names = _checkout_files()
    if not names:  # not a git checkout: copy the tree without caches and build products
        shutil.copytree(REPO, target, ignore=_IGNORED)
        return
    for name in names:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)


def _data_files() -> dict[str, bytes]:
    return {p.relative_to(REPO / "data").as_posix(): p.read_bytes()
            for p in sorted((REPO / "data").rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _constraints(path: Path) -> Path:
    """The project venv's versions as pip constraints (name==version lines only)."""
    frozen = _run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], cwd=REPO)
    pins = [line for line in frozen.splitlines() if "==" in line and not line.lower().startswith("raglab")]
    path.write_text("\n".join(pins) + "\n")
    return path


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("install")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    constraints = _constraints(root / "constraints.txt")

    # 1. sdist from the checkout's files, made by setuptools in a small build-only venv.
    source = root / "source"
    _copy_checkout(source)
    builder = root / "builder"
    _run([sys.executable, "-m", "venv", "--without-pip", builder], cwd=root)
    _run([*pip, "--python", _bin(builder, "python"), "install", "--quiet", "--no-compile", "setuptools>=77"], cwd=root)
    sdists = root / "sdist"
    _run([_bin(builder, "python"), "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(sdists)!r})"],
         cwd=source)
    (sdist,) = sdists.glob("raglab-*.tar.gz")

    # 2. The wheel, built by pip from the sdist in an isolated build environment.
    wheels = root / "wheels"
    _run([*pip, "wheel", "--quiet", "--no-deps", "-w", wheels, sdist], cwd=root)
    (wheel,) = wheels.glob("raglab-*.whl")

    # 3. A fresh venv with the wheel and its core dependencies only (no extras, no system site-packages).
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=root)
    _run([*pip, "--python", _bin(venv, "python"), "install", "--quiet", "--no-compile", "-c", constraints, wheel],
         cwd=root)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return {"root": root, "sdist": sdist, "wheel": wheel, "venv": venv, "elsewhere": elsewhere}


def test_sdist_carries_the_data(installed):
    import tarfile

    with tarfile.open(installed["sdist"]) as archive:
        names = {"/".join(n.split("/")[1:]) for n in archive.getnames()}
    assert {f"data/{name}" for name in _data_files()} <= names
    assert {"setup.py", "MANIFEST.in", "pyproject.toml", "README.md"} <= names


def test_wheel_holds_data_byte_for_byte(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        prefix = "raglab/datasets/data/"
        shipped = {n[len(prefix):]: wheel.read(n) for n in wheel.namelist() if n.startswith(prefix) and not n.endswith("/")}
        names = set(wheel.namelist())
    expected = _data_files()
    assert sorted(shipped) == sorted(expected), "the wheel's raglab/datasets/data/ and data/ list different files"
    changed = [name for name in expected if shipped[name] != expected[name]]
    assert not changed, f"differ from data/: {changed}"
    assert {"raglab/__main__.py", "raglab/py.typed", "raglab/datasets/mtrag.py", "raglab_launcher.py"} <= names


def test_wheel_metadata_declares_core_and_extras(installed):
    with zipfile.ZipFile(installed["wheel"]) as wheel:
        info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(info).decode())
        entry_points = wheel.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert "raglab = raglab_launcher:main" in entry_points  # exits 4 when raglab cannot import
    extras = set(metadata.get_all("Provides-Extra"))
    assert {"judge", "plots", "widgets", "notebooks", "test"} <= extras
    core = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    assert not [r for r in core if r.split(">")[0].split("=")[0].strip().lower() in {m.lower() for m in OPTIONAL}]


def test_installed_wheel_loads_the_bundled_data_from_elsewhere(installed):
    code = textwrap.dedent(f"""
        import importlib.util, json, sys
        import raglab
        from raglab import datasets
        from raglab.datasets import mtrag

        heavy_loaded = sorted(m for m in {OPTIONAL!r} if m in sys.modules)
        heavy_installed = sorted(m for m in {OPTIONAL!r} if importlib.util.find_spec(m) is not None)
        run = datasets.squad_run("chunk1000_bm25")
        scored = datasets.squad_run("chunk500_rerank").rag.retrieval(k=[5])
        runs = mtrag.load_runs()
        try:
            raglab.judge
            judge = "imported"
        except ModuleNotFoundError as exc:
            judge = str(exc)
        print(json.dumps({{
            "raglab": raglab.__file__, "data": str(datasets.data_dir()), "prefix": sys.prefix,
            "heavy_loaded": heavy_loaded, "heavy_installed": heavy_installed,
            "handbook": datasets.handbook().shape[0], "questions": len(datasets.squad_questions()),
            "run": list(run.shape), "bert_em": round(100 * datasets.squad_reader("bert")["em"].mean(), 2),
            "recall": "recall@5" in scored.columns, "mtrag": {{k: len(v) for k, v in runs.items()}},
            "judge": judge,
        }}))
    """)
    out = json.loads(_run([_bin(installed["venv"], "python"), "-c", code], cwd=installed["elsewhere"]))
    venv = installed["venv"].resolve()
    assert Path(out["prefix"]).resolve() == venv
    assert Path(out["raglab"]).resolve().is_relative_to(venv), f"raglab imported from {out['raglab']}, not the venv"
    assert Path(out["data"]).resolve().is_relative_to(venv) and Path(out["data"]).parts[-3:] == ("raglab", "datasets", "data")
    assert out["heavy_loaded"] == [] and out["heavy_installed"] == [], "the core install pulled in optional packages"
    assert out["handbook"] == 36 and out["questions"] == 11873 and out["run"][0] == 11873 and out["recall"]
    assert out["bert_em"] == 78.74  # SQuAD 2.0's official dev score for BERT
    assert out["mtrag"] == {"reference": 159, "llama-3.1-405b-instruct": 159, "gpt-4o": 159}
    assert out["judge"] == "imported" or "pip install 'raglab[judge]'" in out["judge"], out["judge"]


def test_raglab_data_overrides_the_installed_copy(installed, tmp_path):
    shutil.copytree(REPO / "data" / "handbook", tmp_path / "handbook")
    code = textwrap.dedent(f"""
        import os
        from raglab import datasets
        print(datasets.data_dir(), len(datasets.handbook()))
        os.environ["RAGLAB_DATA"] = {str(tmp_path / "nowhere")!r}
        try:
            datasets.handbook()
        except FileNotFoundError as exc:
            print("RAGLAB_DATA" in str(exc))
    """)
    out = _run([_bin(installed["venv"], "python"), "-c", code], cwd=installed["elsewhere"],
               env=_clean_env(RAGLAB_DATA=str(tmp_path)))
    assert out.split() == [str(tmp_path), "36", "True"]


def test_installed_command_line(installed):
    from raglab import __version__

    version = _run([_bin(installed["venv"], "raglab"), "--version"], cwd=installed["elsewhere"])
    assert version.strip() == f"raglab {__version__}"
    helped = _run([_bin(installed["venv"], "python"), "-m", "raglab", "--help"], cwd=installed["elsewhere"])
    assert helped.startswith("usage: raglab") and "gate" in helped and "size" in helped
