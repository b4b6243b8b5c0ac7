"""The Parquet export: typed from the table plan, partitioned by run, read back by pyarrow and DuckDB losing nothing."""
import math

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from modelrecord.cli import main
from modelrecord.record import MODEL_ENDINGS, Attempt, Call, Run, Turn, Usage, encode
from modelrecord.sample import example_tree, write_tree
from modelrecord.summary import summary
from modelrecord.tables import TABLES, export, load


def _parquet(out, table: str) -> str:
    return f"read_parquet('{out}/{table}/*/*.parquet', hive_partitioning = true)"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tree = write_tree(tmp_path_factory.mktemp("tree"), seed=11, attempts=400)
    tables = load(tree)
    out = tmp_path_factory.mktemp("parquet")
    paths = export(tables, out)
    return tables, out, paths


def test_one_dataset_per_table_partitioned_by_run(exported):
    tables, out, paths = exported
    assert [p.name for p in paths] == list(TABLES)
    runs = set(tables.runs.run_id)
    for path in paths:
        assert {p.name for p in path.iterdir()} == {f"run_id={run}" for run in runs}


def test_duckdb_totals_match_the_pandas_summary(exported):
    tables, out, _ = exported
    expected = summary(tables)
    model_endings = ", ".join(f"'{e}'" for e in MODEL_ENDINGS)
    attempts = duckdb.sql(f"""
        select model, count(*) as attempts, count(*) filter (ended_by = 'completed') as completed,
               count(*) filter (ended_by in ({model_endings})) as model_endings
        from {_parquet(out, 'attempts')} group by model""").df().set_index("model")
    turns = duckdb.sql(f"""
        select model, sum(input) as input, sum(output) as output, sum(cache_created) as cache_created,
               sum(cache_read) as cache_read, sum(cost) as cost, count(*) filter (cost is null) as unpriced_turns,
               count(*) filter ("try" > 1) as retries
        from {_parquet(out, 'turns')} group by model""").df().set_index("model")
    assert sorted(attempts.index) == sorted(map(str, expected.index))
    for model in attempts.index:
        row = expected.loc[model]
        for column in ("attempts", "completed", "model_endings"): assert attempts.loc[model, column] == row[column]
        for column in ("input", "output", "cache_created", "cache_read", "unpriced_turns", "retries"):
            assert turns.loc[model, column] == row[column], (model, column)
        if math.isnan(row.cost): assert pd.isna(turns.loc[model, "cost"])
        else: assert turns.loc[model, "cost"] == pytest.approx(row.cost)


def test_keys_join_in_duckdb(exported):
    tables, out, _ = exported
    joined = duckdb.sql(f"""
        select count(*) from {_parquet(out, 'turns')} t join {_parquet(out, 'attempts')} a
        on t.run_id = a.run_id and t.attempt_key = a.attempt_key
        where t.model = a.model and t.attempt = a.attempt""").fetchall()[0][0]
    assert joined == tables.turns.attempt_key.notna().sum()


def _write(path, *lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode(line) + b"\n" for line in lines))


def test_two_trees_with_different_empty_columns_read_as_one_dataset(tmp_path):
    "A column empty in one tree (all missing) is still typed, so neither engine loses the other tree's values."
    bare = tmp_path / "bare"
    _write(bare / "modeleval-x.jsonl", Run(run_id="bare-run", repeat=1),
           Attempt(id="a-1", case="MT-1", model="m", surface="dynamic", repeat=1, ended_by="harness_error", reason="no world"),
           Turn(attempt="a-1", index=1, try_=1, status="ok", usage=Usage(input=1, output=1)),
           Call(attempt="a-1", turn=1, index=1, tool="project_get", outcome="ok"))  # no refusal_reason
    example = load(example_tree())
    refusals, names = example.calls.refusal_reason.notna().sum(), example.verifies.name.notna().sum()
    assert refusals and names
    out = tmp_path / "out"
    export(load(bare), out)  # a call with every optional column empty, no verifies
    export(example, out)
    for table in TABLES:  # every file of a table has the one schema the plan gives, none of its columns typed null
        schemas = {pq.read_schema(f).remove_metadata() for f in (out / table).rglob("*.parquet")}
        assert len(schemas) == 1, (table, schemas)
        assert not [f.name for f in schemas.pop() if pa.types.is_null(f.type)], table
    calls = ds.dataset(out / "calls", partitioning="hive").to_table()
    assert calls.schema.field("refusal_reason").type == pa.string()
    assert pc_count(calls.column("refusal_reason")) == refusals
    verifies = ds.dataset(out / "verifies", partitioning="hive").to_table()
    assert pc_count(verifies.column("name")) == names
    attempts = ds.dataset(out / "attempts", partitioning="hive").to_table()
    assert attempts.num_rows == len(example.attempts) + 1
    both = duckdb.sql(f"select count(refusal_reason) from {_parquet(out, 'calls')}").fetchall()[0][0]
    assert both == refusals
    assert duckdb.sql(f"select count(*) from {_parquet(out, 'attempts')} where run_id = 'bare-run'").fetchall()[0][0] == 1


def pc_count(column) -> int:
    return len(column) - column.null_count


def test_re_export_replaces_the_run_partition(tmp_path):
    tree = write_tree(tmp_path / "tree", seed=3, attempts=40, targets=("ce",), shards_per_target=1)
    out = tmp_path / "out"
    tables = load(tree)
    export(tables, out)
    export(tables, out)
    back = ds.dataset(out / "turns", partitioning="hive").to_table()
    assert back.num_rows == len(tables.turns)


def test_re_export_replaces_a_run_partition_left_empty(tmp_path):
    "A run exported again with no calls now: its old calls are gone, other runs' stay."
    tables = load(example_tree())
    out = tmp_path / "out"
    export(tables, out)
    run, other = tables.runs.run_id.iloc[0], tables.runs.run_id.iloc[-1]
    assert run != other
    kept = (tables.calls.run_id == other).sum()
    without_calls = tables.where(~tables.attempts.index.isin(tables.calls.attempt_key.dropna()), run_id=run)
    assert len(without_calls.attempts) and not len(without_calls.calls)
    export(without_calls, out)
    calls = ds.dataset(out / "calls", partitioning="hive").to_table().to_pandas()
    assert (calls.run_id == run).sum() == 0 and (calls.run_id == other).sum() == kept


def test_run_ids_are_escaped_as_hive_partitions_and_read_back(tmp_path):
    tree = tmp_path / "tree"
    odd = "nightly/2026-12-03 a=b%c é"
    _write(tree / "modeleval-x.jsonl", Run(run_id=odd, repeat=1),
           Attempt(id="a-1", case="MT-1", model="m", surface="dynamic", repeat=1, ended_by="harness_error"))
    export(load(tree), tmp_path / "out")
    (partition,) = (tmp_path / "out" / "attempts").iterdir()
    assert "/" not in partition.name and partition.name.startswith("run_id=nightly%2F2026-12-03")
    assert ds.dataset(tmp_path / "out" / "attempts", partitioning="hive").to_table().column("run_id").to_pylist() == [odd]
    assert duckdb.sql(f"select run_id from {_parquet(tmp_path / 'out', 'attempts')}").fetchall() == [(odd,)]


def test_timestamps_in_microseconds_unless_ns(tmp_path):
    tables = load(example_tree())
    export(tables, tmp_path / "us")
    export(tables, tmp_path / "ns", ns=True)
    assert ds.dataset(tmp_path / "us" / "runs", partitioning="hive").schema.field("started_at").type.unit == "us"
    assert ds.dataset(tmp_path / "ns" / "runs", partitioning="hive").schema.field("started_at").type.unit == "ns"


def test_cli_export_and_summary(tmp_path, capsys):
    tree = write_tree(tmp_path / "tree", seed=2, attempts=60)
    assert main(["export", str(tree), "--to", str(tmp_path / "out")]) == 0
    assert main(["export", str(tree), "--to", str(tmp_path / "ns"), "--ns"]) == 0
    for unit, out in (("us", "out"), ("ns", "ns")):
        assert ds.dataset(tmp_path / out / "runs", partitioning="hive").schema.field("started_at").type.unit == unit
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(TABLES)
    assert main(["summary", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "Endings" in out and "Tokens and cost" in out and "openai:gpt-5" in out
    assert main(["summary", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_cli_export_to_a_file_is_refused(tmp_path, capsys):
    tree = write_tree(tmp_path / "tree", seed=2, attempts=10)
    (tmp_path / "file").write_text("not a directory")
    assert main(["export", str(tree), "--to", str(tmp_path / "file")]) == 1
    assert "is a file" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "not a directory"
