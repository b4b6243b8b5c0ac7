"""The Parquet export, queried with DuckDB, gives the same totals as the pandas summary."""
import math

import duckdb
import pandas as pd
import pytest

from modelrecord.cli import main
from modelrecord.record import MODEL_ENDINGS
from modelrecord.sample import write_tree
from modelrecord.summary import summary
from modelrecord.tables import TABLES, export, load


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tree = write_tree(tmp_path_factory.mktemp("tree"), seed=11, attempts=400)
    tables = load(tree)
    out = tmp_path_factory.mktemp("parquet")
    paths = export(tables, out)
    return tables, out, paths


def test_one_file_per_table(exported):
    _, out, paths = exported
    assert [p.name for p in paths] == [f"{name}.parquet" for name in TABLES]
    assert all(p.parent == out and p.stat().st_size > 0 for p in paths)


def test_duckdb_totals_match_the_pandas_summary(exported):
    tables, out, _ = exported
    expected = summary(tables)
    model_endings = ", ".join(f"'{e}'" for e in MODEL_ENDINGS)
    attempts = duckdb.sql(f"""
        select model, count(*) as attempts, count(*) filter (ended_by = 'completed') as completed,
               count(*) filter (ended_by in ({model_endings})) as model_endings
        from '{out}/attempts.parquet' group by model""").df().set_index("model")
    turns = duckdb.sql(f"""
        select model, sum(input) as input, sum(output) as output, sum(cache_created) as cache_created,
               sum(cache_read) as cache_read, sum(cost) as cost, count(*) filter (cost is null) as unpriced_turns,
               count(*) filter ("try" > 1) as retries
        from '{out}/turns.parquet' group by model""").df().set_index("model")
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
        select count(*) from '{out}/turns.parquet' t join '{out}/attempts.parquet' a on t.attempt_key = a.attempt_key
        where t.model = a.model and t.attempt = a.attempt""").fetchall()[0][0]
    assert joined == tables.turns.attempt_key.notna().sum()


def test_cli_export_and_summary(tmp_path, capsys):
    tree = write_tree(tmp_path / "tree", seed=2, attempts=60)
    assert main(["export", str(tree), "--to", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"{n}.parquet" for n in TABLES)
    assert main(["summary", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "Endings" in out and "Tokens and cost" in out and "openai:gpt-5" in out
    assert main(["summary", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err
