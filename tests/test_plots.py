"""The plots on every filter an explorer offers: they draw (never raise), agree with the summaries, keep no figure."""
import io, os, subprocess, sys

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from modelrecord import plots
from modelrecord.record import COST_COMPONENTS, MODEL_ENDINGS, NOT_MODEL_ENDINGS, TOKEN_CATEGORIES
from modelrecord.sample import example_tree
from modelrecord.formatting import plural, usd_column, usd_text
from modelrecord.plots import legends, texts
from modelrecord.summary import costs, endings, tokens
from modelrecord.tables import load

pytestmark = pytest.mark.filterwarnings("error::UserWarning")  # matplotlib warns (UserWarning) of what it cannot draw

PLOTS = (plots.tokens_by_model, plots.cost_by_model, plots.endings_by_model, plots.latency_by_model,
         plots.cumulative_cost)
UNPRICED = plots.UNPRICED


@pytest.fixture(scope="module")
def tables():
    return load(example_tree())


def bar_ends(ax) -> dict:
    "Where each row's bar ends, by the row's y position."
    ends = {}
    for p in ax.patches:
        row = round(p.get_y() + p.get_height() / 2, 3)
        ends[row] = max(ends.get(row, 0), p.get_x() + p.get_width())
    return ends


def drawn(fig) -> Figure:
    "`fig` laid out and drawn (without writing pixels), which is where most drawing problems surface."
    assert isinstance(fig, Figure)
    fig.draw_without_rendering()
    return fig


def check(tables, label: str, draw: bool = True):
    "Every plot of `tables`, checked against the summaries of the same selection (and drawn, when `draw`)."
    figures = {plot: plot(tables) for plot in PLOTS}
    if draw:
        for fig in figures.values(): drawn(fig)
    empty = tables.attempts.empty
    for plot, fig in figures.items():
        assert isinstance(fig, Figure)
        assert (plots.NOTHING in texts(fig)) == empty, f"{plot.__name__} on {label}"
    fig = figures[plots.tokens_by_model]
    if len(tables.turns):
        assert legends(fig) == [("token category", list(TOKEN_CATEGORIES))]
        totals = tokens(tables)[list(TOKEN_CATEGORIES)].sum(axis=1)
        assert np.allclose(list(bar_ends(fig.axes[0]).values()), totals), label
    spend = costs(tables)
    fig = figures[plots.cost_by_model]
    assert texts(fig).count(UNPRICED) == int(spend.cost.isna().sum()), label
    if len(spend): assert legends(fig) == [("cost component", list(COST_COMPONENTS))]
    fig = figures[plots.endings_by_model]
    if not empty:
        assert legends(fig) == [("the model's", list(MODEL_ENDINGS)), ("not the model's", list(NOT_MODEL_ENDINGS))]
        e = endings(tables)
        assert all(f"{row.not_model_endings}/{row.attempts}" in texts(fig) for row in e.itertuples()), label
    assert matplotlib.pyplot.get_fignums() == []


FILTERS = {"model": [None, "anthropic:claude-sonnet-4;effort=high", "openai:gpt-5",
                     "google:gemini-2.5-flash;temperature=0",
                     "fake:perfect"],
           "surface": [None, "dynamic", "individual", "meta"],
           "edition": [None, "ce", "ee"]}


@pytest.mark.parametrize("model", FILTERS["model"])
def test_every_filter_combination(tables, model):
    "Each model (or none) with each surface, and with each edition: the plots agree with the summaries; each model alone is drawn."
    pairs = [("surface", surface) for surface in FILTERS["surface"]] + [("edition", edition)
                                                                        for edition in FILTERS["edition"][1:]]
    for name, value in pairs:
        conditions = {k: v for k, v in (("model", model), (name, value)) if v is not None}
        check(tables.where(**conditions), str(conditions), draw=value is None)


@pytest.mark.parametrize("ended_by", [MODEL_ENDINGS, NOT_MODEL_ENDINGS, "completed", "skipped"])
def test_filters_on_endings(tables, ended_by):
    narrowed = tables.where(ended_by=ended_by)
    check(narrowed, f"ended_by={ended_by}")
    if ended_by is NOT_MODEL_ENDINGS:  # no attempt the model ended: said on each bar, no share drawn
        fig = plots.endings_by_model(narrowed)
        assert texts(fig).count("no attempt ended by the model") == narrowed.attempts.model.nunique()


def test_empty_selection(tables):
    nothing = tables.where(model="no such model")
    for plot in PLOTS:
        fig = drawn(plot(nothing))
        assert plots.NOTHING in texts(fig), plot.__name__
        assert all(ax.get_xlabel() for ax in fig.axes), plot.__name__  # still labelled
    for split in ("surface", "case"):
        assert plots.NOTHING in texts(drawn(plots.tokens_by_model(nothing, split=split)))
        assert plots.NOTHING in texts(drawn(plots.cost_by_model(nothing, split=split)))


def test_attempts_without_turn_lines(tables):
    skipped = tables.where(ended_by="skipped")
    assert len(skipped.attempts) and not len(skipped.turns)
    assert "no turn lines in this selection" in texts(drawn(plots.tokens_by_model(skipped)))
    assert "no turn lines in this selection" in texts(drawn(plots.cost_by_model(skipped)))
    assert "no turn lines with a latency in this selection" in texts(drawn(plots.latency_by_model(skipped)))
    assert "no turn lines in this selection" in texts(drawn(plots.cumulative_cost(skipped)))


@pytest.mark.parametrize("split", ["surface", "case", "edition"])
def test_split(tables, split):
    for plot, summary in ((plots.tokens_by_model, tokens), (plots.cost_by_model, costs)):
        fig = drawn(plot(tables, split=split))
        labels = fig.axes[0].get_yticklabels()
        headers = [t.get_text().replace("\n", "") for t in labels if t.get_fontweight() == "bold"]
        parts = [t.get_text() for t in labels if t.get_fontweight() != "bold"]
        rows = summary(tables, ["model", split])
        assert headers == sorted(tables.attempts.model.unique())
        assert parts == [str(part) for _, part in rows.index]
        assert fig.axes[0].get_ylabel() == f"model / {split}"
        assert 4 <= fig.get_figheight() <= plots._MAX_HEIGHT


def test_by_another_column(tables):
    "`by` groups by any column of the attempts; a missing value is a group of its own."
    fig = drawn(plots.endings_by_model(tables, by="session"))
    assert "(none)" in [t.get_text() for t in fig.axes[0].get_yticklabels()]  # skipped attempts name no session
    for plot in (plots.tokens_by_model, plots.cost_by_model, plots.latency_by_model):
        fig = drawn(plot(tables, by="surface"))
        assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["dynamic", "individual", "meta"]


def test_partly_priced_group(tables):
    "A surface mixes priced and unpriced models: the priced part is drawn, the unpriced turn lines are counted."
    fig = drawn(plots.cost_by_model(tables, by="surface"))
    spend = costs(tables, "surface")
    for total, row in zip(usd_column(spend.cost), spend.itertuples()):  # the notes are one column: one format
        assert f"{total} + {plural(row.unpriced_turns, 'unpriced turn line')}" in texts(fig)


def test_repriced_and_unpriced(tables):
    priced = tables.priced({"openai:gpt-5": {"input_per_million_usd": 1, "output_per_million_usd": 1}})
    fig = drawn(plots.cost_by_model(priced))
    assert texts(fig).count(UNPRICED) == 3
    fig = drawn(plots.cost_by_model(priced.where(model="fake:perfect")))
    assert UNPRICED in texts(fig) and not len(fig.axes[0].get_xticks())  # no dollar scale of zeros


def test_cumulative_cost_per_run(tables):
    for run in tables.runs.run_id.unique():
        fig = drawn(plots.cumulative_cost(tables, run=run))
        spent = tables.turns.cost[tables.turns.run_id == run].sum()
        assert fig.axes[0].get_title(loc="left") == f"Spend through run {run}"
        assert any(t.startswith(usd_text(spent) + " of a $40.00 budget") for t in texts(fig))
        top = fig.axes[0].collections[-1].get_paths()[0].vertices[:, 1].max()  # the upper edge of the last area
        assert np.isclose(top, spent)
    latest = tables.runs.sort_values("started_at").run_id.iloc[-1]
    assert drawn(plots.cumulative_cost(tables)).axes[0].get_title(loc="left") == f"Spend through run {latest}"
    assert "no turn lines of run nope in this selection" in texts(drawn(plots.cumulative_cost(tables, run="nope")))


MATHTEXT = r"price:$\undefined$"  # mathtext that cannot be parsed, were it parsed


def _renamed(names: dict):
    "The example tree's tables, a copy, with each model of `names` renamed to its value in every table."
    fresh = load(example_tree(), cache=False)
    for _, frame in fresh.items():
        if "model" in frame.columns: frame["model"] = frame.model.cat.rename_categories(lambda m: names.get(m, m))
    return fresh


def test_a_model_named_with_mathtext_is_drawn_as_written():
    "A `$` in a model's name is a dollar sign: every overview plot draws, and the name is written as it is."
    renamed = _renamed({"fake:perfect": MATHTEXT, "openai:gpt-5": "$x$ dollars"})
    for plot in PLOTS:
        for split in ((None, "surface") if plot in (plots.tokens_by_model, plots.cost_by_model) else (None,)):
            fig = plot(renamed) if split is None else plot(renamed, split=split)
            fig.savefig(io.BytesIO(), format="png")  # drawn to pixels: where mathtext would be parsed
            if plot is not plots.cumulative_cost:
                labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
                assert {MATHTEXT, "$x$ dollars"} <= set(labels), (plot.__name__, labels)
                assert not any(t.get_parse_math() for t in fig.axes[0].get_yticklabels())
    unpriced = texts(plots.cumulative_cost(renamed.where(model=MATHTEXT)))
    assert any(f"({MATHTEXT})" in text for text in unpriced), unpriced


def test_into_given_axes(tables):
    fig = matplotlib.figure.Figure(figsize=(8, 8), layout="constrained")
    axes = fig.subplots(4, 1)
    for ax, plot in zip(axes,
                        (plots.tokens_by_model, plots.cost_by_model, plots.latency_by_model, plots.cumulative_cost)):
        assert plot(tables, ax=ax) is fig
    drawn(fig)
    assert all(ax.get_legend() is not None for ax in axes)


def test_conformance_tree(conformance):
    "The reference runner's fixture: no prices, no budget."
    fixture = load(conformance)
    check(fixture, "conformance")
    assert texts(drawn(plots.cost_by_model(fixture))).count(UNPRICED) == fixture.attempts.model.nunique()
    assert any("no budget set" in t for t in texts(drawn(plots.cumulative_cost(fixture))))


def test_colours_come_from_the_vocabularies(tables):
    from modelrecord.plots import COST_COLOURS, ENDING_COLOURS, TOKEN_COLOURS
    rgba = matplotlib.colors.to_rgba
    fig = plots.tokens_by_model(tables)
    assert {p.get_facecolor() for p in fig.axes[0].patches} == {rgba(c) for c in TOKEN_COLOURS.values()}
    fig = plots.cost_by_model(tables)
    assert {p.get_facecolor() for p in fig.axes[0].patches} == {rgba(c) for c in COST_COLOURS.values()}
    own, apart = plots.endings_by_model(tables).axes
    assert {p.get_facecolor() for p in own.patches} == {rgba(ENDING_COLOURS[e]) for e in MODEL_ENDINGS}
    assert {p.get_facecolor() for p in apart.patches} == {rgba(ENDING_COLOURS[e]) for e in NOT_MODEL_ENDINGS}


def _backend_in_subprocess(env: dict, code: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")} | env
    script = code + "import modelrecord.plots, matplotlib; print(matplotlib.get_backend())"
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_backend_chosen_only_when_none_was(tmp_path):
    assert _backend_in_subprocess({"MPLCONFIGDIR": str(tmp_path)}).lower() == "agg"
    assert _backend_in_subprocess({"MPLBACKEND": "svg", "MPLCONFIGDIR": str(tmp_path)}).lower() == "svg"


def test_the_analysis_layer_does_not_import_matplotlib():
    script = ("import sys, modelrecord.record, modelrecord.reader, modelrecord.writer, modelrecord.sample, "
              "modelrecord.tables, modelrecord.summary; print('matplotlib' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip() == "False"
