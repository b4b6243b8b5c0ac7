"""`modelrecord publish`, the slower half: every refusal rule, the merge's refusals, the review of a committed
record, two concurrent runs on one record, and the refold property (PUBLISH.md §4-§9)."""
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelrecord.record import Attempt, Call
from test_publish import DIGEST, PAGE, PREFIX, go, record, refusals, run_lines, write_run

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path) -> Path:
    "A repository root with the default plan's results page."
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/model-results.md").write_text(PAGE)
    return tmp_path


@pytest.mark.parametrize("change, rule, reason", [
    (dict(run={"filter": "TestModel/MT-00[12]"}), "filtered-run",
     'the run was filtered with -run "TestModel/MT-00[12]", so it put part of the corpus'),
    (dict(run={"gitlab_version": ""}), "incomplete-provenance",
     'the provenance field "gitlab_version" is empty, so nothing says which GitLab answered'),
    (dict(session={"token_scopes": []}), "incomplete-provenance",
     'the provenance field "token_scopes" is empty, so nothing says what the credential could reach'),
    (dict(run={"corpus_digest": "0ld"}), "stale-corpus",
     f"the run was put the corpus 0ld and the corpus at HEAD is {DIGEST}"),
])
def test_each_rule_refuses_by_name_with_its_reason(site, tmp_path, change, rule, reason):
    shards = write_run(tmp_path / "run", run_lines(**change))
    done = go(site, shards=str(shards))
    assert done.status == 0, done.err
    first = {r: "fake-provider" if "model=fake:perfect " in r and rule in ("incomplete-provenance", "stale-corpus")
             else rule for r in refusals(done)}  # the first rule that applies refuses: the fake's is asked before these
    assert first and all(r.startswith(f"refused [{first[r]}] ") for r in first)
    assert all(reason in r for r in first if first[r] == rule)
    assert record(site)["rows"] is None  # nothing survived, and the record says so as Go writes a nil slice


def test_a_model_the_run_line_does_not_describe_is_incomplete_provenance(site, tmp_path):
    lines = run_lines()
    lines[0] = msgspec.structs.replace(lines[0], providers=[p for p in lines[0].providers if p.name != "openai"])
    done = go(site, shards=str(write_run(tmp_path / "run", lines)))
    openai = [r for r in refusals(done) if "model=openai:gpt-5 " in r]
    assert openai and all(r.startswith("refused [incomplete-provenance]") and
                          'the run line describes no provider for model "openai:gpt-5"' in r for r in openai)


def test_a_session_whose_calls_were_never_observed_is_refused(site, tmp_path):
    lines = [msgspec.structs.replace(line, dispatch_observed=False) if isinstance(line, Call) else line
             for line in run_lines()]
    done = go(site, shards=str(write_run(tmp_path / "run", lines)))
    unobserved = [r for r in refusals(done) if r.startswith("refused [unobserved-session]")]
    assert unobserved and all("and the server's span described none of them" in r for r in unobserved)


def test_a_merge_into_a_row_without_cases_or_from_another_instance_is_refused(site, tmp_path):
    go(site, shards=str(write_run(tmp_path / "run", run_lines())))
    document = record(site)
    for row in document["rows"]: row.pop("cases")
    (site / "docs/model-results.json").write_text(json.dumps(document))
    done = go(site, shards=str(write_run(tmp_path / "run", run_lines())), refold=True)
    refused = [line for line in done.out if "refused to merge" in line]
    assert refused and all("the standing row records no per-case figures" in line for line in refused)
    shutil.rmtree(site / "docs"); (site / "docs").mkdir(); (site / "docs/model-results.md").write_text(PAGE)
    go(site, shards=str(write_run(tmp_path / "run", run_lines())))
    other = write_run(tmp_path / "other", run_lines(run={"gitlab_version": "18.5.0-ee"}))
    done = go(site, shards=str(other), refold=True)
    refused = [line for line in done.out if "refused to merge" in line]
    assert refused and all('the two runs disagree about the GitLab version ("18.4.1-ee" and "18.5.0-ee")' in line
                           for line in refused)


def test_check_reviews_the_rules_and_names_unpublished_rows(site, tmp_path):
    go(site, shards=str(write_run(tmp_path / "run", run_lines())), render=True)
    stale = go(site, check=True, digest="moved")
    assert stale.status == 1 and all(line.startswith(PREFIX + "refused [stale-corpus]") or "do not match" in line
                                     for line in stale.err)
    (site / "plan.yaml").write_text("pages: [docs/model-results.md]\nblocks:\n"
                                    "  - {name: RESULTS, page: docs/model-results.md, kind: detailed, surface: meta}\n")
    narrow = go(site, check=True, plan=str(site / "plan.yaml"))
    assert any(line.endswith("; add one or widen a block") and "surface=dynamic" in line for line in narrow.err)


def test_the_record_is_written_0600_in_parents_made_0750(site, tmp_path):
    (site / "plan.yaml").write_text("record: out/deep/results.json\n")
    go(site, shards=str(write_run(tmp_path / "run", run_lines())), plan=str(site / "plan.yaml"))
    assert oct((site / "out/deep/results.json").stat().st_mode & 0o777) == "0o600"
    assert oct((site / "out/deep").stat().st_mode & 0o777) == "0o750"


# ---------------------------------------------------------------------------------------------
# Two runs at once

def _command(site: Path, shards: Path) -> list:
    key = str(Path(__file__).parent / "data" / "publish-key.json")
    return [sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())", "publish",
            "--shards", str(shards), "--root", str(site), "--key", key, "--corpus-digest", DIGEST, "--render"]


def test_two_runs_on_one_record_take_turns_and_the_record_is_never_half_written(site, tmp_path):
    one = write_run(tmp_path / "one", run_lines(repeat=1))
    two = write_run(tmp_path / "two", run_lines(repeat=2))  # another configuration: rows of their own
    path, seen, stop = site / "docs/model-results.json", [], threading.Event()
    def watch():  # every time the record is there, it is a whole record
        while not stop.is_set():
            try: data = path.read_bytes()
            except FileNotFoundError: continue
            seen.append(data.endswith(b"}\n") and json.loads(data)["schema_version"] == 1)
    watcher = threading.Thread(target=watch)
    watcher.start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    try:
        runs = [subprocess.Popen(_command(site, shards), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for shards in (one, two)]
        results = [(p.wait(timeout=300), p.stdout.read().decode(), p.stderr.read().decode()) for p in runs]
    finally:
        stop.set()
        watcher.join()
    assert [status for status, _, _ in results] == [0, 0], results
    repeats = {row["key"]["repeat"] for row in record(site)["rows"]}
    assert repeats == {1, 2}  # the second run waited, read the first's record and added its own rows to it
    assert seen and all(seen)
    assert go(site, check=True).status == 0


# ---------------------------------------------------------------------------------------------
# The refold property

def _cases_of(lines) -> list:
    return sorted({line.case for line in lines if isinstance(line, Attempt)})


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(1, 50), data=st.data())
def test_refolding_each_case_of_a_run_gives_the_record_one_fold_gives(tmp_path_factory, seed, data):
    """Folding a run, then refolding each of its cases one by one (any order), writes the bytes of a single fold.

    Attempts that never reached a session are left out of these runs: by the reference's rule such an attempt joins
    the one candidate of its shard with its model and surface, so which row it counts in depends on what else the
    shard holds, and a shard of one case may hold one such candidate where the whole run held two."""
    base = tmp_path_factory.mktemp("refold")
    lines = run_lines(seed=seed, attempts=45, sessionless=False)
    cases = data.draw(st.permutations(_cases_of(lines)))
    whole = write_run(base / "whole", lines)
    sites = []
    for name in ("once", "case-by-case"):
        (base / name / "docs").mkdir(parents=True)
        (base / name / "docs/model-results.md").write_text(PAGE)
        sites.append(base / name)
    digest = lines[0].corpus_digest  # the seed's corpus is the one at HEAD
    assert go(sites[0], shards=str(whole), digest=digest).status == 0
    assert go(sites[1], shards=str(whole), digest=digest).status == 0
    for case in cases:
        one = write_run(base / f"case-{case}", run_lines(seed=seed, attempts=45, cases={case}, sessionless=False))
        done = go(sites[1], shards=str(one), refold=True, digest=digest)
        assert done.status == 0, done.err
        assert not [r for r in refusals(done) if "fake-provider" not in r], refusals(done)
    assert (sites[1] / "docs/model-results.json").read_bytes() == (sites[0] / "docs/model-results.json").read_bytes()
