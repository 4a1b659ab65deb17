"""Shared test fixtures: paths to bundled and public data, headless plotting, no stray figures, one Spark session."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = Path(__file__).resolve().parent / "data"
SHARED_DATA = Path(os.environ.get("RAGLAB_SHARED", REPO.parent / "shared")).resolve() / "data"


def shared_path(*parts: str) -> Path:
    """Path inside ../shared/data, or skip the test saying what is missing and how to point at it."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"needs the public dataset file {'/'.join(parts)} from ../shared/data (looked in {SHARED_DATA}); "
            "set RAGLAB_SHARED to the folder holding data/ to run it"
        )
    return path


def trec_eval_output(path: Path) -> dict[tuple[str, str], str]:
    """trec_eval's printed output (``measure \\t qid|all \\t value``): (measure, qid) -> value as printed."""
    out = {}
    for line in path.read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out[(measure, qid)] = value
    return out


@pytest.fixture
def trec_dir() -> Path:
    return TEST_DATA / "trec_eval"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---- one local Spark session for the whole run (tests/test_spark_*.py) ---------------------------------------

#: Set (to anything but "" or "0") where the Spark tests must run, as in CI (.ci/run): a missing pyspark or
#: Java runtime then fails the tests that use the ``spark`` fixture instead of skipping them.
SPARK_REQUIRE_VARIABLE = "RAGLAB_REQUIRE_SPARK"


def spark_missing() -> str | None:
    """Why a local Spark session cannot start here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "needs pyspark (the spark extra, part of the test extra: `pip install -e '.[test]'`)"
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return ("needs a Java runtime for Spark (`java` on PATH, or JAVA_HOME); on Debian/Ubuntu "
                "`apt-get install -y --no-install-recommends default-jre-headless` (CI's .ci/run does this as root)")
    return None


def spark_unavailable(reason: str, *, module: bool = False) -> None:
    """Skip (the test, or with ``module`` the whole module) with the reason; fail when RAGLAB_REQUIRE_SPARK is set."""
    if os.environ.get(SPARK_REQUIRE_VARIABLE, "").strip() not in ("", "0"):
        pytest.fail(f"{SPARK_REQUIRE_VARIABLE}={os.environ[SPARK_REQUIRE_VARIABLE]!r} asks for the Spark tests, but "
                    f"they cannot run here: {reason}", pytrace=False)
    pytest.skip(f"{reason} (set {SPARK_REQUIRE_VARIABLE}=1 to make this a failure)", allow_module_level=module)


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession (UTC, Arrow, no UI, 4 shuffle partitions), started once and stopped at the end.

    Its Python workers run this interpreter (PYSPARK_PYTHON) with this checkout first on PYTHONPATH, so
    they import the same raglab as the tests (local mode passes the driver's environment to them).
    """
    missing = spark_missing()
    if missing is not None:
        spark_unavailable(missing)
    saved = {name: os.environ.get(name) for name in ("PYSPARK_PYTHON", "PYTHONPATH")}

    def restore() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    os.environ["PYSPARK_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *[p for p in paths if p != str(REPO)]])
    try:
        from pyspark.sql import SparkSession

        session = (SparkSession.builder.master("local[2]").appName("raglab-tests")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "4")
                   .config("spark.default.parallelism", "2")
                   .config("spark.driver.memory", "1g")
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.pyspark.python", sys.executable)
                   .getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
    except Exception as exc:  # a Java runtime too old for this pyspark, no room for the JVM, ...
        restore()
        spark_unavailable(f"a local Spark session did not start: {type(exc).__name__}: {str(exc)[:500]}")
    try:
        yield session
    finally:
        session.stop()
        restore()
