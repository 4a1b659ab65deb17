"""Build hook: the wheel carries a copy of the top-level ``data/`` as ``raglab/datasets/data/``.

``data/`` stays the single source of the bundled datasets (the scripts in ``scripts/`` write it, and a
source checkout or editable install reads it in place). setuptools ships only files inside a
package, so this ``build_py`` copies ``data/`` into the built package at build time: there is no
second copy in the repository that could drift. ``MANIFEST.in`` puts ``data/`` in the sdist so that
a wheel built from the sdist gets it too. Everything else is configured in ``pyproject.toml``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = Path(__file__).resolve().parent / "data"
PACKAGE_DATA = ("raglab", "datasets", "data")


class build_py_with_data(build_py):  # noqa: N801  (setuptools command naming)
    """``build_py`` plus a fresh copy of ``data/`` at ``raglab/datasets/data`` in the build tree."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads data/ in the checkout (raglab.datasets.data_dir)
        if not (DATA / "README.md").is_file():
            raise FileNotFoundError(f"raglab's bundled data is missing: no {DATA / 'README.md'}; the wheel needs data/")
        target = Path(self.build_lib).joinpath(*PACKAGE_DATA)
        shutil.rmtree(target, ignore_errors=True)  # a stale build/ must not keep deleted files
        shutil.copytree(DATA, target, ignore=shutil.ignore_patterns("__pycache__", ".*"))


setup(cmdclass={"build_py": build_py_with_data})
