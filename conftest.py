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

_CACHE = os.environ["MODELRECORD_CACHE_DIR"] = tempfile.mkdtemp(prefix="modelrecord-test-cache-")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and cell.get("outputs") and cell.get("execution_count") is None:
            cell["execution_count"] = 1
