"""The analysis tables checked against sums computed independently from the raw JSON lines.

Every expected figure here is computed with the `json` module straight from the shard files, never
through `modelrecord.reader` or `modelrecord.tables`, so a mistake in the tables cannot hide behind
the same mistake in the expectation.
"""
import json
import math
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from modelrecord import reader
from modelrecord.reader import ShardError, read_shards, shard_paths
from modelrecord.record import (ENDED_COMPLETED, ENDED_SKIPPED, ENDINGS, MODEL_ENDINGS, TOKEN_CATEGORIES, TOKEN_PRICES,
                                TURN_OK, Attempt, Block, Call, Price, Run, Session, Turn, Usage, Verify, encode)
from modelrecord.sample import write_tree
from modelrecord.summary import attempt_totals, costs, endings, latency, retries, summary, tokens
from modelrecord.cache import Part
from modelrecord.tables import CHUNK_LINES, TABLES, _filled, _in_first_met_order, batch_tables, combine, load


def _write(path: Path, *lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode(line) + b"\n" for line in lines))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A generated tree, plus hand-written shards for the joins' edge cases:
    one without a run line, one whose attempt's session is in another shard of the same run,
    one with a turn whose attempt line is missing, and one with two run lines (its lines take the first)."""
    root = write_tree(tmp_path_factory.mktemp("tree"), seed=7, attempts=480, shards_per_target=3)
    run = Run(run_id="run-odd", repeat=1, edition="ce", tier="free")
    _write(root / "odd" / "modeleval-a-sessions.jsonl", run,
           Session(label="far-session", surface="meta", mode="safe", capabilities="full", served_tools=7))
    _write(root / "odd" / "modeleval-b-attempts.jsonl", run,
           Attempt(id="far-1", case="MT-900", model="openai:gpt-5", surface="meta", session="far-session", repeat=1,
                   ended_by="completed"),
           Turn(attempt="far-1", index=1, try_=1, status="ok", usage=Usage(input=10, output=5)),
           Turn(attempt="ghost", index=1, try_=1, status="ok", usage=Usage(input=3, output=2),
                blocks=[Block(kind="text", text="hello")]))
    _write(root / "odd" / "modeleval-c-norun.jsonl",
           Attempt(id="lone-1", case="MT-901", model="openai:gpt-5", surface="dynamic", repeat=1,
                   ended_by="harness_error", reason="the world did not build"),
           Turn(attempt="lone-1", index=1, try_=1, status="server_error", usage=Usage(), detail="boom"))
    _write(root / "odd" / "modeleval-d-two-runs.jsonl",
           Run(run_id="run-first", repeat=1, commit="c0ffee", edition="ee", tier="paid"),
           Run(run_id="run-second", repeat=2, commit="beef", edition="ce"),
           Attempt(id="twice-1", case="MT-902", model="openai:gpt-5", surface="dynamic", repeat=1,
                   ended_by="harness_error", reason="no world"),
           Turn(attempt="twice-1", index=1, try_=1, status="ok", usage=Usage(input=1, output=1)))
    return root


@pytest.fixture(scope="module")
def raw(tree) -> dict:
    "The raw lines of every shard, by file (relative path), parsed with json only."
    return {p.relative_to(tree).as_posix(): [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
            for p in sorted(tree.rglob("modeleval-*.jsonl"))}


@pytest.fixture(scope="module")
def tables(tree):
    return load(tree, workers=1)


def _payloads(raw, kind):
    return [(path, line[kind]) for path, lines in raw.items() for line in lines if line["type"] == kind]


def _turns_with_attempts(raw):
    "(path, turn, attempt or None, run or None) for every raw turn line."
    out = []
    for path, lines in raw.items():
        runs = [line["run"] for line in lines if line["type"] == "run"]
        attempts = {}
        for line in lines:
            if line["type"] == "attempt": attempts.setdefault(line["attempt"]["id"], line["attempt"])
        for line in lines:
            if line["type"] == "turn":
                out.append((path, line["turn"], attempts.get(line["turn"]["attempt"]), runs[0] if runs else None))
    return out


def _raw_cost(turn, attempt, run, prices=None):
    "The cost of one raw turn, or None when unpriced (prices: the caller's table instead of the run's)."
    if attempt is None: return None
    if prices is None:
        price = next((p.get("price") for p in (run or {}).get("providers", []) if p["spec"] == attempt["model"]), None)
    else:
        price = prices.get(attempt["model"])
    if price is None: return None
    return sum(turn["usage"].get(category, 0) * price.get(field, 0.0) for category, field in TOKEN_PRICES.items()) / 1e6


def test_row_counts(tables, raw):
    counts = Counter(line["type"] for lines in raw.values() for line in lines)
    blocks = sum(len(turn.get("blocks", [])) for _, turn in _payloads(raw, "turn"))
    providers = sum(len(run.get("providers", [])) for _, run in _payloads(raw, "run"))
    assert tables.rows.to_dict() == {"runs": counts["run"], "providers": providers, "sessions": counts["session"],
                                     "attempts": counts["attempt"], "turns": counts["turn"], "calls": counts["call"],
                                     "verifies": counts["verify"], "blocks": blocks}


def test_tokens_per_model(tables, raw):
    expected = defaultdict(Counter)
    for _, turn, attempt, _ in _turns_with_attempts(raw):
        if attempt is None: continue
        for category in TOKEN_CATEGORIES: expected[attempt["model"]][category] += turn["usage"].get(category, 0)
    got = tokens(tables)
    for model, sums in expected.items():
        for category in TOKEN_CATEGORIES: assert got.loc[model, category] == sums[category], (model, category)
    assert got[list(TOKEN_CATEGORIES)].sum().sum() == sum(
        t["usage"].get(c, 0) for _, t in _payloads(raw, "turn") for c in TOKEN_CATEGORIES)


def test_cost_per_turn_and_per_model(tables, raw):
    expected = [_raw_cost(turn, attempt, run) for _, turn, attempt, run in _turns_with_attempts(raw)]
    got = tables.turns.cost.tolist()
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e is None: assert math.isnan(g)
        else: assert g == pytest.approx(e, rel=1e-12, abs=1e-15)
    per_model, unpriced = defaultdict(float), Counter()
    for (_, turn, attempt, run), cost in zip(_turns_with_attempts(raw), expected):
        if attempt is None: continue
        if cost is None: unpriced[attempt["model"]] += 1
        else: per_model[attempt["model"]] += cost
    got = costs(tables)
    for model in got.index.dropna():
        assert got.loc[model, "unpriced_turns"] == unpriced[model]
        if model in per_model: assert got.loc[model, "cost"] == pytest.approx(per_model[model])
        else: assert math.isnan(got.loc[model, "cost"])  # unknown, not zero


def test_unpriced_is_nan_not_zero(tables):
    unpriced = tables.turns[tables.turns.model == "fake:perfect"]
    assert len(unpriced) and unpriced.cost.isna().all() and unpriced.cost_input.isna().all()
    row = costs(tables).loc["fake:perfect"]
    assert math.isnan(row.cost) and row.unpriced_turns == len(unpriced)
    assert summary(tables).loc["fake:perfect", "unpriced_turns"] == len(unpriced)


def test_cost_components_sum(tables):
    t = tables.turns.dropna(subset=["cost"])
    assert np.allclose(t[["cost_input", "cost_output", "cost_cache_write", "cost_cache_read"]].sum(axis=1), t.cost)


def test_endings_and_completion(tables, raw):
    counts = defaultdict(Counter)
    for _, attempt in _payloads(raw, "attempt"): counts[attempt["model"]][attempt["ended_by"]] += 1
    got = endings(tables)
    for model, ends in counts.items():
        for ending in ENDINGS: assert got.loc[model, ending] == ends[ending]
        denominator = sum(ends[e] for e in MODEL_ENDINGS)
        assert got.loc[model, "model_endings"] == denominator
        assert got.loc[model, "completion"] == pytest.approx(ends["completed"] / denominator)
        assert got.loc[model, "attempts"] == sum(ends.values())


def test_retries_are_billed_and_counted(tables, raw):
    turns = _turns_with_attempts(raw)
    retry = [(t, a, r) for _, t, a, r in turns if t["try"] > 1 and a is not None]
    assert retry, "the generated tree should hold retries"
    got = retries(tables)
    for model in {a["model"] for _, a, _ in retry}:
        mine = [(t, a, r) for t, a, r in retry if a["model"] == model]
        assert got.loc[model, "retries"] == len(mine)
        for category in TOKEN_CATEGORIES:
            assert got.loc[model, f"retry_{category}"] == sum(t["usage"].get(category, 0) for t, _, _ in mine)
        priced = [c for c in (_raw_cost(t, a, r) for t, a, r in mine) if c is not None]
        if priced: assert got.loc[model, "retry_cost"] == pytest.approx(sum(priced))
    # every retry line is in the cost total too
    assert tables.turns.cost.sum() == pytest.approx(sum(c for c in (_raw_cost(t, a, r) for _, t, a, r in turns) if c is not None))


def test_latency_percentiles(tables, raw):
    values = defaultdict(list)
    for _, turn, attempt, _ in _turns_with_attempts(raw):
        if attempt is not None and turn.get("latency_ms"): values[attempt["model"]].append(turn["latency_ms"])
    got = latency(tables)
    for model, ms in values.items():
        assert got.loc[model, "timed_turns"] == len(ms)
        assert got.loc[model, "latency_p90_ms"] == pytest.approx(np.percentile(ms, 90))


def test_calls_verifies_blocks(tables, raw):
    assert Counter(tables.calls.outcome.astype(str)) == Counter(c["outcome"] for _, c in _payloads(raw, "call"))
    assert int(tables.verifies.passed.sum()) == sum(v["passed"] for _, v in _payloads(raw, "verify"))
    assert Counter(tables.blocks.kind.astype(str)) == Counter(
        b["kind"] for _, t in _payloads(raw, "turn") for b in t.get("blocks", []))
    totals = attempt_totals(tables)
    assert totals.calls.sum() == len(tables.calls) and totals.turns.sum() == tables.turns.attempt_key.notna().sum()


def _first_met(column: pd.Series) -> list:
    "The values a categorical column's rows hold, in the order they are first met down it."
    return list(dict.fromkeys(value for value in column.astype(object) if isinstance(value, str)))


def test_every_row_knows_its_shard_and_run(tables, raw):
    for name in TABLES:
        frame = tables[name]
        assert frame.shard.notna().all(), name
        assert set(frame.shard.astype(str)) <= set(raw), name
        assert list(frame.shard.cat.categories) == _first_met(frame.shard), name
    first_run = {path: next((l["run"] for l in lines if l["type"] == "run"), {}) for path, lines in raw.items()}
    assert first_run["odd/modeleval-d-two-runs.jsonl"]["run_id"] == "run-first"
    for name in ("sessions", "attempts", "turns", "calls", "verifies", "blocks"):
        frame = tables[name]
        for column in ("run_id", "commit", "edition", "tier"):
            expected = [first_run[shard].get(column) or "-" for shard in frame.shard.astype(str)]
            assert frame[column].astype(object).fillna("-").tolist() == expected, (name, column)
            assert list(frame[column].cat.categories) == _first_met(frame[column]), (name, column)
    own = [(l["run"]["run_id"], l["run"].get("commit")) for _, lines in raw.items() for l in lines if l["type"] == "run"]
    assert list(zip(tables.runs.run_id, tables.runs.commit.astype(object).where(tables.runs.commit.notna(), None))) == own


def test_shard_without_run_line_has_empty_run_columns(tables):
    lone = tables.attempts[tables.attempts.attempt == "lone-1"]
    assert len(lone) == 1 and lone[["run_id", "commit", "edition", "tier"]].isna().all(axis=None)
    turn = tables.turns[tables.turns.attempt == "lone-1"]
    assert turn.run_id.isna().all() and turn.cost.isna().all()


def test_session_found_in_another_shard_of_the_same_run(tables):
    far = tables.attempts.set_index("attempt").loc["far-1"]
    assert (far["mode"], far["capabilities"], far["served_tools"]) == ("safe", "full", 7)
    assert tables.sessions.loc[far["session_key"], "label"] == "far-session"


def test_line_without_attempt_line_is_kept_with_missing_attempt_columns(tables):
    ghost = tables.turns[tables.turns.attempt == "ghost"]
    assert len(ghost) == 1 and ghost.attempt_key.isna().all() and ghost.model.isna().all()
    assert tables.blocks[tables.blocks.attempt == "ghost"].attempt_key.isna().all()
    assert tables.where(run_id="run-odd").turns.attempt.astype(str).tolist().count("ghost") == 1
    orphans = summary(tables)[summary(tables).index.isna()]  # a group of their own, not dropped
    assert len(orphans) == 1 and orphans.attempts.iloc[0] == 0 and orphans.input.iloc[0] == 3


def test_dtypes(tables):
    a, t = tables.attempts, tables.turns
    assert list(a.ended_by.cat.categories) == list(ENDINGS)
    assert isinstance(t.model.dtype, pd.CategoricalDtype) and isinstance(t.status.dtype, pd.CategoricalDtype)
    assert str(a.served_tools.dtype) == "Int64" and str(t.attempt_key.dtype) == "Int64"
    assert str(tables.runs.started_at.dtype).startswith("datetime64") and str(tables.runs.started_at.dt.tz) == "UTC"
    assert all(t[c].dtype == np.int64 for c in TOKEN_CATEGORIES)
    assert (a.reason.dropna() != "").all()  # an empty string means absent: missing, not ""


def test_where_narrows_every_table_consistently(tables):
    gpt = tables.where(model="openai:gpt-5", ended_by=list(MODEL_ENDINGS))
    keys = set(gpt.attempts.index)
    assert set(gpt.attempts.model) == {"openai:gpt-5"} and set(gpt.attempts.ended_by) <= set(MODEL_ENDINGS)
    for name in ("turns", "calls", "verifies", "blocks"):
        frame = gpt[name]
        assert set(frame.attempt_key) <= keys
        full = tables[name]
        assert len(frame) == full.attempt_key.isin(keys).sum()
    assert set(gpt.sessions.index) == set(gpt.attempts.session_key.dropna())
    assert set(gpt.providers.spec) == {"openai:gpt-5"}
    assert set(gpt.runs.shard) == set(gpt.attempts.shard)
    assert summary(gpt).attempts.sum() == len(gpt.attempts)


def test_where_by_run_and_mask(tables):
    ce = tables.where(edition="ce")
    assert set(ce.turns.edition.dropna()) == {"ce"} and set(ce.runs.edition) == {"ce"}
    costly = tables.where(attempt_totals(tables).cost > 0.02)
    assert 0 < len(costly.attempts) < len(tables.attempts) and (attempt_totals(costly).cost > 0.02).all()
    assert set(costly.turns.attempt_key) == set(costly.attempts.index)
    assert len(costly.blocks) == tables.blocks.attempt_key.isin(costly.attempts.index).sum()
    with pytest.raises(ValueError, match="narrows by columns of attempts"): tables.where(status="ok")


def test_repricing(tables, raw):
    prices = {"openai:gpt-5": {"input_per_million_usd": 2.0, "output_per_million_usd": 8.0,
                               "cache_read_per_million_usd": 0.5},
              "fake:perfect": Price(input_per_million_usd=1.0, output_per_million_usd=1.0)}
    repriced = tables.priced(prices)
    plain = {spec: {**{f: 0.0 for f in TOKEN_PRICES.values()}, **(p if isinstance(p, dict) else
             {f: getattr(p, f) for f in TOKEN_PRICES.values()})} for spec, p in prices.items()}
    expected = [_raw_cost(turn, attempt, None, plain) for _, turn, attempt, _ in _turns_with_attempts(raw)]
    for g, e in zip(repriced.turns.cost.tolist(), expected):
        if e is None: assert math.isnan(g)
        else: assert g == pytest.approx(e)
    assert repriced.turns[repriced.turns.model == "anthropic:claude-sonnet-4;effort=high"].cost.isna().all()
    assert costs(repriced).loc["fake:perfect", "unpriced_turns"] == 0
    assert tables.turns.cost.notna().any() and tables.prices is None  # the original is untouched


def test_parallel_load_is_the_same(tree, tables):
    parallel = load(tree, workers=2)
    for name in TABLES: pd.testing.assert_frame_equal(parallel[name], tables[name], check_categorical=False)


def test_parallel_load_without_cache_hands_over_through_scratch_files_it_removes(tree, tables, tmp_path, monkeypatch):
    "Without a cache, the pool's tables come back through files in a scratch directory, gone after the load."
    made, make = [], tempfile.TemporaryDirectory
    monkeypatch.setattr(tempfile, "TemporaryDirectory",
                        lambda **kwargs: made.append(make(dir=tmp_path, **kwargs)) or made[-1])
    parallel = load(tree, workers=2, cache=False)
    assert len(made) == 1 and list(tmp_path.iterdir()) == []  # a scratch directory was made, and is gone ...
    for name in TABLES:  # ... and the tables mapped from its files still read
        pd.testing.assert_frame_equal(parallel[name], tables[name], check_categorical=False)


def _categoricals(part):
    "`(table, column, chunked array)` for each dictionary column of the tables of a batch."
    for name, table in part.items():
        for column, kind in zip(table.column_names, table.schema.types):
            if pa.types.is_dictionary(kind): yield name, column, table.column(column)


def test_every_categorical_of_a_batch_is_in_first_met_order(tree):
    """What `Part.first_met` promises, column by column: each categorical of a batch holds the categories its rows
    hold, in the order first met; and `combine` leaving such parts unchecked gives what checking them gives."""
    paths = shard_paths(tree)
    batchings = {"one batch": [paths], "alone": [[p] for p in paths],
                 "threes, backwards": [paths[i:i + 3] for i in range(0, len(paths), 3)][::-1]}
    for batching, batches in batchings.items():
        parts = [batch_tables(batch, content=True) for batch in batches]
        for part in parts:
            assert part.first_met
            for name, column, categorical in _categoricals(part):
                array = categorical.combine_chunks()
                assert _in_first_met_order(_filled(array.indices), len(array.dictionary)), (batching, name, column)
        trusted = combine(parts, tree)
        checked = combine([Part(dict(p), p.paths, p.counts, p.problems, first_met=False) for p in parts], tree)
        for name in TABLES: pd.testing.assert_frame_equal(trusted[name], checked[name], check_exact=True)


def test_no_missing_row_of_a_categorical_has_index_minus_one(tree):
    """Arrow reads the index of a null row too when it unifies dictionaries (`combine` does), so a missing row's
    index must be a valid one: -1 there was read out of bounds, and a load built that way crashed (SIGSEGV)."""
    paths = shard_paths(tree)
    nulls = 0
    for batch in ([paths], [[p] for p in paths]):
        for part in map(batch_tables, batch):
            for name, column, categorical in _categoricals(part):
                for chunk in categorical.chunks:
                    indices = chunk.indices
                    stored = np.frombuffer(indices.buffers()[1], indices.type.to_pandas_dtype())
                    stored = stored[indices.offset:indices.offset + len(indices)]
                    missing = ~indices.is_valid().to_numpy(zero_copy_only=False)
                    nulls += int(missing.sum())
                    assert (stored[missing] >= 0).all(), (name, column)
                    assert (stored[missing] < max(1, len(chunk.dictionary))).all(), (name, column)
    assert nulls  # the tree has rows without a run line, a session or an attempt


def test_content_columns(tree, raw):
    full = load(tree, content=True)
    texts = [b.get("text") or None for _, t in _payloads(raw, "turn") for b in t.get("blocks", [])]
    assert [None if isinstance(x, float) else x for x in full.blocks.text.tolist()] == texts
    results = [json.dumps(c["result"], separators=(",", ":"), ensure_ascii=False) if "result" in c else None
               for _, c in _payloads(raw, "call")]
    got = [None if isinstance(r, float) else json.dumps(json.loads(r), separators=(",", ":"), ensure_ascii=False)
           for r in full.calls.result.tolist()]
    assert got == results
    assert "stimulus" in full.attempts and "stimulus" not in load(tree).attempts


@pytest.mark.parametrize("chunk_lines", [1, CHUNK_LINES])
def test_content_read_through_a_reused_buffer_is_intact(tree, monkeypatch, chunk_lines):
    """Shards of many blocks are read into a buffer used again once nothing views it: the raw fields the tables copy
    out of it are the same as with blocks of their own. With chunks of one line each block is let go before the next
    is read (the buffer is always used again); with the usual chunks a block's records often wait for more lines (the
    next block is then read into bytes of its own)."""
    expected = load(tree, content=True, cache=False)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 1 << 12)
    monkeypatch.setattr("modelrecord.tables.CHUNK_LINES", chunk_lines)
    asked, unviewed = [], reader._unviewed
    monkeypatch.setattr(reader, "_unviewed", lambda buffer: asked.append(unviewed(buffer)) or asked[-1])
    got = load(tree, content=True, cache=False, workers=1)
    for name in TABLES: pd.testing.assert_frame_equal(got[name], expected[name])
    assert True in asked and (False in asked) == (chunk_lines != 1)


def test_strict_errors_surface(tmp_path):
    _write(tmp_path / "modeleval-ok.jsonl", Run(run_id="r", repeat=1))
    (tmp_path / "modeleval-bad.jsonl").write_text('{"schema":1,"type":"attempt","attempt":{"id":"a"}}\n')
    with pytest.raises(ShardError, match="modeleval-bad.jsonl:1"): load(tmp_path)
    with pytest.raises(ShardError, match="modeleval-bad.jsonl:1"): load(tmp_path, workers=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ShardError, match="holds no shard"): load(tmp_path / "empty")


def test_group_by_an_attempt_column_through_the_key(tables, raw):
    "`mode` is a session column the turns do not carry: summaries reach it through attempt_key."
    expected, in_run = Counter(), {}
    run_of = {path: next((l["run"]["run_id"] for l in lines if l["type"] == "run"), None) for path, lines in raw.items()}
    for path, lines in raw.items():  # a session is looked up in its shard, then in the shards of its run
        for line in lines:
            if line["type"] == "session": in_run.setdefault((run_of[path], line["session"]["label"]), line["session"]["mode"])
    for path, lines in raw.items():
        modes = {}
        for line in lines:
            if line["type"] == "session": modes.setdefault(line["session"]["label"], line["session"]["mode"])
        attempts = {}
        for line in lines:
            if line["type"] == "attempt": attempts.setdefault(line["attempt"]["id"], line["attempt"])
        for line in lines:
            if line["type"] != "turn" or line["turn"]["attempt"] not in attempts: continue
            label = attempts[line["turn"]["attempt"]].get("session", "")
            mode = modes.get(label) or (in_run.get((run_of[path], label)) if run_of[path] else None)
            if mode: expected[mode] += line["turn"]["usage"]["output"]
    got = tokens(tables, by="mode")
    for mode, output in expected.items(): assert got.loc[mode, "output"] == output, mode
    both = summary(tables, by=["surface", "model"])
    assert both.attempts.sum() == len(tables.attempts) and both.index.names == ["surface", "model"]


def test_run_start_times_keep_go_nanoseconds(tmp_path):
    "datetime64[ns, UTC], to the nanosecond; Go's zero time (never set) and a time outside datetime64[ns] are missing."
    started = ["2026-09-16T09:00:00.123456789Z", "2026-09-16T11:00:00.000000001+02:00", "0001-01-01T00:00:00Z",
               "2500-01-01T00:00:00Z"]
    for number, text in enumerate(started):
        run = json.loads(encode(Run(run_id=f"r{number}", repeat=1)))
        run["run"]["started_at"] = text
        (tmp_path / f"modeleval-{number}.jsonl").write_text(json.dumps(run) + "\n")
    runs = load(tmp_path).runs.set_index("run_id").started_at
    assert str(runs.dtype) == "datetime64[ns, UTC]"
    assert runs["r0"] == pd.Timestamp("2026-09-16T09:00:00.123456789Z")
    assert runs["r1"].value == pd.Timestamp("2026-09-16T09:00:00Z").value + 1
    assert runs[["r2", "r3"]].isna().all()


def test_parallel_strict_load_raises_the_first_refusal(tmp_path):
    "The pool reads from the front and this process its share from the back: the refusal raised is the first in walk order."
    for n in range(8): _write(tmp_path / f"modeleval-{n}.jsonl", Run(run_id=f"r{n}", repeat=1))
    bad = '{"schema":1,"type":"attempt","attempt":{"id":"a"}}\n'
    for n in (5, 7): (tmp_path / f"modeleval-{n}.jsonl").write_text(bad)  # in this process's share (the last half)
    for workers in (1, 2):
        with pytest.raises(ShardError, match="modeleval-5.jsonl:1"): load(tmp_path, workers=workers, cache=False)
    (tmp_path / "modeleval-2.jsonl").write_text(bad)  # in the pool's share
    for workers in (1, 2, 3):
        with pytest.raises(ShardError, match="modeleval-2.jsonl:1"): load(tmp_path, workers=workers, cache=False)
    salvaged = [load(tmp_path, workers=workers, cache=False, errors="collect") for workers in (1, 2)]
    pd.testing.assert_frame_equal(salvaged[0].problems, salvaged[1].problems)
    assert list(salvaged[1].problems.shard) == ["modeleval-2.jsonl", "modeleval-5.jsonl", "modeleval-7.jsonl"]
    assert list(salvaged[1].runs.run_id) == [f"r{n}" for n in (0, 1, 3, 4, 6)]


# ---- the rules the types do not say, checked a chunk at a time -----------------------------------


_BREAKING = {  # one line per rule `line_problem` checks, each breaking it
    "run id": Run(run_id=" ", repeat=1), "session label": Session(label="\u3000"),
    "attempt id": Attempt(id="\t", case="c", model="m", session="s", repeat=1, ended_by=ENDED_COMPLETED),
    "attempt model": Attempt(id="a", case="c", model=" ", session="s", repeat=1, ended_by=ENDED_COMPLETED),
    "no session": Attempt(id="a", case="c", model="m", repeat=1, ended_by=ENDED_COMPLETED),
    "skipped without a reason": Attempt(id="a", case="c", model="m", repeat=1, ended_by=ENDED_SKIPPED, reason=" "),
    "completed with a reason": Attempt(id="a", case="c", model="m", session="s", repeat=1, ended_by=ENDED_COMPLETED,
                                       reason="done"),
    "turn attempt": Turn(attempt="\u00a0", index=1, try_=1, status=TURN_OK),
    "call tool": Call(attempt="a", turn=1, index=1, tool=" ", outcome="ok"),
    "verify name": Verify(attempt="a", name=" ", passed=True),
    "failed verify without a detail": Verify(attempt="a", name="n", passed=False, detail="\n")}


def _good_lines(count: int) -> list:
    "`count` lines that read: a run, a session, then attempts each with a turn."
    lines = [Run(run_id="r", repeat=1), Session(label="s")]
    for n in range(count // 2):
        lines += [Attempt(id=f"a{n}", case="c", model="m", session="s", repeat=1, ended_by=ENDED_COMPLETED),
                  Turn(attempt=f"a{n}", index=1, try_=1, status=TURN_OK)]
    return lines[:count]


def _refusal(call):
    "What `call` raises, as (path, line, field, why)."
    with pytest.raises(ShardError) as caught: call()
    return caught.value.path, caught.value.line, caught.value.field, caught.value.why


@pytest.mark.parametrize("rule", list(_BREAKING))
@pytest.mark.parametrize("at", [3, CHUNK_LINES + 100])
def test_load_refuses_a_line_breaking_a_rule_as_the_reader_does(tmp_path, rule, at):
    lines = _good_lines(2 * CHUNK_LINES)
    lines.insert(at - 1, _BREAKING[rule])
    _write(tmp_path / "modeleval-a.jsonl", *lines)
    expected = _refusal(lambda: read_shards(tmp_path))
    assert expected[1] == at
    assert _refusal(lambda: load(tmp_path, cache=False)) == expected
    _, problems = read_shards(tmp_path, errors="collect")
    salvaged = load(tmp_path, cache=False, errors="collect")
    assert [tuple(p) for p in salvaged.problems[["line", "field", "why"]].itertuples(index=False)] == [
        (p.line, p.field, p.why) for p in problems]
    assert len(salvaged.attempts) + len(salvaged.turns) + len(salvaged.runs) + len(salvaged.sessions) == len(lines) - 1


def test_load_raises_the_first_refusal_whether_a_rule_or_the_json(tmp_path):
    "A line torn after one breaking a rule, and the other way round: the first is raised, as the reader raises it."
    for name, first, second in (("rule-first", _BREAKING["verify name"], None), ("json-first", None, _BREAKING["verify name"])):
        path = tmp_path / name / "modeleval-a.jsonl"
        lines = [encode(line) for line in _good_lines(3 * CHUNK_LINES)]
        lines[9] = encode(first) if first else b'{"schema":1,"type":"turn","turn":{"attempt":"a0"'
        lines[-9] = encode(second) if second else b'{"schema":1,"type":"turn","turn":{"attempt":"a0"'
        path.parent.mkdir()
        path.write_bytes(b"\n".join(lines) + b"\n")
        expected = _refusal(lambda: read_shards(path.parent))
        assert expected[1] == 10
        assert _refusal(lambda: load(path.parent, cache=False)) == expected
        assert _refusal(lambda: load(path.parent, cache=False, workers=2)) == expected


def _tear_first_attempt_line(tree: Path) -> str:
    "Tear the first attempt line of the tree's first shard (as a killed process leaves it); its id."
    shard = shard_paths(tree)[0]
    lines = Path(shard).read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"type":"attempt"' in line)
    lost = json.loads(lines[at])["attempt"]["id"]
    lines[at] = lines[at][:40]
    Path(shard).write_bytes(b"\n".join(lines))
    return lost


@pytest.mark.parametrize("cache", [False, True])
def test_a_salvaged_load_leaves_out_what_a_lost_attempt_took_with_it(tmp_path, capsys, cache):
    "No phantom model made of the turns of an attempt whose line was refused: they are problems (issue 27)."
    from modelrecord.cli import main
    write_tree(tmp_path, seed=3, attempts=40)
    lost = _tear_first_attempt_line(tmp_path)
    for _ in range(2 if cache else 1):  # through the cache, the second load reads the segments
        tables = load(tmp_path, errors="collect", cache=cache)
        assert not any(tables[name].attempt_key.isna().any() for name in ("turns", "calls", "verifies", "blocks"))
        torn = tables.problems.shard.iloc[0]  # attempt ids are unique within a shard, not across the tree
        assert not tables.turns[tables.turns.shard == torn].attempt.eq(lost).any()
        assert tables.attempts.model.notna().all()
        assert len(tables.problems) == 2 and f"attempt {lost!r}, whose attempt line was not read" in tables.problems.why.iloc[1]
        assert summary(tables).index.notna().all()
    assert main(["summary", str(tmp_path), "--salvage"] + ([] if cache else ["--no-cache"])) == 0
    out, err = capsys.readouterr()
    assert "(none)" not in out and "nan" not in out and "whose attempt line was not read" in err
