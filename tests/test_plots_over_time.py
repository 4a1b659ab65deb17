"""plots.over_time (issue 22): bands, the reference and the alarms of a monitor, or a plain over_time table."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import raglab  # noqa: E402, F401
from raglab import plots  # noqa: E402
from raglab.monitor import simulate_log  # noqa: E402


@pytest.fixture(scope="module")
def found():
    log = simulate_log(200_000, days=40, drop_day=20, seed=1)
    return log, log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
                                guarantee="arl", arl=365)


def test_a_monitor_draws_bands_reference_and_alarms(found):
    _, m = found
    ax = plots.over_time(m)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    alarmed = list(dict.fromkeys(m.alarms["slice"]))
    assert labels[0] == "overall" and set(alarmed) <= set(labels) and labels[-1].startswith("alarm")
    markers = [line for line in ax.get_lines() if line.get_marker() == "v" and len(line.get_xdata())]
    assert len(markers) == len(m.alarms[m.alarms["slice"].isin(labels)])
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    overall = m.table[m.table["slice"] == "overall"]
    assert np.isclose(band.max(), overall["high"].max()) and np.isclose(band.min(), overall["low"].min())
    assert ax.get_title(loc="left").startswith("average run length")
    plt.close(ax.figure)


def test_a_plain_table_and_chosen_slices(found):
    log, _ = found
    table = log.rag.over_time(["faithfulness", "citation_valid"], by="topic")
    ax = plots.over_time(table, "citation_valid", slices=["billing", "account"])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["billing", "account"]
    assert "95% band" in ax.get_ylabel()
    fig, given = plt.subplots()
    assert plots.over_time(table, ax=given) is given
    plt.close("all")


def test_bad_input_is_named(found):
    log, m = found
    with pytest.raises(ValueError, match="metric 'recall' is not in the table"):
        plots.over_time(m, "recall")
    with pytest.raises(ValueError, match=r"slices \['mars'\] are not in the table"):
        plots.over_time(m, slices="mars")
    with pytest.raises(TypeError, match="over_time plots a table"):
        plots.over_time([1, 2, 3])
    plt.close("all")
