"""Notebook tests (nbval) over notebooks cleaned by nbdev_clean.

nbdev_clean removes execution counts to keep diffs quiet, and nbval takes a cell without one for
a cell that never ran, so it refuses the outputs we save on purpose (tables, plots). Under
`--nbval-lax` outputs are not compared anyway, so each notebook cell that has saved outputs is
marked as run before it executes.

Tests never touch the user's load cache: `MODELRECORD_CACHE_DIR` points at a temporary directory
for the whole session (notebook kernels and commands started by tests inherit it), removed after.
"""
import os
import shutil
import tempfile

import pytest

_CACHE = os.environ["MODELRECORD_CACHE_DIR"] = tempfile.mkdtemp(prefix="modelrecord-test-cache-")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


# The slow tier: tests that drive Chromium, start JupyterLab, Voila or other servers, or search many
# generated examples, each from ten seconds to two minutes on two cores. A plain `python -m pytest`
# leaves it out, so that the default run stays within about six minutes; `--slow` runs it too, as
# CI does (CI=true), and a `-m` expression of one's own decides alone (`-m slow` runs only it).
# A test file joins the tier by a module-level `pytestmark = pytest.mark.slow`, or by being named here.
SLOW_FILES = {"tests/test_serve_browser.py", "tests/test_explore_browser.py", "tests/test_explore_jupyterlab.py",
              "tests/test_serve.py", "tests/test_score_properties.py", "tests/test_reader_fuzz.py",
              "tests/test_pytest_plugin.py",  # pytest run in subprocesses, with and without xdist: 5 minutes of work
              "tests/test_explore.py", "tests/test_remote.py"}  # widgets driven through many states; Voila kernels


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the slow tier (servers, browsers; CI=true does too)")


def _runs_slow_tier(config) -> bool:
    "Whether this run includes the slow tier: asked for, under CI, or left to the user's own `-m` expression."
    return bool(config.getoption("--slow") or os.environ.get("CI", "").lower() == "true" or config.option.markexpr)


def pytest_report_header(config):
    if not _runs_slow_tier(config):
        return "slow tier left out (browsers, servers): `python -m pytest --slow` runs it too, as CI does"


def pytest_collection_modifyitems(config, items):
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and cell.get("outputs") and cell.get("execution_count") is None:
            cell["execution_count"] = 1
        if item.nodeid.split("::")[0] in SLOW_FILES or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
    if _runs_slow_tier(config): return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


# Progress a person can follow: a line per test file when its last test has run, with the time
# since the start, so that a long run shows where it is (dots alone say nothing about what is
# left). Under pytest-xdist the controller learns each file's tests from the workers' collection;
# a worker counts nothing, so only the controller prints.
import time

_STARTED = time.monotonic()
_left: dict = {}  # test file -> its tests not yet finished
_failed: dict = {}  # test file -> its failed reports


def _count(nodeids):
    "Count the tests of each file, once (every xdist worker collects the same tests)."
    if _left: return
    for nodeid in nodeids:
        path = nodeid.split("::")[0]
        _left[path] = _left.get(path, 0) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    _count(ids)


def pytest_collection_finish(session):
    if not hasattr(session.config, "workerinput"): _count([item.nodeid for item in session.items])


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path not in _left: return
    if report.failed: _failed[path] = _failed.get(path, 0) + 1
    if report.when != "teardown": return
    _left[path] -= 1
    reporter = _config[0].pluginmanager.get_plugin("terminalreporter") if _config else None
    if _left[path] == 0 and reporter is not None:
        minutes, seconds = divmod(int(time.monotonic() - _STARTED), 60)
        failed = f", {_failed[path]} failed" if path in _failed else ""
        if reporter._tw.width_of_current_line: reporter.write('\n')  # after the dots of this line
        reporter.write_line(f"[{minutes:2d}:{seconds:02d}] {path} done{failed}")


_config: list = []  # the controller's configuration, whose terminal reporter prints


def pytest_configure(config):
    if not hasattr(config, "workerinput"): _config.append(config)
