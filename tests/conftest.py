"""Shared fixtures: small trees to read, from `tests/data/` (nothing outside the repository)."""
from pathlib import Path
import pytest

from checkout import CONFORMANCE


@pytest.fixture(scope="session")
def conformance() -> Path:
    "The reference runner's conformance shards, copied into tests/data/ with their attribution."
    return CONFORMANCE


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    "A load cache root of this test's own (MODELRECORD_CACHE_DIR), not made yet."
    monkeypatch.setenv("MODELRECORD_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
