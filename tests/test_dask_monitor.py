"""raglab.dask.over_time and monitor (issue 23): the pandas tables, whatever the partitions and row order."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe", reason="the dask extra (pip install 'raglab[dask]') is not installed")
import dask  # noqa: E402

import raglab  # noqa: E402, F401
from raglab._errors import MissingColumnError, RowTableError  # noqa: E402
from raglab.dask import monitor, over_time  # noqa: E402
from raglab.monitor import simulate_log  # noqa: E402

NUMBERS = ["estimate", "low", "high", "se"]


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def log():
    return simulate_log(120_000, days=30, drop_day=15, seed=4)


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.mark.parametrize("partitions", [1, 3, 8, 64])
def test_over_time_equals_pandas_for_any_partitioning(log, partitions):
    shuffled = log.sample(frac=1.0, random_state=partitions)
    kw = {"predictor": "lexical_support", "by": "topic"}
    names = ["faithfulness", "citation_valid", "lexical_support", "thumbs"]
    got = _quiet(over_time, dd.from_pandas(shuffled, npartitions=partitions), names, **kw)
    expected = _quiet(log.rag.over_time, names, **kw)
    pd.testing.assert_frame_equal(got.drop(columns=NUMBERS), expected.drop(columns=NUMBERS))
    np.testing.assert_allclose(got[NUMBERS].to_numpy(float), expected[NUMBERS].to_numpy(float), rtol=0, atol=1e-12)
    assert got.attrs["raglab"]["over_time"] == expected.attrs["raglab"]["over_time"]


def test_feedback_is_flagged_once_for_the_whole_log(log):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        over_time(dd.from_pandas(log, npartitions=5), "thumbs")
    flagged = [w for w in caught if "who answers" in str(w.message)]
    assert len(flagged) == 1 and f"{log['thumbs'].notna().mean():.1%}" in str(flagged[0].message)


def test_monitor_and_post_mortem_equal_pandas():
    log = simulate_log(200_000, days=40, drop_day=20, seed=1)  # billing's drop raises an alarm
    kw = {"reference": 0.88, "by": "topic", "predictor": "lexical_support", "guarantee": "arl", "arl": 365}
    got = _quiet(monitor, dd.from_pandas(log.sample(frac=1.0, random_state=1), npartitions=6), "faithfulness", **kw)
    expected = _quiet(log.rag.monitor, "faithfulness", **kw)
    assert got.guarantee == expected.guarantee and len(expected.alarms)
    pd.testing.assert_frame_equal(got.alarms, expected.alarms, check_exact=False, rtol=1e-10)
    np.testing.assert_allclose(got.table[["estimate", "statistic"]].to_numpy(float),
                               expected.table[["estimate", "statistic"]].to_numpy(float), rtol=1e-10)
    a, b = got.post_mortem(0, by=["topic", "channel"]), expected.post_mortem(0, by=["topic", "channel"])
    assert a.change[:3] == b.change[:3] and a.change[5:] == b.change[5:]  # the same periods, method and seed
    np.testing.assert_allclose(a.change[3:5], b.change[3:5], rtol=1e-12)
    pd.testing.assert_frame_equal(a.slices, b.slices, check_exact=False, rtol=1e-10)
    assert a.requests["request_id"].tolist() == b.requests["request_id"].tolist()


def test_a_judge_change_restarts_on_dask_too(log):
    changed = log.assign(judge_fingerprint=np.where(log["timestamp"] >= pd.Timestamp("2026-09-20", tz="UTC"),
                                                    "v2", "v1"))
    got = _quiet(monitor, dd.from_pandas(changed, npartitions=4), "faithfulness", reference=5)
    expected = _quiet(changed.rag.monitor, "faithfulness", reference=5)
    assert got.settings["restarts"] == expected.settings["restarts"] == [pd.Timestamp("2026-09-20", tz="UTC")]


def test_bad_input_names_the_partition_and_the_column(log):
    bad = log.head(3000).copy()
    bad["citation_valid"] = bad["citation_valid"].astype(object)
    bad.loc[bad.index[2500], "citation_valid"] = "yes"
    with pytest.raises(RowTableError, match=r"partition 2 of the Dask DataFrame: .*'citation_valid' must hold numbers"):
        over_time(dd.from_pandas(bad, npartitions=3, sort=False), "citation_valid")
    with pytest.raises(MissingColumnError, match="'when'"):
        over_time(dd.from_pandas(log.head(100), npartitions=2), "citation_valid", time="when")
    with pytest.raises(TypeError, match="must be a Dask DataFrame"):
        over_time(log, "citation_valid")
    with pytest.raises(ValueError, match="guarantee must be one of"):
        monitor(dd.from_pandas(log.head(100), npartitions=2), "faithfulness", reference=0.9, guarantee="weekly")


def test_a_missing_dask_names_its_extra():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.dataframe'] = None\n"
            "try:\n    import raglab.dask\nexcept ModuleNotFoundError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'raglab[dask]'" in out.stdout, out.stdout + out.stderr
