"""Models whose names differ only where nothing shows (U+200B, a trailing space, NFD against NFC) get distinct labels."""
import numpy as np
import pandas as pd
import pytest

from modelrecord import plots
from modelrecord.sample import example_tree
from modelrecord.summary import summary, summary_text
from modelrecord.tables import load

NAMES = ["gpt-5", "gpt-5\u200b", "gpt-5 ", "caf\u00e9", "cafe\u0301"]  # three print as gpt-5, two as café
SHOWN = ["gpt-5", "gpt-5<U+200B>", "gpt-5<U+0020>", "café", "cafe<U+0301>"]


@pytest.fixture(scope="module")
def tables():
    "The example tree, its attempts (and their turn lines, calls...) given the names of `NAMES` in turn."
    tables = load(example_tree(), cache=False)
    model = pd.Categorical(np.array(NAMES, dtype=object)[np.arange(len(tables.attempts)) % len(NAMES)],
                           categories=NAMES)
    tables.attempts["model"] = model
    for _, frame in tables.items():
        if "model" in frame.columns and "attempt_key" in frame.columns:
            frame["model"] = model[frame.attempt_key.to_numpy(dtype=np.int64)]
    return tables


def test_summary_text_labels_each_model_apart(tables):
    lines = summary_text(summary(tables)).splitlines()
    assert lines[:2] == ["Endings", lines[1]] and lines[1].startswith("model ")
    assert sorted(line.split(" ", 1)[0] for line in lines[2:7]) == sorted(SHOWN)
    assert len({len(line) for line in lines[1:7]}) == 1  # columns line up: no combining mark shortens a row


def test_plot_tick_labels_each_model_apart(tables):
    for plot in (plots.tokens_by_model, plots.endings_by_model, plots.latency_by_model):
        fig = plot(tables)
        assert sorted(t.get_text() for t in fig.axes[0].get_yticklabels()) == sorted(SHOWN), plot.__name__


def test_explorer_filter_labels_each_model_apart(tables):
    explore = pytest.importorskip("modelrecord.explore")
    explorer = explore.Explorer(load=False)
    explorer.tables = tables
    explore._offer_filters(explorer, keep=False)
    offered = dict(explorer.filters["model"].options)
    assert sorted(offered) == sorted(["all", *SHOWN]) and sorted(offered.values()) == sorted([explore.ALL, *NAMES])


def test_compare_tab_offers_each_model_apart(tables):
    explore = pytest.importorskip("modelrecord.explore")
    compare_tab = pytest.importorskip("modelrecord.compare_tab")
    explorer = explore.Explorer(load=False)
    explorer.tables = explorer.filtered = tables
    compare_tab._compare_widgets(explorer)
    assert compare_tab._offer_models(explorer) == sorted(NAMES)
    for dropdown in (explorer.compare_a, explorer.compare_b):
        offered = dict(dropdown.options)
        assert sorted(offered) == sorted(SHOWN) and sorted(offered.values()) == sorted(NAMES)
    assert (explorer.compare_a.value, explorer.compare_b.value) == tuple(sorted(NAMES)[:2])
