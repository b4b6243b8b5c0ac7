"""Shared fixtures: small trees to read, from `tests/data/` (nothing outside the repository)."""
from pathlib import Path
import pytest

from checkout import CONFORMANCE


@pytest.fixture(scope="session")
def conformance() -> Path:
    "The reference runner's conformance shards, copied into tests/data/ with their attribution."
    return CONFORMANCE
