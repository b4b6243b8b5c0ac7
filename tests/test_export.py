"""The Parquet export: typed from the table plan, partitioned by run, read back by pyarrow and DuckDB losing nothing."""
import errno
import math
import os
from pathlib import Path

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
        assert {p.name for p in path.iterdir()} == {f"run={run}" for run in runs}


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
    assert "/" not in partition.name and partition.name.startswith("run=nightly%2F2026-12-03")
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


# Run ids round-trip as exact strings (issue 28, section 2). Each test below was run against the export
# before this change and failed there: numeric ids came back as integers (or the read failed), the reserved
# name came back null, and a long id raised ENAMETOOLONG.

def _runs_tree(path, run_ids):
    "A tree of one shard per run id, each with a run line and one attempt."
    for i, run_id in enumerate(run_ids):
        _write(path / f"modeleval-{i}.jsonl", Run(run_id=run_id, repeat=1),
               Attempt(id=f"a-{i}", case="MT-1", model="m", surface="dynamic", repeat=1, ended_by="harness_error"))
    return path


def _read_back(out, table: str) -> dict:
    "The run ids of `table` as each documented reader reads them back."
    by_pyarrow = ds.dataset(out / table, partitioning="hive").to_table()
    assert by_pyarrow.schema.field("run_id").type == pa.string()
    by_duckdb = [row[0] for row in duckdb.sql(f"select run_id from {_parquet(out, table)}").fetchall()]
    return {"pyarrow": sorted(by_pyarrow.column("run_id").to_pylist()), "duckdb": sorted(by_duckdb)}


@pytest.mark.parametrize("run_ids", [["0042", "007", "1"], ["0042"], ["__HIVE_DEFAULT_PARTITION__", "r"],
                                     ["x" * 300], ["p" * 250 + "a", "p" * 250 + "b"],
                                     ["p" * 250 + "-first", "p" * 250 + "-second"]],
                         ids=["numbers", "one-number", "reserved", "300-chars", "shared-250-prefix-255-bytes",
                              "shared-250-prefix-too-long"])
def test_run_ids_come_back_as_the_exact_strings(tmp_path, run_ids):
    out = tmp_path / "out"
    export(load(_runs_tree(tmp_path / "tree", run_ids), cache=False), out)
    for table in ("runs", "attempts"):
        assert _read_back(out, table) == {"pyarrow": sorted(run_ids), "duckdb": sorted(run_ids)}, table
    folders = [p.name for p in (out / "runs").iterdir()]
    assert len(folders) == len(run_ids) and all(len(name.encode()) <= 255 for name in folders)


def test_the_reserved_run_id_and_the_missing_one_stay_apart(tmp_path):
    tree = _runs_tree(tmp_path / "tree", ["__HIVE_DEFAULT_PARTITION__"])
    _write(tree / "modeleval-none.jsonl",  # a shard without a run line: its rows have no run id
           Attempt(id="a-n", case="MT-1", model="m", surface="dynamic", repeat=1, ended_by="harness_error"))
    export(load(tree, cache=False), tmp_path / "out")
    back = ds.dataset(tmp_path / "out" / "attempts", partitioning="hive").to_table().column("run_id").to_pylist()
    assert sorted(back, key=lambda run_id: (run_id is not None, run_id or "")) == [None, "__HIVE_DEFAULT_PARTITION__"]
    assert len(list((tmp_path / "out" / "attempts").iterdir())) == 2


def test_long_run_id_folders_are_stable_and_distinct(tmp_path):
    ids = ["p" * 250 + "-first", "p" * 250 + "-second"]
    tables = load(_runs_tree(tmp_path / "tree", ids), cache=False)
    export(tables, tmp_path / "one")
    export(tables, tmp_path / "two")
    export(tables, tmp_path / "two")  # re-exported: the same folders, replaced, not added
    one, two = ({p.name for p in (tmp_path / d / "runs").iterdir()} for d in ("one", "two"))
    assert one == two and len(one) == 2 and all("%40" in name and len(name) < 200 for name in one)
    assert ds.dataset(tmp_path / "two" / "runs", partitioning="hive").count_rows() == 2


# A failed export leaves the previous one exactly as it was. Each of these failed against the export before
# this change: it deleted the run's old partitions before writing the new ones.

def _snapshot(folder: Path) -> dict:
    "Every file and folder under `folder` (and beside it): relative path -> bytes (None for a folder)."
    return {p.relative_to(folder.parent).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.parent.rglob("*")) if folder in (p, *p.parents) or p.parent == folder.parent}


@pytest.fixture
def previous(tmp_path):
    "An export of a good run, and a tree holding that run and one more."
    good = _runs_tree(tmp_path / "tree" / "good", ["good-run"])
    out = tmp_path / "out" / "parquet"
    export(load(good, cache=False), out)
    return out, _snapshot(out)


def _with(tmp_path, run_id):
    "The good run's tree with one more shard, of `run_id`."
    _runs_tree(tmp_path / "tree" / "more", [run_id])
    return tmp_path / "tree"


def test_a_run_id_too_long_for_the_file_system_leaves_the_previous_export(tmp_path, previous, monkeypatch):
    import modelrecord.tables as tables_module
    monkeypatch.setattr(tables_module, "_NAME_MAX", 10_000, raising=False)  # no short name: the file system refuses
    out, before = previous
    long_id = "n" * 300
    with pytest.raises(OSError, match="(?i)too long"):
        export(load(_with(tmp_path, long_id), cache=False), out)
    assert _snapshot(out) == before
    assert ds.dataset(out / "runs", partitioning="hive").to_table().column("run_id").to_pylist() == ["good-run"]


def test_cli_names_the_run_and_why_and_leaves_the_previous_export(tmp_path, previous, monkeypatch, capsys):
    import modelrecord.tables as tables_module
    monkeypatch.setattr(tables_module, "_NAME_MAX", 10_000, raising=False)
    out, before = previous
    long_id = "n" * 300
    assert main(["export", str(_with(tmp_path, long_id)), "--to", str(out), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert long_id in err and "too long" in err.lower() and "Traceback" not in err
    assert _snapshot(out) == before


def _failing_writer(monkeypatch, after: int):
    "Make pyarrow's dataset writer fail with a full disk on its call number `after` + 1."
    real, calls = ds.write_dataset, []
    def write(data, base_dir, *args, **kwargs):
        calls.append(Path(base_dir))
        if len(calls) > after: raise OSError(errno.ENOSPC, "No space left on device")
        return real(data, base_dir, *args, **kwargs)
    monkeypatch.setattr(ds, "write_dataset", write)
    return calls


@pytest.mark.parametrize("after", [0, 1])  # of 2 writes: the tables with rows, runs and attempts
def test_a_writer_failing_half_way_leaves_the_previous_export(tmp_path, previous, monkeypatch, capsys, after):
    out, before = previous
    calls = _failing_writer(monkeypatch, after)
    assert main(["export", str(_with(tmp_path, "second-run")), "--to", str(out), "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert "'good-run'" in err or "'second-run'" in err  # the run being written when it failed
    assert _snapshot(out) == before
    assert all(out.parent in path.parents and out not in (path, *path.parents) for path in calls)  # staged beside


def test_a_failing_swap_is_undone(tmp_path, previous, monkeypatch):
    from modelrecord.tables import ExportError
    out, before = previous
    real, renames = Path.rename, []
    def rename(self, target):
        renames.append(self)
        if len(renames) == 4: raise OSError(errno.EIO, "Input/output error")
        return real(self, target)
    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(ExportError, match="left as it was"):
        export(load(_with(tmp_path, "second-run"), cache=False), out)
    monkeypatch.undo()
    assert len(renames) == 4 + 3 and _snapshot(out) == before  # the 4th rename failed, the 3 before it undone


def test_a_successful_re_export_leaves_nothing_beside(tmp_path, previous):
    out, before = previous
    export(load(_with(tmp_path, "second-run"), cache=False), out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["parquet"]
    assert sorted(ds.dataset(out / "runs", partitioning="hive").to_table().column("run_id").to_pylist()) == [
        "good-run", "second-run"]


def test_an_export_of_the_first_layout_is_replaced_not_doubled(tmp_path, previous):
    "Exports before run ids were kept in the files named the folders `run_id=<run>`: a re-export replaces them."
    out, _ = previous
    for table in TABLES:
        for folder in (out / table).iterdir(): folder.rename(folder.with_name(folder.name.replace("run=", "run_id=")))
    export(load(_with(tmp_path, "second-run"), cache=False), out)
    assert not [p for p in out.rglob("run_id=*")]
    assert ds.dataset(out / "runs", partitioning="hive").count_rows() == 2


def test_a_symbolic_link_at_the_destination_is_refused_not_followed(tmp_path, capsys):
    tree = _runs_tree(tmp_path / "tree", ["r"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere, target_is_directory=True)
    assert main(["export", str(tree), "--to", str(tmp_path / "link"), "--no-cache"]) == 1
    assert "symbolic link" in capsys.readouterr().err and not list(elsewhere.iterdir())
    out = tmp_path / "out"
    out.mkdir()
    (out / "turns").symlink_to(elsewhere, target_is_directory=True)  # a table's folder
    assert main(["export", str(tree), "--to", str(out), "--no-cache"]) == 1
    assert "symbolic link" in capsys.readouterr().err and not list(elsewhere.iterdir())
    assert sorted(os.listdir(tmp_path)) == ["elsewhere", "link", "out", "tree"]
