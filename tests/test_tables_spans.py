"""A shard larger than a span is read in spans by several workers, and gives the tables it gives read whole.

The spans are made small here (`SPAN_BYTES` of a few kilobytes) so that a small generated shard is cut
into many, each cut falling inside attempts whose lines sit on both sides of it.
"""
import json
from pathlib import Path

import pandas as pd
import pytest

from modelrecord import tables as tables_module
from modelrecord.reader import ShardError, read_blocks, read_shards, remote_tree, shard_paths, shard_spans
from modelrecord.sample import write_tree
from modelrecord.tables import TABLES, load

SPAN = 15_000  # bytes of a span in these tests


@pytest.fixture(scope="module")
def shard_tree(tmp_path_factory) -> Path:
    "A tree of one shard of a few hundred kilobytes."
    return write_tree(tmp_path_factory.mktemp("one-shard"), seed=11, attempts=150, targets=("ce",), shards_per_target=1)


@pytest.fixture
def small_spans(monkeypatch):
    "Spans of `SPAN` bytes, and a record of the jobs each load cuts."
    monkeypatch.setattr(tables_module, "SPAN_BYTES", SPAN)
    cut, jobs = [], tables_module._jobs
    monkeypatch.setattr(tables_module, "_jobs", lambda *args: cut.append(jobs(*args)) or cut[-1])
    return cut


def _same(left, right):
    for name in TABLES: pd.testing.assert_frame_equal(left[name], right[name], check_exact=True, obj=name)
    pd.testing.assert_frame_equal(left.problems, right.problems, check_exact=True)


def _attempt_lines_across_a_cut(path: str, spans: list) -> int:
    "How many attempts have lines on both sides of a cut between `spans`."
    data, cuts = Path(path).read_bytes(), [span.start for span in spans[1:]]
    where = {}
    at = 0
    for line in data.split(b"\n"):
        if line:
            record = json.loads(line)
            payload = record[record["type"]]
            attempt = payload.get("attempt") if record["type"] != "attempt" else payload["id"]
            if attempt: where.setdefault(attempt, set()).add(sum(at >= cut for cut in cuts))
        at += len(line) + 1
    return sum(len(spans_of) > 1 for spans_of in where.values())


def test_one_shard_on_two_workers_is_the_shard_read_whole(shard_tree, small_spans):
    whole = load(shard_tree, workers=1, cache=False)
    in_spans = load(shard_tree, workers=2, cache=False)
    jobs = small_spans[-1]
    assert len(jobs) > 4 and all(job.span is not None for job in jobs)
    assert _attempt_lines_across_a_cut(shard_paths(shard_tree)[0], [job.span for job in jobs]) > 0
    _same(in_spans, whole)


def test_spans_among_batches_keep_the_walk_order(tmp_path, small_spans):
    "A large shard between small ones: the batches and the spans come back in walk order."
    write_tree(tmp_path, seed=5, attempts=20, targets=("ce", "ee"), shards_per_target=3)
    write_tree(tmp_path, seed=6, attempts=120, targets=("ce-big",), shards_per_target=1)  # between the others
    whole = load(tmp_path, workers=1, cache=False)
    _same(load(tmp_path, workers=2, cache=False), whole)
    _same(load(tmp_path, workers=3, cache=False), whole)
    assert any(job.span is not None for job in small_spans[-1]) and any(job.span is None for job in small_spans[-1])


def test_the_cache_holds_the_shard_joined_whole(shard_tree, small_spans, cache):
    whole = load(shard_tree, workers=1, cache=False)
    first = load(shard_tree, workers=2)  # read in spans, written to the cache as one shard's tables
    again = load(shard_tree, workers=2)  # from the cache: nothing read
    assert small_spans[-1] == []
    _same(first, whole)
    _same(again, whole)
    assert len(list(cache.rglob("segment-*.arrow"))) == 1  # the spans' scratch segments are not in the cache


def _damaged(tree: Path, tmp_path: Path) -> Path:
    "A copy of the one-shard tree with a torn line in its first span and a line breaking a rule in a later one."
    lines = Path(shard_paths(tree)[0]).read_bytes().split(b"\n")
    out = tmp_path / "damaged" / "modeleval-one.jsonl"
    out.parent.mkdir()
    late = len(lines) * 3 // 4
    lines[late] = b'{"schema":1,"type":"verify","verify":{"attempt":"a","name":" ","passed":true}}'
    lines[len(lines) * 2 // 3] = lines[len(lines) * 2 // 3][:30]
    out.write_bytes(b"\n".join(lines))
    return out.parent


def test_refusals_in_spans_name_the_shards_own_lines(shard_tree, small_spans, tmp_path):
    damaged = _damaged(shard_tree, tmp_path)
    expected_errors = read_shards(damaged, errors="collect")[1]
    assert [e.line for e in expected_errors][0] > 100  # in a later span, not the first
    salvaged = [load(damaged, workers=workers, cache=False, errors="collect") for workers in (1, 2)]
    assert len([job for job in small_spans[-1] if job.span is not None]) > 4
    assert list(salvaged[1].problems.line)[:2] == [e.line for e in expected_errors]
    _same(salvaged[1], salvaged[0])
    with pytest.raises(ShardError) as read_whole: load(damaged, workers=1, cache=False)
    with pytest.raises(ShardError) as in_spans: load(damaged, workers=2, cache=False)
    assert str(in_spans.value) == str(read_whole.value) == str(expected_errors[0])


def test_spans_cut_at_line_starts(shard_tree):
    path = shard_paths(shard_tree)[0]
    data = Path(path).read_bytes()
    spans = shard_spans(path, 7)
    assert len(spans) == 7 and spans[0].start == 0 and spans[-1].stop is None
    assert all(data[span.start - 1] == ord("\n") for span in spans[1:])
    assert [span.stop for span in spans[:-1]] == [span.start for span in spans[1:]]


def test_refusals_in_spans_of_a_shard_at_a_url_name_the_shards_own_lines(shard_tree, small_spans, tmp_path):
    "An object read through fsspec has no descriptor: the lines before a span are counted by seeking to them."
    fsspec = pytest.importorskip("fsspec")
    damaged = _damaged(shard_tree, tmp_path)
    expected = read_shards(damaged, errors="collect")[1]
    fsspec.filesystem("memory").put(str(damaged), "/spans-url/t", recursive=True)
    url = "memory://spans-url/t"
    try:
        shard = remote_tree(url)[1][0]
        said = []
        for span in shard_spans(shard, 4): list(read_blocks(shard, "collect", said, span=span))
        assert [(e.line, e.field, e.why) for e in said] == [(e.line, e.field, e.why) for e in expected]
        # the pool's workers are forked (Linux): they hold the memory filesystem's objects too
        with pytest.raises(ShardError) as in_spans: load(url, workers=2, cache=False)
    finally: fsspec.filesystem("memory").rm("/spans-url", recursive=True)
    assert len([job for job in small_spans[-1] if job.span is not None]) > 4
    assert (in_spans.value.path, in_spans.value.line) == (str(shard), expected[0].line)
