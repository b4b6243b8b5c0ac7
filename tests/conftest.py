"""Shared fixtures: where the read-only `shared/` folder is, and small trees to read."""
from pathlib import Path
import pytest

from checkout import shared_dir


@pytest.fixture(scope="session")
def shared() -> Path:
    "The read-only shared/ folder beside the checkout."
    return shared_dir()


@pytest.fixture(scope="session")
def conformance(shared) -> Path:
    "The reference runner's conformance shards."
    return shared / "conformance-sample"
