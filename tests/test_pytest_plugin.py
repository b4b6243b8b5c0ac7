"""The pytest plugin under pytest and pytest-xdist, driven by pytester: every line once, one shard per process,
and a line that cannot be recorded failing exactly the test that wrote it (FAILED, not a teardown ERROR)."""
from importlib.metadata import entry_points

import pytest

from modelrecord.reader import read_shards
from modelrecord.record import DIR_ENV

pytest_plugins = ["pytester"]

INSTALLED = any(entry.name == "modelrecord" for entry in entry_points(group="pytest11"))
LOAD = [] if INSTALLED else ["-p", "modelrecord.pytest_plugin"]  # installed, the entry point loads it
# faster start
QUIET = ["-p", "no:cacheprovider", "-p", "no:nbval", "-p", "no:benchmark", "-p", "no:hypothesispytest",
         "-p", "no:anyio"]
XDIST = [[], ["-n", "2"]]

HEADER = """
import errno, os, msgspec, pytest
from modelrecord import Attempt, Call, Run, Turn, Verify

def lines(case):
    "The lines one test records: the process's run line (the same in every test), an attempt, a turn and a verify."
    return [Run(run_id="run-1", repeat=1),
            Attempt(id=f"a{case}", case=f"MT-{case}", model="fake:perfect", session="s", repeat=1, ended_by="completed"),
            Turn(attempt=f"a{case}", index=1, try_=1, status="ok"),
            Verify(attempt=f"a{case}", name=f"written by {os.getpid()}", passed=True)]
"""


@pytest.fixture(autouse=True)
def no_recording_from_the_environment(monkeypatch):
    monkeypatch.delenv(DIR_ENV, raising=False)


def run(pytester, suite: str, *options: str):
    "Run `suite` (after HEADER) with the plugin in a pytest process of its own."
    pytester.makepyfile(test_suite=HEADER + suite)
    return pytester.runpytest_subprocess(*LOAD, *QUIET, *options)


def verifies(tree) -> list:
    "(shard, verify name) of every verify line of the tree."
    return [(shard.path, record.payload.name) for shard in read_shards(tree) for record in shard.records
            if record.type == "verify"]


@pytest.mark.parametrize("xdist", XDIST, ids=["one process", "xdist -n 2"])
def test_every_line_once_one_shard_per_process_and_a_bad_line_fails_the_test_that_wrote_it(pytester, tmp_path, xdist):
    result = run(pytester, """
@pytest.mark.parametrize("case", range(8))
def test_case(case, modelrecord):
    broken = Call(attempt=f"a{case}", turn=1, index=1, tool="find", outcome="ok", arguments=msgspec.Raw(b"{oops"))
    modelrecord.write(*lines(case)[:2], *([broken] if case == 3 else []))
    modelrecord.write(*lines(case)[2:])  # the body runs on after a report, as after t.Errorf
    modelrecord.write(*lines(case))  # again: every line is already written, so none is
""", "--modelrecord-dir", str(tmp_path / "tree"), *xdist)
    result.assert_outcomes(passed=7, failed=1, errors=0)
    result.stdout.fnmatch_lines(["*_ test_case[[]3[]] _*",
                                 "modelrecord: a call line was not recorded: call.arguments: is not valid JSON*",
                                 "FAILED test_suite.py::test_case[[]3[]] - Failed: modelrecord: *"])
    shards = read_shards(tmp_path / "tree")
    assert len(shards) == (2 if xdist else 1)
    for shard in shards:
        assert [r.type for r in shard.records].count("run") == 1  # one process, one run line
        assert len({r.payload.name for r in shard.records if r.type == "verify"}) == 1  # one process per shard
    attempts = sorted(r.payload.id for shard in shards for r in shard.records if r.type == "attempt")
    assert attempts == sorted(f"a{case}" for case in range(8))  # test 3's lines after the bad one too
    assert sum(len(s.records) for s in shards) == len(shards) + 8 * 3


@pytest.mark.parametrize("xdist", XDIST, ids=["one process", "xdist -n 2"])
def test_a_failed_write_fails_the_test_that_wrote_and_keeps_the_lines_before(pytester, tmp_path, xdist):
    result = run(pytester, """
real_write = os.write

def full_disk(fd, data):
    if bytes(data).startswith(b'{"schema":1,"type":"attempt","attempt":{"id":"a2"'):
        raise OSError(errno.ENOSPC, "No space left on device")
    return real_write(fd, data)

@pytest.mark.parametrize("case", range(4))
def test_case(case, modelrecord, monkeypatch):
    if case == 2: monkeypatch.setattr(os, "write", full_disk)
    modelrecord.write(*lines(case))
""", "--modelrecord-dir", str(tmp_path / "tree"), *xdist)
    result.assert_outcomes(passed=3, failed=1, errors=0)
    result.stdout.fnmatch_lines(["modelrecord: cannot write to the shard *: [[]Errno 28[]] No space left on device; it "
                                 "keeps*",
                                 "FAILED test_suite.py::test_case[[]2[]] - Failed: modelrecord: *"])
    names = [name for _, name in verifies(tmp_path / "tree")]
    # 0 and 1 always; 3 only if it ran in the other worker (the stopped writer records nothing)
    assert 2 <= len(names) <= 3
    assert all(shard.records for shard in read_shards(tmp_path / "tree"))


def test_a_body_that_failed_anyway_keeps_its_failure_and_a_write_after_the_body_fails_that_teardown(pytester, tmp_path):
    result = run(pytester, """
def test_anyway(modelrecord):
    modelrecord.write(Call(attempt="a", turn=1, index=1, tool="find", outcome="ok", arguments=msgspec.Raw(b"[")))
    assert 1 == 2

@pytest.fixture
def late(modelrecord):
    yield
    modelrecord.write(Call(attempt="b", turn=1, index=1, tool="find", outcome="ok", arguments=msgspec.Raw(b"[")))

def test_late(late):
    pass
""", "--modelrecord-dir", str(tmp_path / "tree"))
    result.assert_outcomes(failed=1, passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_late*", "modelrecord: a call line was not recorded*",
                                 "*_ test_anyway _*", "*assert 1 == 2*", "*Captured modelrecord call*",
                                 "modelrecord: a call line was not recorded*",
                                 "FAILED test_suite.py::test_anyway - assert 1 == 2",
                                 "ERROR test_suite.py::test_late*"])


def test_the_environment_names_the_directory_and_a_relative_one_fails_the_first_writer(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "from-env"))
    result = run(pytester, "def test_case(modelrecord):\n    modelrecord.write(*lines(1))\n")
    result.assert_outcomes(passed=1)
    assert len(verifies(tmp_path / "from-env")) == 1
    monkeypatch.setenv(DIR_ENV, "relative/records")
    result = run(pytester, "def test_one(modelrecord):\n    modelrecord.write(*lines(1))\n"
                           "def test_two(modelrecord):\n    modelrecord.write(*lines(2))\n")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["modelrecord: the recording directory (GITLAB_MCP_TEST_MODELEVAL_DIR) must be an "
                                 "absolute path*",
                                 "FAILED test_suite.py::test_one - Failed: modelrecord: *"])
    assert not (pytester.path / "relative").exists()


def test_recording_off_gives_a_writer_that_does_nothing(pytester, tmp_path):
    result = run(pytester, """
def test_case(modelrecord):
    assert not modelrecord.enabled and modelrecord.directory == ""
    modelrecord.write(*lines(1), Call(attempt="a", turn=1, index=1, tool="t", outcome="ok", arguments=msgspec.Raw(b"[")))
    assert modelrecord.shard is None
""")
    result.assert_outcomes(passed=1)
    assert not any(pytester.path.rglob("modeleval-*.jsonl"))


def test_a_relative_directory_option_is_a_usage_error(pytester):
    result = run(pytester, "def test_case(modelrecord):\n    pass\n", "--modelrecord-dir", "records")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--modelrecord-dir must be an absolute path, got 'records'*"])


@pytest.mark.skipif(not INSTALLED,
                    reason="the package is not installed here, so its pytest11 entry point is not registered")
def test_the_entry_point_loads_the_plugin_when_the_package_is_installed(pytester):
    result = pytester.runpytest_subprocess(*QUIET, "--help")
    result.stdout.fnmatch_lines(["*--modelrecord-dir=DIR*"])
    result = pytester.runpytest_subprocess(*QUIET, "-p", "no:modelrecord", "--help")
    assert "--modelrecord-dir" not in result.stdout.str()
