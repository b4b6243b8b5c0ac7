"""The explorer's widgets, headless: set a widget's value as a person would (a click on a grid row is its
`selected_rows`), then read what is displayed."""
import html
import json
import re
import shutil
from pathlib import Path

import msgspec
import pytest

from modelrecord import explore, tables as tables_module
from modelrecord.explore import ALL, PLOTS, TABS, Explorer, add_tab
from modelrecord.formatting import usd_column, usd_text
from modelrecord.reader import ShardError
from modelrecord.record import (Attempt, Block, Call, ENDED_MALFORMED, ENDINGS, Run, Turn, TURN_OK, Usage, Verify, encode)
from modelrecord.sample import example_tree, write_tree
from modelrecord.tables import load
from modelrecord.transcript import TRUNCATED_BADGE as TRUNCATED

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def tables():
    return load(example_tree(), content=True)


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    "One explorer of the example tree, first read through an empty load cache, shared by the tests that put its filters back."
    with pytest.MonkeyPatch.context() as patch:  # an empty cache: its first read reads the shards, and shows its progress
        patch.setenv("MODELRECORD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return Explorer()


@pytest.fixture
def fresh(explorer):
    "The shared explorer, with every filter cleared and the Overview in view, before and after the test."
    def reset():
        explorer.clear()
        explorer.show_tab("Overview")
    reset()
    yield explorer
    reset()


def grid_rows(explorer):
    "The attempts in the grid, once the Attempts tab is in view: their rows of `attempt_totals`."
    explorer.show_tab("Attempts")
    return explorer.shown


def grid_texts(explorer) -> str:
    "What the grid widget sends the browser (its state, less its script and stylesheet, and every row as a page), as one string."
    state = explorer.grid.get_state()
    sent = {name: value for name, value in state.items() if name not in ("_esm", "_css")}
    return json.dumps({**sent, "page": explorer.grid.page(0, -1)}, default=str)


def click_row(explorer, key):
    "Click the grid row of the attempt `key` (it must be among the filtered attempts)."
    rows = grid_rows(explorer)
    explorer.grid.selected_rows = [list(rows.index).index(key)]


def write(path: Path, lines) -> Path:
    "Write `lines` (records) as the shard at `path`."
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode(line) + b"\n" for line in lines))
    return path


# ------------------------------------------------------------------------------------------------
# Loading

def test_loads_the_example_tree_with_progress(fresh, tables):
    assert fresh.error is None
    assert "Read 4 shards" in fresh.status.value and f"{len(tables.attempts)} attempts" in fresh.status.value
    assert fresh.progress.value == fresh.progress.max > 1 and fresh.progress.bar_style == "success"
    assert fresh.path.value == str(example_tree())
    assert fresh.tabs.titles == ("Overview", "Attempts", "Conversation", "Score", "Compare") and fresh.tabs.selected_index == 0
    assert sum(int(label.rsplit("(", 1)[1].rstrip(")").replace(",", "")) for label, _ in fresh.endings.options) == len(tables.attempts)
    assert [value for _, value in fresh.endings.options] == list(ENDINGS)
    for name in PLOTS: assert fresh.plots[name].value.startswith('<img class="mr-plot"'), name
    for model in tables.attempts.model.cat.categories: assert html.escape(model) in fresh.summary.value
    assert "Click a row" in fresh.conversation.value or fresh.opened is not None
    assert len(grid_rows(fresh)) == len(tables.attempts) and f"{len(tables.attempts)} attempts" in fresh.grid_label.value


def test_displays_as_one_widget(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id


def test_filter_choices_are_the_values_of_the_tree(fresh, tables):
    for name, column in Explorer.FILTERS:
        offered = [value for _, value in fresh.filters[name].options]
        assert offered == [ALL] + sorted(tables.attempts[column].dropna().unique().astype(str)), name


@pytest.mark.parametrize("refused", [
    ('{"schema":1,"type":"run","run":{"run_id":"r","repeat":1}}\n\n'
     '{"schema":1,"type":"turn","turn":{"attempt":"a","index":1,"try":1,"status":"fine"}}\n', 3, "turn.status"),
    ('{"schema":1,"type":"run","run":{"run_id":"r","repeat":1}}\n{"schema":1,"type":"run",', 2, None),
])
def test_a_refused_tree_is_a_message_not_a_traceback(tmp_path, refused):
    "Strict (salvage=False): the whole tree is refused, the first bad line named."
    text, line, field = refused
    bad = tmp_path / "bad" / "modeleval-x.jsonl"
    bad.parent.mkdir()
    bad.write_text(text)
    explorer = Explorer(example_tree(), salvage=False)
    shown = explorer.tables
    explorer.path.value = str(bad.parent)
    explorer.load_button.click()
    assert isinstance(explorer.error, ShardError)
    assert (explorer.error.path, explorer.error.line, explorer.error.field) == (str(bad), line, field)
    status = explorer.status.value
    assert "Refused" in status and html.escape(str(bad)) in status and f"line {line}" in status
    if field: assert f"field <code>{field}</code>" in status
    assert "Traceback" not in status and "Still showing" in status
    assert explorer.tables is shown and explorer.progress.bar_style == "danger"
    bad.write_text(text.rsplit("\n", 2)[0] + "\n")  # the bad line removed: the same tree now loads
    explorer.load_button.click()
    assert explorer.error is None and len(explorer.tables.runs) == 1


def test_a_path_without_shards_says_so(tmp_path):
    explorer = Explorer(tmp_path / "missing")
    assert explorer.tables is None and "does not exist" in explorer.status.value and "Nothing is loaded" in explorer.status.value
    explorer.load(tmp_path)
    assert "holds no shard" in explorer.status.value
    explorer.load(example_tree())
    assert explorer.error is None and explorer.tables is not None


# ------------------------------------------------------------------------------------------------
# Filters

@pytest.mark.parametrize("name,column", Explorer.FILTERS)
def test_each_filter_narrows_everything(fresh, tables, name, column):
    value = sorted(tables.attempts[column].dropna().unique().astype(str))[-1]
    plots_before, summary_before = {n: v.value for n, v in fresh.plots.items()}, fresh.summary.value
    fresh.filters[name].value = value
    expected = tables.where(**{column: value})
    assert len(fresh.filtered.attempts) == len(expected.attempts)
    assert len(fresh.filtered.turns) == len(expected.turns)
    assert fresh.summary.value != summary_before
    assert any(fresh.plots[n].value != plots_before[n] for n in PLOTS)
    rows = grid_rows(fresh)
    assert list(rows.index) == list(expected.attempts.index)
    if name != "run": assert set(rows[column].astype(str)) == {value}


def test_endings_are_a_multiple_choice_that_narrows_everything(fresh, tables):
    before = fresh.plots["endings_by_model"].value
    fresh.endings.value = ("malformed", "over_budget")
    kept = tables.attempts.ended_by.isin(["malformed", "over_budget"])
    assert len(fresh.filtered.attempts) == int(kept.sum())
    assert set(fresh.filtered.attempts.ended_by) == {"malformed", "over_budget"}
    assert fresh.plots["endings_by_model"].value != before
    assert set(grid_rows(fresh).ended_by) == {"malformed", "over_budget"} and len(fresh.shown) == int(kept.sum())


def test_ending_counts_follow_the_other_filters(fresh, tables):
    fresh.endings.value = ("completed",)
    fresh.surface.value = "meta"
    counts = tables.attempts[tables.attempts.surface == "meta"].ended_by.value_counts()
    assert [label for label, _ in fresh.endings.options] == [f"{e} ({counts.get(e, 0):,})" for e in ENDINGS]
    assert fresh.endings.value == ("completed",)  # relabelling keeps the choice
    assert len(fresh.filtered.attempts) == counts["completed"]


def test_filters_combine_and_clear(fresh, tables):
    fresh.model.value, fresh.surface.value, fresh.endings.value = "openai:gpt-5", "dynamic", ("completed",)
    expected = tables.where(model="openai:gpt-5", surface="dynamic", ended_by=["completed"])
    assert len(fresh.filtered.attempts) == len(expected.attempts) > 0
    fresh.clear_button.click()
    assert (fresh.model.value, fresh.surface.value, fresh.endings.value) == (ALL, ALL, ())
    assert len(fresh.filtered.attempts) == len(tables.attempts)


def test_a_filter_that_keeps_nothing(fresh):
    fresh.model.value, fresh.endings.value = "fake:perfect", ("malformed",)
    assert len(fresh.filtered.attempts) == 0
    assert "No attempt matches" in fresh.summary.value
    assert len(grid_rows(fresh)) == 0 and "0 attempts" in fresh.grid_label.value
    for name in PLOTS: assert "<img" in fresh.plots[name].value or "cannot be drawn" in fresh.plots[name].value


# ------------------------------------------------------------------------------------------------
# The attempts table

def test_the_grid_sorts_as_the_values_do_and_shows_one_format_per_column(fresh, tables):
    rows = grid_rows(fresh)
    frame = fresh.grid.df  # what the grid holds: each cell's rank in its column
    assert list(frame.columns)[:5] == ["attempt", "case", "model", "surface", "ended by"]
    for head, column in (("cost", "cost"), ("output", "output"), ("turns", "turns"), ("attempt", "attempt")):
        by_rank = frame[head].sort_values(kind="stable").index
        ordered = rows[column][by_rank]  # sorting the ranks sorts the values, a missing cost (rank -1) first
        assert ordered.dropna().is_monotonic_increasing and not ordered.iloc[:int(ordered.isna().sum())].notna().any(), head
    shown = grid_texts(fresh)
    for cost in set(usd_column(rows.cost)): assert json.dumps(cost)[1:-1] in shown
    assert f"{rows.output.max():,}" in shown  # counts with separators
    fresh.model.value = "fake:perfect"  # unpriced: no cost, and it ranks below every price
    assert (grid_rows(fresh).cost.isna().all(), set(fresh.grid.df.cost)) == (True, {-1})
    assert set(fresh.grid.df.model) == {0}


def test_the_grid_sends_the_browser_a_page_sorted_and_searched_in_python_not_the_rows(fresh, monkeypatch):
    rows = grid_rows(fresh)
    args = fresh.grid.get_state()["_dt_args"]
    assert json.loads(args["data_json"]) == [] and args["serverSide"] is True  # the browser holds no rows of its own
    sent = []
    monkeypatch.setattr(fresh.grid, "send", sent.append)
    heads = list(fresh.grid.df.columns)
    explore._answer(fresh.grid, {"page": {"view": "v", "draw": 3, "start": 25, "length": 25, "search": "",
                                          "order": [[heads.index("output"), "desc"]]}})
    page = sent[-1]["page"]  # the second page, dearest output first
    assert (page["draw"], page["view"], page["recordsTotal"], page["recordsFiltered"]) == (3, "v", len(rows), len(rows))
    assert [rows.output.iloc[at] for at in page["positions"]] == sorted(rows.output, reverse=True)[25:50]
    assert [row[heads.index("output")] for row in page["data"]] == [f"{rows.output.iloc[at]:,}" for at in page["positions"]]
    found = fresh.grid.page(0, -1, [], 'MALFORMED "openai:gpt-5"')  # every word, case ignored, in the texts shown
    kept = rows[(rows.ended_by == "malformed") & (rows.model == "openai:gpt-5")]
    assert found["recordsFiltered"] == len(kept) > 0 and [rows.index[at] for at in found["positions"]] == list(kept.index)
    assert fresh.grid.page(0, 10, [], "nothing-has-this")["data"] == []


def test_a_tab_out_of_view_is_drawn_when_it_comes_into_view(fresh, tables):
    grid_rows(fresh)
    fresh.show_tab("Overview")
    fresh.endings.value = ("no_tool_call",)
    assert len(fresh.shown) == len(tables.attempts)  # the grid, out of view, is not redrawn yet
    assert len(grid_rows(fresh)) == int((tables.attempts.ended_by == "no_tool_call").sum())


def test_a_click_on_a_row_opens_its_conversation(fresh, tables):
    fresh.endings.value = ("no_tool_call",)
    rows = grid_rows(fresh)
    fresh.grid.selected_rows = [2]
    assert fresh.opened == rows.index[2] and fresh.tabs.titles[fresh.tabs.selected_index] == "Conversation"
    assert html.escape(tables.attempts.attempt[rows.index[2]]) in fresh.conversation.value
    assert fresh.grid.selected_rows == [2]
    fresh.model.value = str(tables.attempts.model[rows.index[2]])
    rows = grid_rows(fresh)  # narrowed: the attempt opened is still in it, and its row still selected
    assert fresh.grid.selected_rows == [list(rows.index).index(fresh.opened)]


def test_a_tab_added_shows_in_explorers_made_after(tables):
    import ipywidgets as widgets
    drawn = []
    add_tab("Counted", lambda explorer: widgets.HTML("counted"), lambda explorer: drawn.append(len(explorer.filtered.attempts)))
    try:
        explorer = Explorer()
        assert explorer.tabs.titles[-1] == "Counted"
        explorer.show_tab("Counted")
        explorer.surface.value = "meta"
        assert drawn == [len(tables.attempts), int((tables.attempts.surface == "meta").sum())]
    finally:
        TABS[:] = [tab for tab in TABS if tab.title != "Counted"]
        explorer.close()



def counting(monkeypatch, module, name: str) -> list:
    "Replace `module.name` by a function that does the same and counts its calls in the list returned."
    calls, original = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    return calls


@pytest.fixture
def keyed(tables):
    "An explorer of the example tree scored against its key, with a tab `Counted` that counts its draws."
    import ipywidgets as widgets
    from modelrecord.sample import example_key
    counted = []
    add_tab("Counted", lambda explorer: widgets.HTML("counted"), lambda explorer: counted.append(len(explorer.filtered.attempts)))
    explorer = Explorer(key=example_key())
    explorer.counted = counted
    yield explorer
    TABS[:] = [tab for tab in TABS if tab.title != "Counted"]
    explorer.close()


def test_a_filter_change_redraws_only_the_tab_in_view(keyed, monkeypatch):
    import modelrecord.explore as explore
    import modelrecord.score_tab as score_tab
    grids, scores, summaries = (counting(monkeypatch, module, name) for module, name in
                                ((explore, "_grid_data"), (score_tab, "_score_html"), (explore, "_summary_html")))
    models = [value for _, value in keyed.model.options][1:3]
    for model in models: keyed.model.value = model  # the Overview in view: only it is drawn
    assert (len(summaries), grids, scores, keyed.counted) == (2, [], [], [])
    keyed.show_tab("Counted")  # a hidden tab is drawn when it is opened, for the filters of now
    keyed.model.value = models[0]
    assert keyed.counted == [int((keyed.tables.attempts.model == model).sum()) for model in models[::-1]]
    assert (len(summaries), grids, scores) == (2, [], [])


@pytest.mark.parametrize("title, module, name", [("Overview", "explore", "_summary_html"),
                                                 ("Attempts", "explore", "_grid_data"),
                                                 ("Score", "score_tab", "_score_html")])
def test_each_tab_is_drawn_once_per_set_of_filters_until_the_tree_reloads(keyed, monkeypatch, title, module, name):
    import importlib
    calls = counting(monkeypatch, importlib.import_module(f"modelrecord.{module}"), name)
    keyed.show_tab(title)
    drawn = getattr(keyed, {"Overview": "summary", "Attempts": "grid_label", "Score": "score_view"}[title]).value
    models = [value for _, value in keyed.model.options][1:3]
    for model in [*models, *models, ALL]: keyed.model.value = model  # each selection seen twice
    assert len(calls) == 3 - (title == "Overview")  # all, and each model once (the Overview drew `all` at load)
    assert getattr(keyed, {"Overview": "summary", "Attempts": "grid_label", "Score": "score_view"}[title]).value == drawn
    keyed.load()  # a new load draws afresh
    assert len(calls) == 4 - (title == "Overview")


TAB_ORDER = ["Overview", "Attempts", "Conversation", "Score", "Compare"]


@pytest.mark.parametrize("first", ["", "import modelrecord.compare_tab", "import modelrecord.score_tab",
                                   "import ipywidgets; from modelrecord.explore import add_tab; add_tab('Mine', lambda e: ipywidgets.HTML())"])
def test_the_default_tabs_show_in_their_order_whatever_was_imported_first(first):
    "Importing the explorer imports no tab module; the first explorer made imports them: five tabs, in order, others after."
    import subprocess
    import sys
    code = (f"import sys\n{first}\nfrom modelrecord.explore import Explorer\n"
            "print(sorted(m for m in sys.modules if m.endswith('_tab')))\n"
            "print(list(Explorer(load=False).tabs.titles))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.splitlines()
    assert eval(out[-1]) == TAB_ORDER + (["Mine"] if "Mine" in first else [])
    if not first: assert eval(out[-2]) == []  # `from modelrecord.explore import Explorer` imported no tab module


def test_a_filter_on_a_column_the_tree_lacks_is_hidden(tables):
    class Scored(Explorer):
        FILTERS = Explorer.FILTERS + (("outcome", "outcome"),)
    explorer = Scored()
    assert explorer.filters["outcome"].layout.display == "none" and explorer.filters["model"].layout.display is None
    assert len(explorer.filtered.attempts) == len(tables.attempts)
    explorer.close()


# ------------------------------------------------------------------------------------------------
# The conversation

def chosen(explorer, key) -> str:
    "The conversation the explorer shows once the row of the attempt `key` is clicked, found by filters."
    explorer.case.value = str(explorer.tables.attempts.case[key])
    explorer.model.value = str(explorer.tables.attempts.model[key])
    click_row(explorer, key)
    assert explorer.opened == key
    return explorer.conversation.value


def opened(explorer, key) -> str:
    "The conversation the explorer shows for the attempt `key`."
    explorer.open(key)
    return explorer.conversation.value


def test_opening_an_attempt_shows_its_turns_blocks_and_calls(fresh, tables):
    calls = tables.calls
    key = int(calls[calls.requested_action.notna() & (calls.outcome == "ok")].attempt_key.iloc[0])
    page = chosen(fresh, key)
    attempt = tables.attempts.loc[key]
    assert html.escape(attempt.attempt) in page and f">{attempt.ended_by}<" in page
    assert "<h4>Stimulus</h4>" in page and html.escape(attempt.stimulus) in page
    turns = tables.turns[tables.turns.attempt_key == key]
    assert page.count('class="mr-turn"') == len(turns)
    for cost in turns.cost: assert usd_text(cost) in page
    for tokens in turns.input: assert f"{tokens:,} input" in page
    for call in calls[calls.attempt_key == key].itertuples():
        requested = call.requested_action if isinstance(call.requested_action, str) else None
        dispatched = call.dispatched_action if isinstance(call.dispatched_action, str) else None
        assert f"<b>call {call.call}</b>" in page
        if requested is None and dispatched is None: assert "no action requested or dispatched" in page  # a lookup
        else:
            assert (f"requested <code>{html.escape(requested)}</code>" if requested else "no action requested") in page
            assert f"dispatched <code>{html.escape(dispatched or 'nothing')}" in page
    assert "requested <code>-</code>" not in page and " 1 API requests" not in page
    blocks = tables.blocks[(tables.blocks.attempt_key == key) & (tables.blocks.kind == "tool_call")]
    for arguments in blocks.arguments.dropna():
        assert html.escape(json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)) in page


def test_thinking_is_folded(fresh, tables):
    key = int(tables.blocks[tables.blocks.kind == "thinking"].attempt_key.iloc[0])
    page = opened(fresh, key)
    assert '<details class="mr-block"><summary>thinking' in page


@pytest.mark.parametrize("flag", ["result_truncated", "text_truncated"])
def test_cut_results_and_texts_are_marked(fresh, tables, flag):
    key = int(tables.calls[tables.calls[flag]].attempt_key.iloc[0])
    page = opened(fresh, key)
    assert TRUNCATED in page


def test_refused_calls_retries_and_failed_verifies_show(fresh, tables):
    refused = int(tables.calls[tables.calls.outcome.astype(str).str.startswith("refused:")].attempt_key.iloc[0])
    assert ">refused:" in opened(fresh, refused)
    retried = tables.turns[tables.turns["try"] > 1].iloc[0]
    assert f"<b>turn {retried.turn}</b> try {retried['try']}" in opened(fresh, int(retried.attempt_key))
    failed = tables.verifies[~tables.verifies.passed].iloc[0]
    page = opened(fresh, int(failed.attempt_key))
    assert ">failed<" in page and html.escape(failed.detail) in page


def test_a_malformed_call_shows_what_the_model_wrote(fresh, tables):
    block = tables.blocks[tables.blocks.raw.notna()].iloc[0]
    page = opened(fresh, int(block.attempt_key))
    assert "not parsed" in page and html.escape(block.raw) in page


def test_an_attempt_filtered_out_is_closed(fresh, tables):
    key = int(tables.attempts.index[tables.attempts.ended_by == "completed"][0])
    chosen(fresh, key)
    fresh.endings.value = ("completed", "skipped")
    assert fresh.opened == key  # still among the attempts kept: it stays open
    fresh.endings.value = ("malformed",)
    assert fresh.opened is None and "Click a row" in fresh.conversation.value


def test_what_a_shard_says_is_escaped(tmp_path):
    sneaky = "<script>alert(1)</script>"
    write(tmp_path / "modeleval-x.jsonl", [
        Run(run_id="r", repeat=1),
        Attempt(id=sneaky, case="<c>", model="<m>", session="<s>", repeat=1, ended_by=ENDED_MALFORMED, reason=sneaky,
                stimulus=sneaky),
        Turn(attempt=sneaky, index=1, try_=1, status=TURN_OK, usage=Usage(input=1, output=1), detail=sneaky,
             blocks=[Block(kind="text", text=sneaky), Block(kind="thinking", text=sneaky),
                     Block(kind="tool_call", tool=sneaky, call_id=sneaky, arguments=msgspec.Raw(b'{"q":"<script>"}'), raw=sneaky)]),
        Call(attempt=sneaky, turn=1, index=1, tool=sneaky, outcome="refused:" + sneaky, requested_action=sneaky,
             dispatched_action=sneaky, refusal_reason=sneaky, result=msgspec.Raw(b'"<script>alert(1)</script>"'), text=sneaky),
        Verify(attempt=sneaky, name=sneaky, passed=False, detail=sneaky)])
    explorer = Explorer(tmp_path)
    click_row(explorer, 0)
    for shown in (explorer.conversation.value, grid_texts(explorer), explorer.summary.value, explorer.status.value):
        assert "<script" not in shown and "<m>" not in shown and "<c>" not in shown
    assert explorer.conversation.value.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 10


# ------------------------------------------------------------------------------------------------
# Refresh

@pytest.fixture
def growing(tmp_path):
    "A tree of four shards, like one a run is still writing."
    return write_tree(tmp_path / "run", attempts=40, seed=5)


def shard_list(tree: Path) -> list:
    return sorted(tree.rglob("modeleval-*.jsonl"))


def test_refresh_reads_only_new_and_changed_shards(growing, monkeypatch):
    explorer = Explorer(growing)
    explorer.model.value = "openai:gpt-5"
    first, second, third, fourth = shard_list(growing)
    grown_by = fourth.read_bytes().split(b"\n", 1)[1]  # another shard's attempts, without its run line
    first.write_bytes(first.read_bytes() + grown_by)
    shutil.copy(third, growing / "ee" / "modeleval-new.jsonl")
    second.unlink()
    read = []
    real = tables_module.batch_tables  # what reads shards, under load's cache
    monkeypatch.setattr(tables_module, "batch_tables", lambda paths, *a, **k: read.extend(map(Path, paths)) or real(paths, *a, **k))
    explorer.refresh_button.click()
    assert sorted(read) == sorted([first, growing / "ee" / "modeleval-new.jsonl"])
    changes = explorer.tree.changes
    assert changes["changed"] == [first.relative_to(growing).as_posix()]
    assert changes["new"] == ["ee/modeleval-new.jsonl"] and changes["removed"] == [second.relative_to(growing).as_posix()]
    assert changes["unchanged"] == 2
    assert "Refreshed: 1 new, 1 changed, 1 removed, 2 unchanged" in explorer.status.value
    expected = load(growing)
    for name, frame in expected.items():
        assert len(explorer.tables[name]) == len(frame), name
    assert (explorer.tables.attempts.attempt.tolist(), explorer.tables.turns.cost.sum()) == \
        (expected.attempts.attempt.tolist(), pytest.approx(expected.turns.cost.sum()))
    assert explorer.model.value == "openai:gpt-5"  # the filter survives the refresh
    assert len(explorer.filtered.attempts) == int((expected.attempts.model == "openai:gpt-5").sum())
    read.clear()
    explorer.refresh_button.click()
    assert read == [] and explorer.tree.changes["unchanged"] == 4


def test_a_torn_line_keeps_what_was_shown_until_it_is_whole(growing):
    "Strict (salvage=False): a refresh that meets a torn line keeps the tables shown before."
    explorer = Explorer(growing, salvage=False)
    shown, shard = explorer.tables, shard_list(growing)[0]
    line = shard.read_bytes().split(b"\n")[1]
    lines = shard.read_bytes().count(b"\n")
    with shard.open("ab") as file: file.write(line[:40])  # a writer halfway through a line
    explorer.refresh()
    assert explorer.tables is shown and isinstance(explorer.error, ShardError)
    assert f"line {lines + 1}" in explorer.status.value and html.escape(str(shard)) in explorer.status.value
    with shard.open("ab") as file: file.write(line[40:] + b"\n")  # the line finished
    explorer.refresh()
    assert explorer.error is None and explorer.tree.changes["changed"] == [shard.relative_to(growing).as_posix()]


def test_the_open_attempt_stays_open_across_a_refresh_and_shows_its_new_lines(growing):
    explorer = Explorer(growing)
    first, second = shard_list(growing)[:2]
    key = int(explorer.tables.attempts.index[explorer.tables.attempts.shard == second.relative_to(growing).as_posix()][0])
    name = explorer.tables.attempts.attempt[key]
    explorer.open(key)
    turns_before = explorer.conversation.value.count('class="mr-turn"')
    line = encode(Turn(attempt=name, index=99, try_=1, status=TURN_OK, usage=Usage(input=7, output=3))) + b"\n"
    second.write_bytes(second.read_bytes() + line)  # the run adds a turn to the open attempt
    first.unlink()  # and a shard before it goes: every key after it moves
    explorer.refresh()
    assert explorer.opened != key
    assert explorer.tables.attempts.loc[explorer.opened, ["shard", "attempt"]].tolist() == [second.relative_to(growing).as_posix(), name]
    assert explorer.conversation.value.count('class="mr-turn"') == turns_before + 1 and "<b>turn 99</b>" in explorer.conversation.value
    explorer.load()  # a load starts afresh: nothing open
    assert explorer.opened is None and "Click a row" in explorer.conversation.value


def test_close_closes_every_widget():
    explorer = Explorer(load=False)
    some = [explorer.widget, explorer.endings, explorer.plots["cost_by_model"], explorer.conversation]
    assert all(widget.comm is not None for widget in some)
    explorer.close()
    assert all(widget.comm is None for widget in some)


def test_refresh_with_another_path_loads_it(growing):
    explorer = Explorer(growing)
    explorer.path.value = str(example_tree())
    explorer.refresh()
    assert explorer.tree.path == example_tree() and "Read 4 shards" in explorer.status.value


# ------------------------------------------------------------------------------------------------
# Salvage: a tree with unreadable lines loads the rest, with a banner above the tabs

BAD_LINES = [b'{"schema":1,"type":"attempt","attempt":{"id":"a","case":"c","model":"m","repeat":1,"ended_by":"done"}}',
             b'{"schema":1,"type":"turn","turn":{"attempt":"a","index":1,"try":1,"status":"fine"}}',
             b'not json', b'{"schema":1,"type":"nothing"}', b'[1, 2]', b'{"schema":99,"type":"run"}']


@pytest.fixture
def salvaged(tmp_path):
    "A copy of the example tree, one shard of it ending with six bad lines and a torn one: `(tree, shard)`."
    tree = tmp_path / "salvaged"
    shutil.copytree(example_tree(), tree)
    shard = shard_list(tree)[0]
    with shard.open("ab") as file: file.write(b"\n".join(BAD_LINES) + b'\n{"schema":1,"type":"run"')
    return tree, shard


def test_a_tree_with_bad_lines_loads_the_rest_with_a_banner(salvaged, tables):
    tree, shard = salvaged
    explorer = Explorer(tree)
    expected = load(tree, errors="collect").problems
    assert explorer.error is None and len(explorer.tables.attempts) == len(tables.attempts)
    assert explorer.tables.problems.equals(expected) and len(expected) == 7
    banner = explorer.banner.value
    assert explorer.banner.layout.display is None and explorer.progress.bar_style == "warning"
    assert "<b>7 lines could not be read</b> (in 1 shard)" in banner and "2 more</summary>" in banner
    relative = shard.relative_to(tree).as_posix()
    assert str(tree) not in banner and f"<code>{relative}</code>, line" in banner
    listed, folded = banner.split("<details>")
    lines = shard.read_bytes().count(b"\n")  # the torn line is the one after the last newline
    for problem in expected.itertuples():
        where = f"<code>{relative}</code>, line {problem.line}"
        assert where in (listed if problem.Index < 5 else folded), where
        assert html.escape(problem.why) in banner
    assert f"line {lines + 1}" in folded and "field <code>attempt.ended_by</code>" in listed
    assert explorer.banner in explorer.widget.children and \
        list(explorer.widget.children).index(explorer.banner) < list(explorer.widget.children).index(explorer.tabs)
    key = int(explorer.tables.attempts.index[explorer.tables.attempts.shard == relative][0])
    explorer.open(key)  # an attempt of the salvaged shard reads
    assert explorer.tables.attempts.attempt[key] in explorer.conversation.value and "Refused" not in explorer.conversation.value
    explorer.close()


def test_the_banner_goes_once_the_bad_lines_do(salvaged):
    tree, shard = salvaged
    explorer = Explorer(tree)
    assert explorer.banner.layout.display is None
    shard.write_bytes(shard.read_bytes().split(BAD_LINES[0])[0])  # the bad lines removed
    explorer.refresh()
    assert explorer.banner.layout.display == "none" and explorer.banner.value == "" and explorer.progress.bar_style == "success"
    assert explorer.tree.changes["changed"] == [shard.relative_to(tree).as_posix()]
    explorer.close()


def test_a_torn_line_of_a_growing_tree_is_in_the_banner_until_it_is_whole(growing):
    explorer = Explorer(growing)
    shard = shard_list(growing)[0]
    line = shard.read_bytes().split(b"\n")[1]
    lines = shard.read_bytes().count(b"\n")
    with shard.open("ab") as file: file.write(line[:40])  # a writer halfway through a line
    explorer.refresh()
    assert explorer.error is None and f"line {lines + 1}" in explorer.banner.value and "1 line could not be read" in explorer.banner.value
    with shard.open("ab") as file: file.write(line[40:] + b"\n")  # the line finished
    explorer.refresh()
    assert explorer.banner.layout.display == "none" and len(explorer.tables.problems) == 0
    explorer.close()


def test_the_served_page_salvages_too(salvaged):
    from modelrecord.serve import PATH_ENV, page_explorer
    tree, _ = salvaged
    explorer = page_explorer({PATH_ENV: str(tree)})
    assert explorer.salvage and explorer.error is None and "7 lines could not be read" in explorer.banner.value
    explorer.close()


# ------------------------------------------------------------------------------------------------
# Compare: two models, or this tree against another

def p_text(p: float) -> str:
    "A p-value as the Compare tab writes it."
    return "< 0.001" if p < 0.001 else f"{p:.2g}"


def links(view: str) -> list:
    "The `data-open` values of the conversation links in a Compare view, in order."
    return [part.split('"', 1)[0] for part in view.split('data-open="')[1:]]


SONNET, PERFECT, GPT = "anthropic:claude-sonnet-4;effort=high", "fake:perfect", "openai:gpt-5"


def test_the_compare_tab_compares_two_models(fresh, tables):
    from modelrecord.compare import attempt_successes, compare_models
    fresh.show_tab("Compare")
    models = sorted(tables.attempts.model.astype(str).unique())
    offered = tuple((name, name) for name in models)  # (label, value): plain names are their own labels
    assert (fresh.compare_a.options, fresh.compare_a.value, fresh.compare_b.value) == (offered, models[0], models[1])
    fresh.compare_a.value, fresh.compare_b.value = SONNET, PERFECT
    expected = compare_models(tables, SONNET, PERFECT)
    view = fresh.compare_view.value
    assert f"p = {p_text(expected.p_value)}" in view and f"test: <b>{expected.test}</b>" in view
    assert f"{len(expected.items)} items" in view and "success = completed" in view
    table = view.split('class="mr-grid mr-disagreements"')[1]
    assert table.count("<tr>") - 1 == len(expected.disagreements)
    shown = [float(re.findall(r"<td>([+-][0-9.]+)</td>", row)[0]) for row in table.split("<tr>")[2:]]  # A - B, in points
    assert [abs(x) for x in shown] == sorted((abs(x) for x in shown), reverse=True)  # most discordant first
    (case, surface), _ = next(expected.disagreements.iterrows())
    rows = attempt_successes(tables)
    wanted = [f"this:{key}" for model in (SONNET, PERFECT)
              for key in rows.index[(rows.model == model) & (rows.case == case) & (rows.surface == surface)]]
    assert links(view)[:len(wanted)] == wanted  # the first item's conversations, A's then B's
    fresh.compare_b.value = SONNET
    assert "Choose two different models" in fresh.compare_view.value


def test_a_click_on_a_disagreeing_case_opens_its_conversation(fresh, tables):
    fresh.show_tab("Compare")
    fresh.compare_a.value, fresh.compare_b.value = SONNET, PERFECT
    first = links(fresh.compare_view.value)[0]
    for _ in range(2):  # the same link twice: each click opens it
        fresh.show_tab("Compare")
        fresh.compare_view.clicked = first
        key = int(first.split(":")[1])
        assert fresh.opened == key and fresh.compare_view.clicked == ""
        assert fresh.tabs.titles[fresh.tabs.selected_index] == "Conversation"
        assert tables.attempts.attempt[key] in fresh.conversation.value


def test_compare_follows_the_filter_bar(fresh, tables):
    from modelrecord.compare import compare_models
    fresh.show_tab("Compare")
    fresh.compare_a.value, fresh.compare_b.value = SONNET, GPT
    fresh.surface.value = "meta"
    expected = compare_models(tables.where(surface="meta"), SONNET, GPT)
    assert f"p = {p_text(expected.p_value)}" in fresh.compare_view.value
    assert (fresh.compare_a.value, fresh.compare_b.value) == (SONNET, GPT)  # the choice survives the filter
    fresh.endings.value = ("completed",)
    assert "They agree on every item" in fresh.compare_view.value  # only completed attempts: every one a success
    fresh.model.value = GPT
    assert "attempts of 1 model; comparing needs two" in fresh.compare_view.value


def test_compare_with_a_key_counts_clean_verdicts(tables):
    from modelrecord.compare import compare_models
    from modelrecord.sample import example_key
    explorer = Explorer(key=example_key())
    explorer.show_tab("Compare")
    explorer.compare_a.value, explorer.compare_b.value = SONNET, GPT
    expected = compare_models(explorer.scores, SONNET, GPT)  # the verdict `clean`, counted as the score table counts
    completion = compare_models(tables, SONNET, GPT)
    view = explorer.compare_view.value
    assert "success = a clean verdict" in view and f"p = {p_text(expected.p_value)}" in view
    assert p_text(expected.p_value) != p_text(completion.p_value) and f"p = {p_text(completion.p_value)}" not in view  # not completion
    assert view.split('class="mr-grid mr-disagreements"')[1].count("<tr>") - 1 == len(expected.disagreements)
    explorer.close()


def test_compare_this_tree_against_another(tmp_path):
    from modelrecord.compare import compare_runs
    from modelrecord.sample import example_runs
    before, after = example_runs()
    explorer = Explorer(after)
    explorer.show_tab("Compare")
    explorer.compare_mode.value = "trees"
    assert "Name a second tree" in explorer.compare_view.value
    explorer.compare_path.value = str(before)
    explorer.compare_button.click()
    expected = compare_runs(load(before), load(after))
    view = explorer.compare_view.value
    assert view.count(">regression</span>") == len(expected.regressions) == 1
    assert view.count('class="mr-p-value"') == len(expected.models)
    for model, row in expected.models.iterrows():
        assert f'{html.escape(model)}</td><td class="mr-l"><span' in view  # its verdict next to it
        assert f'</td><td>{row.before_successes:,}/{row.before_attempts:,}</td>' in view
        assert f'<td class="mr-p-value">{p_text(row.p_value)}</td><td>{p_text(row.p_holm)}</td>' in view
    other = next(link for link in links(view) if link.startswith("other:"))
    explorer.compare_view.clicked = other
    key = int(other.split(":")[1])
    assert explorer.opened is None and "An attempt of the second tree" in explorer.conversation.value
    assert explorer.other_tree.tables.attempts.attempt[key] in explorer.conversation.value
    this = next(link for link in links(view) if link.startswith("this:"))
    explorer.compare_view.clicked = this
    assert explorer.opened == int(this.split(":")[1])
    explorer.model.value = "fake:perfect"  # the model filter narrows both trees
    explorer.show_tab("Compare")
    assert explorer.compare_view.value.count('class="mr-p-value"') == 1
    explorer.compare_path.value = str(tmp_path / "missing")
    explorer.compare_button.click()
    assert "does not exist" in explorer.compare_status.value and "Still showing" in explorer.compare_status.value
    assert explorer.other_tree.path == before  # the tree compared before stays compared
    explorer.close()


def test_the_served_page_compares_only_inside_its_tree(tmp_path):
    from modelrecord.sample import example_runs
    from modelrecord.serve import ANY_PATH_ENV, PATH_ENV, page_explorer
    before, after = example_runs()
    confined = page_explorer({PATH_ENV: str(after)})
    confined.compare_mode.value = "trees"
    confined.compare_path.value = str(before)
    confined.compare_button.click()
    assert "is outside the tree this page serves" in confined.compare_status.value and confined.other_tree is None
    confined.close()
    both = page_explorer({PATH_ENV: str(before.parent)})  # a tree holding both: each a path inside it
    both.load("after")
    both.compare_mode.value = "trees"
    both.compare_path.value = "before"
    both.compare_button.click()
    assert both.other_tree is not None and ">regression</span>" in both.compare_view.value
    both.close()
    free = page_explorer({PATH_ENV: str(after), ANY_PATH_ENV: "1"})
    free.compare_mode.value = "trees"
    free.compare_path.value = str(before)
    free.compare_button.click()
    assert free.other_tree is not None and ">regression</span>" in free.compare_view.value
    free.close()


# The Score tab: the score table of the attempts the filters keep

def test_score_tab_is_the_score_table_of_the_filtered_attempts_scored_apart(tables):
    from modelrecord.sample import example_key
    from modelrecord.score import score
    explorer = Explorer(key=example_key())
    explorer.show_tab("Score")
    explorer.surface.value = "meta"
    apart = score(tables.where(surface="meta"), example_key(), progress=False).table()  # scored on their own
    shown = explorer.score_view.value
    assert shown.count("<tr>") - 1 == len(apart) > 0
    for (model, surface), row in apart.iterrows():
        assert surface == "meta" and model in shown
        numerator, denominator = int(row.clean_numerator), int(row.clean_denominator)
        low, high = row.clean_low, row.clean_high
        assert f"{numerator}/{denominator} {numerator / denominator:.0%} [{100 * low:.0f}-{100 * high:.0f}]" in shown
    assert ">dynamic<" not in shown and ">individual<" not in shown
    explorer.close()


def test_score_tab_without_a_key_says_how_to_give_one(fresh):
    fresh.show_tab("Score")
    assert "No answer key is loaded" in fresh.score_view.value and "--key" in fresh.score_view.value


def test_overview_completion_carries_its_wilson_interval(fresh, tables):
    from modelrecord.summary import summary
    fresh.show_tab("Overview")
    for model, row in summary(tables).iterrows():
        text = f"{int(row.completed)}/{int(row.model_endings)} {row.completion:.0%} [{100 * row.completion_low:.0f}-{100 * row.completion_high:.0f}]"
        assert text in fresh.summary.value, text


def test_an_explorer_without_the_cache_neither_reads_nor_writes_it(tmp_path, monkeypatch):
    "`Explorer(cache=False)` (the page of `explore --no-cache`): its reads, and the Compare tab's, skip the cache."
    monkeypatch.setenv("MODELRECORD_CACHE_DIR", str(tmp_path / "cache"))
    tree = shutil.copytree(example_tree(), tmp_path / "tree")
    explorer = Explorer(tree, cache=False)
    explorer.refresh()
    explorer.compare_path.value = str(tree)
    explorer.compare_button.click()
    assert explorer.error is None and len(explorer.tables.attempts) and explorer.other_tree is not None
    assert not (tmp_path / "cache").exists()
    Explorer(tree)
    assert (tmp_path / "cache").exists()


def test_wide_tables_scroll_inside_themselves_answer_columns_first(tables):
    "Each wide table is in a box that scrolls sideways with a visible scrollbar; the verdicts come first; labels whole."
    import re
    from modelrecord.compare import compare_runs
    from modelrecord.compare_tab import _per_model_html
    from modelrecord.sample import example_key, example_runs
    from modelrecord.score import PUBLISHED, PUBLISHED_TITLES
    explorer = Explorer(key=example_key())
    explorer.show_tab("Score")
    before, after = example_runs()
    per_model = _per_model_html(compare_runs(load(before), load(after)))
    heads = lambda page: re.findall(r"<th[^>]*>([^<]*)</th>", page)
    score_heads = heads(explorer.score_view.value)
    assert score_heads == ["model", "surface", *(PUBLISHED_TITLES[name] for name in PUBLISHED), "attempts"]
    assert heads(per_model)[:2] == ["model", "verdict"]
    explorer.show_tab("Attempts")
    for page in (explorer.summary.value, explorer.score_view.value, per_model):
        assert '<div class="mr-scroll mr-wide"><table' in page
        assert re.search(r"\.mr-wide\{[^}]*overflow-x:auto", page) and ".mr-wide::-webkit-scrollbar{height:" in page
    assert explorer.outcome.style.description_width == "initial"  # "outcome" whole, not "outco..."
    explorer.show_tab("Compare")
    assert explorer.compare_mode.style.button_width == "auto"  # "this tree against another" whole
    explorer.close()


# ------------------------------------------------------------------------------------------------
# The Overview in a kernel: the summary at once, the plots in turns of the event loop

def test_in_a_kernel_a_filter_change_returns_with_the_summary_and_the_plots_follow(keyed, monkeypatch):
    import asyncio
    import modelrecord.explore as explore
    drawn = []  # (plot, attempts it was drawn for)
    original = explore._plot_html
    monkeypatch.setattr(explore, "_plot_html", lambda name, tables: drawn.append((name, len(tables.attempts)))
                        or original(name, tables))
    models = [value for _, value in keyed.model.options][1:3]
    stale = lambda: [name for name in PLOTS if "mr-stale" in keyed.plots[name]._dom_classes]

    async def clicks():  # as a kernel runs a widget's change: inside its running event loop
        summary = keyed.summary.value
        keyed.model.value = models[0]
        assert keyed.summary.value != summary and drawn == [] and stale() == list(PLOTS)  # returned before any plot
        while not drawn: await asyncio.sleep(0.001)  # the loop had a turn: the first plot is drawn
        keyed.model.value = models[1]  # a click meanwhile: models[0]'s other plots are never drawn
        assert stale() == list(PLOTS)
        while keyed._pending or keyed._chained: await asyncio.sleep(0.001)
    asyncio.run(clicks())
    counts = [int((keyed.tables.attempts.model == model).sum()) for model in models]
    assert drawn[0] == (PLOTS[0], counts[0]) and len(drawn) == 1 + len(PLOTS), drawn
    assert drawn[1:] == [(name, counts[1]) for name in PLOTS] and stale() == []
    assert keyed.plots["cost_by_model"].value == original("cost_by_model", keyed.filtered)
    keyed.model.value = models[0]  # outside a loop (a script): drawn before the change returns, the one seen from cache
    assert stale() == [] and len(drawn) == 2 * len(PLOTS) and (PLOTS[0], counts[0]) not in drawn[1 + len(PLOTS):]


def test_draw_now_draws_the_plots_still_waiting(keyed):
    import asyncio

    async def click():
        keyed.model.value = [value for _, value in keyed.model.options][1]
        assert keyed._pending == list(PLOTS)
        keyed.draw_now()
        assert keyed._pending == [] and all("mr-stale" not in keyed.plots[n]._dom_classes for n in PLOTS)
    asyncio.run(click())
