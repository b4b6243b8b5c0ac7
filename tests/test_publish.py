"""`modelrecord publish` (issue 29, shared/PUBLISH.md): the record, the six refusal rules, the merge, --check, the dry run.

Runs are written by the project's own generator (`sample.generate`) and writer (`writer.open_dir`), with the run
and session lines changed where a test needs a configuration the generator does not make."""
import json
import os
import shutil
import warnings
from pathlib import Path

import msgspec
import pytest

from modelrecord.publish import Options, publish, record_bytes, sum_cases
from modelrecord.record import Attempt, Run, Session
from modelrecord.sample import answer_key, generate
from modelrecord.writer import open_dir, release

DIGEST = "234b92df26e1594f"  # the corpus digest the generator writes on its run lines
PAGE = ("# Results\n\n<!-- START MODEL EVAL LEGEND -->\n<!-- END MODEL EVAL LEGEND -->\n\n"
        "<!-- START MODEL EVAL RESULTS -->\n<!-- END MODEL EVAL RESULTS -->\n")
PREFIX = "modelrecord publish: "


def run_lines(seed=3, attempts=30, repeat=1, run=None, session=None, cases=None, sessionless=True):
    "The lines of one shard of a generated run, its run line and sessions changed by `run`/`session` (field -> value)."
    lines = generate(seed=seed, target="ee", attempts=attempts, huge=0, shards_per_target=1, repeat=repeat)
    out, kept = [], set()
    for line in lines:
        if isinstance(line, Run) and run: line = msgspec.structs.replace(line, **run)
        if isinstance(line, Session) and session: line = msgspec.structs.replace(line, **session)
        if isinstance(line, Attempt):
            if cases is not None and line.case not in cases: continue
            if not sessionless and not line.session: continue
            kept.add(line.id)
        if hasattr(line, "attempt") and isinstance(line.attempt, str) and line.attempt not in kept: continue
        out.append(line)
    return out


def write_run(directory: Path, lines) -> Path:
    "Write `lines` as one shard under `directory` with the project's writer, and the generator's answer key beside it."
    directory.mkdir(parents=True, exist_ok=True)
    writer = open_dir(str(directory))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a recording problem is a broken test, not a warning to read past
        writer.write(*lines)
    release()
    key = answer_key(3, 40)
    (directory / "key.json").write_bytes(msgspec.json.encode(key))
    return directory


@pytest.fixture
def site(tmp_path) -> Path:
    "A repository root with the default plan's results page."
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/model-results.md").write_text(PAGE)
    return tmp_path


def go(site: Path, *, digest=DIGEST, **options):
    "Run publish on `site` (with the corpus digest at HEAD unless told otherwise, and the runs' answer key)."
    key = str(Path(__file__).parent / "data" / "publish-key.json")
    return publish(Options(root=str(site), corpus_digest=digest, key=options.pop("key", key), **options))


def record(site: Path) -> dict:
    return json.loads((site / "docs/model-results.json").read_text())


def refusals(outcome) -> list:
    return [line[len(PREFIX):] for line in outcome.out if line.startswith(PREFIX + "refused [")]


# ---------------------------------------------------------------------------------------------
# Folding, and the six rules

def test_a_fold_publishes_every_row_but_the_fake_providers_and_says_so_row_by_row(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    done = go(site, shards=str(shards), render=True)
    assert done.status == 0, done.err
    assert {r.split("]")[0] for r in refusals(done)} == {"refused [fake-provider"}
    assert all('"fake:perfect" is the fake provider, which answers from the corpus key' in r for r in refusals(done))
    summary = next(line for line in done.out if "candidate row(s)" in line)
    assert summary.endswith("refused by [duplicate-row, fake-provider, filtered-run, incomplete-provenance, "
                            "stale-corpus, unobserved-session]")
    rows = record(site)["rows"]
    assert len(rows) == len(done.facts["folded"]) - len(done.facts["refused"]) > 0
    assert done.out[-2].startswith(PREFIX + "wrote docs/model-results.json: ")
    assert done.out[-1] == PREFIX + "redrew the managed blocks of docs/model-results.md"
    assert all(set(r["cases"]) <= {"MT-001", "MT-002"} for r in rows)
    assert all({k: r[k] for k in ("counts", "columns", "tokens")} == sum_cases(r["cases"]) for r in rows)


def test_folding_a_run_twice_is_refused_as_a_duplicate_and_the_record_is_unchanged(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    go(site, shards=str(shards))
    first = (site / "docs/model-results.json").read_bytes()
    again = go(site, shards=str(shards))
    duplicates = [r for r in refusals(again) if r.startswith("refused [duplicate-row]")]
    assert duplicates and all(r.endswith("a row with this key already stands in docs/model-results.json")
                              for r in duplicates)
    assert (site / "docs/model-results.json").read_bytes() == first


def test_without_a_digest_at_head_stale_corpus_is_not_judged_and_a_note_says_so(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines(run={"corpus_digest": "elsewhere"}))
    done = go(site, shards=str(shards), digest=None)
    assert PREFIX + "note: no corpus digest at HEAD, so stale-corpus is not judged" in done.out
    assert not [r for r in refusals(done) if "stale-corpus" in r]


def key_with_digest(tmp_path: Path, digest) -> str:
    "The runs' answer key with a top-level `corpus_digest` (SCORING.md §1), as a file."
    key = json.loads((Path(__file__).parent / "data" / "publish-key.json").read_text())
    path = tmp_path / "key-with-digest.json"
    path.write_text(json.dumps({**key, "corpus_digest": digest}))
    return str(path)


def test_the_keys_corpus_digest_is_the_corpus_at_head_when_the_command_line_gives_none(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    stale = go(site, shards=str(shards), digest=None, key=key_with_digest(tmp_path, "newer"))
    assert PREFIX + "note: no corpus digest at HEAD, so stale-corpus is not judged" not in stale.out
    judged = [r for r in refusals(stale) if not r.startswith("refused [fake-provider]")]
    assert judged and all(r.startswith("refused [stale-corpus]") and r.endswith(
        f"the run was put the corpus {DIGEST} and the corpus at HEAD is newer") for r in judged)
    assert not (site / "docs/model-results.json").exists() or not record(site)["rows"]
    fresh = go(site, shards=str(shards), digest=None, key=key_with_digest(tmp_path, DIGEST))
    assert fresh.status == 0 and not [r for r in refusals(fresh) if "stale-corpus" in r] and record(site)["rows"]
    check = go(site, check=True, digest=None, key=key_with_digest(tmp_path, "newer"))
    assert check.status == 1 and any(line.startswith(PREFIX + "refused [stale-corpus]") for line in check.err)


def test_the_command_lines_corpus_digest_wins_over_the_keys(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    done = go(site, shards=str(shards), digest=DIGEST, key=key_with_digest(tmp_path, "newer"))
    assert done.status == 0 and not [r for r in refusals(done) if "stale-corpus" in r] and record(site)["rows"]


def test_a_key_whose_corpus_digest_is_not_text_is_refused_naming_the_field(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    done = go(site, shards=str(shards), digest=None, key=key_with_digest(tmp_path, 42))
    assert done.status == 2 and not (site / "docs/model-results.json").exists()
    assert done.err == [f"{PREFIX}{tmp_path / 'key-with-digest.json'}: corpus_digest: must be text, got a number"]


# ---------------------------------------------------------------------------------------------
# The record's bytes

def test_record_bytes_are_gos_spelling():
    row = {"key": {"model": "a<b>&c", "surface": "dynamic", "mode": "default", "tier": "free", "repeat": 1},
           "counts": {"outcomes": {"b": 1, "a": 2}}, "provenance": {"request_options": {"z": "1", "a": "2"}}}
    from modelrecord.publish import shaped_row
    text = record_bytes([shaped_row(row)], "note \u2028").decode()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert '"model": "a\\u003cb\\u003e\\u0026c"' in text and "\\u2028" in text
    assert text.index('"a": 2') < text.index('"b": 1')  # maps sorted
    assert '"tier_pin"' not in text and '"cases"' not in text and '"declines"' not in text  # omitempty
    assert '"token_scopes": null' in text and '"outcomes": {' in text
    assert record_bytes(None, "n").decode() == '{\n "schema_version": 1,\n "note": "n",\n "rows": null\n}\n'


def test_an_unreadable_record_is_refused_before_anything_is_written(site, tmp_path):
    (site / "docs/model-results.json").write_text('{"schema_version": 3, "rows": []}')
    done = go(site, shards=str(write_run(tmp_path / "run", run_lines())))
    assert done.status == 2
    assert done.err == [PREFIX + "docs/model-results.json carries schema version 3 and this command writes 1; "
                        "regenerate it with modelrecord publish --render"]
    checked = go(site, check=True)
    assert checked.status == 1


# ---------------------------------------------------------------------------------------------
# Merging, case by case

def test_a_refold_of_one_case_replaces_that_case_and_keeps_the_others(site, tmp_path):
    go(site, shards=str(write_run(tmp_path / "run", run_lines())))
    before = record(site)["rows"]
    one = write_run(tmp_path / "one", run_lines(cases={"MT-002"}))
    done = go(site, shards=str(one), refold=True)
    merged = [line for line in done.out if "merged into the published row" in line]
    assert merged and all(line.endswith("1 case(s) replaced (MT-002), 1 kept as they stood") for line in merged)
    assert record(site)["rows"] == before  # the same figures, case for case


# ---------------------------------------------------------------------------------------------
# --check

def test_check_passes_a_published_record_and_finds_tampering(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    go(site, shards=str(shards), render=True)
    ok = go(site, check=True)
    assert (ok.status, ok.err) == (0, []), ok.err
    assert ok.out[-1].startswith(PREFIX + "docs/model-results.json and the blocks drawn from it agree: ")
    document = record(site)
    document["rows"][0]["counts"]["attempts"] += 1
    document["rows"][0]["key"]["repeat"] = 7
    (site / "docs/model-results.json").write_text(json.dumps(document))
    found = go(site, check=True)
    assert found.status == 1
    text = "\n".join(found.err)
    assert "does not add up: counts.attempts is" in text and "but its cases sum to" in text
    assert "disagrees with its provenance: key.repeat is 7 but provenance.repeat is 1" in text
    assert "the managed blocks of docs/model-results.md do not match docs/model-results.json" in text


def test_check_without_a_record_compares_the_pages_as_if_empty(site):
    done = go(site, check=True)
    assert done.status == 1  # the page was never drawn, so its blocks are stale
    assert done.out[0] == PREFIX + "note: no docs/model-results.json, so nothing is published yet"
    go(site, render=True)
    assert go(site, check=True).status == 0


# ---------------------------------------------------------------------------------------------
# Usage, errors, dry run, writes

@pytest.mark.parametrize("options, text", [
    (dict(check=True, render=True), "--check writes nothing, so it cannot be given --shards, --refold, --render or --dry-run"),
    (dict(dry_run=True), "--dry-run rehearses folding a run in, so it needs the --shards of the run to rehearse"),
    (dict(refold=True), "--refold merges a run's shards into the rows they publish again, so it needs the --shards"),
    (dict(), "nothing to do: pass --shards to fold a run in, --render to redraw the pages, or --check to gate both"),
])
def test_usage_errors_exit_2_with_the_references_sentence(site, options, text):
    done = go(site, **options)
    assert done.status == 2 and done.err[0].startswith(PREFIX + text)


def test_a_torn_line_is_refused_by_name_and_nothing_is_written(site, tmp_path):
    shards = write_run(tmp_path / "run", run_lines())
    shard = next(shards.rglob("modeleval-*.jsonl"))
    with open(shard, "ab") as file: file.write(b'{"schema":1,"type":"turn","turn":{"attempt":')
    done = go(site, shards=str(shards), render=True)
    assert done.status == 2 and shard.name in done.err[0]
    assert not (site / "docs/model-results.json").exists() and (site / "docs/model-results.md").read_text() == PAGE


def test_a_page_without_its_markers_is_refused_before_the_record_is_written(site, tmp_path):
    (site / "docs/model-results.md").write_text("# Results\n\n<!-- START MODEL EVAL LEGEND -->\n")
    done = go(site, shards=str(write_run(tmp_path / "run", run_lines())), render=True)
    assert done.status == 2
    assert done.err == [PREFIX + "docs/model-results.md: end marker <!-- END MODEL EVAL LEGEND --> not found after start marker"]
    assert not (site / "docs/model-results.json").exists()


def test_a_dry_run_admits_the_fake_and_writes_only_under_its_directory(site, tmp_path):
    lines = run_lines()
    providers = [msgspec.structs.replace(p, options={"answers": "key"}) if p.name == "fake" else p
                 for p in lines[0].providers]  # the fake's own options, so that only the fake rule could refuse it
    lines[0] = msgspec.structs.replace(lines[0], providers=providers)
    done = go(site, shards=str(write_run(tmp_path / "run", lines)), dry_run=True, render=True)
    assert done.status == 0, done.err
    assert not refusals(done)  # the fake is admitted; nothing else refuses
    assert PREFIX + "rehearsing into dist/modelrecord/dry-run, which is ignored by git; nothing published is touched" in done.out
    assert done.out[-1] == PREFIX + "rehearsed dist/modelrecord/dry-run/docs/model-results.md"
    scratch = site / "dist/modelrecord/dry-run"
    assert (scratch / "docs/model-results.md").read_text().startswith("> **This is a rehearsal, not a measurement.**")
    assert any(r["key"]["model"] == "fake:perfect" for r in json.loads((scratch / "docs/model-results.json").read_text())["rows"])
    assert not (site / "docs/model-results.json").exists() and (site / "docs/model-results.md").read_text() == PAGE


def test_json_says_what_was_folded_refused_merged_and_written(site, tmp_path):
    done = go(site, shards=str(write_run(tmp_path / "run", run_lines())))
    facts = done.to_json()
    assert facts["status"] == 0 and facts["written"] == [os.path.join("docs", "model-results.json")]
    assert {r["rule"] for r in facts["refused"]} == {"fake-provider"}
    assert all({"key", "shard", "attempts"} <= set(f) for f in facts["folded"])


# ---------------------------------------------------------------------------------------------
# The whole path on the bundled runs, through the command line (as the publishing chapter walks it)

def cases_of(run: Path, cases: set, to: Path) -> Path:
    "A copy of the run at `run` under `to` holding only the attempts of `cases`, with their turns, calls and verifies."
    for shard in sorted(run.rglob("modeleval-*.jsonl")):
        kept, lines = set(), []
        for line in shard.read_bytes().splitlines(keepends=True):
            kind = msgspec.json.decode(line)["type"]
            body = msgspec.json.decode(line)[kind]
            if kind == "attempt" and body["case"] in cases: kept.add(body["id"])
            if kind in ("run", "session") or body.get("id" if kind == "attempt" else "attempt") in kept: lines.append(line)
        (to / shard.relative_to(run)).parent.mkdir(parents=True, exist_ok=True)
        (to / shard.relative_to(run)).write_bytes(b"".join(lines))
    return to


def test_the_bundled_runs_fold_refold_two_cases_and_pass_the_gate_through_the_command_line(site, monkeypatch, capsys):
    from modelrecord.cli import main
    from modelrecord.sample import example_runs
    before, after = example_runs()
    shutil.copytree(before, site / "runs/before")
    cases_of(after, {"MT-002", "MT-003"}, site / "runs/rerun")
    head = json.loads(next((site / "runs/before").rglob("modeleval-*.jsonl")).read_bytes().split(b"\n")[0])["run"]
    monkeypatch.chdir(site)  # as CI runs it from a checkout: every path printed is relative

    def publish_command(*argv) -> tuple:
        status = main(["publish", "--root", ".", "--key", "runs/before/key.json",
                       "--corpus-digest", head["corpus_digest"], *argv])
        out, err = capsys.readouterr()
        return status, out.splitlines(), err.splitlines()

    status, out, err = publish_command("--shards", "runs/before", "--render")
    assert (status, err) == (0, [])
    assert out[-3:] == [PREFIX + "runs/before: 20 candidate row(s), 15 published, 5 refused by [duplicate-row, fake-provider, "
                        "filtered-run, incomplete-provenance, stale-corpus, unobserved-session]",
                        PREFIX + "wrote docs/model-results.json: 15 row(s), 7 cross-vendor table(s), 3 cross-surface comparison(s)",
                        PREFIX + "redrew the managed blocks of docs/model-results.md"]
    first = record(site)["rows"]

    status, out, err = publish_command("--shards", "runs/rerun")  # a plain fold of the same keys: duplicates, nothing changes
    assert status == 0 and sum("refused [duplicate-row]" in line for line in out) == 15
    assert record(site)["rows"] == first

    status, out, err = publish_command("--shards", "runs/rerun", "--refold", "--render")
    merged = [line for line in out if "merged into the published row" in line]
    assert (status, err, len(merged)) == (0, [], 15)
    assert all("2 case(s) replaced (MT-002, MT-003), " in line for line in merged)
    assert out[-1] == PREFIX + "redrew the managed blocks of docs/model-results.md"
    rows = record(site)["rows"]
    assert [r["key"] for r in rows] == [r["key"] for r in first]
    for was, row in zip(first, rows):
        assert {c for c in row["cases"] if row["cases"][c] != was["cases"][c]} == {"MT-002", "MT-003"}
        assert set(row["cases"]) == set(was["cases"])  # every other case kept as it stood
        assert {k: row[k] for k in ("counts", "columns", "tokens")} == sum_cases(row["cases"])
        assert row["provenance"]["commit"] != was["provenance"]["commit"]  # the row takes the re-run's provenance

    status, out, err = publish_command("--check")
    assert (status, err) == (0, [])
    assert out == [PREFIX + "docs/model-results.json and the blocks drawn from it agree: 15 row(s), 7 cross-vendor "
                   "table(s), 3 cross-surface comparison(s)"]

    edited = record(site)
    edited["rows"][0]["counts"]["attempts"] += 1
    (site / "docs/model-results.json").write_text(json.dumps(edited, indent=1))
    status, out, err = publish_command("--check")
    assert (status, out) == (1, [])
    assert err[0].startswith(PREFIX + "the row model=anthropic:claude-sonnet-4;effort=high surface=dynamic mode=default ")
    assert err[0].endswith("does not add up: counts.attempts is 15 but its cases sum to 14")
    assert err[1] == PREFIX + ("the managed blocks of docs/model-results.md do not match docs/model-results.json; "
                               "run modelrecord publish --render")


def test_a_folded_record_reads_back_to_its_own_bytes_every_map_sorted(site, tmp_path):
    "The fold writes each case's tallies with their names sorted, as a read and the reference write every map."
    from modelrecord.publish import read_record
    shards = write_run(tmp_path / "run", run_lines(attempts=200, repeat=3))
    assert go(site, shards=str(shards)).status == 0
    path = site / "docs/model-results.json"
    rows = read_record(path, "docs/model-results.json", "make it")
    assert record_bytes(rows, json.loads(path.read_bytes())["note"]) == path.read_bytes()
    tallies = [c["counts"][t] for r in rows for c in r["cases"].values() for t in ("outcomes", "confirmations")
               if c["counts"].get(t)]
    assert any(len(t) > 1 for t in tallies) and all(list(t) == sorted(t) for t in tallies)
